"""Extra checks of the lesson 01 and 02 self-checks against PyTorch itself (tests/test_checks.py runs their
EXERCISES tables generically)."""

import importlib
import math

import numpy as np
import pytest
import torch

from companion.checks import autograd, tensors
from companion.exercises import WrongAnswer


def _teacher(name: str):
    """A name of lesson 02's teacher part: in companion/checks/answers/autograd.py once moved there, else beside
    its checker."""
    try:
        answers = importlib.import_module("companion.checks.answers.autograd")
    except ModuleNotFoundError:
        answers = None
    return getattr(answers, name, None) or getattr(autograd, name)


def test_the_sharing_table_is_what_pytorch_does():
    x = torch.arange(12.0).reshape(3, 4)
    truth = tensors.true_sharing()
    for name, op in tensors.OPERATIONS.items():
        result = op(x)
        before = x.clone()
        result[(0,) * result.dim()] = -1.0  # write the first element of the result
        assert torch.equal(x, before) != truth[name], name  # a view's write shows up in x, a copy's does not
        x.copy_(before)
    assert sum(truth.values()) == 6


def test_every_operation_has_exactly_one_hint_group():
    grouped = [name for names in tensors._HINTS for name in names]
    assert sorted(grouped) == sorted(tensors.OPERATIONS)


def test_sharing_check_rejects_missing_keys_and_non_bools():
    answers = dict(tensors.true_sharing())
    answers.pop("x[1]")
    with pytest.raises(WrongAnswer, match="missing"):
        tensors.check_shares_memory(answers)
    with pytest.raises(WrongAnswer, match="True .shares memory. or False"):
        tensors.check_shares_memory({name: "yes" for name in tensors.OPERATIONS})


def test_sharing_check_accepts_numpy_booleans():
    tensors.check_shares_memory({name: np.bool_(v) for name, v in tensors.true_sharing().items()})


def test_center_rows_check_accepts_a_reshape_and_names_a_broadcast_error():
    tensors.check_center_rows(lambda x: x - x.mean(dim=1).reshape(-1, 1))
    with pytest.raises(WrongAnswer, match="Keep the dimension"):
        tensors.check_center_rows(lambda x: x - x.mean(dim=1))  # square case first: runs, wrong


def test_center_rows_check_accepts_a_centring_matrix_whose_zeros_are_rounded():
    # issue 22: x @ (I - J/m) leaves ~1e-7 where the answer is exactly 0; float32's tolerances must let it pass
    def by_matrix(x):
        m = x.shape[1]
        return x @ (torch.eye(m) - torch.ones(m, m) / m)

    assert not torch.equal(by_matrix(torch.full((1, 3), 4.0)), torch.zeros(1, 3))
    tensors.check_center_rows(by_matrix)


def test_center_rows_check_names_a_float64_result_and_a_broadcast_failure():
    with pytest.raises(WrongAnswer, match="in x's own dtype"):
        tensors.check_center_rows(lambda x: x.double() - x.double().mean(dim=1, keepdim=True))
    with pytest.raises(WrongAnswer, match="Broadcasting failed for shape \\(2, 5\\)"):
        tensors.check_center_rows(lambda x: x - x.mean(dim=1) if x.shape[0] != x.shape[1] else x - x.mean(1, True))


def test_center_rows_check_leaves_the_global_state_and_gives_fresh_inputs():
    state, seen = torch.get_rng_state(), []
    tensors.check_center_rows(lambda x: seen.append(x) or x - x.mean(dim=1, keepdim=True))
    tensors.check_center_rows(lambda x: seen.append(x) or x - x.mean(dim=1, keepdim=True))
    half = len(seen) // 2
    assert all(a is not b and torch.equal(a, b) for a, b in zip(seen[:half], seen[half:], strict=True))
    assert any(not x.is_contiguous() for x in seen) and torch.equal(state, torch.get_rng_state())


def test_tanh_gradients_by_hand_match_autograd_and_a_finite_difference():
    for w, b, x, t in autograd.POINTS:
        dw, db = autograd.autograd_tanh_grads(w, b, x, t)
        by_hand = _teacher("_reference_tanh_grads")(*(torch.tensor(v, dtype=torch.float64) for v in (w, b, x, t)))
        assert math.isclose(dw, by_hand[0].item(), abs_tol=1e-12) and math.isclose(db, by_hand[1].item(), abs_tol=1e-12)

        def loss(w_, b_, x=x, t=t):
            return (math.tanh(w_ * x + b_) - t) ** 2

        h = 1e-6
        assert math.isclose(dw, (loss(w + h, b) - loss(w - h, b)) / (2 * h), abs_tol=1e-6)
        assert math.isclose(db, (loss(w, b + h) - loss(w, b - h)) / (2 * h), abs_tol=1e-6)


def test_the_tanh_slips_are_told_apart_at_the_points():
    slips = [_teacher(n) for n in ("_no_tanh_derivative", "_no_factor_two", "_dw_without_x", "_wrong_sign")]
    for i, first in enumerate(slips):
        for second in slips[i + 1 :]:
            assert any(first(*p) != pytest.approx(second(*p)) for p in autograd.POINTS)


def test_full_batch_gradient_by_hand_equals_autograd():
    by_autograd, by_hand = autograd.full_batch_gradient()
    assert torch.allclose(by_autograd, by_hand, atol=1e-6)


def test_accumulation_check_leaves_the_global_random_state_alone():
    state = torch.get_rng_state()
    autograd.check_accumulated_gradient(_teacher("_reference_accumulate"))
    assert torch.equal(state, torch.get_rng_state())


def test_accumulation_check_accepts_zero_grad_in_place_and_rejects_no_backward():
    def zero_in_place(w, x_batches, t_batches):
        w.grad.zero_()
        for x, t in zip(x_batches, t_batches, strict=True):
            (((x @ w - t) ** 2).mean() / len(x_batches)).backward()
        return w.grad

    autograd.check_accumulated_gradient(zero_in_place)
    with pytest.raises(WrongAnswer):
        autograd.check_accumulated_gradient(lambda w, xs, ts: w.grad)  # never calls backward(): the stale 100s
