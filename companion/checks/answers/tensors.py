"""Lesson 01's exercises for the teacher: reference answers, other correct answers and typical mistakes."""

import numpy as np
import torch

from companion.checks.tensors import OPERATIONS, check_center_rows, check_shares_memory, true_sharing
from companion.exercises import Exercise, Mistake


def _reference_center_rows(x: torch.Tensor) -> torch.Tensor:
    return x - x.mean(dim=1, keepdim=True)  # (n, m) - (n, 1)


def _right_centring_matrix(x: torch.Tensor) -> torch.Tensor:
    m = x.shape[1]
    eye, ones = torch.eye(m), torch.ones(m, m)
    return x @ (eye - ones / m)  # issue 22: rounding leaves ~1e-7 where the answer is exactly 0


def _right_indexing(x: torch.Tensor) -> torch.Tensor:
    return torch.sub(x, x.mean(1)[:, None])


def _right_float64_back(x: torch.Tensor) -> torch.Tensor:
    wide = x.double()
    return (wide - wide.mean(dim=-1, keepdim=True)).to(x.dtype)


def _right_sum_over_count(x: torch.Tensor) -> torch.Tensor:
    return x - x.sum(dim=-1, keepdim=True) / x.shape[1]


def _right_on_a_clone(x: torch.Tensor) -> torch.Tensor:
    return x.clone().sub_(x.mean(dim=1, keepdim=True))


def _no_keepdim(x: torch.Tensor) -> torch.Tensor:
    return x - x.mean(dim=1)  # (n, m) - (n,): lines up with the columns


def _unsqueezed_wrong_way(x: torch.Tensor) -> torch.Tensor:
    return x - x.mean(dim=1).unsqueeze(0)


def _in_place(x: torch.Tensor) -> torch.Tensor:
    x -= x.mean(dim=1, keepdim=True)
    return x


def _column_means(x: torch.Tensor) -> torch.Tensor:
    return x - x.mean(dim=0, keepdim=True)


def _reversed(x: torch.Tensor) -> torch.Tensor:
    return x.mean(dim=1, keepdim=True) - x


def _global_mean(x: torch.Tensor) -> torch.Tensor:
    return x - x.mean()


def _divided_by_rows(x: torch.Tensor) -> torch.Tensor:
    return x - x.sum(dim=1, keepdim=True) / x.shape[0]


def _standardised(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean(dim=1, keepdim=True)) / x.std(dim=1, keepdim=True, correction=0).clamp_min(1e-6)


def _median(x: torch.Tensor) -> torch.Tensor:
    return x - x.median(dim=1, keepdim=True).values


def _returned_in_float64(x: torch.Tensor) -> torch.Tensor:
    return x.double() - x.double().mean(dim=1, keepdim=True)


def _flipped(answers: dict[str, bool], *names: str) -> dict[str, bool]:
    return {name: (not value if name in names else value) for name, value in answers.items()}


_TRUTH = true_sharing()

EXERCISES = [
    Exercise(
        check=check_shares_memory,
        reference=dict(_TRUTH),
        mistakes=(
            Mistake(
                "every result is a copy",
                dict.fromkeys(OPERATIONS, False),
                "never copies",
                what_zh="认为每个结果都是副本",
            ),
            Mistake(
                "every result is a view",
                dict.fromkeys(OPERATIONS, True),
                "always gives a copy",
                what_zh="认为每个结果都是视图",
            ),
            Mistake(
                "reshape always gives a view",
                _flipped(_TRUTH, "x.t().reshape(12)"),
                "reshape returns a view",
                what_zh="认为 reshape 总是返回视图",
            ),
            Mistake(
                "contiguous() always copies",
                _flipped(_TRUTH, "x.contiguous()"),
                "returns the tensor itself",
                what_zh="认为 contiguous() 总会复制",
            ),
            Mistake("a transpose copies", _flipped(_TRUTH, "x.t()"), "a transpose is a view", what_zh="认为转置会复制"),
            Mistake(
                "x[::2] copies since it skips rows",
                _flipped(_TRUTH, "x[::2]"),
                "never copies",
                what_zh="认为 x[::2] 跳过了一些行，所以会复制",
            ),
            Mistake(
                "arithmetic gives a view", _flipped(_TRUTH, "x + 0"), "new memory", what_zh="认为算术运算得到的是视图"
            ),
            Mistake(
                "answers as strings",
                {name: str(v) for name, v in _TRUTH.items()},
                "not a string",
                what_zh="把答案写成字符串",
            ),
        ),
        why="A result can share x's storage only if its elements sit at an offset plus fixed strides in it: basic "
        "slicing, transposes and reshapes of contiguous tensors qualify; list/mask indexing and arithmetic do not.",
        why_zh="只有当结果的元素能用“起始位置 + 固定步幅”在 x 的存储里找到时，它才能与 x 共享内存：基本切片、转置、"
        "对连续张量的 reshape 都满足；列表或掩码索引以及算术运算则不满足。",
        discuss="Why does PyTorch copy for x[[0, 2]] even though rows 0 and 2 are evenly spaced?",
        discuss_zh="第 0 行和第 2 行明明是等距的，为什么 x[[0, 2]] 仍然会复制？",
        right=(
            dict(reversed(list(_TRUTH.items()))),  # another key order
            {name: np.bool_(v) for name, v in _TRUTH.items()},  # from a NumPy comparison
            {**_TRUTH, "x.view(12)": True},  # an extra key is ignored
        ),
    ),
    Exercise(
        check=check_center_rows,
        reference=_reference_center_rows,
        mistakes=(
            Mistake("mean without keepdim", _no_keepdim, "Keep the dimension", what_zh="求均值时没有加 keepdim"),
            Mistake(
                "mean unsqueezed as a row, not a column",
                _unsqueezed_wrong_way,
                "Keep the dimension",
                what_zh="把均值 unsqueeze 成一行，而不是一列",
            ),
            Mistake("subtracts in place", _in_place, "changed its argument number 1 in place", what_zh="原地做减法"),
            Mistake("column means", _column_means, "each column's mean", what_zh="减的是每列的均值"),
            Mistake(
                "mean - x: every sign flipped",
                _reversed,
                "each sign is flipped",
                what_zh="算成了 mean - x：正负号全反了",
            ),
            Mistake(
                "one mean for the whole tensor", _global_mean, "x.mean() without dim", what_zh="整个张量只用一个均值"
            ),
            Mistake(
                "row sums divided by the number of rows",
                _divided_by_rows,
                "the number of rows",
                what_zh="每行的和除以了行数",
            ),
            Mistake(
                "also divides by the row's spread", _standardised, "change nothing else", what_zh="还多除了每行的标准差"
            ),
            Mistake("subtracts the row's median", _median, "should have mean 0", what_zh="减的是每行的中位数"),
            Mistake(
                "returns float64 for a float32 input",
                _returned_in_float64,
                "in x's own dtype",
                what_zh="输入是 float32，却返回 float64",
            ),
        ),
        why="keepdim=True leaves the mean with shape (n, 1), so broadcasting stretches it along each row.",
        why_zh="keepdim=True 让均值的形状保持为 (n, 1)，于是广播会把它沿每一行展开。",
        discuss="Which inputs would let the keepdim mistake pass unnoticed, and why is a square test case needed?",
        discuss_zh="哪些输入会让漏掉 keepdim 的错误蒙混过关？为什么测试里需要一个方阵？",
        right=(_right_centring_matrix, _right_indexing, _right_float64_back, _right_sum_over_count, _right_on_a_clone),
    ),
]
