"""Self-checks for lesson 05 (Conv2d): the pooling output length with ceil_mode, and depthwise convolution with a
channel multiplier. Each checker compares behaviour with PyTorch and names the typical mistake it recognises."""

from collections.abc import Callable

import torch
import torch.nn.functional as F

from companion.exercises import Exercise, Mistake, passed, require

# (length, kernel_size, stride, padding, ceil_mode): floor and ceil differ, and two cases drop a last window
# that would start in the right padding.
POOL_CASES = [
    (28, 2, 2, 0, False),
    (5, 2, 2, 0, False),
    (5, 2, 2, 0, True),
    (10, 3, 3, 0, True),
    (32, 3, 2, 1, True),
    (5, 3, 3, 1, True),
    (6, 4, 4, 2, True),
    (9, 2, 3, 1, True),
    (7, 3, 2, 1, False),
    (1, 1, 1, 0, True),
]


def _pool_reference(length: int, kernel_size: int, stride: int, padding: int, ceil_mode: bool) -> int:
    """The pooling output length, written out: the conv formula, rounded up with ceil_mode, minus a window that
    would start in the right padding."""
    steps = length + 2 * padding - kernel_size
    out = (-(-steps // stride) if ceil_mode else steps // stride) + 1
    if ceil_mode and (out - 1) * stride >= length + padding:
        out -= 1
    return out


def check_pool_output_length(pool_output_length: Callable[[int, int, int, int, bool], int]) -> None:
    """`pool_output_length(length, kernel_size, stride, padding, ceil_mode)` must match F.max_pool1d."""
    require(
        callable(pool_output_length),
        "Pass the function itself: check_pool_output_length(pool_output_length), without ().",
        "把函数本身传进去：check_pool_output_length(pool_output_length)，不要加 ()。",
    )
    answers = {}
    for case in POOL_CASES:
        length, kernel, stride, padding, ceil_mode = case
        want = F.max_pool1d(torch.zeros(1, 1, length), kernel, stride, padding, ceil_mode=ceil_mode).shape[-1]
        got = pool_output_length(*case)
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
        f"{where}: floor((L + 2p - k) / s) + 1, rounded up instead with ceil_mode=True, unless the last window "
        "would start in the right padding.",
        f"{where_zh}：floor((L + 2p - k) / s) + 1；ceil_mode=True 时改为向上取整，"
        "但最后一个窗口若从右侧填充区开始就不算。",
    )


def _floor_always(n, k, s, p, ceil_mode):
    return (n + 2 * p - k) // s + 1


def _ceil_without_the_last_window_rule(n, k, s, p, ceil_mode):
    return (-(-(n + 2 * p - k) // s) if ceil_mode else (n + 2 * p - k) // s) + 1


def _padding_once(n, k, s, p, ceil_mode):
    return _pool_reference(n - p, k, s, p, ceil_mode)


def _no_plus_one(n, k, s, p, ceil_mode):
    return _pool_reference(n, k, s, p, ceil_mode) - 1


_POOL_MISTAKES = [
    (
        _floor_always,
        "ceil_mode=True rounds the division up, so a last, partial window counts.",
        "ceil_mode=True 时除法向上取整，最后那个不完整的窗口也要算上。",
    ),
    (
        _ceil_without_the_last_window_rule,
        "with ceil_mode a last window that would start in the right padding is dropped: if (out - 1) * s >= L + p, "
        "subtract 1.",
        "ceil_mode 下，如果最后一个窗口的起点落在右侧填充区里，这个窗口要去掉：(out - 1) * s >= L + p 时减 1。",
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


def _depthwise_by_loop(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Depthwise convolution the long way: output channel o convolves input channel o // m with weight[o]."""
    multiplier, padding = weight.shape[0] // x.shape[1], weight.shape[-1] // 2
    channels = [
        F.conv2d(x[:, o // multiplier : o // multiplier + 1], weight[o : o + 1], padding=padding)  # (N, 1, H, W)
        for o in range(weight.shape[0])
    ]
    return torch.cat(channels, dim=1)  # (N, C * m, H, W)


def check_depthwise_conv(depthwise_conv: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """`depthwise_conv(x, weight)`: weight (C * m, 1, k, k); output channel o is input channel o // m convolved with
    weight[o], stride 1, zero padding that keeps H and W."""
    require(
        callable(depthwise_conv),
        "Pass the function itself: check_depthwise_conv(depthwise_conv), without ().",
        "把函数本身传进去：check_depthwise_conv(depthwise_conv)，不要加 ()。",
    )
    generator = torch.Generator().manual_seed(3)
    cases = [((1, 3, 5, 5), 1, 3), ((2, 2, 6, 7), 3, 3), ((1, 3, 8, 8), 2, 5), ((3, 1, 4, 4), 2, 1)]
    for shape, multiplier, kernel in cases:
        x = torch.randn(shape, generator=generator)
        weight = torch.randn(shape[1] * multiplier, 1, kernel, kernel, generator=generator)
        where = f"depthwise_conv(<x of shape {shape}>, <weight of shape {tuple(weight.shape)}>)"
        where_zh = f"depthwise_conv(<形状为 {shape} 的 x>, <形状为 {tuple(weight.shape)} 的 weight>)"
        try:
            got = depthwise_conv(x, weight)
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
        if torch.allclose(got, want, atol=1e-5):
            continue
        interleaved = F.conv2d(x.repeat(1, multiplier, 1, 1), weight, padding=kernel // 2, groups=weight.shape[0])
        require(
            not torch.allclose(got, interleaved, atol=1e-5),
            f"{where}: your output channel o reads input channel o % C; the m kernels of one input channel are "
            "neighbours, so output channel o reads input channel o // m (x.repeat_interleave, not x.repeat).",
            f"{where_zh}：你的第 o 个输出通道读的是第 o % C 个输入通道；同一个输入通道的 m 个卷积核是相邻的，"
            "所以第 o 个输出通道应读第 o // m 个输入通道（用 x.repeat_interleave，而不是 x.repeat）。",
        )
        require(
            False,
            f"{where} gives other numbers: each output channel must see only its own input channel, through "
            "F.conv2d(x, weight, padding=..., groups=x.shape[1]).",
            f"{where_zh} 的数值不对：每个输出通道只能看到它自己的输入通道，可以用 "
            "F.conv2d(x, weight, padding=..., groups=x.shape[1])。",
        )
    passed(
        f"depthwise_conv agrees with a per-channel loop on {len(cases)} cases, with 1 to 3 kernels per channel",
        f"depthwise_conv 在 {len(cases)} 组情形（每个通道 1 到 3 个卷积核）上都与逐通道循环一致",
    )


def _depthwise_reference(x, weight):
    return F.conv2d(x, weight, padding=weight.shape[-1] // 2, groups=x.shape[1])


def _depthwise_without_groups(x, weight):
    return F.conv2d(x, weight, padding=weight.shape[-1] // 2)


def _depthwise_groups_per_kernel(x, weight):
    return F.conv2d(x, weight, padding=weight.shape[-1] // 2, groups=weight.shape[0])


def _depthwise_without_padding(x, weight):
    return F.conv2d(x, weight, groups=x.shape[1])


def _depthwise_channels_repeated(x, weight):
    multiplier = weight.shape[0] // x.shape[1]
    return F.conv2d(x.repeat(1, multiplier, 1, 1), weight, padding=weight.shape[-1] // 2, groups=weight.shape[0])


EXERCISES = [
    Exercise(
        check=check_pool_output_length,
        reference=_pool_reference,
        mistakes=(
            Mistake("ignores ceil_mode: always rounds down", _floor_always, "rounds the division up"),
            Mistake(
                "rounds up but keeps a window that starts in the padding",
                _ceil_without_the_last_window_rule,
                "start in the right padding",
            ),
            Mistake("pads one side only: L + p", _padding_once, "both sides"),
            Mistake("forgets the first window: no + 1", _no_plus_one, "count the first window"),
            Mistake("returns a float: / instead of //", lambda n, k, s, p, c: (n + 2 * p - k) / s + 1, "return an int"),
        ),
        why="Pooling slides a window like a convolution, so the conv formula holds with d = 1 and the stride "
        "defaulting to the kernel size; ceil_mode rounds up, but never starts a window in the right padding.",
        why_zh="池化窗口的滑动方式和卷积一样，所以卷积的公式照样成立（d = 1，步幅默认等于窗口大小）；"
        "ceil_mode 向上取整，但不会让窗口从右侧填充区开始。",
        discuss="Why would a window that lies entirely in the padding be useless for max pooling?",
        discuss_zh="一个完全落在填充区里的窗口，对最大池化来说为什么毫无意义？",
    ),
    Exercise(
        check=check_depthwise_conv,
        reference=_depthwise_reference,
        mistakes=(
            Mistake("forgets groups", _depthwise_without_groups, "needs groups=x.shape[1]"),
            Mistake(
                "one group per kernel: groups=weight.shape[0]",
                _depthwise_groups_per_kernel,
                "groups counts the input channels",
            ),
            Mistake("no padding", _depthwise_without_padding, "pad by kernel_size // 2"),
            Mistake("x.repeat instead of repeat_interleave", _depthwise_channels_repeated, "o // m"),
        ),
        why="With groups = C, group c holds input channel c and m consecutive kernels: output channels c*m to "
        "c*m + m - 1.",
        why_zh="groups = C 时，第 c 组只有第 c 个输入通道，以及相邻的 m 个卷积核："
        "也就是第 c*m 到 c*m + m - 1 个输出通道。",
        discuss="How many weights does a depthwise layer with multiplier m save against a full convolution?",
        discuss_zh="与普通卷积相比，通道倍数为 m 的深度卷积少用了多少权重？",
    ),
]
