"""Self-checks for lesson 03 (`scatter_`): multi-hot labels, and the mean feature vector of each class."""

from collections.abc import Callable

import torch
import torch.nn.functional as F

from companion.exercises import Exercise, Mistake, passed, require


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float32 rounding, nan equal to nan, same shape."""
    return a.shape == b.shape and torch.allclose(a.double(), b.double(), rtol=1e-5, atol=1e-6, equal_nan=True)


def _returned_tensor(got: object, where: str) -> torch.Tensor:
    require(
        isinstance(got, torch.Tensor),
        f"{where} should return a tensor, not {type(got).__name__}.",
        f"{where} 应该返回一个张量，而不是 {type(got).__name__}。",
    )
    return got


# Exercise 1 ---------------------------------------------------------------------------------------------------------


def _multi_hot_cases() -> list[tuple[torch.Tensor, int]]:
    generator = torch.Generator().manual_seed(31)
    return [
        (torch.tensor([[0, 2], [1, 1], [3, 0]]), 5),  # row 1 names class 1 twice; class 4 never appears
        (torch.tensor([[2]]), 3),
        (torch.randint(0, 6, (8, 3), generator=generator), 6),
        (torch.zeros(0, 2, dtype=torch.long), 4),  # an empty batch
    ]


def check_multi_hot(multi_hot: Callable[[torch.Tensor, int], torch.Tensor]) -> None:
    """`multi_hot(labels, num_classes)`: labels (N, K) -> float32 (N, num_classes), 1.0 where a row names a class."""
    require(
        callable(multi_hot),
        "Pass the function itself: check_multi_hot(multi_hot), without ().",
        "把函数本身传进去：check_multi_hot(multi_hot)，不要加 ()。",
    )
    for labels, num_classes in _multi_hot_cases():
        before = labels.clone()
        want = torch.zeros(len(labels), num_classes)
        for row, classes in enumerate(labels.tolist()):
            want[row, classes] = 1.0
        where = f"multi_hot({labels.tolist()}, {num_classes})"
        got = _returned_tensor(multi_hot(labels, num_classes), where)
        require(
            torch.equal(labels, before),
            f"{where} changed labels: scatter into a new torch.zeros tensor instead.",
            f"{where} 改动了 labels：应该往一个新建的 torch.zeros 张量里 scatter。",
        )
        require(
            got.shape == want.shape,
            f"{where} has shape {tuple(got.shape)}, expected {tuple(want.shape)}: one row per sample and "
            "num_classes columns, even when the last classes never occur; start from "
            "torch.zeros(len(labels), num_classes).",
            f"{where} 的形状是 {tuple(got.shape)}，应为 {tuple(want.shape)}：每个样本一行，列数是 num_classes，"
            "即使最后几个类别一次都没出现；请从 torch.zeros(len(labels), num_classes) 开始。",
        )
        require(
            got.dtype == torch.float32,
            f"{where} is {got.dtype}; return float32 (the default of torch.zeros), the data type a loss expects "
            "for its target.",
            f"{where} 的数据类型是 {got.dtype}；请返回 float32（torch.zeros 的默认类型），损失函数的标签要的就是它。",
        )
        require(
            not bool((got > 1).any()),
            f"{where} holds a value above 1 where a row names a class twice: scatter_ writes the value 1 "
            "(a repeat writes it again), while scatter_add_ or a sum of one-hot rows adds the repeats.",
            f"{where} 在某一行重复列出同一个类别的位置上得到了大于 1 的值：scatter_ 是写入 1"
            "（重复的索引只是再写一次），而 scatter_add_ 或把独热行相加会把重复的次数累加起来。",
        )
        first_only = want.clone()
        if labels.shape[1] > 1 and len(labels):
            first_only = torch.zeros(len(labels), num_classes).scatter_(1, labels[:, :1], 1.0)
        require(
            torch.equal(got, want) or not torch.equal(got, first_only),
            f"{where} marks only the first label of each row: pass the whole (N, K) labels tensor as the index, "
            "every column of it.",
            f"{where} 每行只标出了第一个标签：请把整个形状为 (N, K) 的 labels 作为索引传进去，它的每一列都要用上。",
        )
        require(
            torch.equal(got, want),
            f"{where} gives {got.tolist()}, expected {want.tolist()}: scatter_ the value 1.0 along dim=1, with "
            "labels itself as the index.",
            f"{where} 得到 {got.tolist()}，应为 {want.tolist()}：沿 dim=1 用 scatter_ 写入数值 1.0，"
            "索引就是 labels 本身。",
        )
    passed(
        "multi_hot marks every label once, repeats and an empty batch included",
        "multi_hot 把每个标签都恰好标了一次，重复标签和空批次也都正确。",
    )


def _multi_hot(labels, num_classes):
    return torch.zeros(len(labels), num_classes).scatter_(1, labels, 1.0)


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


# Exercise 2 ---------------------------------------------------------------------------------------------------------


def _class_means_cases() -> list[tuple[torch.Tensor, torch.Tensor, int]]:
    generator = torch.Generator().manual_seed(32)
    return [
        (
            torch.tensor([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0], [5.0, 50.0]]),
            torch.tensor([0, 2, 0, 2, 2]),
            4,  # classes 1 and 3 have no sample
        ),
        (torch.randn(20, 3, generator=generator), torch.randint(0, 5, (20,), generator=generator), 6),
        (torch.tensor([[7.0, -1.0, 0.5]]), torch.tensor([1]), 2),
    ]


def check_class_means(class_means: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]) -> None:
    """`class_means(features, labels, num_classes)`: (N, D), (N,) -> (num_classes, D), each row the mean feature
    vector of the samples of that class, zeros for a class without samples."""
    require(
        callable(class_means),
        "Pass the function itself: check_class_means(class_means), without ().",
        "把函数本身传进去：check_class_means(class_means)，不要加 ()。",
    )
    for features, labels, num_classes in _class_means_cases():
        before = (features.clone(), labels.clone())
        n, d = features.shape
        counts = torch.bincount(labels, minlength=num_classes).to(features.dtype)  # (C,)
        index = labels.unsqueeze(1).expand(n, d)  # (N,) -> (N, D)
        sums = torch.zeros(num_classes, d).index_add_(0, labels, features)  # (C, D)
        want = sums / counts.clamp(min=1).unsqueeze(1)  # (C, D) / (C, 1)
        where = f"class_means(<features {tuple(features.shape)}>, {labels.tolist()}, {num_classes})"
        got = _returned_tensor(class_means(features, labels, num_classes), where)
        require(
            torch.equal(features, before[0]) and torch.equal(labels, before[1]),
            f"{where} changed its arguments: scatter into new torch.zeros tensors instead.",
            f"{where} 改动了传入的参数：应该往新建的 torch.zeros 张量里 scatter。",
        )
        require(
            got.shape == (num_classes, d),
            f"{where} has shape {tuple(got.shape)}, expected ({num_classes}, {d}): one row per class, one column "
            "per feature.",
            f"{where} 的形状是 {tuple(got.shape)}，应为 ({num_classes}, {d})：每个类别一行，每个特征一列。",
        )
        seen = counts > 0
        require(
            not _close(got[seen], sums[seen]) or _close(sums[seen], want[seen]),
            f"{where} gives the sums of each class: divide each class's sum by its count of samples.",
            f"{where} 得到的是每个类别的总和：还要除以该类别的样本数。",
        )
        require(
            not _close(got[seen], sums[seen] / n) or _close(sums[seen] / n, want[seen]),
            f"{where} divides by the batch size {n}: divide by the number of samples of each class instead.",
            f"{where} 除以的是批大小 {n}：应该除以每个类别各自的样本数。",
        )
        first_column = torch.zeros(num_classes, d)
        first_column[:, :1] = want[:, :1]
        require(
            not _close(got, first_column) or d == 1,
            f"{where} fills only column 0: an index of shape (N, 1) sends one element per row; expand it to "
            "the features' shape, labels.unsqueeze(1).expand(-1, D).",
            f"{where} 只填了第 0 列：形状为 (N, 1) 的索引每行只送出一个元素；要把它扩展成特征的形状，"
            "即 labels.unsqueeze(1).expand(-1, D)。",
        )
        overwritten = torch.zeros(num_classes, d).scatter_(0, index, features)  # one sample per class survives
        require(
            not (_close(got, overwritten / counts.clamp(min=1).unsqueeze(1)) or _close(got, overwritten))
            or _close(overwritten, sums),
            f"{where} keeps one sample per class: scatter_ overwrites the repeats, scatter_add_ adds them up.",
            f"{where} 每个类别只留下了一个样本：scatter_ 会覆盖重复的位置，scatter_add_ 才会把它们加起来。",
        )
        require(
            not bool(got.isnan().any()),
            f"{where} holds nan for a class without samples (0 / 0): clamp the counts to at least 1, so that "
            "such a class gets 0 / 1 = 0.",
            f"{where} 在没有样本的类别上得到了 nan（0 / 0）：把样本数下限截断为 1，这样的类别就得到 0 / 1 = 0。",
        )
        require(
            _close(got, want),
            f"{where} gives {got.tolist()}, expected {want.tolist()}: scatter_add_ the features into a "
            "(num_classes, D) zeros tensor along dim=0, count the samples the same way, and divide.",
            f"{where} 得到 {got.tolist()}，应为 {want.tolist()}：沿 dim=0 用 scatter_add_ 把特征加进形状为 "
            "(num_classes, D) 的零张量，用同样的办法统计样本数，再相除。",
        )
    passed(
        "class_means averages every class, classes without samples included",
        "class_means 对每个类别都求对了平均，没有样本的类别也正确。",
    )


def _class_means(features, labels, num_classes):
    index = labels.unsqueeze(1).expand_as(features)  # (N,) -> (N, D)
    sums = torch.zeros(num_classes, features.shape[1]).scatter_add_(0, index, features)  # (C, D)
    counts = torch.zeros(num_classes).scatter_add_(0, labels, torch.ones(len(labels)))  # (C,)
    return sums / counts.clamp(min=1).unsqueeze(1)  # (C, D) / (C, 1)


def _class_sums(features, labels, num_classes):
    index = labels.unsqueeze(1).expand_as(features)
    return torch.zeros(num_classes, features.shape[1]).scatter_add_(0, index, features)


def _class_means_over_batch(features, labels, num_classes):
    return _class_sums(features, labels, num_classes) / len(labels)


def _class_means_unguarded(features, labels, num_classes):
    counts = torch.zeros(num_classes).scatter_add_(0, labels, torch.ones(len(labels)))
    return _class_sums(features, labels, num_classes) / counts.unsqueeze(1)


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
        ),
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
            Mistake("divides by the batch size", _class_means_over_batch, "divides by the batch size"),
            Mistake("0 / 0 for an empty class", _class_means_unguarded, "clamp the counts"),
            Mistake("index of shape (N, 1)", _class_means_unexpanded_index, "fills only column 0"),
            Mistake("scatter_ instead of scatter_add_", _class_means_overwriting, "scatter_ overwrites the repeats"),
        ),
        why="Along dim=0 each element of the expanded index sends one feature value to its class's row; "
        "scatter_add_ adds the values that meet there, and the counts come from the same call on ones.",
        why_zh="沿 dim=0 时，扩展后的索引中每个元素把一个特征值送到它所属类别的那一行；"
        "scatter_add_ 把落到同一处的值相加，样本数则由同样的调用作用在全 1 张量上得到。",
        discuss="How would you update these class means one batch at a time, over a whole dataset?",
        discuss_zh="如果数据集要分很多批送进来，怎样一批一批地更新这些类别均值？",
    ),
]
