"""Lesson 05: Conv2d in plain Python (stride, padding, dilation, groups), its output size, and the lesson's pictures
(the inputs a dilated kernel reads; the edges a Sobel kernel finds in a digit).

The code the lesson teaches comes first: `conv2d_reference`, then the arithmetic of sizes and receptive fields.
Argument guards sit below it; the exercise self-checks live in `companion/checks/conv.py`.
"""

import copy
import itertools
from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import nn

from companion._validate import require_int
from companion.language import in_language, say
from companion.plotting import COLUMN_WIDTH

IntPair = int | tuple[int, int]
PADDING_STRINGS = ("same", "valid")


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
        batched = input.unsqueeze(0)  # (C_in, H, W) -> (1, C_in, H, W)
        return conv2d_reference(batched, weight, bias, stride, padding, dilation, groups).squeeze(0)  # (C_out, ...)
    _check_conv_args(input, weight, bias, groups)
    out_channels, channels_per_group, kernel_h, kernel_w = weight.shape
    top, bottom, left, right = padding_sides(padding, (kernel_h, kernel_w), stride, dilation)
    out_h, out_w = conv2d_output_size(tuple(input.shape[2:]), (kernel_h, kernel_w), stride, padding, dilation)
    (stride_h, stride_w), (dil_h, dil_w) = _pair(stride, "stride", 1), _pair(dilation, "dilation", 1)
    padded = F.pad(input, (left, right, top, bottom))  # (N, C_in, H + top + bottom, W + left + right): zeros first
    outputs_per_group = out_channels // groups
    out = input.new_zeros(input.shape[0], out_channels, out_h, out_w)  # (N, C_out, H_out, W_out)
    for o in range(out_channels):
        group = o // outputs_per_group  # output channel o reads only the input channels of its group
        channels = padded[:, group * channels_per_group : (group + 1) * channels_per_group]  # (N, C_in/groups, ...)
        for i, j in itertools.product(range(out_h), range(out_w)):
            top_row, left_col = i * stride_h, j * stride_w
            patch = channels[
                :,
                :,
                top_row : top_row + dil_h * (kernel_h - 1) + 1 : dil_h,
                left_col : left_col + dil_w * (kernel_w - 1) + 1 : dil_w,
            ]  # (N, C_in/groups, kH, kW): every dilation-th element under the kernel
            out[:, o, i, j] = (patch * weight[o]).sum(dim=(1, 2, 3))  # (N,): one dot product per sample
    if bias is not None:
        out += bias.view(1, -1, 1, 1)  # (C_out,) -> (1, C_out, 1, 1), broadcast over N, H_out and W_out
    return out


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
    _check_kernel_fits((span_h, span_w), (padded_h, padded_w))
    return ((padded_h - span_h) // stride_h + 1, (padded_w - span_w) // stride_w + 1)


def effective_kernel_size(kernel_size: IntPair, dilation: IntPair = 1) -> tuple[int, int]:
    """The span a dilated kernel covers, d*(k-1)+1 per dimension: the size that the output-size formula uses."""
    kernel, dilation = _pair(kernel_size, "kernel_size", 1), _pair(dilation, "dilation", 1)
    return tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True))


def padding_sides(
    padding: IntPair | str, kernel_size: IntPair, stride: IntPair = 1, dilation: IntPair = 1
) -> tuple[int, int, int, int]:
    """Zeros added (top, bottom, left, right) for Conv2d's `padding`, including 'same' and 'valid'."""
    _check_padding_string(padding)
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":
        _check_same_padding(stride)
        # 'same' pads d*(k-1) in all; when that is odd, the extra zero goes at the end (bottom, right).
        total_h, total_w = (span - 1 for span in effective_kernel_size(kernel_size, dilation))
        return (total_h // 2, total_h - total_h // 2, total_w // 2, total_w - total_w // 2)
    pad_h, pad_w = _pair(padding, "padding", 0)
    return (pad_h, pad_h, pad_w, pad_w)


def dilate_kernel(weight: torch.Tensor, dilation: IntPair) -> torch.Tensor:
    """The dense kernel equal to `weight` with `dilation`: d-1 zeros inserted between neighbouring taps."""
    if not isinstance(weight, torch.Tensor) or weight.dim() < 2:
        raise TypeError(
            in_language(
                "weight must be a tensor whose last two dimensions are (kH, kW)",
                "weight 必须是最后两个维度为 (kH, kW) 的张量",
            )
        )
    dil_h, dil_w = _pair(dilation, "dilation", 1)
    span_h, span_w = effective_kernel_size(tuple(weight.shape[-2:]), (dil_h, dil_w))
    dense = weight.new_zeros(*weight.shape[:-2], span_h, span_w)  # (..., d(kH-1)+1, d(kW-1)+1)
    dense[..., ::dil_h, ::dil_w] = weight  # every d-th row and column holds a tap
    return dense


def receptive_field(layers: Sequence[tuple[int, int, int]]) -> int:
    """How many input positions (along one side) one output element of a stack of convolutions depends on.

    `layers` lists (kernel_size, stride, dilation) from the input upwards. Each layer widens the field by
    d*(k-1) steps of its input, and one step of its input is the product of the strides below it.
    """
    field, step = 1, 1
    for kernel, stride, dilation in _check_layers(layers):
        field += dilation * (kernel - 1) * step
        step *= stride
    return field


def measure_receptive_field(model: nn.Module, input_size: IntPair, in_channels: int = 1) -> tuple[int, int]:
    """Measure with autograd the span of input positions the middle output element depends on: (height, width).

    A copy of the model gets every parameter set to 1 (with positive weights no two paths can cancel), the input
    is all ones, and the extent (last minus first, plus 1) of the nonzero gradient is the receptive field. The span
    may have holes: `count_read_positions` counts the positions inside it that are really read. Valid for
    convolutions and average pooling, not max pooling: on the all-ones input every window ties, the gradient goes
    through one element per window, and the span comes out too small.
    """
    rows, cols = _read_mask(model, input_size, in_channels).nonzero(as_tuple=True)  # nonzero positions
    return (int(rows.max() - rows.min()) + 1, int(cols.max() - cols.min()) + 1)


def count_read_positions(model: nn.Module, input_size: IntPair, in_channels: int = 1) -> int:
    """How many input positions (height x width) the middle output element depends on, measured like the span
    (so, like it, for convolutions and average pooling: not for max pooling)."""
    return int(_read_mask(model, input_size, in_channels).sum())


def _read_mask(model: nn.Module, input_size: IntPair, in_channels: int) -> torch.Tensor:
    """(H, W) bool: where the middle output element of an all-ones copy of the model has a nonzero gradient."""
    _check_model_input(model, in_channels)
    probe = copy.deepcopy(model)
    with torch.no_grad():
        for parameter in probe.parameters():
            parameter.fill_(1.0)
    image = torch.ones(1, in_channels, *_pair(input_size, "input_size", 1), requires_grad=True)  # (1, C, H, W)
    out = probe(image)  # (1, C_out, H_out, W_out)
    out[0, 0, out.shape[2] // 2, out.shape[3] // 2].backward()
    return image.grad[0].abs().sum(dim=0) != 0  # (C, H, W) -> (H, W)


# Argument guards: where a learner's own values arrive, each error says what to pass instead. -------------------


def _pair(value: object, name: str, smallest: int) -> tuple[int, int]:
    """`value` as (height, width): an int is used for both; each number must be an int >= smallest."""
    numbers = tuple(value) if isinstance(value, tuple | list) else (value,) * 2
    if len(numbers) != 2 or any(isinstance(n, bool) or not isinstance(n, int) for n in numbers):
        raise TypeError(
            in_language(
                f"{name} must be an int or a pair of ints such as (2, 1), not {value!r}",
                f"{name} 必须是一个整数或一对整数，例如 (2, 1)，而不是 {value!r}",
            )
        )
    if min(numbers) < smallest:
        what = "positive" if smallest == 1 else "non-negative"
        what_zh = "正数" if smallest == 1 else "非负数"
        raise ValueError(
            in_language(
                f"{name} must be {what} (>= {smallest}), not {value!r}: the default is {smallest}",
                f"{name} 必须是{what_zh}（>= {smallest}），而不是 {value!r}：默认值是 {smallest}",
            )
        )
    return numbers


def _check_padding_string(padding: object) -> None:
    """A string padding is one of PyTorch's two words."""
    if isinstance(padding, str) and padding not in PADDING_STRINGS:
        raise ValueError(
            in_language(
                f"padding must be 'same', 'valid', an int or a pair of ints, not {padding!r}",
                f"padding 必须是 'same'、'valid'、一个整数或一对整数，而不是 {padding!r}",
            )
        )


def _check_same_padding(stride: IntPair) -> None:
    """'same' keeps the size only with stride 1."""
    if _pair(stride, "stride", 1) != (1, 1):
        raise ValueError(
            in_language(
                "padding='same' needs stride=1: with a larger stride give the padding as numbers",
                "padding='same' 要求 stride=1：步幅更大时请用数字给出填充",
            )
        )


def _check_kernel_fits(span: tuple[int, int], padded: tuple[int, int]) -> None:
    """The dilated kernel must fit into the padded input."""
    if span[0] > padded[0] or span[1] > padded[1]:
        raise ValueError(
            in_language(
                f"the kernel spans {span[0]} x {span[1]} (dilation*(kernel_size-1)+1) but the padded input is only "
                f"{padded[0]} x {padded[1]}: use a larger input, more padding, a smaller kernel or a smaller dilation",
                f"卷积核覆盖 {span[0]} x {span[1]}（dilation*(kernel_size-1)+1），而填充后的输入只有 "
                f"{padded[0]} x {padded[1]}：请用更大的输入、更多填充、更小的卷积核或更小的空洞率",
            )
        )


def _check_conv_args(input, weight, bias, groups) -> None:
    """Apply PyTorch's shape rules for conv2d, with messages that say what to pass instead."""
    if not isinstance(input, torch.Tensor) or not isinstance(weight, torch.Tensor):
        raise TypeError(
            in_language(
                "input and weight must be tensors, e.g. torch.randn(1, 3, 8, 8) and torch.randn(4, 3, 3, 3)",
                "input 和 weight 必须是张量，例如 torch.randn(1, 3, 8, 8) 和 torch.randn(4, 3, 3, 3)",
            )
        )
    if bias is not None and not isinstance(bias, torch.Tensor):
        kind = type(bias).__name__
        raise TypeError(
            in_language(
                f"bias must be None or a tensor of shape (out_channels,), not {kind}",
                f"bias 必须是 None 或形状为 (out_channels,) 的张量，而不是 {kind}",
            )
        )
    if input.dim() != 4:
        shape = tuple(input.shape)
        raise ValueError(
            in_language(
                f"input has shape {shape}: pass (N, C_in, H, W), or (C_in, H, W) for one image",
                f"input 的形状是 {shape}：请传入 (N, C_in, H, W)，单张图像传入 (C_in, H, W)",
            )
        )
    if weight.dim() != 4:
        shape = tuple(weight.shape)
        raise ValueError(
            in_language(
                f"weight has shape {shape}: pass (C_out, C_in // groups, kH, kW)",
                f"weight 的形状是 {shape}：请传入 (C_out, C_in // groups, kH, kW)",
            )
        )
    if not input.is_floating_point() or not weight.is_floating_point():
        raise TypeError(
            in_language(
                f"input and weight must be floating point, not {input.dtype} and {weight.dtype} (F.conv2d refuses "
                "integers): pass input.float() and weight.float()",
                f"input 和 weight 必须是浮点数，而不是 {input.dtype} 和 {weight.dtype}（F.conv2d 不接受整数）："
                "请传入 input.float() 和 weight.float()",
            )
        )
    if require_int(groups, "groups") < 1:
        raise ValueError(
            in_language(
                f"groups must be positive, not {groups}: 1 is an ordinary convolution",
                f"groups 必须是正数，而不是 {groups}：1 就是普通卷积",
            )
        )
    in_channels, out_channels = input.shape[1], weight.shape[0]
    if in_channels % groups:
        divisors = [g for g in range(1, in_channels + 1) if in_channels % g == 0]
        raise ValueError(
            in_language(
                f"in_channels ({in_channels}) must be divisible by groups ({groups}): choose groups among the "
                f"divisors {divisors}",
                f"in_channels（{in_channels}）必须能被 groups（{groups}）整除：请从它的约数 {divisors} 中选 groups",
            )
        )
    if out_channels % groups:
        raise ValueError(
            in_language(
                f"out_channels ({out_channels}) must be divisible by groups ({groups}): use a multiple of {groups} "
                "kernels",
                f"out_channels（{out_channels}）必须能被 groups（{groups}）整除：卷积核的个数请用 {groups} 的倍数",
            )
        )
    if weight.shape[1] != in_channels // groups:
        per_group = in_channels // groups
        shape = tuple(weight.shape)
        wanted = (out_channels, per_group, weight.shape[2], weight.shape[3])
        raise ValueError(
            in_language(
                f"weight has shape {shape}, but with {in_channels} input channels and groups={groups} "
                f"each kernel holds {per_group} channels: pass weight of shape {wanted}",
                f"weight 的形状是 {shape}，但输入有 {in_channels} 个通道、groups={groups} 时，"
                f"每个卷积核含 {per_group} 个通道：请传入形状为 {wanted} 的 weight",
            )
        )
    if bias is not None and tuple(bias.shape) != (out_channels,):
        shape = tuple(bias.shape)
        raise ValueError(
            in_language(
                f"bias has shape {shape}: pass one number per output channel, ({out_channels},)",
                f"bias 的形状是 {shape}：请给每个输出通道一个数，形状 ({out_channels},)",
            )
        )


def _check_layers(layers) -> list[tuple[int, int, int]]:
    """A list of (kernel_size, stride, dilation) triples of positive ints."""
    if isinstance(layers, str) or not isinstance(layers, Sequence):
        raise TypeError(
            in_language(
                f"layers must be a list of (kernel_size, stride, dilation) triples, e.g. [(3, 1, 1)], not {layers!r}",
                f"layers 必须是 (kernel_size, stride, dilation) 三元组的列表，例如 [(3, 1, 1)]，而不是 {layers!r}",
            )
        )
    for layer in layers:
        if not isinstance(layer, tuple | list) or len(layer) != 3 or not all(type(n) is int for n in layer):
            raise TypeError(
                in_language(
                    f"each layer must be a (kernel_size, stride, dilation) triple of ints, not {layer!r}",
                    f"每一层必须是由整数组成的 (kernel_size, stride, dilation) 三元组，而不是 {layer!r}",
                )
            )
        if min(layer) < 1:
            raise ValueError(
                in_language(
                    f"kernel_size, stride and dilation must be positive, not {layer!r}",
                    f"kernel_size、stride 和 dilation 必须是正数，而不是 {layer!r}",
                )
            )
    return [tuple(layer) for layer in layers]


def _check_model_input(model, in_channels) -> None:
    """A module whose first convolution takes `in_channels` channels."""
    if not isinstance(model, nn.Module):
        kind = type(model).__name__
        raise TypeError(
            in_language(
                f"model must be an nn.Module such as nn.Conv2d(1, 1, 3), not {kind}",
                f"model 必须是 nn.Module，例如 nn.Conv2d(1, 1, 3)，而不是 {kind}",
            )
        )
    require_int(in_channels, "in_channels", 1)
    first = next((m for m in model.modules() if isinstance(m, nn.Conv2d)), None)
    if first is not None and first.in_channels != in_channels:
        raise ValueError(
            in_language(
                f"the model's first convolution takes {first.in_channels} input channels, not {in_channels}: "
                f"pass in_channels={first.in_channels}",
                f"模型的第一个卷积接受 {first.in_channels} 个输入通道，而不是 {in_channels}："
                f"请传入 in_channels={first.in_channels}",
            )
        )


# The lesson's pictures (called only with the lesson's own arguments, so no guards). ---------------------------------


def _sampled_positions(kernel_size: int, dilation: int, centre: int) -> list[int]:
    """The input positions (along one side) that an odd kernel centred on `centre` multiplies."""
    return [centre + dilation * (t - kernel_size // 2) for t in range(kernel_size)]


def plot_dilation(kernel_size: int = 3, dilations: Sequence[int] = (1, 2, 3), input_size: int = 9) -> Figure:
    """Draw, for each dilation, the input positions that one output element reads and the span they cover."""
    centre = input_size // 2
    fig, axes = plt.subplots(1, len(dilations), figsize=(COLUMN_WIDTH, 3.3), squeeze=False, layout="constrained")
    for ax, dilation in zip(axes[0], dilations, strict=True):
        span = effective_kernel_size(kernel_size, dilation)[0]
        taps = _sampled_positions(kernel_size, dilation, centre)
        for row, col in itertools.product(range(input_size), range(input_size)):
            hit = row in taps and col in taps
            ax.add_patch(plt.Rectangle((col, row), 1, 1, facecolor="tab:orange" if hit else "white", edgecolor="0.75"))
        corner = centre - span // 2
        ax.add_patch(plt.Rectangle((corner, corner), span, span, fill=False, edgecolor="tab:blue", linewidth=2.5))
        ax.set_xlim(0, input_size)
        ax.set_ylim(input_size, 0)
        ax.set_aspect("equal")
        ax.set_axis_off()
        ax.set_title(
            say(f"dilation={dilation}: span {span}×{span}", f"空洞率 {dilation}：覆盖 {span}×{span}", "\n"), fontsize=10
        )
    size = f"{kernel_size}×{kernel_size}"
    fig.suptitle(
        say(f"{size} kernel, {kernel_size**2} weights", f"{size} 卷积核，{kernel_size**2} 个权重"), fontsize=11
    )
    return fig


def plot_edge_responses(
    image: torch.Tensor,
    kernels: torch.Tensor,
    titles: Sequence[str] | None = None,
    row: int | None = None,
) -> Figure:
    """Draw a (1, H, W) image and its response map to each of the (C_out, 1, kH, kW) kernels, side by side.

    The maps are `F.conv2d(image, kernels, padding="same")`, on one colour scale centred on 0: red where the window
    looks like the kernel (positive), blue where it looks like the kernel with its sign flipped. `row` frames one row
    of pixels in every panel: the row the lesson prints. `titles` default to "vertical edges", "horizontal edges".
    """
    if titles is None:  # chosen at the call, not at import: the edition's language may be set after the import
        titles = (say("vertical edges", "竖直边缘"), say("horizontal edges", "水平边缘"))
    responses = F.conv2d(image, kernels, padding="same")  # (1, H, W) -> (C_out, H, W)
    limit = float(responses.abs().max())
    fig, axes = plt.subplots(1, 1 + len(responses), figsize=(COLUMN_WIDTH, 2.9), layout="constrained")
    axes[0].imshow(image[0].numpy(), cmap="gray_r", vmin=0.0, vmax=1.0)  # ink dark on white paper
    axes[0].set_title(say("input", "输入"), fontsize=10)
    for ax, response, title in zip(axes[1:], responses, titles, strict=True):
        shown = ax.imshow(response.numpy(), cmap="RdBu_r", vmin=-limit, vmax=limit)
        ax.set_title(title, fontsize=10)
    fig.colorbar(shown, ax=list(axes[1:]), shrink=0.85, label=say("response", "响应"))
    width = image.shape[-1]
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():  # a frame on all four sides, so the white paper has an edge
            spine.set_visible(True)
            spine.set_edgecolor("0.6")
        if row is not None:
            ax.add_patch(plt.Rectangle((-0.5, row - 0.5), width, 1, fill=False, edgecolor="0.2", linestyle="--"))
    return fig
