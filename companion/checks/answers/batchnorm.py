"""Lesson 06's reference answers, other correct answers and typical mistakes (the teacher's part: never imported by
companion/checks/batchnorm.py, left out of the student bundle)."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_weights

from companion.checks.batchnorm import check_fuse_conv_bn, check_group_norm
from companion.exercises import Exercise, Mistake

# --- exercise 1: group_norm -------------------------------------------------------------------------------------------


def _reference_group_norm(x, groups, eps):
    n, c, h, w = x.shape
    grouped = x.reshape(n, groups, c // groups, h, w)  # (N, G, C/G, H, W): consecutive channels per group
    mean = grouped.mean(dim=(2, 3, 4), keepdim=True)  # (N, G, 1, 1, 1)
    variance = grouped.var(dim=(2, 3, 4), unbiased=False, keepdim=True)  # (N, G, 1, 1, 1)
    return ((grouped - mean) / torch.sqrt(variance + eps)).reshape(n, c, h, w)  # (N, C, H, W)


def _right_var_mean_rsqrt(x, groups, eps):
    flat = x.flatten(1).unflatten(1, (groups, -1))  # (N, G, C/G * H * W)
    variance, mean = torch.var_mean(flat, dim=2, correction=0, keepdim=True)
    return ((flat - mean) * torch.rsqrt(variance + eps)).reshape(x.shape)


def _right_group_norm_in_float64(x, groups, eps):
    flat = x.double().reshape(x.shape[0], groups, -1)
    centred = flat - flat.mean(dim=-1, keepdim=True)
    variance = (centred**2).mean(dim=-1, keepdim=True)
    return (centred / (variance + eps).sqrt()).reshape(x.shape).to(x.dtype)


def _over(x, shape, dims, eps, *, unbiased=False, eps_after=False):
    grouped = x.reshape(shape)
    mean = grouped.mean(dim=dims, keepdim=True)
    variance = grouped.var(dim=dims, unbiased=unbiased, keepdim=True)
    spread = torch.sqrt(variance) + eps if eps_after else torch.sqrt(variance + eps)
    return ((grouped - mean) / spread).reshape(x.shape)


def _grouped(x, g):
    return (x.shape[0], g, x.shape[1] // g, *x.shape[2:])


def _mistake_unbiased(x, g, eps):
    return _over(x, _grouped(x, g), (2, 3, 4), eps, unbiased=True)


def _mistake_eps_after_root(x, g, eps):
    return _over(x, _grouped(x, g), (2, 3, 4), eps, eps_after=True)


def _mistake_no_eps(x, g, eps):
    return _over(x, _grouped(x, g), (2, 3, 4), 0.0)


def _mistake_over_the_batch(x, g, eps):
    return _over(x, _grouped(x, g), (0, 2, 3, 4), eps)


def _mistake_interleaved_groups(x, g, eps):
    return _over(x, (x.shape[0], x.shape[1] // g, g, *x.shape[2:]), (1, 3, 4), eps)


def _mistake_layer_norm(x, g, eps):
    return F.layer_norm(x, x.shape[1:], eps=eps)


def _mistake_calls_group_norm(x, g, eps):
    return F.group_norm(x, g, eps=eps)


def _mistake_builds_nn_group_norm(x, g, eps):
    return nn.GroupNorm(g, x.shape[1], eps=eps, affine=False)(x)


def _mistake_in_float32(x, g, eps):
    return _reference_group_norm(x.float(), g, eps)


def _mistake_view(x, g, eps):
    n, c, h, w = x.shape
    grouped = x.view(n, g, -1)
    variance, mean = torch.var_mean(grouped, dim=2, correction=0, keepdim=True)
    return ((grouped - mean) / (variance + eps).sqrt()).view(n, c, h, w)


def _mistake_in_place(x, g, eps):
    grouped = x.view(x.shape[0], g, -1) if x.is_contiguous() else x.reshape(x.shape[0], g, -1)
    variance, mean = torch.var_mean(grouped, dim=2, correction=0, keepdim=True)
    grouped.sub_(mean).div_((variance + eps).sqrt())
    return grouped.reshape(x.shape)


# --- exercise 2: fuse_conv_bn -----------------------------------------------------------------------------------------


def _reference_fuse(conv, bn):
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)  # (C_out,)
    weight = conv.weight * scale.reshape(-1, 1, 1, 1)  # (C_out, C_in / groups, kH, kW)
    bias = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
    bias = (bias - bn.running_mean) * scale + bn.bias  # (C_out,)
    return weight.detach(), bias.detach()


def _right_einsum(conv, bn):
    with torch.no_grad():
        s = bn.weight * torch.rsqrt(bn.running_var + bn.eps)
        b = bn.bias - bn.running_mean * s
        if conv.bias is not None:
            b = b + conv.bias * s
        return torch.einsum("oikl,o->oikl", conv.weight, s), b


def _right_torch_fusion(conv, bn):
    w, b = fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return w.detach(), b.detach()


def _right_fuse_in_float64(conv, bn):
    with torch.no_grad():
        s = bn.weight.double() / (bn.running_var.double() + bn.eps).sqrt()
        b = torch.zeros_like(s) if conv.bias is None else conv.bias.double()
        weight = conv.weight.double() * s.view(-1, 1, 1, 1)
        return weight.to(conv.weight.dtype), ((b - bn.running_mean) * s + bn.bias).to(conv.weight.dtype)


def _wrong_fuse(
    *,
    eps=True,
    sqrt=True,
    per_output=True,
    scale_shift=True,
    scale_mean=True,
    bn_bias=True,
    conv_bias=True,
    eps_inside=True,
):
    def fuse(conv, bn):
        with torch.no_grad():
            if not sqrt:
                spread = bn.running_var + bn.eps
            elif not eps_inside:
                spread = torch.sqrt(bn.running_var) + bn.eps
            else:
                spread = torch.sqrt(bn.running_var + (bn.eps if eps else 0.0))
            s = bn.weight / spread
            weight = conv.weight * s.reshape((-1, 1, 1, 1) if per_output else (1, -1, 1, 1))
            b = conv.bias if conv.bias is not None and conv_bias else torch.zeros_like(bn.running_mean)
            if not scale_shift:
                shift = b - bn.running_mean
            elif not scale_mean:
                shift = b * s - bn.running_mean
            else:
                shift = (b - bn.running_mean) * s
            return weight, shift + (bn.bias if bn_bias else 0.0)

    return fuse


def _mistake_fuse_in_place(conv, bn):
    with torch.no_grad():
        s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        b = conv.bias.clone() if conv.bias is not None else torch.zeros_like(s)
        return conv.weight.mul_(s.view(-1, 1, 1, 1)), (b - bn.running_mean) * s + bn.bias


def _mistake_fuse_in_float32(conv, bn):
    weight, bias = _reference_fuse(conv, bn)
    return weight.float(), bias.float()


EXERCISES = [
    Exercise(
        check=check_group_norm,
        reference=_reference_group_norm,
        mistakes=(
            Mistake("unbiased variance", _mistake_unbiased, "n - 1", what_zh="用了无偏方差"),
            Mistake(
                "eps outside the square root",
                _mistake_eps_after_root,
                "inside the square root",
                what_zh="eps 加在平方根外面",
            ),
            Mistake("forgets eps", _mistake_no_eps, "add eps", what_zh="漏加 eps"),
            Mistake(
                "reduces over the batch too", _mistake_over_the_batch, "leave the batch", what_zh="连批这一维也一起归约"
            ),
            Mistake(
                "interleaved groups: reshape (N, C // G, G, H, W)",
                _mistake_interleaved_groups,
                "consecutive",
                what_zh="通道交错分组：变形为 (N, C // G, G, H, W)",
            ),
            Mistake(
                "per channel (instance norm)",
                lambda x, g, eps: F.instance_norm(x, eps=eps),
                "on its own",
                what_zh="逐通道归一化（即实例归一化）",
            ),
            Mistake(
                "ignores groups (LayerNorm over C, H, W)",
                _mistake_layer_norm,
                "as LayerNorm does",
                what_zh="忽略分组（在 C、H、W 上做 LayerNorm）",
            ),
            Mistake(
                "calls the forbidden F.group_norm",
                _mistake_calls_group_norm,
                "switches those off",
                what_zh="调用了禁止使用的 F.group_norm",
            ),
            Mistake(
                "builds an nn.GroupNorm",
                _mistake_builds_nn_group_norm,
                "switches those off",
                what_zh="直接构造 nn.GroupNorm",
            ),
            Mistake(
                "computes in float32 whatever x's dtype",
                _mistake_in_float32,
                "keeps its input's dtype",
                what_zh="不管 x 是什么数据类型，一律用 float32 计算",
            ),
            Mistake(
                "x.view on an input that is not contiguous",
                _mistake_view,
                "a reshape copies",
                what_zh="对内存不连续的输入调用 x.view",
            ),
            Mistake(
                "normalises x in place", _mistake_in_place, "changed its argument number 1", what_zh="原地归一化 x"
            ),
        ),
        right=(_right_var_mean_rsqrt, _right_group_norm_in_float64),
        why="GroupNorm reduces over each sample's group of channels and its positions, so its output for one sample "
        "never depends on the rest of the batch.",
        why_zh="GroupNorm 在每个样本的一组通道及其所有位置上求统计量，所以一个样本的输出与同批其他样本无关。",
        discuss="With groups=1 and groups=C, which other layers does GroupNorm become?",
        discuss_zh="groups=1 和 groups=C 时，GroupNorm 分别变成了哪种归一化层？",
    ),
    Exercise(
        check=check_fuse_conv_bn,
        reference=_reference_fuse,
        mistakes=(
            Mistake("forgets eps", _wrong_fuse(eps=False), "add eps to running_var", what_zh="漏加 eps"),
            Mistake(
                "eps outside the square root",
                _wrong_fuse(eps_inside=False),
                "eps goes inside",
                what_zh="eps 加在平方根外面",
            ),
            Mistake(
                "divides by the variance", _wrong_fuse(sqrt=False), "standard deviation", what_zh="除以方差而不是标准差"
            ),
            Mistake(
                "shift not scaled",
                _wrong_fuse(scale_shift=False),
                "shift passes through",
                what_zh="偏移量没有乘缩放系数",
            ),
            Mistake(
                "conv bias scaled, running_mean not",
                _wrong_fuse(scale_mean=False),
                "scaled as well",
                what_zh="缩放了卷积偏置，却没缩放 running_mean",
            ),
            Mistake("leaves out bn.bias", _wrong_fuse(bn_bias=False), "its own bias (beta)", what_zh="漏掉 bn.bias"),
            Mistake(
                "drops the conv's bias",
                _wrong_fuse(conv_bias=False),
                "conv's own bias",
                what_zh="丢掉了卷积层自己的偏置",
            ),
            Mistake(
                "scales the input channels",
                _wrong_fuse(per_output=False),
                "OUTPUT channels",
                what_zh="按输入通道缩放，而不是输出通道",
            ),
            Mistake(
                "scales conv.weight in place",
                _mistake_fuse_in_place,
                "changed its argument number 1",
                what_zh="原地缩放 conv.weight",
            ),
            Mistake(
                "returns float32 whatever the layers' dtype",
                _mistake_fuse_in_float32,
                "keeps the layers' dtype",
                what_zh="不管各层是什么数据类型，一律返回 float32",
            ),
        ),
        right=(_right_einsum, _right_torch_fusion, _right_fuse_in_float64),
        why="In evaluation mode BatchNorm is a fixed affine map per channel, and an affine map after a convolution "
        "is again a convolution: scale each kernel, shift the bias.",
        why_zh="评估模式下的批归一化对每个通道是一个固定的仿射变换；卷积之后再接仿射变换，仍然是一个卷积：把每个卷积核缩放，"
        "再平移偏置。",
        discuss="Why can a BatchNorm layer in training mode not be folded into the convolution?",
        discuss_zh="为什么训练模式下的批归一化层不能折叠进卷积层？",
    ),
]
