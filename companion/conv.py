"""Lesson 03: Conv2d in plain Python (stride, padding, dilation, groups), its output size, pictures and checks."""

import copy
import itertools
from collections.abc import Callable, Iterable, Sequence

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import nn

from companion.exercises import passed, require

IntPair = int | tuple[int, int]
PADDING_STRINGS = ("same", "valid")


def _pair(value: object, name: str, smallest: int) -> tuple[int, int]:
    """`value` as (height, width): an int is used for both; each number must be an int >= smallest."""
    numbers = tuple(value) if isinstance(value, tuple | list) else (value,) * 2
    if len(numbers) != 2 or any(isinstance(n, bool) or not isinstance(n, int) for n in numbers):
        raise TypeError(f"{name} must be an int or a pair of ints such as (2, 1), not {value!r}")
    if min(numbers) < smallest:
        what = "positive" if smallest == 1 else "non-negative"
        raise ValueError(f"{name} must be {what} (>= {smallest}), not {value!r}: the default is {smallest}")
    return numbers


def effective_kernel_size(kernel_size: IntPair, dilation: IntPair = 1) -> tuple[int, int]:
    """The span a dilated kernel covers, d*(k-1)+1 per dimension: the size that the output-size formula uses."""
    kernel, dilation = _pair(kernel_size, "kernel_size", 1), _pair(dilation, "dilation", 1)
    return tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True))


def padding_sides(
    padding: IntPair | str, kernel_size: IntPair, stride: IntPair = 1, dilation: IntPair = 1
) -> tuple[int, int, int, int]:
    """Zeros added (top, bottom, left, right) for Conv2d's `padding`, including 'same' and 'valid'."""
    if isinstance(padding, str):
        if padding not in PADDING_STRINGS:
            raise ValueError(f"padding must be 'same', 'valid', an int or a pair of ints, not {padding!r}")
        if padding == "valid":
            return (0, 0, 0, 0)
        if _pair(stride, "stride", 1) != (1, 1):
            raise ValueError("padding='same' needs stride=1: with a larger stride give the padding as numbers")
        # 'same' pads d*(k-1) in all; when that is odd, the extra zero goes at the end (bottom, right).
        total_h, total_w = (span - 1 for span in effective_kernel_size(kernel_size, dilation))
        return (total_h // 2, total_h - total_h // 2, total_w // 2, total_w - total_w // 2)
    pad_h, pad_w = _pair(padding, "padding", 0)
    return (pad_h, pad_h, pad_w, pad_w)


def conv2d_output_size(
    input_size: IntPair,
    kernel_size: IntPair,
    stride: IntPair = 1,
    padding: IntPair | str = 0,
    dilation: IntPair = 1,
) -> tuple[int, int]:
    """(H_out, W_out) of a 2-d convolution: floor((H + 2p - d(k-1) - 1) / s) + 1 in each dimension."""
    height, width = _pair(input_size, "input_size", 1)
    top, bottom, left, right = padding_sides(padding, kernel_size, stride, dilation)
    span_h, span_w = effective_kernel_size(kernel_size, dilation)
    stride_h, stride_w = _pair(stride, "stride", 1)
    padded_h, padded_w = height + top + bottom, width + left + right
    if span_h > padded_h or span_w > padded_w:
        raise ValueError(
            f"the kernel spans {span_h} x {span_w} (dilation*(kernel_size-1)+1) but the padded input is only "
            f"{padded_h} x {padded_w}: use a larger input, more padding, a smaller kernel or a smaller dilation"
        )
    return ((padded_h - span_h) // stride_h + 1, (padded_w - span_w) // stride_w + 1)


def conv2d_reference(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride: IntPair = 1,
    padding: IntPair | str = 0,
    dilation: IntPair = 1,
    groups: int = 1,
) -> torch.Tensor:
    """`F.conv2d` as readable loops (pad, then one dot product per output element), for small tensors only.

    out[n, o, i, j] = bias[o] + sum over the kernel of weight[o] * the input patch that starts at
    (i * stride, j * stride) in the padded input, taking every dilation-th element, from the channels of o's group.
    """
    if isinstance(input, torch.Tensor) and input.dim() == 3:  # like F.conv2d, accept one unbatched image
        return conv2d_reference(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0)
    _check_conv_args(input, weight, bias, groups)
    if not input.is_floating_point() or not weight.is_floating_point():
        raise TypeError(
            f"input and weight must be floating point, not {input.dtype} and {weight.dtype} (F.conv2d refuses "
            "integers): pass input.float() and weight.float()"
        )
    out_channels, channels_per_group, kernel_h, kernel_w = weight.shape
    top, bottom, left, right = padding_sides(padding, (kernel_h, kernel_w), stride, dilation)
    height, width = input.shape[2:]
    out_h, out_w = conv2d_output_size((height, width), (kernel_h, kernel_w), stride, padding, dilation)
    stride_h, stride_w = _pair(stride, "stride", 1)
    dil_h, dil_w = _pair(dilation, "dilation", 1)
    padded = F.pad(input, (left, right, top, bottom))  # zeros on all four sides, before any multiplication
    outputs_per_group = out_channels // groups
    out = input.new_zeros(input.shape[0], out_channels, out_h, out_w)
    for o in range(out_channels):
        group = o // outputs_per_group  # output channel o reads only the input channels of its group
        channels = padded[:, group * channels_per_group : (group + 1) * channels_per_group]
        for i, j in itertools.product(range(out_h), range(out_w)):
            top_row, left_col = i * stride_h, j * stride_w
            patch = channels[
                :,
                :,
                top_row : top_row + dil_h * (kernel_h - 1) + 1 : dil_h,
                left_col : left_col + dil_w * (kernel_w - 1) + 1 : dil_w,
            ]
            out[:, o, i, j] = (patch * weight[o]).sum(dim=(1, 2, 3))
    if bias is not None:
        out += bias.view(1, -1, 1, 1)
    return out


def _check_conv_args(input, weight, bias, groups) -> None:
    """Apply PyTorch's shape rules for conv2d, with messages that say what to pass instead."""
    if not isinstance(input, torch.Tensor) or not isinstance(weight, torch.Tensor):
        raise TypeError("input and weight must be tensors, e.g. torch.randn(1, 3, 8, 8) and torch.randn(4, 3, 3, 3)")
    if bias is not None and not isinstance(bias, torch.Tensor):
        raise TypeError(f"bias must be None or a tensor of shape (out_channels,), not {type(bias).__name__}")
    if input.dim() != 4:
        raise ValueError(f"input has shape {tuple(input.shape)}: pass (N, C_in, H, W), or (C_in, H, W) for one image")
    if weight.dim() != 4:
        raise ValueError(f"weight has shape {tuple(weight.shape)}: pass (C_out, C_in // groups, kH, kW)")
    if isinstance(groups, bool) or not isinstance(groups, int):
        raise TypeError(f"groups must be an int such as 1, not {groups!r}")
    if groups < 1:
        raise ValueError(f"groups must be positive, not {groups}: 1 is an ordinary convolution")
    in_channels, out_channels = input.shape[1], weight.shape[0]
    if in_channels % groups:
        raise ValueError(
            f"in_channels ({in_channels}) must be divisible by groups ({groups}): choose groups among the "
            f"divisors {[g for g in range(1, in_channels + 1) if in_channels % g == 0]}"
        )
    if out_channels % groups:
        raise ValueError(
            f"out_channels ({out_channels}) must be divisible by groups ({groups}): use a multiple of {groups} kernels"
        )
    if weight.shape[1] != in_channels // groups:
        raise ValueError(
            f"weight has shape {tuple(weight.shape)}, but with {in_channels} input channels and groups={groups} "
            f"each kernel holds {in_channels // groups} channels: pass weight of shape "
            f"({out_channels}, {in_channels // groups}, {weight.shape[2]}, {weight.shape[3]})"
        )
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise ValueError(f"bias has shape {tuple(bias.shape)}: pass one number per output channel, ({out_channels},)")


def dilate_kernel(weight: torch.Tensor, dilation: IntPair) -> torch.Tensor:
    """The dense kernel equal to `weight` with `dilation`: d-1 zeros inserted between neighbouring taps."""
    if not isinstance(weight, torch.Tensor) or weight.dim() < 2:
        raise TypeError("weight must be a tensor whose last two dimensions are (kH, kW)")
    dil_h, dil_w = _pair(dilation, "dilation", 1)
    span_h, span_w = effective_kernel_size(tuple(weight.shape[-2:]), (dil_h, dil_w))
    dense = weight.new_zeros(*weight.shape[:-2], span_h, span_w)
    dense[..., ::dil_h, ::dil_w] = weight
    return dense


def receptive_field(layers: Sequence[tuple[int, int, int]]) -> int:
    """How many input positions (along one side) one output element of a stack of convolutions depends on.

    `layers` lists (kernel_size, stride, dilation) from the input upwards. Each layer widens the field by
    d*(k-1) steps of its input, and one step of its input is the product of the strides below it.
    """
    if not isinstance(layers, Iterable) or isinstance(layers, str):
        raise TypeError(
            f"layers must be a list of (kernel_size, stride, dilation) triples, e.g. [(3, 1, 1)], not {layers!r}"
        )
    field, step = 1, 1
    for layer in layers:
        if not isinstance(layer, tuple | list) or len(layer) != 3 or not all(type(n) is int for n in layer):
            raise TypeError(f"each layer must be a (kernel_size, stride, dilation) triple of ints, not {layer!r}")
        if min(layer) < 1:
            raise ValueError(f"kernel_size, stride and dilation must be positive, not {layer!r}")
        kernel, stride, dilation = layer
        field += dilation * (kernel - 1) * step
        step *= stride
    return field


def measure_receptive_field(model: nn.Module, input_size: IntPair, in_channels: int = 1) -> tuple[int, int]:
    """Measure with autograd which input positions the middle output element depends on: (height, width).

    A copy of the model gets every parameter set to 1 (with positive weights no two paths can cancel), the input
    is all ones, and the extent of the nonzero gradient is the receptive field.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module such as nn.Conv2d(1, 1, 3), not {type(model).__name__}")
    first = next((m for m in model.modules() if isinstance(m, nn.Conv2d)), None)
    if first is not None and first.in_channels != in_channels:
        raise ValueError(
            f"the model's first convolution takes {first.in_channels} input channels, not {in_channels}: "
            f"pass in_channels={first.in_channels}"
        )
    probe = copy.deepcopy(model)
    with torch.no_grad():
        for parameter in probe.parameters():
            parameter.fill_(1.0)
    image = torch.ones(1, in_channels, *_pair(input_size, "input_size", 1), requires_grad=True)
    out = probe(image)
    out[0, 0, out.shape[2] // 2, out.shape[3] // 2].backward()
    rows, cols = image.grad[0].abs().sum(dim=0).nonzero(as_tuple=True)
    return (int(rows.max() - rows.min()) + 1, int(cols.max() - cols.min()) + 1)


def _sampled_positions(kernel_size: int, dilation: int, centre: int) -> list[int]:
    """The input positions (along one side) that a kernel centred on `centre` multiplies, for odd kernel sizes."""
    if kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be odd so that the kernel has a centre, not {kernel_size}")
    _pair(dilation, "dilation", 1)
    return [centre + dilation * (t - kernel_size // 2) for t in range(kernel_size)]


def plot_dilation(kernel_size: int = 3, dilations: Sequence[int] = (1, 2, 3), input_size: int = 9) -> Figure:
    """Draw, for each dilation, the input positions that one output element reads and the span they cover."""
    if not isinstance(dilations, Sequence):
        raise TypeError(f"dilations must be a tuple of ints, e.g. (1, 2, 3), not {dilations!r}")
    if not dilations:
        raise ValueError("dilations is empty: pass at least one dilation, e.g. (1, 2, 3)")
    spans = [effective_kernel_size(kernel_size, d)[0] for d in dilations]
    if max(spans) > input_size:
        raise ValueError(f"input_size {input_size} is too small for a kernel spanning {max(spans)}: pass a larger one")
    centre = input_size // 2
    fig, axes = plt.subplots(
        1, len(dilations), figsize=(3.2 * len(dilations), 3.8), squeeze=False, layout="constrained"
    )
    for ax, dilation, span in zip(axes[0], dilations, spans, strict=True):
        taps = _sampled_positions(kernel_size, dilation, centre)
        for row, col in itertools.product(range(input_size), range(input_size)):
            hit = row in taps and col in taps
            ax.add_patch(plt.Rectangle((col, row), 1, 1, facecolor="tab:orange" if hit else "white", edgecolor="0.75"))
        corner = centre - span // 2
        ax.add_patch(plt.Rectangle((corner, corner), span, span, fill=False, edgecolor="tab:blue", linewidth=2.5))
        ax.set_xlim(0, input_size)
        ax.set_ylim(input_size, 0)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_visible(False)
        ax.set_title(f"dilation={dilation}: span {span}×{span}\n空洞 {dilation}：覆盖 {span}×{span}", fontsize=11)
    size = f"{kernel_size}×{kernel_size}"
    fig.suptitle(f"{size} kernel, {kernel_size**2} weights / {size} 卷积核，{kernel_size**2} 个权重")
    return fig


def check_output_length(conv_output_length: Callable[[int, int, int, int, int], int]) -> None:
    """Self-check: `conv_output_length(length, kernel_size, stride, padding, dilation)` must match F.conv1d."""
    require(callable(conv_output_length), "Pass the function itself: check_output_length(conv_output_length).")
    cases = [(32, 3, 1, 1, 1), (32, 3, 2, 1, 1), (7, 3, 2, 0, 1), (10, 3, 1, 0, 2), (28, 5, 3, 2, 2), (5, 5, 1, 0, 1)]
    cases += [(100, 7, 4, 3, 3), (9, 2, 2, 0, 4), (15, 4, 3, 1, 1)]
    typical_mistakes = {  # hint -> what the mistake gives
        "a dilated kernel spans d*(k-1)+1 inputs, not k": lambda n, k, s, p, d: (n + 2 * p - k) // s + 1,
        "padding adds zeros on both sides: 2 * padding": lambda n, k, s, p, d: (n + p - d * (k - 1) - 1) // s + 1,
        "count the first position too: + 1 at the end": lambda n, k, s, p, d: (n + 2 * p - d * (k - 1) - 1) // s,
        "round down (floor division //), not up": lambda n, k, s, p, d: -(-(n + 2 * p - d * (k - 1) - 1) // s) + 1,
    }
    answers = {}
    for case in cases:
        length, kernel, stride, padding, dilation = case
        signal, kernel_weights = torch.zeros(1, 1, length), torch.zeros(1, 1, kernel)
        want = F.conv1d(signal, kernel_weights, stride=stride, padding=padding, dilation=dilation).shape[-1]
        got = conv_output_length(*case)
        require(
            isinstance(got, int) and not isinstance(got, bool),
            f"conv_output_length{case} returned {got!r}; return an int: round down with // (floor division), not /",
        )
        answers[case] = (got, want)
    wrong = [case for case, (got, want) in answers.items() if got != want]
    if wrong:
        got, want = answers[wrong[0]]
        where = f"conv_output_length{wrong[0]} gives {got}, expected {want}"
        for hint, mistake in typical_mistakes.items():  # name the mistake that explains every answer
            require(any(got != mistake(*case) for case, (got, _) in answers.items()), f"{where}: {hint}.")
        require(False, f"{where}: floor((L + 2p - d(k-1) - 1) / s) + 1.")
    passed(f"conv_output_length agrees with F.conv1d on {len(cases)} configurations")


def _depthwise_by_loop(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Depthwise convolution the long way: each channel convolved with its own kernel, then stacked."""
    padding = weight.shape[-1] // 2
    return torch.cat([F.conv2d(x[:, c : c + 1], weight[c : c + 1], padding=padding) for c in range(x.shape[1])], 1)


def check_depthwise_conv(depthwise_conv: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Self-check: `depthwise_conv(x, weight)` must convolve each channel with its own kernel, keeping H and W."""
    require(callable(depthwise_conv), "Pass the function itself: check_depthwise_conv(depthwise_conv), without ().")
    generator = torch.Generator().manual_seed(3)
    cases = [((1, 3, 5, 5), 3), ((2, 4, 6, 7), 3), ((1, 2, 8, 8), 5), ((3, 1, 4, 4), 1)]
    for shape, kernel in cases:
        x = torch.randn(shape, generator=generator)
        weight = torch.randn(shape[1], 1, kernel, kernel, generator=generator)
        where = f"depthwise_conv(<x of shape {shape}>, <weight of shape {tuple(weight.shape)}>)"
        try:
            got = depthwise_conv(x, weight)
        except RuntimeError as error:
            require("groups" not in str(error), f"{where} failed: pass groups=x.shape[1], one group per channel.")
            raise
        want = _depthwise_by_loop(x, weight)
        require(isinstance(got, torch.Tensor), f"{where} should return a tensor, not {type(got).__name__}.")
        require(
            got.shape == want.shape,
            f"{where} has shape {tuple(got.shape)}, expected {tuple(want.shape)}: pad by kernel_size // 2 (or "
            "padding='same') to keep H and W, and keep one output channel per input channel.",
        )
        require(
            torch.allclose(got, want, atol=1e-5),
            f"{where} gives other numbers: each output channel must see only its own input channel, through "
            "F.conv2d(x, weight, padding=..., groups=x.shape[1]).",
        )
    passed(f"depthwise_conv agrees with a per-channel loop on {len(cases)} cases")
