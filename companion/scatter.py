"""Lesson 01: `scatter_` in plain Python, a picture of where each element lands, and the exercise checks."""

import itertools
from collections.abc import Callable

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure

from companion.exercises import passed, require

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
    """`torch.scatter` (or `scatter_reduce` with include_self=True) as one readable loop, for teaching and tests.

    For every position p of `index`: out[p with p[dim] replaced by index[p]] = src[p] (or src, a number).
    """
    _check_scatter_args(self, dim, index, src, reduce)
    if self.dim() == 0:  # PyTorch treats a 0-d tensor as one element
        one_src = src.reshape(1) if isinstance(src, torch.Tensor) else src
        return scatter_reference(self.reshape(1), 0, index.reshape(1), one_src, reduce).reshape(())
    dim = dim % self.dim()
    out = self.clone()
    for position in itertools.product(*(range(n) for n in index.shape)):
        target = list(position)
        target[dim] = int(index[position])
        target = tuple(target)
        value = src[position] if isinstance(src, torch.Tensor) else src
        out[target] = value if reduce is None else REDUCTIONS[reduce](out[target], value)
    return out


def _check_scatter_args(self, dim, index, src, reduce) -> None:
    """Apply PyTorch's rules for scatter arguments, with messages that say what to pass instead."""
    if not isinstance(self, torch.Tensor) or not isinstance(index, torch.Tensor):
        raise TypeError("self and index must be tensors, e.g. torch.zeros(2, 4) and torch.tensor([[2, 3]])")
    if index.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"index must hold integers, not {index.dtype}: pass index.long()")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"dim must be an int, not {type(dim).__name__}")
    ndim = max(self.dim(), 1)
    if not -ndim <= dim < ndim:
        raise ValueError(f"dim must be in [{-ndim}, {ndim - 1}] for a {self.dim()}-d tensor, not {dim}")
    if index.dim() != self.dim():
        raise ValueError(
            f"index has {index.dim()} dimensions but self has {self.dim()}: give index the same number of "
            "dimensions (for a 1-d target, use target.unsqueeze(1))"
        )
    if reduce is not None and reduce not in REDUCTIONS:
        raise ValueError(f"reduce must be None or one of {sorted(REDUCTIONS)}, not {reduce!r}")
    if isinstance(src, torch.Tensor):
        if src.dtype != self.dtype:
            raise TypeError(f"src is {src.dtype} but self is {self.dtype}: pass src.to(self.dtype)")
        if src.dim() != self.dim():
            raise ValueError(f"src has {src.dim()} dimensions but self has {self.dim()}: they must match")
    elif not isinstance(src, bool | int | float):
        raise TypeError(f"src must be a tensor or a Python number, not {type(src).__name__}")
    if index.numel() == 0:  # PyTorch checks nothing else for an empty index
        return
    dim = dim % ndim
    for d in range(index.dim()):
        if d != dim and index.shape[d] > self.shape[d]:
            raise ValueError(
                f"index is larger than self in dimension {d} ({index.shape[d]} > {self.shape[d]}): outside dim, "
                "index may be smaller than self but never larger; slice index to fit"
            )
        if isinstance(src, torch.Tensor) and index.shape[d] > src.shape[d]:
            raise ValueError(
                f"index is larger than src in dimension {d} ({index.shape[d]} > {src.shape[d]}): every index "
                "position needs a src element; use a larger src or a smaller index"
            )
    size = self.shape[dim] if self.dim() else 1
    low, high = int(index.min()), int(index.max())
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        raise ValueError(
            f"index holds {bad}, but dimension {dim} of self has size {size}: use values 0..{size - 1} "
            "(negative indices are not wrapped around)"
        )


def plot_scatter(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> Figure:
    """Draw a 2-d `src`, and `self` after `scatter_(dim, index, src)`, each src element in its own colour."""
    if not all(isinstance(t, torch.Tensor) for t in (self, index, src)):
        raise TypeError(
            "self, index and src must be tensors, e.g. torch.zeros(2, 4), torch.tensor([[2, 3]]) and torch.ones(2, 4)"
        )
    if self.dim() != 2 or src.dim() != 2:
        raise ValueError("plot_scatter draws 2-d tensors only: pass self and src with two dimensions")
    out = scatter_reference(self, dim, index, src)
    colours = plt.get_cmap("tab10").colors
    landed = {}  # target cell -> source cell, the last write wins as in the reference loop
    for row, col in itertools.product(range(index.shape[0]), range(index.shape[1])):
        target = (int(index[row, col]), col) if dim == 0 else (row, int(index[row, col]))
        landed[target] = (row, col)
    fig, (ax_src, ax_out) = plt.subplots(1, 2, figsize=(3.2 + 0.8 * (src.shape[1] + self.shape[1]), 3.0))

    def colour_of(cell):
        return colours[(cell[0] * src.shape[1] + cell[1]) % len(colours)]

    def draw(ax, tensor, title, fill):
        for r, c in itertools.product(range(tensor.shape[0]), range(tensor.shape[1])):
            colour = fill(r, c)
            ax.add_patch(plt.Rectangle((c, r), 1, 1, facecolor=colour or "white", edgecolor="0.3"))
            ax.text(c + 0.5, r + 0.5, f"{tensor[r, c].item():g}", ha="center", va="center", fontsize=11)
        ax.set_xlim(0, tensor.shape[1])
        ax.set_ylim(tensor.shape[0], 0)
        ax.set_aspect("equal")
        ax.set_xticks([c + 0.5 for c in range(tensor.shape[1])], range(tensor.shape[1]))
        ax.set_yticks([r + 0.5 for r in range(tensor.shape[0])], range(tensor.shape[0]))
        ax.tick_params(length=0)
        ax.set_xlabel("column / 列")
        ax.set_ylabel("row / 行")
        for spine in ax.spines.values():
            spine.set_visible(False)
        ax.set_title(title, fontsize=11)

    in_index = {(r, c) for r, c in itertools.product(range(index.shape[0]), range(index.shape[1]))}
    draw(ax_src, src, "src (源)", lambda r, c: colour_of((r, c)) if (r, c) in in_index else None)
    draw(
        ax_out,
        out,
        f"self after scatter_(dim={dim}) / 结果",
        lambda r, c: colour_of(landed[(r, c)]) if (r, c) in landed else None,
    )
    fig.tight_layout()
    return fig


def check_one_hot(one_hot: Callable[[torch.Tensor, int], torch.Tensor]) -> None:
    """Self-check: `one_hot(target, num_classes)` must equal F.one_hot(...).float() and leave target untouched."""
    require(callable(one_hot), "Pass the function itself: check_one_hot(one_hot), without ().")
    cases = [
        (torch.tensor([3, 3, 3, 0]), 5),
        (torch.tensor([0]), 1),
        (torch.tensor([2, 0, 1]), 3),
        (torch.randint(0, 10, (32,), generator=torch.Generator().manual_seed(1)), 10),
        (torch.zeros(0, dtype=torch.long), 4),
    ]
    for target, num_classes in cases:
        before = target.clone()
        got = one_hot(target, num_classes)
        want = F.one_hot(target, num_classes).float()
        where = f"one_hot({target.tolist()}, {num_classes})"
        require(isinstance(got, torch.Tensor), f"{where} should return a tensor, not {type(got).__name__}.")
        require(torch.equal(target, before), f"{where} changed target: scatter into a new zeros tensor instead.")
        require(
            got.shape == want.shape,
            f"{where} has shape {tuple(got.shape)}, expected {tuple(want.shape)}: start from "
            "torch.zeros(len(target), num_classes).",
        )
        require(
            got.dtype == torch.float32,
            f"{where} is {got.dtype}; return float32 (the default of torch.zeros) so it can weight a loss.",
        )
        require(
            torch.equal(got, want),
            f"{where} puts its 1s in the wrong place: scatter along dim=1 with index target.unsqueeze(1).",
        )
    passed(f"one_hot agrees with F.one_hot on {len(cases)} cases, including an empty batch")


def check_label_counts(count_labels: Callable[[torch.Tensor, int], torch.Tensor]) -> None:
    """Self-check: `count_labels(labels, num_classes)` must count each class like torch.bincount."""
    require(callable(count_labels), "Pass the function itself: check_label_counts(count_labels), without ().")
    cases = [
        (torch.tensor([1, 1, 1]), 3),
        (torch.tensor([0, 2, 2, 4, 2]), 5),
        (torch.randint(0, 7, (100,), generator=torch.Generator().manual_seed(2)), 7),
        (torch.zeros(0, dtype=torch.long), 2),
    ]
    for labels, num_classes in cases:
        got = count_labels(labels, num_classes)
        want = torch.bincount(labels, minlength=num_classes)
        where = f"count_labels(<{labels.numel()} labels>, {num_classes})"
        require(isinstance(got, torch.Tensor), f"{where} should return a tensor, not {type(got).__name__}.")
        require(got.shape == want.shape, f"{where} has shape {tuple(got.shape)}; expected ({num_classes},).")
        marks_only = torch.equal(got.long(), (want > 0).long()) and bool((want > 1).any())
        require(
            not marks_only,
            f"{where} only marks which labels occur: scatter_ overwrites repeats, scatter_add_ adds them up.",
        )
        require(
            torch.equal(got.long(), want) and not got.is_floating_point(),
            f"{where} gives {got.tolist()}; expected integer counts {want.tolist()}: start from "
            "torch.zeros(num_classes, dtype=torch.long) and scatter_add_ torch.ones_like(labels).",
        )
    passed(f"count_labels agrees with torch.bincount on {len(cases)} cases, repeats included")
