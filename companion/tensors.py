"""Lesson 01: tensors. Two pictures: strides and views (one storage drawn as a row of cells, and several tensors
that read it, each cell marked with the storage position it reads), and broadcasting (each operand stretched to the
common shape by a stride of 0, and the result).

The lesson's own code is in the notebook; this module holds the figure, which needs more drawing code than a lesson
cell should show. The position of element (i, j, ...) is the lesson's formula: offset + i * stride[0] + j * stride[1]
+ ... The exercise self-checks live in `companion/checks/tensors.py`.
"""

import itertools

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from companion.language import by_language, in_language, say
from companion.plotting import COLUMN_WIDTH


def _storage_positions(x: torch.Tensor) -> torch.Tensor:
    """The storage position each element of `x` reads: offset + sum over dimensions of index * stride."""
    positions = torch.tensor(x.storage_offset())  # () : broadcasts against every dimension below
    for dim, (size, stride) in enumerate(zip(x.shape, x.stride(), strict=True)):
        steps = torch.arange(size) * stride  # (size,): the steps along this dimension
        positions = positions + steps.reshape([size if d == dim else 1 for d in range(x.dim())])  # x's shape so far
    return positions.expand(x.shape)  # x.shape, also for a 0-d x


def _storage_values(x: torch.Tensor) -> torch.Tensor:
    """Every element of x's storage in order, as a 1-d view of that storage."""
    count = x.untyped_storage().nbytes() // x.element_size()
    return x.as_strided((count,), (1,), 0)  # (count,): offset 0 and stride 1 over the same storage


# The picture (called only with the lesson's own tensors, so no argument checks). ------------------------------------


def _grid(ax, values: torch.Tensor, positions: torch.Tensor | None, colours, faded=None) -> None:
    """Draw a 1-d or 2-d tensor as cells: its value in the middle, the storage position it reads below it (white
    cells and no position when `positions` is None); cells where the bool tensor `faded` is True are drawn light."""
    rows, cols = (1, values.shape[0]) if values.dim() == 1 else tuple(values.shape)
    for r, c in itertools.product(range(rows), range(cols)):
        index = (c,) if values.dim() == 1 else (r, c)
        light = faded is not None and bool(faded[index])
        colour = "white" if positions is None else colours[int(positions[index]) % len(colours)]
        ax.add_patch(plt.Rectangle((c, r), 1, 1, facecolor=colour, edgecolor="0.3", alpha=0.4 if light else 1.0))
        ax.text(c + 0.5, r + 0.42, f"{values[index].item()}", ha="center", va="center", fontsize=13)
        if positions is not None:
            ax.text(c + 0.5, r + 0.82, f"@{int(positions[index])}", ha="center", va="center", fontsize=10, color="0.25")
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)  # row 0 at the top, as a tensor prints
    ax.set_aspect("equal")
    ax.set_xticks([])  # no ticks to lay out: the title is placed faster
    ax.set_yticks([])
    ax.set_axis_off()


def plot_views(views: dict[str, torch.Tensor]) -> Figure:
    """Draw the storage of the first tensor as a row of cells (position under each), then each tensor of `views`
    (1-d or 2-d, all over that one storage) as a grid: each cell shows its value and "@p", the storage position p
    it reads, in the colour of that position in the row."""
    first = next(iter(views.values()))
    storage = _storage_values(first)
    colours = plt.get_cmap("Pastel1").colors  # light, so the black numbers stay readable
    shapes = [(1, v.shape[0]) if v.dim() == 1 else tuple(v.shape) for v in views.values()]
    tallest = max(rows for rows, _ in shapes)
    fig = plt.figure(figsize=(COLUMN_WIDTH, 1.0 + 0.62 * tallest + 1.3), layout="constrained")
    grid = fig.add_gridspec(2, len(views), height_ratios=(1.0, tallest), width_ratios=[c for _, c in shapes])
    top = fig.add_subplot(grid[0, :])
    _grid(top, storage, torch.arange(storage.numel()), colours)
    top.set_title(
        by_language("storage: position @0, @1, ...", "存储：位置 @0, @1, ...", "storage / 存储: position @0, @1, ..."),
        fontsize=10,
    )
    for column, (name, view) in enumerate(views.items()):
        ax = fig.add_subplot(grid[1, column])
        _grid(ax, view, _storage_positions(view), colours)
        ax.set_ylim(tallest, 0)  # every grid on the same scale, aligned at the top
        offset = f"{in_language(', offset', '，偏移')} {view.storage_offset()}" if view.storage_offset() else ""
        ax.set_title(f"{name}\n{_stride(view.stride())}{offset}", fontsize=10)
    return fig


def _read_again(positions: torch.Tensor) -> torch.Tensor:
    """True for each cell whose storage position an earlier cell (in row order) already read."""
    seen: set[int] = set()
    again = []
    for position in positions.flatten().tolist():
        again.append(position in seen)
        seen.add(position)
    return torch.tensor(again).reshape(positions.shape)


def plot_broadcast(a: torch.Tensor, b: torch.Tensor) -> Figure:
    """Draw `a` and `b` (at most 2-d) as broadcasting reads them (light cells: stride 0 repeats), then `a + b`."""
    a_read, b_read = torch.broadcast_tensors(a, b)  # both of the common shape, views of a and b
    total = a + b
    rows, cols = (1, total.shape[0]) if total.dim() == 1 else tuple(total.shape)
    palette = plt.get_cmap("Pastel1").colors  # light, so the black numbers stay readable
    split = _storage_values(a).numel()  # a's positions take the first colours, b's the next ones
    count = split + _storage_values(b).numel()
    if count > len(palette):  # one colour per storage position, none used twice
        raise ValueError(
            in_language(
                f"plot_broadcast draws small tensors: a and b read {count} storage positions, the picture has "
                f"{len(palette)} colours; pass smaller tensors, such as a[:3] and b[:4]",
                f"plot_broadcast 只画小张量：a 和 b 读取 {count} 个存储位置，而图里只有 {len(palette)} 种颜色；"
                "请传入更小的张量，例如 a[:3] 和 b[:4]",
            )
        )
    fig = plt.figure(figsize=(COLUMN_WIDTH, 0.5 * rows + 1.2), layout="constrained")
    grid = fig.add_gridspec(1, 5, width_ratios=(cols, 0.6, cols, 0.6, cols))
    panels = [(0, "a", a, a_read, palette[:split]), (2, "b", b, b_read, palette[split:])]
    for column, name, operand, read, colours in panels:
        ax = fig.add_subplot(grid[0, column])
        positions = _storage_positions(read)
        _grid(ax, read, positions, colours, faded=_read_again(positions))
        ax.set_aspect("auto")  # the figure's height makes the cells square, with no gap for the layout to leave
        shapes = f"{name}: {tuple(operand.shape)} → {tuple(read.shape)}"
        ax.set_title(f"{shapes}\n{_stride(read.stride())}\n{say('view', '视图')}", fontsize=10)
    ax = fig.add_subplot(grid[0, 4])
    _grid(ax, total, None, palette)
    ax.set_aspect("auto")
    ax.set_title(f"a + b: {tuple(total.shape)}\n{_stride(total.stride())}\n{say('new memory', '新内存')}", fontsize=10)
    for column, sign in [(1, "+"), (3, "=")]:
        ax = fig.add_subplot(grid[0, column])
        ax.text(0.5, 0.5, sign, ha="center", va="center", fontsize=20)
        ax.set_axis_off()
    fig.supxlabel(
        say(
            "light cells: stride 0 reads an element again; @p: its storage position",
            "浅色格：步幅为 0，重复读取同一元素；@p：读取的存储位置",
            "\n",
        ),
        fontsize=10,
    )
    return fig


def _stride(stride: tuple[int, ...]) -> str:
    """`stride (2, 1)`, with the word in the edition's language (the English word in the bilingual one)."""
    return f"{in_language('stride', '步幅')} {tuple(stride)}"
