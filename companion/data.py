"""Lesson 07: the data the training lessons use, and the pieces of the lesson that run in DataLoader workers.

`digits_datasets` is the 1,797 handwritten digits shipped with scikit-learn (nothing to download), split into
train and test `TensorDataset`s. `NoisyIndices` and `reseed_worker` live here, not in the notebook, because a
worker started with "spawn" (macOS, Windows; Linux from Python 3.14 uses "forkserver") imports what it runs: a
class defined in a notebook cannot be found there.
"""

import importlib.util
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset, TensorDataset, get_worker_info


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
        raise ModuleNotFoundError("the digits come with scikit-learn: install the course's environment (make lab)")
    path = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"
    if not path.exists():  # another layout in some scikit-learn version: ask scikit-learn itself
        from sklearn.datasets import load_digits as sklearn_load_digits

        digits = sklearn_load_digits()
        return digits.images, digits.target
    table = np.loadtxt(path, delimiter=",")  # one digit per row: 64 pixels, then the label
    return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(np.int64)


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


# Argument guards.


def _check_split(test_fraction, seed) -> None:
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, int | float):
        raise TypeError(
            f"test_fraction must be a number between 0 and 1 (e.g. 0.25), not {type(test_fraction).__name__}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int such as 0, not {type(seed).__name__}")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be between 0 and 1 (e.g. 0.25), not {test_fraction}")


def _check_length(length) -> int:
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise ValueError(f"length must be a positive int such as 8, not {length!r}")
    return length
