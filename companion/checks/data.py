"""Self-check for lesson 07: a collate_fn that pads sequences of different lengths into one batch."""

from collections.abc import Callable

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

from companion.exercises import Exercise, Mistake, passed, require

Sample = tuple[torch.Tensor, int]

# Two batches with different longest sequences: a collate_fn that pads to one fixed length fails one of them.
FIRST = [(torch.tensor([3, 1, 4]), 0), (torch.tensor([1]), 1), (torch.tensor([5, 9, 2, 6]), 1)]
SECOND = [(torch.tensor([5, 3]), 2), (torch.tensor([5]), 0)]


def check_pad_collate(pad_collate: Callable[[list[Sample]], tuple]) -> None:
    """`pad_collate(samples)` must return (padded (B, T) with 0 after each end, lengths (B,), labels (B,))."""
    require(
        callable(pad_collate),
        "Pass the function itself: check_pad_collate(pad_collate), without ().",
        "把函数本身传进去：check_pad_collate(pad_collate)，不要加 ()。",
    )
    for samples in (FIRST, SECOND):
        _check_one_batch(pad_collate, samples)
    loader = DataLoader(FIRST + SECOND, batch_size=2, collate_fn=pad_collate)
    batches = list(loader)
    require(
        [tuple(b[0].shape) for b in batches] == [(2, 3), (2, 4), (1, 1)],
        "Through a DataLoader with batch_size=2 the padded shapes should be (2, 3), (2, 4), (1, 1): "
        "pad each batch to its own longest sequence.",
        "放进 batch_size=2 的 DataLoader 后，填充后的形状应依次为 (2, 3)、(2, 4)、(1, 1)："
        "每一批都按这一批中最长的序列填充。",
    )
    passed(
        "each batch is padded to its own longest sequence, with the lengths and labels in order",
        "每一批都按这一批中最长的序列填充，长度和标签的顺序也都对应。",
    )


def _check_one_batch(pad_collate: Callable, samples: list[Sample]) -> None:
    want_padded, want_lengths, want_labels = _reference([(s.clone(), y) for s, y in samples])
    result = pad_collate([(s.clone(), y) for s, y in samples])
    require(
        isinstance(result, tuple) and len(result) == 3,
        "Return three things: `return padded, lengths, labels`.",
        "要返回三样东西：`return padded, lengths, labels`。",
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
        padded.shape[0] == batch,
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
    require(
        torch.equal(lengths, want_lengths),
        f"lengths should be {want_lengths.tolist()}, not {lengths.tolist()}: the lengths before padding, "
        "which a model needs to ignore the padding.",
        f"lengths 应该是 {want_lengths.tolist()}，而不是 {lengths.tolist()}："
        "要的是填充之前的长度，模型靠它忽略填充的部分。",
    )
    require(
        isinstance(labels, torch.Tensor) and torch.equal(labels, want_labels),
        f"labels should be the tensor {want_labels.tolist()} (int64), not {labels!r}: return the labels as a tensor, "
        "torch.tensor(labels).",
        f"labels 应该是张量 {want_labels.tolist()}（int64），而不是 {labels!r}："
        "要把标签变成张量，torch.tensor(labels)。",
    )


def _reference(samples: list[Sample]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    sequences, labels = zip(*samples, strict=True)
    padded = pad_sequence(sequences, batch_first=True)  # (B, longest), 0 after each end
    lengths = torch.tensor([len(s) for s in sequences])  # (B,)
    return padded, lengths, torch.tensor(labels)


def _time_first(samples: list[Sample]) -> tuple:
    sequences, labels = zip(*samples, strict=True)
    return pad_sequence(sequences), torch.tensor([len(s) for s in sequences]), torch.tensor(labels)


def _fixed_length(samples: list[Sample]) -> tuple:
    sequences, labels = zip(*samples, strict=True)
    padded = torch.zeros(len(sequences), 4, dtype=torch.int64)  # 4: the longest sequence seen in the lesson
    for row, sequence in zip(padded, sequences, strict=True):
        row[: len(sequence)] = sequence
    return padded, torch.tensor([len(s) for s in sequences]), torch.tensor(labels)


def _labels_as_a_tuple(samples: list[Sample]) -> tuple:
    sequences, labels = zip(*samples, strict=True)
    return pad_sequence(sequences, batch_first=True), torch.tensor([len(s) for s in sequences]), labels


def _lengths_after_padding(samples: list[Sample]) -> tuple:
    sequences, labels = zip(*samples, strict=True)
    padded = pad_sequence(sequences, batch_first=True)
    return padded, torch.tensor([padded.shape[1]] * len(sequences)), torch.tensor(labels)


def _sorted_by_length(samples: list[Sample]) -> tuple:
    sequences, labels = zip(*samples, strict=True)
    ordered = sorted(sequences, key=len, reverse=True)  # as pack_padded_sequence once wanted, labels left behind
    return pad_sequence(ordered, batch_first=True), torch.tensor([len(s) for s in ordered]), torch.tensor(labels)


def _padded_with_minus_one(samples: list[Sample]) -> tuple:
    sequences, labels = zip(*samples, strict=True)
    padded = pad_sequence(sequences, batch_first=True, padding_value=-1)
    return padded, torch.tensor([len(s) for s in sequences]), torch.tensor(labels)


EXERCISES = [
    Exercise(
        check=check_pad_collate,
        reference=_reference,
        mistakes=(
            Mistake("pad_sequence without batch_first: (longest, batch)", _time_first, "put the batch dimension"),
            Mistake("pads every batch to one fixed length", _fixed_length, "not to a fixed length"),
            Mistake("leaves the labels as a tuple", _labels_as_a_tuple, "return the labels as a tensor"),
            Mistake("lengths measured after padding", _lengths_after_padding, "the lengths before padding"),
            Mistake("sorts the sequences by length, not the labels", _sorted_by_length, "in another order"),
            Mistake("pads with -1 where the lesson's padding is 0", _padded_with_minus_one, "then 0 up to"),
        ),
        why="A collate_fn receives the list of samples of one batch; padding to the batch's own longest sequence "
        "wastes the least, and the lengths let a model ignore the padding.",
        why_zh="collate_fn 收到的是一批样本组成的列表；按这一批自己最长的序列填充最省空间，"
        "而长度信息让模型可以忽略填充的部分。",
        discuss="Why might a data loader for text sort a whole epoch's samples by length before making batches?",
        discuss_zh="为什么处理文本的数据加载器有时会先把一整轮的样本按长度排序，再分批？",
    )
]
