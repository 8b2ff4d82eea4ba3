"""Lesson 03: `scatter_` as one readable loop, and a picture of where each element lands.

The exercise self-checks live apart, in companion/checks/scatter.py.
"""

import itertools
import math
from collections.abc import Callable

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from companion._validate import require_int
from companion.language import by_language, in_language, say
from companion.plotting import COLUMN_WIDTH

REDUCTIONS: dict[str, Callable] = {
    "sum": lambda old, new: old + new,
    "prod": lambda old, new: old * new,
    "amax": max,
    "amin": min,
}


def scatter_reference(
    self: torch.Tensor,
    dim: int,
    index: torch.Tensor,
    src: torch.Tensor | float,
    reduce: str | None = None,
) -> torch.Tensor:
    """`torch.scatter` (or `scatter_reduce` with include_self=True) as one loop, for teaching and tests.

    For every position p of `index`: out[p with coordinate `dim` replaced by index[p]] = src[p] (or src, a number).
    """
    _check_scatter_args(self, dim, index, src, reduce)
    if index.numel() == 0:  # no position to visit: nothing is written
        return self.clone()
    if min(t.dim() for t in (self, index, src) if isinstance(t, torch.Tensor)) == 0:
        # PyTorch counts a 0-d tensor as a 1-d tensor of one element: () -> (1,), and self back to its shape
        as_1d = [t.reshape(1) if isinstance(t, torch.Tensor) and t.dim() == 0 else t for t in (self, index, src)]
        return scatter_reference(as_1d[0], dim, as_1d[1], as_1d[2], reduce).reshape(self.shape)
    dim = dim % self.dim()
    out = self.clone()
    for position in itertools.product(*(range(n) for n in index.shape)):  # every position p of index
        target = list(position)
        target[dim] = int(index[position])  # the one coordinate that index chooses
        target = tuple(target)
        value = src[position] if isinstance(src, torch.Tensor) else src
        out[target] = value if reduce is None else REDUCTIONS[reduce](out[target], value)
    return out


# Argument checks: below the taught code. They apply PyTorch's rules, with messages that say what to pass instead.


def _check_scatter_args(self, dim, index, src, reduce) -> None:
    if not isinstance(self, torch.Tensor) or not isinstance(index, torch.Tensor):
        raise TypeError(
            in_language(
                "self and index must be tensors, e.g. torch.zeros(2, 4) and torch.tensor([[2, 3]])",
                "self 和 index 必须是张量，例如 torch.zeros(2, 4) 和 torch.tensor([[2, 3]])",
            )
        )
    require_int(dim, "dim")
    ndim = max(self.dim(), 1)
    if not -ndim <= dim < ndim:
        raise ValueError(
            in_language(
                f"dim must be in [{-ndim}, {ndim - 1}] for a {self.dim()}-d tensor, not {dim}",
                f"dim 必须在 [{-ndim}, {ndim - 1}] 内（对 {self.dim()} 维张量而言），而不是 {dim}",
            )
        )
    if reduce is not None and reduce not in REDUCTIONS:
        raise ValueError(
            in_language(
                f"reduce must be None or one of {sorted(REDUCTIONS)}, not {reduce!r}",
                f"reduce 必须是 None 或 {sorted(REDUCTIONS)} 之一，而不是 {reduce!r}",
            )
        )
    if isinstance(src, torch.Tensor):
        if src.dtype != self.dtype:
            raise TypeError(
                in_language(
                    f"src is {src.dtype} but self is {self.dtype}: pass src.to(self.dtype)",
                    f"src 是 {src.dtype}，而 self 是 {self.dtype}：请传入 src.to(self.dtype)",
                )
            )
    elif not isinstance(src, bool | int | float):
        kind = type(src).__name__
        raise TypeError(
            in_language(
                f"src must be a tensor or a Python number, not {kind}", f"src 必须是张量或 Python 数，而不是 {kind}"
            )
        )
    elif self.is_floating_point() and math.isfinite(src) and abs(src) > torch.finfo(self.dtype).max:
        # like PyTorch: a finite number too large for self's data type is an error, not inf
        largest = torch.finfo(self.dtype).max
        raise ValueError(
            in_language(
                f"{src} does not fit in {self.dtype}: pass a number of at most {largest}",
                f"{src} 超出了 {self.dtype} 的范围：请传入不超过 {largest} 的数",
            )
        )
    if index.numel() == 0:  # like PyTorch: no index data-type, dimension or size checks for an empty index
        return
    if index.dtype not in (torch.int64, torch.int32):
        raise TypeError(
            in_language(
                f"index must hold integers, not {index.dtype}: pass index.long()",
                f"index 必须存放整数，而不是 {index.dtype}：请传入 index.long()",
            )
        )

    # like PyTorch, count a 0-d tensor as 1-d of size 1 (ensure_nonempty_dim and ensure_nonempty_size)
    def ndim_of(t):
        return max(t.dim(), 1)

    def size_of(t, d):
        return t.shape[d] if t.dim() else 1

    if ndim_of(index) != ndim:
        raise ValueError(
            in_language(
                f"index has {index.dim()} dimensions but self has {self.dim()}: give index the same number of "
                "dimensions (for a 1-d target, use target.unsqueeze(1))",
                f"index 有 {index.dim()} 个维度，而 self 有 {self.dim()} 个：请让 index 的维度数与 self 相同"
                "（一维的 target 请用 target.unsqueeze(1)）",
            )
        )
    if isinstance(src, torch.Tensor) and ndim_of(src) != ndim:
        raise ValueError(
            in_language(
                f"src has {src.dim()} dimensions but self has {self.dim()}: they must match",
                f"src 有 {src.dim()} 个维度，而 self 有 {self.dim()} 个：两者必须相同",
            )
        )
    dim = dim % ndim
    for d in range(ndim):
        if d != dim and size_of(index, d) > size_of(self, d):
            raise ValueError(
                in_language(
                    f"index is larger than self in dimension {d} ({size_of(index, d)} > {size_of(self, d)}): outside "
                    "dim, index may be smaller than self but never larger; slice index to fit",
                    f"index 在维度 {d} 上比 self 大（{size_of(index, d)} > {size_of(self, d)}）：在 dim 以外的维度上，"
                    "index 可以比 self 小，但不能更大；请把 index 切成合适的大小",
                )
            )
        if isinstance(src, torch.Tensor) and size_of(index, d) > size_of(src, d):
            raise ValueError(
                in_language(
                    f"index is larger than src in dimension {d} ({size_of(index, d)} > {size_of(src, d)}): every "
                    "index position needs a src element; use a larger src or a smaller index",
                    f"index 在维度 {d} 上比 src 大（{size_of(index, d)} > {size_of(src, d)}）：index 的每个位置"
                    "都需要一个 src 元素；请用更大的 src 或更小的 index",
                )
            )
    size = size_of(self, dim)
    low, high = int(index.min()), int(index.max())  # over all elements of index
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        raise ValueError(
            in_language(
                f"index holds {bad}, but dimension {dim} of self has size {size}: use values 0..{size - 1} "
                "(negative indices are not wrapped around)",
                f"index 里有 {bad}，但 self 的维度 {dim} 大小为 {size}：请用 0..{size - 1} 的值"
                "（负数索引不会从末尾倒数）",
            )
        )


# The picture. Called only with the lesson's own tensors, so it has no argument checks of its own.


def plot_scatter(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> Figure:
    """Draw 2-d `src`, `index` and `self` after `scatter_(dim, index, src)`: each src element in its own colour,
    the index cell that sends it in the same colour with the index value written in it, and the cell it lands in."""
    out = scatter_reference(self, dim, index, src)
    colours = plt.get_cmap("Set3").colors  # light, so the black numbers stay readable
    landed = {}  # target cell -> source cell; the last write wins, as in the reference loop
    for row, col in itertools.product(range(index.shape[0]), range(index.shape[1])):
        target = (int(index[row, col]), col) if dim == 0 else (row, int(index[row, col]))
        landed[target] = (row, col)

    def colour_of(cell):
        return colours[(cell[0] * src.shape[1] + cell[1]) % len(colours)]

    in_index = {(r, c) for r, c in itertools.product(range(index.shape[0]), range(index.shape[1]))}
    panels = [
        (
            src,
            by_language("src", "src（源）", "src（源）"),
            lambda r, c: colour_of((r, c)) if (r, c) in in_index else None,
        ),
        (index, by_language("index", "index（索引）", "index（索引）"), lambda r, c: colour_of((r, c))),
        (
            out,
            by_language("self after scatter_", "scatter_ 之后的 self（结果）", "self after scatter_（结果）"),
            lambda r, c: colour_of(landed[(r, c)]) if (r, c) in landed else None,
        ),
    ]
    widths = [tensor.shape[1] for tensor, _, _ in panels]
    cell = min(0.6, (COLUMN_WIDTH - 1.5) / sum(widths))  # inches per cell, so that the figure fits the column
    rows = max(tensor.shape[0] for tensor, _, _ in panels)
    fig, axes = plt.subplots(
        1,
        3,
        figsize=(min(COLUMN_WIDTH, cell * sum(widths) + 1.5), cell * rows + 1.2),
        width_ratios=widths,
        layout="constrained",
    )
    for ax, (tensor, title, fill) in zip(axes, panels, strict=True):
        for r, c in itertools.product(range(tensor.shape[0]), range(tensor.shape[1])):
            colour = fill(r, c)
            ax.add_patch(plt.Rectangle((c, r), 1, 1, facecolor=colour or "white", edgecolor="0.3"))
            ax.text(c + 0.5, r + 0.5, f"{tensor[r, c].item():g}", ha="center", va="center", fontsize=11)
        ax.set_xlim(0, tensor.shape[1])
        ax.set_ylim(rows, 0)  # every panel on the same row scale, row 0 at the top
        ax.set_aspect("equal")
        ax.set_xticks([c + 0.5 for c in range(tensor.shape[1])], range(tensor.shape[1]))
        ax.set_yticks([r + 0.5 for r in range(tensor.shape[0])], range(tensor.shape[0]))
        ax.tick_params(length=0, top=True, labeltop=True, bottom=False, labelbottom=False)  # columns on top
        for spine in ax.spines.values():
            spine.set_visible(False)
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel(say("row", "行"))  # and the column numbers along the top
    return fig
