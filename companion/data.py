"""Lesson 07: the data the training lessons use, its picture of batching, and the pieces that run in DataLoader workers.

`digits_datasets` is the 1,797 handwritten digits shipped with scikit-learn (nothing to download), split into
train and test `TensorDataset`s. `plot_batches` draws how a DataLoader deals an epoch's indices into batches.
`NoisyIndices`, `reseed_worker` and `NumberStream` live here, not in the notebook, because a worker started with
"spawn" (macOS, Windows; Linux from Python 3.14 uses "forkserver") imports what it runs: a class defined in a
notebook cannot be found there.
"""

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info

from companion._validate import require_int, require_number
from companion.language import in_language, say

if TYPE_CHECKING:  # matplotlib is imported only when a picture is drawn: DataLoader workers import this module
    from matplotlib.figure import Figure


def digits_datasets(test_fraction: float = 0.25, seed: int = 0) -> tuple[TensorDataset, TensorDataset]:
    """The 1,797 8x8 digits shipped in scikit-learn as (train, test) sets: (N, 1, 8, 8) floats in [0, 1], labels."""
    _check_split(test_fraction, seed)
    pixels, targets = read_sklearn_digits()
    images = torch.tensor(pixels, dtype=torch.float32).unsqueeze(1) / 16.0  # (N, 1, 8, 8); pixels 0..16
    labels = torch.tensor(targets, dtype=torch.int64)  # (N,)
    # A seeded generator of its own: the split does not depend on (or disturb) the global random state.
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    n_test = round(len(labels) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return TensorDataset(images[train], labels[train]), TensorDataset(images[test], labels[test])


def read_sklearn_digits() -> tuple[np.ndarray, np.ndarray]:
    """The digits as (1797, 8, 8) pixel counts 0..16 and (1797,) labels: scikit-learn's `load_digits()` numbers.

    They are read straight from the file scikit-learn ships (datasets/data/digits.csv.gz), found without importing
    scikit-learn, whose import takes a second or two in every lesson that trains.
    tests/test_data.py compares the result with `sklearn.datasets.load_digits()` itself.
    """
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            in_language(
                "the digits come with scikit-learn: install the course's environment (make lab)",
                "手写数字数据随 scikit-learn 提供：请安装课程的环境（make lab）",
            )
        )
    path = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"
    if not path.exists():  # another layout in some scikit-learn version: ask scikit-learn itself
        from sklearn.datasets import load_digits as sklearn_load_digits

        digits = sklearn_load_digits()
        return digits.images, digits.target
    table = np.loadtxt(path, delimiter=",")  # one digit per row: 64 pixels, then the label
    return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(np.int64)


def batch_table(n: int = 10, batch_size: int = 4, seed: int = 0) -> dict[str, list[list[int]]]:
    """The batches of indices that DataLoader(range(n), batch_size) gives, one row per case the figure draws.

    The shuffled rows come from one loader with a generator seeded `seed` (its epochs 0 and 1); the drop_last row
    from a second shuffled loader with the same seed, so its epoch 0 is the same order without the short last batch.
    """

    def loader(**options) -> DataLoader:
        return DataLoader(range(n), batch_size=batch_size, **options)

    def seeded() -> torch.Generator:
        return torch.Generator().manual_seed(seed)

    shuffled = loader(shuffle=True, generator=seeded())
    return {
        "shuffle=False": [batch.tolist() for batch in loader()],
        "shuffle=True, epoch 0": [batch.tolist() for batch in shuffled],
        "shuffle=True, epoch 1": [batch.tolist() for batch in shuffled],
        "shuffle=True, drop_last=True, epoch 0": [
            batch.tolist() for batch in loader(shuffle=True, generator=seeded(), drop_last=True)
        ],
    }


def plot_batches(n: int = 10, batch_size: int = 4, seed: int = 0) -> "Figure":
    """Draw batch_table: each index a box coloured by its batch; the batch that drop_last drops, hatched."""
    import matplotlib.pyplot as plt

    from companion.plotting import COLUMN_WIDTH

    table = batch_table(n, batch_size, seed)
    step = batch_size + 0.5  # a gap between batches
    colours = plt.get_cmap("tab10").colors
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 0.45 * len(table) + 0.6), layout="constrained")
    for row, (name, batches) in enumerate(table.items()):
        if "drop_last" in name:  # the short batch it leaves out: epoch 0's last one
            batches = [*batches, *table["shuffle=True, epoch 0"][len(batches) :]]
        for b, batch in enumerate(batches):
            dropped = "drop_last" in name and b >= len(table[name])
            style = {"alpha": 0.3, "hatch": "//"} if dropped else {"alpha": 0.75}
            for j, index in enumerate(batch):
                x = b * step + j
                ax.add_patch(plt.Rectangle((x, row), 1, 1, facecolor=colours[b], edgecolor="0.3", **style))
                ax.text(x + 0.5, row + 0.5, str(index), ha="center", va="center", fontsize=10)
    batches_per_epoch = -(-n // batch_size)  # ceil(n / batch_size)
    ax.set_xlim(0, batches_per_epoch * step - 0.5)
    ax.set_ylim(len(table), 0)
    ax.set_aspect("equal")  # square boxes
    ax.set_xticks(
        [b * step + batch_size / 2 for b in range(batches_per_epoch)],
        [in_language(f"batch {b}", f"第 {b} 批") for b in range(batches_per_epoch)],
    )
    ax.set_yticks([r + 0.5 for r in range(len(table))], [_case_label(name) for name in table])
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_xlabel(say("hatched: left out by drop_last=True", "斜线格：drop_last=True 丢掉的样本"))
    return fig


def _case_label(name: str) -> str:
    """A row label of plot_batches: "shuffle=True, epoch 1" in the edition's language (English in the bilingual)."""
    options, _, epoch = name.rpartition(", epoch ")
    return in_language(name, f"{options.replace(', ', '，')}，第 {epoch} 轮" if options else name)


class NoisyIndices(Dataset):
    """Sample i is (i, a draw from torch's global generator, a draw from a NumPy generator this dataset holds).

    The two draws stand in for random augmentations. In each DataLoader worker PyTorch seeds torch (and `random`
    and NumPy's global generator) afresh, but it knows nothing of a generator an object holds: every worker starts
    with an identical copy of `self.rng`, unless a `worker_init_fn` such as `reseed_worker` replaces it.
    """

    def __init__(self, length: int, seed: int = 0) -> None:
        self.length = _check_length(length)
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> tuple[int, float, float]:
        if not 0 <= i < self.length:
            raise IndexError(f"index {i} is out of range for {self.length} samples")
        return i, torch.rand(()).item(), float(self.rng.random())


def reseed_worker(worker_id: int) -> None:
    """A worker_init_fn: give this worker's copy of the dataset a NumPy generator seeded with the worker's seed."""
    info = get_worker_info()  # None in the main process
    if info is None:
        raise RuntimeError("reseed_worker runs inside a DataLoader worker: pass it as DataLoader(worker_init_fn=...)")
    # info.seed is the base seed (drawn from the loader's generator each time the loader is iterated, or once with
    # persistent_workers=True) + worker_id: different in every worker, the same on every run with the same seed.
    info.dataset.rng = np.random.default_rng(info.seed)


class NumberStream(IterableDataset):
    """The numbers 0, 1, ..., stop - 1 as a stream, standing in for records read one after another from a file.

    It has __iter__ only: no length, no indices. A DataLoader with workers iterates a copy of it in each worker:
    with take_share=False every worker yields the whole stream; with take_share=True each asks get_worker_info()
    which worker it is and yields its share.
    """

    def __init__(self, stop: int, take_share: bool = True) -> None:
        self.stop = _check_length(stop, "stop")
        self.take_share = _check_bool(take_share, "take_share")

    def __iter__(self):
        numbers = range(self.stop)
        info = get_worker_info()  # None in the main process
        if self.take_share and info is not None:
            numbers = numbers[info.id :: info.num_workers]  # worker k: k, k + num_workers, k + 2 * num_workers, ...
        yield from numbers


# Argument guards.


def _check_split(test_fraction, seed) -> None:
    require_number(
        test_fraction, "test_fraction", example=in_language("0.25 (between 0 and 1)", "0.25（在 0 和 1 之间）")
    )
    require_int(seed, "seed", example=0)
    if not 0 < test_fraction < 1:
        raise ValueError(
            in_language(
                f"test_fraction must be between 0 and 1 (e.g. 0.25), not {test_fraction}",
                f"test_fraction 必须在 0 和 1 之间（例如 0.25），而不是 {test_fraction}",
            )
        )


def _check_length(length, name: str = "length") -> int:
    return require_int(length, name, smallest=1, example=8)


def _check_bool(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(
            in_language(
                f"{name} must be True or False, not {value!r}", f"{name} 必须是 True 或 False，而不是 {value!r}"
            )
        )
    return value
