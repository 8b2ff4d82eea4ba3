"""Lesson 04: `nn.BatchNorm2d` in plain tensor operations (statistics, modes, running update), a plot and checks."""

from collections.abc import Callable

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F
from matplotlib.figure import Figure

from companion.exercises import passed, require

CHANNEL_DIMS = (0, 2, 3)  # BatchNorm2d averages over N, H and W: everything except the channel dimension


def _per_channel(values: torch.Tensor) -> torch.Tensor:
    """Shape (C,) -> (1, C, 1, 1), so one value per channel broadcasts over an (N, C, H, W) input."""
    return values.reshape(1, -1, 1, 1)


def channel_statistics(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and biased variance of each channel over (N, H, W): the statistics a training step normalises with."""
    _check_input(x)
    mean = x.mean(dim=CHANNEL_DIMS)
    variance = ((x - _per_channel(mean)) ** 2).mean(dim=CHANNEL_DIMS)  # divide by n: biased
    return mean, variance


def normalize_per_channel(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """What BatchNorm2d does in training mode without affine: one mean and variance per channel."""
    _check_eps(eps)
    mean, variance = channel_statistics(x)
    return (x - _per_channel(mean)) / torch.sqrt(_per_channel(variance) + eps)


def normalize_per_position(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """The notes' reading, which BatchNorm2d does NOT do: statistics over the batch only, one per (C, H, W) position."""
    _check_eps(eps)
    _check_input(x)
    mean = x.mean(dim=0, keepdim=True)
    variance = x.var(dim=0, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(variance + eps)


def _moving_average(running: torch.Tensor, batch_value: torch.Tensor, factor: float) -> torch.Tensor:
    """One running-statistic update: `factor` is the weight of the NEW value (momentum, or 1/k for momentum=None)."""
    return (1 - factor) * running + factor * batch_value


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
        self.weight = torch.ones(num_features) if affine else None
        self.bias = torch.zeros(num_features) if affine else None
        self.running_mean = torch.zeros(num_features) if track_running_stats else None
        self.running_var = torch.ones(num_features) if track_running_stats else None
        self.num_batches_tracked = torch.tensor(0) if track_running_stats else None

    @classmethod
    def from_module(cls, module: nn.BatchNorm2d) -> "BatchNorm2dReference":
        """A reference layer with the settings, mode, parameters and buffers of `module` (copied, not shared)."""
        if not isinstance(module, nn.BatchNorm2d):
            raise TypeError(f"from_module copies an nn.BatchNorm2d, not {type(module).__name__}")
        layer = cls(
            module.num_features,
            module.eps,
            module.momentum,
            module.affine,
            module.track_running_stats,
        )
        layer.training = module.training
        for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
            value = getattr(module, name)
            setattr(layer, name, None if value is None else value.detach().clone())
        return layer

    def train(self, mode: bool = True) -> "BatchNorm2dReference":
        """Set training mode (or evaluation mode with mode=False), like `nn.Module.train`."""
        if not isinstance(mode, bool):
            raise TypeError(f"mode must be True or False, not {type(mode).__name__}")
        self.training = mode
        return self

    def eval(self) -> "BatchNorm2dReference":
        """Set evaluation mode: normalise with the running estimates, if the layer tracks them."""
        return self.train(False)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Normalise `x` (N, C, H, W); in training mode with tracking, also update the running estimates."""
        _check_input(x, self.num_features)
        use_batch_statistics = self.training or not self.track_running_stats
        if use_batch_statistics:
            values_per_channel = x.numel() // self.num_features
            if values_per_channel < 2:
                raise ValueError(
                    f"Expected more than 1 value per channel when training, got input size {tuple(x.shape)}: "
                    "use a batch of at least 2 samples (or a larger feature map), or call eval() first"
                )
            mean, variance = channel_statistics(x)
            if self.training and self.track_running_stats:
                self._update_running_estimates(mean, variance, values_per_channel)
        else:
            mean, variance = self.running_mean, self.running_var
        out = (x - _per_channel(mean)) / torch.sqrt(_per_channel(variance) + self.eps)  # eps inside the sqrt
        if self.weight is not None:
            out = out * _per_channel(self.weight)
        if self.bias is not None:
            out = out + _per_channel(self.bias)
        return out

    def _update_running_estimates(self, mean: torch.Tensor, variance: torch.Tensor, n: int) -> None:
        """Blend this batch into the running estimates; the running variance takes the UNBIASED batch variance."""
        self.num_batches_tracked = self.num_batches_tracked + 1
        factor = 1.0 / int(self.num_batches_tracked) if self.momentum is None else self.momentum
        unbiased_variance = variance * n / (n - 1)
        self.running_mean = _moving_average(self.running_mean, mean.detach(), factor)
        self.running_var = _moving_average(self.running_var, unbiased_variance.detach(), factor)


def _check_settings(num_features, eps, momentum, affine, track_running_stats) -> None:
    """Reject settings nn.BatchNorm2d would accept silently or fail on later, with the fix in the message."""
    if isinstance(num_features, bool) or not isinstance(num_features, int):
        raise TypeError(f"num_features must be an int (the number of channels C), not {type(num_features).__name__}")
    if num_features < 1:
        raise ValueError(f"num_features must be the number of channels, at least 1, not {num_features}")
    _check_eps(eps)
    _check_momentum(momentum)
    for name, flag in (("affine", affine), ("track_running_stats", track_running_stats)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False, not {type(flag).__name__}")


def _check_eps(eps) -> None:
    """eps is added to the variance under the square root: it must be a positive number."""
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not eps > 0:
        raise ValueError(f"eps must be a small positive number such as 1e-5, not {eps!r}")


def _check_momentum(momentum) -> None:
    """momentum is the weight of the new batch statistic: a number in [0, 1], or None for a cumulative average."""
    if momentum is None:
        return
    if isinstance(momentum, bool) or not isinstance(momentum, int | float):
        raise TypeError(f"momentum must be a number in [0, 1] or None, not {type(momentum).__name__}")
    if not 0 <= momentum <= 1:
        raise ValueError(
            f"momentum must be in [0, 1], not {momentum}: it is the weight of the NEW batch statistic "
            "(0.1 by default); pass None for a cumulative average"
        )


def _check_input(x, num_features: int | None = None) -> None:
    """An (N, C, H, W) floating-point tensor with the layer's number of channels."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"the input must be a tensor of shape (N, C, H, W), not {type(x).__name__}")
    if x.dim() != 4:
        raise ValueError(
            f"expected a 4-d input (N, C, H, W), got {x.dim()}-d with shape {tuple(x.shape)}: for a single "
            "image add the batch dimension with x.unsqueeze(0); for (N, C) use BatchNorm1d"
        )
    if not x.is_floating_point():
        raise TypeError(f"the input must be floating point, not {x.dtype}: pass x.float()")
    if num_features is not None and x.shape[1] != num_features:
        raise ValueError(
            f"the input has {x.shape[1]} channels but the layer was built for {num_features}: build it with "
            f"num_features={x.shape[1]}, or check which dimension holds the channels (it must be dimension 1)"
        )


def running_mean_history(momentum: float | None, batches: torch.Tensor) -> list[float]:
    """running_mean of a one-channel nn.BatchNorm2d before and after each training step on `batches` (K, N, 1, H, W)."""
    _check_momentum(momentum)
    if not isinstance(batches, torch.Tensor) or batches.dim() != 5 or batches.shape[2] != 1:
        raise ValueError("batches must be a tensor of shape (K, N, 1, H, W): K batches of one-channel inputs")
    layer = nn.BatchNorm2d(1, momentum=momentum)
    history = [layer.running_mean.item()]
    for batch in batches:
        layer(batch)
        history.append(layer.running_mean.item())
    return history


def plot_running_means(histories: dict[str, list[float]], true_mean: float) -> Figure:
    """Draw each running-mean history against the step, with the mean of the distribution as a dashed line."""
    if not isinstance(histories, dict):
        raise TypeError(
            f"histories must be a dict of label -> running means, {{'momentum 0.1': [...], ...}}, "
            f"not {type(histories).__name__}"
        )
    if not histories:
        raise ValueError("histories must hold at least one curve: {'momentum 0.1': [...], ...}")
    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    for label, history in histories.items():
        ax.plot(range(len(history)), history, label=label, linewidth=1.6)
    ax.axhline(true_mean, color="0.4", linestyle="--", linewidth=1.0, label=f"true mean / 真实均值 = {true_mean:g}")
    ax.set_xlabel("training step / 训练步数")
    ax.set_ylabel("running_mean / 滑动均值")
    ax.set_title("Running mean of one channel / 单个通道的滑动均值")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def _check_cases() -> list[torch.Tensor]:
    """Inputs for the self-checks: random, with channels on different scales, and a tiny one."""
    generator = torch.Generator().manual_seed(4)
    scales = torch.tensor([1.0, 10.0, 0.1]).reshape(1, 3, 1, 1)
    return [
        torch.randn(4, 3, 5, 5, generator=generator),
        torch.randn(8, 3, 2, 2, generator=generator) * scales + torch.tensor([0.0, 5.0, -2.0]).reshape(1, 3, 1, 1),
        torch.tensor([[[[1.0, 2.0]], [[0.0, 4.0]]], [[[3.0, 6.0]], [[2.0, 2.0]]]]),  # (2, 2, 1, 2)
    ]


def _close(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Same shape and values equal up to float32 rounding."""
    return got.shape == want.shape and torch.allclose(got, want, rtol=1e-4, atol=1e-5)


def check_normalize(normalize: Callable[[torch.Tensor, float], torch.Tensor]) -> None:
    """Self-check: `normalize(x, eps)` must equal BatchNorm2d in training mode with affine=False."""
    require(callable(normalize), "Pass the function itself: check_normalize(normalize), without ().")
    for x in _check_cases():
        for eps in (1e-5, 0.5):
            before = x.clone()
            got = normalize(x, eps)
            where = f"normalize(<input of shape {tuple(x.shape)}>, eps={eps})"
            require(isinstance(got, torch.Tensor), f"{where} should return a tensor, not {type(got).__name__}.")
            require(torch.equal(x, before), f"{where} changed its input: compute a new tensor instead of x -= ...")
            require(got.shape == x.shape, f"{where} has shape {tuple(got.shape)}; normalising keeps the input's shape.")
            want = F.batch_norm(x, None, None, training=True, eps=eps)
            if _close(got, want):
                continue
            centred = x - x.mean(CHANNEL_DIMS, keepdim=True)
            with_unbiased = centred / torch.sqrt(x.var(CHANNEL_DIMS, keepdim=True) + eps)
            eps_outside = centred / (x.var(CHANNEL_DIMS, unbiased=False, keepdim=True).sqrt() + eps)
            mistakes = {
                "You averaged over the batch only, one mean per position (the notes' reading): BatchNorm2d takes "
                "one mean and one variance per channel, over dimensions (0, 2, 3).": normalize_per_position(x, eps),
                "You normalised each sample's channel separately (over H and W only): include the batch "
                "dimension 0 in the statistics.": F.instance_norm(x, eps=eps),
                "You normalised each sample over all its channels: the statistics are per channel, over "
                "dimensions (0, 2, 3).": F.layer_norm(x, x.shape[1:], eps=eps),
                "Your variance divides by n - 1: normalisation uses the biased variance (divide by n, "
                "unbiased=False).": with_unbiased,
                "eps belongs inside the square root: divide by sqrt(var + eps), not sqrt(var) + eps.": eps_outside,
            }
            for hint, wrong in mistakes.items():
                require(not _close(got, wrong), f"{where}: {hint}")
            require(False, f"{where} does not match BatchNorm2d: subtract the channel mean, divide by sqrt(var + eps).")
    passed("normalize matches BatchNorm2d (training mode, affine=False) on 3 inputs and 2 values of eps")


def check_running_var(running_var_after_one_step: Callable[[torch.Tensor, float], torch.Tensor]) -> None:
    """Self-check: `running_var_after_one_step(x, momentum)` must equal a fresh BatchNorm2d's after one step on x."""
    require(
        callable(running_var_after_one_step),
        "Pass the function itself: check_running_var(running_var_after_one_step), without ().",
    )
    for x in _check_cases():
        for momentum in (0.1, 0.3, 1.0):
            layer = nn.BatchNorm2d(x.shape[1], momentum=momentum)
            layer(x)
            want = layer.running_var
            got = running_var_after_one_step(x.clone(), momentum)
            where = f"running_var_after_one_step(<input of shape {tuple(x.shape)}>, momentum={momentum})"
            require(isinstance(got, torch.Tensor), f"{where} should return a tensor, not {type(got).__name__}.")
            require(
                got.shape == want.shape,
                f"{where} has shape {tuple(got.shape)}; expected ({x.shape[1]},): one variance per channel, "
                "over dimensions (0, 2, 3).",
            )
            if _close(got, want):
                continue
            biased, unbiased = x.var(CHANNEL_DIMS, unbiased=False), x.var(CHANNEL_DIMS)
            ones, zeros = torch.ones_like(unbiased), torch.zeros_like(unbiased)
            mistakes = {
                "The running estimate takes the UNBIASED batch variance (divide by n - 1), although the output is "
                "normalised with the biased one.": _moving_average(ones, biased, momentum),
                "momentum is the weight of the NEW value in PyTorch: (1 - momentum) * old + momentum * new.": (
                    _moving_average(ones, unbiased, 1 - momentum)
                ),
                "running_var starts at ones, not zeros.": _moving_average(zeros, unbiased, momentum),
                "That is the batch variance itself: blend it into the initial running_var with momentum.": unbiased,
            }
            for hint, wrong in mistakes.items():
                require(not _close(got, wrong), f"{where}: {hint}")
            require(
                False,
                f"{where} gives {got.tolist()}; expected other values: (1 - momentum) * old + momentum * new, "
                "starting from the initial running_var.",
            )
    passed("running_var_after_one_step matches nn.BatchNorm2d on 3 inputs and 3 momentum values")
