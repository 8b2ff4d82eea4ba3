"""Real data with nothing to download: scikit-learn's handwritten digits, as PyTorch tensors."""

import torch
from sklearn.datasets import load_digits
from torch.utils.data import TensorDataset


def digits_datasets(test_fraction: float = 0.25, seed: int = 0) -> tuple[TensorDataset, TensorDataset]:
    """The 1,797 8x8 digits shipped in scikit-learn as (train, test) sets: (N, 1, 8, 8) floats in [0, 1], labels."""
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, int | float):
        raise TypeError(
            f"test_fraction must be a number between 0 and 1 (e.g. 0.25), not {type(test_fraction).__name__}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int such as 0, not {type(seed).__name__}")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be between 0 and 1 (e.g. 0.25), not {test_fraction}")
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0  # pixel values are 0..16
    labels = torch.tensor(digits.target, dtype=torch.int64)
    # A seeded generator of its own: the split does not depend on (or disturb) the global random state.
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    n_test = round(len(labels) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return TensorDataset(images[train], labels[train]), TensorDataset(images[test], labels[test])
