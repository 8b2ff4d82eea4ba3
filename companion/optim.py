"""Lesson 06: SGD with momentum and Adam written out, the notes' old Adam, optimizer paths and the exercise checks."""

import inspect
from collections.abc import Callable, Iterable, Sequence

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import Tensor, nn

from companion.data import digits_datasets
from companion.exercises import passed, require

MakeOptimizer = Callable[[Iterable[Tensor]], torch.optim.Optimizer]


def _check_hyperparameters(params: object, lr: float, betas: Sequence[float], eps: float, weight_decay: float) -> None:
    """Raise a TypeError or ValueError that names the value to pass instead, before any state is created."""
    if isinstance(params, nn.Module):
        raise TypeError(
            f"params must be the tensors to optimize, not the {type(params).__name__} itself: pass model.parameters()"
        )
    for name, value, example in (("lr", lr, "1e-3"), ("eps", eps, "1e-8"), ("weight_decay", weight_decay, "1e-2")):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"{name} must be a number such as {example}, not {value!r}")
    if not isinstance(betas, tuple | list):
        raise TypeError(f"betas must be a pair (beta1, beta2) such as (0.9, 0.999), not {betas!r}")
    if not lr >= 0:  # `not >=` also catches NaN
        raise ValueError(f"lr must be >= 0 (a small positive number such as 1e-3), not {lr}")
    if len(betas) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2) such as (0.9, 0.999), not {betas}")
    for i, beta in enumerate(betas):
        if not 0 <= beta < 1:
            raise ValueError(
                f"betas[{i}] must be in [0, 1), e.g. betas=(0.9, 0.999), not {beta}: "
                "beta = 1 would never forget the first gradient and divide by zero in the bias correction"
            )
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0 (it keeps the denominator away from zero; the default is 1e-8), not {eps}")
    if not weight_decay >= 0:
        raise ValueError(f"weight_decay must be >= 0 (0 turns it off; 1e-2 is a common value), not {weight_decay}")


class Adam(torch.optim.Optimizer):
    """`torch.optim.Adam` (L2 `weight_decay`, `amsgrad`, `maximize`) as one readable loop, bit for bit the same.

    The arithmetic follows PyTorch's single-tensor path (`foreach=False`, the default on the CPU) in the same order,
    so the parameters come out exactly equal, not just close. Real floating-point parameters only.
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        _check_hyperparameters(params, lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)
        super().__init__(params, defaults | dict(maximize=maximize))

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        """Update every parameter that has a gradient; `closure` (optional) recomputes and returns the loss."""
        loss = None
        if closure is not None:
            with torch.enable_grad():  # the closure calls backward(), which needs autograd
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:  # frozen, or not used by this loss: no update, no state
                    continue
                grad = -param.grad if group["maximize"] else param.grad
                state = self.state[param]
                if not state:  # the first step of this parameter
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(param)  # first moment: running mean of the gradient
                    state["exp_avg_sq"] = torch.zeros_like(param)  # second moment: running mean of its square
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = torch.zeros_like(param)
                state["step"] += 1
                if group["weight_decay"] != 0:
                    # L2 penalty ("coupled"): the decay joins the gradient and is rescaled with it below.
                    grad = grad.add(param, alpha=group["weight_decay"])
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)  # m = beta1 * m + (1 - beta1) * g
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)  # v = beta2 * v + (1 - beta2) * g * g
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]
                second_moment = exp_avg_sq
                if group["amsgrad"]:  # use the largest second moment seen so far
                    torch.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
                    second_moment = state["max_exp_avg_sq"]
                # p -= lr * m_hat / (sqrt(v_hat) + eps), with m_hat = m / bc1 and sqrt(v_hat) = sqrt(v) / sqrt(bc2)
                denom = (second_moment.sqrt() / bias_correction2**0.5).add_(group["eps"])
                param.addcdiv_(exp_avg, denom, value=-group["lr"] / bias_correction1)
        return loss


class NotesAdam(torch.optim.Optimizer):
    """The Adam of the notes (an old `torch.optim.Adam`) in today's syntax: eps is added before the bias correction.

    Old: p -= lr * sqrt(bc2) / bc1 * m / (sqrt(v) + eps). Today: p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps).
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        _check_hyperparameters(params, lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        """One step of the notes' update for every parameter with a gradient; `closure` recomputes the loss."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                grad = param.grad
                state = self.state[param]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(param)
                    state["exp_avg_sq"] = torch.zeros_like(param)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                state["step"] += 1
                if group["weight_decay"] != 0:
                    grad = grad.add(param, alpha=group["weight_decay"])  # notes: grad.add(weight_decay, p.data)
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)  # notes: add_(1 - beta1, grad)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)  # notes: addcmul_(1 - beta2, grad, grad)
                denom = exp_avg_sq.sqrt().add_(group["eps"])  # eps meets the uncorrected sqrt(v)
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]
                step_size = group["lr"] * bias_correction2**0.5 / bias_correction1
                param.addcdiv_(exp_avg, denom, value=-step_size)  # notes: addcdiv_(-step_size, exp_avg, denom)
        return loss


@torch.no_grad()
def sgd_momentum_update(
    param: Tensor, grad: Tensor, buf: Tensor | None, lr: float, momentum: float, dampening: float = 0.0
) -> Tensor | None:
    """One step of PyTorch's SGD with momentum on one tensor, in place; returns the momentum buffer for next time.

    buf = momentum * buf + (1 - dampening) * grad (on the first step buf = grad), then param -= lr * buf.
    With momentum 0 it is plain SGD, param -= lr * grad, and there is no buffer (None is returned).
    """
    if not lr >= 0:
        raise ValueError(f"lr must be >= 0 (e.g. 0.1), not {lr}")
    if not 0 <= momentum:
        raise ValueError(f"momentum must be >= 0 (0.9 is common; 0 is plain SGD), not {momentum}")
    if momentum == 0:  # plain SGD, as in torch.optim.SGD: no buffer, and dampening plays no part
        param.add_(grad, alpha=-lr)
        return None
    if buf is None:
        buf = grad.clone()  # the first step takes the whole gradient: dampening is not applied yet
    else:
        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
    param.add_(buf, alpha=-lr)
    return buf


def digits_mlp(seed: int = 0, hidden: int = 32) -> nn.Sequential:
    """A small classifier for the 8x8 digits (64 -> hidden -> 10) whose initial weights depend only on `seed`."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int such as 0, not {seed!r}")
    if isinstance(hidden, bool) or not isinstance(hidden, int):
        raise TypeError(f"hidden must be a positive int such as 32, not {hidden!r}")
    if hidden < 1:
        raise ValueError(f"hidden must be a positive int such as 32, not {hidden}")
    with torch.random.fork_rng(devices=[]):  # leave the caller's random state as it was
        torch.manual_seed(seed)
        return nn.Sequential(nn.Flatten(), nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def digits_batches(steps: int, batch_size: int = 64, seed: int = 0) -> list[tuple[Tensor, Tensor]]:
    """`steps` shuffled mini-batches (images, labels) of the digits training set: the same data for every optimizer."""
    if any(isinstance(n, bool) or not isinstance(n, int) for n in (steps, batch_size)):
        raise TypeError(f"steps and batch_size must be ints (e.g. 100 and 64), not {steps!r} and {batch_size!r}")
    if steps < 0 or batch_size < 1:
        raise ValueError(f"steps must be >= 0 and batch_size >= 1 (e.g. 100 and 64), not {steps} and {batch_size}")
    images, labels = digits_datasets()[0].tensors
    if batch_size > len(labels):
        raise ValueError(f"batch_size must be at most {len(labels)}, the size of the training set, not {batch_size}")
    generator = torch.Generator().manual_seed(seed)
    batches = []
    while len(batches) < steps:  # one epoch after another, each in a new order; the last short batch is dropped
        order = torch.randperm(len(labels), generator=generator)
        for start in range(0, len(order) - batch_size + 1, batch_size):
            chosen = order[start : start + batch_size]
            batches.append((images[chosen], labels[chosen]))
    return batches[:steps]


def train(model: nn.Module, optimizer: torch.optim.Optimizer, batches: list[tuple[Tensor, Tensor]]) -> list[float]:
    """The plain loop (zero_grad, forward, cross-entropy loss, backward, step) once per batch; the losses."""
    losses = []
    for batch in batches:
        if not isinstance(batch, tuple | list) or len(batch) != 2:
            raise TypeError(
                f"each batch must be an (images, labels) pair, not {type(batch).__name__}: pass a list of "
                "(images, labels) batches, e.g. [(images, labels)] for one batch"
            )
        images, labels = batch
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def train_copies(make_optimizers: dict[str, MakeOptimizer], steps: int = 100, seed: int = 0) -> dict[str, nn.Module]:
    """Train one copy of the same digits MLP per optimizer, on the same batches; the trained models by name."""
    if not isinstance(make_optimizers, dict):
        raise TypeError(
            "make_optimizers must be a dict of names to functions, e.g. "
            f"{{'Adam': lambda params: torch.optim.Adam(params, lr=1e-3)}}, not {make_optimizers!r}"
        )
    for make_optimizer in make_optimizers.values():
        _check_make_optimizer(make_optimizer)
    batches = digits_batches(steps, seed=seed)
    models = {}
    for name, make_optimizer in make_optimizers.items():
        model = digits_mlp(seed)
        train(model, make_optimizer(model.parameters()), batches)
        models[name] = model
    return models


def _check_make_optimizer(make_optimizer: object) -> None:
    """A function from parameters to an optimizer (an optimizer class, with its default lr, is one too)."""
    if not callable(make_optimizer):
        raise TypeError(
            "make_optimizer must be a function from parameters to an optimizer, e.g. "
            f"lambda params: torch.optim.Adam(params, lr=1e-3), not {make_optimizer!r}"
        )


def first_step_sizes(make_optimizer: MakeOptimizer, seed: int = 0) -> tuple[Tensor, Tensor]:
    """|gradient| and |change| of each digits-MLP element after one step on one batch (zero gradients left out)."""
    _check_make_optimizer(make_optimizer)
    model = digits_mlp(seed)
    before = [p.detach().clone() for p in model.parameters()]
    train(model, make_optimizer(model.parameters()), digits_batches(1, seed=seed))
    grads = torch.cat([p.grad.flatten() for p in model.parameters()]).abs()
    moves = torch.cat([(p.detach() - b).flatten() for p, b in zip(model.parameters(), before, strict=True)]).abs()
    moved = grads > 0  # an element with a zero gradient does not move under any of these optimizers
    return grads[moved], moves[moved]


def max_abs_difference(model_a: nn.Module, model_b: nn.Module) -> float:
    """The largest |a - b| over all parameters of two models with the same architecture (0.0 means equal)."""
    params_a, params_b = list(model_a.parameters()), list(model_b.parameters())
    pairs = list(zip(params_a, params_b, strict=False))
    if len(params_a) != len(params_b) or any(a.shape != b.shape for a, b in pairs):
        raise ValueError("the two models must have the same architecture: build both with the same function")
    return max((a - b).abs().max().item() for a, b in pairs)


def rosenbrock(xy: Tensor, a: float = 1.0, b: float = 100.0) -> Tensor:
    """Rosenbrock's banana valley (a - x)^2 + b (y - x^2)^2, over the last dimension: minimum 0 at (a, a^2)."""
    if not isinstance(xy, Tensor):
        raise TypeError(
            f"xy must be a tensor of points (x, y), shape (..., 2), e.g. torch.tensor([1.0, 2.0]), not {xy!r}"
        )
    if xy.shape[-1:] != (2,):
        raise ValueError(f"xy must hold points (x, y) in its last dimension, shape (..., 2), not {tuple(xy.shape)}")
    x, y = xy[..., 0], xy[..., 1]
    return (a - x) ** 2 + b * (y - x**2) ** 2


def trajectory(
    make_optimizer: MakeOptimizer,
    start: tuple[float, float] = (-1.5, 2.0),
    steps: int = 500,
    function: Callable[[Tensor], Tensor] = rosenbrock,
) -> Tensor:
    """The points an optimizer visits while minimizing `function` from `start`: shape (steps + 1, 2), float64.

    It calls `optimizer.step(closure)`, which every optimizer accepts and LBFGS requires.
    """
    _check_make_optimizer(make_optimizer)
    if steps < 0:
        raise ValueError(f"steps must be >= 0, not {steps}")
    point = torch.tensor(start, dtype=torch.float64, requires_grad=True)
    if point.shape != (2,):
        raise ValueError(f"start must be one point (x, y), e.g. (-1.5, 2.0), not {start}")
    optimizer = make_optimizer([point])

    def closure() -> Tensor:
        optimizer.zero_grad()
        value = function(point)
        value.backward()
        return value

    path = [point.detach().clone()]
    for _ in range(steps):
        optimizer.step(closure)
        path.append(point.detach().clone())
    return torch.stack(path)


def plot_trajectories(paths: dict[str, Tensor], function: Callable[[Tensor], Tensor] = rosenbrock) -> Figure:
    """One panel per named path: the path over the contours of `function` (log scale), the minimum (1, 1) starred."""
    if not isinstance(paths, dict):
        raise TypeError(f"paths must be a dict, not {type(paths).__name__}: pass {{name: trajectory(...)}}")
    if not paths:
        raise ValueError("paths is empty: pass {name: trajectory(...)} for at least one optimizer")
    points = torch.cat(list(paths.values()))
    low, high = points.min(0).values.clamp(max=-0.5) - 0.3, points.max(0).values.clamp(min=1.5) + 0.3
    xs, ys = torch.linspace(low[0], high[0], 200), torch.linspace(low[1], high[1], 200)
    grid = torch.stack(torch.meshgrid(xs, ys, indexing="xy"), dim=-1)
    heights = torch.log10(function(grid) + 1e-3)  # log scale: the valley floor is visible, not only the walls
    fig, axes = plt.subplots(1, len(paths), figsize=(3.4 * len(paths), 3.6), sharex=True, sharey=True, squeeze=False)
    for ax, (name, path) in zip(axes[0], paths.items(), strict=True):
        ax.contour(xs, ys, heights, levels=15, colors="0.7", linewidths=0.6)
        ax.plot(path[:, 0], path[:, 1], color="C3", marker=".", markersize=2, linewidth=1)
        ax.plot(*path[0].tolist(), marker="o", color="black", markersize=5)
        ax.plot([1.0], [1.0], marker="*", markersize=14, color="gold", markeredgecolor="black")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("x")
    axes[0, 0].set_ylabel("y")
    fig.suptitle("Rosenbrock: start ●, minimum ★ / 起点 ●，最小值 ★", fontsize=11)
    fig.tight_layout()
    return fig


# Exercise checks ----------------------------------------------------------------------------------------------------

# (shape, lr, betas, eps, steps, gradient scale): the last case makes eps matter, so its placement shows.
_ADAM_CASES = [
    ((5,), 1e-3, (0.9, 0.999), 1e-8, 10, 1.0),
    ((3, 4), 0.05, (0.8, 0.99), 1e-8, 25, 10.0),
    ((6,), 0.01, (0.9, 0.999), 1e-2, 15, 1e-2),
]


def _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps, weight_decay=0.0, mistake=None):
    """Adam on one tensor with the moments as written in textbooks; `mistake` reproduces a common wrong version."""
    beta1, beta2 = betas
    if mistake == "coupled":
        grad = grad + weight_decay * param
    elif weight_decay and mistake != "decay after":
        param.mul_(1 - lr * weight_decay)
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    bc1, bc2 = (1.0, 1.0) if mistake == "no bias correction" else (1 - beta1**step, 1 - beta2**step)
    if mistake == "eps before correction":
        param.addcdiv_(exp_avg, exp_avg_sq.sqrt() + eps, value=-lr * bc2**0.5 / bc1)
    else:
        param.addcdiv_(exp_avg / bc1, (exp_avg_sq / bc2).sqrt() + eps, value=-lr)
    if mistake == "decay after":
        param.mul_(1 - lr * weight_decay)


def _run_update(update, case, generator, weight_decay=None, mistake=None):
    """Run `update` (the learner's, or the reference with a `mistake`) on a fresh tensor; param and moments."""
    shape, lr, betas, eps, steps, scale = case
    param = torch.randn(shape, dtype=torch.float64, generator=generator)
    exp_avg, exp_avg_sq = torch.zeros_like(param), torch.zeros_like(param)
    grads = [torch.randn(shape, dtype=torch.float64, generator=generator) * scale for _ in range(steps)]
    history = []
    for step, grad in enumerate(grads, start=1):
        extra = {} if weight_decay is None else {"weight_decay": weight_decay}
        if mistake is None:
            update(param, grad.clone(), exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps, **extra)
        else:
            _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps, weight_decay or 0, mistake)
        history.append((param.clone(), exp_avg.clone(), exp_avg_sq.clone()))
    return grads, history


def _torch_run(optimizer_class, case, grads, start, **options):
    """The same run with a torch.optim optimizer (single-tensor path); the parameter after each step."""
    shape, lr, betas, eps, steps, scale = case
    param = start.clone().requires_grad_(True)
    optimizer = optimizer_class([param], lr=lr, betas=betas, eps=eps, foreach=False, **options)
    after = []
    for grad in grads:
        param.grad = grad.clone()
        optimizer.step()
        after.append(param.detach().clone())
    return after


def _check_update(update, name, optimizer_class, mistakes, weight_decay=None):
    """Shared body of the two checks: every case against torch.optim, with a hint for each known mistake."""
    require(callable(update), f"Pass the function itself: check_{name}({name}), without ().")
    options = {} if weight_decay is None else {"weight_decay": weight_decay}
    arguments = "param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps" + (", weight_decay" if options else "")
    try:
        inspect.signature(update).bind(*range(5), lr=0, betas=0, eps=0, **options)
    except TypeError:
        require(
            False,
            f"{name} must accept ({arguments}), with lr, betas and eps{' and weight_decay' * bool(options)} "
            "as keyword arguments.",
        )
    for number, case in enumerate(_ADAM_CASES, start=1):
        seed = 100 + number
        start = torch.randn(case[0], dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        grads, history = _run_update(update, case, torch.Generator().manual_seed(seed), weight_decay)
        want = _torch_run(optimizer_class, case, grads, start, **options)
        where = f"case {number} (lr={case[1]}, betas={case[2]}, eps={case[3]})"
        param_1, exp_avg_1, exp_avg_sq_1 = history[0]
        require(not torch.equal(param_1, start), f"{where}: param did not change. Update it in place (param.sub_).")
        require(
            bool(exp_avg_1.any()) and bool(exp_avg_sq_1.any()),
            f"{where}: exp_avg or exp_avg_sq is still zero after step 1. Update the moments in place "
            "(exp_avg.mul_(beta1).add_(...)); `exp_avg = ...` only rebinds a local name.",
        )
        got = torch.stack([p for p, _, _ in history])
        if torch.allclose(got, torch.stack(want), rtol=1e-10, atol=1e-12):
            continue
        for mistake, hint in mistakes.items():
            _, wrong = _run_update(None, case, torch.Generator().manual_seed(seed), weight_decay, mistake)
            if torch.allclose(got, torch.stack([p for p, _, _ in wrong]), rtol=1e-10, atol=1e-12):
                require(False, f"{where}: {hint}")
        first_bad = next(
            i
            for i, (g, w) in enumerate(zip(got, want, strict=True))
            if not torch.allclose(g, w, rtol=1e-10, atol=1e-12)
        )
        require(
            False,
            f"{where}: param differs from torch.optim.{optimizer_class.__name__} from step {first_bad + 1} on. "
            "Check m = beta1*m + (1-beta1)*g, v = beta2*v + (1-beta2)*g*g, then "
            "p -= lr * (m / (1 - beta1**step)) / (sqrt(v / (1 - beta2**step)) + eps).",
        )
    return len(_ADAM_CASES)


def check_adam_update(adam_update: Callable[..., None]) -> None:
    """Self-check: `adam_update(param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps)` must step like torch's Adam."""
    mistakes = {
        "no bias correction": "the steps are too large at the start: there is no bias correction. Divide m by "
        "1 - beta1**step and v by 1 - beta2**step before using them.",
        "eps before correction": "eps is added to sqrt(v) before the bias correction, as in the old source of the "
        "notes. Today eps is added to sqrt(v / (1 - beta2**step)).",
    }
    cases = _check_update(adam_update, "adam_update", torch.optim.Adam, mistakes)
    passed(f"adam_update follows torch.optim.Adam step for step in {cases} cases, bias correction included")


def check_adamw_update(adamw_update: Callable[..., None]) -> None:
    """Self-check: `adamw_update(..., weight_decay)` must step like torch.optim.AdamW (decoupled weight decay)."""
    mistakes = {
        "coupled": "this is Adam's L2 weight decay: the decay went into the gradient. AdamW shrinks the parameter "
        "itself, param.mul_(1 - lr * weight_decay), and gives Adam the plain gradient.",
        "decay after": "the decay comes after the Adam step; torch.optim.AdamW shrinks param first, then steps.",
    }
    cases = _check_update(adamw_update, "adamw_update", torch.optim.AdamW, mistakes, weight_decay=0.1)
    passed(f"adamw_update follows torch.optim.AdamW step for step in {cases} cases, with decoupled weight decay")
