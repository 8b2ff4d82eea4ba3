"""Self-checks for lesson 05 (Conv2d): the pooling output length with ceil_mode, and depthwise convolution with a
channel multiplier. Each checker compares behaviour with PyTorch and names the typical mistake it recognises."""

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from companion.exercises import call_learner, passed, require

# (length, kernel_size, stride, padding, ceil_mode): floor and ceil differ, two cases drop a last window that would
# start in the right padding, and in two the stride divides L + 2p - k exactly, so rounding up adds nothing.
POOL_CASES = [
    (28, 2, 2, 0, False),
    (7, 3, 2, 0, True),
    (5, 2, 2, 0, True),
    (9, 5, 2, 1, True),
    (32, 3, 2, 1, True),
    (5, 3, 3, 1, True),
    (6, 4, 4, 2, True),
    (9, 2, 3, 1, True),
    (7, 3, 2, 1, False),
    (1, 1, 1, 0, True),
]


def _pool_length(length: int, kernel_size: int, stride: int, padding: int, ceil_mode: bool) -> int:
    """What F.max_pool1d gives: the checker's only source of truth."""
    pooled = F.max_pool1d(torch.zeros(1, 1, length), kernel_size, stride, padding, ceil_mode=ceil_mode)
    return pooled.shape[-1]


def check_pool_output_length(pool_output_length: Callable[[int, int, int, int, bool], int]) -> None:
    """`pool_output_length(length, kernel_size, stride, padding, ceil_mode)` must match F.max_pool1d."""
    require(
        callable(pool_output_length),
        "Pass the function itself: check_pool_output_length(pool_output_length), without ().",
        "把函数本身传进去：check_pool_output_length(pool_output_length)，不要加 ()。",
    )
    answers = {}
    for case in POOL_CASES:
        want = _pool_length(*case)
        got = call_learner(pool_output_length, *case)
        require(
            isinstance(got, int) and not isinstance(got, bool),
            f"pool_output_length{case} returned {got!r}; return an int: divide with // (and round up by hand).",
            f"pool_output_length{case} 返回了 {got!r}；应返回 int：用 // 做除法（向上取整要自己写）。",
        )
        answers[case] = (got, want)
    wrong = [case for case, (got, want) in answers.items() if got != want]
    if not wrong:
        passed(
            f"pool_output_length agrees with F.max_pool1d on {len(POOL_CASES)} configurations",
            f"pool_output_length 在 {len(POOL_CASES)} 组参数上都与 F.max_pool1d 一致",
        )
        return
    got, want = answers[wrong[0]]
    where, where_zh = (
        f"pool_output_length{wrong[0]} gives {got}, expected {want}",
        f"pool_output_length{wrong[0]} 得到 {got}，应为 {want}",
    )
    for mistake, hint, hint_zh in _POOL_MISTAKES:  # name the mistake that explains every answer
        require(
            any(got != mistake(*case) for case, (got, _) in answers.items()),
            f"{where}: {hint}",
            f"{where_zh}：{hint_zh}",
        )
    require(
        False,
        f"{where}: count the windows that fit in the padded input, L + 2p long, one every s positions; with "
        "ceil_mode=True a last, partial window counts too, unless it would start in the right padding.",
        f"{where_zh}：数一数补零后长为 L + 2p 的输入里、每隔 s 个位置放一个，能放下多少个窗口；"
        "ceil_mode=True 时最后一个不完整的窗口也算，除非它从右侧填充区开始。",
    )


# Each typical mistake, written out as the learner would get it wrong (the checker never holds a right formula).
def _floor_always(n, k, s, p, ceil_mode):
    return (n + 2 * p - k) // s + 1


def _ceil_without_the_last_window_rule(n, k, s, p, ceil_mode):
    return math.ceil((n + 2 * p - k) / s) + 1 if ceil_mode else (n + 2 * p - k) // s + 1


def _padding_once(n, k, s, p, ceil_mode):
    return _pool_length(n - p, k, s, p, ceil_mode) if n > p and n + p >= k else -1


def _no_plus_one(n, k, s, p, ceil_mode):
    return _pool_length(n, k, s, p, ceil_mode) - 1


def _ceil_one_too_many(n, k, s, p, ceil_mode):
    if not ceil_mode:
        return (n + 2 * p - k) // s + 1
    windows = (n + 2 * p - k + s) // s + 1
    return windows - 1 if (windows - 1) * s >= n + p else windows


_POOL_MISTAKES = [
    (
        _floor_always,
        "ceil_mode=True rounds the division up, so a last, partial window counts.",
        "ceil_mode=True 时除法向上取整，最后那个不完整的窗口也要算上。",
    ),
    (
        _ceil_without_the_last_window_rule,
        "with ceil_mode a last window that would start in the right padding is dropped.",
        "ceil_mode 下，如果最后一个窗口的起点落在右侧填充区里，这个窗口要去掉。",
    ),
    (
        _ceil_one_too_many,
        "your rounding up adds a window even when the stride divides L + 2p - k exactly; then there is no "
        "partial window, and ceil_mode adds nothing.",
        "即使步幅恰好整除 L + 2p - k，你的向上取整也多加了一个窗口；这时并没有不完整的窗口，ceil_mode 什么也不加。",
    ),
    (
        _padding_once,
        "padding adds zeros on both sides: 2 * padding.",
        "两侧都会补零：要加 2 * padding。",
    ),
    (
        _no_plus_one,
        "count the first window too: + 1 at the end.",
        "别漏了第一个窗口：最后要 + 1。",
    ),
]


def _depthwise_by_loop(x: torch.Tensor, weight: torch.Tensor, padding_mode: str = "zeros") -> torch.Tensor:
    """Depthwise convolution the long way: output channel o convolves input channel o // m with weight[o]."""
    multiplier, pad = weight.shape[0] // x.shape[1], weight.shape[-1] // 2
    if padding_mode != "zeros":
        x, pad = F.pad(x, (pad,) * 4, mode=padding_mode), 0
    channels = [
        F.conv2d(x[:, o // multiplier : o // multiplier + 1], weight[o : o + 1], padding=pad)  # (N, 1, H, W)
        for o in range(weight.shape[0])
    ]
    return torch.cat(channels, dim=1)  # (N, C * m, H, W)


@contextmanager
def _counting_conv2d(calls: list[int]) -> Iterator[None]:
    """Count the calls of F.conv2d (nn.Conv2d goes through it) while the learner's code runs."""
    original = F.conv2d

    def conv2d(*args: object, **kwargs: object) -> torch.Tensor:
        calls[0] += 1
        return original(*args, **kwargs)

    F.conv2d = torch.conv2d = conv2d
    try:
        yield
    finally:
        F.conv2d = torch.conv2d = original


def _agree(got: torch.Tensor, want: torch.Tensor) -> bool:
    try:
        torch.testing.assert_close(got, want, check_dtype=False)
    except AssertionError:
        return False
    return True


def check_depthwise_conv(depthwise_conv: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """`depthwise_conv(x, weight)`: weight (C * m, 1, k, k); output channel o is input channel o // m convolved with
    weight[o], stride 1, zero padding that keeps H and W, in one call of F.conv2d."""
    require(
        callable(depthwise_conv),
        "Pass the function itself: check_depthwise_conv(depthwise_conv), without ().",
        "把函数本身传进去：check_depthwise_conv(depthwise_conv)，不要加 ()。",
    )
    generator = torch.Generator().manual_seed(3)
    # (shape of x, multiplier m, kernel size k, dtype, memory format of x)
    cases = [
        ((1, 3, 5, 5), 1, 3, torch.float32, torch.contiguous_format),
        ((2, 2, 6, 7), 3, 3, torch.float32, torch.channels_last),
        ((1, 3, 8, 8), 2, 5, torch.float64, torch.contiguous_format),
        ((3, 1, 4, 4), 2, 1, torch.float32, torch.contiguous_format),
    ]
    for shape, multiplier, kernel, dtype, memory_format in cases:
        x = torch.randn(shape, generator=generator, dtype=dtype).contiguous(memory_format=memory_format)
        weight = torch.randn(shape[1] * multiplier, 1, kernel, kernel, generator=generator, dtype=dtype)
        kind = str(dtype)[6:] + (", channels-last" if memory_format == torch.channels_last else "")
        where = f"depthwise_conv(<{kind} x of shape {shape}>, <weight of shape {tuple(weight.shape)}>)"
        where_zh = f"depthwise_conv(<形状为 {shape} 的 x（{kind}）>, <形状为 {tuple(weight.shape)} 的 weight>)"
        calls = [0]
        try:
            with _counting_conv2d(calls):
                got = call_learner(depthwise_conv, x.clone(memory_format=torch.preserve_format), weight.clone())
        except RuntimeError as error:
            groups = str(error).split("Given groups=", 1)[-1].split(",", 1)[0]
            require(
                groups != "1",
                f"{where} failed: a depthwise convolution needs groups=x.shape[1], one group per input channel.",
                f"{where_zh} 出错了：深度卷积需要 groups=x.shape[1]，每个输入通道一组。",
            )
            require(
                not groups.isdigit(),
                f"{where} failed with groups={groups}: groups counts the input channels (x.shape[1]), not the "
                "kernels (weight.shape[0]).",
                f"{where_zh} 在 groups={groups} 时出错：groups 数的是输入通道（x.shape[1]），"
                "不是卷积核（weight.shape[0]）。",
            )
            raise
        want = _depthwise_by_loop(x, weight)
        require(
            calls[0] <= 1,
            f"{where} calls F.conv2d {calls[0]} times; the exercise asks for one call that handles every channel "
            "at once.",
            f"{where_zh} 调用了 {calls[0]} 次 F.conv2d；练习要求只调用一次，一次处理所有通道。",
        )
        require(
            isinstance(got, torch.Tensor),
            f"{where} should return a tensor, not {type(got).__name__}.",
            f"{where_zh} 应该返回张量，而不是 {type(got).__name__}。",
        )
        require(
            got.shape == want.shape,
            f"{where} has shape {tuple(got.shape)}, expected {tuple(want.shape)}: pad by kernel_size // 2 (or "
            "padding='same') to keep H and W.",
            f"{where_zh} 的形状是 {tuple(got.shape)}，应为 {tuple(want.shape)}：填充 kernel_size // 2（或 "
            "padding='same'）才能保持 H 和 W 不变。",
        )
        require(
            got.dtype == x.dtype and got.device == x.device,
            f"{where} is a {got.dtype} tensor on {got.device}; expected {x.dtype} on {x.device}, like x.",
            f"{where_zh} 是位于 {got.device} 的 {got.dtype} 张量；应与 x 一样，是位于 {x.device} 的 {x.dtype}。",
        )
        if _agree(got, want):
            continue
        interleaved = F.conv2d(x.repeat(1, multiplier, 1, 1), weight, padding=kernel // 2, groups=weight.shape[0])
        require(
            not _agree(got, interleaved),
            f"{where}: your output channel o reads input channel o % C; the m kernels of one input channel are "
            "neighbours, so output channel o reads input channel o // m (x.repeat_interleave, not x.repeat).",
            f"{where_zh}：你的第 o 个输出通道读的是第 o % C 个输入通道；同一个输入通道的 m 个卷积核是相邻的，"
            "所以第 o 个输出通道应读第 o // m 个输入通道（用 x.repeat_interleave，而不是 x.repeat）。",
        )
        require(
            not _agree(got, _depthwise_by_loop(x, weight.flip(-2, -1))),
            f"{where}: the kernel is flipped; F.conv2d, like nn.Conv2d, slides the weight as it is "
            "(cross-correlation), so leave its orientation alone.",
            f"{where_zh}：卷积核被翻转了；F.conv2d 和 nn.Conv2d 一样，按原样滑动权重（互相关），不要改变它的方向。",
        )
        for mode in ("replicate", "reflect", "circular"):
            require(
                min(x.shape[-2:]) <= kernel // 2 or not _agree(got, _depthwise_by_loop(x, weight, mode)),
                f"{where}: the border is padded in {mode} mode; the exercise pads with zeros, as F.conv2d's "
                "padding does.",
                f"{where_zh}：边界用 {mode} 方式填充了；练习要求像 F.conv2d 的 padding 一样用 0 填充。",
            )
        require(
            False,
            f"{where} gives other numbers: check which input channel feeds each output channel, that the border "
            "is padded with zeros, and that each kernel is used as it is.",
            f"{where_zh} 的数值不对：请检查每个输出通道读的是哪个输入通道、边界是否用 0 填充、"
            "每个卷积核是否按原样使用。",
        )
    passed(
        f"depthwise_conv agrees with a per-channel loop on {len(cases)} cases, with 1 to 3 kernels per channel",
        f"depthwise_conv 在 {len(cases)} 组情形（每个通道 1 到 3 个卷积核）上都与逐通道循环一致",
    )
