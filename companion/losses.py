"""Lesson 02: cross-entropy from first principles, a picture of the loss of one sample, and the exercise checks."""

from collections.abc import Callable

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure

from companion.exercises import passed, require

REDUCTIONS = ("none", "sum", "mean")
INDEX_DTYPES = (torch.int64, torch.uint8)  # what F.cross_entropy accepts as class indices ("Long or Byte")


def log_softmax_reference(logits: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """log(softmax(logits)) computed without overflow: shift by the maximum first (the log-sum-exp trick).

    log_softmax(x)_i = x_i - log(sum_j exp(x_j)) = (x_i - m) - log(sum_j exp(x_j - m)) for any m; with m = max(x)
    every exp(x_j - m) lies in (0, 1], so nothing overflows, and the largest term is exactly 1, so the sum is >= 1.
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise TypeError("logits must be a floating-point tensor: pass logits.float()")
    shifted = logits - logits.amax(dim=dim, keepdim=True)
    return shifted - shifted.exp().sum(dim=dim, keepdim=True).log()


def cross_entropy_reference(
    logits: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """`F.cross_entropy` written out step by step, for teaching and tests.

    logits: (N, C) or (N, C, d1, ...), or (C,) for one sample. target: class indices of shape (N,) or
    (N, d1, ...), or class probabilities of the logits' shape. Classes live in dimension 1.
    """
    _check_cross_entropy_args(logits, target, weight, ignore_index, reduction, label_smoothing)
    if logits.dim() == 1:  # one sample without a batch dimension: make it a batch of one
        loss = cross_entropy_reference(
            logits.unsqueeze(0), target.unsqueeze(0), weight, ignore_index, reduction, label_smoothing
        )
        return loss.squeeze(0)
    num_classes = logits.shape[1]
    log_probs = log_softmax_reference(logits, dim=1)
    class_weight = torch.ones(num_classes, dtype=log_probs.dtype) if weight is None else weight.to(log_probs.dtype)
    # Shape (1, C, 1, ...) so that it multiplies dimension 1 of log_probs.
    weight_per_class = class_weight.reshape(1, num_classes, *[1] * (logits.dim() - 2))

    if target.is_floating_point():  # probabilities: no ignore_index, and the mean divides by the sample count
        smoothed = target * (1 - label_smoothing) + label_smoothing / num_classes
        losses = -(weight_per_class * smoothed * log_probs).sum(dim=1)
        return _reduce(losses, reduction, denominator=losses.numel())

    keep = target != ignore_index
    safe_target = target.long().where(keep, 0)  # any valid class: the ignored positions are zeroed below
    true_log_prob = log_probs.gather(1, safe_target.unsqueeze(1)).squeeze(1)  # gather, as in lesson 01
    target_weight = class_weight[safe_target] * keep  # w[y_n], or 0 where ignored
    nll = -target_weight * true_log_prob
    # Label smoothing mixes in sum_c w_c * (-log p_c) / C, the uniform target's loss, also zero where ignored.
    uniform = -(weight_per_class * log_probs).sum(dim=1) / num_classes * keep
    losses = (1 - label_smoothing) * nll + label_smoothing * uniform
    return _reduce(losses, reduction, denominator=target_weight.sum())


def _reduce(losses: torch.Tensor, reduction: str, denominator: torch.Tensor | int) -> torch.Tensor:
    """Apply the reduction; 'mean' divides by `denominator` (0 / 0 gives nan, as in PyTorch)."""
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / denominator


def _check_cross_entropy_args(logits, target, weight, ignore_index, reduction, label_smoothing) -> None:
    """Reject arguments F.cross_entropy rejects (and a few it accepts silently), saying what to pass instead."""
    if not isinstance(logits, torch.Tensor) or not isinstance(target, torch.Tensor):
        raise TypeError("logits and target must be tensors, e.g. torch.randn(4, 5) and torch.tensor([3, 3, 3, 0])")
    if not logits.is_floating_point():
        raise TypeError(f"logits must be floating point, not {logits.dtype}: pass logits.float()")
    if logits.dim() == 0:
        raise ValueError("logits need a class dimension: pass shape (N, C), or (C,) for one sample")
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', not {reduction!r}")
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, int | float):
        raise TypeError(f"label_smoothing must be a number, not {type(label_smoothing).__name__}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1] (0 means none), not {label_smoothing}")
    num_classes = logits.shape[1] if logits.dim() > 1 else logits.shape[0]
    if weight is not None:
        if not isinstance(weight, torch.Tensor) or not weight.is_floating_point():
            raise TypeError("weight must be a floating-point tensor, one number per class: pass weight.float()")
        if weight.shape != (num_classes,):
            raise ValueError(
                f"weight has shape {tuple(weight.shape)} but there are {num_classes} classes: "
                f"pass a 1-d weight of length {num_classes}, one number per class"
            )
    if target.is_floating_point():
        if target.shape != logits.shape:
            raise TypeError(
                f"a floating-point target is read as class probabilities and needs the logits' shape "
                f"{tuple(logits.shape)}, not {tuple(target.shape)}: for class indices pass target.long()"
            )
        return
    if target.dtype not in INDEX_DTYPES:
        raise TypeError(f"class indices must be int64 (long), not {target.dtype}: pass target.long()")
    expected = logits.shape[:1] + logits.shape[2:] if logits.dim() > 1 else torch.Size([])
    if target.shape != expected:
        raise ValueError(
            f"target has shape {tuple(target.shape)}, expected {tuple(expected)} (the logits' shape without "
            "the class dimension 1): one class index per sample"
        )
    used = target[target != ignore_index]
    if used.numel() and (int(used.min()) < 0 or int(used.max()) >= num_classes):
        bad = int(used.min()) if int(used.min()) < 0 else int(used.max())
        raise ValueError(
            f"target holds class {bad}, but there are {num_classes} classes: use 0..{num_classes - 1}, "
            f"or ignore_index (now {ignore_index}) for a sample that has no class"
        )


def loss_vs_true_logit(true_logits: torch.Tensor, num_classes: int = 3, label_smoothing: float = 0.0) -> torch.Tensor:
    """The loss of one sample of class 0 whose logits are [z, 0, ..., 0], for each z in `true_logits`."""
    if not isinstance(true_logits, torch.Tensor):  # an integer tensor gets cross_entropy's own hint below
        raise TypeError(
            "true_logits must be a floating-point tensor of z values, e.g. torch.linspace(-4.0, 10.0, 15), "
            f"not {type(true_logits).__name__}"
        )
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"num_classes must be a positive int such as 3, not {num_classes!r}")
    logits = torch.zeros(len(true_logits), num_classes, dtype=true_logits.dtype)
    logits[:, 0] = true_logits
    target = torch.zeros(len(true_logits), dtype=torch.long)
    return cross_entropy_reference(logits, target, reduction="none", label_smoothing=label_smoothing)


def plot_loss_vs_true_logit(num_classes: int = 3, smoothings: tuple[float, ...] = (0.0, 0.1, 0.3)) -> Figure:
    """Plot the loss of one sample against its true-class logit, one curve per label smoothing, minima marked."""
    if not isinstance(smoothings, tuple | list):
        raise TypeError(f"smoothings must be a tuple of label_smoothing values, e.g. (0.0, 0.1), not {smoothings!r}")
    z = torch.linspace(-4.0, 10.0, 1401, dtype=torch.float64)
    fig, ax = plt.subplots()
    for smoothing in smoothings:
        loss = loss_vs_true_logit(z, num_classes, smoothing)
        (line,) = ax.plot(z, loss, label=f"label_smoothing = {smoothing:g}")
        if smoothing > 0:  # with smoothing the loss has a finite minimum
            best = int(loss.argmin())
            ax.plot([z[best]], [loss[best]], "o", color=line.get_color())
            ax.annotate(f"z = {z[best]:.2f}", (z[best], loss[best]), textcoords="offset points", xytext=(0, 8))
    ax.set_xlabel(f"true-class logit z (other {num_classes - 1} logits = 0) / 真实类别的 logit")
    ax.set_ylabel("loss / 损失")
    ax.set_title("Cross-entropy of one sample / 单个样本的交叉熵")
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    return fig


def _batches(seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Exercise cases: (logits, target) pairs, one with logits so large that log(softmax(...)) gives -inf."""
    generator = torch.Generator().manual_seed(seed)
    return [
        (torch.tensor([[2.0, 1.0, 0.1]]), torch.tensor([0])),
        (torch.randn(4, 5, generator=generator), torch.tensor([3, 3, 3, 0])),
        (torch.randn(16, 10, generator=generator) * 3, torch.randint(0, 10, (16,), generator=generator)),
        (torch.tensor([[1000.0, 0.0], [0.0, 1000.0], [5.0, 0.0]]), torch.tensor([1, 0, 0])),
    ]


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float32 rounding, nan equal to nan."""
    return torch.allclose(a.double(), b.double(), rtol=1e-4, atol=1e-5, equal_nan=True)


def check_mean_cross_entropy(mean_cross_entropy: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Self-check: `mean_cross_entropy(logits, target)` must equal F.cross_entropy(logits, target)."""
    require(
        callable(mean_cross_entropy),
        "Pass the function itself: check_mean_cross_entropy(mean_cross_entropy), without ().",
    )
    for logits, target in _batches(seed=2):
        got = mean_cross_entropy(logits, target)
        want = F.cross_entropy(logits, target)
        where = f"mean_cross_entropy(<logits {tuple(logits.shape)}>, {target.tolist()})"
        n, c = logits.shape
        require(isinstance(got, torch.Tensor), f"{where} should return a tensor, not {type(got).__name__}.")
        require(
            got.shape == (),
            f"{where} has shape {tuple(got.shape)}: return one number, the mean over the batch (.mean()).",
        )
        require(
            bool(got.isfinite()),
            f"{where} is {got.item()}: log(softmax(...)) underflows to -inf for large logits; "
            "use F.log_softmax(logits, dim=1).",
        )
        require(
            not _close(got, -want),
            f"{where} has the wrong sign: the loss is minus the log-probability of the true class.",
        )
        require(
            not _close(got, want * n) or n == 1,
            f"{where} is the sum over the batch: divide by the batch size (.mean()).",
        )
        require(
            not _close(got, want / c),
            f"{where} averages over all N * C elements: pick one log-probability per sample with gather first.",
        )
        require(
            _close(got, want),
            f"{where} gives {got.item():.4f}, expected {want.item():.4f}: take F.log_softmax(logits, dim=1) "
            "over the classes, gather(1, target.unsqueeze(1)) the true class, then minus the mean.",
        )
    passed("mean_cross_entropy agrees with F.cross_entropy on 4 batches, huge logits included")


def check_weighted_cross_entropy(
    weighted_cross_entropy: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor],
) -> None:
    """Self-check: `weighted_cross_entropy(logits, target, weight, ignore_index)` must match F.cross_entropy."""
    require(
        callable(weighted_cross_entropy),
        "Pass the function itself: check_weighted_cross_entropy(weighted_cross_entropy), without ().",
    )
    generator = torch.Generator().manual_seed(3)
    weight = torch.tensor([0.2, 1.0, 3.0, 0.5])
    cases = [
        (torch.randn(6, 4, generator=generator), torch.tensor([2, -100, 0, -100, 3, 1]), -100),
        (torch.randn(5, 4, generator=generator), torch.tensor([0, 1, 2, 3, 2]), -100),
        (torch.randn(8, 4, generator=generator) * 2, torch.tensor([1, 3, 3, 0, 3, 2, 1, 0]), 3),
        (torch.randn(3, 4, generator=generator), torch.tensor([-1, -1, -1]), -1),
    ]
    for logits, target, ignore_index in cases:
        before = target.clone()
        got = weighted_cross_entropy(logits, target, weight, ignore_index)
        want = F.cross_entropy(logits, target, weight=weight, ignore_index=ignore_index)
        where = f"weighted_cross_entropy(<logits {tuple(logits.shape)}>, {before.tolist()}, weight, {ignore_index})"
        require(isinstance(got, torch.Tensor), f"{where} should return a tensor, not {type(got).__name__}.")
        require(torch.equal(target, before), f"{where} changed target: build a new tensor with target.where(...).")
        require(got.shape == (), f"{where} has shape {tuple(got.shape)}: return one number.")
        keep = target != ignore_index
        if not keep.any():
            require(
                bool(got.isnan()),
                f"{where} is {got.item()}, but every target is ignored: the mean is 0 / 0, which PyTorch "
                "returns as nan; divide by the sum of the weights without guarding it.",
            )
            continue
        safe = target.where(keep, 0)
        per_sample = -weight[safe] * F.log_softmax(logits, dim=1).gather(1, safe.unsqueeze(1)).squeeze(1)
        kept_sum = (per_sample * keep).sum()
        require(
            not _close(got, kept_sum / len(target)),
            f"{where} divides by the batch size N: divide by the sum of weight[target] over the kept samples.",
        )
        require(
            not _close(got, kept_sum / keep.sum()) or _close(want, kept_sum / keep.sum()),
            f"{where} divides by the number of kept samples: divide by the sum of their weights instead.",
        )
        require(
            not _close(got, per_sample.sum() / weight[safe].sum()) or keep.all(),
            f"{where} still counts the ignored samples: set their loss and their weight to 0 with a mask.",
        )
        require(
            _close(got, want),
            f"{where} gives {got.item():.4f}, expected {want.item():.4f}: loss_n = -weight[y_n] * log p_n[y_n] "
            "for the kept samples, summed, divided by the sum of weight[y_n] over the kept samples.",
        )
    passed("weighted_cross_entropy agrees with F.cross_entropy on 4 batches, an all-ignored batch included")
