"""The teacher's part of lesson 03's self-checks: reference answers, other correct answers and typical mistakes."""

import torch
import torch.nn.functional as F

from companion.checks.scatter import check_class_means, check_multi_hot
from companion.exercises import Exercise, Mistake

# Exercise 1 ---------------------------------------------------------------------------------------------------------


def _multi_hot(labels, num_classes):
    rows = torch.zeros(len(labels), num_classes, device=labels.device)
    return rows.scatter_(1, labels, 1.0)


def _right_multi_hot_transposed(labels, num_classes):
    return torch.zeros(num_classes, len(labels), device=labels.device).scatter_(0, labels.T, 1.0).T


def _right_multi_hot_amax(labels, num_classes):
    ones = torch.ones(labels.shape, device=labels.device)
    return torch.zeros(len(labels), num_classes, device=labels.device).scatter_reduce_(1, labels, ones, "amax")


def _right_multi_hot_clamped_add(labels, num_classes):
    counts = labels.new_zeros(len(labels), num_classes).scatter_add_(1, labels, torch.ones_like(labels))
    return counts.clamp(max=1).float()


def _multi_hot_adds_repeats(labels, num_classes):
    return torch.zeros(len(labels), num_classes).scatter_add_(1, labels, torch.ones(labels.shape))


def _multi_hot_from_one_hot_sum(labels, num_classes):
    return F.one_hot(labels, num_classes).sum(dim=1).float()  # (N, K, C) -> (N, C)


def _multi_hot_int64(labels, num_classes):
    return torch.zeros(len(labels), num_classes, dtype=torch.long).scatter_(1, labels, 1)


def _multi_hot_first_label(labels, num_classes):
    return torch.zeros(len(labels), num_classes).scatter_(1, labels[:, :1], 1.0)


def _multi_hot_width_from_labels(labels, num_classes):
    return torch.zeros(len(labels), int(labels.max()) + 1).scatter_(1, labels, 1.0)


def _multi_hot_from_ones(labels, num_classes):
    return torch.ones(len(labels), num_classes).scatter_(1, labels, 1.0)


def _multi_hot_from_leftovers(labels, num_classes):
    # what torch.empty may hand back: the memory's old contents (made repeatable here)
    leftovers = torch.full((len(labels), num_classes), 3.0e7)
    return leftovers.scatter_(1, labels, 1.0)


def _multi_hot_averaged(labels, num_classes):
    ones = torch.ones(labels.shape)
    return torch.zeros(len(labels), num_classes).scatter_add_(1, labels, ones) / labels.shape[1]


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
        check=check_multi_hot,
        reference=_multi_hot,
        mistakes=(
            Mistake("scatter_add_ adds a repeated label twice", _multi_hot_adds_repeats, "a row names a class twice"),
            Mistake("sums one-hot rows", _multi_hot_from_one_hot_sum, "a sum of one-hot rows adds the repeats"),
            Mistake("returns int64", _multi_hot_int64, "return float32"),
            Mistake("uses only the first label", _multi_hot_first_label, "only the first label of each row"),
            Mistake("width from the largest label", _multi_hot_width_from_labels, "even when the last classes"),
            Mistake("starts from torch.ones", _multi_hot_from_ones, "where no label points"),
            Mistake("starts from torch.empty's leftovers", _multi_hot_from_leftovers, "torch.empty keeps"),
            Mistake("averages the labels of a row", _multi_hot_averaged, "scatter_ the value 1.0 along dim=1"),
        ),
        right=(_right_multi_hot_transposed, _right_multi_hot_amax, _right_multi_hot_clamped_add),
        why="scatter_ writes the same value 1.0 wherever a row's labels point; a repeated label writes it again, "
        "so which write wins does not matter here.",
        why_zh="scatter_ 在每一行的标签所指的位置都写入同一个值 1.0；重复的标签只是再写一次，"
        "所以哪次写入留下来都无所谓。",
        discuss="Why is scatter_ safe with duplicate indices here, when the lesson warns against it?",
        discuss_zh="本课提醒过索引重复时不要用 scatter_，为什么在这里用它却没问题？",
    ),
    Exercise(
        check=check_class_means,
        reference=_class_means,
        mistakes=(
            Mistake("returns the sums", _class_sums, "divide each class's sum by its count"),
            Mistake("counts with scatter_ (1 per class)", _class_means_counts_by_scatter, "your counts are 1"),
            Mistake("divides by the batch size", _class_means_over_batch, "divides by the batch size"),
            Mistake("0 / 0 for an empty class", _class_means_unguarded, "clamp the counts"),
            Mistake("scatter_reduce_ 'mean' including self", _class_means_reduce_including_self, "one sample too many"),
            Mistake("index of shape (N, 1)", _class_means_unexpanded_index, "fills only column 0"),
            Mistake("scatter_ instead of scatter_add_", _class_means_overwriting, "scatter_ overwrites the repeats"),
            Mistake("float32 whatever the features", _float32_zeros, "features.new_zeros"),
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
