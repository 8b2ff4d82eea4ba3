"""Self-checks for lesson 06 (BatchNorm): GroupNorm by hand, and folding an eval-mode BatchNorm into the convolution
before it. Each checker compares behaviour with PyTorch and names the typical mistake it recognises."""

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from companion.exercises import Exercise, Mistake, passed, require


def _close(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Same shape and values equal up to float32 rounding."""
    return got.shape == want.shape and torch.allclose(got, want, rtol=1e-4, atol=1e-5)


def _group_norm_cases() -> list[tuple[torch.Tensor, int]]:
    """(x, groups): channels on different scales, a batch of one, groups neither 1 nor C."""
    generator = torch.Generator().manual_seed(6)
    scales = torch.tensor([1.0, 10.0, 0.1, 3.0, 0.5, 2.0]).reshape(1, 6, 1, 1)  # (1, C, 1, 1)
    return [
        (torch.randn(2, 6, 3, 3, generator=generator) * scales + 1.0, 3),
        (torch.randn(1, 6, 4, 4, generator=generator) * scales, 2),
        (torch.randn(3, 4, 2, 5, generator=generator) - 2.0, 2),
    ]


def check_group_norm(group_norm: Callable[[torch.Tensor, int, float], torch.Tensor]) -> None:
    """`group_norm(x, groups, eps)` must equal F.group_norm without weight and bias."""
    require(
        callable(group_norm),
        "Pass the function itself: check_group_norm(group_norm), without ().",
        "把函数本身传进去：check_group_norm(group_norm)，不要加 ()。",
    )
    for x, groups in _group_norm_cases():
        for eps in (1e-5, 0.5):
            before = x.clone()
            got = group_norm(x, groups, eps)
            where = f"group_norm(<x of shape {tuple(x.shape)}>, groups={groups}, eps={eps})"
            where_zh = f"group_norm(<形状为 {tuple(x.shape)} 的 x>, groups={groups}, eps={eps})"
            require(
                isinstance(got, torch.Tensor),
                f"{where} should return a tensor, not {type(got).__name__}.",
                f"{where_zh} 应该返回张量，而不是 {type(got).__name__}。",
            )
            require(
                torch.equal(x, before),
                f"{where} changed its input: compute a new tensor instead of x -= ...",
                f"{where_zh} 改动了输入：请算出一个新张量，不要写 x -= ……",
            )
            require(
                got.shape == x.shape,
                f"{where} has shape {tuple(got.shape)}: reshape back to (N, C, H, W) at the end.",
                f"{where_zh} 的形状是 {tuple(got.shape)}：最后要变回 (N, C, H, W)。",
            )
            if _close(got, F.group_norm(x, groups, eps=eps)):
                continue
            for wrong, hint, hint_zh in _group_norm_mistakes(x, groups, eps):
                require(not _close(got, wrong), f"{where}: {hint}", f"{where_zh}：{hint_zh}")
            require(
                False,
                f"{where} does not match F.group_norm: per sample and per group of C // groups consecutive "
                "channels, subtract the mean and divide by sqrt(biased variance + eps).",
                f"{where_zh} 与 F.group_norm 不一致：对每个样本、每组相邻的 C // groups 个通道，"
                "减去均值，再除以 sqrt(有偏方差 + eps)。",
            )
    passed(
        "group_norm matches F.group_norm on 3 inputs (a batch of one among them) and 2 values of eps",
        "group_norm 在 3 组输入（其中一组批大小为 1）和 2 个 eps 取值上都与 F.group_norm 一致",
    )


def _group_norm_reference(x: torch.Tensor, groups: int, eps: float) -> torch.Tensor:
    n, c, h, w = x.shape
    grouped = x.reshape(n, groups, c // groups, h, w)  # (N, G, C/G, H, W): consecutive channels per group
    mean = grouped.mean(dim=(2, 3, 4), keepdim=True)  # (N, G, 1, 1, 1)
    variance = grouped.var(dim=(2, 3, 4), unbiased=False, keepdim=True)  # (N, G, 1, 1, 1)
    return ((grouped - mean) / torch.sqrt(variance + eps)).reshape(n, c, h, w)  # (N, C, H, W)


def _group_norm_over(
    x: torch.Tensor,
    shape: tuple[int, ...],
    dims: tuple[int, ...],
    eps: float,
    *,
    unbiased: bool = False,
    eps_inside: bool = True,
) -> torch.Tensor:
    """Normalise x viewed as `shape` over `dims`: the family that right and wrong answers belong to."""
    grouped = x.reshape(shape)
    mean = grouped.mean(dim=dims, keepdim=True)
    variance = grouped.var(dim=dims, unbiased=unbiased, keepdim=True)
    spread = torch.sqrt(variance + eps) if eps_inside else torch.sqrt(variance) + eps
    return ((grouped - mean) / spread).reshape(x.shape)


def _group_norm_mistakes(x: torch.Tensor, groups: int, eps: float) -> list[tuple[torch.Tensor, str, str]]:
    n, c, h, w = x.shape
    grouped = (n, groups, c // groups, h, w)
    return [
        (
            _group_norm_over(x, grouped, (2, 3, 4), eps, unbiased=True),
            "your variance divides by n - 1: normalisation uses the biased variance (unbiased=False).",
            "你的方差除以的是 n - 1：归一化要用有偏方差（unbiased=False）。",
        ),
        (
            _group_norm_over(x, grouped, (2, 3, 4), eps, eps_inside=False),
            "eps belongs inside the square root: sqrt(var + eps), not sqrt(var) + eps.",
            "eps 要加在平方根里面：sqrt(var + eps)，而不是 sqrt(var) + eps。",
        ),
        (
            _group_norm_over(x, grouped, (2, 3, 4), 0.0),
            "add eps to the variance before the square root.",
            "开平方之前要给方差加上 eps。",
        ),
        (
            _group_norm_over(x, grouped, (0, 2, 3, 4), eps),
            "GroupNorm takes its statistics per sample: leave the batch dimension 0 out of the reduction.",
            "GroupNorm 按样本求统计量：归约时不要包括批这一维（第 0 维）。",
        ),
        (
            _group_norm_over(x, (n, c // groups, groups, h, w), (1, 3, 4), eps),
            "a group is C // groups consecutive channels: reshape to (N, groups, C // groups, H, W).",
            "一组是相邻的 C // groups 个通道：应变形为 (N, groups, C // groups, H, W)。",
        ),
        (
            _group_norm_over(x, (n, c, h, w), (2, 3), eps),
            "you normalised each channel on its own: a group holds C // groups channels that share one mean.",
            "你对每个通道单独做了归一化：一组有 C // groups 个通道，它们共用一个均值。",
        ),
    ]


def _fuse_cases() -> list[tuple[nn.Conv2d, nn.BatchNorm2d, torch.Tensor]]:
    """A conv and an eval-mode BatchNorm2d with nontrivial buffers, and an input; C_in == C_out in the first."""
    generator = torch.Generator().manual_seed(16)
    cases = []
    for c_in, c_out, kernel, options, bias, eps in [
        (3, 3, 3, {"padding": 1}, True, 0.1),
        (2, 4, 3, {"stride": 2}, False, 1e-5),
        (4, 6, 1, {"groups": 2}, True, 0.5),
    ]:
        conv = nn.Conv2d(c_in, c_out, kernel, bias=bias, **options)
        bn = nn.BatchNorm2d(c_out, eps=eps)
        with torch.no_grad():
            conv.weight.copy_(torch.randn(conv.weight.shape, generator=generator))
            if bias:
                conv.bias.copy_(torch.randn(c_out, generator=generator))
            bn.weight.copy_(torch.rand(c_out, generator=generator) + 0.5)
            bn.bias.copy_(torch.randn(c_out, generator=generator))
            bn.running_mean.copy_(torch.randn(c_out, generator=generator))
            bn.running_var.copy_(torch.rand(c_out, generator=generator) * 0.5 + 0.05)
        cases.append((conv, bn.eval(), torch.randn(2, c_in, 6, 6, generator=generator)))
    return cases


def check_fuse_conv_bn(fuse_conv_bn: Callable[[nn.Conv2d, nn.BatchNorm2d], tuple[torch.Tensor, torch.Tensor]]) -> None:
    """`fuse_conv_bn(conv, bn)` must return (weight, bias) with F.conv2d(x, weight, bias, <conv's options>) equal to
    bn(conv(x)) for a BatchNorm2d in evaluation mode."""
    require(
        callable(fuse_conv_bn),
        "Pass the function itself: check_fuse_conv_bn(fuse_conv_bn), without ().",
        "把函数本身传进去：check_fuse_conv_bn(fuse_conv_bn)，不要加 ()。",
    )
    for conv, bn, x in _fuse_cases():
        where = f"fuse_conv_bn(<{conv}>, <BatchNorm2d({bn.num_features}, eps={bn.eps})>)"
        where_zh = where
        state = _state(conv, bn)
        result = fuse_conv_bn(conv, bn)
        require(
            isinstance(result, tuple) and len(result) == 2 and all(isinstance(t, torch.Tensor) for t in result),
            f"{where} should return a pair of tensors: return weight, bias.",
            f"{where_zh} 应该返回两个张量：return weight, bias。",
        )
        weight, bias = result
        unchanged = all(torch.equal(state[name], value) for name, value in _state(conv, bn).items())
        require(
            unchanged,
            f"{where} changed the layers: compute new tensors instead of writing into conv or bn.",
            f"{where_zh} 改动了原来的层：请算出新张量，不要写进 conv 或 bn。",
        )
        require(
            weight.shape == conv.weight.shape and bias.shape == (conv.out_channels,),
            f"{where} returned shapes {tuple(weight.shape)} and {tuple(bias.shape)}: the fused weight keeps the "
            f"conv's shape {tuple(conv.weight.shape)}, the bias is one number per output channel.",
            f"{where_zh} 返回的形状是 {tuple(weight.shape)} 和 {tuple(bias.shape)}：融合后的权重与卷积层的权重形状相同"
            f" {tuple(conv.weight.shape)}，偏置每个输出通道一个数。",
        )
        options = {"stride": conv.stride, "padding": conv.padding, "dilation": conv.dilation, "groups": conv.groups}
        with torch.no_grad():
            want, got = bn(conv(x)), F.conv2d(x, weight, bias, **options)
        if _close(got, want):
            continue
        for wrong, hint, hint_zh in _fuse_mistakes(conv, bn):
            with torch.no_grad():
                wrong_out = F.conv2d(x, *wrong, **options)
            require(not _close(got, wrong_out), f"{where}: {hint}", f"{where_zh}：{hint_zh}")
        require(
            False,
            f"{where} does not give bn(conv(x)): in evaluation mode BatchNorm is y * s + t per channel, with "
            "s = weight / sqrt(running_var + eps) and t = bias - running_mean * s.",
            f"{where_zh} 给出的结果不等于 bn(conv(x))：评估模式下，批归一化对每个通道就是 y * s + t，"
            "其中 s = weight / sqrt(running_var + eps)，t = bias - running_mean * s。",
        )
    passed(
        "fuse_conv_bn gives bn(conv(x)) with one convolution, for 3 conv layers (with and without bias, grouped)",
        "fuse_conv_bn 只用一次卷积就得到 bn(conv(x))，3 个卷积层（有无偏置、分组卷积）都通过",
    )


def _state(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> dict[str, torch.Tensor]:
    """Copies of both layers' parameters and buffers, by prefixed name."""
    layers = {"conv": conv, "bn": bn}
    return {
        f"{prefix}.{name}": value.clone()
        for prefix, layer in layers.items()
        for name, value in layer.state_dict().items()
    }


def _fuse(conv, bn, *, eps=True, sqrt=True, per_output=True, scale_bias=True, conv_bias=True):
    """The fused (weight, bias), or one of the typical wrong versions of it."""
    with torch.no_grad():
        variance = bn.running_var + (bn.eps if eps else 0.0)  # (C_out,)
        scale = bn.weight / (torch.sqrt(variance) if sqrt else variance)  # (C_out,)
        shape = (-1, 1, 1, 1) if per_output else (1, -1, 1, 1)
        weight = conv.weight * scale.reshape(shape)  # (C_out, C_in / groups, kH, kW)
        before = conv.bias if conv.bias is not None and conv_bias else torch.zeros_like(bn.running_mean)  # (C_out,)
        shift = (before - bn.running_mean) * scale if scale_bias else before - bn.running_mean
        return weight, shift + bn.bias


def _fuse_mistakes(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> list[tuple[tuple[torch.Tensor, torch.Tensor], str, str]]:
    mistakes = [
        (
            _fuse(conv, bn, eps=False),
            "add eps to running_var before the square root, as the layer does.",
            "开平方之前要给 running_var 加上 eps，和这一层的做法一样。",
        ),
        (
            _fuse(conv, bn, sqrt=False),
            "divide by the standard deviation sqrt(running_var + eps), not by the variance.",
            "要除以标准差 sqrt(running_var + eps)，而不是除以方差。",
        ),
        (
            _fuse(conv, bn, scale_bias=False),
            "the shift passes through BatchNorm too: (conv bias - running_mean) * scale + bn.bias.",
            "偏移量也要经过批归一化：(卷积偏置 - running_mean) * scale + bn.bias。",
        ),
        (
            _fuse(conv, bn, conv_bias=False),
            "the conv's own bias is added before BatchNorm: it is shifted and scaled like everything else.",
            "卷积层自己的偏置是在批归一化之前加上的：它也要和其他部分一样被平移、缩放。",
        ),
    ]
    if conv.in_channels // conv.groups == conv.out_channels:  # the wrong reshape runs only when the shapes allow it
        mistakes.append(
            (
                _fuse(conv, bn, per_output=False),
                "the scale belongs to the OUTPUT channels: reshape it to (C_out, 1, 1, 1), one per kernel.",
                "缩放系数属于输出通道：要变形为 (C_out, 1, 1, 1)，每个卷积核一个。",
            )
        )
    return mistakes


def _wrong_fuse(**wrong):
    return lambda conv, bn: _fuse(conv, bn, **wrong)


EXERCISES = [
    Exercise(
        check=check_group_norm,
        reference=_group_norm_reference,
        mistakes=(
            Mistake(
                "unbiased variance",
                lambda x, g, eps: _group_norm_over(
                    x, (x.shape[0], g, x.shape[1] // g, *x.shape[2:]), (2, 3, 4), eps, unbiased=True
                ),
                "n - 1",
            ),
            Mistake(
                "eps outside the square root",
                lambda x, g, eps: _group_norm_over(
                    x, (x.shape[0], g, x.shape[1] // g, *x.shape[2:]), (2, 3, 4), eps, eps_inside=False
                ),
                "inside the square root",
            ),
            Mistake(
                "forgets eps",
                lambda x, g, eps: _group_norm_over(x, (x.shape[0], g, x.shape[1] // g, *x.shape[2:]), (2, 3, 4), 0.0),
                "add eps",
            ),
            Mistake(
                "reduces over the batch too",
                lambda x, g, eps: _group_norm_over(
                    x, (x.shape[0], g, x.shape[1] // g, *x.shape[2:]), (0, 2, 3, 4), eps
                ),
                "leave the batch",
            ),
            Mistake(
                "interleaved groups: reshape (N, C // G, G, H, W)",
                lambda x, g, eps: _group_norm_over(x, (x.shape[0], x.shape[1] // g, g, *x.shape[2:]), (1, 3, 4), eps),
                "consecutive channels",
            ),
            Mistake(
                "per channel (instance norm)", lambda x, g, eps: F.instance_norm(x, eps=eps), "each channel on its own"
            ),
        ),
        why="GroupNorm reduces over each sample's group of channels and its positions, so its output for one sample "
        "never depends on the rest of the batch.",
        why_zh="GroupNorm 在每个样本的一组通道及其所有位置上求统计量，所以一个样本的输出与同批其他样本无关。",
        discuss="With groups=1 and groups=C, which other layers does GroupNorm become?",
        discuss_zh="groups=1 和 groups=C 时，GroupNorm 分别变成了哪种归一化层？",
    ),
    Exercise(
        check=check_fuse_conv_bn,
        reference=_fuse,
        mistakes=(
            Mistake("forgets eps", _wrong_fuse(eps=False), "add eps to running_var"),
            Mistake("divides by the variance", _wrong_fuse(sqrt=False), "standard deviation"),
            Mistake("shift not scaled", _wrong_fuse(scale_bias=False), "shift passes through"),
            Mistake("drops the conv's bias", _wrong_fuse(conv_bias=False), "conv's own bias"),
            Mistake("scales the input channels", _wrong_fuse(per_output=False), "OUTPUT channels"),
        ),
        why="In evaluation mode BatchNorm is a fixed affine map per channel, and an affine map after a convolution "
        "is again a convolution: scale each kernel, shift the bias.",
        why_zh="评估模式下的批归一化对每个通道是一个固定的仿射变换；卷积之后再接仿射变换，仍然是一个卷积：把每个卷积核缩放，"
        "再平移偏置。",
        discuss="Why can a BatchNorm layer in training mode not be folded into the convolution?",
        discuss_zh="为什么训练模式下的批归一化层不能折叠进卷积层？",
    ),
]
