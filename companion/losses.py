"""Lesson 04: cross-entropy written out step by step, and pictures of the loss of one sample.

The exercise self-checks live apart, in companion/checks/losses.py.
"""

from functools import partial

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure

from companion._validate import require_number, require_tensor
from companion.language import by_language, in_language, say
from companion.plotting import COLUMN_WIDTH

REDUCTIONS = ("none", "sum", "mean")
INDEX_DTYPES = (torch.int64, torch.uint8)  # class indices F.cross_entropy accepts ("Long or Byte"; Byte for (N, C))


def log_softmax_reference(logits: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """log(softmax(logits)) computed without overflow: shift by the maximum first (the log-sum-exp trick).

    log_softmax(x)_i = x_i - log(sum_j exp(x_j)) = (x_i - m) - log(sum_j exp(x_j - m)) for any m; with m = max(x)
    every exp(x_j - m) lies in (0, 1], so nothing overflows, and the largest term is exactly 1, so the sum is >= 1.
    """
    require_tensor(logits, "logits", floating=True)
    shifted = logits - logits.amax(dim=dim, keepdim=True)  # the maximum, size 1 along dim: broadcasts back
    return shifted - shifted.exp().sum(dim=dim, keepdim=True).log()  # the sum, size 1 along dim


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
        )  # (C,) -> (1, C)
        return loss.squeeze(0)  # reduction="none": (1,) -> (); otherwise already ()
    num_classes = logits.shape[1]
    log_probs = log_softmax_reference(logits, dim=1)  # (N, C, d1, ...)
    class_weight = torch.ones(num_classes, dtype=log_probs.dtype) if weight is None else weight.to(log_probs.dtype)
    weight_per_class = class_weight.reshape(1, num_classes, *[1] * (logits.dim() - 2))  # (C,) -> (1, C, 1, ...)

    if target.is_floating_point():  # probabilities: no ignore_index; the mean divides by N * d1 * ..., the count
        smoothed = target * (1 - label_smoothing) + label_smoothing / num_classes
        losses = -(weight_per_class * smoothed * log_probs).sum(dim=1)  # (N, C, d1, ...) -> (N, d1, ...)
        return _reduce(losses, reduction, denominator=losses.numel())

    keep = target != ignore_index  # (N, d1, ...)
    safe_target = target.long().where(keep, 0)  # any valid class: the ignored positions are zeroed below
    true_log_prob = log_probs.gather(1, safe_target.unsqueeze(1)).squeeze(1)  # (N, 1, d1, ...) -> (N, d1, ...)
    target_weight = class_weight[safe_target] * keep  # w[y_n], or 0 where ignored: (N, d1, ...)
    nll = -target_weight * true_log_prob
    # Label smoothing mixes in sum_c w_c * (-log p_c) / C, the uniform target's loss, also zero where ignored.
    uniform = -(weight_per_class * log_probs).sum(dim=1) / num_classes * keep  # (N, C, ...) -> (N, ...)
    losses = (1 - label_smoothing) * nll + label_smoothing * uniform
    return _reduce(losses, reduction, denominator=target_weight.sum())  # the sum of the kept weights


def _reduce(losses: torch.Tensor, reduction: str, denominator: torch.Tensor | int) -> torch.Tensor:
    """Apply the reduction; 'mean' divides by `denominator` (0 / 0 gives nan, as in PyTorch)."""
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()  # over every element: ()
    return losses.sum() / denominator  # (): the sum over every element, divided


# Argument checks: below the taught code. They reject what F.cross_entropy rejects (and a few things it accepts
# silently), each with a message that says what to pass instead.


def _check_cross_entropy_args(logits, target, weight, ignore_index, reduction, label_smoothing) -> None:
    if not isinstance(logits, torch.Tensor) or not isinstance(target, torch.Tensor):
        raise TypeError(
            in_language(
                "logits and target must be tensors, e.g. torch.randn(4, 5) and torch.tensor([3, 3, 3, 0])",
                "logits 和 target 必须是张量，例如 torch.randn(4, 5) 和 torch.tensor([3, 3, 3, 0])",
            )
        )
    if not logits.is_floating_point():
        raise TypeError(
            in_language(
                f"logits must be floating point, not {logits.dtype}: pass logits.float()",
                f"logits 必须是浮点数，而不是 {logits.dtype}：请传入 logits.float()",
            )
        )
    if logits.dim() == 0:
        raise ValueError(
            in_language(
                "logits need a class dimension: pass shape (N, C), or (C,) for one sample",
                "logits 需要一个类别维度：请传入形状 (N, C)，单个样本传入 (C,)",
            )
        )
    if reduction not in REDUCTIONS:
        raise ValueError(
            in_language(
                f"reduction must be 'mean', 'sum' or 'none', not {reduction!r}",
                f"reduction 必须是 'mean'、'sum' 或 'none'，而不是 {reduction!r}",
            )
        )
    require_number(label_smoothing, "label_smoothing", 0.0, 1.0)
    num_classes = logits.shape[1] if logits.dim() > 1 else logits.shape[0]
    if weight is not None:
        if not isinstance(weight, torch.Tensor) or not weight.is_floating_point():
            raise TypeError(
                in_language(
                    "weight must be a floating-point tensor, one number per class: pass weight.float()",
                    "weight 必须是浮点张量，每个类别一个数：请传入 weight.float()",
                )
            )
        if weight.shape != (num_classes,):
            shape = tuple(weight.shape)
            raise ValueError(
                in_language(
                    f"weight has shape {shape} but there are {num_classes} classes: "
                    f"pass a 1-d weight of length {num_classes}, one number per class",
                    f"weight 的形状是 {shape}，而类别有 {num_classes} 个："
                    f"请传入长度为 {num_classes} 的一维 weight，每个类别一个数",
                )
            )
    if target.is_floating_point():
        if target.shape != logits.shape:
            raise TypeError(
                in_language(
                    f"a floating-point target is read as class probabilities and needs the logits' shape "
                    f"{tuple(logits.shape)}, not {tuple(target.shape)}: for class indices pass target.long()",
                    f"浮点数的 target 被当作类别概率，它需要与 logits 同形状 "
                    f"{tuple(logits.shape)}，而不是 {tuple(target.shape)}：类别索引请传入 target.long()",
                )
            )
        if ignore_index >= 0:  # PyTorch refuses it; a negative one it disregards
            raise ValueError(
                in_language(
                    f"ignore_index={ignore_index} does not apply to probability targets: leave it at -100, "
                    "and drop the rows of the samples you want to leave out",
                    f"ignore_index={ignore_index} 不适用于概率形式的 target：请让它保持 -100，"
                    "再删掉你想排除的那些样本所在的行",
                )
            )
        return
    if target.dtype not in INDEX_DTYPES:
        raise TypeError(
            in_language(
                f"class indices must be int64 (long), not {target.dtype}: pass target.long()",
                f"类别索引必须是 int64（long），而不是 {target.dtype}：请传入 target.long()",
            )
        )
    if target.dtype == torch.uint8 and logits.dim() > 2:
        raise TypeError(
            in_language(
                "uint8 class indices work only with (N, C) logits; for (N, C, d1, ...) pass target.long()",
                "uint8 类别索引只能配合 (N, C) 的 logits；(N, C, d1, ...) 请传入 target.long()",
            )
        )
    expected = logits.shape[:1] + logits.shape[2:] if logits.dim() > 1 else torch.Size([])
    if target.shape != expected:
        raise ValueError(
            in_language(
                f"target has shape {tuple(target.shape)}, expected {tuple(expected)} (the logits' shape without "
                "the class dimension 1): one class index per sample",
                f"target 的形状是 {tuple(target.shape)}，应为 {tuple(expected)}（logits 的形状去掉类别维度 1）："
                "每个样本一个类别索引",
            )
        )
    used = target[target != ignore_index]
    if used.numel() and (int(used.min()) < 0 or int(used.max()) >= num_classes):
        bad = int(used.min()) if int(used.min()) < 0 else int(used.max())
        raise ValueError(
            in_language(
                f"target holds class {bad}, but there are {num_classes} classes: use 0..{num_classes - 1}, "
                f"or ignore_index (now {ignore_index}) for a sample that has no class",
                f"target 里有类别 {bad}，但类别只有 {num_classes} 个：请用 0..{num_classes - 1}，"
                f"没有类别的样本请用 ignore_index（现在是 {ignore_index}）",
            )
        )


# The pictures. Called only with the lesson's own arguments, so these have no argument checks of their own.


def loss_vs_true_logit(true_logits: torch.Tensor, num_classes: int = 3, label_smoothing: float = 0.0) -> torch.Tensor:
    """The loss of one sample of class 0 whose logits are [z, 0, ..., 0], for each z in `true_logits`."""
    logits = torch.zeros(len(true_logits), num_classes, dtype=true_logits.dtype)  # (Z, C)
    logits[:, 0] = true_logits
    target = torch.zeros(len(true_logits), dtype=torch.long)  # (Z,)
    return cross_entropy_reference(logits, target, reduction="none", label_smoothing=label_smoothing)


def plot_loss_vs_true_logit(num_classes: int = 3, smoothings: tuple[float, ...] = (0.0, 0.1, 0.3)) -> Figure:
    """Plot the loss of one sample against its true-class logit, one curve per label smoothing, minima marked."""
    z = torch.linspace(-4.0, 10.0, 1401, dtype=torch.float64)
    fig, ax = plt.subplots(figsize=(6.4, 3.6), layout="constrained")
    for smoothing in smoothings:
        loss = loss_vs_true_logit(z, num_classes, smoothing)
        (line,) = ax.plot(z, loss, label=f"label_smoothing = {smoothing:g}")
        if smoothing > 0:  # with smoothing the loss has a finite minimum
            best = int(loss.argmin())
            ax.plot([z[best]], [loss[best]], "o", color=line.get_color())
            ax.annotate(f"z = {z[best]:.2f}", (z[best], loss[best]), textcoords="offset points", xytext=(0, 8))
    others = num_classes - 1
    ax.set_xlabel(
        by_language(
            f"true-class logit z (other {others} logits = 0)",
            f"真实类别的 logit z（其余 {others} 个 logit = 0）",
            f"true-class logit z (other {others} logits = 0) / 真实类别的 logit",
        )
    )
    ax.set_ylabel(say("loss", "损失"))
    ax.set_title(say("Cross-entropy of one sample", "单个样本的交叉熵"))
    ax.set_ylim(bottom=0)
    ax.legend()
    return fig


def regression_loss_curves(errors: torch.Tensor, delta: float = 1.0) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """For each error e = prediction - target: the loss of one sample under F.mse_loss, F.l1_loss and
    F.huber_loss, and its gradient with respect to the prediction (computed by autograd)."""
    loss_fns = {
        "F.mse_loss": F.mse_loss,
        "F.l1_loss": F.l1_loss,
        f"F.huber_loss, delta={delta:g}": partial(F.huber_loss, delta=delta),
    }
    curves = {}
    for name, loss_fn in loss_fns.items():
        prediction = errors.detach().clone().requires_grad_()  # with target 0 the prediction is the error
        loss = loss_fn(prediction, torch.zeros_like(prediction), reduction="none")  # one loss per error: (E,)
        loss.sum().backward()  # each loss depends on its own prediction only, so .grad holds each one's gradient
        curves[name] = (loss.detach(), prediction.grad)
    return curves


def plot_regression_losses(delta: float = 1.0, largest_error: float = 3.0) -> Figure:
    """Plot the three regression losses of one sample against its error, and their gradients, side by side."""
    errors = torch.linspace(-largest_error, largest_error, 601, dtype=torch.float64)
    fig, (loss_ax, grad_ax) = plt.subplots(1, 2, figsize=(COLUMN_WIDTH, 3.0), layout="constrained")
    curves = regression_loss_curves(errors, delta)
    styles = [("-", 1), ("--", 3), ("-", 2)]  # L1 dashed and on top: beyond delta its gradient lies on Huber's
    for (name, (loss, grad)), (linestyle, zorder) in zip(curves.items(), styles, strict=True):
        loss_ax.plot(errors, loss, linestyle, zorder=zorder, label=name)
        grad_ax.plot(errors, grad, linestyle, zorder=zorder, label=name)
    for ax in (loss_ax, grad_ax):
        for edge in (-delta, delta):  # where Huber turns from squared to straight
            ax.axvline(edge, color="0.6", linestyle=":", linewidth=1)
        ax.set_xlabel(
            by_language("error = prediction − target", "误差 = 预测 − 目标", "error = prediction − target / 误差")
        )
    loss_ax.set_title(say("loss", "损失"), fontsize=10)
    grad = ("gradient d loss / d prediction", "梯度 d 损失 / d 预测")
    grad_ax.set_title(by_language(*grad, "gradient d loss / d prediction / 梯度"), fontsize=10)
    loss_ax.set_ylim(bottom=0)
    loss_ax.legend(fontsize=9)
    return fig
