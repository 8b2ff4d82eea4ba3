"""companion.losses against PyTorch (the reference cross-entropy, its argument checks, the picture), and the
lesson's exercise checks in companion.checks.losses against their tables of typical wrong answers."""

import math
import re
import warnings

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import losses
from companion.checks.losses import _pixel_cases, check_bce_with_logits, check_pixel_cross_entropy_grad
from companion.exercises import WrongAnswer
from companion.losses import (
    cross_entropy_reference,
    log_softmax_reference,
    loss_vs_true_logit,
    plot_loss_vs_true_logit,
    plot_regression_losses,
    regression_loss_curves,
)
from companion.plotting import COLUMN_WIDTH, use_course_style
from tests.bad_inputs import SMALL_LOGITS, SMALL_TARGET, bad


@st.composite
def loss_case(draw, probabilities: bool):
    """Random logits (N, C, d1, ...) with class-index or probability targets and every option of F.cross_entropy."""
    n = draw(st.integers(0, 5))
    c = draw(st.integers(1, 5))
    extra = draw(st.lists(st.integers(1, 3), max_size=2))
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    scale = draw(st.sampled_from([0.1, 1.0, 10.0, 1000.0]))
    logits = (torch.randn(n, c, *extra, generator=generator) * scale).to(dtype)
    if probabilities:
        target = torch.softmax(torch.randn(n, c, *extra, generator=generator) * 3, dim=1).to(dtype)
        ignore_index = -100
    else:
        target = torch.randint(0, c, (n, *extra), generator=generator)
        ignore_index = draw(st.sampled_from([-100, -1, 0, c - 1]))
        ignored = torch.rand(target.shape, generator=generator) < draw(st.sampled_from([0.0, 0.3, 1.0]))
        target[ignored] = ignore_index
    weight = None
    if draw(st.booleans()):
        weight = (torch.rand(c, generator=generator) * 2 + 0.05).to(dtype)
    options = {
        "weight": weight,
        "ignore_index": ignore_index,
        "reduction": draw(st.sampled_from(["none", "sum", "mean"])),
        "label_smoothing": draw(st.sampled_from([0.0, 0.1, 0.5, 1.0])),
    }
    return logits, target, options


def assert_same_loss(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    # Sums of up to ~100 terms of size up to ~1000 in float32: compare relative to the size of the terms.
    tolerance = 1e-4 if want.dtype == torch.float32 else 1e-10
    torch.testing.assert_close(got, want, rtol=tolerance, atol=tolerance, equal_nan=True)


@settings(max_examples=150, deadline=None)
@given(loss_case(probabilities=False))
def test_reference_equals_torch_for_class_indices(case):
    logits, target, options = case
    assert_same_loss(cross_entropy_reference(logits, target, **options), F.cross_entropy(logits, target, **options))


@settings(max_examples=100, deadline=None)
@given(loss_case(probabilities=True))
def test_reference_equals_torch_for_probability_targets(case):
    logits, target, options = case
    assert_same_loss(cross_entropy_reference(logits, target, **options), F.cross_entropy(logits, target, **options))


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weight", [None, torch.tensor([0.5, 2.0, 1.0])])
def test_reference_equals_the_modules_and_log_softmax_plus_nll(reduction, label_smoothing, weight):
    logits = torch.randn(7, 3, generator=torch.Generator().manual_seed(4))
    target = torch.tensor([0, 1, 2, -100, 2, 1, 0])
    options = {"weight": weight, "reduction": reduction}
    got = cross_entropy_reference(logits, target, label_smoothing=label_smoothing, **options)
    module = torch.nn.CrossEntropyLoss(label_smoothing=label_smoothing, **options)
    torch.testing.assert_close(got, module(logits, target))
    if label_smoothing == 0.0:
        torch.testing.assert_close(got, F.nll_loss(F.log_softmax(logits, dim=1), target, **options))
        torch.testing.assert_close(got, torch.nn.NLLLoss(**options)(torch.log_softmax(logits, dim=1), target))


@pytest.mark.parametrize("weight", [None, torch.tensor([1.0, 2.0])])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_all_ignored_batch_gives_nan_mean_zero_sum_and_zero_losses(weight, label_smoothing):
    logits, target = torch.randn(3, 2), torch.full((3,), -100)
    options = {"weight": weight, "label_smoothing": label_smoothing}
    mean = cross_entropy_reference(logits, target, **options)
    assert mean.isnan() and F.cross_entropy(logits, target, **options).isnan()
    assert cross_entropy_reference(logits, target, reduction="sum", **options).item() == 0.0
    assert torch.equal(cross_entropy_reference(logits, target, reduction="none", **options), torch.zeros(3))


def test_empty_batch_matches_torch():
    for target in (torch.zeros(0, dtype=torch.long), torch.zeros(0, 4)):
        assert cross_entropy_reference(torch.zeros(0, 4), target).isnan()
        assert F.cross_entropy(torch.zeros(0, 4), target).isnan()
        assert cross_entropy_reference(torch.zeros(0, 4), target, reduction="none").shape == (0,)


def test_weighted_mean_divides_by_the_weights_of_the_kept_targets():
    logits = torch.randn(4, 3, generator=torch.Generator().manual_seed(5))
    target, weight = torch.tensor([0, 2, -100, 2]), torch.tensor([0.5, 1.0, 4.0])
    per_sample = cross_entropy_reference(logits, target, weight, reduction="none")
    mean = cross_entropy_reference(logits, target, weight)
    torch.testing.assert_close(mean, per_sample.sum() / (0.5 + 4.0 + 4.0))
    torch.testing.assert_close(mean, F.cross_entropy(logits, target, weight))
    probabilities = F.one_hot(torch.tensor([0, 2, 1, 2]), 3).float()  # probability targets: divide by N
    torch.testing.assert_close(
        cross_entropy_reference(logits, probabilities, weight),
        cross_entropy_reference(logits, probabilities, weight, reduction="sum") / 4,
    )


def test_probability_targets_mean_divides_by_every_position():
    generator = torch.Generator().manual_seed(7)
    logits = torch.randn(2, 4, 3, generator=generator)  # (N, C, d1)
    target = torch.softmax(torch.randn(2, 4, 3, generator=generator), dim=1)
    weight = torch.tensor([0.5, 1.0, 2.0, 4.0])
    per_position = cross_entropy_reference(logits, target, weight, reduction="none")  # (N, d1)
    assert per_position.shape == (2, 3)
    mean = cross_entropy_reference(logits, target, weight)
    torch.testing.assert_close(mean, per_position.sum() / 6)  # N * d1, not N
    torch.testing.assert_close(mean, F.cross_entropy(logits, target, weight))


def test_one_sample_without_a_batch_dimension_and_byte_targets():
    logits = torch.tensor([2.0, 1.0, 0.1])
    for reduction in ("none", "mean"):
        got = cross_entropy_reference(logits, torch.tensor(0), reduction=reduction)
        want = F.cross_entropy(logits, torch.tensor(0), reduction=reduction)
        assert got.shape == want.shape == ()
        torch.testing.assert_close(got, want)
    probabilities = torch.tensor([0.7, 0.2, 0.1])
    torch.testing.assert_close(cross_entropy_reference(logits, probabilities), F.cross_entropy(logits, probabilities))
    logits, target = torch.randn(4, 3), torch.tensor([0, 2, 1, 1], dtype=torch.uint8)
    torch.testing.assert_close(cross_entropy_reference(logits, target), F.cross_entropy(logits, target))


def test_reference_is_finite_where_log_of_softmax_is_not():
    logits, target = torch.tensor([[1000.0, 0.0], [-1000.0, 0.0]]), torch.tensor([1, 0])
    assert torch.log(torch.softmax(logits, dim=1)).isinf().any()
    assert torch.equal(cross_entropy_reference(logits, target, reduction="none"), torch.tensor([1000.0, 1000.0]))
    assert torch.equal(cross_entropy_reference(logits, target), F.cross_entropy(logits, target))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=3),
    st.sampled_from([0.01, 1.0, 100.0, 1e4]),
    st.integers(0, 2**31),
)
def test_log_softmax_reference_equals_torch(shape, scale, seed):
    logits = torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * scale
    for dim in range(-len(shape), len(shape)):
        got = log_softmax_reference(logits, dim=dim)
        assert got.isfinite().all()
        torch.testing.assert_close(got, F.log_softmax(logits, dim=dim), rtol=1e-5, atol=1e-5 * scale)


def test_log_softmax_reference_needs_floating_point():
    with pytest.raises(TypeError, match=re.escape("logits.float()")):
        log_softmax_reference(torch.tensor([[1, 2]]))
    with pytest.raises(TypeError, match=re.escape("wrap it with torch.tensor(...)")):
        log_softmax_reference([[1.0, 2.0]])


LOGITS = torch.randn(6, 4, generator=torch.Generator().manual_seed(6))
TARGET = torch.tensor([0, 1, 2, 3, 1, 2])

BAD_ARGUMENTS = [
    # (logits, target, options, exception, words in the message that name the fix)
    (LOGITS.long(), TARGET, {}, TypeError, "logits.float()"),
    (LOGITS, TARGET.float(), {}, TypeError, "target.long()"),
    (LOGITS, TARGET.int(), {}, TypeError, "target.long()"),
    (torch.zeros(2, 4, 3), torch.zeros(2, 3, dtype=torch.uint8), {}, TypeError, "target.long()"),
    (LOGITS, torch.full((6, 4), 0.25), {"ignore_index": 0}, ValueError, "leave it at -100"),
    (LOGITS, torch.zeros(6, 5), {}, TypeError, "target.long()"),
    (LOGITS, torch.tensor([0, 1, 2, 4, 1, 2]), {}, ValueError, "use 0..3"),
    (LOGITS, torch.tensor([0, 1, 2, -1, 1, 2]), {}, ValueError, "or ignore_index"),
    (LOGITS, TARGET[:3], {}, ValueError, "one class index per sample"),
    (LOGITS, TARGET.unsqueeze(1), {}, ValueError, "one class index per sample"),
    (LOGITS, TARGET, {"weight": torch.ones(3)}, ValueError, "weight of length 4"),
    (LOGITS, TARGET, {"weight": torch.ones(1, 4)}, ValueError, "weight of length 4"),
    (LOGITS, TARGET, {"weight": torch.ones(4, dtype=torch.long)}, TypeError, "weight.float()"),
    (LOGITS, TARGET, {"reduction": "avg"}, ValueError, "'mean', 'sum' or 'none'"),
    (LOGITS, TARGET, {"label_smoothing": 1.5}, ValueError, "at most 1.0, not 1.5"),
    (LOGITS[0, 0], TARGET[0], {}, ValueError, "(N, C)"),
]


@pytest.mark.parametrize(("logits", "target", "options", "error", "fix"), BAD_ARGUMENTS)
def test_bad_arguments_are_rejected_like_torch_with_a_fix(logits, target, options, error, fix):
    with pytest.raises((RuntimeError, IndexError, ValueError, NotImplementedError)):
        F.cross_entropy(logits, target, **options)
    with pytest.raises(error, match=re.escape(fix)):
        cross_entropy_reference(logits, target, **options)


def test_negative_label_smoothing_is_refused_although_torch_accepts_it():
    assert F.cross_entropy(LOGITS, TARGET, label_smoothing=-0.1).isfinite()  # PyTorch checks only the upper end
    with pytest.raises(ValueError, match=re.escape("at least 0.0, not -0.1")):
        cross_entropy_reference(LOGITS, TARGET, label_smoothing=-0.1)


@pytest.mark.parametrize(
    ("arguments", "options", "error", "fix"),
    [
        ((LOGITS, [0, 1, 2, 3, 1, 2]), {}, TypeError, "must be tensors"),
        ((LOGITS, TARGET), {"label_smoothing": "0.1"}, TypeError, "must be a number"),
        ((LOGITS, TARGET), {"weight": [1.0, 1.0, 1.0, 1.0]}, TypeError, "weight.float()"),
    ],
)
def test_other_bad_arguments_name_the_fix(arguments, options, error, fix):
    with pytest.raises(error, match=re.escape(fix)):
        cross_entropy_reference(*arguments, **options)


def test_loss_vs_true_logit_follows_the_closed_form():
    z = torch.linspace(-3, 6, 10, dtype=torch.float64)
    # With logits [z, 0, 0]: p = e^z / (e^z + 2), so the loss is log(1 + 2 e^-z).
    torch.testing.assert_close(loss_vs_true_logit(z, num_classes=3), torch.log1p(2 * torch.exp(-z)))
    # With smoothing 0.1 over 3 classes the minimum sits where p = 1 - 0.1 + 0.1 / 3, that is e^z = 28.
    fine = torch.linspace(3.0, 3.7, 7001, dtype=torch.float64)
    best = fine[loss_vs_true_logit(fine, 3, 0.1).argmin()]
    assert abs(best.item() - math.log(28)) < 1e-3


def test_plot_draws_one_curve_per_smoothing_and_marks_the_minima():
    use_course_style()
    fig = plot_loss_vs_true_logit(num_classes=3, smoothings=(0.0, 0.1, 0.3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing Chinese glyph would warn
        fig.canvas.draw()
    (ax,) = fig.axes
    assert fig.get_figwidth() <= COLUMN_WIDTH
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "label_smoothing = 0",
        "label_smoothing = 0.1",
        "label_smoothing = 0.3",
    ]
    assert [t.get_text() for t in ax.texts] == ["z = 3.33", "z = 2.08"]
    assert "损失" in ax.get_ylabel() and "交叉熵" in ax.get_title()
    plt.close(fig)


def _regression_by_hand(errors: torch.Tensor, delta: float) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Each regression loss of one sample and its derivative, written from the formulas of lesson 04."""
    small = errors.abs() <= delta
    return {
        "F.mse_loss": (errors**2, 2 * errors),
        "F.l1_loss": (errors.abs(), errors.sign()),
        f"F.huber_loss, delta={delta:g}": (
            torch.where(small, 0.5 * errors**2, delta * (errors.abs() - 0.5 * delta)),
            errors.clamp(-delta, delta),
        ),
    }


@pytest.mark.parametrize("delta", [1.0, 0.5, 2.5])
def test_regression_loss_curves_follow_the_formulas(delta):
    errors = torch.linspace(-6, 6, 121, dtype=torch.float64)
    curves = regression_loss_curves(errors, delta)
    assert list(curves) == list(_regression_by_hand(errors, delta))
    for name, (want_loss, want_grad) in _regression_by_hand(errors, delta).items():
        loss, grad = curves[name]
        torch.testing.assert_close(loss, want_loss)
        torch.testing.assert_close(grad, want_grad)
    # and they are PyTorch's own numbers: the mean over the errors is the loss of the whole batch
    zero = torch.zeros_like(errors)
    torch.testing.assert_close(curves["F.mse_loss"][0].mean(), F.mse_loss(errors, zero))
    torch.testing.assert_close(curves["F.l1_loss"][0].mean(), F.l1_loss(errors, zero))
    huber = curves[f"F.huber_loss, delta={delta:g}"][0].mean()
    torch.testing.assert_close(huber, torch.nn.HuberLoss(delta=delta)(errors, zero))
    assert not errors.requires_grad  # the caller's tensor is left alone


def test_regression_plot_draws_the_losses_and_their_gradients():
    use_course_style()
    fig = plot_regression_losses(delta=1.0, largest_error=3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing Chinese glyph would warn
        fig.canvas.draw()
    loss_ax, grad_ax = fig.axes
    assert fig.get_figwidth() <= COLUMN_WIDTH
    assert [t.get_text() for t in loss_ax.get_legend().get_texts()] == [
        "F.mse_loss",
        "F.l1_loss",
        "F.huber_loss, delta=1",
    ]
    curves = [line for line in loss_ax.get_lines() if line.get_label().startswith("F.")]
    slopes = [line for line in grad_ax.get_lines() if line.get_label().startswith("F.")]
    errors = torch.as_tensor(curves[0].get_xdata())
    assert errors.min() == -3.0 and errors.max() == 3.0
    for line, slope, (want_loss, want_grad) in zip(
        curves, slopes, _regression_by_hand(errors, 1.0).values(), strict=True
    ):
        torch.testing.assert_close(torch.as_tensor(line.get_ydata()), want_loss)
        torch.testing.assert_close(torch.as_tensor(slope.get_ydata()), want_grad)
    # the dotted lines mark where Huber turns from squared to straight: at -delta and delta
    edges = sorted({line.get_xdata()[0] for ax in fig.axes for line in ax.get_lines() if line.get_linestyle() == ":"})
    assert edges == [-1.0, 1.0]
    assert "损失" in loss_ax.get_title() and "梯度" in grad_ax.get_title() and "误差" in loss_ax.get_xlabel()
    plt.close(fig)


def _bce(x, t, w):
    return -(w * t * F.logsigmoid(x) + (1 - t) * F.logsigmoid(-x))


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x, t, w: _bce(x, t, w).mean().item(), "should return a tensor"),
        (lambda x, t, w: _bce(x, t, w), "one number"),
        (lambda x, t, w: -_bce(x, t, w).mean(), "sign is wrong"),
        (lambda x, t, w: _bce(x, t, w).mean().double(), "compute in the logits' dtype"),
        (lambda x, t, w: _bce(x.float(), t.float(), w.float()).mean(), "compute in the logits' dtype"),
    ],
)
def test_bce_checker_names_other_slips(wrong, hint):
    with pytest.raises(WrongAnswer, match=re.escape(hint)):
        check_bce_with_logits(wrong)


def _pixel_grad(logits, target, weight, ignore_index):
    kept = target != ignore_index
    safe = target.where(kept, 0)
    w = weight[safe] * kept
    diff = torch.softmax(logits, dim=1) - F.one_hot(safe, logits.shape[1]).movedim(-1, 1)
    return (w / w.sum()).unsqueeze(1) * diff if kept.any() else torch.zeros_like(logits)


def test_pixel_checker_names_a_changed_target():
    def mutating(logits, target, weight, ignore_index):
        kept = target != ignore_index
        target[~kept] = 0  # writes into the caller's target
        w = weight[target] * kept
        diff = torch.softmax(logits, dim=1) - F.one_hot(target, logits.shape[1]).movedim(-1, 1)
        return (w / w.sum()).unsqueeze(1) * diff

    with pytest.raises(WrongAnswer, match="changed its argument number 2"):
        check_pixel_cross_entropy_grad(mutating)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda *args: _pixel_grad(*args).tolist(), "should return a tensor"),
        (lambda *args: _pixel_grad(*args).sum(dim=1), "the gradient holds one number per logit"),
        (lambda *args: _pixel_grad(*args).double(), "logits.grad has the logits' dtype"),
        (lambda *args: 2 * _pixel_grad(*args), "divided by the sum of their weight[y]"),
    ],
)
def test_pixel_checker_names_other_slips(wrong, hint):
    with pytest.raises(WrongAnswer, match=re.escape(hint)):
        check_pixel_cross_entropy_grad(wrong)


def test_the_checker_accepts_the_test_answer():
    check_pixel_cross_entropy_grad(_pixel_grad)


def test_forbidden_functions_and_autograd_are_back_after_a_check():
    originals = F.binary_cross_entropy_with_logits, torch._C._nn.binary_cross_entropy
    engine = torch.autograd.variable.Variable._execution_engine

    def by_autograd(x, t, w, i):
        z = x.detach().requires_grad_()
        F.cross_entropy(z, t, weight=w, ignore_index=i).backward()
        return z.grad

    with pytest.raises(WrongAnswer, match="without autograd"):
        check_pixel_cross_entropy_grad(by_autograd)
    with pytest.raises(WrongAnswer, match="calls"):
        check_bce_with_logits(lambda x, t, w: F.binary_cross_entropy_with_logits(x, t, pos_weight=w))
    assert (F.binary_cross_entropy_with_logits, torch._C._nn.binary_cross_entropy) == originals
    assert torch.autograd.variable.Variable._execution_engine is engine
    z = torch.zeros(1, 2, requires_grad=True)
    F.cross_entropy(z, torch.tensor([0])).backward()
    assert torch.allclose(z.grad, torch.tensor([[-0.5, 0.5]]))


def test_pixel_cases_ignore_a_class_that_is_present_and_keep_the_others():
    cases = _pixel_cases()
    class_ignored = [t for _, t, _, i in cases if 0 <= i < 4]
    assert class_ignored and all((t == 3).any() and (t != 3).any() for t in class_ignored)
    assert any(not (t != i).any() for _, t, _, i in cases), "an all-ignored batch"
    assert any(x.abs().max() >= 200 for x, *_ in cases), "a logit where log(softmax) is -inf"
    assert cases is not _pixel_cases() and cases[0][0] is not _pixel_cases()[0][0], "fresh tensors every time"


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(
        losses.log_softmax_reference,
        (SMALL_TARGET,),
        TypeError,
        "logits must hold floating-point numbers, not torch.int64: use logits.float()",
        "int",
    ),
    bad(
        losses.log_softmax_reference,
        ([[1.0, 2.0]],),
        TypeError,
        "logits must be a torch.Tensor, not list: wrap it with torch.tensor(...)",
        "list",
    ),
    bad(
        losses.log_softmax_reference,
        (SMALL_LOGITS,),
        IndexError,
        "expected to be in range of [-2, 1]",
        "dim-out-of-range",
        dim=5,
    ),
    bad(
        losses.cross_entropy_reference,
        (SMALL_LOGITS.tolist(), SMALL_TARGET),
        TypeError,
        "e.g. torch.randn(4, 5) and torch.tensor([3, 3, 3, 0])",
        "list-logits",
    ),
    bad(
        losses.cross_entropy_reference,
        (SMALL_LOGITS.long(), SMALL_TARGET),
        TypeError,
        "pass logits.float()",
        "int-logits",
    ),
    bad(
        losses.cross_entropy_reference,
        (torch.tensor(1.0), SMALL_TARGET),
        ValueError,
        "pass shape (N, C), or (C,) for one sample",
        "0d-logits",
    ),
    bad(
        losses.cross_entropy_reference,
        (SMALL_LOGITS, SMALL_TARGET),
        ValueError,
        "reduction must be 'mean', 'sum' or 'none'",
        "reduction",
        reduction="avg",
    ),
    bad(
        losses.cross_entropy_reference,
        (SMALL_LOGITS, SMALL_TARGET),
        TypeError,
        "label_smoothing must be a number",
        "str-smoothing",
        label_smoothing="0.1",
    ),
    bad(
        losses.cross_entropy_reference,
        (SMALL_LOGITS, SMALL_TARGET),
        ValueError,
        "label_smoothing must be at most 1.0, not 1.5",
        "smoothing-above-1",
        label_smoothing=1.5,
    ),
    bad(
        losses.cross_entropy_reference,
        (SMALL_LOGITS, SMALL_TARGET),
        TypeError,
        "pass weight.float()",
        "int-weight",
        weight=torch.tensor([1, 2, 3]),
    ),
    bad(
        losses.cross_entropy_reference,
        (SMALL_LOGITS, SMALL_TARGET),
        ValueError,
        "pass a 1-d weight of length 3, one number per class",
        "weight-length",
        weight=torch.ones(4),
    ),
    bad(
        losses.cross_entropy_reference,
        (SMALL_LOGITS, SMALL_TARGET.float()),
        TypeError,
        "for class indices pass target.long()",
        "float-indices",
    ),
    bad(
        losses.cross_entropy_reference,
        (SMALL_LOGITS, SMALL_TARGET.int()),
        TypeError,
        "pass target.long()",
        "int32-target",
    ),
    bad(
        losses.cross_entropy_reference,
        (SMALL_LOGITS, SMALL_TARGET.unsqueeze(1)),
        ValueError,
        "expected (4,) (the logits' shape without the class dimension 1): one class index per sample",
        "target-shape",
    ),
    bad(
        losses.cross_entropy_reference,
        (SMALL_LOGITS, torch.tensor([0, 1, 3, 0])),
        ValueError,
        "use 0..2, or ignore_index (now -100) for a sample that has no class",
        "class-out-of-range",
    ),
]
