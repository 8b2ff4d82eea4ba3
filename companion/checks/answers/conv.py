"""Lesson 05 (Conv2d), the teacher's part: reference answers, other correct answers and typical mistakes."""

import math

import torch
import torch.nn.functional as F

from companion.checks.conv import check_causal_conv1d, check_pool_output_length
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


def _causal_conv1d(x, weight, dilation):
    reach = dilation * (weight.shape[-1] - 1)  # the window spans d(k-1) + 1 steps, ending at step t
    return F.conv1d(F.pad(x, (reach, 0)), weight, dilation=dilation)  # zeros before step 0 only


def _right_causal_cropped(x, weight, dilation):
    both_ends = F.conv1d(x, weight, padding=dilation * (weight.shape[-1] - 1), dilation=dilation)
    return both_ends[..., : x.shape[-1]]  # the first L steps: windows that end at steps 0..L-1


def _right_causal_conv2d(x, weight, dilation):
    padded = F.pad(x, (dilation * (weight.shape[-1] - 1), 0)).unsqueeze(2)  # (N, C_in, 1, L + reach)
    return F.conv2d(padded, weight.unsqueeze(2), dilation=(1, dilation)).squeeze(2)  # a height of 1


def _right_causal_by_taps(x, weight, dilation):
    kernel, length = weight.shape[-1], x.shape[-1]
    out = 0
    for tap in range(kernel):  # tap j reads the step d(k-1-j) back from t
        delayed = F.pad(x, (dilation * (kernel - 1 - tap), 0))[..., :length]  # (N, C_in, L)
        out = out + torch.einsum("oc,ncl->nol", weight[:, :, tap], delayed)
    return out


def _causal_same_padding(x, weight, dilation):
    return F.conv1d(x, weight, padding="same", dilation=dilation)


def _causal_padded_on_the_right(x, weight, dilation):
    return F.conv1d(F.pad(x, (0, dilation * (weight.shape[-1] - 1))), weight, dilation=dilation)


def _causal_last_steps_kept(x, weight, dilation):
    both_ends = F.conv1d(x, weight, padding=dilation * (weight.shape[-1] - 1), dilation=dilation)
    return both_ends[..., -x.shape[-1] :]


def _causal_both_ends_uncropped(x, weight, dilation):
    return F.conv1d(x, weight, padding=dilation * (weight.shape[-1] - 1), dilation=dilation)


def _causal_padding_ignores_dilation(x, weight, dilation):
    return F.conv1d(F.pad(x, (weight.shape[-1] - 1, 0)), weight, dilation=dilation)


def _causal_conv_without_dilation(x, weight, dilation):
    return F.conv1d(F.pad(x, (dilation * (weight.shape[-1] - 1), 0)), weight)


def _causal_flipped_kernel(x, weight, dilation):
    return F.conv1d(F.pad(x, (dilation * (weight.shape[-1] - 1), 0)), weight.flip(-1), dilation=dilation)


def _causal_replicate_padding(x, weight, dilation):
    padded = F.pad(x, (dilation * (weight.shape[-1] - 1), 0), mode="replicate")
    return F.conv1d(padded, weight, dilation=dilation)


EXERCISES = [
    Exercise(
        check=check_pool_output_length,
        reference=_pool_reference,
        mistakes=(
            Mistake(
                "ignores ceil_mode: always rounds down",
                _pool_floor_always,
                "rounds the division up",
                what_zh="忽略 ceil_mode：总是向下取整",
            ),
            Mistake(
                "rounds up but keeps a window that starts in the padding",
                _pool_ceil_without_the_last_window_rule,
                "start in the right padding",
                what_zh="向上取整，却多算了一个从填充区开始的窗口",
            ),
            Mistake(
                "rounds up with (steps + s) // s",
                _pool_ceil_one_too_many,
                "divides L + 2p - k exactly",
                what_zh="用 (steps + s) // s 向上取整",
            ),
            Mistake("pads one side only: L + p", _pool_padding_once, "both sides", what_zh="只算了一侧的填充：L + p"),
            Mistake(
                "forgets the first window: no + 1",
                _pool_no_plus_one,
                "count the first window",
                what_zh="漏掉第一个窗口：少了 + 1",
            ),
            Mistake(
                "returns a float: / instead of //", _pool_float, "return an int", what_zh="返回浮点数：用了 / 而不是 //"
            ),
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
        check=check_causal_conv1d,
        reference=_causal_conv1d,
        mistakes=(
            Mistake("padding='same'", _causal_same_padding, "sees later steps of x", what_zh="用 padding='same'"),
            Mistake(
                "pads on the right: F.pad(x, (0, reach))",
                _causal_padded_on_the_right,
                "(left, right)",
                what_zh="在右侧填充：F.pad(x, (0, reach))",
            ),
            Mistake(
                "pads both ends, keeps the last L steps",
                _causal_last_steps_kept,
                "(left, right)",
                what_zh="两端都填充，保留最后 L 步",
            ),
            Mistake(
                "pads both ends, keeps every step",
                _causal_both_ends_uncropped,
                "pads both ends",
                what_zh="两端都填充，所有步都保留",
            ),
            Mistake(
                "pads k - 1, not d(k - 1)",
                _causal_padding_ignores_dilation,
                "not k =",
                what_zh="填充 k - 1 个，而不是 d(k - 1) 个",
            ),
            Mistake(
                "forgets dilation= in F.conv1d",
                _causal_conv_without_dilation,
                "pass dilation=",
                what_zh="F.conv1d 里漏传 dilation=",
            ),
            Mistake("flips the kernel", _causal_flipped_kernel, "the kernel is flipped", what_zh="把卷积核翻转了"),
            Mistake(
                "replicate padding",
                _causal_replicate_padding,
                "repeats x's first value",
                what_zh="用 replicate 模式填充",
            ),
        ),
        right=(_right_causal_cropped, _right_causal_conv2d, _right_causal_by_taps),
        why="F.conv1d's window for output step t starts at padded step t; with all d(k-1) zeros before step 0 "
        "it ends at x's step t, so no output step sees a later one, and the output keeps x's length L.",
        why_zh="F.conv1d 第 t 个输出步的窗口从补零后的第 t 步开始；把 d(k-1) 个零全部补在第 0 步之前，"
        "窗口就正好在 x 的第 t 步结束，于是没有哪个输出步能看到之后的步，输出长度也保持为 L。",
        discuss="How many layers of kernel size 2, with dilations 1, 2, 4, ..., does a causal stack need to see "
        "1,024 past steps, and how many would it need without dilation?",
        discuss_zh="卷积核尺寸为 2、空洞率依次为 1、2、4……的因果卷积层，要叠多少层才能看到过去 1,024 步？"
        "不用空洞率又要多少层？",
    ),
]
