"""Self-checks for lesson 03 (`scatter_`): multi-hot labels, and the mean feature vector of each class. The
reference answers and the tables of typical mistakes live in companion/checks/answers/scatter.py (the teacher's
part); these checks build what is expected with other PyTorch operations (`F.one_hot`, `index_add_`, `bincount`)."""

from collections.abc import Callable

import torch
import torch.nn.functional as F

from companion.exercises import call_learner, passed, require


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape, and equal within assert_close's default tolerances for `b`'s dtype (nan equal to nan)."""
    try:
        torch.testing.assert_close(a, b, check_dtype=False, check_device=False, equal_nan=True)
    except AssertionError:
        return False
    return True


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
        (torch.tensor([[0, 1, 2], [3, 3, 0]]).T, 4),  # a non-contiguous (3, 2) index, repeats in row 1
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
        repeats = F.one_hot(labels, num_classes).sum(dim=1).float()  # (N, C): how often a row names each class
        want = (repeats > 0).float()
        where = f"multi_hot({labels.tolist()}, {num_classes})"
        got = _returned_tensor(call_learner(multi_hot, labels, num_classes), where)
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
            got.device == labels.device,
            f"{where} is on {got.device}, the labels on {labels.device}: create the result on labels.device.",
            f"{where} 在 {got.device} 上，而 labels 在 {labels.device} 上：请在 labels.device 上创建结果。",
        )
        unnamed = want == 0
        require(
            torch.equal(got[unnamed], want[unnamed]),
            f"{where} holds {got[unnamed & (got != 0)][:3].tolist()} where no label points, instead of 0: the "
            "tensor you scatter into must start as zeros (torch.empty keeps whatever the memory held, "
            "torch.ones starts at 1).",
            f"{where} 在没有任何标签指向的位置上是 {got[unnamed & (got != 0)][:3].tolist()}，而不是 0："
            "你往里 scatter 的张量一开始必须全是 0（torch.empty 保留内存里原有的内容，torch.ones 一开始就是 1）。",
        )
        require(
            torch.equal(got, want) or not (bool((repeats > 1).any()) and torch.equal(got, repeats)),
            f"{where} holds a value above 1 where a row names a class twice: scatter_ writes the value 1 "
            "(a repeat writes it again), while scatter_add_ or a sum of one-hot rows adds the repeats.",
            f"{where} 在某一行重复列出同一个类别的位置上得到了大于 1 的值：scatter_ 是写入 1"
            "（重复的索引只是再写一次），而 scatter_add_ 或把独热行相加会把重复的次数累加起来。",
        )
        first_only = F.one_hot(labels[:, 0], num_classes).float() if labels.shape[1] > 1 and len(labels) else want
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
        (torch.randn(4, 9, generator=generator).T, torch.tensor([2, 0, 2, 2, 0, 1, 2, 0, 0]), 4),  # non-contiguous
        (torch.randn(7, 2, generator=generator, dtype=torch.float64), torch.tensor([1, 1, 0, 3, 1, 0, 1]), 5),
    ]


def check_class_means(class_means: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]) -> None:
    """`class_means(features, labels, num_classes)`: (N, D), (N,) -> (num_classes, D), each row the mean feature
    vector of the samples of that class, zeros for a class without samples; in the features' dtype."""
    require(
        callable(class_means),
        "Pass the function itself: check_class_means(class_means), without ().",
        "把函数本身传进去：check_class_means(class_means)，不要加 ()。",
    )
    for features, labels, num_classes in _class_means_cases():
        n, d = features.shape
        counts = torch.bincount(labels, minlength=num_classes).double()  # (C,)
        sums = torch.zeros(num_classes, d, dtype=torch.float64).index_add_(0, labels, features.double())  # (C, D)
        want = (sums / counts.clamp(min=1)[:, None]).to(features.dtype)  # (C, D) / (C, 1)
        sums = sums.to(features.dtype)
        where = f"class_means(<{features.dtype} features {tuple(features.shape)}>, {labels.tolist()}, {num_classes})"
        try:
            got = call_learner(class_means, features, labels, num_classes)
        except RuntimeError as error:
            require(
                features.dtype == torch.float32 or "dtype" not in str(error),
                f"{where} fails: {error}. Your tensors are float32 whatever the features are: create them with "
                "the features' dtype and device (features.new_zeros(...), features.new_ones(...)).",
                f"{where} 出错：{error}。不管特征是什么类型，你建的张量都是 float32：请用特征的数据类型和设备"
                "来创建它们（features.new_zeros(...)、features.new_ones(...)）。",
            )
            raise
        got = _returned_tensor(got, where)
        require(
            got.shape == (num_classes, d),
            f"{where} has shape {tuple(got.shape)}, expected ({num_classes}, {d}): one row per class, one column "
            "per feature.",
            f"{where} 的形状是 {tuple(got.shape)}，应为 ({num_classes}, {d})：每个类别一行，每个特征一列。",
        )
        require(
            got.dtype == features.dtype and got.device == features.device,
            f"{where} is {got.dtype} on {got.device}; return the features' dtype and device ({features.dtype}, "
            f"{features.device}): features.new_zeros(...) creates a tensor like that.",
            f"{where} 是 {got.device} 上的 {got.dtype}；请返回与特征相同的数据类型和设备（{features.dtype}，"
            f"{features.device}）：features.new_zeros(...) 就能创建这样的张量。",
        )
        if _close(got, want):
            continue
        seen = counts > 0
        require(
            not _close(got[seen], sums[seen]),
            f"{where} gives the sums of each class: divide each class's sum by its count of samples. If you did "
            "divide, your counts are 1 for every class present: scatter_ writes 1 again for a repeated label, "
            "scatter_add_ adds them up.",
            f"{where} 得到的是每个类别的总和：还要除以该类别的样本数。如果你已经除过了，说明你的样本数对每个出现的"
            "类别都是 1：scatter_ 对重复的标签只是再写一次 1，scatter_add_ 才会把它们加起来。",
        )
        require(
            not _close(got[seen], sums[seen] / n),
            f"{where} divides by the batch size {n}: divide by the number of samples of each class instead.",
            f"{where} 除以的是批大小 {n}：应该除以每个类别各自的样本数。",
        )
        require(
            not _close(got[seen], sums[seen] / (counts[seen, None] + 1).to(features.dtype)),
            f"{where}: each mean counts one sample too many, the 0 the result started with. "
            "scatter_reduce_(..., 'mean') counts self's own values too unless include_self=False.",
            f"{where}：每个均值都多算了一个样本，也就是结果一开始的那个 0。"
            "scatter_reduce_(..., 'mean') 会把 self 原有的值也算进去，除非指定 include_self=False。",
        )
        first_column = torch.zeros_like(want)
        first_column[:, :1] = want[:, :1]
        require(
            not _close(got, first_column) or d == 1,
            f"{where} fills only column 0: an index of shape (N, 1) sends one element per row; expand it to "
            "the features' shape, labels.unsqueeze(1).expand(-1, D).",
            f"{where} 只填了第 0 列：形状为 (N, 1) 的索引每行只送出一个元素；要把它扩展成特征的形状，"
            "即 labels.unsqueeze(1).expand(-1, D)。",
        )
        # scatter_ with repeated targets: one sample per class survives, the others are overwritten
        last = torch.zeros_like(want).scatter_(0, labels[:, None].expand(n, d), features)
        require(
            not (_close(got, last / counts.clamp(min=1)[:, None].to(features.dtype)) or _close(got, last)),
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
            False,
            f"{where} gives {got.tolist()}, expected {want.tolist()}: add the features of each class into a "
            "(num_classes, D) tensor of zeros along dim=0, count the samples of each class the same way, and divide.",
            f"{where} 得到 {got.tolist()}，应为 {want.tolist()}：沿 dim=0 把每个类别的特征加进形状为 "
            "(num_classes, D) 的零张量，用同样的办法统计每个类别的样本数，再相除。",
        )
    passed(
        "class_means averages every class, classes without samples included",
        "class_means 对每个类别都求对了平均，没有样本的类别也正确。",
    )
