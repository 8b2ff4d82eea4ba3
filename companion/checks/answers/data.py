"""Lesson 07's reference answer, other correct answers and typical mistakes (the teacher's part: never imported by
companion/checks/data.py, left out of the student bundle)."""

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from companion.checks.data import check_pad_collate
from companion.exercises import Exercise, Mistake


def _reference(samples):
    sequences, labels = zip(*samples, strict=True)
    padded = pad_sequence(sequences, batch_first=True)  # (B, longest), 0 after each end
    lengths = torch.tensor([len(s) for s in sequences])  # (B,)
    return padded, lengths, torch.tensor(labels)


def _right_manual_loop_as_a_list(samples):
    lengths = torch.as_tensor([s.shape[0] for s, _ in samples])
    padded = torch.zeros(len(samples), int(lengths.max()), dtype=torch.int64)
    for row, (sequence, _) in zip(padded, samples, strict=True):
        row[: len(sequence)] = sequence
    return [padded, lengths, torch.as_tensor([y for _, y in samples])]  # default_collate returns a list too


def _right_f_pad_and_stack(samples):
    longest = max(s.numel() for s, _ in samples)
    padded = torch.stack([F.pad(s, (0, longest - s.numel()), value=0) for s, _ in samples])
    lengths = torch.tensor([s.numel() for s, _ in samples], dtype=torch.int32)  # pack_padded_sequence takes int32
    return padded, lengths, torch.tensor([y for _, y in samples], dtype=torch.long)


def _split(samples):
    sequences, labels = zip(*samples, strict=True)
    return list(sequences), list(labels), torch.tensor([len(s) for s in sequences])


def _mistake_time_first(samples):
    sequences, labels, lengths = _split(samples)
    return pad_sequence(sequences), lengths, torch.tensor(labels)


def _mistake_fixed_length(samples):
    sequences, labels, lengths = _split(samples)
    padded = torch.zeros(len(sequences), 4, dtype=torch.int64)  # 4: the longest sequence seen in the lesson
    for row, sequence in zip(padded, sequences, strict=True):
        row[: len(sequence)] = sequence
    return padded, lengths, torch.tensor(labels)


def _mistake_labels_as_a_tuple(samples):
    sequences, labels, lengths = _split(samples)
    return pad_sequence(sequences, batch_first=True), lengths, tuple(labels)


def _mistake_lengths_after_padding(samples):
    sequences, labels, _ = _split(samples)
    padded = pad_sequence(sequences, batch_first=True)
    return padded, torch.full((len(sequences),), padded.shape[1]), torch.tensor(labels)


def _mistake_lengths_from_non_zeros(samples):
    sequences, labels, _ = _split(samples)
    padded = pad_sequence(sequences, batch_first=True)
    return padded, (padded != 0).sum(dim=1), torch.tensor(labels)


def _mistake_float_lengths(samples):
    sequences, labels, lengths = _split(samples)
    return pad_sequence(sequences, batch_first=True), lengths.float(), torch.tensor(labels)


def _mistake_sorted_by_length(samples):
    sequences, labels, _ = _split(samples)
    ordered = sorted(sequences, key=len, reverse=True)  # as pack_padded_sequence once wanted, labels left behind
    return pad_sequence(ordered, batch_first=True), torch.tensor([len(s) for s in ordered]), torch.tensor(labels)


def _mistake_padded_with_minus_one(samples):
    sequences, labels, lengths = _split(samples)
    return pad_sequence(sequences, batch_first=True, padding_value=-1), lengths, torch.tensor(labels)


def _mistake_float32_labels(samples):
    sequences, labels, lengths = _split(samples)
    return pad_sequence(sequences, batch_first=True), lengths, torch.tensor(labels, dtype=torch.float32)


def _mistake_int32_labels(samples):
    sequences, labels, lengths = _split(samples)
    return pad_sequence(sequences, batch_first=True), lengths, torch.tensor(labels, dtype=torch.int32)


def _mistake_pads_in_place(samples):
    sequences, labels, lengths = _split(samples)
    longest = int(lengths.max())
    for i, (sequence, _) in enumerate(samples):
        samples[i] = (torch.cat([sequence, sequence.new_zeros(longest - len(sequence))]), samples[i][1])
    return torch.stack([s for s, _ in samples]), lengths, torch.tensor(labels)


EXERCISES = [
    Exercise(
        check=check_pad_collate,
        reference=_reference,
        mistakes=(
            Mistake(
                "pad_sequence without batch_first: (longest, batch)",
                _mistake_time_first,
                "put the batch dimension",
                what_zh="pad_sequence 没加 batch_first：形状成了 (longest, batch)",
            ),
            Mistake(
                "pads every batch to one fixed length",
                _mistake_fixed_length,
                "not to a fixed length",
                what_zh="每一批都填充到同一个固定长度",
            ),
            Mistake(
                "leaves the labels as a tuple",
                _mistake_labels_as_a_tuple,
                "return the labels as a tensor",
                what_zh="标签仍是元组，没转成张量",
            ),
            Mistake(
                "lengths measured after padding",
                _mistake_lengths_after_padding,
                "the lengths before padding",
                what_zh="长度是在填充之后量的",
            ),
            Mistake(
                "lengths as (padded != 0).sum(1)",
                _mistake_lengths_from_non_zeros,
                "the token 0 itself",
                what_zh="用 (padded != 0).sum(1) 计算长度",
            ),
            Mistake("lengths as floats", _mistake_float_lengths, "keep an integer dtype", what_zh="长度用了浮点数"),
            Mistake(
                "sorts the sequences by length, not the labels",
                _mistake_sorted_by_length,
                "in another order",
                what_zh="按长度给序列排了序，标签却没跟着排",
            ),
            Mistake(
                "pads with -1 where the lesson's padding is 0",
                _mistake_padded_with_minus_one,
                "then 0 up to",
                what_zh="用 -1 填充，而课上的填充值是 0",
            ),
            Mistake(
                "float32 labels", _mistake_float32_labels, "wants class numbers as int64", what_zh="标签是 float32"
            ),
            Mistake("int32 labels", _mistake_int32_labels, "wants class numbers as int64", what_zh="标签是 int32"),
            Mistake(
                "pads the samples in the list it was given",
                _mistake_pads_in_place,
                "changed its argument number 1",
                what_zh="在传入的列表里原地填充样本",
            ),
        ),
        right=(_right_manual_loop_as_a_list, _right_f_pad_and_stack),
        why="A collate_fn receives the list of samples of one batch; padding to the batch's own longest sequence "
        "wastes the least, and the lengths let a model ignore the padding.",
        why_zh="collate_fn 收到的是一批样本组成的列表；按这一批自己最长的序列填充最省空间，"
        "而长度信息让模型可以忽略填充的部分。",
        discuss="Why might a data loader for text sort a whole epoch's samples by length before making batches?",
        discuss_zh="为什么处理文本的数据加载器有时会先把一整轮的样本按长度排序，再分批？",
    )
]
