"""companion.tensors against PyTorch: the storage positions the strides-and-views figure draws are the ones PyTorch
reads, and the figures (views, broadcasting) show each tensor's real values, positions and strides in the course's
style."""

import warnings

import matplotlib.pyplot as plt
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.checks import tensors as checks_tensors
from companion.exercises import WrongAnswer
from companion.plotting import COLUMN_WIDTH, use_course_style
from companion.tensors import _storage_positions, _storage_values, plot_broadcast, plot_views
from tests.bad_inputs import bad


def pytorch_positions(x: torch.Tensor) -> torch.Tensor:
    """The storage positions PyTorch itself reads for x: x's own shape, strides and offset over 0, 1, 2, ..."""
    count = x.untyped_storage().nbytes() // x.element_size()
    return torch.arange(count).as_strided(x.shape, x.stride(), x.storage_offset())


def layouts(base: torch.Tensor) -> dict[str, torch.Tensor]:
    """Views of a (4, 6) base with every kind of stride the lesson meets: swapped, stepped, offset, zero, size 1."""
    return {
        "base": base,
        "t()": base.t(),
        "column": base[:, 1],
        "row": base[2],
        "stepped": base[::2, 1::3],
        "reshaped": base.reshape(2, 3, 4),
        "permuted": base.reshape(2, 3, 4).permute(2, 0, 1),
        "unsqueezed": base.unsqueeze(1),
        "expanded": base[0].expand(3, 6),
        "element": base[1, 2],
        "chunk": base.chunk(2, dim=1)[1],
    }


@pytest.mark.parametrize("name", list(layouts(torch.zeros(4, 6))))
def test_storage_positions_are_the_ones_pytorch_reads(name):
    base = (torch.arange(24) * 10 + 7).reshape(4, 6)  # values that differ from their positions
    x = layouts(base)[name]
    positions = _storage_positions(x)
    assert positions.shape == x.shape
    assert torch.equal(positions, pytorch_positions(x))
    assert torch.equal(_storage_values(x)[positions], x)  # reading the storage there gives x itself
    assert torch.equal(_storage_values(x), base.flatten())


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    data=st.data(),
)
def test_storage_positions_of_random_strided_views(sizes, data):
    base = torch.arange(200)
    strides = data.draw(st.lists(st.integers(0, 7), min_size=len(sizes), max_size=len(sizes)))
    offset = data.draw(st.integers(0, 20))
    x = base.as_strided(sizes, strides, offset)  # the largest position is at most 20 + 4 * 3 * 7 < 200
    assert torch.equal(_storage_positions(x), pytorch_positions(x))
    assert torch.equal(_storage_values(x)[_storage_positions(x)], x)


def panel_cells(ax) -> list[tuple[str, str]]:
    """(value, "@position") of each cell of a panel, row by row: the texts come in pairs, value first."""
    texts = [t.get_text() for t in ax.texts]
    return list(zip(texts[::2], texts[1::2], strict=True))


def test_plot_views_draws_the_lessons_tensors_as_pytorch_reads_them():
    use_course_style()
    t = torch.tensor([[1, 2, 3], [4, 5, 6]])
    views = {"t": t, "t.t()": t.t(), "t[:, 1]": t[:, 1]}
    fig = plot_views(views)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing Chinese glyph would warn
        fig.canvas.draw()
    assert fig.get_figwidth() <= COLUMN_WIDTH
    assert fig.get_layout_engine() is not None  # constrained layout
    storage_ax, *view_axes = fig.axes
    assert panel_cells(storage_ax) == [(str(v), f"@{p}") for p, v in enumerate(t.flatten().tolist())]
    assert "存储" in storage_ax.get_title()
    colour_of = {p: patch.get_facecolor() for p, patch in enumerate(storage_ax.patches)}
    assert len(set(colour_of.values())) == 6  # each storage position its own colour
    for ax, (name, view) in zip(view_axes, views.items(), strict=True):
        positions = pytorch_positions(view).flatten().tolist()
        values = view.flatten().tolist()  # row by row, as the cells are drawn
        assert panel_cells(ax) == [(str(v), f"@{p}") for v, p in zip(values, positions, strict=True)]
        assert [patch.get_facecolor() for patch in ax.patches] == [colour_of[p] for p in positions]
        assert ax.get_title().startswith(name) and f"stride {tuple(view.stride())}" in ax.get_title()
        assert ("offset 1" in ax.get_title()) == (view.storage_offset() == 1)
    # t.t() reads positions 0, 3, 1, 4, 2, 5 row by row: the swapped strides (1, 3)
    assert [cell[1] for cell in panel_cells(view_axes[1])] == ["@0", "@3", "@1", "@4", "@2", "@5"]
    assert all(text.get_fontsize() >= 10 for ax in fig.axes for text in ax.texts)
    assert all(ax.title.get_fontsize() >= 10 for ax in fig.axes)
    plt.close(fig)


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [((3, 1), (4,)), ((2, 3), (3,)), ((1, 4), (3, 1)), ((2, 1), (2, 3)), ((), (2, 3))],
)
def test_plot_broadcast_draws_what_broadcasting_reads_and_adds(a_shape, b_shape):
    use_course_style()
    a = (torch.arange(torch.Size(a_shape).numel()) * 10).reshape(a_shape)  # the lesson's a: 0, 10, 20 as a column
    b = (torch.arange(torch.Size(b_shape).numel()) + 1).reshape(b_shape)
    fig = plot_broadcast(a, b)
    if a_shape == (3, 1):  # the lesson's case is drawn (the cells below exist before drawing, for every case)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a missing Chinese glyph would warn
            fig.canvas.draw()
    assert fig.get_figwidth() <= COLUMN_WIDTH
    assert fig.get_layout_engine() is not None  # constrained layout
    a_ax, b_ax, sum_ax, plus_ax, equals_ax = fig.axes
    assert [t.get_text() for t in plus_ax.texts + equals_ax.texts] == ["+", "="]
    for ax, name, operand, read in zip((a_ax, b_ax), "ab", (a, b), torch.broadcast_tensors(a, b), strict=True):
        positions = pytorch_positions(read).flatten().tolist()
        values = read.flatten().tolist()  # row by row, as the cells are drawn
        assert panel_cells(ax) == [(str(v), f"@{p}") for v, p in zip(values, positions, strict=True)]
        # light exactly where an earlier cell read the same position: the stride-0 repeats
        light = [patch.get_alpha() < 1 for patch in ax.patches]
        assert light == [p in positions[:k] for k, p in enumerate(positions)]
        colours = {}
        for p, patch in zip(positions, ax.patches, strict=True):
            assert colours.setdefault(p, patch.get_facecolor()[:3]) == patch.get_facecolor()[:3]  # one per position
        assert len(set(colours.values())) == len(colours)
        title = ax.get_title()
        assert title.startswith(f"{name}: {tuple(operand.shape)} → {tuple(read.shape)}")
        assert f"stride {read.stride()}" in title and "视图" in title
    assert not set(colours_of(a_ax)) & set(colours_of(b_ax))  # a's colours are not b's
    total = a + b
    assert [t.get_text() for t in sum_ax.texts] == [str(v) for v in total.flatten().tolist()]
    assert f"a + b: {tuple(total.shape)}" in sum_ax.get_title() and f"stride {total.stride()}" in sum_ax.get_title()
    assert "新内存" in sum_ax.get_title()
    assert "stride 0" in fig.get_supxlabel() and "步幅为 0" in fig.get_supxlabel()
    assert all(text.get_fontsize() >= 10 for ax in fig.axes for text in ax.texts)
    assert all(ax.title.get_fontsize() >= 10 for ax in fig.axes)
    plt.close(fig)


def colours_of(ax) -> list[tuple[float, ...]]:
    """The fill colour of each cell of a panel, without its transparency."""
    return [tuple(patch.get_facecolor()[:3]) for patch in ax.patches]


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(
        checks_tensors.check_shares_memory,
        ("x[1]",),
        WrongAnswer,
        "Pass a dict such as {'x[1]': True, ...}",
        "not-a-dict",
    ),
    bad(plot_broadcast, (torch.zeros(3, 1), torch.zeros(7)), ValueError, "pass smaller tensors", "more-than-9-values"),
]
