"""The parts of PyTorch's messages that the self-checks and the launcher look for (companion/_torch_errors.py): each
raised here by the real mistake it stands for, so a release that rewords one fails this test instead of quietly
turning a precise hint into a vague one. (The patterns load_checkpoint reads are tested in tests/test_checkpoint.py.)
"""

import pytest
import torch

from companion import _torch_errors as errors


def broadcast_a_row_mean():
    x = torch.ones(3, 4)
    return x - x.mean(dim=1)  # (3, 4) - (3,): lines up with the last dimension, 4


def view_a_transposed_tensor():
    return torch.ones(2, 3).t().view(6)


def scatter_along_the_wrong_dimension():
    perm = torch.tensor([[2, 0, 1], [1, 2, 0]])  # (B, N) = (2, 3): positions 0..2 along dim 1
    return torch.zeros_like(perm).scatter_(0, perm, torch.ones_like(perm))


def scatter_int64_into_float32():
    perm = torch.tensor([[2, 0, 1]])
    return torch.zeros(1, 3).scatter_(1, perm, perm)


def scatter_a_source_too_small():
    perm = torch.tensor([[2, 0, 1], [1, 2, 0]])
    return torch.zeros_like(perm).scatter_(1, perm, torch.arange(3).unsqueeze(0))


def scatter_a_source_of_other_dimensions():
    perm = torch.tensor([[2, 0, 1], [1, 2, 0]])
    return torch.zeros_like(perm).scatter_(1, perm, torch.arange(3))


@pytest.mark.parametrize(
    ("mistake", "part"),
    [
        (broadcast_a_row_mean, errors.BROADCAST_FAILED),
        (view_a_transposed_tensor, errors.VIEW_NOT_CONTIGUOUS),
        (scatter_along_the_wrong_dimension, errors.INDEX_OUT_OF_BOUNDS),
        (scatter_int64_into_float32, errors.DTYPE_MISMATCH),
        (lambda: torch.ones(2, requires_grad=True).numpy(), errors.NUMPY_NEEDS_DETACH),
        (lambda: torch.ones(2, dtype=torch.bfloat16).numpy(), errors.NUMPY_NO_BFLOAT16),
        (lambda: torch.ones(2).item(), errors.ITEM_NEEDS_ONE_VALUE),
    ],
    ids=lambda value: getattr(value, "__name__", str(value))[:30],
)
def test_each_part_is_in_the_message_of_the_mistake_it_stands_for(mistake, part):
    with pytest.raises((RuntimeError, TypeError, IndexError, ValueError)) as caught:
        mistake()
    assert errors.says(caught.value, part), str(caught.value)


@pytest.mark.parametrize("mistake", [scatter_a_source_too_small, scatter_a_source_of_other_dimensions])
def test_an_index_the_source_does_not_cover_is_recognised(mistake):
    with pytest.raises((RuntimeError, IndexError)) as caught:
        mistake()
    assert errors.says(caught.value, *errors.SHAPE_MISMATCH), str(caught.value)


def test_a_tensor_on_another_device_cannot_become_numpy():
    # No GPU here: the "meta" device stands in (no data anywhere); .numpy() refuses it with the same sentence.
    with pytest.raises(TypeError) as caught:
        torch.ones(2, device="meta").numpy()
    assert errors.says(caught.value, errors.NUMPY_NEEDS_CPU), str(caught.value)


def test_says_is_false_for_another_error():
    assert not errors.says(ValueError("something else"), errors.BROADCAST_FAILED, errors.DTYPE_MISMATCH)


def test_the_rank_that_failed_is_read_from_torch_multiprocessing_spawns_error():
    # torch.multiprocessing.ProcessRaisedException's text, as spawn raises it for the second child
    text = "\n\n-- Process 1 terminated with the following error:\nTraceback (most recent call last):\n..."
    found = errors.SPAWN_RANK_TERMINATED.search(text)
    assert found and found.group(1) == "1"
