"""Self-checks for lesson 03 (`scatter_`): the inverse of a batch of permutations, and the mean feature vector of
each class. The reference answers and the tables of typical mistakes live in companion/checks/answers/scatter.py (the
teacher's part); these checks judge an inverse by what `gather` makes of it, and build the class means with other
PyTorch operations (`index_add_`, `bincount`)."""

from collections.abc import Callable

import torch

from companion._torch_errors import DTYPE_MISMATCH, INDEX_OUT_OF_BOUNDS, SHAPE_MISMATCH, says
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


def _permutation_cases() -> list[torch.Tensor]:
    """Batches of permutations, one per row: cycles of 3 and 4 (a 3-cycle applied twice is its inverse, a 4-cycle
    applied twice is not), swaps and the identity (their own inverses), a non-contiguous batch, an empty one."""
    generator = torch.Generator().manual_seed(31)
    columns = [torch.randperm(7, generator=generator) for _ in range(4)]
    return [
        torch.tensor([[1, 2, 3, 0]]),  # one 4-cycle
        torch.tensor([[2, 0, 1, 3, 4], [0, 1, 2, 3, 4], [1, 0, 4, 3, 2]]),  # a 3-cycle, the identity, swaps
        torch.stack([torch.randperm(6, generator=generator) for _ in range(5)]),
        torch.stack(columns, dim=1).T,  # (4, 7), each row a permutation, not contiguous
        torch.tensor([[0]]),
        torch.zeros(0, 3, dtype=torch.long),  # an empty batch
        torch.stack([torch.randperm(9, generator=generator) for _ in range(9)]),  # square: B = N
    ]


def _scatter_error_hint(error: Exception, where: str) -> tuple[str, str] | None:
    """The hint for an error scatter_ raises on a typical slip, or None for any other error."""
    message = str(error)
    if says(error, INDEX_OUT_OF_BOUNDS):
        return (
            f"{where} fails: {message}. Each row of perm is one permutation, so its positions run along dim=1, "
            "the dimension to scatter along.",
            f"{where} 出错：{message}。perm 的每一行是一个排列，行里的位置沿 dim=1 排列，应该沿这个维度 scatter。",
        )
    if says(error, DTYPE_MISMATCH):
        return (
            f"{where} fails: {message}. The tensor you scatter into and the values you scatter must have one data "
            "type: positions are int64, like perm (torch.zeros_like(perm) creates such a tensor).",
            f"{where} 出错：{message}。被写入的张量和写入的值必须是同一种数据类型：位置是 int64，与 perm 相同"
            "（torch.zeros_like(perm) 就能创建这样的张量）。",
        )
    if says(error, *SHAPE_MISMATCH):
        return (
            f"{where} fails: {message}. What you scatter must cover the index, perm, of shape (B, N): expand a row "
            "of positions to every row with .expand_as(perm).",
            f"{where} 出错：{message}。写入的值必须覆盖形状为 (B, N) 的索引 perm：用 .expand_as(perm) "
            "把一行位置扩展到每一行。",
        )
    return None


def check_inverse_permutation(inverse_permutation: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """`inverse_permutation(perm)`: perm (B, N), each row a permutation of 0..N-1 -> inv (B, N), int64, such that
    `x.gather(1, perm).gather(1, inv)` is x for every x; equivalently perm.gather(1, inv) is 0..N-1 in each row."""
    require(
        callable(inverse_permutation),
        "Pass the function itself: check_inverse_permutation(inverse_permutation), without ().",
        "把函数本身传进去：check_inverse_permutation(inverse_permutation)，不要加 ()。",
    )
    for perm in _permutation_cases():
        batch, n = perm.shape
        where = f"inverse_permutation({perm.tolist()})"
        try:
            got = call_learner(inverse_permutation, perm)
        except (RuntimeError, IndexError) as error:
            hint = _scatter_error_hint(error, where)
            if hint is None:
                raise
            require(False, *hint)
        got = _returned_tensor(got, where)
        require(
            got.shape == perm.shape,
            f"{where} has shape {tuple(got.shape)}, expected {tuple(perm.shape)}: one position for each position "
            "of perm, row by row.",
            f"{where} 的形状是 {tuple(got.shape)}，应为 {tuple(perm.shape)}：perm 的每个位置对应一个位置，逐行对应。",
        )
        require(
            got.dtype == torch.int64 and got.device == perm.device,
            f"{where} is {got.dtype} on {got.device}; return int64 on perm's device ({perm.device}): the result "
            "is an index, and gather takes only integer indices.",
            f"{where} 是 {got.device} 上的 {got.dtype}；请返回与 perm 同设备（{perm.device}）的 int64："
            "结果是一个索引，而 gather 只接受整数索引。",
        )
        if not len(got):
            continue
        require(
            bool(((got >= 0) & (got < n)).all()),
            f"{where} holds {got[(got < 0) | (got >= n)][:3].tolist()}: positions in a row of {n} run from 0 to "
            f"{n - 1}.",
            f"{where} 里有 {got[(got < 0) | (got >= n)][:3].tolist()}：长为 {n} 的一行，位置从 0 到 {n - 1}。",
        )
        positions = torch.arange(n).expand(batch, n)  # (B, N)
        undone = perm.gather(1, got)  # perm[b, inv[b, j]], which should be j
        if torch.equal(undone, positions):
            continue
        row = int((undone != positions).any(dim=1).nonzero()[0, 0])
        require(
            not torch.equal(got, perm),
            f"{where} gives perm itself (perm as it is, or perm scattered to the places 0..N-1): that undoes a swap, "
            f"which is its own inverse, but not row {row}, "
            f"{perm[row].tolist()}. x.gather(1, perm) reads x where perm points; its inverse must write each "
            "position i to the place perm[b, i] names.",
            f"{where} 得到的就是 perm 本身（原样的 perm，或把 perm 写到位置 0..N-1 上）："
            f"对“交换两个位置”这样以自身为逆的排列没问题，但第 {row} 行 "
            f"{perm[row].tolist()} 不行。x.gather(1, perm) 是到 perm 所指的地方去读 x；"
            "它的逆要把每个位置 i 写到 perm[b, i] 所指的地方。",
        )
        require(
            not torch.equal(got, perm.gather(1, perm)),
            f"{where} applies perm a second time (perm.gather(1, perm), or perm[perm]): for a cycle of three "
            f"positions that happens to be the inverse, but not for row {row}, {perm[row].tolist()}. Reading "
            "where perm points is gather; undoing it writes where perm points.",
            f"{where} 把 perm 又作用了一次（perm.gather(1, perm) 或 perm[perm]）：对三个位置的轮换，这恰好就是逆，"
            f"但第 {row} 行 {perm[row].tolist()} 不是。到 perm 所指的地方去读是 gather；要撤销它，就得往 perm "
            "所指的地方写。",
        )
        require(
            False,
            f"{where}, row {row}: perm {perm[row].tolist()} and your inverse {got[row].tolist()} give "
            f"perm[inv[j]] = {undone[row].tolist()}, which should be {list(range(n))}: the position i must land "
            "at the place perm[b, i], for every i of every row.",
            f"{where} 第 {row} 行：perm 为 {perm[row].tolist()}，你的逆为 {got[row].tolist()}，"
            f"perm[inv[j]] 得到 {undone[row].tolist()}，应为 {list(range(n))}：每一行的每个位置 i 都要落在 "
            "perm[b, i] 所指的地方。",
        )
    passed(
        "inverse_permutation undoes every shuffle: cycles, swaps, the identity and an empty batch",
        "inverse_permutation 把每一种打乱都还原了：轮换、交换、恒等排列和空批次都正确。",
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
                features.dtype == torch.float32 or not says(error, DTYPE_MISMATCH),
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
