"""Self-check for lesson 07: a collate_fn that pads sequences of different lengths into one batch. The learner's
function runs through `call_learner` (and a DataLoader inside `sandbox`); what it should return is computed with
PyTorch's pad_sequence. The reference answer and the table of mistakes live in companion/checks/answers/data.py."""

from collections.abc import Callable

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

from companion.exercises import call_learner, passed, require, sandbox

Sample = tuple[torch.Tensor, int]


def _batches() -> list[list[Sample]]:
    """Two batches with different longest sequences (a collate_fn that pads to one fixed length fails one of them),
    built fresh for every call. Token 0 occurs inside a sequence and at the end of one, so lengths counted from the
    non-zero tokens come out wrong; a batch of one closes the list."""
    return [
        [(torch.tensor([3, 0, 4]), 0), (torch.tensor([1]), 1), (torch.tensor([5, 9, 2, 6]), 1)],
        [(torch.tensor([5, 0]), 2), (torch.tensor([5]), 0)],
        [(torch.tensor([0, 7]), 3)],
    ]


def _expected(samples: list[Sample]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """What a collate_fn should return, from PyTorch's pad_sequence (an independent computation of the lengths)."""
    padded = pad_sequence([sequence for sequence, _ in samples], batch_first=True, padding_value=0)
    lengths = torch.tensor([sequence.numel() for sequence, _ in samples], dtype=torch.int64)
    return padded, lengths, torch.tensor([label for _, label in samples], dtype=torch.int64)


def check_pad_collate(pad_collate: Callable[[list[Sample]], tuple]) -> None:
    """`pad_collate(samples)` must return (padded (B, T) with 0 after each end, lengths (B,), labels (B,) int64)."""
    require(
        callable(pad_collate),
        "Pass the function itself: check_pad_collate(pad_collate), without ().",
        "把函数本身传进去：check_pad_collate(pad_collate)，不要加 ()。",
    )
    for samples in _batches():
        _check_one_batch(pad_collate, samples)
    dataset = [sample for batch in _batches()[:2] for sample in batch]
    want = [tuple(_expected(dataset[i : i + 2])[0].shape) for i in range(0, len(dataset), 2)]
    loader = DataLoader(dataset, batch_size=2, collate_fn=pad_collate, generator=torch.Generator().manual_seed(0))
    with sandbox():
        batches = list(loader)
    got = [tuple(b[0].shape) if isinstance(b[0], torch.Tensor) else None for b in batches]
    require(
        got == want,
        f"Through a DataLoader with batch_size=2 the padded shapes should be {want}, not {got}: pad each batch to "
        "its own longest sequence.",
        f"放进 batch_size=2 的 DataLoader 后，填充后的形状应依次为 {want}，而不是 {got}："
        "每一批都按这一批中最长的序列填充。",
    )
    passed(
        "each batch is padded to its own longest sequence, with the lengths and labels in order",
        "每一批都按这一批中最长的序列填充，长度和标签的顺序也都对应。",
    )


def _check_one_batch(pad_collate: Callable, samples: list[Sample]) -> None:
    want_padded, want_lengths, want_labels = _expected(samples)
    result = call_learner(pad_collate, samples)
    count = len(result) if isinstance(result, tuple | list) else None
    require(
        count == 3,
        f"Return three things, `return padded, lengths, labels`; your function returned "
        f"{type(result).__name__ if count is None else f'{count} things'}.",
        f"要返回三样东西：`return padded, lengths, labels`；你的函数返回的是 "
        f"{type(result).__name__ if count is None else f'{count} 样东西'}。",
    )
    padded, lengths, labels = result
    require(
        all(isinstance(t, torch.Tensor) for t in (padded, lengths)),
        "padded and lengths should be tensors: torch.tensor([len(s) for s in sequences]) for the lengths.",
        "padded 和 lengths 都应该是张量：长度可以用 torch.tensor([len(s) for s in sequences]) 得到。",
    )
    batch, longest = want_padded.shape
    require(
        tuple(padded.shape) != (longest, batch) or batch == longest,
        f"padded has shape {tuple(padded.shape)}, which is (longest, batch): put the batch dimension first, "
        "pad_sequence(sequences, batch_first=True).",
        f"padded 的形状是 {tuple(padded.shape)}，即（最长长度，批大小）：要把批维度放在前面，"
        "pad_sequence(sequences, batch_first=True)。",
    )
    require(
        padded.dim() == 2 and padded.shape[0] == batch,
        f"padded should have one row per sample ({batch}), not shape {tuple(padded.shape)}.",
        f"padded 应该每个样本一行（共 {batch} 行），而不是形状 {tuple(padded.shape)}。",
    )
    require(
        padded.shape[1] == longest,
        f"This batch's longest sequence has {longest} elements, but padded has {padded.shape[1]} columns: "
        "pad to the longest sequence of this batch, not to a fixed length.",
        f"这一批中最长的序列有 {longest} 个元素，而 padded 有 {padded.shape[1]} 列：要按这一批中最长的序列填充，"
        "而不是填充到一个固定长度。",
    )
    require(
        padded.dtype == torch.int64,
        f"padded holds {padded.dtype}; keep the sequences' int64 (pad_sequence does).",
        f"padded 的数据类型是 {padded.dtype}；应保持序列原有的 int64（pad_sequence 会保持）。",
    )
    same_rows = sorted(map(tuple, padded.tolist())) == sorted(map(tuple, want_padded.tolist()))
    require(
        torch.equal(padded, want_padded) or not same_rows,
        "The rows are padded right but in another order: keep the samples in the order the DataLoader gave them, "
        "or the labels no longer match their sequences.",
        "每一行都填充对了，但顺序变了：要保持 DataLoader 给出的样本顺序，否则标签就和序列对不上了。",
    )
    require(
        torch.equal(padded, want_padded),
        f"padded should be {want_padded.tolist()}, not {padded.tolist()}: each sequence from the left, "
        "then 0 up to the longest length.",
        f"padded 应该是 {want_padded.tolist()}，而不是 {padded.tolist()}："
        "每个序列从左边开始放，后面补 0 直到最长的长度。",
    )
    _check_lengths(lengths, want_lengths, want_padded)
    _check_labels(labels, want_labels)


def _check_lengths(lengths: torch.Tensor, want: torch.Tensor, want_padded: torch.Tensor) -> None:
    require(
        not lengths.is_floating_point() and not lengths.is_complex() and lengths.dtype != torch.bool,
        f"lengths hold {lengths.dtype}: a length counts elements, so keep an integer dtype, as "
        "pack_padded_sequence expects.",
        f"lengths 的数据类型是 {lengths.dtype}：长度是元素的个数，请保持整数类型，pack_padded_sequence 要的就是整数。",
    )
    nonzero = (want_padded != 0).sum(dim=1)
    if torch.equal(lengths, nonzero) and not torch.equal(nonzero, want):
        row = int((nonzero != want).nonzero()[0])
        sequence = want_padded[row, : want[row]].tolist()
        require(
            False,
            f"lengths should be {want.tolist()}, not {lengths.tolist()}: you counted the non-zero entries, but a "
            f"sequence may contain the token 0 itself ({sequence} here); measure each sequence before it is padded.",
            f"lengths 应该是 {want.tolist()}，而不是 {lengths.tolist()}：你数的是非零元素的个数，但序列本身也可能"
            f"含有记号 0（这里的 {sequence}）；请在填充之前量出每个序列的长度。",
        )
    require(
        lengths.shape == want.shape and torch.equal(lengths.long(), want),
        f"lengths should be {want.tolist()}, not {lengths.tolist()}: the lengths before padding, "
        "which a model needs to ignore the padding.",
        f"lengths 应该是 {want.tolist()}，而不是 {lengths.tolist()}：要的是填充之前的长度，模型靠它忽略填充的部分。",
    )


def _check_labels(labels: object, want: torch.Tensor) -> None:
    require(
        isinstance(labels, torch.Tensor),
        f"labels should be the tensor {want.tolist()} (int64), not {labels!r}: return the labels as a tensor, "
        "torch.tensor(labels).",
        f"labels 应该是张量 {want.tolist()}（int64），而不是 {labels!r}：要把标签变成张量，torch.tensor(labels)。",
    )
    require(
        labels.dtype == torch.int64,
        f"labels hold {labels.dtype}: F.cross_entropy wants class numbers as int64 (torch.long) and stops with "
        '"expected target dtype to be Long" otherwise.',
        f"labels 的数据类型是 {labels.dtype}：F.cross_entropy 要求类别编号是 int64（torch.long），"
        '否则会报错 "expected target dtype to be Long"。',
    )
    require(
        labels.shape == want.shape and torch.equal(labels, want),
        f"labels should be {want.tolist()}, not {labels.tolist()}: one label per sample, in the order of the samples.",
        f"labels 应该是 {want.tolist()}，而不是 {labels.tolist()}：每个样本一个标签，顺序与样本相同。",
    )
