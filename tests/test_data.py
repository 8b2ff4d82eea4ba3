"""companion.data: the digits split is real, complete, disjoint, repeatable and leaves the global RNG alone."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from companion.data import digits_datasets


def test_digits_are_scaled_images_with_labels():
    train, test = digits_datasets()
    assert len(train) == 1348 and len(test) == 449
    images, labels = train.tensors
    assert images.shape == (1348, 1, 8, 8) and images.dtype == torch.float32
    assert labels.dtype == torch.int64 and set(labels.tolist()) == set(range(10))
    assert images.min() == 0 and images.max() == 1


def sorted_rows(x: torch.Tensor) -> torch.Tensor:
    return x[np.lexsort(x.numpy().T[::-1])]


def test_split_is_a_partition_of_the_original_data():
    train, test = digits_datasets(test_fraction=0.3, seed=5)
    images = torch.cat([train.tensors[0], test.tensors[0]]).flatten(1) * 16
    original = torch.tensor(load_digits().data, dtype=torch.float32)
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
