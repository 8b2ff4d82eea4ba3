"""companion.data: the digits split is real, complete, disjoint, repeatable and leaves the global RNG alone; the
batching figure draws what DataLoader deals; the lesson's worker pieces and stream behave as lesson 07 says; the
collate_fn check rejects the typical mistakes."""

import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import companion.data
from companion import data
from companion.checks.answers.data import EXERCISES
from companion.checks.data import check_pad_collate
from companion.data import (
    NoisyIndices,
    NumberStream,
    batch_table,
    digits_datasets,
    plot_batches,
    read_sklearn_digits,
    reseed_worker,
)
from companion.exercises import WrongAnswer
from companion.plotting import use_course_style
from tests.bad_inputs import bad


def test_digits_are_scaled_images_with_labels():
    train, test = digits_datasets()
    assert len(train) == 1348 and len(test) == 449
    images, labels = train.tensors
    assert images.shape == (1348, 1, 8, 8) and images.dtype == torch.float32
    assert labels.dtype == torch.int64 and set(labels.tolist()) == set(range(10))
    assert images.min() == 0 and images.max() == 1


def sklearn_digits():
    """scikit-learn's own load_digits(), imported here, not at the top: the import takes a second or two."""
    from sklearn.datasets import load_digits as sklearn_load_digits

    return sklearn_load_digits()


@pytest.mark.integration  # imports scikit-learn (seconds): CI runs it with make test-integration
def test_the_digits_read_from_the_file_are_scikit_learns():
    pixels, labels = read_sklearn_digits()
    digits = sklearn_digits()
    assert pixels.shape == (1797, 8, 8) and labels.shape == (1797,) and labels.dtype == np.int64
    assert np.array_equal(pixels, digits.images) and np.array_equal(labels, digits.target)


@pytest.mark.integration  # imports scikit-learn (seconds): CI runs it with make test-integration
def test_without_the_file_the_digits_come_from_scikit_learn(monkeypatch, tmp_path):
    elsewhere = type("Spec", (), {"submodule_search_locations": [str(tmp_path)]})()  # a layout without the file
    monkeypatch.setattr(companion.data.importlib.util, "find_spec", lambda name: elsewhere)
    pixels, labels = read_sklearn_digits()
    digits = sklearn_digits()
    assert np.array_equal(pixels, digits.images) and np.array_equal(labels, digits.target)


def test_without_scikit_learn_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setattr(companion.data.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match=r"scikit-learn: install the course's environment \(make lab\)"):
        read_sklearn_digits()


def sorted_rows(x: torch.Tensor) -> torch.Tensor:
    return x[np.lexsort(x.numpy().T[::-1])]


def test_split_is_a_partition_of_the_original_data():
    train, test = digits_datasets(test_fraction=0.3, seed=5)
    images = torch.cat([train.tensors[0], test.tensors[0]]).flatten(1) * 16
    original = torch.tensor(read_sklearn_digits()[0], dtype=torch.float32).flatten(1)
    assert torch.equal(sorted_rows(images), sorted_rows(original))
    assert len(test) == round(1797 * 0.3)


def test_split_is_repeatable_and_depends_on_the_seed():
    a, b, c = digits_datasets(seed=1)[1], digits_datasets(seed=1)[1], digits_datasets(seed=2)[1]
    assert torch.equal(a.tensors[1], b.tensors[1]) and not torch.equal(a.tensors[1], c.tensors[1])


def test_split_does_not_touch_the_global_random_state():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    digits_datasets()
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("fraction", [0, 1, -0.5, 1.5])
def test_bad_test_fraction_names_the_range(fraction):
    with pytest.raises(ValueError, match="between 0 and 1"):
        digits_datasets(test_fraction=fraction)


# The lesson's worker pieces: NoisyIndices and reseed_worker


def noisy_batches(num_workers: int, worker_init_fn=None, seed: int = 0) -> list[list]:
    loader = DataLoader(
        NoisyIndices(8),
        batch_size=2,
        shuffle=True,
        num_workers=num_workers,
        worker_init_fn=worker_init_fn,
        generator=torch.Generator().manual_seed(seed),
    )
    return [[column.tolist() for column in batch] for batch in loader]


def test_noisy_indices_gives_each_index_with_two_draws():
    dataset = NoisyIndices(3, seed=1)
    samples = [dataset[i] for i in range(3)]
    assert [i for i, _, _ in samples] == [0, 1, 2]
    assert all(0 <= a < 1 and 0 <= b < 1 for _, a, b in samples)
    assert [i for i, _, _ in dataset] == [0, 1, 2]  # iterable through __getitem__, until IndexError
    with pytest.raises(IndexError, match="out of range for 3 samples"):
        dataset[3]


def test_without_a_worker_init_fn_every_worker_repeats_the_datasets_own_draws():
    batches = noisy_batches(num_workers=2)
    assert sorted(i for batch in batches for i in batch[0]) == list(range(8))
    own = [batch[2] for batch in batches]
    assert own[0] == own[1] and own[2] == own[3]  # batches alternate between the two workers
    torch_draws = [batch[1] for batch in batches]
    assert torch_draws[0] != torch_draws[1]  # PyTorch seeds torch differently in each worker


def test_reseed_worker_gives_each_worker_its_own_draws_repeatably():
    batches = noisy_batches(num_workers=2, worker_init_fn=reseed_worker)
    own = [batch[2] for batch in batches]
    assert own[0] != own[1] and own[2] != own[3]
    assert noisy_batches(num_workers=2, worker_init_fn=reseed_worker) == batches
    assert noisy_batches(num_workers=2, worker_init_fn=reseed_worker, seed=1) != batches


def test_the_order_of_the_samples_does_not_depend_on_the_workers():
    orders = [[batch[0] for batch in noisy_batches(workers)] for workers in (0, 2)]
    assert orders[0] == orders[1]


# The exercise check: wrong answers beyond its EXERCISES table (which tests/test_checks.py runs)


def float32_labels(samples):
    padded, lengths, labels = EXERCISES[0].reference(samples)
    return padded, lengths, labels.float()


def lengths_from_non_zeros(samples):
    padded, _, labels = EXERCISES[0].reference(samples)
    return padded, (padded != 0).sum(1), labels


def collate_drawing_from_the_global_generator(samples):
    torch.rand(1)
    return EXERCISES[0].reference(samples)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (float32_labels, "F.cross_entropy wants class numbers as int64"),
        (lengths_from_non_zeros, "may contain the token 0 itself"),
        (collate_drawing_from_the_global_generator, "global random generator"),
        (lambda samples: EXERCISES[0].reference(samples)[:2], "returned 2 things"),
    ],
)
def test_check_pad_collate_names_the_issue_examples(wrong, hint):
    with pytest.raises(WrongAnswer, match=re.escape(hint)) as caught:
        check_pad_collate(wrong)
    assert "提示：" in str(caught.value)


def test_check_pad_collate_accepts_a_list_and_leaves_the_global_generator_alone(capsys):
    state = torch.random.get_rng_state()
    check_pad_collate(lambda samples: list(EXERCISES[0].reference(samples)))
    assert capsys.readouterr().out.startswith("✓ Correct / 正确: ")
    assert torch.equal(torch.random.get_rng_state(), state)


# The lesson's picture of batching: plot_batches draws what DataLoader really deals


def test_batch_table_is_what_the_data_loader_gives():
    table = batch_table(n=10, batch_size=4, seed=0)
    assert table["shuffle=False"] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    loader = DataLoader(range(10), batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(0))
    assert [table["shuffle=True, epoch 0"], table["shuffle=True, epoch 1"]] == [
        [batch.tolist() for batch in loader] for _ in range(2)
    ]
    for epoch in ("shuffle=True, epoch 0", "shuffle=True, epoch 1"):
        assert sorted(i for batch in table[epoch] for i in batch) == list(range(10))  # each index once an epoch
        assert [len(batch) for batch in table[epoch]] == [4, 4, 2]
    assert table["shuffle=True, epoch 0"] != table["shuffle=True, epoch 1"]
    dropped_last = table["shuffle=True, drop_last=True, epoch 0"]
    assert dropped_last == table["shuffle=True, epoch 0"][:2]  # the same shuffled order, short batch gone


def test_plot_batches_draws_each_index_and_hatches_exactly_the_dropped_batch():
    use_course_style()
    table = batch_table(n=10, batch_size=4, seed=0)
    fig = plot_batches(n=10, batch_size=4, seed=0)
    try:
        (ax,) = fig.axes
        assert fig.get_figwidth() <= 7.0
        assert len(ax.patches) == 4 * 10
        hatched = [t.get_text() for cell, t in zip(ax.patches, ax.texts, strict=True) if cell.get_hatch() == "//"]
        assert hatched == [str(i) for i in table["shuffle=True, epoch 0"][-1]]  # the short batch drop_last leaves out
        rows = [[int(t.get_text()) for t in ax.texts[10 * r : 10 * (r + 1)]] for r in range(4)]
        assert rows[:3] == [[i for batch in table[name] for i in batch] for name in list(table)[:3]]
        assert rows[3] == rows[1]  # drop_last does not change the order
        assert [t.get_text() for t in ax.get_yticklabels()] == list(table)
        assert min(t.get_fontsize() for t in ax.texts) >= 10
    finally:
        plt.close(fig)


# The lesson's stream: NumberStream with and without taking each worker's share


def stream_batches(take_share: bool, num_workers: int) -> list[list[int]]:
    loader = DataLoader(NumberStream(6, take_share=take_share), batch_size=2, num_workers=num_workers)
    return [batch.tolist() for batch in loader]


def test_number_stream_is_iterable_only():
    stream = NumberStream(6)
    assert list(stream) == list(range(6))
    with pytest.raises(TypeError):
        len(stream)
    with pytest.raises(NotImplementedError):
        stream[0]
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(stream, shuffle=True)


@pytest.mark.parametrize("take_share", [False, True])
def test_without_workers_the_stream_comes_out_once(take_share):
    assert stream_batches(take_share, num_workers=0) == [[0, 1], [2, 3], [4, 5]]


def test_with_two_workers_the_stream_comes_out_twice_unless_each_takes_its_share():
    repeated = stream_batches(take_share=False, num_workers=2)
    assert sorted(i for batch in repeated for i in batch) == sorted(list(range(6)) * 2)
    shared = stream_batches(take_share=True, num_workers=2)
    assert shared == [[0, 2], [1, 3], [4], [5]]  # worker 0 takes 0, 2, 4 and worker 1 takes 1, 3, 5


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(data.digits_datasets, (1.5,), ValueError, "between 0 and 1 (e.g. 0.25)", "above-1"),
    bad(data.digits_datasets, (0,), ValueError, "between 0 and 1 (e.g. 0.25)", "0"),
    bad(
        data.digits_datasets,
        ("0.25",),
        TypeError,
        "test_fraction must be a number such as 0.25 (between 0 and 1)",
        "str-fraction",
    ),
    bad(data.digits_datasets, (), TypeError, "seed must be an int such as 0", "str-seed", seed="0"),
    bad(data.NoisyIndices, (0,), ValueError, "length must be at least 1 (e.g. 8)", "zero"),
    bad(data.NoisyIndices, (-1,), ValueError, "length must be at least 1 (e.g. 8)", "negative"),
    bad(data.NoisyIndices, (2.0,), TypeError, "length must be an int such as 8", "float"),
    bad(data.NoisyIndices, (True,), TypeError, "length must be an int such as 8", "bool"),
    bad(data.reseed_worker, (0,), RuntimeError, "pass it as DataLoader(worker_init_fn=...)", "outside-a-worker"),
    bad(data.NumberStream, (0,), ValueError, "stop must be at least 1 (e.g. 8)", "zero"),
    bad(data.NumberStream, (2.0,), TypeError, "stop must be an int such as 8", "float"),
    bad(data.NumberStream, (6,), TypeError, "take_share must be True or False", "str-take-share", take_share="yes"),
]
