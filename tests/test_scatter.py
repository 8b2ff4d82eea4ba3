"""companion.scatter against PyTorch (the reference loop, its argument checks, the picture), and the lesson's
exercise checks in companion.checks.scatter against their tables of typical wrong answers."""

import re
import warnings

import matplotlib.pyplot as plt
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import scatter
from companion.checks.answers.scatter import EXERCISES
from companion.checks.scatter import _permutation_cases, check_class_means, check_inverse_permutation
from companion.exercises import WrongAnswer
from companion.plotting import COLUMN_WIDTH, use_course_style
from companion.scatter import plot_scatter, scatter_reference
from tests.bad_inputs import INDEX, ONES, ZEROS, bad

DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.int16, torch.bool]


@st.composite
def scatter_case(draw, unique: bool):
    """Random self, dim, index and src that satisfy PyTorch's rules; unique=True means no duplicate targets."""
    ndim = draw(st.integers(1, 3))
    self_shape = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    dim = draw(st.integers(-ndim, ndim - 1))
    d = dim % ndim
    index_shape = [draw(st.integers(1, n)) for n in self_shape]
    if not unique:
        index_shape[d] = draw(st.integers(1, 6))  # along dim, index may be longer than self
    src_shape = [n + draw(st.integers(0, 2)) for n in index_shape]
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    if unique:  # a random permutation of self's positions along dim, cut to index's length
        keys = torch.rand([self_shape[d] if i == d else n for i, n in enumerate(index_shape)], generator=generator)
        index = keys.argsort(dim=d).narrow(d, 0, index_shape[d])
    else:
        index = torch.randint(0, self_shape[d], index_shape, generator=generator)
    dtype = draw(st.sampled_from(DTYPES if unique else DTYPES[:-1]))
    self = (torch.randn(self_shape, generator=generator) * 5).to(dtype)
    src = (torch.randn(src_shape, generator=generator) * 5).to(dtype)
    return self, dim, index, src


@settings(max_examples=150, deadline=None)
@given(scatter_case(unique=True))
def test_reference_equals_torch_scatter(case):
    self, dim, index, src = case
    want = torch.scatter(self, dim, index, src)
    assert torch.equal(scatter_reference(self, dim, index, src), want)
    assert torch.equal(self.clone().scatter_(dim, index, src), want)


@settings(max_examples=60, deadline=None)
@given(scatter_case(unique=True), st.sampled_from([0, 1, -3, 7]))
def test_reference_with_a_number_equals_torch(case, value):
    self, dim, index, _ = case
    if self.dtype == torch.bool:
        value = bool(value)
    elif self.is_floating_point():
        value = value + 0.25
    assert torch.equal(scatter_reference(self, dim, index, value), torch.scatter(self, dim, index, value))


@settings(max_examples=150, deadline=None)
@given(scatter_case(unique=False), st.sampled_from(["sum", "prod", "amax", "amin"]))
def test_reference_reduce_equals_scatter_reduce_with_duplicates(case, reduce):
    self, dim, index, src = case
    want = torch.scatter_reduce(self, dim, index, src, reduce, include_self=True)
    got = scatter_reference(self, dim, index, src, reduce)
    assert got.dtype == want.dtype
    if self.is_floating_point():
        torch.testing.assert_close(got, want)
    else:
        assert torch.equal(got, want)


def test_reference_is_out_of_place():
    self = torch.zeros(2, 4)
    scatter_reference(self, 1, torch.tensor([[1, 0]]), torch.ones(1, 2))
    assert torch.equal(self, torch.zeros(2, 4))


def test_reference_reproduces_the_lesson_examples():
    src = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    got = scatter_reference(torch.zeros(2, 4), 1, torch.tensor([[1, 0], [1, 0]]), src)
    assert got.tolist() == [[2.0, 1.0, 0.0, 0.0], [4.0, 3.0, 0.0, 0.0]]
    got = scatter_reference(torch.zeros(2, 4), 1, torch.tensor([[2, 3], [3, 1]]), 1.23)
    assert torch.equal(got, torch.tensor([[0, 0, 1.23, 1.23], [0, 1.23, 0, 1.23]]))


def test_edge_cases_match_torch():
    scalar = torch.tensor(2.0)
    assert torch.equal(
        scatter_reference(scalar, 0, torch.tensor(0), torch.tensor(5.0)),
        torch.scatter(scalar, 0, torch.tensor(0), torch.tensor(5.0)),
    )
    empty_index = torch.zeros(2, 0, dtype=torch.long)
    assert torch.equal(scatter_reference(torch.ones(2, 3), 1, empty_index, 9.0), torch.ones(2, 3))
    # PyTorch skips the index data-type and dimension checks for an empty index; so does the reference
    for self, index, src in [
        (torch.ones(2, 3), torch.zeros(0, dtype=torch.long), 9.0),  # 1-d empty index, 2-d self
        (torch.ones(2, 3), torch.zeros(0), 9.0),  # float32 empty index
        (torch.ones(2, 3), torch.zeros(0, dtype=torch.long), torch.ones(5)),  # 1-d src
        (torch.tensor(2.0), torch.zeros(0, dtype=torch.long), 9.0),  # 0-d self
    ]:
        assert torch.equal(scatter_reference(self, 0, index, src), torch.scatter(self, 0, index, src))
    # PyTorch counts a 0-d tensor as 1-d of one element, for self, index and src alike; so does the reference
    for self, dim, index, src in [
        (torch.zeros(3), 0, torch.tensor(2), 1.0),  # 0-d index, 1-d self
        (torch.tensor(2.0), 0, torch.tensor([0]), 1.0),  # 1-d index, 0-d self
        (torch.zeros(4), 0, torch.tensor([1]), torch.tensor(1.7)),  # 0-d src, 1-d self and index
        (torch.zeros(4), -1, torch.tensor(3), torch.tensor([5.0, 6.0])),  # 0-d index, 1-d src
        (torch.tensor(2.0), -1, torch.tensor(0), torch.tensor([5.0])),  # 0-d self and index, 1-d src
    ]:
        assert torch.equal(scatter_reference(self, dim, index, src), torch.scatter(self, dim, index, src))
    for self, index, src in [
        (torch.zeros(4), torch.tensor([1, 2]), torch.tensor(1.7)),  # two positions, one src element
        (torch.zeros(2, 4), torch.tensor([[1]]), torch.tensor(1.7)),  # 0-d src counts as 1-d, index is 2-d
    ]:
        with pytest.raises(RuntimeError):
            torch.scatter(self, 0, index, src)
        with pytest.raises(ValueError):
            scatter_reference(self, 0, index, src)
    with pytest.raises(RuntimeError, match="dtype"):  # the src data-type check is not skipped
        torch.scatter(torch.ones(2, 3), 1, torch.zeros(0, dtype=torch.long), torch.ones(1, dtype=torch.long))
    with pytest.raises(TypeError, match="src.to"):
        scatter_reference(torch.ones(2, 3), 1, torch.zeros(0, dtype=torch.long), torch.ones(1, dtype=torch.long))
    int32_index = torch.tensor([[3, 0]], dtype=torch.int32)
    assert torch.equal(
        scatter_reference(torch.zeros(1, 4), 1, int32_index, 1.0),
        torch.zeros(1, 4).scatter_(1, int32_index, 1.0),
    )


BAD_ARGUMENTS = [
    # (self, dim, index, src, exception, words in the message that name the fix)
    (torch.zeros(1, 4, dtype=torch.float16), 1, torch.tensor([[0]]), 70000.0, ValueError, "at most 65504"),
    (torch.zeros(1, 4, dtype=torch.bfloat16), 1, torch.tensor([[0]]), -1e39, ValueError, "does not fit"),
    (torch.zeros(2, 4), 1, torch.tensor([[1.0]]), 1.0, TypeError, "index.long()"),
    (torch.zeros(2, 4), 1, torch.tensor([2, 3]), 1.0, ValueError, "unsqueeze(1)"),
    (torch.zeros(2, 4), 2, torch.tensor([[1]]), 1.0, ValueError, "[-2, 1]"),
    (torch.zeros(2, 4), 1, torch.tensor([[0, 1, 2]]), torch.ones(1, 2), ValueError, "larger src"),
    (
        torch.zeros(2, 4),
        1,
        torch.tensor([[1]]),
        torch.ones(1, 1, dtype=torch.int64),
        TypeError,
        "src.to(self.dtype)",
    ),
    (torch.zeros(2, 4), 1, torch.tensor([[1]]), torch.ones(1), ValueError, "must match"),
]


@pytest.mark.parametrize(("self", "dim", "index", "src", "error", "fix"), BAD_ARGUMENTS)
def test_bad_arguments_are_rejected_like_torch_with_a_fix(self, dim, index, src, error, fix):
    with pytest.raises((RuntimeError, IndexError)):
        torch.scatter(self, dim, index, src)
    with pytest.raises(error, match=re.escape(fix)):
        scatter_reference(self, dim, index, src)


@pytest.mark.parametrize(
    ("arguments", "error", "fix"),
    [
        ((torch.zeros(2), 0, [0], 1.0), TypeError, "must be tensors"),
        ((torch.zeros(2), 0, torch.tensor([0]), "1"), TypeError, "tensor or a Python number"),
        ((torch.zeros(2), 0, torch.tensor([0]), 1.0, "max"), ValueError, "'amax'"),
    ],
)
def test_other_bad_arguments_name_the_fix(arguments, error, fix):
    with pytest.raises(error, match=fix):
        scatter_reference(*arguments)


def test_plot_draws_src_index_and_result_with_matching_colours():
    index = torch.tensor([[1, 0], [1, 0]])
    src = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    use_course_style()
    fig = plot_scatter(torch.zeros(2, 4), 1, index, src)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing Chinese glyph would warn
        fig.canvas.draw()
    ax_src, ax_index, ax_out = fig.axes
    assert fig.get_figwidth() <= COLUMN_WIDTH
    colour = {
        name: {(int(p.get_y()), int(p.get_x())): p.get_facecolor() for p in ax.patches}
        for name, ax in (("src", ax_src), ("index", ax_index), ("out", ax_out))
    }
    for row in range(2):
        for col in range(2):
            assert colour["index"][(row, col)] == colour["src"][(row, col)]
            assert colour["out"][(row, int(index[row, col]))] == colour["src"][(row, col)]
    white = (1.0, 1.0, 1.0, 1.0)
    assert colour["out"][(0, 2)] == colour["out"][(1, 3)] == white
    assert [t.get_text() for t in ax_index.texts] == ["1", "0", "1", "0"]  # every index value, in its cell
    assert [t.get_text() for t in ax_out.texts] == ["2", "1", "0", "0", "4", "3", "0", "0"]
    assert "（索引）" in ax_index.get_title() and "（结果）" in ax_out.get_title() and "（源）" in ax_src.get_title()
    assert all(t.get_fontsize() >= 10 for ax in fig.axes for t in ax.texts)
    plt.close(fig)


def test_plot_with_dim_0_sends_each_element_to_the_row_its_index_names():
    index = torch.tensor([[0, 1, 2], [2, 0, 1]])
    src = torch.tensor([[1.0, 2, 3], [4, 5, 6]])
    use_course_style()
    fig = plot_scatter(torch.zeros(3, 3), 0, index, src)
    _, _, ax_out = fig.axes
    assert [t.get_text() for t in ax_out.texts] == ["1", "5", "0", "0", "2", "6", "4", "0", "3"]
    assert fig.get_figwidth() <= COLUMN_WIDTH
    plt.close(fig)


# The reference answers and typical mistakes of EXERCISES run in tests/test_checks.py, with every other lesson's.
def test_the_lesson_has_two_exercises():
    assert len(EXERCISES) == 2


@pytest.mark.parametrize("check", [check_inverse_permutation, check_class_means])
def test_a_checker_called_with_a_result_says_to_pass_the_function(check):
    with pytest.raises(WrongAnswer, match="without"):
        check(torch.zeros(2, 3))


def test_permutation_cases_hold_the_traps():
    cases = _permutation_cases()
    twice_is_not_inverse = [p for p in cases if len(p) and not torch.equal(p.gather(1, p).gather(1, p), p)]
    assert twice_is_not_inverse, "a permutation whose square is not its inverse (a 4-cycle)"
    assert any(torch.equal(p.gather(1, p), torch.arange(p.shape[1]).expand_as(p)) for p in cases), "a swap"
    assert any(not p.is_contiguous() for p in cases) and any(p.numel() == 0 for p in cases)
    assert any(p.shape[0] == p.shape[1] > 1 for p in cases), "B = N: scattering along dim=0 raises no error"
    for perm in cases:
        assert torch.equal(perm.sort(dim=1).values, torch.arange(perm.shape[1]).expand_as(perm)), "rows are perms"


def test_inverse_permutation_checker_names_a_changed_argument_a_non_tensor_and_lets_other_errors_through():
    def mutating(perm):
        inverse = perm.argsort(dim=1)
        perm.copy_(inverse)
        return inverse

    with pytest.raises(WrongAnswer, match="changed its argument number 1"):
        check_inverse_permutation(mutating)
    with pytest.raises(WrongAnswer, match="should return a tensor"):
        check_inverse_permutation(lambda perm: perm.argsort(dim=1).tolist())

    def broken(perm):
        raise RuntimeError("something else went wrong")

    with pytest.raises(RuntimeError, match="something else"):
        check_inverse_permutation(broken)


def test_inverse_permutation_checker_shows_the_row_that_is_not_undone():
    def first_row_only(perm):  # every row inverted as if it were row 0
        return perm[:1].argsort(dim=1).expand_as(perm).clone() if len(perm) else perm.clone()

    with pytest.raises(WrongAnswer, match=re.escape("perm[inv[j]] =")):
        check_inverse_permutation(first_row_only)


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(
        scatter.scatter_reference,
        ([[0.0] * 4] * 2, 1, INDEX, 1.0),
        TypeError,
        "e.g. torch.zeros(2, 4) and torch.tensor([[2, 3]])",
        "list-self",
    ),
    bad(scatter.scatter_reference, (ZEROS, 1, INDEX.float(), ONES), TypeError, "pass index.long()", "float-index"),
    bad(scatter.scatter_reference, (ZEROS, 1.0, INDEX, ONES), TypeError, "dim must be an int", "float-dim"),
    bad(scatter.scatter_reference, (ZEROS, 2, INDEX, ONES), ValueError, "dim must be in [-2, 1]", "dim-out-of-range"),
    bad(
        scatter.scatter_reference,
        (ZEROS, 1, torch.tensor([2, 3]), ONES),
        ValueError,
        "give index the same number of dimensions (for a 1-d target, use target.unsqueeze(1))",
        "1d-index",
    ),
    bad(
        scatter.scatter_reference,
        (ZEROS, 1, INDEX, ONES),
        ValueError,
        "reduce must be None or one of ['amax', 'amin', 'prod', 'sum']",
        "unknown-reduce",
        reduce="add",
    ),
    bad(scatter.scatter_reference, (ZEROS, 1, INDEX, ONES.double()), TypeError, "pass src.to(self.dtype)", "src-dtype"),
    bad(scatter.scatter_reference, (ZEROS, 1, INDEX, torch.ones(4)), ValueError, "they must match", "src-dims"),
    bad(
        scatter.scatter_reference,
        (ZEROS, 1, INDEX, "1"),
        TypeError,
        "src must be a tensor or a Python number",
        "str-src",
    ),
    bad(
        scatter.scatter_reference,
        (ZEROS, 1, torch.tensor([[0], [1], [2]]), 1.0),
        ValueError,
        "index may be smaller than self but never larger; slice index to fit",
        "index-larger-than-self",
    ),
    bad(
        scatter.scatter_reference,
        (ZEROS, 1, torch.tensor([[0, 1], [2, 3]]), torch.ones(1, 4)),
        ValueError,
        "use a larger src or a smaller index",
        "index-larger-than-src",
    ),
    bad(
        scatter.scatter_reference,
        (ZEROS, 1, torch.tensor([[4, 0]]), ONES),
        ValueError,
        "use values 0..3",
        "index-too-large",
    ),
    bad(
        scatter.scatter_reference,
        (ZEROS, 1, torch.tensor([[-1, 0]]), ONES),
        ValueError,
        "use values 0..3 (negative indices are not wrapped around)",
        "negative-index",
    ),
]
