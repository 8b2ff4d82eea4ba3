"""Extra checks of the lesson 01 and 02 self-checks against PyTorch itself (tests/test_checks.py runs their
EXERCISES tables generically)."""

import math

import pytest
import torch

from companion.checks import autograd, tensors
from companion.exercises import WrongAnswer


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


def test_center_rows_check_accepts_a_reshape_and_names_a_broadcast_error():
    tensors.check_center_rows(lambda x: x - x.mean(dim=1).reshape(-1, 1))
    with pytest.raises(WrongAnswer, match="Keep the dimension"):
        tensors.check_center_rows(lambda x: x - x.mean(dim=1))  # square case first: runs, wrong


def test_tanh_gradients_by_hand_match_autograd_and_a_finite_difference():
    for w, b, x, t in autograd.POINTS:
        dw, db = autograd.autograd_tanh_grads(w, b, x, t)
        by_hand = autograd._reference_tanh_grads(*(torch.tensor(v, dtype=torch.float64) for v in (w, b, x, t)))
        assert math.isclose(dw, by_hand[0].item(), abs_tol=1e-12) and math.isclose(db, by_hand[1].item(), abs_tol=1e-12)

        def loss(w_, b_, x=x, t=t):
            return (math.tanh(w_ * x + b_) - t) ** 2

        h = 1e-6
        assert math.isclose(dw, (loss(w + h, b) - loss(w - h, b)) / (2 * h), abs_tol=1e-6)
        assert math.isclose(db, (loss(w, b + h) - loss(w, b - h)) / (2 * h), abs_tol=1e-6)


def test_the_tanh_slips_are_told_apart_at_the_points():
    slips = [autograd._no_tanh_derivative, autograd._no_factor_two, autograd._dw_without_x, autograd._wrong_sign]
    for i, first in enumerate(slips):
        for second in slips[i + 1 :]:
            assert any(first(*p) != pytest.approx(second(*p)) for p in autograd.POINTS)


def test_full_batch_gradient_by_hand_equals_autograd():
    by_autograd, by_hand = autograd.full_batch_gradient()
    assert torch.allclose(by_autograd, by_hand, atol=1e-6)


def test_accumulation_check_leaves_the_global_random_state_alone():
    state = torch.get_rng_state()
    autograd.check_accumulated_gradient(autograd._reference_accumulate)
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
