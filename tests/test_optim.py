"""companion.optim against PyTorch: Adam bit for bit (and the notebook's own Adam class), the notes' Adam, SGD
momentum, helpers, paths, and the exercise checks of companion.checks.optim."""

import copy
import json
import re
import warnings
from functools import partial

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from companion import optim
from companion.checks import optim as checks_optim
from companion.checks.answers.optim import _reference_adam_update
from companion.checks.optim import check_adam_update, check_adamw_update
from companion.data import digits_datasets
from companion.exercises import WrongAnswer
from companion.optim import (
    Adam,
    NotesAdam,
    digits_batches,
    digits_mlp,
    first_step_sizes,
    max_abs_difference,
    plot_trajectories,
    rosenbrock,
    sgd_momentum_update,
    train,
    train_copies,
    trajectory,
)
from companion.plotting import COLUMN_WIDTH, use_course_style
from tests.bad_inputs import LINEAR, PARAMETER, bad
from tools.course import NOTEBOOK_DIR

# The stated tolerance of the Adam match: none. The parameters must be bit-for-bit equal.
TOLERANCE = 0.0

ADAM_SETTINGS = {
    "plain": {},
    "weight_decay": {"weight_decay": 1e-2},
    "amsgrad": {"amsgrad": True},
    "both": {"weight_decay": 1e-2, "amsgrad": True},
    "maximize": {"maximize": True},
}


def equal_parameters(model_a, model_b) -> bool:
    return all(map(torch.equal, model_a.parameters(), model_b.parameters()))


@pytest.mark.parametrize("options", ADAM_SETTINGS.values(), ids=ADAM_SETTINGS.keys())
def test_adam_matches_torch_adam_over_100_steps_on_the_digits(options):
    models = train_copies(
        {
            "ours": partial(Adam, lr=1e-2, **options),
            "torch": partial(torch.optim.Adam, lr=1e-2, foreach=False, **options),
            "start": partial(torch.optim.SGD, lr=0.0),
        },
        steps=100,
    )
    difference = max_abs_difference(models["ours"], models["torch"])
    print(f"Adam {options}: max |difference| after 100 steps = {difference}")
    assert difference <= TOLERANCE
    assert equal_parameters(models["ours"], models["torch"])
    assert max_abs_difference(models["ours"], models["start"]) > 0.1  # it trained: the match is not vacuous


def notebook_adam_class() -> type:
    """The `Adam` class written in lesson 09's notebook, executed from the notebook's JSON."""
    notebook = json.loads((NOTEBOOK_DIR / "09-adam.ipynb").read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    (source,) = [s for s in sources if s.startswith("class Adam(torch.optim.Optimizer):")]
    namespace = {"torch": torch}
    exec(compile(source, "09-adam.ipynb", "exec"), namespace)
    return namespace["Adam"]


@pytest.mark.parametrize("options", [ADAM_SETTINGS[name] for name in ("plain", "weight_decay", "amsgrad", "both")])
def test_the_notebooks_adam_class_trains_exactly_like_the_companion_copy(options):
    models = train_copies(
        {
            "notebook": partial(notebook_adam_class(), lr=1e-2, **options),
            "companion": partial(Adam, lr=1e-2, **options),
            "torch": partial(torch.optim.Adam, lr=1e-2, foreach=False, **options),
        },
        steps=100,
    )
    assert max_abs_difference(models["notebook"], models["companion"]) == 0.0
    assert equal_parameters(models["notebook"], models["companion"])
    assert equal_parameters(models["notebook"], models["torch"])


def test_the_notebooks_adam_class_keeps_the_same_state_and_skips_frozen_parameters():
    model = digits_mlp(0)
    model[1].requires_grad_(False)
    optimizer = notebook_adam_class()(model.parameters(), lr=1e-2, amsgrad=True)
    train(model, optimizer, digits_batches(3))
    assert len(optimizer.state) == 2
    assert set(optimizer.state_dict()["state"][2]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}


@st.composite
def adam_problem(draw):
    """Random tensors in two parameter groups with their own hyperparameters, and a gradient per step."""
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    shapes = draw(st.lists(st.lists(st.integers(1, 4), max_size=3), min_size=2, max_size=4))
    params = [torch.randn(shape, dtype=dtype, generator=generator) for shape in shapes]
    params = params[::2] + params[1::2]  # the order in which the groups list them, as the grads below
    groups = []
    for part in (params[: (len(params) + 1) // 2], params[(len(params) + 1) // 2 :]):
        groups.append(
            {
                "params": part,
                "lr": draw(st.sampled_from([1e-3, 0.01, 0.3])),
                "betas": (draw(st.sampled_from([0.0, 0.5, 0.9])), draw(st.sampled_from([0.0, 0.9, 0.999]))),
                "eps": draw(st.sampled_from([0.0, 1e-8, 1e-3])),
                "weight_decay": draw(st.sampled_from([0.0, 0.1])),
                "amsgrad": draw(st.booleans()),
                "maximize": draw(st.booleans()),
            }
        )
    steps = draw(st.integers(1, 12))
    scale = draw(st.sampled_from([1e-6, 1.0, 100.0]))
    grads = [[torch.randn(p.shape, dtype=dtype, generator=generator) * scale for p in params] for _ in range(steps)]
    return groups, grads


def run_optimizer(optimizer_class, groups, grads, **options):
    groups = copy.deepcopy(groups)
    params = [p.requires_grad_(True) for group in groups for p in group["params"]]
    optimizer = optimizer_class(groups, **options)
    for step_grads in grads:
        for p, grad in zip(params, step_grads, strict=True):
            p.grad = grad.clone()
        optimizer.step()
    return params, optimizer


@settings(max_examples=60, deadline=None)
@given(adam_problem())
def test_adam_matches_torch_adam_on_random_tensors_and_groups(problem):
    groups, grads = problem
    ours, _ = run_optimizer(Adam, groups, grads)
    theirs, _ = run_optimizer(torch.optim.Adam, groups, grads, foreach=False)
    assert all(map(torch.equal, ours, theirs))


def test_adam_state_dict_round_trip_resumes_exactly():
    batches = digits_batches(100)
    straight = digits_mlp(0)
    train(straight, Adam(straight.parameters(), lr=1e-2, amsgrad=True, weight_decay=1e-3), batches)

    first = digits_mlp(0)
    optimizer = Adam(first.parameters(), lr=1e-2, amsgrad=True, weight_decay=1e-3)
    train(first, optimizer, batches[:50])
    saved_model, saved_optimizer = copy.deepcopy(first.state_dict()), copy.deepcopy(optimizer.state_dict())
    assert saved_optimizer["state"][0]["step"] == 50
    assert set(saved_optimizer["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}

    resumed = digits_mlp(1)  # other initial weights, replaced by the saved ones
    resumed.load_state_dict(saved_model)
    fresh = Adam(resumed.parameters(), lr=0.5)  # other settings, replaced by the saved ones
    fresh.load_state_dict(saved_optimizer)
    assert fresh.param_groups[0]["lr"] == 1e-2
    train(resumed, fresh, batches[50:])
    assert equal_parameters(resumed, straight)


def test_torch_adam_can_continue_from_our_state_dict():
    batches = digits_batches(40)
    ours_model, torch_model = digits_mlp(0), digits_mlp(0)
    ours = Adam(ours_model.parameters(), lr=1e-2)
    train(ours_model, ours, batches[:20])
    torch_model.load_state_dict(ours_model.state_dict())
    theirs = torch.optim.Adam(torch_model.parameters(), lr=1e-2, foreach=False)
    theirs.load_state_dict(copy.deepcopy(ours.state_dict()))  # a copy, as after saving: load shares tensors
    train(ours_model, ours, batches[20:])
    train(torch_model, theirs, batches[20:])
    assert equal_parameters(ours_model, torch_model)


def test_step_calls_the_closure_once_with_grad_enabled_and_returns_its_loss():
    p = torch.tensor([1.0, -2.0], requires_grad=True)
    optimizer = Adam([p], lr=0.1)
    calls = []

    def closure():
        calls.append(torch.is_grad_enabled())
        optimizer.zero_grad()
        loss = (p**2).sum()
        loss.backward()
        return loss

    with torch.no_grad():  # step enables gradients for the closure itself
        loss = optimizer.step(closure)
    assert calls == [True] and loss.item() == 5.0
    assert torch.allclose(p.detach(), torch.tensor([0.9, -1.9]))
    assert optimizer.step() is None


def test_parameters_without_grad_are_skipped_and_get_no_state():
    model = digits_mlp(0)
    model[1].requires_grad_(False)
    frozen = model[1].weight.clone()
    optimizer = Adam(model.parameters(), lr=1e-2, weight_decay=0.1)
    train(model, optimizer, digits_batches(5))
    assert torch.equal(model[1].weight, frozen) and model[1].weight.grad is None
    assert len(optimizer.state) == 2 and model[1].weight not in optimizer.state


HYPERPARAMETER_FIXES = [
    ({"lr": -1e-3}, "lr must be >= 0"),
    ({"lr": float("nan")}, "lr must be a number such as 1e-3, not NaN"),
    ({"betas": (1.0, 0.999)}, "betas[0] must be in [0, 1)"),
    ({"betas": (-0.1, 0.999)}, "betas[0] must be in [0, 1)"),
    ({"betas": (0.9, 1.0)}, "betas[1] must be in [0, 1)"),
    ({"betas": (0.9, 1.5)}, "e.g. betas=(0.9, 0.999)"),
    ({"eps": -1e-8}, "eps must be >= 0"),
    ({"weight_decay": -0.01}, "weight_decay must be >= 0"),
]


@pytest.mark.parametrize(("bad", "fix"), HYPERPARAMETER_FIXES)
@pytest.mark.parametrize("optimizer_class", [Adam, NotesAdam])
def test_bad_hyperparameters_raise_like_torch_with_the_fix(optimizer_class, bad, fix):
    params = [torch.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError):
        torch.optim.Adam(params, **bad)
    with pytest.raises(ValueError, match=re.escape(fix)):
        optimizer_class(params, **bad)


def test_betas_must_be_a_pair():
    with pytest.raises(ValueError, match=re.escape("a pair (beta1, beta2)")):
        Adam([torch.zeros(1, requires_grad=True)], betas=(0.9,))


# The notes' Adam ------------------------------------------------------------------------------------------------------


def notes_original_step(p, state, lr, betas, eps, weight_decay):
    """The notes' update lines, verbatim apart from the parameter being passed in (deprecated overloads and all)."""
    grad = p.grad.data
    if len(state) == 0:
        state["step"] = 0
        state["exp_avg"] = grad.new().resize_as_(grad).zero_()
        state["exp_avg_sq"] = grad.new().resize_as_(grad).zero_()
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    beta1, beta2 = betas
    state["step"] += 1
    if weight_decay != 0:
        grad = grad.add(weight_decay, p.data)
    exp_avg.mul_(beta1).add_(1 - beta1, grad)
    exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)
    denom = exp_avg_sq.sqrt().add_(eps)
    bias_correction1 = 1 - beta1 ** state["step"]
    bias_correction2 = 1 - beta2 ** state["step"]
    step_size = lr * bias_correction2**0.5 / bias_correction1  # notes: math.sqrt(bias_correction2)
    p.data.addcdiv_(-step_size, exp_avg, denom)


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
@pytest.mark.parametrize("eps", [1e-8, 1e-2])
def test_notes_adam_is_the_notes_update_exactly(eps, weight_decay):
    generator = torch.Generator().manual_seed(3)
    start = torch.randn(4, 3, generator=generator)
    grads = [torch.randn(4, 3, generator=generator) * 1e-3 for _ in range(30)]
    ours, original = start.clone().requires_grad_(True), start.clone().requires_grad_(True)
    optimizer, state = NotesAdam([ours], lr=0.01, eps=eps, weight_decay=weight_decay), {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecated overloads of the notes
        for grad in grads:
            ours.grad, original.grad = grad.clone(), grad.clone()
            optimizer.step()
            notes_original_step(original, state, 0.01, (0.9, 0.999), eps, weight_decay)
    assert torch.equal(ours, original)


def test_notes_adam_is_adam_with_eps_divided_by_sqrt_of_bias_correction2():
    generator = torch.Generator().manual_seed(4)
    start = torch.randn(50, dtype=torch.float64, generator=generator)
    grads = [torch.randn(50, dtype=torch.float64, generator=generator) * 1e-3 for _ in range(40)]
    notes, today, rescaled = (start.clone().requires_grad_(True) for _ in range(3))
    eps = 1e-4  # comparable to sqrt(v), so its placement matters
    notes_opt = NotesAdam([notes], lr=0.01, eps=eps)
    today_opt = torch.optim.Adam([today], lr=0.01, eps=eps, foreach=False)
    rescaled_opt = torch.optim.Adam([rescaled], lr=0.01, eps=eps, foreach=False)
    for step, grad in enumerate(grads, start=1):
        rescaled_opt.param_groups[0]["eps"] = eps / (1 - 0.999**step) ** 0.5
        for p, opt in [(notes, notes_opt), (today, today_opt), (rescaled, rescaled_opt)]:
            p.grad = grad.clone()
            opt.step()
    assert (notes - today).abs().max() > 1e-3
    torch.testing.assert_close(notes, rescaled, rtol=1e-12, atol=1e-12)


def keras_adam(p: torch.Tensor, grads: torch.Tensor, lr: float, eps: float, beta1=0.9, beta2=0.999) -> torch.Tensor:
    """Keras 3's Adam update (keras/src/optimizers/adam.py), written out without weight decay."""
    m, v = torch.zeros_like(p), torch.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        m += (g - m) * (1 - beta1)
        v += (g * g - v) * (1 - beta2)
        alpha = lr * (1 - beta2**t) ** 0.5 / (1 - beta1**t)
        p = p - m * alpha / (v.sqrt() + eps)
    return p


def test_keras_adam_puts_eps_where_the_old_code_does():
    """Lesson 09: "older PyTorch computed it and Keras still does" (eps before the bias correction)."""
    generator = torch.Generator().manual_seed(0)
    start = torch.randn(100, dtype=torch.float64, generator=generator)
    grads = torch.randn(100, 100, dtype=torch.float64, generator=generator) * 1e-6  # near eps: placement matters
    keras = keras_adam(start, grads, lr=1e-2, eps=1e-7)
    old, today = start.clone().requires_grad_(True), start.clone().requires_grad_(True)
    old_opt, today_opt = NotesAdam([old], lr=1e-2, eps=1e-7), torch.optim.Adam([today], lr=1e-2, eps=1e-7)
    for grad in grads:
        for p, opt in [(old, old_opt), (today, today_opt)]:
            p.grad = grad.clone()
            opt.step()
    torch.testing.assert_close(old.detach(), keras, rtol=1e-12, atol=1e-12)
    assert (today.detach() - keras).abs().max() > 1e-3


def test_first_step_sizes_follow_the_two_eps_formulas():
    grads, moves = first_step_sizes(partial(torch.optim.Adam, lr=1e-2))
    assert len(grads) == len(moves) and bool((grads > 0).all())
    torch.testing.assert_close(moves / 1e-2, grads / (grads + 1e-8), rtol=0, atol=1e-4)
    notes_grads, notes_moves = first_step_sizes(partial(NotesAdam, lr=1e-2))
    assert torch.equal(grads, notes_grads)
    torch.testing.assert_close(notes_moves / 1e-2, grads / (grads + 1e-8 / 0.001**0.5), rtol=0, atol=1e-4)


# SGD with momentum ----------------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([0.01, 0.1, 1.0]),
    st.sampled_from([0.0, 0.5, 0.9, 0.99]),
    st.sampled_from([0.0, 0.1, 0.5]),
    st.integers(1, 10),
    st.integers(0, 2**31),
)
def test_sgd_momentum_update_equals_torch_sgd(lr, momentum, dampening, steps, seed):
    generator = torch.Generator().manual_seed(seed)
    start = torch.randn(3, 2, generator=generator)
    grads = [torch.randn(3, 2, generator=generator) for _ in range(steps)]
    ours, theirs = start.clone(), start.clone().requires_grad_(True)
    optimizer = torch.optim.SGD([theirs], lr=lr, momentum=momentum, dampening=dampening)
    buf = None
    for grad in grads:
        buf = sgd_momentum_update(ours, grad, buf, lr=lr, momentum=momentum, dampening=dampening)
        theirs.grad = grad.clone()
        optimizer.step()
    assert torch.equal(ours, theirs.detach())
    if momentum:
        assert torch.equal(buf, optimizer.state[theirs]["momentum_buffer"])
    else:
        assert buf is None and optimizer.state[theirs].get("momentum_buffer") is None


def test_sgd_momentum_first_step_ignores_dampening_and_works_on_leaf_parameters():
    p = torch.zeros(2, requires_grad=True)  # in place on a leaf is allowed: the function runs under no_grad
    grad = torch.tensor([1.0, -2.0])
    buf = sgd_momentum_update(p, grad, None, lr=0.1, momentum=0.9, dampening=0.5)
    assert torch.equal(buf, grad) and buf is not grad
    assert torch.allclose(p.detach(), torch.tensor([-0.1, 0.2]))
    buf = sgd_momentum_update(p, grad, buf, lr=0.1, momentum=0.9, dampening=0.5)
    assert torch.allclose(buf, 0.9 * grad + 0.5 * grad)


@pytest.mark.parametrize(
    ("arguments", "fix"),
    [({"lr": -0.1, "momentum": 0.9}, "lr must be >= 0"), ({"lr": 0.1, "momentum": -0.9}, "momentum must be >= 0")],
)
def test_sgd_momentum_bad_arguments_name_the_fix(arguments, fix):
    with pytest.raises(ValueError):
        torch.optim.SGD([torch.zeros(1, requires_grad=True)], **arguments)
    with pytest.raises(ValueError, match=fix):
        sgd_momentum_update(torch.zeros(1), torch.ones(1), None, **arguments)


# The model, the batches and the loop ----------------------------------------------------------------------------------


def test_digits_mlp_depends_only_on_its_seed_and_leaves_the_global_rng_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    a, b, c = digits_mlp(0), digits_mlp(0), digits_mlp(1)
    assert torch.equal(torch.rand(3), expected)
    assert equal_parameters(a, b) and not equal_parameters(a, c)
    assert sum(p.numel() for p in a.parameters()) == 64 * 32 + 32 + 32 * 10 + 10
    assert a(torch.zeros(5, 1, 8, 8)).shape == (5, 10)


def test_digits_batches_are_repeatable_epochs_of_the_training_set():
    batches = digits_batches(25, batch_size=64, seed=0)
    assert len(batches) == 25 and all(x.shape == (64, 1, 8, 8) and y.shape == (64,) for x, y in batches)
    per_epoch = 1348 // 64  # 21 full batches; the short last one is dropped
    first_epoch = torch.cat([x for x, _ in batches[:per_epoch]]).flatten(1)
    train_images = digits_datasets()[0].tensors[0].flatten(1)
    distinct_in_train = len(torch.unique(train_images, dim=0))
    # Each image once per epoch (a few digit images are identical, and 1348 - 1344 = 4 are left over).
    assert distinct_in_train - 4 <= len(torch.unique(first_epoch, dim=0)) <= distinct_in_train
    assert len(torch.unique(torch.cat([train_images, first_epoch]), dim=0)) == distinct_in_train
    again = digits_batches(25, batch_size=64, seed=0)
    assert all(torch.equal(x1, x2) and torch.equal(y1, y2) for (x1, y1), (x2, y2) in zip(batches, again, strict=True))
    assert not torch.equal(digits_batches(1, seed=1)[0][1], batches[0][1])
    assert digits_batches(0) == []


def test_train_returns_the_losses_and_learns():
    model = digits_mlp(0)
    batches = digits_batches(60)
    losses = train(model, torch.optim.Adam(model.parameters(), lr=1e-2), batches)
    images, labels = batches[0]
    assert len(losses) == 60 and losses[0] > 2.0 and sum(losses[-10:]) / 10 < 0.6
    assert F.cross_entropy(model(images), labels).item() < losses[0]


def test_max_abs_difference_measures_the_largest_gap():
    a, b = digits_mlp(0), digits_mlp(0)
    assert max_abs_difference(a, b) == 0.0
    with torch.no_grad():
        b[3].bias[4] += 0.25
    assert max_abs_difference(a, b) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="same architecture"):
        max_abs_difference(a, digits_mlp(0, hidden=16))


# Rosenbrock paths -----------------------------------------------------------------------------------------------------


def test_rosenbrock_values_and_gradient():
    assert rosenbrock(torch.tensor([1.0, 1.0])).item() == 0.0
    assert rosenbrock(torch.tensor([0.0, 0.0])).item() == 1.0
    assert rosenbrock(torch.tensor([[2.0, 4.0], [-1.0, 1.0]])).tolist() == [1.0, 4.0]
    xy = torch.tensor([-1.5, 2.0], dtype=torch.float64, requires_grad=True)
    rosenbrock(xy).backward()
    x, y = -1.5, 2.0
    assert xy.grad.tolist() == pytest.approx([-2 * (1 - x) - 400 * x * (y - x**2), 200 * (y - x**2)])


def test_trajectory_records_each_step_of_the_optimizer():
    path = trajectory(partial(torch.optim.SGD, lr=1e-3), start=(-1.5, 2.0), steps=5)
    assert path.shape == (6, 2) and path.dtype == torch.float64
    assert path[0].tolist() == [-1.5, 2.0]
    first_gradient = torch.tensor([-155.0, -50.0], dtype=torch.float64)  # the analytic gradient at the start
    torch.testing.assert_close(path[1], path[0] - 1e-3 * first_gradient)
    assert trajectory(partial(torch.optim.SGD, lr=1e-3), steps=0).shape == (1, 2)


def test_trajectory_works_with_lbfgs_and_its_closure():
    path = trajectory(partial(torch.optim.LBFGS, line_search_fn="strong_wolfe"), steps=3)
    torch.testing.assert_close(path[-1], torch.tensor([1.0, 1.0], dtype=torch.float64), rtol=0, atol=1e-4)


def test_momentum_and_adam_get_further_than_sgd_on_rosenbrock():
    final = {
        name: rosenbrock(trajectory(make, steps=300)[-1]).item()
        for name, make in {
            "sgd": partial(torch.optim.SGD, lr=1e-3),
            "momentum": partial(torch.optim.SGD, lr=1e-3, momentum=0.9),
            "adam": partial(Adam, lr=0.1),
        }.items()
    }
    assert final["momentum"] < final["sgd"] and final["adam"] < final["sgd"]


def test_plot_trajectories_draws_one_panel_per_path():
    use_course_style()
    paths = {"a": trajectory(partial(torch.optim.SGD, lr=1e-3), steps=20), "b": torch.tensor([[0.0, 0.0], [1.0, 1.0]])}
    fig = plot_trajectories(paths)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing Chinese glyph would warn
        fig.canvas.draw()
    assert [ax.get_title() for ax in fig.axes] == ["a", "b"]
    drawn = fig.axes[1].lines[0].get_xydata()
    assert drawn.tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert "最小值" in fig._suptitle.get_text()
    assert fig.get_size_inches()[0] <= COLUMN_WIDTH
    plt.close(fig)


# Exercise checks ------------------------------------------------------------------------------------------------------


def pytorch_order_adam(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    denom = (exp_avg_sq.sqrt() / (1 - beta2**step) ** 0.5).add_(eps)
    param.addcdiv_(exp_avg, denom, value=-lr / (1 - beta1**step))


# No bias correction and the notes' eps are rows of EXERCISES (companion/checks/optim.py), run by test_checks.py.


def adam_rebinding_moments(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    exp_avg = beta1 * exp_avg + (1 - beta1) * grad  # a new tensor: the caller's exp_avg stays zero
    exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
    param.sub_(lr * (exp_avg / (1 - beta1**step)) / ((exp_avg_sq / (1 - beta2**step)).sqrt() + eps))


def adam_rebinding_param(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    param = param - lr * exp_avg / (exp_avg_sq.sqrt() + eps)  # noqa: F841 (the mistake under test)


def adam_with_abs_gradient(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).add_(grad.abs(), alpha=1 - beta2)  # forgets to square
    param.sub_(lr * (exp_avg / (1 - beta1**step)) / ((exp_avg_sq / (1 - beta2**step)).sqrt() + eps))


@pytest.mark.parametrize("right", [_reference_adam_update, pytorch_order_adam])
def test_check_adam_update_passes_right_answers_in_any_order(right, capsys):
    check_adam_update(right)
    assert capsys.readouterr().out.startswith("✓ Correct / 正确: adam_update follows torch.optim.Adam")


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (adam_rebinding_moments, "Update the moments in place"),
        (adam_rebinding_param, "param did not change"),
        (adam_with_abs_gradient, "g*g"),
        (_reference_adam_update(torch.zeros(1), torch.ones(1), torch.zeros(1), torch.zeros(1), 1), "without ()"),
    ],
)
def test_check_adam_update_rejects_wrong_answers_with_a_hint(wrong, hint):
    with pytest.raises(WrongAnswer, match=re.escape(hint)):
        check_adam_update(wrong)


def right_adamw(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    param.mul_(1 - lr * weight_decay)
    _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


def coupled_adamw(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    _reference_adam_update(param, grad + weight_decay * param, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


def late_adamw(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)
    param.mul_(1 - lr * weight_decay)


def no_lr_adamw(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    param.mul_(1 - weight_decay)
    _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


def test_check_adamw_update_passes_a_right_answer(capsys):
    check_adamw_update(right_adamw)
    assert capsys.readouterr().out.startswith("✓ Correct / 正确: adamw_update follows torch.optim.AdamW")


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (coupled_adamw, "Adam's L2 weight decay"),
        (late_adamw, "shrinks param first"),
        (no_lr_adamw, "the decay multiplied by lr"),
        (_reference_adam_update, "must accept (param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps, weight_decay)"),
    ],
)
def test_check_adamw_update_rejects_wrong_answers_with_a_hint(wrong, hint):
    with pytest.raises(WrongAnswer, match=re.escape(hint)):
        check_adamw_update(wrong)


def test_check_adam_update_names_eps_inside_the_square_root_in_both_languages():
    def eps_inside(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        beta1, beta2 = betas
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        param.sub_(lr * (exp_avg / (1 - beta1**step)) / (exp_avg_sq / (1 - beta2**step) + eps).sqrt())

    with pytest.raises(WrongAnswer, match="inside the square root") as caught:
        check_adam_update(eps_inside)
    assert "平方根" in str(caught.value)


def adamw_power_decay(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    param.mul_((1 - weight_decay) ** lr)
    _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


def adamw_fixed_decay(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    param.mul_(1 - lr * 1e-2)
    _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


def adamw_constant_decay(
    param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2
):
    param.sub_(lr * weight_decay)
    _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (adamw_power_decay, "so the decay is what differs"),
        (adamw_fixed_decay, "not its default value"),
        (adamw_constant_decay, "so the decay is what differs"),
    ],
)
def test_check_adamw_update_names_the_decay_when_only_the_decay_is_wrong(wrong, hint):
    # docs/reviews/09-adam.md: the moments were right in all three, and the old hint spoke only of the moments
    with pytest.raises(WrongAnswer, match=re.escape(hint)) as caught:
        check_adamw_update(wrong)
    assert "exp_avg differs" not in str(caught.value) and "衰减" in str(caught.value)


def test_check_adam_update_compares_the_moments_with_torch_adam_too():
    def m_without_one_minus_beta(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        beta1, beta2 = betas
        exp_avg.mul_(beta1).add_(grad)  # m / (1 - beta1): param is right, the stored moment is not
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        param.sub_(lr * (exp_avg * (1 - beta1) / (1 - beta1**step)) / ((exp_avg_sq / (1 - beta2**step)).sqrt() + eps))

    with pytest.raises(WrongAnswer, match="exp_avg differs from torch.optim.Adam's from step 1 on"):
        check_adam_update(m_without_one_minus_beta)


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(optim.Adam, ([PARAMETER],), ValueError, "a small positive number such as 1e-3", "negative-lr", lr=-1e-3),
    bad(optim.Adam, ([PARAMETER],), ValueError, "lr must be a number such as 1e-3, not NaN", "nan-lr", lr=float("nan")),
    bad(
        optim.Adam,
        ([PARAMETER],),
        ValueError,
        "betas must be a pair (beta1, beta2) such as (0.9, 0.999)",
        "one-beta",
        betas=(0.9,),
    ),
    bad(
        optim.Adam, ([PARAMETER],), ValueError, "must be in [0, 1), e.g. betas=(0.9, 0.999)", "beta-1", betas=(0.9, 1.0)
    ),
    bad(optim.Adam, ([PARAMETER],), ValueError, "the default is 1e-8", "negative-eps", eps=-1.0),
    bad(
        optim.Adam,
        ([PARAMETER],),
        ValueError,
        "0 turns it off; 1e-2 is a common value",
        "negative-weight-decay",
        weight_decay=-0.1,
    ),
    bad(optim.Adam, (LINEAR,), TypeError, "pass model.parameters()", "module"),
    bad(optim.Adam, ([PARAMETER],), TypeError, "such as 1e-3", "str-lr", lr="1e-3"),
    bad(optim.Adam, ([PARAMETER],), TypeError, "such as (0.9, 0.999)", "one-number-betas", betas=0.9),
    bad(optim.NotesAdam, ([PARAMETER],), ValueError, "a small positive number such as 1e-3", "negative-lr", lr=-1.0),
    bad(
        optim.NotesAdam,
        ([PARAMETER],),
        ValueError,
        "must be in [0, 1), e.g. betas=(0.9, 0.999)",
        "beta-1",
        betas=(1.0, 0.999),
    ),
    bad(
        optim.sgd_momentum_update,
        (torch.zeros(3), torch.ones(3), None, -0.1, 0.9),
        ValueError,
        "lr must be >= 0 (e.g. 0.1)",
        "negative-lr",
    ),
    bad(
        optim.sgd_momentum_update,
        (torch.zeros(3), torch.ones(3), None, 0.1, -0.9),
        ValueError,
        "0.9 is common; 0 is plain SGD",
        "negative-momentum",
    ),
    bad(
        optim.max_abs_difference,
        (nn.Linear(2, 1), nn.Linear(3, 1)),
        ValueError,
        "build both with the same function",
        "shapes",
    ),
    bad(
        optim.max_abs_difference,
        (nn.Linear(2, 1), nn.Sequential(nn.Linear(2, 1), nn.Linear(1, 1))),
        ValueError,
        "build both with the same function",
        "parameter-count",
    ),
    bad(
        checks_optim.check_adam_update,
        (lambda param, grad: None,),
        WrongAnswer,
        "must accept (param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps), with lr, betas and eps as keyword",
        "two-arguments",
    ),
]
