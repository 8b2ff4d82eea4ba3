"""Self-checks for lesson 01 (tensors): which results share memory with their source, and centring rows by
broadcasting without touching the input."""

from collections.abc import Callable

import numpy as np
import torch

from companion._torch_errors import BROADCAST_FAILED, says
from companion.exercises import call_learner, passed, require

# The operations of exercise 1, each applied to x = torch.arange(12.0).reshape(3, 4).
OPERATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "x[1]": lambda x: x[1],
    "x[:, 1]": lambda x: x[:, 1],
    "x[::2]": lambda x: x[::2],
    "x[[0, 2]]": lambda x: x[[0, 2]],
    "x[x > 5]": lambda x: x[x > 5],
    "x.t()": lambda x: x.t(),
    "x.reshape(2, 6)": lambda x: x.reshape(2, 6),
    "x.t().reshape(12)": lambda x: x.t().reshape(12),
    "x.contiguous()": lambda x: x.contiguous(),
    "x.t().contiguous()": lambda x: x.t().contiguous(),
    "x.clone()": lambda x: x.clone(),
    "x + 0": lambda x: x + 0,
}

# Which rule each operation tests, and the hint for a wrong prediction about it.
_SLICES = ("x[1]", "x[:, 1]", "x[::2]")
_ADVANCED = ("x[[0, 2]]", "x[x > 5]")
_HINTS = {
    _SLICES: (
        "Slicing with numbers and colons (x[1], x[:, 1], x[::2]) never copies: the result is a view with its own "
        "offset and strides into x's storage.",
        "用整数和冒号做切片（x[1]、x[:, 1]、x[::2]）从不复制：结果是视图，只是在 x 的存储上换了起始位置和步幅。",
    ),
    _ADVANCED: (
        "Reading with a list or a boolean mask (x[[0, 2]], x[x > 5]) always gives a copy, even when the picked "
        "elements happen to be evenly spaced. (Assigning through one, as in x[x > 5] = 0, writes into x.)",
        "用列表或布尔掩码做索引来读取（x[[0, 2]]、x[x > 5]）总会得到副本，哪怕选出的元素恰好等距排列。"
        "（通过它们赋值，例如 x[x > 5] = 0，则会写进 x。）",
    ),
    ("x.t()",): (
        "x.t() swaps the two strides and keeps the storage: a transpose is a view.",
        "x.t() 只是交换了两个步幅，存储不变：转置得到的是视图。",
    ),
    ("x.reshape(2, 6)", "x.t().reshape(12)"): (
        "reshape returns a view when the strides allow it (x is contiguous) and copies when they do not "
        "(x.t() is not contiguous, so x.t().reshape(12) must copy).",
        "reshape 在步幅允许时返回视图（x 是连续的），不允许时才复制（x.t() 不连续，所以 x.t().reshape(12) 必须复制）。",
    ),
    ("x.contiguous()", "x.t().contiguous()"): (
        "contiguous() returns the tensor itself when it already is contiguous (x), and a row-major copy when it "
        "is not (x.t()).",
        "contiguous() 对本来就连续的张量（x）直接返回它本身，对不连续的张量（x.t()）才按行优先顺序复制一份。",
    ),
    ("x.clone()", "x + 0"): (
        "clone() and arithmetic such as x + 0 always write their result into new memory.",
        "clone() 和 x + 0 这样的运算总是把结果写进新的内存。",
    ),
}


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when `a` and `b` read from the same storage (a view and its base do, a copy does not)."""
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def true_sharing() -> dict[str, bool]:
    """What PyTorch really does: for each operation, whether its result shares memory with x."""
    x = torch.arange(12.0).reshape(3, 4)
    return {name: shares_memory(op(x), x) for name, op in OPERATIONS.items()}


def check_shares_memory(predictions: dict[str, bool]) -> None:
    """`predictions` maps each name in OPERATIONS to True (the result shares memory with x) or False (a copy)."""
    require(
        isinstance(predictions, dict),
        "Pass a dict such as {'x[1]': True, ...}, one entry per operation.",
        "请传入一个字典，例如 {'x[1]': True, ...}，每个操作一项。",
    )
    missing = [name for name in OPERATIONS if name not in predictions]
    require(
        not missing,
        f"Predict every operation; missing: {missing}. Copy the keys from the exercise cell exactly.",
        f"每个操作都要预测；缺少：{missing}。请照抄练习单元格里的键。",
    )
    not_bool = [name for name in OPERATIONS if not isinstance(predictions[name], bool | np.bool_)]
    require(
        not not_bool,
        f"Each prediction is True (shares memory) or False (a copy), not a string, a number or a tensor; "
        f"not so for {not_bool[:3]}{' and more' if len(not_bool) > 3 else ''}.",
        f"每个预测都应是 True（共享内存）或 False（副本），不要写字符串、数字或张量；"
        f"{not_bool[:3]}{' 等' if len(not_bool) > 3 else ''}不是。",
    )
    truth = true_sharing()
    wrong = {name for name in OPERATIONS if bool(predictions[name]) != truth[name]}
    for names, (hint, hint_zh) in _HINTS.items():
        wrong_here = sorted(wrong & set(names), key=list(OPERATIONS).index)
        require(not wrong_here, f"Wrong for {wrong_here}. {hint}", f"{wrong_here} 预测错了。{hint_zh}")
    shared = sum(truth.values())
    passed(
        f"all {len(OPERATIONS)} predictions right: {shared} views, {len(OPERATIONS) - shared} copies",
        f"{len(OPERATIONS)} 个预测全对：{shared} 个视图，{len(OPERATIONS) - shared} 个副本。",
    )


def _centring_cases() -> list[torch.Tensor]:
    """Built fresh for every call. A square input (where a missing keepdim broadcasts silently, with a constant row
    whose centred values are exact zeros), a wide one (a divisor of x.shape[0] shows), one row, one column, and a
    seeded non-contiguous one (a transpose: .view on it fails)."""
    g = torch.Generator().manual_seed(1)
    square = torch.tensor([[1.0, 2.0, 6.0], [0.0, 0.0, 3.0], [4.0, 4.0, 4.0]])
    wide = torch.arange(10.0).reshape(2, 5) ** 2
    transposed = (torch.randn(6, 4, generator=g) * 3 + torch.arange(4.0) * 5).t()  # shape (4, 6), rows offset
    return [square, wide, torch.tensor([[3.0, -1.0, 2.0, 0.0]]), torch.tensor([[5.0], [7.0]]), transposed]


def _row_centred(x: torch.Tensor) -> torch.Tensor:
    """What the exercise asks for, computed in float64 from the row sums and given back in x's dtype."""
    wide = x.to(torch.float64)
    return (wide - wide.sum(dim=-1, keepdim=True) / wide.shape[-1]).to(x.dtype)


def _describe(x: torch.Tensor) -> str:
    """The input as a hint shows it: its values when short, else its shape."""
    return f"x = {x.tolist()}" if x.numel() <= 12 else f"the seeded x of shape {tuple(x.shape)}"


def _describe_zh(x: torch.Tensor) -> str:
    return f"x = {x.tolist()}" if x.numel() <= 12 else f"形状为 {tuple(x.shape)} 的随机输入 x"


# torch.testing.assert_close's default (rtol, atol) per dtype, applied with torch.allclose: assert_close itself imports
# torch.distributed and sympy on its first call, a second of the lesson's self-check for nothing it needs here.
_TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
}


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal within the tolerances of a's dtype (torch.testing.assert_close's defaults), shape and dtype included."""
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    rtol, atol = _TOLERANCES.get(a.dtype, (0.0, 0.0))  # integers and bools: exactly equal
    return torch.allclose(a, b, rtol=rtol, atol=atol)


def _broadcast_or_none(compute: Callable[[], torch.Tensor]) -> torch.Tensor | None:
    try:
        return compute()
    except RuntimeError:  # the slip cannot even run on this shape
        return None


# The slips a wrong result is compared with, each with its hint: (what it computes, English, Chinese).
_SLIPS: list[tuple[Callable[[torch.Tensor], torch.Tensor | None], str, str]] = [
    (
        lambda x: _broadcast_or_none(lambda: x - x.mean(1)),
        "On a square x, subtracting x.mean(dim=1) runs but takes row i's mean from column i: a mean of shape (n,) "
        "lines up with x's last dimension. Keep the dimension you averaged over, x.mean(dim=1, keepdim=True) of "
        "shape (n, 1), so the means form a column.",
        "当 x 是方阵时，减去 x.mean(dim=1) 不会报错，但它把第 i 行的均值减在了第 i 列上：形状为 (n,) 的均值对齐的是 "
        "x 的最后一个维度。请保留求平均的那个维度，用形状为 (n, 1) 的 x.mean(dim=1, keepdim=True)，让均值排成一列。",
    ),
    (
        lambda x: x - x.mean(0, keepdim=True),
        "You subtracted each column's mean (dim=0). A row runs along dim=1.",
        "你减去的是每一列的均值（dim=0）。一行上的元素是沿 dim=1 排列的。",
    ),
    (
        lambda x: -_row_centred(x),
        "Every row has mean 0, but each sign is flipped: you computed mean - x. Subtract the other way round.",
        "每一行的均值都是 0，但正负号全反了：你算的是 mean - x。请反过来减。",
    ),
    (
        lambda x: x - x.mean(),
        "You subtracted one number, the mean of the whole tensor: x.mean() without dim averages every element. "
        "Average each row on its own.",
        "你减去的是整个张量的均值这一个数：不带 dim 的 x.mean() 会对所有元素求平均。请对每一行分别求平均。",
    ),
    (
        lambda x: x - x.sum(1, keepdim=True) / x.shape[0],
        "You divided each row's sum by x.shape[0], the number of rows; a row holds x.shape[1] numbers.",
        "你把每一行的和除以了 x.shape[0]，也就是行数；而一行里有 x.shape[1] 个数。",
    ),
]


def check_center_rows(center_rows: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """`center_rows(x)` returns a new tensor: x minus the mean of each row, and leaves x unchanged."""
    require(
        callable(center_rows),
        "Pass the function itself: check_center_rows(center_rows), without ().",
        "把函数本身传进去：check_center_rows(center_rows)，不要加 ()。",
    )
    for x in _centring_cases():
        shape = tuple(x.shape)
        try:
            result = call_learner(center_rows, x)  # also: x is not changed in place, no global state touched
        except RuntimeError as error:
            require(
                not says(error, BROADCAST_FAILED),
                f"Broadcasting failed for shape {shape}: a row mean of shape (n,) lines up with x's last dimension, "
                "not with its rows. Keep the dimension you averaged over, x.mean(dim=1, keepdim=True), so the means "
                "form a column of shape (n, 1).",
                f"形状为 {shape} 时广播失败：形状为 (n,) 的行均值对齐的是 x 的最后一个维度，而不是行。"
                "请用 x.mean(dim=1, keepdim=True) 保留求平均的那个维度，让均值排成形状为 (n, 1) 的一列。",
            )
            raise
        require(
            isinstance(result, torch.Tensor),
            f"center_rows returned a {type(result).__name__}: return a tensor.",
            f"center_rows 返回的是 {type(result).__name__}：请返回一个张量。",
        )
        require(
            result.shape == x.shape,
            f"For x of shape {shape} return a tensor of the same shape; yours has shape {tuple(result.shape)}.",
            f"x 的形状是 {shape}，返回的张量形状也应相同；你的是 {tuple(result.shape)}。",
        )
        require(
            result.dtype == x.dtype,
            f"For x of dtype {x.dtype} your result has dtype {result.dtype}: give the result back in x's own dtype, "
            "whatever dtype you compute in.",
            f"x 的数据类型是 {x.dtype}，你的结果却是 {result.dtype}："
            "无论用什么类型计算，结果都要回到 x 自己的数据类型。",
        )
        require(
            result.device == x.device,
            f"x is on {x.device} but your result is on {result.device}: leave the result where x is.",
            f"x 在 {x.device} 上，你的结果却在 {result.device} 上：结果应留在 x 所在的设备上。",
        )
        expected = _row_centred(x)
        if _close(result, expected):
            continue
        for slip, hint, hint_zh in _SLIPS:
            wrong = slip(x)
            if wrong is not None and _close(result, wrong) and not _close(wrong, expected):
                require(False, hint, hint_zh)
        row_means = result.double().mean(dim=1)
        scale = 1.0 + x.abs().max().item()
        rows_centred = bool((row_means.abs() <= 1e-5 * scale).all())
        means = ", ".join(f"{v:.7g}" for v in row_means.tolist())
        require(
            False,
            f"For {_describe(x)} each row of the result should have mean 0; yours have means [{means}]."
            if not rows_centred
            else f"For {_describe(x)} your rows do have mean 0, but the values differ from x minus its row mean: "
            "subtract the row's mean and change nothing else (no scaling, no division).",
            f"对 {_describe_zh(x)}，结果每一行的均值都应为 0；你的结果各行均值为 [{means}]。"
            if not rows_centred
            else f"对 {_describe_zh(x)}，你的结果每一行的均值确实是 0，但数值与“x 减去行均值”不同："
            "只减去该行的均值，别的什么都不要改（不要缩放，也不要相除）。",
        )
    passed(
        "every row now has mean 0, on square, wide, one-row and one-column inputs, and x is untouched",
        "在方阵、宽矩阵、单行和单列输入上，每一行的均值都变成了 0，而且 x 没有被改动。",
    )
