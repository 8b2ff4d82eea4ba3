"""Self-checks for lesson 05 (Conv2d): the pooling output length with ceil_mode, and a causal dilated 1-d
convolution. Each checker compares behaviour with PyTorch and names the typical mistake it recognises."""

import math
from collections.abc import Callable, Iterator

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


# Exercise 2 ---------------------------------------------------------------------------------------------------------

# (shape of x, C_out, kernel size k, dilation d, dtype): an odd and an even kernel, dilations 1 to 3, an input
# shorter than the kernel's span, a 1-tap kernel (nothing to pad), float64; the last x is not contiguous.
CAUSAL_CASES = [
    ((1, 1, 6), 1, 3, 1, torch.float32),
    ((2, 3, 10), 4, 3, 2, torch.float32),
    ((1, 2, 7), 2, 2, 3, torch.float32),
    ((2, 1, 3), 1, 3, 2, torch.float32),
    ((1, 2, 5), 3, 1, 2, torch.float32),
    ((1, 2, 12), 1, 4, 1, torch.float64),
    ((3, 2, 9), 2, 3, 3, torch.float32),
]


def _agree(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Equal within assert_close's default tolerances for the dtype (shapes must match)."""
    try:
        torch.testing.assert_close(got, want, check_dtype=False)
    except AssertionError:
        return False
    return True


def _causal_cases() -> Iterator[tuple[torch.Tensor, torch.Tensor, int]]:
    generator = torch.Generator().manual_seed(5)
    for number, ((n, c_in, length), c_out, kernel, dilation, dtype) in enumerate(CAUSAL_CASES):
        if number == 0:  # small numbers to read in a hint: x = 1..6, the kernel [1, 10, 100]
            yield torch.arange(1.0, 7.0).view(1, 1, 6), torch.tensor([[[1.0, 10.0, 100.0]]]), dilation
            continue
        x = torch.randn(n, c_in, length, generator=generator, dtype=dtype)
        if number == len(CAUSAL_CASES) - 1:
            x = x.transpose(1, 2).contiguous().transpose(1, 2)  # the same values, strided as (N, L, C)
        yield x, torch.randn(c_out, c_in, kernel, generator=generator, dtype=dtype), dilation


def check_causal_conv1d(causal_conv1d: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]) -> None:
    """`causal_conv1d(x, weight, dilation)`: x (N, C_in, L), weight (C_out, C_in, k) -> (N, C_out, L), whose step t is
    F.conv1d's kernel (stride 1, that dilation) applied to the window of x that ends at step t, zeros before step 0.
    Judged against F.conv1d padded on both sides and cut to the first L steps, and by what a change of x's later
    steps does to the earlier outputs."""
    require(
        callable(causal_conv1d),
        "Pass the function itself: check_causal_conv1d(causal_conv1d), without ().",
        "把函数本身传进去：check_causal_conv1d(causal_conv1d)，不要加 ()。",
    )
    for x, weight, dilation in _causal_cases():
        length, kernel = x.shape[-1], weight.shape[-1]
        reach = dilation * (kernel - 1)  # how far back the window reaches from its last step
        want = F.conv1d(x, weight, padding=reach, dilation=dilation)[..., :length]
        where = f"causal_conv1d(<x of shape {tuple(x.shape)}>, <weight of shape {tuple(weight.shape)}>, {dilation})"
        if x.dtype == torch.float64:
            where = where.replace("<x of", "<float64 x of")
        got = call_learner(causal_conv1d, x, weight, dilation)
        require(
            isinstance(got, torch.Tensor),
            f"{where} should return a tensor, not {type(got).__name__}.",
            f"{where} 应该返回张量，而不是 {type(got).__name__}。",
        )
        steps = got.shape[-1] if got.dim() == 3 else None
        require(
            not (steps == length + reach and reach > 0),
            f"{where} has {steps} steps, expected {length}: padding= in F.conv1d pads both ends, so the output "
            "grows by the padding; keep only the steps whose window ends inside x.",
            f"{where} 有 {steps} 步，应为 {length}：F.conv1d 的 padding= 在两端都补零，输出也就多出了填充的长度；"
            "只保留窗口末端落在 x 之内的那些步。",
        )
        require(
            not (steps == length - reach + kernel - 1 and dilation > 1 and kernel > 1),
            f"{where} has {steps} steps, expected {length}: with dilation {dilation} the kernel's window spans "
            f"d(k-1) + 1 = {reach + 1} steps, not k = {kernel}; the zeros before step 0 must fill that span.",
            f"{where} 有 {steps} 步，应为 {length}：空洞率为 {dilation} 时，卷积核的窗口跨越 d(k-1) + 1 = "
            f"{reach + 1} 步，而不是 k = {kernel} 步；补在第 0 步之前的零要填满这个跨度。",
        )
        require(
            not (steps == length + reach - kernel + 1 and dilation > 1 and kernel > 1),
            f"{where} has {steps} steps, expected {length}: the padding allows for dilation {dilation}, but the "
            "convolution itself runs without it: pass dilation= to F.conv1d too.",
            f"{where} 有 {steps} 步，应为 {length}：填充考虑了空洞率 {dilation}，卷积本身却没有用它："
            "F.conv1d 也要传入 dilation=。",
        )
        require(
            got.shape == want.shape,
            f"{where} has shape {tuple(got.shape)}, expected {tuple(want.shape)}: one output step for each step "
            "of x, one channel for each kernel.",
            f"{where} 的形状是 {tuple(got.shape)}，应为 {tuple(want.shape)}：x 的每一步对应一个输出步，"
            "每个卷积核对应一个通道。",
        )
        require(
            got.dtype == x.dtype and got.device == x.device,
            f"{where} is a {got.dtype} tensor on {got.device}; expected {x.dtype} on {x.device}, like x.",
            f"{where} 是位于 {got.device} 的 {got.dtype} 张量；应与 x 一样，是位于 {x.device} 的 {x.dtype}。",
        )
        if _agree(got, want):
            continue
        ahead = F.conv1d(x, weight, padding=reach, dilation=dilation)[..., reach:]  # windows that start at step t
        require(
            not _agree(got, ahead),
            f"{where}: your step t reads x from step t to step t + {reach}, the future. The window must end at "
            "step t, so the zeros go before step 0: F.pad's pair for the last dimension is (left, right).",
            f"{where}：你的第 t 步读的是 x 的第 t 步到第 t + {reach} 步，也就是未来。窗口应该在第 t 步结束，"
            "所以零要补在第 0 步之前：F.pad 给最后一个维度的一对数是（左，右）。",
        )
        later = x.clone()
        later[..., length // 2 + 1 :] += 1.0  # change every step after the middle one
        moved = call_learner(causal_conv1d, later, weight, dilation)
        require(
            _agree(moved[..., : length // 2 + 1], got[..., : length // 2 + 1]),
            f"{where}: changing x after step {length // 2} changes your output at step {length // 2} or before, "
            "so an output step sees later steps of x. A causal convolution puts all the zeros before step 0; "
            "padding= (or 'same') pads both ends.",
            f"{where}：改动 x 在第 {length // 2} 步之后的值，你在第 {length // 2} 步及之前的输出也跟着变了，"
            "说明某个输出步看到了 x 后面的步。因果卷积要把零全部补在第 0 步之前；padding=（或 'same'）会在两端都补。",
        )
        require(
            not _agree(got, F.conv1d(F.pad(x, (reach, 0)), weight.flip(-1), dilation=dilation)),
            f"{where}: the kernel is flipped. F.conv1d slides the weight as it is (cross-correlation): its last "
            "tap multiplies step t, the newest step; leave its orientation alone.",
            f"{where}：卷积核被翻转了。F.conv1d 按原样滑动权重（互相关）：它的最后一个权重乘的是第 t 步，"
            "也就是最新的一步；不要改变它的方向。",
        )
        require(
            not _agree(got, F.conv1d(F.pad(x, (reach, 0), mode="replicate"), weight, dilation=dilation)),
            f"{where}: before step 0 your signal repeats x's first value; the steps before 0 are zeros.",
            f"{where}：你在第 0 步之前重复了 x 的第一个值；第 0 步之前应该全是 0。",
        )
        require(
            False,
            f"{where} gives other numbers: step t must be the kernel applied to the window of x that ends at step "
            f"t, {reach + 1} steps wide with dilation {dilation}, with zeros where it reaches before step 0.",
            f"{where} 的数值不对：第 t 步应该是卷积核作用在 x 上以第 t 步结尾的窗口上的结果；空洞率为 {dilation} 时"
            f"这个窗口宽 {reach + 1} 步，伸到第 0 步之前的部分为 0。",
        )
    passed(
        f"causal_conv1d agrees with F.conv1d on {len(CAUSAL_CASES)} cases, dilations 1 to 3, and never looks ahead",
        f"causal_conv1d 在 {len(CAUSAL_CASES)} 组情形（空洞率 1 到 3）上都与 F.conv1d 一致，而且从不看未来",
    )
