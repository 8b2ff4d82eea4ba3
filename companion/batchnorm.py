"""Lesson 06: `nn.BatchNorm2d` in plain tensor operations (statistics, modes, running update), and two plots.

The code the lesson teaches comes first: `BatchNorm2dReference`, then the statistics it uses. Argument guards sit
below it; the exercise self-checks live in `companion/checks/batchnorm.py`.
"""

import copy
import math

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
from matplotlib.figure import Figure
from matplotlib.patches import Polygon

from companion._validate import require_int, require_number, require_tensor
from companion.language import by_language, in_language, say
from companion.plotting import COLUMN_WIDTH

CHANNEL_DIMS = (0, 2, 3)  # BatchNorm2d averages over N, H and W: everything except the channel dimension


class BatchNorm2dReference:
    """`nn.BatchNorm2d` written out in tensor operations: the same arguments, buffers, modes and running update."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
    ) -> None:
        """Create the layer as PyTorch does: weight ones, bias zeros, running_mean zeros, running_var ones."""
        _check_settings(num_features, eps, momentum, affine, track_running_stats)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.training = True
        self.weight = torch.ones(num_features) if affine else None  # (C,)
        self.bias = torch.zeros(num_features) if affine else None  # (C,)
        self.running_mean = torch.zeros(num_features) if track_running_stats else None  # (C,)
        self.running_var = torch.ones(num_features) if track_running_stats else None  # (C,)
        self.num_batches_tracked = torch.tensor(0) if track_running_stats else None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Normalise `x` (N, C, H, W); in training mode with tracking, also update the running estimates."""
        _check_input(x, self.num_features)
        # Like PyTorch, evaluation mode normalises with the running estimates if the layer has them
        has_buffers = self.running_mean is not None and self.running_var is not None
        if self.training or not has_buffers:  # batch statistics
            _check_enough_values(x, self.num_features)
            mean, variance = channel_statistics(x)  # (C,), (C,): biased variance
            if self.training and self.track_running_stats and has_buffers:
                self._update_running_estimates(mean, variance, n=x.numel() // self.num_features)
        else:  # evaluation mode with running estimates
            mean, variance = self.running_mean, self.running_var
        out = (x - _per_channel(mean)) / torch.sqrt(_per_channel(variance) + self.eps)  # eps inside the sqrt
        if self.affine:
            out = out * _per_channel(self.weight) + _per_channel(self.bias)
        return out

    def _update_running_estimates(self, mean: torch.Tensor, variance: torch.Tensor, n: int) -> None:
        """Blend this batch into the running estimates; the running variance takes the UNBIASED batch variance."""
        self.num_batches_tracked = self.num_batches_tracked + 1
        factor = 1.0 / int(self.num_batches_tracked) if self.momentum is None else self.momentum
        unbiased_variance = variance * n / (n - 1)  # (C,)
        self.running_mean = (1 - factor) * self.running_mean + factor * mean.detach()
        self.running_var = (1 - factor) * self.running_var + factor * unbiased_variance.detach()

    def train(self, mode: bool = True) -> "BatchNorm2dReference":
        """Set training mode (or evaluation mode with mode=False), like `nn.Module.train`."""
        if not isinstance(mode, bool):
            kind = type(mode).__name__
            raise TypeError(
                in_language(f"mode must be True or False, not {kind}", f"mode 必须是 True 或 False，而不是 {kind}")
            )
        self.training = mode
        return self

    def eval(self) -> "BatchNorm2dReference":
        """Set evaluation mode: normalise with the running estimates, if the layer has them."""
        return self.train(False)

    @classmethod
    def from_module(cls, module: nn.BatchNorm2d) -> "BatchNorm2dReference":
        """A reference layer with the settings, mode, parameters and buffers of `module` (copied, not shared)."""
        if not isinstance(module, nn.BatchNorm2d):
            kind = type(module).__name__
            raise TypeError(
                in_language(
                    f"from_module copies an nn.BatchNorm2d, not {kind}",
                    f"from_module 复制的是 nn.BatchNorm2d，而不是 {kind}",
                )
            )
        layer = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats)
        layer.training = module.training
        for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
            value = getattr(module, name)
            setattr(layer, name, None if value is None else value.detach().clone())
        return layer


def channel_statistics(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and biased variance of each channel over (N, H, W): the statistics a training step normalises with."""
    _check_input(x)
    mean = x.mean(dim=CHANNEL_DIMS)  # (N, C, H, W) -> (C,)
    variance = ((x - _per_channel(mean)) ** 2).mean(dim=CHANNEL_DIMS)  # (C,): divide by n, biased
    return mean, variance


def normalize_per_channel(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """What BatchNorm2d does in training mode without affine: one mean and variance per channel."""
    _check_eps(eps)
    mean, variance = channel_statistics(x)  # (C,), (C,)
    return (x - _per_channel(mean)) / torch.sqrt(_per_channel(variance) + eps)


def normalize_per_position(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """The notes' reading, which BatchNorm2d does NOT do: statistics over the batch only, one per (C, H, W) position."""
    _check_eps(eps)
    _check_input(x)
    mean = x.mean(dim=0, keepdim=True)  # (1, C, H, W): one mean per position
    variance = x.var(dim=0, unbiased=False, keepdim=True)  # (1, C, H, W)
    return (x - mean) / torch.sqrt(variance + eps)


def _per_channel(values: torch.Tensor) -> torch.Tensor:
    """(C,) -> (1, C, 1, 1), so one value per channel broadcasts over an (N, C, H, W) input."""
    return values.reshape(1, -1, 1, 1)


# Argument guards: where a learner's own values arrive, each error says what to pass instead. -------------------


def _check_settings(num_features, eps, momentum, affine, track_running_stats) -> None:
    """Reject settings nn.BatchNorm2d would accept silently or fail on later, with the fix in the message."""
    require_int(num_features, in_language("num_features (the number of channels C)", "num_features（通道数 C）"), 1)
    _check_eps(eps)
    _check_momentum(momentum)
    for name, flag in (("affine", affine), ("track_running_stats", track_running_stats)):
        if not isinstance(flag, bool):
            kind = type(flag).__name__
            raise TypeError(
                in_language(f"{name} must be True or False, not {kind}", f"{name} 必须是 True 或 False，而不是 {kind}")
            )


def _check_eps(eps) -> None:
    """eps is added to the variance under the square root: it must be a positive number."""
    require_number(eps, "eps", example=1e-5)
    if not eps > 0:  # `not >` also catches NaN
        raise ValueError(
            in_language(
                f"eps must be a small positive number such as 1e-5, not {eps!r}",
                f"eps 必须是一个小的正数，例如 1e-5，而不是 {eps!r}",
            )
        )


def _check_momentum(momentum) -> None:
    """momentum is the weight of the new batch statistic: a number in [0, 1], or None for a cumulative average."""
    if momentum is None:
        return
    require_number(momentum, "momentum", example=in_language("0.1 (in [0, 1]) or None", "0.1（在 [0, 1] 内）或 None"))
    if not 0 <= momentum <= 1:
        raise ValueError(
            in_language(
                f"momentum must be in [0, 1], not {momentum}: it is the weight of the NEW batch statistic "
                "(0.1 by default); pass None for a cumulative average",
                f"momentum 必须在 [0, 1] 内，而不是 {momentum}：它是新一批统计量的权重"
                "（默认 0.1）；要用累积平均就传 None",
            )
        )


def _check_input(x, num_features: int | None = None) -> None:
    """An (N, C, H, W) floating-point tensor with the layer's number of channels."""
    if not isinstance(x, torch.Tensor):
        kind = type(x).__name__
        raise TypeError(
            in_language(
                f"the input must be a tensor of shape (N, C, H, W), not {kind}",
                f"输入必须是形状为 (N, C, H, W) 的张量，而不是 {kind}",
            )
        )
    if x.dim() != 4:
        raise ValueError(
            in_language(
                f"expected a 4-d input (N, C, H, W), got {x.dim()}-d with shape {tuple(x.shape)}: for a single "
                "image add the batch dimension with x.unsqueeze(0); for (N, C) use BatchNorm1d",
                f"输入应为 4 维 (N, C, H, W)，实际是 {x.dim()} 维，形状 {tuple(x.shape)}：单张图像请用 "
                "x.unsqueeze(0) 加上批维度；(N, C) 的输入请用 BatchNorm1d",
            )
        )
    require_tensor(x, "x", floating=True)
    if num_features is not None and x.shape[1] != num_features:
        raise ValueError(
            in_language(
                f"the input has {x.shape[1]} channels but the layer was built for {num_features}: build it with "
                f"num_features={x.shape[1]}, or check which dimension holds the channels (it must be dimension 1)",
                f"输入有 {x.shape[1]} 个通道，而这一层是为 {num_features} 个通道建的：请用 "
                f"num_features={x.shape[1]} 来建，或者检查通道在哪个维度上（它必须是维度 1）",
            )
        )


def _check_enough_values(x: torch.Tensor, num_features: int) -> None:
    """Batch statistics need at least two values per channel."""
    if x.numel() // num_features < 2:
        raise ValueError(
            in_language(
                f"Expected more than 1 value per channel when training, got input size {tuple(x.shape)}: "
                "use a batch of at least 2 samples (or a larger feature map), or call eval() first",
                f"训练时每个通道需要多于 1 个值，而输入的大小是 {tuple(x.shape)}："
                "请用至少 2 个样本的批（或者更大的特征图），或者先调用 eval()",
            )
        )


# The lesson's pictures (called only with the lesson's own arguments, so no guards). ----------------------------------


def running_mean_history(momentum: float | None, batches: torch.Tensor) -> list[float]:
    """running_mean of a one-channel nn.BatchNorm2d before and after each training step on `batches` (K, N, 1, H, W)."""
    layer = nn.BatchNorm2d(1, momentum=momentum)
    history = [layer.running_mean.item()]
    for batch in batches:  # (N, 1, H, W)
        layer(batch)
        history.append(layer.running_mean.item())
    return history


def plot_running_means(histories: dict[str, list[float]], true_mean: float) -> Figure:
    """Draw each running-mean history against the step, with the mean of the distribution as a dashed line."""
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 3.6), layout="constrained")
    for label, history in histories.items():
        ax.plot(range(len(history)), history, label=label, linewidth=1.6)
    label = f"{say('true mean', '真实均值')} = {true_mean:g}"
    ax.axhline(true_mean, color="0.4", linestyle="--", linewidth=1.0, label=label)
    ax.set_xlabel(say("training step", "训练步"))
    ax.set_ylabel(say("running_mean", "滑动均值"))
    ax.legend(loc="lower right")
    return fig


def normalized_together(layer: nn.Module, shape: tuple[int, int, int, int]) -> torch.Tensor:
    """The inputs `layer` normalises together with x[0, -1, 0, 0] (one mean): those its output there depends on."""
    probe = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0), requires_grad=True)
    layer = copy.deepcopy(layer).double()  # float64 on a copy: no derivative rounds to 0, the lesson's layer untouched
    (grad,) = torch.autograd.grad(layer(probe)[0, -1, 0, 0], probe)  # (N, C, H, W)
    return grad != 0  # (N, C, H, W): True where the input reaches that output through the shared mean and variance


def plot_norm_groups(layers: dict[str, nn.Module], shape: tuple[int, int, int, int]) -> Figure:
    """Draw a batch of `shape` as a cube (N deep, C across, H·W down) per layer, shading `normalized_together`."""
    n_count, c_count, h, w = shape
    hw_count, (dx, dy) = h * w, (0.45, 0.3)  # the depth axis drawn as a step of (dx, dy) per sample
    fig, axes = plt.subplots(2, 2, figsize=(COLUMN_WIDTH, 4.8), layout="constrained")
    for ax, (name, layer) in zip(axes.flat, layers.items(), strict=True):
        mask = normalized_together(layer, shape).reshape(n_count, c_count, hw_count)  # (N, C, H·W)
        faces = [("front", 0, c, k) for c in range(c_count) for k in range(hw_count)]
        faces += [("top", n, c, 0) for n in range(n_count) for c in range(c_count)]
        faces += [("side", n, c_count - 1, k) for n in range(n_count) for k in range(hw_count)]
        for face, n, c, k in faces:
            x, y = c + n * dx, hw_count - 1 - k + n * dy  # lower left corner of the cell's front face
            corners = {
                "front": [(x, y), (x + 1, y), (x + 1, y + 1), (x, y + 1)],
                "top": [(x, y + 1), (x + 1, y + 1), (x + 1 + dx, y + 1 + dy), (x + dx, y + 1 + dy)],
                "side": [(x + 1, y), (x + 1 + dx, y + dy), (x + 1 + dx, y + 1 + dy), (x + 1, y + 1)],
            }[face]
            shade = {"front": "#4c72b0", "top": "#7b9bd0", "side": "#34548a"}[face] if mask[n, c, k] else "white"
            ax.add_patch(Polygon(corners, facecolor=shade, edgecolor="0.35", linewidth=0.6, gid=f"{n},{c},{k}"))
        ax.text(c_count / 2, -0.25, by_language("C channels", "C 通道", "C channels / 通道"), ha="center", va="top")
        ax.text(
            -0.25,
            hw_count / 2,
            by_language("H·W positions", "H·W 位置", "H·W positions / 位置"),
            ha="right",
            va="center",
            rotation=90,
        )
        angle = math.degrees(math.atan2(dy, dx))  # the depth edge's slope, on axes with equal aspect
        corner = (c_count + n_count * dx / 2 + 0.2, n_count * dy / 2 - 0.15)
        ax.text(
            *corner,
            by_language("N samples", "N 样本", "N samples / 样本"),
            ha="left",
            va="top",
            rotation=angle,
            rotation_mode="anchor",
        )
        shared = int(mask.sum())
        ax.set_title(f"{name}\n{say(f'{shared} values share a mean', f'{shared} 个值共用一个均值')}", fontsize=10)
        ax.set_xlim(-1.3, c_count + n_count * dx + 2.2)
        ax.set_ylim(-0.9, hw_count + n_count * dy + 0.1)
        ax.set_aspect("equal")
        ax.axis("off")
    return fig
