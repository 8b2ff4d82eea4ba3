"""Lesson 05 (Conv2d), the teacher's part: reference answers, other correct answers and typical mistakes."""

import math

import torch
import torch.nn.functional as F

from companion.checks.conv import check_depthwise_conv, check_pool_output_length
from companion.exercises import Exercise, Mistake

# Exercise 1 ---------------------------------------------------------------------------------------------------------


def _pool_reference(length: int, kernel_size: int, stride: int, padding: int, ceil_mode: bool) -> int:
    """The pooling output length, written out: the conv formula, rounded up with ceil_mode, minus a window that
    would start in the right padding."""
    steps = length + 2 * padding - kernel_size
    out = (-(-steps // stride) if ceil_mode else steps // stride) + 1
    if ceil_mode and (out - 1) * stride >= length + padding:
        out -= 1
    return out


def _right_pool_math_ceil(n, k, s, p, ceil_mode):
    rounding = math.ceil if ceil_mode else math.floor
    out = rounding((n + 2 * p - k) / s) + 1
    last_start = (out - 1) * s - p  # in the coordinates of the unpadded input
    return out - 1 if ceil_mode and last_start >= n else out


def _right_pool_full_then_partial(n, k, s, p, ceil_mode):
    full = (n + 2 * p - k) // s + 1  # windows that fit entirely
    partial = ceil_mode and (n + 2 * p - k) % s != 0 and full * s < n + p  # a last one, starting before the padding
    return full + int(partial)


def _pool_floor_always(n, k, s, p, ceil_mode):
    return (n + 2 * p - k) // s + 1


def _pool_ceil_without_the_last_window_rule(n, k, s, p, ceil_mode):
    return (-(-(n + 2 * p - k) // s) if ceil_mode else (n + 2 * p - k) // s) + 1


def _pool_ceil_one_too_many(n, k, s, p, ceil_mode):
    steps = n + 2 * p - k
    out = ((steps + s) // s if ceil_mode else steps // s) + 1  # one too many when s divides steps
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_padding_once(n, k, s, p, ceil_mode):
    return _pool_reference(n - p, k, s, p, ceil_mode)


def _pool_no_plus_one(n, k, s, p, ceil_mode):
    return _pool_reference(n, k, s, p, ceil_mode) - 1


def _pool_float(n, k, s, p, ceil_mode):
    return (n + 2 * p - k) / s + 1


# Exercise 2 ---------------------------------------------------------------------------------------------------------


def _depthwise_reference(x, weight):
    return F.conv2d(x, weight, padding=weight.shape[-1] // 2, groups=x.shape[1])


def _right_depthwise_interleaved(x, weight):
    multiplier = weight.shape[0] // x.shape[1]
    return F.conv2d(x.repeat_interleave(multiplier, dim=1), weight, padding="same", groups=weight.shape[0])


def _right_depthwise_padded_first(x, weight):
    half = weight.shape[-1] // 2
    return F.conv2d(F.pad(x, (half, half, half, half)), weight, groups=x.shape[1])


def _right_depthwise_positional(x, weight):
    return torch.conv2d(x, weight, None, 1, "same", 1, x.shape[1])  # bias, stride, padding, dilation, groups


def _depthwise_without_groups(x, weight):
    return F.conv2d(x, weight, padding=weight.shape[-1] // 2)


def _depthwise_groups_per_kernel(x, weight):
    return F.conv2d(x, weight, padding=weight.shape[-1] // 2, groups=weight.shape[0])


def _depthwise_without_padding(x, weight):
    return F.conv2d(x, weight, groups=x.shape[1])


def _depthwise_channels_repeated(x, weight):
    multiplier = weight.shape[0] // x.shape[1]
    return F.conv2d(x.repeat(1, multiplier, 1, 1), weight, padding=weight.shape[-1] // 2, groups=weight.shape[0])


def _depthwise_flipped_kernel(x, weight):
    return F.conv2d(x, weight.flip(-2, -1), padding=weight.shape[-1] // 2, groups=x.shape[1])


def _depthwise_replicate_padding(x, weight):
    half = weight.shape[-1] // 2
    return F.conv2d(F.pad(x, (half, half, half, half), mode="replicate"), weight, groups=x.shape[1])


def _depthwise_loop_over_channels(x, weight):
    multiplier, half = weight.shape[0] // x.shape[1], weight.shape[-1] // 2
    outputs = [
        F.conv2d(x[:, c : c + 1], weight[c * multiplier : (c + 1) * multiplier], padding=half)
        for c in range(x.shape[1])
    ]
    return torch.cat(outputs, dim=1)


EXERCISES = [
    Exercise(
        check=check_pool_output_length,
        reference=_pool_reference,
        mistakes=(
            Mistake("ignores ceil_mode: always rounds down", _pool_floor_always, "rounds the division up"),
            Mistake(
                "rounds up but keeps a window that starts in the padding",
                _pool_ceil_without_the_last_window_rule,
                "start in the right padding",
            ),
            Mistake("rounds up with (steps + s) // s", _pool_ceil_one_too_many, "divides L + 2p - k exactly"),
            Mistake("pads one side only: L + p", _pool_padding_once, "both sides"),
            Mistake("forgets the first window: no + 1", _pool_no_plus_one, "count the first window"),
            Mistake("returns a float: / instead of //", _pool_float, "return an int"),
        ),
        right=(_right_pool_math_ceil, _right_pool_full_then_partial),
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
            Mistake("flips the kernel (true convolution)", _depthwise_flipped_kernel, "the kernel is flipped"),
            Mistake("replicate padding instead of zeros", _depthwise_replicate_padding, "padded in replicate mode"),
            Mistake("one F.conv2d call per input channel", _depthwise_loop_over_channels, "asks for one call"),
        ),
        right=(_right_depthwise_interleaved, _right_depthwise_padded_first, _right_depthwise_positional),
        why="With groups = C, group c holds input channel c and m consecutive kernels: output channels c*m to "
        "c*m + m - 1.",
        why_zh="groups = C 时，第 c 组只有第 c 个输入通道，以及相邻的 m 个卷积核："
        "也就是第 c*m 到 c*m + m - 1 个输出通道。",
        discuss="How many weights does a depthwise layer with multiplier m save against a full convolution?",
        discuss_zh="与普通卷积相比，通道倍数为 m 的深度卷积少用了多少权重？",
    ),
]
