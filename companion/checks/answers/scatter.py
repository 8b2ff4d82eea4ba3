"""The teacher's part of lesson 03's self-checks: reference answers, other correct answers and typical mistakes."""

import torch
import torch.nn.functional as F

from companion.checks.scatter import check_class_means, check_inverse_permutation
from companion.exercises import Exercise, Mistake

# Exercise 1 ---------------------------------------------------------------------------------------------------------


def _inverse_permutation(perm):
    positions = torch.arange(perm.shape[1], device=perm.device).expand_as(perm)  # (N,) -> (B, N)
    return torch.zeros_like(perm).scatter_(1, perm, positions)  # inv[b, perm[b, i]] = i


def _right_inverse_argsort(perm):
    return perm.argsort(dim=1)  # sorting perm's values 0..N-1 lists where each one sits


def _right_inverse_empty_repeat(perm):
    batch, n = perm.shape
    positions = torch.arange(n, device=perm.device).repeat(batch, 1)  # (B, N), a copy in every row
    return torch.empty_like(perm).scatter_(1, perm, positions)  # a permutation writes every place exactly once


def _right_inverse_one_hot(perm):
    n = perm.shape[1]
    return F.one_hot(perm, n).argmax(dim=1)  # (B, N, N): [b, i, perm[b, i]] = 1; the i of each column


def _inverse_is_perm(perm):
    return perm.clone()


def _inverse_gathers_twice(perm):
    return perm.gather(1, perm)


def _inverse_as_float(perm):
    positions = torch.arange(perm.shape[1], dtype=torch.float32).expand_as(perm)
    return torch.zeros(perm.shape).scatter_(1, perm, positions)


def _inverse_float_zeros(perm):
    positions = torch.arange(perm.shape[1]).expand_as(perm)
    return torch.zeros(perm.shape).scatter_(1, perm, positions)


def _inverse_along_dim_0(perm):
    positions = torch.arange(perm.shape[1]).expand_as(perm)
    return torch.zeros_like(perm).scatter_(0, perm, positions)


def _inverse_one_row_of_positions(perm):
    return torch.zeros_like(perm).scatter_(1, perm, torch.arange(perm.shape[1]).unsqueeze(0))


def _inverse_counted_from_1(perm):
    positions = torch.arange(1, perm.shape[1] + 1).expand_as(perm)
    return torch.zeros_like(perm).scatter_(1, perm, positions)


def _inverse_in_place(perm):
    positions = torch.arange(perm.shape[1]).expand_as(perm)
    return perm.scatter_(1, perm.clone(), positions)


# Exercise 2 ---------------------------------------------------------------------------------------------------------


def _class_means(features, labels, num_classes):
    index = labels.unsqueeze(1).expand_as(features)  # (N,) -> (N, D)
    sums = features.new_zeros(num_classes, features.shape[1]).scatter_add_(0, index, features)  # (C, D)
    counts = features.new_zeros(num_classes).scatter_add_(0, labels, features.new_ones(len(labels)))  # (C,)
    return sums / counts.clamp(min=1).unsqueeze(1)  # (C, D) / (C, 1)


def _right_class_means_reduce_mean(features, labels, num_classes):
    index = labels[:, None].expand(-1, features.shape[1])
    zeros = features.new_zeros(num_classes, features.shape[1])
    return zeros.scatter_reduce_(0, index, features, "mean", include_self=False)


def _right_class_means_one_hot(features, labels, num_classes):
    member = F.one_hot(labels, num_classes).to(features.dtype)  # (N, C)
    return (member.T @ features) / member.sum(0).clamp(min=1)[:, None]


def _right_class_means_index_add(features, labels, num_classes):
    sums = features.new_zeros(num_classes, features.shape[1]).index_add_(0, labels, features)
    counts = torch.bincount(labels, minlength=num_classes).to(features.dtype)
    return sums / torch.where(counts > 0, counts, 1)[:, None]


def _float32_zeros(features, labels, num_classes):  # the lesson's first version: float32 whatever the features
    index = labels.unsqueeze(1).expand_as(features)
    sums = torch.zeros(num_classes, features.shape[1]).scatter_add_(0, index, features)
    counts = torch.zeros(num_classes).scatter_add_(0, labels, torch.ones(len(labels)))
    return sums / counts.clamp(min=1).unsqueeze(1)


def _class_sums(features, labels, num_classes):
    index = labels.unsqueeze(1).expand_as(features)
    return torch.zeros(num_classes, features.shape[1]).scatter_add_(0, index, features)


def _class_means_over_batch(features, labels, num_classes):
    return _class_sums(features, labels, num_classes) / len(labels)


def _class_means_unguarded(features, labels, num_classes):
    counts = torch.zeros(num_classes).scatter_add_(0, labels, torch.ones(len(labels)))
    return _class_sums(features, labels, num_classes) / counts.unsqueeze(1)


def _class_means_counts_by_scatter(features, labels, num_classes):
    counts = torch.zeros(num_classes).scatter_(0, labels, torch.ones(len(labels)))  # 1 for every class present
    return _class_sums(features, labels, num_classes) / counts.clamp(min=1).unsqueeze(1)


def _class_means_reduce_including_self(features, labels, num_classes):
    index = labels.unsqueeze(1).expand_as(features)
    return torch.zeros(num_classes, features.shape[1]).scatter_reduce_(0, index, features, "mean")


def _class_means_unexpanded_index(features, labels, num_classes):
    sums = torch.zeros(num_classes, features.shape[1]).scatter_add_(0, labels.unsqueeze(1), features)
    counts = torch.zeros(num_classes).scatter_add_(0, labels, torch.ones(len(labels)))
    return sums / counts.clamp(min=1).unsqueeze(1)


def _class_means_overwriting(features, labels, num_classes):
    index = labels.unsqueeze(1).expand_as(features)
    sums = torch.zeros(num_classes, features.shape[1]).scatter_(0, index, features)
    counts = torch.zeros(num_classes).scatter_add_(0, labels, torch.ones(len(labels)))
    return sums / counts.clamp(min=1).unsqueeze(1)


EXERCISES = [
    Exercise(
        check=check_inverse_permutation,
        reference=_inverse_permutation,
        mistakes=(
            Mistake("returns perm itself", _inverse_is_perm, "gives perm itself", what_zh="直接返回 perm 本身"),
            Mistake(
                "applies perm twice with gather",
                _inverse_gathers_twice,
                "applies perm a second time",
                what_zh="用 gather 把 perm 作用了两次",
            ),
            Mistake(
                "returns float32 positions",
                _inverse_as_float,
                "gather takes only integer indices",
                what_zh="返回 float32 类型的位置",
            ),
            Mistake(
                "float32 zeros, int64 positions",
                _inverse_float_zeros,
                "must have one data type",
                what_zh="目标是 float32 的全 0 张量，位置却是 int64",
            ),
            Mistake(
                "scatters along dim=0",
                _inverse_along_dim_0,
                "the dimension to scatter along",
                what_zh="沿 dim=0 做 scatter",
            ),
            Mistake(
                "one row of positions, not expanded",
                _inverse_one_row_of_positions,
                ".expand_as(perm)",
                what_zh="只有一行位置，没有扩展到每一行",
            ),
            Mistake("positions counted from 1", _inverse_counted_from_1, "run from 0 to", what_zh="位置从 1 开始数"),
            Mistake(
                "scatters into perm itself",
                _inverse_in_place,
                "changed its argument number 1",
                what_zh="原地 scatter 进 perm 本身",
            ),
        ),
        right=(_right_inverse_argsort, _right_inverse_empty_repeat, _right_inverse_one_hot),
        why="scatter_ along dim=1 writes src[b, i] to the place index[b, i] names; with perm as the index and the "
        "positions 0..N-1 as src, each place perm[b, i] receives i, the position gather took it from.",
        why_zh="沿 dim=1 的 scatter_ 把 src[b, i] 写到 index[b, i] 所指的地方；以 perm 为索引、以位置 0..N-1 为 "
        "src，每个地方 perm[b, i] 收到的就是 i，也就是 gather 当初从哪里取走了它。",
        discuss="Why may the result start as torch.empty_like(perm) here, when multi-hot labels must start from "
        "zeros? And why do a swap and a cycle of three hide the mistake of applying perm twice?",
        discuss_zh="为什么这里的结果可以从 torch.empty_like(perm) 开始，而构造多热标签时必须从全 0 开始？"
        "交换和三个位置的轮换为什么会掩盖“把 perm 作用两次”这个错误？",
    ),
    Exercise(
        check=check_class_means,
        reference=_class_means,
        mistakes=(
            Mistake(
                "returns the sums", _class_sums, "divide each class's sum by its count", what_zh="只返回了各类别的总和"
            ),
            Mistake(
                "counts with scatter_ (1 per class)",
                _class_means_counts_by_scatter,
                "your counts are 1",
                what_zh="用 scatter_ 统计样本数（每个类别都只记 1）",
            ),
            Mistake(
                "divides by the batch size",
                _class_means_over_batch,
                "divides by the batch size",
                what_zh="除以的是批大小",
            ),
            Mistake(
                "0 / 0 for an empty class",
                _class_means_unguarded,
                "clamp the counts",
                what_zh="没有样本的类别得到 0 / 0",
            ),
            Mistake(
                "scatter_reduce_ 'mean' including self",
                _class_means_reduce_including_self,
                "one sample too many",
                what_zh="scatter_reduce_ 求 'mean' 时把 self 也算了进去",
            ),
            Mistake(
                "index of shape (N, 1)",
                _class_means_unexpanded_index,
                "fills only column 0",
                what_zh="索引的形状是 (N, 1)",
            ),
            Mistake(
                "scatter_ instead of scatter_add_",
                _class_means_overwriting,
                "scatter_ overwrites the repeats",
                what_zh="用了 scatter_ 而不是 scatter_add_",
            ),
            Mistake(
                "float32 whatever the features",
                _float32_zeros,
                "features.new_zeros",
                what_zh="不管特征是什么数据类型，一律用 float32",
            ),
        ),
        right=(_right_class_means_reduce_mean, _right_class_means_one_hot, _right_class_means_index_add),
        why="Along dim=0 each element of the expanded index sends one feature value to its class's row; "
        "scatter_add_ adds the values that meet there, and the counts come from the same call on ones.",
        why_zh="沿 dim=0 时，扩展后的索引中每个元素把一个特征值送到它所属类别的那一行；"
        "scatter_add_ 把落到同一处的值相加，样本数则由同样的调用作用在全 1 张量上得到。",
        discuss="How would you update these class means one batch at a time, over a whole dataset?",
        discuss_zh="如果数据集要分很多批送进来，怎样一批一批地更新这些类别均值？",
    ),
]
