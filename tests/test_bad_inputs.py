"""Bad inputs: every test file's `BAD_CALLS` rows (wrong arguments to a public `companion` function or class, the
exception each must raise and the part of its message that says what to pass instead), run here; and the guarantee
that every public callable taking arguments has rows, or a stated reason why a learner's value never reaches it.
Every checker that takes the learner's function says so when given a value instead (one test for all of them).
"""

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
import torch

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
    language,
    losses,
    optim,
    plotting,
    scatter,
    tensors,
    training,
)
from companion.checkpoint import CheckpointError
from companion.exercises import WrongAnswer
from tests.bad_inputs import Built, in_tmp
from tools.course import exercise_tables  # every exercise of every EXERCISES table

# Every public module of companion and of companion.checks (the private _validate and _torch_errors are reached
# through the functions that use them, and have tests of their own).
MODULES = [
    course,
    plotting,
    language,
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
    "exercises.hint_text": "joins whatever hints a checker gives it into a WrongAnswer's message",
    "exercises.shows_pass": "looks for a pass line in any text it is given",
    "language.say": "joins whatever two texts companion gives it",
    "language.in_language": "picks one of whatever two texts companion gives it",
    "language.by_language": "picks one of whatever three texts companion gives it",
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
    "ddp.sampler_table": "tabulates DistributedSampler for the lesson's own small cases",
    "ddp.plot_sampler": "a plot helper, called only with the lesson's own arguments",
    "conv.plot_dilation": "a plot helper, called only with the lesson's own arguments",
    "conv.plot_edge_responses": "a plot helper, called only with the lesson's own digit and kernels",
    "batchnorm.running_mean_history": "feeds the lesson's own batches to a fresh layer for the plot",
    "batchnorm.plot_running_means": "a plot helper, called only with the lesson's own histories",
    "tensors.plot_views": "a plot helper, called only with the lesson's own tensors",
    "batchnorm.normalized_together": "probes the lesson's own layers for the plot",
    "batchnorm.plot_norm_groups": "a plot helper, called only with the lesson's own layers",
    "ddp.allreduce_gradients": "computes the numbers of the lesson's all-reduce picture for its own model and batch",
    "ddp.plot_allreduce": "a plot helper, called only with the lesson's own arguments",
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
    "language.speaking": "the tools' switch of language (the answer key's 'both'); tests/test_language.py checks it",
}


# The rows live beside each module's tests (tests/test_conv.py holds conv's); pytest has put tests/ on the path.
TEST_FILES = sorted(
    p.stem
    for p in Path(__file__).parent.glob("test_*.py")
    if p != Path(__file__) and "\nBAD_CALLS = [" in p.read_text()
)
BAD_CALLS = [row for name in TEST_FILES for row in importlib.import_module(name).BAD_CALLS]

# The checkers that take the learner's function (their exercise's reference answer is one function).
ONE_FUNCTION_CHECKERS = sorted(
    {
        exercise.check
        for exercise in exercise_tables().values()
        if callable(exercise.reference) and len(inspect.signature(exercise.check).parameters) == 1
    },
    key=lambda check: check.__name__,
)


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


@pytest.mark.parametrize("row", BAD_CALLS, ids=lambda row: row.id)
def test_a_bad_call_raises_an_error_that_names_the_fix(row, build, capsys):
    function, error, fix = row.function, row.error, row.fix
    args = [build(a) for a in row.args]
    kwargs = {name: build(value) for name, value in row.kwargs.items()}
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
    """The 'module.name' (or 'module.Class.method') each row calls, and each checker the generic test calls."""
    return [row.name for row in BAD_CALLS] + [
        f"checks.{c.__module__.rsplit('.', 1)[1]}.{c.__name__}" for c in ONE_FUNCTION_CHECKERS
    ]


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
    for row in BAD_CALLS:
        module = "checks." + row.name.split(".")[1] if row.name.startswith("checks.") else row.name.split(".")[0]
        attribute = row.name.removeprefix(module + ".").split(".")[0]
        assert f"{module}.{attribute}" in public, f"{row.id}: no public {module}.{attribute}"
        assert len(row.fix) >= 8, f"{row.id}: quote enough of the message to name the fix"


@pytest.mark.parametrize("check", ONE_FUNCTION_CHECKERS, ids=lambda check: check.__name__)
def test_a_checker_given_a_value_instead_of_the_function_says_to_pass_the_function(check):
    # The typical slip: check_x(x(...)) or check_x(x()) instead of check_x(x).
    with pytest.raises(WrongAnswer, match=rf"Pass the function itself: {check.__name__}\(\w+\), without \(\)"):
        check(torch.zeros(2))
