"""Bad inputs: one table of wrong arguments to every public `companion` function and class, each with the exception
it must raise and the part of its message that says what to pass instead.
"""

import importlib
import inspect
import io
import pkgutil
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import companion
import companion.checks as checks
from companion import (
    autograd,
    batchnorm,
    checkpoint,
    conv,
    course,
    data,
    ddp,
    ddp_launch,
    devices,
    exercises,
    losses,
    optim,
    plotting,
    scatter,
    tensors,
    training,
)
from companion.checkpoint import CheckpointError
from companion.checks import autograd as checks_autograd
from companion.checks import batchnorm as checks_batchnorm
from companion.checks import checkpoint as checks_checkpoint
from companion.checks import conv as checks_conv
from companion.checks import course as checks_course
from companion.checks import data as checks_data
from companion.checks import ddp as checks_ddp
from companion.checks import devices as checks_devices
from companion.checks import losses as checks_losses
from companion.checks import optim as checks_optim
from companion.checks import scatter as checks_scatter
from companion.checks import tensors as checks_tensors
from companion.checks import training as checks_training
from companion.exercises import WrongAnswer

# Every public module of companion and of companion.checks (the private _validate and _torch_errors are reached
# through the functions that use them, and have tests of their own).
MODULES = [
    course,
    plotting,
    exercises,
    tensors,
    autograd,
    data,
    scatter,
    losses,
    conv,
    batchnorm,
    training,
    optim,
    checkpoint,
    devices,
    ddp,
    ddp_launch,
    *(importlib.import_module(f"companion.checks.{info.name}") for info in pkgutil.iter_modules(checks.__path__)),
]

# Public callables where no argument can be wrong, each with the reason.
NO_BAD_INPUT = {
    "exercises.WrongAnswer": "an exception class: any message is a valid hint",
    "autograd.GraphNode": "a record that backward_graph fills in",
    "autograd.GraphEdge": "a record that backward_graph fills in",
    "autograd.BackwardGraph": "a record that backward_graph and trace_backward fill in",
    "exercises.passed": "prints whatever it is given as the pass line",
    "exercises.Exercise": "a record of one exercise's table; tests/test_checks.py checks every table",
    "exercises.Mistake": "a record of one typical wrong answer; tests/test_checks.py checks every row",
    "exercises.sandbox": "a context manager around a checker's call of learner code: it takes only the state names",
    "exercises.call_learner": "calls whatever the checker hands it; the checkers guard the learner's function first",
    "checks.checkpoint.raise_refused": "raises the refused-checkpoint hint for whatever it is told, by design",
    "checkpoint.CheckpointError": "an exception class raised by load_checkpoint; any message is valid",
    "checkpoint.harmless_payload": "stands in for an attacker's code inside a pickle: records any note by design",
    "checkpoint.PartialLoadReport": "a result record that load_partial_state_dict fills in",
    "ddp.spawn_worker": "torch.multiprocessing.spawn's target: called here it would redirect this process's output",
    "ddp_launch.LaunchError": "an exception class the launcher builds from its own results",
    "ddp_launch.RankResults": "a result record the launcher builds from the ranks' files",
    "ddp_launch.ScriptRun": "a result record that run_script builds",
}

# Validation goes where a learner's own values arrive. These are called only with the lesson's own arguments
# (plot helpers, model builders, the lesson's data), so they carry no bespoke guards: each with the reason.
EXEMPT = {
    "checks.tensors.shares_memory": "the lesson's and the checker's own tensors only: one call to untyped_storage",
    "checks.autograd.autograd_tanh_grads": "the checker's reference, called with the checker's own numbers",
    "training.plot_history": "a plot helper the lesson calls only with its own histories (fit's, the overfitting run)",
    "checkpoint.make_model": "a model builder the lesson calls with its own arguments",
    "checkpoint.make_loader": "builds the lesson's loader from its own data set and seed",
    "checkpoint.new_run": "starts the lesson's runs with its own data set, seeds and learning rate",
    "checkpoint.flat_parameters": "a one-line view of the lesson's own models for the resume figure",
    "checkpoint.plot_resume": "a plot helper called only with the lesson's own runs",
    "ddp.regression_data": "builds the lesson's data set; the lesson and its script call it with its own size",
    "ddp.flat_parameters": "a one-line view of the lesson's own models and DDP wrappers",
    "ddp.sampler_table": "tabulates DistributedSampler for the lesson's own small cases",
    "ddp.plot_sampler": "a plot helper, called only with the lesson's own arguments",
    "conv.plot_dilation": "a plot helper, called only with the lesson's own arguments",
    "conv.plot_edge_responses": "a plot helper, called only with the lesson's own digit and kernels",
    "batchnorm.running_mean_history": "feeds the lesson's own batches to a fresh layer for the plot",
    "batchnorm.plot_running_means": "a plot helper, called only with the lesson's own histories",
    "tensors.plot_views": "a plot helper, called only with the lesson's own tensors",
    "autograd.plot_backward": "a plot helper called only with the lesson's own tensors; backward_graph guards them",
    "data.batch_table": "tabulates DataLoader for the lesson's own small figure",
    "data.plot_batches": "a plot helper, called only with the lesson's own arguments",
    "scatter.plot_scatter": "draws the lesson's own example tensors; no learner value reaches it",
    "losses.loss_vs_true_logit": "computes the plotted curve from the lesson's own z values",
    "losses.plot_loss_vs_true_logit": "plot helper called only with the lesson's own arguments",
    "losses.regression_loss_curves": "computes the plotted curves from the lesson's own errors",
    "losses.plot_regression_losses": "a plot helper, called only with the lesson's own arguments",
    "optim.digits_mlp": "a model builder the lesson calls with its own seed and width",
    "optim.digits_batches": "cuts the lesson's own data set into batches, with the lesson's own sizes",
    "optim.train": "lesson 08's train_one_epoch, one batch at a time; it checks its own arguments",
    "optim.train_copies": "trains the lesson's model with the lesson's own optimizers",
    "optim.first_step_sizes": "one step of the lesson's model with the lesson's two optimizers, for the plot",
    "optim.rosenbrock": "the lesson's test function, called with the lesson's own points",
    "optim.trajectory": "runs the lesson's optimizers on the lesson's test function",
    "optim.plot_trajectories": "a plot helper called only with the lesson's own paths",
    "devices.plot_data_parallel": "a plot helper, called only with the lesson's own number of GPUs",
}


class Built:
    """An argument made inside the test from pytest's tmp_path (files, folders), by `build(tmp_path)`."""

    def __init__(self, build, label: str) -> None:
        self.build, self.label = build, label

    def __repr__(self) -> str:
        return f"Built({self.label})"


def in_tmp(*parts: str) -> Built:
    """tmp_path / parts, not created."""
    return Built(lambda tmp_path: tmp_path.joinpath(*parts), "/".join(parts) or "tmp_path")


def file_with(contents, label: str) -> Built:
    """tmp_path / 'last.pt' holding `contents(good_bytes)`, where good_bytes is a complete torch.save file."""

    def build(tmp_path: Path) -> Path:
        buffer = io.BytesIO()
        torch.save({"weight": torch.arange(64.0), "epoch": 3}, buffer)
        path = tmp_path / "last.pt"
        path.write_bytes(contents(buffer.getvalue()))
        return path

    return Built(build, label)


def saved(make, label: str) -> Built:
    """tmp_path / 'last.pt' written by torch.save(make())."""

    def build(tmp_path: Path) -> Path:
        path = tmp_path / "last.pt"
        torch.save(make(), path)
        return path

    return Built(build, label)


GOOD_FILE = file_with(lambda good: good, "a good checkpoint")


def _fixed_objects():
    """Small inputs shared by the rows, built without touching the global random state."""
    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        models = {
            "linear": nn.Linear(4, 3),
            "other": nn.Linear(4, 3),
            "digits": checkpoint.make_model(),
            "mlp": optim.digits_mlp(),
        }
    return generator, models


_GENERATOR, _MODELS = _fixed_objects()
LINEAR, OTHER, DIGITS_MODEL, MLP = _MODELS["linear"], _MODELS["other"], _MODELS["digits"], _MODELS["mlp"]
SGD = torch.optim.SGD(LINEAR.parameters(), lr=0.1)
OTHER_SGD = torch.optim.SGD(OTHER.parameters(), lr=0.1)
BATCHES = [(torch.randn(5, 4, generator=_GENERATOR), torch.tensor([0, 1, 2, 0, 1]))]
ONE_HOT_BATCHES = [(BATCHES[0][0], F.one_hot(BATCHES[0][1], 3).float())]
IMAGES = TensorDataset(torch.rand(8, 1, 8, 8, generator=_GENERATOR), torch.arange(8) % 10)
STATE = LINEAR.state_dict()
PARAMETER = nn.Parameter(torch.ones(2))

ZEROS = torch.zeros(2, 4)  # scatter's self
INDEX = torch.tensor([[2, 3]])  # scatter's index along dim 1
ONES = torch.ones(2, 4)  # scatter's src
LOGITS = torch.randn(4, 3, generator=_GENERATOR)
TARGET = torch.tensor([0, 1, 2, 0])
IMAGE = torch.randn(1, 4, 5, 5, generator=_GENERATOR)  # conv input
KERNELS = torch.randn(2, 4, 3, 3, generator=_GENERATOR)  # conv weight
FEATURES = torch.randn(2, 3, 4, 4, generator=_GENERATOR)  # batchnorm input
RUNNING_BATCHES = torch.randn(3, 4, 1, 2, 2, generator=_GENERATOR)
BN3 = batchnorm.BatchNorm2dReference(3)


def _a_script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text("print('a rank')\n")
    return path


SCRIPT = Built(_a_script, "a script file")  # launches refuse their other arguments before starting anything


def make_adam(params):
    return torch.optim.Adam(params, lr=1e-3)


BAD_CALLS = [
    # course -------------------------------------------------------------------------------------------------------
    pytest.param(
        course.setup_notebook, ("0",), {}, TypeError, "seed must be an int such as 0", id="course.setup_notebook-str"
    ),
    pytest.param(
        course.setup_notebook, (True,), {}, TypeError, "seed must be an int such as 0", id="course.setup_notebook-bool"
    ),
    pytest.param(
        course.setup_notebook,
        (2**32,),
        {},
        ValueError,
        "seed must be between 0 and 2**32 - 1",
        id="course.setup_notebook-too-large",
    ),
    pytest.param(
        checks_course.check_repeatable_draws,
        ((torch.zeros(3), torch.zeros(3)),),
        {},
        WrongAnswer,
        "Pass the function itself: check_repeatable_draws(draw_twice), without ().",
        id="checks.course.check_repeatable_draws-called",
    ),
    pytest.param(
        course.show_source, (3,), {}, TypeError, "takes a function, method or class", id="course.show_source-not-code"
    ),
    pytest.param(
        checks_tensors.check_shares_memory,
        ("x[1]",),
        {},
        WrongAnswer,
        "Pass a dict such as {'x[1]': True, ...}",
        id="checks.tensors.check_shares_memory-not-a-dict",
    ),
    pytest.param(
        checks_tensors.check_center_rows,
        (torch.zeros(2, 3),),
        {},
        WrongAnswer,
        "Pass the function itself: check_center_rows(center_rows), without ().",
        id="checks.tensors.check_center_rows-called",
    ),
    pytest.param(
        checks_autograd.check_tanh_grads,
        ((0.1, 0.2),),
        {},
        WrongAnswer,
        "Pass the function itself: check_tanh_grads(tanh_grads), without ().",
        id="checks.autograd.check_tanh_grads-called",
    ),
    pytest.param(
        checks_autograd.check_accumulated_gradient,
        (torch.zeros(3),),
        {},
        WrongAnswer,
        "Pass the function itself: check_accumulated_gradient(accumulate), without ().",
        id="checks.autograd.check_accumulated_gradient-called",
    ),
    # exercises ----------------------------------------------------------------------------------------------------
    pytest.param(
        exercises.require,
        (torch.tensor([True, False]), "hint", "提示"),
        {},
        TypeError,
        "reduce it to one bool with .all() or .any()",
        id="exercises.require-tensor-condition",
    ),
    # data ---------------------------------------------------------------------------------------------------------
    pytest.param(
        data.digits_datasets, (1.5,), {}, ValueError, "between 0 and 1 (e.g. 0.25)", id="data.digits_datasets-above-1"
    ),
    pytest.param(
        data.digits_datasets, (0,), {}, ValueError, "between 0 and 1 (e.g. 0.25)", id="data.digits_datasets-0"
    ),
    pytest.param(
        data.digits_datasets,
        ("0.25",),
        {},
        TypeError,
        "test_fraction must be a number between 0 and 1 (e.g. 0.25)",
        id="data.digits_datasets-str-fraction",
    ),
    pytest.param(
        data.digits_datasets,
        (),
        {"seed": "0"},
        TypeError,
        "seed must be an int such as 0",
        id="data.digits_datasets-str-seed",
    ),
    pytest.param(
        data.NoisyIndices, (0,), {}, ValueError, "length must be a positive int such as 8", id="data.NoisyIndices-zero"
    ),
    pytest.param(
        data.reseed_worker,
        (0,),
        {},
        RuntimeError,
        "pass it as DataLoader(worker_init_fn=...)",
        id="data.reseed_worker-outside-a-worker",
    ),
    pytest.param(
        data.NumberStream, (0,), {}, ValueError, "stop must be a positive int such as 8", id="data.NumberStream-zero"
    ),
    pytest.param(
        data.NumberStream,
        (6,),
        {"take_share": "yes"},
        TypeError,
        "take_share must be True or False",
        id="data.NumberStream-str-take-share",
    ),
    # autograd -----------------------------------------------------------------------------------------------------
    pytest.param(
        autograd.backward_graph,
        (2.0,),
        {},
        TypeError,
        "output must be a torch.Tensor computed from a tensor that requires grad",
        id="autograd.backward_graph-not-a-tensor",
    ),
    pytest.param(
        autograd.backward_graph,
        (torch.ones(2),),
        {},
        ValueError,
        "compute it from a tensor created with requires_grad=True",
        id="autograd.backward_graph-no-grad-fn",
    ),
    pytest.param(
        autograd.backward_graph,
        (torch.ones(2, requires_grad=True) * 2, {"x": 1.0}),
        {},
        TypeError,
        "names must be a dict from a label to a tensor",
        id="autograd.backward_graph-names",
    ),
    pytest.param(
        autograd.trace_backward,
        (torch.ones(2, requires_grad=True) * 2,),
        {},
        ValueError,
        "reduce it first, e.g. output.sum()",
        id="autograd.trace_backward-not-scalar",
    ),
    pytest.param(
        checks_data.check_pad_collate,
        ([],),
        {},
        WrongAnswer,
        "Pass the function itself: check_pad_collate(pad_collate), without ().",
        id="checks.data.check_pad_collate-called",
    ),
    # scatter ------------------------------------------------------------------------------------------------------
    pytest.param(
        scatter.scatter_reference,
        ([[0.0] * 4] * 2, 1, INDEX, 1.0),
        {},
        TypeError,
        "e.g. torch.zeros(2, 4) and torch.tensor([[2, 3]])",
        id="scatter.scatter_reference-list-self",
    ),
    pytest.param(
        scatter.scatter_reference,
        (ZEROS, 1, INDEX.float(), ONES),
        {},
        TypeError,
        "pass index.long()",
        id="scatter.scatter_reference-float-index",
    ),
    pytest.param(
        scatter.scatter_reference,
        (ZEROS, 1.0, INDEX, ONES),
        {},
        TypeError,
        "dim must be an int",
        id="scatter.scatter_reference-float-dim",
    ),
    pytest.param(
        scatter.scatter_reference,
        (ZEROS, 2, INDEX, ONES),
        {},
        ValueError,
        "dim must be in [-2, 1]",
        id="scatter.scatter_reference-dim-out-of-range",
    ),
    pytest.param(
        scatter.scatter_reference,
        (ZEROS, 1, torch.tensor([2, 3]), ONES),
        {},
        ValueError,
        "give index the same number of dimensions (for a 1-d target, use target.unsqueeze(1))",
        id="scatter.scatter_reference-1d-index",
    ),
    pytest.param(
        scatter.scatter_reference,
        (ZEROS, 1, INDEX, ONES),
        {"reduce": "add"},
        ValueError,
        "reduce must be None or one of ['amax', 'amin', 'prod', 'sum']",
        id="scatter.scatter_reference-unknown-reduce",
    ),
    pytest.param(
        scatter.scatter_reference,
        (ZEROS, 1, INDEX, ONES.double()),
        {},
        TypeError,
        "pass src.to(self.dtype)",
        id="scatter.scatter_reference-src-dtype",
    ),
    pytest.param(
        scatter.scatter_reference,
        (ZEROS, 1, INDEX, torch.ones(4)),
        {},
        ValueError,
        "they must match",
        id="scatter.scatter_reference-src-dims",
    ),
    pytest.param(
        scatter.scatter_reference,
        (ZEROS, 1, INDEX, "1"),
        {},
        TypeError,
        "src must be a tensor or a Python number",
        id="scatter.scatter_reference-str-src",
    ),
    pytest.param(
        scatter.scatter_reference,
        (ZEROS, 1, torch.tensor([[0], [1], [2]]), 1.0),
        {},
        ValueError,
        "index may be smaller than self but never larger; slice index to fit",
        id="scatter.scatter_reference-index-larger-than-self",
    ),
    pytest.param(
        scatter.scatter_reference,
        (ZEROS, 1, torch.tensor([[0, 1], [2, 3]]), torch.ones(1, 4)),
        {},
        ValueError,
        "use a larger src or a smaller index",
        id="scatter.scatter_reference-index-larger-than-src",
    ),
    pytest.param(
        scatter.scatter_reference,
        (ZEROS, 1, torch.tensor([[4, 0]]), ONES),
        {},
        ValueError,
        "use values 0..3",
        id="scatter.scatter_reference-index-too-large",
    ),
    pytest.param(
        scatter.scatter_reference,
        (ZEROS, 1, torch.tensor([[-1, 0]]), ONES),
        {},
        ValueError,
        "use values 0..3 (negative indices are not wrapped around)",
        id="scatter.scatter_reference-negative-index",
    ),
    pytest.param(
        checks_scatter.check_inverse_permutation,
        (TARGET.argsort(),),
        {},
        WrongAnswer,
        "Pass the function itself: check_inverse_permutation(inverse_permutation), without ().",
        id="checks.scatter.check_inverse_permutation-called",
    ),
    pytest.param(
        checks_scatter.check_class_means,
        (torch.zeros(3, 2),),
        {},
        WrongAnswer,
        "Pass the function itself: check_class_means(class_means), without ().",
        id="checks.scatter.check_class_means-called",
    ),
    # losses -------------------------------------------------------------------------------------------------------
    pytest.param(
        losses.log_softmax_reference,
        (TARGET,),
        {},
        TypeError,
        "logits must hold floating-point numbers, not torch.int64: use logits.float()",
        id="losses.log_softmax_reference-int",
    ),
    pytest.param(
        losses.log_softmax_reference,
        ([[1.0, 2.0]],),
        {},
        TypeError,
        "logits must be a torch.Tensor, not list: wrap it with torch.tensor(...)",
        id="losses.log_softmax_reference-list",
    ),
    pytest.param(
        losses.log_softmax_reference,
        (LOGITS,),
        {"dim": 5},
        IndexError,
        "expected to be in range of [-2, 1]",
        id="losses.log_softmax_reference-dim-out-of-range",
    ),
    pytest.param(
        losses.cross_entropy_reference,
        (LOGITS.tolist(), TARGET),
        {},
        TypeError,
        "e.g. torch.randn(4, 5) and torch.tensor([3, 3, 3, 0])",
        id="losses.cross_entropy_reference-list-logits",
    ),
    pytest.param(
        losses.cross_entropy_reference,
        (LOGITS.long(), TARGET),
        {},
        TypeError,
        "pass logits.float()",
        id="losses.cross_entropy_reference-int-logits",
    ),
    pytest.param(
        losses.cross_entropy_reference,
        (torch.tensor(1.0), TARGET),
        {},
        ValueError,
        "pass shape (N, C), or (C,) for one sample",
        id="losses.cross_entropy_reference-0d-logits",
    ),
    pytest.param(
        losses.cross_entropy_reference,
        (LOGITS, TARGET),
        {"reduction": "avg"},
        ValueError,
        "reduction must be 'mean', 'sum' or 'none'",
        id="losses.cross_entropy_reference-reduction",
    ),
    pytest.param(
        losses.cross_entropy_reference,
        (LOGITS, TARGET),
        {"label_smoothing": "0.1"},
        TypeError,
        "label_smoothing must be a number",
        id="losses.cross_entropy_reference-str-smoothing",
    ),
    pytest.param(
        losses.cross_entropy_reference,
        (LOGITS, TARGET),
        {"label_smoothing": 1.5},
        ValueError,
        "label_smoothing must be at most 1.0, not 1.5",
        id="losses.cross_entropy_reference-smoothing-above-1",
    ),
    pytest.param(
        losses.cross_entropy_reference,
        (LOGITS, TARGET),
        {"weight": torch.tensor([1, 2, 3])},
        TypeError,
        "pass weight.float()",
        id="losses.cross_entropy_reference-int-weight",
    ),
    pytest.param(
        losses.cross_entropy_reference,
        (LOGITS, TARGET),
        {"weight": torch.ones(4)},
        ValueError,
        "pass a 1-d weight of length 3, one number per class",
        id="losses.cross_entropy_reference-weight-length",
    ),
    pytest.param(
        losses.cross_entropy_reference,
        (LOGITS, TARGET.float()),
        {},
        TypeError,
        "for class indices pass target.long()",
        id="losses.cross_entropy_reference-float-indices",
    ),
    pytest.param(
        losses.cross_entropy_reference,
        (LOGITS, TARGET.int()),
        {},
        TypeError,
        "pass target.long()",
        id="losses.cross_entropy_reference-int32-target",
    ),
    pytest.param(
        losses.cross_entropy_reference,
        (LOGITS, TARGET.unsqueeze(1)),
        {},
        ValueError,
        "expected (4,) (the logits' shape without the class dimension 1): one class index per sample",
        id="losses.cross_entropy_reference-target-shape",
    ),
    pytest.param(
        losses.cross_entropy_reference,
        (LOGITS, torch.tensor([0, 1, 3, 0])),
        {},
        ValueError,
        "use 0..2, or ignore_index (now -100) for a sample that has no class",
        id="losses.cross_entropy_reference-class-out-of-range",
    ),
    pytest.param(
        checks_losses.check_bce_with_logits,
        (F.binary_cross_entropy_with_logits(LOGITS, F.one_hot(TARGET, 3).float()),),
        {},
        WrongAnswer,
        "Pass the function itself: check_bce_with_logits(bce_with_logits), without ().",
        id="checks.losses.check_bce_with_logits-called",
    ),
    pytest.param(
        checks_losses.check_pixel_cross_entropy_grad,
        (None,),
        {},
        WrongAnswer,
        "Pass the function itself: check_pixel_cross_entropy_grad(pixel_cross_entropy_grad), without ().",
        id="checks.losses.check_pixel_cross_entropy_grad-none",
    ),
    # conv ---------------------------------------------------------------------------------------------------------
    pytest.param(
        conv.effective_kernel_size,
        ("3",),
        {},
        TypeError,
        "kernel_size must be an int or a pair of ints such as (2, 1)",
        id="conv.effective_kernel_size-str",
    ),
    pytest.param(
        conv.effective_kernel_size,
        (0,),
        {},
        ValueError,
        "kernel_size must be positive (>= 1)",
        id="conv.effective_kernel_size-zero",
    ),
    pytest.param(
        conv.effective_kernel_size,
        (3,),
        {"dilation": (1, 2, 3)},
        TypeError,
        "dilation must be an int or a pair of ints such as (2, 1)",
        id="conv.effective_kernel_size-triple-dilation",
    ),
    pytest.param(
        conv.padding_sides,
        ("full", 3),
        {},
        ValueError,
        "padding must be 'same', 'valid', an int or a pair of ints",
        id="conv.padding_sides-unknown-string",
    ),
    pytest.param(
        conv.padding_sides,
        ("same", 3),
        {"stride": 2},
        ValueError,
        "with a larger stride give the padding as numbers",
        id="conv.padding_sides-same-with-stride",
    ),
    pytest.param(
        conv.padding_sides,
        (-1, 3),
        {},
        ValueError,
        "padding must be non-negative (>= 0)",
        id="conv.padding_sides-negative",
    ),
    pytest.param(
        conv.conv2d_output_size,
        (3, 5),
        {},
        ValueError,
        "use a larger input, more padding, a smaller kernel or a smaller dilation",
        id="conv.conv2d_output_size-kernel-too-large",
    ),
    pytest.param(
        conv.conv2d_output_size,
        (0, 3),
        {},
        ValueError,
        "input_size must be positive (>= 1)",
        id="conv.conv2d_output_size-empty-input",
    ),
    pytest.param(
        conv.conv2d_output_size,
        (8, 3),
        {"stride": 0},
        ValueError,
        "stride must be positive (>= 1)",
        id="conv.conv2d_output_size-zero-stride",
    ),
    pytest.param(
        conv.conv2d_output_size,
        (8, 3),
        {"padding": 1.5},
        TypeError,
        "padding must be an int or a pair of ints such as (2, 1)",
        id="conv.conv2d_output_size-float-padding",
    ),
    pytest.param(
        conv.conv2d_reference,
        (IMAGE.tolist(), KERNELS),
        {},
        TypeError,
        "e.g. torch.randn(1, 3, 8, 8) and torch.randn(4, 3, 3, 3)",
        id="conv.conv2d_reference-list-input",
    ),
    pytest.param(
        conv.conv2d_reference,
        (IMAGE, KERNELS, [0.0, 0.0]),
        {},
        TypeError,
        "bias must be None or a tensor of shape (out_channels,)",
        id="conv.conv2d_reference-list-bias",
    ),
    pytest.param(
        conv.conv2d_reference,
        (torch.randn(5, 5), KERNELS),
        {},
        ValueError,
        "pass (N, C_in, H, W), or (C_in, H, W) for one image",
        id="conv.conv2d_reference-2d-input",
    ),
    pytest.param(
        conv.conv2d_reference,
        (IMAGE, KERNELS[0]),
        {},
        ValueError,
        "pass (C_out, C_in // groups, kH, kW)",
        id="conv.conv2d_reference-3d-weight",
    ),
    pytest.param(
        conv.conv2d_reference,
        (IMAGE, KERNELS),
        {"groups": 1.0},
        TypeError,
        "groups must be an int such as 1",
        id="conv.conv2d_reference-float-groups",
    ),
    pytest.param(
        conv.conv2d_reference,
        (IMAGE, KERNELS),
        {"groups": 0},
        ValueError,
        "1 is an ordinary convolution",
        id="conv.conv2d_reference-zero-groups",
    ),
    pytest.param(
        conv.conv2d_reference,
        (IMAGE, torch.randn(3, 1, 3, 3)),
        {"groups": 3},
        ValueError,
        "choose groups among the divisors [1, 2, 4]",
        id="conv.conv2d_reference-groups-not-dividing-input",
    ),
    pytest.param(
        conv.conv2d_reference,
        (IMAGE, torch.randn(3, 2, 3, 3)),
        {"groups": 2},
        ValueError,
        "use a multiple of 2 kernels",
        id="conv.conv2d_reference-groups-not-dividing-output",
    ),
    pytest.param(
        conv.conv2d_reference,
        (IMAGE, torch.randn(2, 3, 3, 3)),
        {},
        ValueError,
        "pass weight of shape (2, 4, 3, 3)",
        id="conv.conv2d_reference-weight-channels",
    ),
    pytest.param(
        conv.conv2d_reference,
        (IMAGE, KERNELS, torch.zeros(3)),
        {},
        ValueError,
        "pass one number per output channel, (2,)",
        id="conv.conv2d_reference-bias-shape",
    ),
    pytest.param(
        conv.conv2d_reference,
        (IMAGE, KERNELS),
        {"padding": "full"},
        ValueError,
        "padding must be 'same', 'valid', an int or a pair of ints",
        id="conv.conv2d_reference-unknown-padding",
    ),
    pytest.param(
        conv.conv2d_reference,
        (IMAGE.long(), KERNELS),
        {},
        TypeError,
        "pass input.float()",
        id="conv.conv2d_reference-int-input",
    ),
    pytest.param(
        conv.dilate_kernel,
        (torch.ones(3), 2),
        {},
        TypeError,
        "weight must be a tensor whose last two dimensions are (kH, kW)",
        id="conv.dilate_kernel-1d-weight",
    ),
    pytest.param(
        conv.dilate_kernel,
        (KERNELS, 0),
        {},
        ValueError,
        "dilation must be positive (>= 1)",
        id="conv.dilate_kernel-zero-dilation",
    ),
    pytest.param(
        conv.receptive_field,
        ([(3, 1)],),
        {},
        TypeError,
        "each layer must be a (kernel_size, stride, dilation) triple of ints",
        id="conv.receptive_field-pair",
    ),
    pytest.param(
        conv.receptive_field,
        ([(3.0, 1, 1)],),
        {},
        TypeError,
        "each layer must be a (kernel_size, stride, dilation) triple of ints",
        id="conv.receptive_field-float",
    ),
    pytest.param(
        conv.receptive_field,
        ([(3, 0, 1)],),
        {},
        ValueError,
        "kernel_size, stride and dilation must be positive",
        id="conv.receptive_field-zero-stride",
    ),
    pytest.param(
        conv.receptive_field,
        (3,),
        {},
        TypeError,
        "a list of (kernel_size, stride, dilation) triples",
        id="conv.receptive_field-int",
    ),
    pytest.param(
        conv.measure_receptive_field,
        ("conv", 9),
        {},
        TypeError,
        "model must be an nn.Module such as nn.Conv2d(1, 1, 3)",
        id="conv.measure_receptive_field-str-model",
    ),
    pytest.param(
        conv.measure_receptive_field,
        (nn.Conv2d(1, 1, 3), 0),
        {},
        ValueError,
        "input_size must be positive (>= 1)",
        id="conv.measure_receptive_field-empty-input",
    ),
    pytest.param(
        conv.measure_receptive_field,
        (nn.Conv2d(3, 1, 3), 9),
        {},
        ValueError,
        "pass in_channels=3",
        id="conv.measure_receptive_field-in-channels",
    ),
    pytest.param(
        conv.count_read_positions,
        ("conv", 9),
        {},
        TypeError,
        "model must be an nn.Module such as nn.Conv2d(1, 1, 3)",
        id="conv.count_read_positions-str-model",
    ),
    pytest.param(
        checks_conv.check_pool_output_length,
        (14,),
        {},
        WrongAnswer,
        "Pass the function itself: check_pool_output_length(pool_output_length), without ().",
        id="checks.conv.check_pool_output_length-called",
    ),
    pytest.param(
        checks_conv.check_causal_conv1d,
        (IMAGE,),
        {},
        WrongAnswer,
        "Pass the function itself: check_causal_conv1d(causal_conv1d), without ().",
        id="checks.conv.check_causal_conv1d-called",
    ),
    # batchnorm ----------------------------------------------------------------------------------------------------
    pytest.param(
        batchnorm.channel_statistics,
        ([[1.0, 2.0]],),
        {},
        TypeError,
        "the input must be a tensor of shape (N, C, H, W)",
        id="batchnorm.channel_statistics-list",
    ),
    pytest.param(
        batchnorm.channel_statistics,
        (FEATURES[0],),
        {},
        ValueError,
        "for a single image add the batch dimension with x.unsqueeze(0)",
        id="batchnorm.channel_statistics-one-image",
    ),
    pytest.param(
        batchnorm.channel_statistics,
        (torch.randn(8, 3),),
        {},
        ValueError,
        "for (N, C) use BatchNorm1d",
        id="batchnorm.channel_statistics-2d",
    ),
    pytest.param(
        batchnorm.channel_statistics,
        (FEATURES.long(),),
        {},
        TypeError,
        "must hold floating-point numbers, not torch.int64: use x.float()",
        id="batchnorm.channel_statistics-int",
    ),
    pytest.param(
        batchnorm.normalize_per_channel,
        (FEATURES[0],),
        {},
        ValueError,
        "add the batch dimension with x.unsqueeze(0)",
        id="batchnorm.normalize_per_channel-one-image",
    ),
    pytest.param(
        batchnorm.normalize_per_channel,
        (FEATURES,),
        {"eps": -1.0},
        ValueError,
        "eps must be a small positive number such as 1e-5",
        id="batchnorm.normalize_per_channel-negative-eps",
    ),
    pytest.param(
        batchnorm.normalize_per_position,
        (FEATURES.long(),),
        {},
        TypeError,
        "must hold floating-point numbers, not torch.int64: use x.float()",
        id="batchnorm.normalize_per_position-int",
    ),
    pytest.param(
        batchnorm.normalize_per_position,
        (torch.randn(8, 3),),
        {},
        ValueError,
        "for (N, C) use BatchNorm1d",
        id="batchnorm.normalize_per_position-2d",
    ),
    pytest.param(
        batchnorm.BatchNorm2dReference,
        ("3",),
        {},
        TypeError,
        "num_features (the number of channels C) must be an int such as 1",
        id="batchnorm.BatchNorm2dReference-str-features",
    ),
    pytest.param(
        batchnorm.BatchNorm2dReference,
        (0,),
        {},
        ValueError,
        "num_features (the number of channels C) must be at least 1",
        id="batchnorm.BatchNorm2dReference-no-features",
    ),
    pytest.param(
        batchnorm.BatchNorm2dReference,
        (3,),
        {"eps": 0},
        ValueError,
        "eps must be a small positive number such as 1e-5",
        id="batchnorm.BatchNorm2dReference-zero-eps",
    ),
    pytest.param(
        batchnorm.BatchNorm2dReference,
        (3,),
        {"momentum": "0.1"},
        TypeError,
        "momentum must be a number in [0, 1] or None",
        id="batchnorm.BatchNorm2dReference-str-momentum",
    ),
    pytest.param(
        batchnorm.BatchNorm2dReference,
        (3,),
        {"momentum": 1.5},
        ValueError,
        "pass None for a cumulative average",
        id="batchnorm.BatchNorm2dReference-momentum-above-1",
    ),
    pytest.param(
        batchnorm.BatchNorm2dReference,
        (3,),
        {"affine": "yes"},
        TypeError,
        "affine must be True or False",
        id="batchnorm.BatchNorm2dReference-str-affine",
    ),
    pytest.param(
        batchnorm.BatchNorm2dReference,
        (3,),
        {"track_running_stats": 1},
        TypeError,
        "track_running_stats must be True or False",
        id="batchnorm.BatchNorm2dReference-int-flag",
    ),
    pytest.param(
        batchnorm.BatchNorm2dReference.from_module,
        (nn.BatchNorm1d(3),),
        {},
        TypeError,
        "from_module copies an nn.BatchNorm2d",
        id="batchnorm.BatchNorm2dReference.from_module-batchnorm1d",
    ),
    pytest.param(
        BN3.train,
        ("eval",),
        {},
        TypeError,
        "mode must be True or False",
        id="batchnorm.BatchNorm2dReference.train-str-mode",
    ),
    pytest.param(
        BN3.__call__,
        (torch.randn(2, 4, 3, 3),),
        {},
        ValueError,
        "build it with num_features=4, or check which dimension holds the channels (it must be dimension 1)",
        id="batchnorm.BatchNorm2dReference.__call__-channels",
    ),
    pytest.param(
        BN3.__call__,
        (torch.randn(1, 3, 1, 1),),
        {},
        ValueError,
        "use a batch of at least 2 samples (or a larger feature map), or call eval() first",
        id="batchnorm.BatchNorm2dReference.__call__-one-value-per-channel",
    ),
    pytest.param(
        checks_batchnorm.check_group_norm,
        (batchnorm.normalize_per_channel(FEATURES),),
        {},
        WrongAnswer,
        "Pass the function itself: check_group_norm(group_norm), without ().",
        id="checks.batchnorm.check_group_norm-called",
    ),
    pytest.param(
        checks_batchnorm.check_fuse_conv_bn,
        ((KERNELS, torch.zeros(2)),),
        {},
        WrongAnswer,
        "Pass the function itself: check_fuse_conv_bn(fuse_conv_bn), without ().",
        id="checks.batchnorm.check_fuse_conv_bn-called",
    ),
    # training -----------------------------------------------------------------------------------------------------
    pytest.param(
        training.count_parameters,
        ("model",),
        {},
        TypeError,
        "model must be an nn.Module such as nn.Linear(64, 10)",
        id="training.count_parameters-str",
    ),
    pytest.param(
        training.count_parameters,
        (nn.Linear,),
        {},
        TypeError,
        "model must be an nn.Module such as nn.Linear(64, 10)",
        id="training.count_parameters-class",
    ),
    pytest.param(
        training.resize_images,
        (IMAGES.tensors, 32),
        {},
        TypeError,
        "dataset must be a TensorDataset(images, labels), e.g. from companion.data.digits_datasets()",
        id="training.resize_images-tuple",
    ),
    pytest.param(
        training.resize_images,
        (IMAGES, 0),
        {},
        ValueError,
        "size must be a positive int such as 32",
        id="training.resize_images-zero",
    ),
    pytest.param(
        training.resize_images,
        (TensorDataset(torch.rand(4, 8, 8), torch.arange(4)), 16),
        {},
        ValueError,
        "images must have shape (N, channels, height, width)",
        id="training.resize_images-3d-images",
    ),
    pytest.param(
        training.train_one_epoch,
        (LINEAR, BATCHES, torch.optim.SGD, F.cross_entropy),
        {},
        TypeError,
        "pass an instance, e.g. torch.optim.SGD(model.parameters(), lr=0.01)",
        id="training.train_one_epoch-optimizer-class",
    ),
    pytest.param(
        training.train_one_epoch,
        (LINEAR, BATCHES, "sgd", F.cross_entropy),
        {},
        TypeError,
        "optimizer must be a torch.optim.Optimizer such as SGD",
        id="training.train_one_epoch-str-optimizer",
    ),
    pytest.param(
        training.train_one_epoch,
        (LINEAR, BATCHES, OTHER_SGD, F.cross_entropy),
        {},
        ValueError,
        "build it from this model, torch.optim.SGD(model.parameters(), lr=0.01)",
        id="training.train_one_epoch-other-models-optimizer",
    ),
    pytest.param(
        training.train_one_epoch,
        (LINEAR, BATCHES, SGD, torch.tensor(0.5)),
        {},
        TypeError,
        "give them two names, e.g. `loss = criterion(output, target)`",
        id="training.train_one_epoch-loss-value",
    ),
    pytest.param(
        training.train_one_epoch,
        (LINEAR, BATCHES, SGD, "cross_entropy"),
        {},
        TypeError,
        "loss_fn must be callable, e.g. nn.CrossEntropyLoss()",
        id="training.train_one_epoch-str-loss",
    ),
    pytest.param(
        training.train_one_epoch,
        (LINEAR, BATCHES, SGD, nn.CrossEntropyLoss(reduction="none")),
        {},
        ValueError,
        "loss_fn must return one number per batch (reduction='mean')",
        id="training.train_one_epoch-unreduced-loss",
    ),
    pytest.param(
        training.train_one_epoch,
        (LINEAR, [], SGD, F.cross_entropy),
        {},
        ValueError,
        "check that the dataset is not empty",
        id="training.train_one_epoch-empty-loader",
    ),
    pytest.param(
        training.train_one_epoch,
        (LINEAR.state_dict(), BATCHES, SGD, F.cross_entropy),
        {},
        TypeError,
        "model must be an nn.Module such as nn.Linear(64, 10)",
        id="training.train_one_epoch-state-dict",
    ),
    pytest.param(
        training.evaluate,
        ("model", BATCHES),
        {},
        TypeError,
        "model must be an nn.Module such as nn.Linear(64, 10)",
        id="training.evaluate-str-model",
    ),
    pytest.param(
        training.evaluate,
        (LINEAR, BATCHES),
        {"loss_fn": torch.tensor(0.5)},
        TypeError,
        "give them two names",
        id="training.evaluate-loss-value",
    ),
    pytest.param(
        training.evaluate,
        (LINEAR, ONE_HOT_BATCHES),
        {},
        ValueError,
        "(one-hot targets: targets.argmax(1))",
        id="training.evaluate-one-hot-targets",
    ),
    pytest.param(
        training.evaluate,
        (LINEAR, []),
        {},
        ValueError,
        "check that the dataset is not empty",
        id="training.evaluate-empty-loader",
    ),
    pytest.param(
        training.progress_bar,
        (iter([1, 2]), "epochs"),
        {},
        ValueError,
        "pass total=<number of items>",
        id="training.progress_bar-no-len",
    ),
    pytest.param(
        training.fit,
        (LINEAR, BATCHES, BATCHES, SGD, F.cross_entropy, 0),
        {},
        ValueError,
        "epochs must be a positive int such as 10",
        id="training.fit-zero-epochs",
    ),
    pytest.param(
        training.fit,
        (LINEAR, BATCHES, BATCHES, SGD, F.cross_entropy, 2.0),
        {},
        ValueError,
        "epochs must be a positive int such as 10",
        id="training.fit-float-epochs",
    ),
    pytest.param(
        training.fit,
        (LINEAR, BATCHES, BATCHES, torch.optim.SGD, F.cross_entropy, 1),
        {"progress": False},
        TypeError,
        "pass an instance, e.g. torch.optim.SGD(model.parameters(), lr=0.01)",
        id="training.fit-optimizer-class",
    ),
    pytest.param(
        checks_training.check_accumulated_step,
        (0.25,),
        {},
        WrongAnswer,
        "Pass the function itself: check_accumulated_step(accumulated_step), without ().",
        id="checks.training.check_accumulated_step-called",
    ),
    pytest.param(
        checks_training.check_predict,
        (TARGET,),
        {},
        WrongAnswer,
        "Pass the function itself: check_predict(predict), without ().",
        id="checks.training.check_predict-called",
    ),
    # optim --------------------------------------------------------------------------------------------------------
    pytest.param(
        optim.Adam,
        ([PARAMETER],),
        {"lr": -1e-3},
        ValueError,
        "a small positive number such as 1e-3",
        id="optim.Adam-negative-lr",
    ),
    pytest.param(
        optim.Adam,
        ([PARAMETER],),
        {"lr": float("nan")},
        ValueError,
        "a small positive number such as 1e-3",
        id="optim.Adam-nan-lr",
    ),
    pytest.param(
        optim.Adam,
        ([PARAMETER],),
        {"betas": (0.9,)},
        ValueError,
        "betas must be a pair (beta1, beta2) such as (0.9, 0.999)",
        id="optim.Adam-one-beta",
    ),
    pytest.param(
        optim.Adam,
        ([PARAMETER],),
        {"betas": (0.9, 1.0)},
        ValueError,
        "must be in [0, 1), e.g. betas=(0.9, 0.999)",
        id="optim.Adam-beta-1",
    ),
    pytest.param(
        optim.Adam, ([PARAMETER],), {"eps": -1.0}, ValueError, "the default is 1e-8", id="optim.Adam-negative-eps"
    ),
    pytest.param(
        optim.Adam,
        ([PARAMETER],),
        {"weight_decay": -0.1},
        ValueError,
        "0 turns it off; 1e-2 is a common value",
        id="optim.Adam-negative-weight-decay",
    ),
    pytest.param(
        optim.Adam,
        (LINEAR,),
        {},
        TypeError,
        "pass model.parameters()",
        id="optim.Adam-module",
    ),
    pytest.param(
        optim.Adam,
        ([PARAMETER],),
        {"lr": "1e-3"},
        TypeError,
        "such as 1e-3",
        id="optim.Adam-str-lr",
    ),
    pytest.param(
        optim.Adam,
        ([PARAMETER],),
        {"betas": 0.9},
        TypeError,
        "such as (0.9, 0.999)",
        id="optim.Adam-one-number-betas",
    ),
    pytest.param(
        optim.NotesAdam,
        ([PARAMETER],),
        {"lr": -1.0},
        ValueError,
        "a small positive number such as 1e-3",
        id="optim.NotesAdam-negative-lr",
    ),
    pytest.param(
        optim.NotesAdam,
        ([PARAMETER],),
        {"betas": (1.0, 0.999)},
        ValueError,
        "must be in [0, 1), e.g. betas=(0.9, 0.999)",
        id="optim.NotesAdam-beta-1",
    ),
    pytest.param(
        optim.sgd_momentum_update,
        (torch.zeros(3), torch.ones(3), None, -0.1, 0.9),
        {},
        ValueError,
        "lr must be >= 0 (e.g. 0.1)",
        id="optim.sgd_momentum_update-negative-lr",
    ),
    pytest.param(
        optim.sgd_momentum_update,
        (torch.zeros(3), torch.ones(3), None, 0.1, -0.9),
        {},
        ValueError,
        "0.9 is common; 0 is plain SGD",
        id="optim.sgd_momentum_update-negative-momentum",
    ),
    pytest.param(
        optim.max_abs_difference,
        (nn.Linear(2, 1), nn.Linear(3, 1)),
        {},
        ValueError,
        "build both with the same function",
        id="optim.max_abs_difference-shapes",
    ),
    pytest.param(
        optim.max_abs_difference,
        (nn.Linear(2, 1), nn.Sequential(nn.Linear(2, 1), nn.Linear(1, 1))),
        {},
        ValueError,
        "build both with the same function",
        id="optim.max_abs_difference-parameter-count",
    ),
    pytest.param(
        checks_optim.check_adam_update,
        (None,),
        {},
        WrongAnswer,
        "Pass the function itself: check_adam_update(adam_update), without ().",
        id="checks.optim.check_adam_update-none",
    ),
    pytest.param(
        checks_optim.check_adam_update,
        (lambda param, grad: None,),
        {},
        WrongAnswer,
        "must accept (param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps), with lr, betas and eps as keyword",
        id="checks.optim.check_adam_update-two-arguments",
    ),
    pytest.param(
        checks_optim.check_adamw_update,
        (PARAMETER,),
        {},
        WrongAnswer,
        "Pass the function itself: check_adamw_update(adamw_update), without ().",
        id="checks.optim.check_adamw_update-called",
    ),
    # checkpoint ---------------------------------------------------------------------------------------------------
    pytest.param(
        checkpoint.train_epochs,
        (DIGITS_MODEL, SGD, DataLoader(IMAGES), -1),
        {},
        ValueError,
        "epochs must be an int >= 0",
        id="checkpoint.train_epochs-negative",
    ),
    pytest.param(
        checkpoint.train_epochs,
        (DIGITS_MODEL, SGD, DataLoader(IMAGES), 1.5),
        {},
        ValueError,
        "epochs must be an int >= 0",
        id="checkpoint.train_epochs-float",
    ),
    pytest.param(
        checkpoint.accuracy,
        (DIGITS_MODEL, DataLoader(IMAGES)),
        {},
        TypeError,
        "a TensorDataset(images, labels)",
        id="checkpoint.accuracy-loader",
    ),
    pytest.param(
        checkpoint.states_equal,
        (LINEAR, OTHER),
        {},
        TypeError,
        "pass model.state_dict()",
        id="checkpoint.states_equal-models",
    ),
    pytest.param(
        checkpoint.save_checkpoint,
        (STATE, 123),
        {},
        TypeError,
        "path must be a file path (str or pathlib.Path) like 'last.pt'",
        id="checkpoint.save_checkpoint-int-path",
    ),
    pytest.param(
        checkpoint.save_checkpoint,
        (STATE, in_tmp()),
        {},
        IsADirectoryError,
        "pass a file path inside it, such as folder / 'last.pt'",
        id="checkpoint.save_checkpoint-folder",
    ),
    pytest.param(
        checkpoint.save_checkpoint,
        (STATE, in_tmp("runs", "last.pt")),
        {},
        FileNotFoundError,
        "create it first with path.parent.mkdir(parents=True)",
        id="checkpoint.save_checkpoint-missing-folder",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (STATE,),
        {},
        TypeError,
        "path must be a file path (str or pathlib.Path) like 'last.pt'",
        id="checkpoint.load_checkpoint-state-instead-of-path",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (GOOD_FILE,),
        {"weights_only": "yes"},
        TypeError,
        "weights_only must be True or False",
        id="checkpoint.load_checkpoint-str-weights-only",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (GOOD_FILE,),
        {"map_location": 0},
        TypeError,
        "map_location must be a device such as 'cpu' or torch.device('cuda:0')",
        id="checkpoint.load_checkpoint-int-map-location",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (GOOD_FILE,),
        {"map_location": "gpu"},
        ValueError,
        "pass 'cpu', 'cuda', 'cuda:0' or 'mps'",
        id="checkpoint.load_checkpoint-unknown-device",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (GOOD_FILE,),
        {"safe_globals": nn.Linear},
        TypeError,
        "e.g. safe_globals=[RunConfig]",
        id="checkpoint.load_checkpoint-one-class-not-a-list",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (in_tmp("nope.pt"),),
        {},
        CheckpointError,
        "check the path, or start training from scratch",
        id="checkpoint.load_checkpoint-missing-file",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (in_tmp(),),
        {},
        CheckpointError,
        "pass the file inside it",
        id="checkpoint.load_checkpoint-folder",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (file_with(lambda good: b"", "empty"),),
        {},
        CheckpointError,
        "load an earlier checkpoint, and save with save_checkpoint, which never leaves a partial file",
        id="checkpoint.load_checkpoint-empty-file",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (file_with(lambda good: good[: len(good) // 2], "first half"),),
        {},
        CheckpointError,
        "Load an earlier checkpoint, and save with save_checkpoint, which never leaves a partial file",
        id="checkpoint.load_checkpoint-truncated-half",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (file_with(lambda good: good[:-10], "last 10 bytes cut"),),
        {},
        CheckpointError,
        "Load an earlier checkpoint, and save with save_checkpoint",
        id="checkpoint.load_checkpoint-truncated-end",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (file_with(lambda good: good[:300] + bytes(50) + good[350:], "zeros inside"),),
        {},
        CheckpointError,
        "Load an earlier checkpoint, and save with save_checkpoint",
        id="checkpoint.load_checkpoint-corrupt-zeros",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (file_with(lambda good: bytes(range(256)) * 3, "random bytes"),),
        {},
        CheckpointError,
        "Load an earlier checkpoint, and save with save_checkpoint",
        id="checkpoint.load_checkpoint-corrupt-random-bytes",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (file_with(lambda good: b"epoch 3, loss 0.25\n", "a text file"),),
        {},
        CheckpointError,
        "Load an earlier checkpoint, and save with save_checkpoint",
        id="checkpoint.load_checkpoint-text-file",
    ),
    pytest.param(
        checkpoint.load_checkpoint,
        (saved(lambda: nn.Linear(2, 1), "a pickled model"),),
        {},
        CheckpointError,
        "If the file holds a whole pickled model, load its state_dict instead",
        id="checkpoint.load_checkpoint-pickled-model",
    ),
    pytest.param(
        checkpoint.load_partial_state_dict,
        ("model", STATE),
        {},
        TypeError,
        "model must be an nn.Module",
        id="checkpoint.load_partial_state_dict-str-model",
    ),
    pytest.param(
        checkpoint.load_partial_state_dict,
        (LINEAR, OTHER),
        {},
        TypeError,
        "pass the model's state_dict(), not the model itself: other_model.state_dict()",
        id="checkpoint.load_partial_state_dict-model",
    ),
    pytest.param(
        checkpoint.load_partial_state_dict,
        (LINEAR, {"weights": STATE, "epoch": 3}),
        {},
        ValueError,
        "pass the model's part, e.g. checkpoint['weights']",
        id="checkpoint.load_partial_state_dict-whole-checkpoint",
    ),
    pytest.param(
        checkpoint.load_partial_state_dict,
        (LINEAR, list(STATE.items())),
        {},
        TypeError,
        "state_dict must be a mapping of names to tensors",
        id="checkpoint.load_partial_state_dict-list",
    ),
    pytest.param(
        checkpoint.load_partial_state_dict,
        (LINEAR, {0: STATE["weight"]}),
        {},
        TypeError,
        "state_dict keys must be str names such as 'head.weight'",
        id="checkpoint.load_partial_state_dict-int-key",
    ),
    pytest.param(
        checkpoint.load_partial_state_dict,
        (LINEAR, {"weight": STATE["weight"].tolist()}),
        {},
        TypeError,
        "not a tensor: pass model.state_dict()",
        id="checkpoint.load_partial_state_dict-list-value",
    ),
    pytest.param(
        checkpoint.strip_prefix,
        (STATE,),
        {"prefix": "module"},
        ValueError,
        "pass 'module.'",
        id="checkpoint.strip_prefix-no-dot",
    ),
    pytest.param(
        checkpoint.strip_prefix,
        (STATE,),
        {"prefix": ""},
        TypeError,
        "prefix must be a non-empty str such as 'module.'",
        id="checkpoint.strip_prefix-empty",
    ),
    pytest.param(
        checkpoint.strip_prefix,
        ({"module.weight": STATE["weight"], "weight": STATE["weight"]},),
        {},
        ValueError,
        "pass a state_dict from one model",
        id="checkpoint.strip_prefix-collision",
    ),
    pytest.param(
        checkpoint.strip_prefix,
        (LINEAR,),
        {},
        TypeError,
        "pass the model's state_dict(), not the model itself",
        id="checkpoint.strip_prefix-model",
    ),
    pytest.param(
        checkpoint.eval_frozen_batchnorm,
        (DIGITS_MODEL.state_dict(),),
        {},
        TypeError,
        "model must be an nn.Module",
        id="checkpoint.eval_frozen_batchnorm-state-dict",
    ),
    pytest.param(
        checks_checkpoint.check_finetune,
        (None,),
        {},
        WrongAnswer,
        "Pass the function itself: check_finetune(finetune), without ().",
        id="checks.checkpoint.check_finetune-none",
    ),
    pytest.param(
        checks_checkpoint.check_resume,
        (lambda *args: {}, {"epoch": 2}),
        {},
        WrongAnswer,
        "Pass the two functions themselves: check_resume(capture, restore), without ().",
        id="checks.checkpoint.check_resume-dict-restore",
    ),
    pytest.param(
        checkpoint.verify_digest,
        (in_tmp("nope.pt"),),
        {},
        CheckpointError,
        "check the path, or start training from scratch",
        id="checkpoint.verify_digest-missing-file",
    ),
    pytest.param(
        checkpoint.verify_digest,
        (STATE,),
        {},
        TypeError,
        "path must be a file path (str or pathlib.Path) like 'last.pt'",
        id="checkpoint.verify_digest-state-instead-of-path",
    ),
    # devices ------------------------------------------------------------------------------------------------------
    pytest.param(
        devices.pick_device,
        (0,),
        {},
        TypeError,
        "prefer must be a device name such as 'cpu' or 'cuda:0'",
        id="devices.pick_device-int",
    ),
    pytest.param(
        devices.pick_device,
        (torch.device("cpu"),),
        {},
        TypeError,
        "prefer must be a device name such as 'cpu' or 'cuda:0'",
        id="devices.pick_device-device-object",
    ),
    pytest.param(
        devices.pick_device,
        ("gpu",),
        {},
        ValueError,
        "use 'cpu', 'cuda', 'cuda:N' or 'mps'",
        id="devices.pick_device-unknown-name",
    ),
    pytest.param(devices.pick_device, ("cuda:63",), {}, ValueError, "use 'cpu'", id="devices.pick_device-missing-gpu"),
    pytest.param(
        devices.pick_device,
        ("mps",),
        {},
        ValueError,
        "is not available here: use 'cpu'",
        id="devices.pick_device-missing-mps",
        marks=pytest.mark.skipif(torch.backends.mps.is_available(), reason="this machine has MPS"),
    ),
    pytest.param(
        devices.pick_device,
        ("meta",),
        {},
        ValueError,
        "the course runs on 'cpu', 'cuda' or 'mps'",
        id="devices.pick_device-other-device-type",
    ),
    pytest.param(
        devices.run_python,
        (123,),
        {},
        TypeError,
        "code must be Python source as a str, such as 'print(1)'",
        id="devices.run_python-int-code",
    ),
    pytest.param(
        devices.run_python,
        ("print(1)",),
        {"env": ["CUDA_VISIBLE_DEVICES="]},
        TypeError,
        "such as {'CUDA_VISIBLE_DEVICES': ''}",
        id="devices.run_python-list-env",
    ),
    pytest.param(
        devices.run_python,
        ("print(1)",),
        {"env": {"CUDA_VISIBLE_DEVICES": 0}},
        TypeError,
        "names and values must be strings, e.g. '0' not 0",
        id="devices.run_python-int-env-value",
    ),
    pytest.param(
        devices.run_python,
        ("print(1)",),
        {"timeout": 0},
        ValueError,
        "timeout must be a positive number of seconds, such as 120",
        id="devices.run_python-zero-timeout",
    ),
    pytest.param(
        checks_devices.check_to_numpy,
        (FEATURES.numpy(),),
        {},
        WrongAnswer,
        "Pass the function itself: check_to_numpy(to_numpy), without ().",
        id="checks.devices.check_to_numpy-called",
    ),
    pytest.param(
        checks_devices.check_to_device,
        ({"images": FEATURES},),
        {},
        WrongAnswer,
        "Pass the function itself: check_to_device(to_device), without ().",
        id="checks.devices.check_to_device-called",
    ),
    # ddp ----------------------------------------------------------------------------------------------------------
    pytest.param(
        ddp.device_and_backend,
        ("0",),
        {},
        TypeError,
        "local_rank must be an int such as int(os.environ['LOCAL_RANK'])",
        id="ddp.device_and_backend-str",
    ),
    pytest.param(
        ddp.device_and_backend,
        (-1,),
        {},
        ValueError,
        "read it from $LOCAL_RANK",
        id="ddp.device_and_backend-negative",
    ),
    pytest.param(
        ddp.device_and_backend,
        (0,),
        {"prefer": "gpu"},
        ValueError,
        "use 'cpu', 'cuda', 'cuda:N' or 'mps'",
        id="ddp.device_and_backend-unknown-device",
    ),
    pytest.param(
        ddp.local_rank_from,
        (None, {}),
        {},
        ValueError,
        "start the script with torchrun (python -m torch.distributed.run --nproc-per-node=2 ...)",
        id="ddp.local_rank_from-nothing-set",
    ),
    pytest.param(
        ddp.local_rank_from,
        (None, {"LOCAL_RANK": "zero"}),
        {},
        ValueError,
        "start the script with torchrun",
        id="ddp.local_rank_from-not-a-number",
    ),
    pytest.param(
        checks_ddp.check_shard,
        ([1, 4, 7],),
        {},
        WrongAnswer,
        "Pass the function itself: check_shard(shard), without ().",
        id="checks.ddp.check_shard-called",
    ),
    pytest.param(
        checks_ddp.check_ddp_gradient,
        (torch.zeros(1, 3),),
        {},
        WrongAnswer,
        "Pass the function itself: check_ddp_gradient(ddp_gradient), without ().",
        id="checks.ddp.check_ddp_gradient-called",
    ),
    # ddp_launch (nothing below starts a process: every call is refused first) -------------------------------------
    pytest.param(
        ddp_launch.torchrun_command,
        (0, "train.py"),
        {},
        ValueError,
        "nproc must be between 1 and 64",
        id="ddp_launch.torchrun_command-zero",
    ),
    pytest.param(
        ddp_launch.torchrun_command,
        ("2", "train.py"),
        {},
        TypeError,
        "nproc must be an int such as 1",
        id="ddp_launch.torchrun_command-str",
    ),
    pytest.param(
        ddp_launch.torchrun_command,
        (2, "train.py", "--epochs", 2),
        {},
        TypeError,
        "pass the script's arguments as strings, e.g. '--epochs', '2'",
        id="ddp_launch.torchrun_command-int-argument",
    ),
    pytest.param(
        ddp_launch.node_command,
        (2, 2, 1, 29500, "train.py"),
        {},
        ValueError,
        "node_rank must be in 0..1 for nnodes=2",
        id="ddp_launch.node_command-node-rank",
    ),
    pytest.param(
        ddp_launch.node_command,
        (0, 0, 1, 29500, "train.py"),
        {},
        ValueError,
        "nnodes must be between 1 and 64",
        id="ddp_launch.node_command-no-nodes",
    ),
    pytest.param(
        ddp_launch.node_command,
        (2, 0, 1, 29500, "train.py"),
        {"rendezvous": "etcd"},
        ValueError,
        "rendezvous must be 'static' or 'c10d'",
        id="ddp_launch.node_command-rendezvous",
    ),
    pytest.param(
        ddp_launch.node_command,
        (1, 0, 1, -1, "train.py"),
        {},
        ValueError,
        "e.g. free_port()",
        id="ddp_launch.node_command-negative-port",
    ),
    pytest.param(
        ddp_launch.shown,
        ("torchrun --standalone --nproc-per-node=2",),
        {},
        TypeError,
        "pass the command as a list of words",
        id="ddp_launch.shown-str",
    ),
    pytest.param(
        ddp_launch.worker_environment,
        (),
        {"device": 0},
        TypeError,
        "device must be a name such as 'cpu' or 'cuda'",
        id="ddp_launch.worker_environment-int-device",
    ),
    pytest.param(
        ddp_launch.launch,
        (SCRIPT,),
        {"nproc": 0, "workdir": in_tmp("launch")},
        ValueError,
        "nproc must be between 1 and 64",
        id="ddp_launch.launch-zero",
    ),
    pytest.param(
        ddp_launch.launch,
        (SCRIPT, "--out", "results"),
        {},
        ValueError,
        "do not pass --out: the launcher gives the ranks their folder (use workdir= to keep it)",
        id="ddp_launch.launch-out",
    ),
    pytest.param(
        ddp_launch.launch,
        (SCRIPT, "--epochs", 2),
        {},
        TypeError,
        "e.g. '--epochs', '2'",
        id="ddp_launch.launch-int-argument",
    ),
    pytest.param(
        ddp_launch.launch,
        (in_tmp("ddp", "train.py"),),
        {},
        FileNotFoundError,
        "run the cell that writes it (%%writefile",
        id="ddp_launch.launch-no-script",
    ),
    pytest.param(
        ddp_launch.launch,
        (2,),
        {},
        TypeError,
        "script must be the path of a Python file such as 'ddp/train.py'",
        id="ddp_launch.launch-count-for-script",
    ),
    pytest.param(
        ddp_launch.launch_nodes,
        (SCRIPT,),
        {"nnodes": 0, "workdir": in_tmp("launch")},
        ValueError,
        "nnodes must be between 1 and 64",
        id="ddp_launch.launch_nodes-zero",
    ),
    pytest.param(
        ddp_launch.launch_nodes,
        (SCRIPT,),
        {"rendezvous": "etcd", "workdir": in_tmp("launch")},
        ValueError,
        "rendezvous must be 'static' or 'c10d'",
        id="ddp_launch.launch_nodes-rendezvous",
    ),
    pytest.param(
        ddp_launch.launch_nodes,
        (SCRIPT, "--out", "results"),
        {},
        ValueError,
        "(use workdir= to keep it)",
        id="ddp_launch.launch_nodes-out",
    ),
    pytest.param(
        ddp_launch.spawn,
        (SCRIPT,),
        {"nproc": 0},
        ValueError,
        "nproc must be between 1 and 64",
        id="ddp_launch.spawn-zero",
    ),
    pytest.param(
        ddp_launch.spawn,
        (SCRIPT, "--out", "results"),
        {},
        ValueError,
        "(use workdir= to keep it)",
        id="ddp_launch.spawn-out",
    ),
    pytest.param(
        ddp_launch.run_script,
        ("print('hello')",),
        {"nproc": 0},
        ValueError,
        "nproc must be between 1 and 64",
        id="ddp_launch.run_script-zero",
    ),
    pytest.param(
        ddp_launch.still_running,
        ("",),
        {},
        ValueError,
        "pass a marker such as the launch's work folder",
        id="ddp_launch.still_running-empty-marker",
    ),
    pytest.param(
        ddp_launch.stop_process_tree,
        ("ddp-workdir",),
        {},
        TypeError,
        "pid must be an int, a process id such as one from still_running(marker)",
        id="ddp_launch.stop_process_tree-str",
    ),
    pytest.param(
        ddp_launch.describe,
        ([{"rank": 0}],),
        {},
        ValueError,
        "pass the results of launch()",
        id="ddp_launch.describe-partial-result",
    ),
]


@pytest.fixture(autouse=True)
def no_launcher_and_no_figures(monkeypatch):
    """No rank variables (a call must never join a process group), no COURSE_DEVICE, and no figure left open."""
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "COURSE_DEVICE"):
        monkeypatch.delenv(name, raising=False)
    yield
    plt.close("all")


@pytest.fixture
def build(tmp_path):
    """Turn the Built arguments of a row into real ones, made inside tmp_path."""

    def made(value):
        return value.build(tmp_path) if isinstance(value, Built) else value

    return made


@pytest.mark.parametrize(("function", "args", "kwargs", "error", "fix"), BAD_CALLS)
def test_a_bad_call_raises_an_error_that_names_the_fix(function, args, kwargs, error, fix, build, capsys):
    args = [build(a) for a in args]
    kwargs = {name: build(value) for name, value in kwargs.items()}
    if error is SystemExit:  # argparse prints its message to stderr and exits with status 2
        with pytest.raises(SystemExit) as caught:
            function(*args, **kwargs)
        assert caught.value.code == 2
        assert fix in capsys.readouterr().err
        return
    with torch.random.fork_rng(devices=[]), pytest.raises(error, match=re.escape(fix)) as caught:
        function(*args, **kwargs)
    assert type(caught.value) is error, f"expected {error.__name__}, got its subclass {type(caught.value).__name__}"
    if error is CheckpointError:  # our own message only: no raw unpickling error chained on, no machine path
        assert caught.value.__cause__ is None
        assert caught.value.__suppress_context__ or caught.value.__context__ is None
        assert str(build(in_tmp())) not in str(caught.value)


def public_callables(modules=MODULES) -> dict[str, object]:
    """'module.name' -> object, for each public function and class defined in a companion module."""
    found = {}
    for module in modules:
        short = module.__name__.removeprefix("companion.")
        for name, value in vars(module).items():
            defined_here = getattr(value, "__module__", None) == module.__name__
            if not name.startswith("_") and (inspect.isfunction(value) or inspect.isclass(value)) and defined_here:
                found[f"{short}.{name}"] = value
    return found


def takes_arguments(value) -> bool:
    """True if `value` accepts at least one argument besides self."""
    try:
        signature = inspect.signature(value)
    except ValueError:  # a class without an __init__ of its own, such as an exception: it takes *args
        return True
    return any(parameter.name != "self" for parameter in signature.parameters.values())


def row_names() -> list[str]:
    """The 'module.name' (or 'module.Class.method') that each row's id starts with."""
    return [row.id.split("-", 1)[0] for row in BAD_CALLS]


def test_the_table_covers_every_companion_module():
    on_disk = {info.name for info in pkgutil.iter_modules(companion.__path__) if not info.name.startswith("_")}
    on_disk = (on_disk - {"checks"}) | {f"checks.{info.name}" for info in pkgutil.iter_modules(checks.__path__)}
    assert on_disk == {module.__name__.removeprefix("companion.") for module in MODULES}


def uncovered(public: dict[str, object], rows: set[str]) -> list[str]:
    """Learner-facing callables that take arguments and have neither a bad-call row nor a stated reason."""
    wanted = {name for name, value in public.items() if takes_arguments(value)}
    return sorted(wanted - rows - set(NO_BAD_INPUT) - set(EXEMPT))


def test_every_public_callable_that_takes_arguments_has_a_bad_call_or_a_reason():
    wanted = {name for name, value in public_callables().items() if takes_arguments(value)}
    covered = set(row_names())
    missing = uncovered(public_callables(), covered)
    assert not missing, f"add a row to BAD_CALLS (or a reason to NO_BAD_INPUT or EXEMPT) for {missing}"
    stated = set(NO_BAD_INPUT) | set(EXEMPT)
    assert not sorted(stated - wanted), "NO_BAD_INPUT/EXEMPT name something that is gone or takes no arguments"
    assert not sorted(stated & covered), "a callable with rows needs no exemption"
    assert not set(NO_BAD_INPUT) & set(EXEMPT)


def test_a_new_learner_facing_function_without_a_row_is_caught():
    def count_labels(labels, num_classes):  # what a new reference implementation in a lesson module looks like
        return labels

    count_labels.__module__ = scatter.__name__
    public = {**public_callables(), "scatter.count_labels": count_labels}
    assert uncovered(public, set(row_names())) == ["scatter.count_labels"]


def test_row_ids_are_unique_and_name_what_they_call():
    ids = [row.id for row in BAD_CALLS]
    assert len(ids) == len(set(ids))
    public = public_callables()
    for row, name in zip(BAD_CALLS, row_names(), strict=True):
        module = "checks." + name.split(".")[1] if name.startswith("checks.") else name.split(".")[0]
        attributes = name.removeprefix(module + ".").split(".")
        assert f"{module}.{attributes[0]}" in public, f"{row.id}: no public {module}.{attributes[0]}"
        function = row.values[0]
        qualname = getattr(function, "__qualname__", "<lambda>")
        if getattr(function, "__module__", "").startswith("companion.") and "<lambda>" not in qualname:
            assert name == f"{function.__module__.removeprefix('companion.')}.{qualname}", row.id
        assert len(row.values[4]) >= 8, f"{row.id}: quote enough of the message to name the fix"
