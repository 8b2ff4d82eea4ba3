"""Self-checks for lesson 06 (BatchNorm): GroupNorm by hand, and folding an eval-mode BatchNorm into the convolution
before it. Each checker runs the learner's code through `call_learner`, compares it with PyTorch's own operation
(F.group_norm, torch.nn.utils.fusion.fuse_conv_bn_weights) and names the typical mistake it recognises. The
reference answers and the table of mistakes live in companion/checks/answers/batchnorm.py."""

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from unittest import mock

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_weights

from companion._torch_errors import VIEW_NOT_CONTIGUOUS, says
from companion.exercises import call_learner, passed, require


def _close(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Same dtype, shape and values up to the rounding of that dtype (torch.testing.assert_close's defaults)."""
    try:
        torch.testing.assert_close(got, want)
    except AssertionError:
        return False
    return True


def _worst(got: torch.Tensor, want: torch.Tensor) -> tuple[float, float]:
    """The values of got and want where they differ most."""
    where = (got.detach().double() - want.detach().double()).abs().argmax()
    return got.flatten()[where].item(), want.flatten()[where].item()


# --- exercise 1: group_norm -------------------------------------------------------------------------------------------


class _ForbiddenCall(Exception):
    """Raised inside the learner's group_norm when it calls PyTorch's own GroupNorm."""


def _forbidden(*args: object, **kwargs: object) -> None:
    raise _ForbiddenCall


@contextmanager
def _without_torch_group_norm() -> Iterator[None]:
    """F.group_norm, torch.group_norm and torch.native_group_norm raise while the learner's code runs (nn.GroupNorm
    goes through F.group_norm; a name imported with `from ... import group_norm` goes through torch.group_norm)."""
    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(F, "group_norm", _forbidden))
        stack.enter_context(mock.patch.object(torch, "group_norm", _forbidden))
        stack.enter_context(mock.patch.object(torch, "native_group_norm", _forbidden))
        yield


def _group_norm_cases() -> list[tuple[str, str, torch.Tensor, int]]:
    """(label, Chinese label, x, groups), built fresh: channels on different scales, a batch of one, groups neither 1
    nor C; one input is a strided slice, one channels-last, one float64 (nn.GroupNorm takes all three)."""
    generator = torch.Generator().manual_seed(6)
    scales = torch.tensor([1.0, 10.0, 0.1, 3.0, 0.5, 2.0]).reshape(1, 6, 1, 1)  # (1, C, 1, 1)
    first = (torch.randn(2, 6, 3, 6, generator=generator) * scales + 1.0)[..., ::2]  # (2, 6, 3, 3), not contiguous
    second = (torch.randn(1, 6, 4, 4, generator=generator) * scales).contiguous(memory_format=torch.channels_last)
    third = torch.randn(3, 4, 2, 5, generator=generator, dtype=torch.float64) - 2.0
    return [
        ("a strided slice, float32", "步长切片，float32", first, 3),
        ("channels-last, float32", "channels-last 内存布局，float32", second, 2),
        ("float64", "float64", third, 2),
    ]


def check_group_norm(group_norm: Callable[[torch.Tensor, int, float], torch.Tensor]) -> None:
    """`group_norm(x, groups, eps)` must equal F.group_norm without weight and bias, without calling it."""
    require(
        callable(group_norm),
        "Pass the function itself: check_group_norm(group_norm), without ().",
        "把函数本身传进去：check_group_norm(group_norm)，不要加 ()。",
    )
    for eps in (1e-5, 0.5):
        for label, label_zh, x, groups in _group_norm_cases():  # fresh inputs for every call
            where = f"group_norm(<x of shape {tuple(x.shape)}, {label}>, groups={groups}, eps={eps})"
            where_zh = f"group_norm(<形状为 {tuple(x.shape)} 的 x，{label_zh}>, groups={groups}, eps={eps})"
            got = _call_group_norm(group_norm, x, groups, eps, where, where_zh)
            _check_group_norm_result(got, x, groups, eps, where, where_zh)
    passed(
        "group_norm matches F.group_norm on 3 inputs (a batch of one among them) and 2 values of eps",
        "group_norm 在 3 组输入（其中一组只有一个样本）和 2 个 eps 取值上都与 F.group_norm 一致",
    )


def _call_group_norm(group_norm: Callable, x: torch.Tensor, groups: int, eps: float, where: str, where_zh: str):
    try:
        with _without_torch_group_norm():
            return call_learner(group_norm, x, groups, eps)
    except _ForbiddenCall:
        require(
            False,
            f"{where} called PyTorch's own GroupNorm (F.group_norm, torch.group_norm or nn.GroupNorm): the checker "
            "switches those off while your function runs, because the exercise is to build it from tensor "
            "operations such as mean and var.",
            f"{where_zh} 调用了 PyTorch 自带的 GroupNorm（F.group_norm、torch.group_norm 或 nn.GroupNorm）：检查程序在"
            "运行你的函数时会把它们关掉，因为这个练习要求用 mean、var 等张量运算自己实现。",
        )
    except RuntimeError as error:
        require(
            not says(error, VIEW_NOT_CONTIGUOUS),
            f'{where} raised "view size is not compatible ...": .view() cannot regroup a tensor whose memory is '
            "not laid out row by row (a slice, or channels-last, both of which nn.GroupNorm accepts); a reshape "
            "copies when it must.",
            f'{where_zh} 报错 "view size is not compatible ..."：当张量在内存中不是逐行连续存放时'
            "（切片，或 channels-last 布局，nn.GroupNorm 都接受），.view() 无法重新分组；reshape 会在需要时复制。",
        )
        raise


def _check_group_norm_result(got: object, x: torch.Tensor, groups: int, eps: float, where: str, where_zh: str):
    require(
        isinstance(got, torch.Tensor),
        f"{where} should return a tensor, not {type(got).__name__}.",
        f"{where_zh} 应该返回张量，而不是 {type(got).__name__}。",
    )
    require(
        got.shape == x.shape,
        f"{where} has shape {tuple(got.shape)}: reshape back to (N, C, H, W) at the end.",
        f"{where_zh} 的形状是 {tuple(got.shape)}：最后要变回 (N, C, H, W)。",
    )
    require(
        got.dtype == x.dtype and got.device == x.device,
        f"{where} returned {got.dtype} on {got.device} for an input in {x.dtype} on {x.device}: a normalisation "
        "layer keeps its input's dtype and device (nn.GroupNorm does), so compute in x's own dtype.",
        f"{where_zh} 对 {x.device} 上 {x.dtype} 的输入返回了 {got.device} 上的 {got.dtype}：归一化层保持输入的数据类型"
        "和设备（nn.GroupNorm 就是这样），请用 x 自己的数据类型计算。",
    )
    want = F.group_norm(x, groups, eps=eps)
    if _close(got, want):
        return
    for wrong, hint, hint_zh in _group_norm_mistakes(x, groups, eps):
        require(not _close(got, wrong), f"{where}: {hint}", f"{where_zh}：{hint_zh}")
    mine, theirs = _worst(got, want)
    require(
        False,
        f"{where} does not match F.group_norm (largest difference: {mine:.9g} where F.group_norm gives "
        f"{theirs:.9g}): per sample and per group of C // groups consecutive channels, subtract the mean and "
        "divide by sqrt(biased variance + eps).",
        f"{where_zh} 与 F.group_norm 不一致（差得最多的一处：你的是 {mine:.9g}，F.group_norm 是 {theirs:.9g}）："
        "对每个样本、每组相邻的 C // groups 个通道，减去均值，再除以 sqrt(有偏方差 + eps)。",
    )


def _normalised_over(
    x: torch.Tensor, shape: tuple[int, ...], dims: tuple[int, ...], eps: float, *, correction: int = 0, after=False
) -> torch.Tensor:
    """x viewed as `shape`, normalised over `dims` (variance with `correction`, eps after the root if `after`): the
    family that the typical wrong answers belong to."""
    variance, mean = torch.var_mean(x.reshape(shape), dim=dims, correction=correction, keepdim=True)
    spread = variance.sqrt() + eps if after else (variance + eps).sqrt()
    return ((x.reshape(shape) - mean) / spread).reshape(x.shape)


def _group_norm_mistakes(x: torch.Tensor, groups: int, eps: float) -> list[tuple[torch.Tensor, str, str]]:
    n, c, h, w = tuple(x.shape)  # (N, C, H, W)
    grouped = (n, groups, c // groups, h, w)
    return [
        (
            _normalised_over(x, grouped, (2, 3, 4), eps, correction=1),
            "your variance divides by n - 1: normalisation uses the biased variance (unbiased=False).",
            "你的方差除以的是 n - 1：归一化要用有偏方差（unbiased=False）。",
        ),
        (
            _normalised_over(x, grouped, (2, 3, 4), eps, after=True),
            "eps belongs inside the square root: sqrt(var + eps), not sqrt(var) + eps.",
            "eps 要加在平方根里面：sqrt(var + eps)，而不是 sqrt(var) + eps。",
        ),
        (
            _normalised_over(x, grouped, (2, 3, 4), 0.0),
            "add eps to the variance before the square root.",
            "开平方之前要给方差加上 eps。",
        ),
        (
            _normalised_over(x, grouped, (0, 2, 3, 4), eps),
            "GroupNorm takes its statistics per sample: leave the batch dimension 0 out of the reduction.",
            "GroupNorm 按样本求统计量：归约时不要包括批这一维（第 0 维）。",
        ),
        (
            _normalised_over(x, (n, c // groups, groups, h, w), (1, 3, 4), eps),
            "a group is C // groups consecutive channels: reshape to (N, groups, C // groups, H, W).",
            "一组是相邻的 C // groups 个通道：应变形为 (N, groups, C // groups, H, W)。",
        ),
        (
            _normalised_over(x, (n, c, h, w), (2, 3), eps),
            "you normalised each channel on its own: a group holds C // groups channels that share one mean.",
            "你对每个通道单独做了归一化：一组有 C // groups 个通道，它们共用一个均值。",
        ),
        (
            _normalised_over(x, (n, c, h, w), (1, 2, 3), eps),
            "you normalised all channels of a sample together, as LayerNorm does: each of the `groups` groups "
            "gets its own mean and variance.",
            "你把一个样本的所有通道放在一起归一化了，这是 LayerNorm 的做法：`groups` 个组各有自己的均值和方差。",
        ),
    ]


# --- exercise 2: fuse_conv_bn -----------------------------------------------------------------------------------------


def _fuse_cases() -> list[tuple[nn.Conv2d, nn.BatchNorm2d]]:
    """A conv and an eval-mode BatchNorm2d with nontrivial buffers, built fresh; C_in == C_out in the first, no conv
    bias and float64 in the second, groups in the third. The caller's global random generator is left alone."""
    generator = torch.Generator().manual_seed(16)
    cases = []
    with torch.random.fork_rng(devices=[]):
        for c_in, c_out, kernel, options, bias, eps, dtype in [
            (3, 3, 3, {"padding": 1}, True, 0.1, torch.float32),
            (2, 4, 3, {"stride": 2}, False, 1e-5, torch.float64),
            (4, 6, 1, {"groups": 2}, True, 0.5, torch.float32),
        ]:
            conv = nn.Conv2d(c_in, c_out, kernel, bias=bias, dtype=dtype, **options)
            bn = nn.BatchNorm2d(c_out, eps=eps, dtype=dtype)
            with torch.no_grad():
                for tensor in [*conv.parameters(), bn.bias, bn.running_mean]:
                    tensor.copy_(torch.randn(tensor.shape, generator=generator))
                bn.weight.copy_(torch.rand(c_out, generator=generator) + 0.5)
                bn.running_var.copy_(torch.rand(c_out, generator=generator) * 0.5 + 0.05)
            cases.append((conv, bn.eval()))
    return cases


def check_fuse_conv_bn(fuse_conv_bn: Callable[[nn.Conv2d, nn.BatchNorm2d], tuple[torch.Tensor, torch.Tensor]]) -> None:
    """`fuse_conv_bn(conv, bn)` must return (weight, bias) with F.conv2d(x, weight, bias, <conv's options>) equal to
    bn(conv(x)) for a BatchNorm2d in evaluation mode: the weights torch.nn.utils.fusion computes."""
    require(
        callable(fuse_conv_bn),
        "Pass the function itself: check_fuse_conv_bn(fuse_conv_bn), without ().",
        "把函数本身传进去：check_fuse_conv_bn(fuse_conv_bn)，不要加 ()。",
    )
    for conv, bn in _fuse_cases():
        dtype = str(conv.weight.dtype).removeprefix("torch.")
        where = f"fuse_conv_bn(<{conv}, {dtype}>, <BatchNorm2d({bn.num_features}, eps={bn.eps})>)"
        where_zh = where
        result = call_learner(fuse_conv_bn, conv, bn)  # neither layer may change: values, .grad or mode
        require(
            isinstance(result, tuple | list) and len(result) == 2 and all(isinstance(t, torch.Tensor) for t in result),
            f"{where} should return a pair of tensors: return weight, bias.",
            f"{where_zh} 应该返回两个张量：return weight, bias。",
        )
        weight, bias = result
        require(
            weight.shape == conv.weight.shape and bias.shape == (conv.out_channels,),
            f"{where} returned shapes {tuple(weight.shape)} and {tuple(bias.shape)}: the fused weight keeps the "
            f"conv's shape {tuple(conv.weight.shape)}, the bias is one number per output channel.",
            f"{where_zh} 返回的形状是 {tuple(weight.shape)} 和 {tuple(bias.shape)}：融合后的权重与卷积层的权重形状相同"
            f" {tuple(conv.weight.shape)}，偏置每个输出通道一个数。",
        )
        require(
            all(t.dtype == conv.weight.dtype and t.device == conv.weight.device for t in (weight, bias)),
            f"{where} returned {weight.dtype} and {bias.dtype} for layers in {conv.weight.dtype}: the fused "
            "convolution keeps the layers' dtype and device.",
            f"{where_zh} 对 {conv.weight.dtype} 的层返回了 {weight.dtype} 和 {bias.dtype}：融合后的卷积要保持"
            "原来各层的数据类型和设备。",
        )
        with torch.no_grad():
            want = fuse_conv_bn_weights(
                conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
            )
        if _close(weight.detach(), want[0].detach()) and _close(bias.detach(), want[1].detach()):
            continue
        for wrong, hint, hint_zh in _fuse_mistakes(conv, bn):
            same = _close(weight.detach(), wrong[0]) and _close(bias.detach(), wrong[1])
            require(not same, f"{where}: {hint}", f"{where_zh}：{hint_zh}")
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


def _folded(conv: nn.Conv2d, bn: nn.BatchNorm2d, **wrong: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """A typical wrong (weight, bias), named by the flag in `wrong`."""
    with torch.no_grad():
        spread = bn.running_var.sqrt() + bn.eps if wrong.get("eps_outside") else (bn.running_var + bn.eps).sqrt()
        if wrong.get("no_eps"):
            spread = bn.running_var.sqrt()
        if wrong.get("variance"):
            spread = bn.running_var + bn.eps
        s = bn.weight / spread  # (C_out,)
        k = s[None, :, None, None] if wrong.get("input_channels") else s[:, None, None, None]
        b = torch.zeros_like(s) if conv.bias is None or wrong.get("no_conv_bias") else conv.bias
        if wrong.get("shift_unscaled"):
            shift = b - bn.running_mean
        elif wrong.get("mean_unscaled"):
            shift = b * s - bn.running_mean
        else:
            shift = b * s - bn.running_mean * s
        return conv.weight * k, shift + (0 if wrong.get("no_bn_bias") else bn.bias)


def _fuse_mistakes(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> list[tuple[tuple[torch.Tensor, torch.Tensor], str, str]]:
    mistakes = [
        (
            _folded(conv, bn, no_eps=True),
            "add eps to running_var before the square root, as the layer does.",
            "开平方之前要给 running_var 加上 eps，和这一层的做法一样。",
        ),
        (
            _folded(conv, bn, eps_outside=True),
            "eps goes inside the square root, sqrt(running_var + eps), as the layer computes it.",
            "eps 要加在平方根里面，即 sqrt(running_var + eps)，和这一层的算法一样。",
        ),
        (
            _folded(conv, bn, variance=True),
            "divide by the standard deviation sqrt(running_var + eps), not by the variance.",
            "要除以标准差 sqrt(running_var + eps)，而不是除以方差。",
        ),
        (
            _folded(conv, bn, shift_unscaled=True),
            "the shift passes through BatchNorm too: (conv bias - running_mean) * scale + bn.bias.",
            "偏移量也要经过批归一化：(卷积偏置 - running_mean) * scale + bn.bias。",
        ),
        (
            _folded(conv, bn, mean_unscaled=True),
            "running_mean is subtracted before the scaling, so it is scaled as well.",
            "running_mean 是在缩放之前减去的，所以它也要被缩放。",
        ),
        (
            _folded(conv, bn, no_bn_bias=True),
            "BatchNorm adds its own bias (beta) after the scaling: the fused bias needs it.",
            "批归一化在缩放之后还要加上它自己的偏置（beta）：融合后的偏置里要有它。",
        ),
        (
            _folded(conv, bn, no_conv_bias=True),
            "the conv's own bias is added before BatchNorm: it is shifted and scaled like everything else.",
            "卷积层自己的偏置是在批归一化之前加上的：它也要和其他部分一样被平移、缩放。",
        ),
    ]
    if conv.in_channels // conv.groups == conv.out_channels:  # the wrong broadcast runs only when the shapes allow it
        mistakes.append(
            (
                _folded(conv, bn, input_channels=True),
                "the scale belongs to the OUTPUT channels: reshape it to (C_out, 1, 1, 1), one per kernel.",
                "缩放系数属于输出通道：要变形为 (C_out, 1, 1, 1)，每个卷积核一个。",
            )
        )
    return mistakes
