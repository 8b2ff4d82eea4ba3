"""Self-checks for lesson 01 (tensors): which results share memory with their source, and centring rows by
broadcasting without touching the input."""

from collections.abc import Callable

import torch

from companion.exercises import Exercise, Mistake, passed, require

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
    require(
        all(isinstance(predictions[name], bool) for name in OPERATIONS),
        "Each prediction is True (shares memory) or False (a copy), not a string or a number.",
        "每个预测都应是 True（共享内存）或 False（副本），不要写字符串或数字。",
    )
    truth = true_sharing()
    wrong = {name for name in OPERATIONS if predictions[name] != truth[name]}
    for names, (hint, hint_zh) in _HINTS.items():
        wrong_here = sorted(wrong & set(names), key=list(OPERATIONS).index)
        require(not wrong_here, f"Wrong for {wrong_here}. {hint}", f"{wrong_here} 预测错了。{hint_zh}")
    shared = sum(truth.values())
    passed(
        f"all {len(OPERATIONS)} predictions right: {shared} views, {len(OPERATIONS) - shared} copies",
        f"{len(OPERATIONS)} 个预测全对：{shared} 个视图，{len(OPERATIONS) - shared} 个副本。",
    )


def _centring_cases() -> list[torch.Tensor]:
    """A square input (where a missing keepdim broadcasts silently), a wide one, one row, one column."""
    square = torch.tensor([[1.0, 2.0, 6.0], [0.0, 0.0, 3.0], [4.0, 4.0, 4.0]])
    wide = torch.arange(10.0).reshape(2, 5) ** 2
    return [square, wide, torch.tensor([[3.0, -1.0, 2.0, 0.0]]), torch.tensor([[5.0], [7.0]])]


def check_center_rows(center_rows: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """`center_rows(x)` returns a new tensor: x minus the mean of each row, and leaves x unchanged."""
    require(
        callable(center_rows),
        "Pass the function itself: check_center_rows(center_rows), without ().",
        "把函数本身传进去：check_center_rows(center_rows)，不要加 ()。",
    )
    for x in _centring_cases():
        before = x.clone()
        try:
            result = center_rows(x)
        except RuntimeError as error:
            require(
                "must match the size" not in str(error),
                f"Broadcasting failed for shape {tuple(x.shape)}: x.mean(dim=1) has shape (n,), which lines up "
                "with x's last dimension, not with its rows. Keep the dimension: x.mean(dim=1, keepdim=True).",
                f"形状为 {tuple(x.shape)} 时广播失败：x.mean(dim=1) 的形状是 (n,)，它对齐的是 x 的最后一个维度，"
                "而不是行。请保留这个维度：x.mean(dim=1, keepdim=True)。",
            )
            raise
        require(
            torch.equal(x, before),
            "x changed: you subtracted in place (x -= ... or x.sub_). Return x - mean, a new tensor, and leave x "
            "as it was.",
            "x 被改动了：你用了原地减法（x -= ... 或 x.sub_）。请返回 x - mean 这个新张量，保持 x 不变。",
        )
        require(
            isinstance(result, torch.Tensor) and result.shape == x.shape,
            f"For x of shape {tuple(x.shape)} return a tensor of the same shape.",
            f"x 的形状是 {tuple(x.shape)}，返回的张量形状也应相同。",
        )
        square = x.shape[0] == x.shape[1]
        require(
            not (square and torch.allclose(result, x - x.mean(dim=1))),
            "On a square x, x - x.mean(dim=1) runs but subtracts row i's mean from column i. Keep the dimension: "
            "x.mean(dim=1, keepdim=True) has shape (n, 1) and is stretched along each row.",
            "当 x 是方阵时，x - x.mean(dim=1) 不会报错，但它把第 i 行的均值减在了第 i 列上。请保留维度："
            "x.mean(dim=1, keepdim=True) 的形状是 (n, 1)，会沿每一行展开。",
        )
        require(
            not torch.allclose(result, x - x.mean(dim=0, keepdim=True)) or x.shape[0] == 1,
            "You subtracted each column's mean (dim=0). A row runs along dim=1.",
            "你减去的是每一列的均值（dim=0）。一行上的元素是沿 dim=1 排列的。",
        )
        expected = x - x.mean(dim=1, keepdim=True)
        require(
            not torch.allclose(result, -expected) or torch.allclose(expected, torch.zeros_like(x)),
            "Every row has mean 0, but each sign is flipped: you computed mean - x. Subtract the other way round, "
            "x - mean.",
            "每一行的均值都是 0，但正负号全反了：你算的是 mean - x。请反过来减：x - mean。",
        )
        require(
            not torch.allclose(result, x - x.mean()) or x.shape[0] == 1,
            "You subtracted one number, the mean of the whole tensor: x.mean() without dim averages every element. "
            "Average each row on its own with dim=1.",
            "你减去的是整个张量的均值这一个数：不带 dim 的 x.mean() 会对所有元素求平均。"
            "请用 dim=1 对每一行分别求平均。",
        )
        sums = [round(v, 4) for v in result.sum(dim=1).tolist()]
        rows_centred = torch.allclose(result.sum(dim=1), torch.zeros(x.shape[0]), atol=1e-5)
        require(
            torch.allclose(result, expected),
            f"For x = {x.tolist()} each row of the result should sum to 0; yours sum to {sums}."
            if not rows_centred
            else f"For x = {x.tolist()} your rows do have mean 0, but the values differ from x - row mean: "
            "subtract the row's mean and change nothing else (no scaling, no division).",
            f"对 x = {x.tolist()}，结果每一行的和都应为 0；你的结果各行之和为 {sums}。"
            if not rows_centred
            else f"对 x = {x.tolist()}，你的结果每一行的均值确实是 0，但数值与“x 减去行均值”不同："
            "只减去该行的均值，别的什么都不要改（不要缩放，也不要相除）。",
        )
    passed(
        "every row now has mean 0, on square, wide, one-row and one-column inputs, and x is untouched",
        "在方阵、宽矩阵、单行和单列输入上，每一行的均值都变成了 0，而且 x 没有被改动。",
    )


def _reference_center_rows(x: torch.Tensor) -> torch.Tensor:
    return x - x.mean(dim=1, keepdim=True)  # (n, m) - (n, 1)


def _no_keepdim(x: torch.Tensor) -> torch.Tensor:
    return x - x.mean(dim=1)  # (n, m) - (n,): lines up with the columns


def _in_place(x: torch.Tensor) -> torch.Tensor:
    x -= x.mean(dim=1, keepdim=True)
    return x


def _column_means(x: torch.Tensor) -> torch.Tensor:
    return x - x.mean(dim=0, keepdim=True)


def _reversed(x: torch.Tensor) -> torch.Tensor:
    return x.mean(dim=1, keepdim=True) - x


def _global_mean(x: torch.Tensor) -> torch.Tensor:
    return x - x.mean()


def _standardised(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean(dim=1, keepdim=True)) / x.std(dim=1, keepdim=True, correction=0).clamp_min(1e-6)


def _flipped(answers: dict[str, bool], *names: str) -> dict[str, bool]:
    return {name: (not value if name in names else value) for name, value in answers.items()}


_TRUTH = true_sharing()

EXERCISES = [
    Exercise(
        check=check_shares_memory,
        reference=dict(_TRUTH),
        mistakes=(
            Mistake("every result is a copy", dict.fromkeys(OPERATIONS, False), "never copies"),
            Mistake("every result is a view", dict.fromkeys(OPERATIONS, True), "always gives a copy"),
            Mistake("reshape always gives a view", _flipped(_TRUTH, "x.t().reshape(12)"), "reshape returns a view"),
            Mistake("contiguous() always copies", _flipped(_TRUTH, "x.contiguous()"), "returns the tensor itself"),
            Mistake("a transpose copies", _flipped(_TRUTH, "x.t()"), "a transpose is a view"),
        ),
        why="A result can share x's storage only if its elements sit at an offset plus fixed strides in it: basic "
        "slicing, transposes and reshapes of contiguous tensors qualify; list/mask indexing and arithmetic do not.",
        why_zh="只有当结果的元素能用“起始位置 + 固定步幅”在 x 的存储里找到时，它才能与 x 共享内存：基本切片、转置、"
        "对连续张量的 reshape 都满足；列表或掩码索引以及算术运算则不满足。",
        discuss="Why does PyTorch copy for x[[0, 2]] even though rows 0 and 2 are evenly spaced?",
        discuss_zh="第 0 行和第 2 行明明是等距的，为什么 x[[0, 2]] 仍然会复制？",
    ),
    Exercise(
        check=check_center_rows,
        reference=_reference_center_rows,
        mistakes=(
            Mistake("mean without keepdim", _no_keepdim, "Keep the dimension"),
            Mistake("subtracts in place", _in_place, "x changed"),
            Mistake("column means", _column_means, "each column's mean"),
            Mistake("mean - x: every sign flipped", _reversed, "each sign is flipped"),
            Mistake("one mean for the whole tensor", _global_mean, "x.mean() without dim"),
            Mistake("also divides by the row's spread", _standardised, "change nothing else"),
        ),
        why="keepdim=True leaves the mean with shape (n, 1), so broadcasting stretches it along each row.",
        why_zh="keepdim=True 让均值的形状保持为 (n, 1)，于是广播会把它沿每一行展开。",
        discuss="Which inputs would let the keepdim mistake pass unnoticed, and why is a square test case needed?",
        discuss_zh="哪些输入会让漏掉 keepdim 的错误蒙混过关？为什么测试里需要一个方阵？",
    ),
]
