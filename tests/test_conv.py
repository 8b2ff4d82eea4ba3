"""companion.conv against PyTorch (output sizes, the reference conv2d, dilation, receptive fields, plot) and the
lesson's self-checks in companion.checks.conv."""

import re
import warnings

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from companion import conv
from companion.checks.conv import CAUSAL_CASES, POOL_CASES, _causal_cases, check_causal_conv1d, check_pool_output_length
from companion.conv import (
    _sampled_positions,
    conv2d_output_size,
    conv2d_reference,
    count_read_positions,
    dilate_kernel,
    effective_kernel_size,
    measure_receptive_field,
    padding_sides,
    plot_dilation,
    plot_edge_responses,
    receptive_field,
)
from companion.exercises import WrongAnswer
from companion.plotting import COLUMN_WIDTH, use_course_style
from tests.bad_inputs import IMAGE, KERNELS, bad


def int_or_pair(low: int, high: int):
    """An int, or a tuple of two ints, in [low, high]: the two forms Conv2d accepts."""
    number = st.integers(low, high)
    return st.one_of(number, st.tuples(number, number))


def as_pair(value):
    return value if isinstance(value, tuple) else (value, value)


@st.composite
def conv_case(draw):
    """A random valid Conv2d configuration with its input, weight and bias (float64, so sums agree closely)."""
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    in_channels = groups * draw(st.integers(1, 2))
    out_channels = groups * draw(st.integers(1, 2))
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))  # non-square kernels included
    stride = draw(int_or_pair(1, 3))
    dilation = draw(int_or_pair(1, 3))
    strings = ["valid", "same"] if as_pair(stride) == (1, 1) else ["valid"]
    padding = draw(st.one_of(int_or_pair(0, 2), st.sampled_from(strings)))
    top, bottom, left, right = padding_sides(padding, kernel, stride, dilation)
    span_h, span_w = effective_kernel_size(kernel, dilation)
    height = draw(st.integers(max(1, span_h - top - bottom), span_h + 5))  # the kernel always fits
    width = draw(st.integers(max(1, span_w - left - right), span_w + 5))
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    batch = draw(st.integers(1, 2))
    x = torch.randn(batch, in_channels, height, width, generator=generator, dtype=torch.float64)
    weight = torch.randn(out_channels, in_channels // groups, *kernel, generator=generator, dtype=torch.float64)
    bias = torch.randn(out_channels, generator=generator, dtype=torch.float64) if draw(st.booleans()) else None
    options = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    return x, weight, bias, options


def torch_conv2d(x, weight, bias, options):
    """F.conv2d, quiet about 'same' with an even kernel (PyTorch warns that it copies the input)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Using padding='same'")
        return F.conv2d(x, weight, bias, **options)


@settings(max_examples=150, deadline=None)
@given(conv_case())
def test_reference_equals_f_conv2d(case):
    x, weight, bias, options = case
    torch.testing.assert_close(conv2d_reference(x, weight, bias, **options), torch_conv2d(x, weight, bias, options))


@settings(max_examples=100, deadline=None)
@given(conv_case())
def test_output_size_equals_the_shape_pytorch_gives(case):
    x, weight, bias, options = case
    options = {k: v for k, v in options.items() if k != "groups"}
    want = torch_conv2d(x, weight[:, :1].repeat(1, x.shape[1], 1, 1), None, options).shape[2:]
    assert conv2d_output_size(tuple(x.shape[2:]), tuple(weight.shape[2:]), **options) == tuple(want)


@settings(max_examples=40, deadline=None)
@given(conv_case())
def test_reference_equals_nn_conv2d_module(case):
    x, weight, bias, options = case
    out_channels, in_per_group, kernel_h, kernel_w = weight.shape
    conv = nn.Conv2d(
        in_per_group * options["groups"], out_channels, (kernel_h, kernel_w), bias=bias is not None, **options
    ).double()
    with torch.no_grad():
        conv.weight.copy_(weight)
        if bias is not None:
            conv.bias.copy_(bias)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Using padding='same'")
        want = conv(x)
    torch.testing.assert_close(conv2d_reference(x, conv.weight.detach(), conv.bias, **options), want)


@pytest.mark.parametrize(
    ("shape", "weight_shape", "options"),
    [
        ((1, 3, 8, 8), (4, 3, 3, 3), {}),
        ((2, 3, 7, 9), (5, 3, 2, 4), {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2)}),
        ((1, 4, 9, 9), (8, 1, 3, 3), {"padding": 1, "groups": 4}),  # depthwise, two kernels per channel
        ((1, 4, 9, 9), (4, 1, 3, 3), {"padding": "same", "dilation": 3, "groups": 4}),  # depthwise, dilated
        ((2, 6, 6, 5), (6, 2, 1, 1), {"groups": 3}),  # grouped 1 x 1
        ((1, 2, 5, 5), (3, 2, 5, 5), {}),  # kernel exactly as large as the input: one output element
        ((1, 1, 1, 7), (1, 1, 1, 3), {"stride": 3, "padding": (0, 1)}),  # a single row
    ],
)
def test_reference_on_a_grid_of_float32_configurations(shape, weight_shape, options):
    generator = torch.Generator().manual_seed(0)
    x, weight = torch.randn(shape, generator=generator), torch.randn(weight_shape, generator=generator)
    bias = torch.randn(weight_shape[0], generator=generator)
    torch.testing.assert_close(conv2d_reference(x, weight, bias, **options), F.conv2d(x, weight, bias, **options))
    torch.testing.assert_close(conv2d_reference(x, weight, **options), F.conv2d(x, weight, **options))


def test_reference_accepts_an_unbatched_image_like_pytorch():
    x, weight = torch.randn(3, 6, 6), torch.randn(2, 3, 3, 3)
    got = conv2d_reference(x, weight, padding=1)
    assert got.shape == (2, 6, 6)
    torch.testing.assert_close(got, F.conv2d(x, weight, padding=1))


def test_reference_on_integers_is_exact_and_matches_a_hand_computed_element():
    x = torch.arange(16.0).view(1, 1, 4, 4)
    weight = torch.tensor([[[[1.0, 0.0], [0.0, -1.0]]]])
    out = conv2d_reference(x, weight, torch.tensor([10.0]), stride=2)
    assert torch.equal(out, F.conv2d(x, weight, torch.tensor([10.0]), stride=2))
    assert out[0, 0, 1, 1].item() == x[0, 0, 2, 2] - x[0, 0, 3, 3] + 10


@pytest.mark.parametrize(
    ("arguments", "want"),
    [
        (((32, 32), 3, 2, 1), (16, 16)),
        ((32, 3, 1, 0, 2), (28, 28)),
        (((7, 10), (3, 5), (2, 3), (1, 0)), (4, 2)),
        ((5, 5), (1, 1)),  # kernel as large as the input
        ((6, 4, 1, "same"), (6, 6)),  # even kernel: the extra zero goes at the end
        ((6, 3, 1, "valid", 2), (2, 2)),
    ],
)
def test_output_size_examples(arguments, want):
    assert conv2d_output_size(*arguments) == want


def test_padding_sides_put_the_odd_zero_at_the_end_like_pytorch():
    assert padding_sides("same", 4) == (1, 2, 1, 2)
    assert padding_sides("same", (2, 3), dilation=(3, 1)) == (1, 2, 1, 1)
    assert padding_sides((2, 0), 3) == (2, 2, 0, 0)
    x, weight = torch.randn(1, 1, 7, 7), torch.randn(1, 1, 4, 4)
    top, bottom, left, right = padding_sides("same", 4)
    want = torch_conv2d(x, weight, None, {"padding": "same"})
    torch.testing.assert_close(F.conv2d(F.pad(x, (left, right, top, bottom)), weight), want)


BAD_ARGUMENTS = [
    # (input shape, weight shape, options, exception, words of the message that name the fix)
    ((1, 4, 8, 8), (6, 2, 3, 3), {"groups": 3}, ValueError, "divisors [1, 2, 4]"),
    ((1, 4, 8, 8), (3, 2, 3, 3), {"groups": 2}, ValueError, "multiple of 2 kernels"),
    ((1, 4, 8, 8), (8, 2, 3, 3), {}, ValueError, "pass weight of shape (8, 4, 3, 3)"),
    ((1, 4, 8, 8), (8, 4, 3, 3), {"groups": 2}, ValueError, "pass weight of shape (8, 2, 3, 3)"),
    ((1, 4, 4, 4), (2, 4, 3, 3), {"dilation": 2}, ValueError, "more padding"),
    ((1, 4, 4, 4), (2, 4, 6, 6), {"padding": 0}, ValueError, "a smaller kernel"),
    ((1, 4, 8, 8), (2, 4, 3, 3), {"stride": 0}, ValueError, "stride must be positive"),
    ((1, 4, 8, 8), (2, 4, 3, 3), {"stride": (1, -1)}, ValueError, "stride must be positive"),
    ((1, 4, 8, 8), (2, 4, 3, 3), {"dilation": 0}, ValueError, "dilation must be positive"),
    ((1, 4, 8, 8), (2, 4, 3, 3), {"padding": -1}, ValueError, "non-negative"),
    ((1, 4, 8, 8), (2, 4, 3, 3), {"stride": 2, "padding": "same"}, ValueError, "needs stride=1"),
    ((1, 4, 8, 8), (2, 4, 3, 3), {"padding": "full"}, ValueError, "'same', 'valid'"),
    ((1, 4, 8, 8), (2, 4, 3, 3), {"stride": 1.5}, TypeError, "int or a pair of ints"),
    ((1, 4, 8, 8), (2, 4, 3, 3), {"stride": (1, 2, 3)}, TypeError, "int or a pair of ints"),
    ((1, 4, 8, 8), (2, 4, 3, 3), {"groups": 1.0}, TypeError, "groups must be an int"),
    ((8, 8), (2, 4, 3, 3), {}, ValueError, "pass (N, C_in, H, W)"),
]


@pytest.mark.parametrize(("shape", "weight_shape", "options", "error", "fix"), BAD_ARGUMENTS)
def test_bad_arguments_are_rejected_like_pytorch_with_a_fix(shape, weight_shape, options, error, fix):
    x, weight = torch.ones(shape), torch.ones(weight_shape)
    with pytest.raises((RuntimeError, ValueError, TypeError)):
        F.conv2d(x, weight, **options)
    with pytest.raises(error, match=re.escape(fix)):
        conv2d_reference(x, weight, **options)


def test_bad_tensors_and_bias_name_the_fix():
    with pytest.raises(TypeError, match="must be tensors"):
        conv2d_reference([[1.0]], torch.ones(1, 1, 1, 1))
    with pytest.raises(TypeError, match="bias must be None or a tensor"):
        conv2d_reference(torch.ones(1, 1, 3, 3), torch.ones(2, 1, 1, 1), bias=[0.0, 0.0])
    with pytest.raises(RuntimeError):
        F.conv2d(torch.ones(1, 1, 3, 3), torch.ones(2, 1, 1, 1), torch.ones(3))
    with pytest.raises(ValueError, match=re.escape("one number per output channel, (2,)")):
        conv2d_reference(torch.ones(1, 1, 3, 3), torch.ones(2, 1, 1, 1), torch.ones(3))


@pytest.mark.parametrize(
    ("arguments", "error", "fix"),
    [
        (((4, 4), 3, 1, 0, 2), ValueError, "smaller dilation"),
        ((0, 3), ValueError, "input_size must be positive"),
        (((8, 8), 0), ValueError, "kernel_size must be positive"),
        (((8, 8), 3, 2, "same"), ValueError, "needs stride=1"),
        (((8, 8), 3, 1, "SAME"), ValueError, "'same', 'valid'"),
        (((8, 8), 3.0), TypeError, "kernel_size must be an int"),
        (((8, 8), 3, True), TypeError, "stride must be an int"),
    ],
)
def test_output_size_bad_arguments_name_the_fix(arguments, error, fix):
    with pytest.raises(error, match=re.escape(fix)):
        conv2d_output_size(*arguments)


@settings(max_examples=60, deadline=None)
@given(conv_case())
def test_dilation_equals_a_zero_inserted_dense_kernel(case):
    x, weight, bias, options = case
    if isinstance(options["padding"], str):  # pad by hand: 'same' may put one more zero at the end
        top, bottom, left, right = padding_sides(options["padding"], tuple(weight.shape[2:]), 1, options["dilation"])
        x, options["padding"] = F.pad(x, (left, right, top, bottom)), 0
    dense = dilate_kernel(weight, options["dilation"])
    assert tuple(dense.shape[2:]) == effective_kernel_size(tuple(weight.shape[2:]), options["dilation"])
    assert torch.count_nonzero(dense) == torch.count_nonzero(weight)
    want = F.conv2d(x, weight, bias, **options)
    torch.testing.assert_close(F.conv2d(x, dense, bias, **{**options, "dilation": 1}), want)


def test_dilate_kernel_places_taps_d_apart():
    dense = dilate_kernel(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), (2, 3))
    assert dense.tolist() == [[1, 0, 0, 2], [0, 0, 0, 0], [3, 0, 0, 4]]
    assert torch.equal(dilate_kernel(torch.ones(2, 1, 3, 3), 1), torch.ones(2, 1, 3, 3))
    with pytest.raises(ValueError, match="dilation must be positive"):
        dilate_kernel(torch.ones(3, 3), 0)
    with pytest.raises(TypeError, match="last two dimensions"):
        dilate_kernel(torch.ones(3), 2)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 2), st.integers(1, 3)), min_size=1, max_size=3))
def test_receptive_field_formula_equals_the_autograd_measurement(layers):
    model = nn.Sequential(*(nn.Sequential(nn.Conv2d(1, 1, k, stride=s, dilation=d), nn.ReLU()) for k, s, d in layers))
    field = receptive_field(layers)
    assert measure_receptive_field(model, field + 12) == (field, field)


def test_receptive_field_known_values():
    assert receptive_field([]) == 1
    assert receptive_field([(3, 1, 1)] * 3) == 7
    assert receptive_field([(3, 1, 1), (3, 1, 2), (3, 1, 4)]) == 15
    assert receptive_field([(7, 2, 1), (3, 2, 1)]) == 11
    stack = nn.Sequential(*(nn.Conv2d(1, 1, 3, dilation=d, padding=d) for d in (1, 2, 4)))
    assert measure_receptive_field(stack, 33) == (15, 15)
    grouped = nn.Conv2d(4, 4, (3, 5), groups=2)
    assert measure_receptive_field(grouped, 11, in_channels=4) == (3, 5)


def test_count_read_positions_sees_the_holes_that_the_span_hides():
    def stack(dilations):
        return nn.Sequential(*(nn.Conv2d(1, 1, 3, dilation=d, padding=d) for d in dilations))

    assert count_read_positions(stack((1, 2, 4)), 33) == 15 * 15  # no hole in the 15 x 15 span
    assert measure_receptive_field(stack((2, 2, 2)), 33) == (13, 13)
    assert count_read_positions(stack((2, 2, 2)), 33) == 7 * 7  # only every other row and column
    assert count_read_positions(nn.Conv2d(1, 1, 3, dilation=3), 9) == 9


def test_measure_leaves_the_model_alone_and_receptive_field_rejects_bad_layers():
    conv = nn.Conv2d(1, 1, 3)
    before = conv.weight.detach().clone()
    measure_receptive_field(conv, 9)
    assert torch.equal(conv.weight, before) and conv.weight.grad is None
    with pytest.raises(TypeError, match="nn.Module"):
        measure_receptive_field(lambda x: x, 9)
    with pytest.raises(TypeError, match="triple of ints"):
        receptive_field([(3, 1)])
    with pytest.raises(ValueError, match="must be positive"):
        receptive_field([(3, 0, 1)])


def test_sampled_positions_and_the_plot_agree():
    assert _sampled_positions(3, 2, 4) == [2, 4, 6]
    assert _sampled_positions(5, 1, 4) == [2, 3, 4, 5, 6]
    use_course_style()
    fig = plot_dilation(3, (1, 2, 3), input_size=9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing Chinese glyph would warn
        fig.canvas.draw()
    assert fig.get_size_inches()[0] <= COLUMN_WIDTH
    for ax, dilation in zip(fig.axes, (1, 2, 3), strict=True):
        cells = [p for p in ax.patches if p.get_fill() and p.get_width() == 1]
        hit = {(int(p.get_y()), int(p.get_x())) for p in cells if p.get_facecolor() != (1.0, 1.0, 1.0, 1.0)}
        taps = _sampled_positions(3, dilation, 4)
        assert hit == {(r, c) for r in taps for c in taps}
        span = 2 * dilation + 1
        assert any(not p.get_fill() and p.get_width() == span for p in ax.patches)
        assert f"空洞率 {dilation}" in ax.get_title()
        assert ax.title.get_fontsize() >= 10
    # the figure title sits above every panel title (they overlapped once)
    renderer = fig.canvas.get_renderer()
    suptitle = fig._suptitle.get_window_extent(renderer)
    assert all(suptitle.y0 >= ax.title.get_window_extent(renderer).y1 - 0.5 for ax in fig.axes)
    plt.close(fig)


SOBEL = torch.tensor(
    [
        [[[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]],
        [[[-1.0, -2.0, -1.0], [0.0, 0.0, 0.0], [1.0, 2.0, 1.0]]],
    ]
)  # (2, 1, 3, 3): right minus left, below minus above


def test_the_edge_plot_draws_f_conv2d_and_a_step_lights_up_where_it_steps():
    step = torch.zeros(1, 8, 8)
    step[..., 4:] = 1.0  # paper on the left half, ink on the right: one vertical edge between columns 3 and 4
    use_course_style()
    fig = plot_edge_responses(step, SOBEL, row=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing Chinese glyph would warn
        fig.canvas.draw()
    assert fig.get_size_inches()[0] <= COLUMN_WIDTH
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 3
    assert torch.equal(torch.as_tensor(panels[0].images[0].get_array()), step[0])
    shown = [torch.as_tensor(ax.images[0].get_array().data) for ax in panels[1:]]
    torch.testing.assert_close(torch.stack(shown), F.conv2d(step, SOBEL, padding=1), rtol=0, atol=0)
    # Worked by hand: the 3 x 3 window straddles the step in columns 3 and 4 only, giving 1 + 2 + 1 = 4 in the
    # rows away from the border and 2 + 1 = 3 in the top and bottom rows (zero padding); flat areas give 0.
    vertical, horizontal = shown
    assert vertical[1:-1, 3:5].eq(4).all() and vertical[[0, -1], 3:5].eq(3).all()
    assert vertical[:, :3].eq(0).all() and vertical[:, 5:-1].eq(0).all()
    assert vertical[1:-1, -1].eq(-4).all()  # the zero padding on the right is a step down
    assert horizontal[1:-1].eq(0).all()  # no horizontal edge inside the image
    for ax in panels[1:]:
        low, high = ax.images[0].get_clim()
        assert low == -high == -4.0  # one scale for both maps, centred on 0
    assert [ax.get_title() for ax in panels] == [
        "input / 输入",
        "vertical edges / 竖直边缘",
        "horizontal edges / 水平边缘",
    ]
    assert all(ax.title.get_fontsize() >= 10 for ax in panels)
    frames = [p for ax in panels for p in ax.patches if not p.get_fill()]
    assert len(frames) == 3 and all(p.get_y() == 2.5 and p.get_height() == 1 for p in frames)
    plt.close(fig)


def test_pool_cases_include_rounding_up_and_a_dropped_last_window():
    floor = {case: F.max_pool1d(torch.zeros(1, 1, case[0]), *case[1:4]).shape[-1] for case in POOL_CASES}
    ceil = {case: F.max_pool1d(torch.zeros(1, 1, case[0]), *case[1:4], ceil_mode=True).shape[-1] for case in POOL_CASES}
    assert any(ceil[case] > floor[case] for case in POOL_CASES if case[4])
    dropped = [
        (n, k, s, p) for n, k, s, p, c in POOL_CASES if c and -(-(n + 2 * p - k) // s) + 1 > ceil[(n, k, s, p, c)]
    ]
    assert dropped, "no case where ceil_mode drops a window that would start in the right padding"
    exact = [(n, k, s, p) for n, k, s, p, c in POOL_CASES if c and (n + 2 * p - k) % s == 0 and p + s < k]
    assert exact, "no case where the stride divides L + 2p - k and (steps + s) // s would add a window"


@pytest.mark.parametrize(
    ("check", "wrong", "hint"),
    [
        (check_pool_output_length, 14, "Pass the function itself"),
        (check_pool_output_length, lambda n, k, s, p, c: torch.tensor(n // s), "return an int"),
        (check_pool_output_length, lambda n, k, s, p, c: n // k, "count the windows that fit"),
        (check_causal_conv1d, F.conv1d(torch.ones(1, 1, 3), torch.ones(1, 1, 1)), "Pass the function itself"),
        (check_causal_conv1d, lambda x, w, d: _causal(x, w, d).tolist(), "a tensor"),
        (check_causal_conv1d, lambda x, w, d: _causal(x, w, d).float(), "float32 tensor"),
        (check_causal_conv1d, lambda x, w, d: _causal(x, w, d, shift=-1), "sees later steps of x"),  # 1 step ahead
        (check_causal_conv1d, lambda x, w, d: _causal(x, w, d, shift=1), "other numbers"),  # 1 step late
    ],
)
def test_checkers_reject_other_wrong_answers_with_a_hint(check, wrong, hint):
    with pytest.raises(WrongAnswer, match=re.escape(hint)):
        check(wrong)


def _causal(x, weight, dilation, shift=0):
    """A causal convolution whose window ends `shift` steps before step t (a negative shift looks ahead)."""
    reach, length = dilation * (weight.shape[-1] - 1), x.shape[-1]
    padded = F.pad(x, (reach + shift, max(-shift, 0)))  # a negative left pad cuts steps off
    return F.conv1d(padded, weight, dilation=dilation)[..., :length]


def test_causal_cases_hold_the_traps():
    kernels = {k for _, _, k, _, _ in CAUSAL_CASES}
    assert {1, 2, 3} <= kernels, "a 1-tap kernel, an even and an odd one"
    assert {1, 2, 3} <= {d for *_, d, _ in CAUSAL_CASES}
    assert any(shape[-1] < d * (k - 1) + 1 for shape, _, k, d, _ in CAUSAL_CASES), "x shorter than the span"
    assert any(dtype == torch.float64 for *_, dtype in CAUSAL_CASES)
    assert any(not x.is_contiguous() for x, _, _ in _causal_cases())


def test_check_causal_conv1d_accepts_a_slow_loop_and_lets_unrelated_errors_through(capsys):
    def by_steps(x, weight, dilation):
        span = dilation * (weight.shape[-1] - 1) + 1
        padded = F.pad(x, (span - 1, 0))
        steps = [F.conv1d(padded[..., t : t + span], weight, dilation=dilation) for t in range(x.shape[-1])]
        return torch.cat(steps, dim=-1)

    check_causal_conv1d(by_steps)
    assert capsys.readouterr().out.startswith("✓ Correct / 正确: causal_conv1d agrees with F.conv1d")

    def broken(x, weight, dilation):
        raise RuntimeError("something else went wrong")

    with pytest.raises(RuntimeError, match="something else"):
        check_causal_conv1d(broken)


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(
        conv.effective_kernel_size,
        ("3",),
        TypeError,
        "kernel_size must be an int or a pair of ints such as (2, 1)",
        "str",
    ),
    bad(conv.effective_kernel_size, (0,), ValueError, "kernel_size must be positive (>= 1)", "zero"),
    bad(
        conv.effective_kernel_size,
        (3,),
        TypeError,
        "dilation must be an int or a pair of ints such as (2, 1)",
        "triple-dilation",
        dilation=(1, 2, 3),
    ),
    bad(
        conv.padding_sides,
        ("full", 3),
        ValueError,
        "padding must be 'same', 'valid', an int or a pair of ints",
        "unknown-string",
    ),
    bad(
        conv.padding_sides,
        ("same", 3),
        ValueError,
        "with a larger stride give the padding as numbers",
        "same-with-stride",
        stride=2,
    ),
    bad(conv.padding_sides, (-1, 3), ValueError, "padding must be non-negative (>= 0)", "negative"),
    bad(
        conv.conv2d_output_size,
        (3, 5),
        ValueError,
        "use a larger input, more padding, a smaller kernel or a smaller dilation",
        "kernel-too-large",
    ),
    bad(conv.conv2d_output_size, (0, 3), ValueError, "input_size must be positive (>= 1)", "empty-input"),
    bad(conv.conv2d_output_size, (8, 3), ValueError, "stride must be positive (>= 1)", "zero-stride", stride=0),
    bad(
        conv.conv2d_output_size,
        (8, 3),
        TypeError,
        "padding must be an int or a pair of ints such as (2, 1)",
        "float-padding",
        padding=1.5,
    ),
    bad(
        conv.conv2d_reference,
        (IMAGE.tolist(), KERNELS),
        TypeError,
        "e.g. torch.randn(1, 3, 8, 8) and torch.randn(4, 3, 3, 3)",
        "list-input",
    ),
    bad(
        conv.conv2d_reference,
        (IMAGE, KERNELS, [0.0, 0.0]),
        TypeError,
        "bias must be None or a tensor of shape (out_channels,)",
        "list-bias",
    ),
    bad(
        conv.conv2d_reference,
        (torch.randn(5, 5), KERNELS),
        ValueError,
        "pass (N, C_in, H, W), or (C_in, H, W) for one image",
        "2d-input",
    ),
    bad(conv.conv2d_reference, (IMAGE, KERNELS[0]), ValueError, "pass (C_out, C_in // groups, kH, kW)", "3d-weight"),
    bad(
        conv.conv2d_reference,
        (IMAGE, KERNELS),
        TypeError,
        "groups must be an int such as 1",
        "float-groups",
        groups=1.0,
    ),
    bad(conv.conv2d_reference, (IMAGE, KERNELS), ValueError, "1 is an ordinary convolution", "zero-groups", groups=0),
    bad(
        conv.conv2d_reference,
        (IMAGE, torch.randn(3, 1, 3, 3)),
        ValueError,
        "choose groups among the divisors [1, 2, 4]",
        "groups-not-dividing-input",
        groups=3,
    ),
    bad(
        conv.conv2d_reference,
        (IMAGE, torch.randn(3, 2, 3, 3)),
        ValueError,
        "use a multiple of 2 kernels",
        "groups-not-dividing-output",
        groups=2,
    ),
    bad(
        conv.conv2d_reference,
        (IMAGE, torch.randn(2, 3, 3, 3)),
        ValueError,
        "pass weight of shape (2, 4, 3, 3)",
        "weight-channels",
    ),
    bad(
        conv.conv2d_reference,
        (IMAGE, KERNELS, torch.zeros(3)),
        ValueError,
        "pass one number per output channel, (2,)",
        "bias-shape",
    ),
    bad(
        conv.conv2d_reference,
        (IMAGE, KERNELS),
        ValueError,
        "padding must be 'same', 'valid', an int or a pair of ints",
        "unknown-padding",
        padding="full",
    ),
    bad(conv.conv2d_reference, (IMAGE.long(), KERNELS), TypeError, "pass input.float()", "int-input"),
    bad(
        conv.dilate_kernel,
        (torch.ones(3), 2),
        TypeError,
        "weight must be a tensor whose last two dimensions are (kH, kW)",
        "1d-weight",
    ),
    bad(conv.dilate_kernel, (KERNELS, 0), ValueError, "dilation must be positive (>= 1)", "zero-dilation"),
    bad(
        conv.receptive_field,
        ([(3, 1)],),
        TypeError,
        "each layer must be a (kernel_size, stride, dilation) triple of ints",
        "pair",
    ),
    bad(
        conv.receptive_field,
        ([(3.0, 1, 1)],),
        TypeError,
        "each layer must be a (kernel_size, stride, dilation) triple of ints",
        "float",
    ),
    bad(
        conv.receptive_field,
        ([(3, 0, 1)],),
        ValueError,
        "kernel_size, stride and dilation must be positive",
        "zero-stride",
    ),
    bad(conv.receptive_field, (3,), TypeError, "a list of (kernel_size, stride, dilation) triples", "int"),
    bad(
        conv.measure_receptive_field,
        ("conv", 9),
        TypeError,
        "model must be an nn.Module such as nn.Conv2d(1, 1, 3)",
        "str-model",
    ),
    bad(
        conv.measure_receptive_field,
        (nn.Conv2d(1, 1, 3), 0),
        ValueError,
        "input_size must be positive (>= 1)",
        "empty-input",
    ),
    bad(conv.measure_receptive_field, (nn.Conv2d(3, 1, 3), 9), ValueError, "pass in_channels=3", "in-channels"),
    bad(
        conv.count_read_positions,
        ("conv", 9),
        TypeError,
        "model must be an nn.Module such as nn.Conv2d(1, 1, 3)",
        "str-model",
    ),
]
