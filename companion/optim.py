"""Lesson 09: Adam as a `torch.optim.Optimizer`, SGD with momentum, the notes' old Adam, and the lesson's helpers.

The lesson writes `Adam` in a notebook cell; this is the copy the tests compare with `torch.optim.Adam`, and
tests/test_optim.py proves that the notebook's class gives the same parameters, bit for bit.
"""

from collections.abc import Callable, Iterable, Sequence

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import Tensor, nn

from companion._validate import require_number
from companion.data import digits_datasets
from companion.language import in_language, say
from companion.plotting import COLUMN_WIDTH
from companion.training import train_one_epoch

MakeOptimizer = Callable[[Iterable[Tensor]], torch.optim.Optimizer]


class Adam(torch.optim.Optimizer):
    """`torch.optim.Adam` (L2 `weight_decay`, `amsgrad`, `maximize`) as one readable loop, bit for bit the same.

    The arithmetic follows PyTorch's single-tensor path (`foreach=False`, the default on the CPU) in the same order,
    so the parameters come out exactly equal, not just close. Real floating-point parameters only.
    """

    def __init__(
        self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, *, maximize=False
    ):
        _check_hyperparameters(params, lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)
        super().__init__(params, defaults | dict(maximize=maximize))

    @torch.no_grad()
    def step(self, closure=None):
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
                    state["exp_avg"] = torch.zeros_like(param)  # m: running mean of the gradient
                    state["exp_avg_sq"] = torch.zeros_like(param)  # v: running mean of its square
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = torch.zeros_like(param)
                state["step"] += 1
                if group["weight_decay"] != 0:  # L2 penalty ("coupled"): joins the gradient, rescaled below
                    grad = grad.add(param, alpha=group["weight_decay"])
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)  # m = beta1 * m + (1 - beta1) * g
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)  # v = beta2 * v + (1 - beta2) * g * g
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]
                if group["amsgrad"]:  # divide by the largest v seen so far
                    torch.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
                    exp_avg_sq = state["max_exp_avg_sq"]
                # p -= lr * m_hat / (sqrt(v_hat) + eps), with m_hat = m / bc1 and sqrt(v_hat) = sqrt(v) / sqrt(bc2)
                denom = (exp_avg_sq.sqrt() / bias_correction2**0.5).add_(group["eps"])
                param.addcdiv_(exp_avg, denom, value=-group["lr"] / bias_correction1)
        return loss


class NotesAdam(torch.optim.Optimizer):
    """The Adam of the notes (an old `torch.optim.Adam`) in today's syntax: eps is added before the bias correction.

    Old: p -= lr * sqrt(bc2) / bc1 * m / (sqrt(v) + eps). Today: p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps).
    This is the Adam paper's "efficient version" with its epsilon-hat, as TensorFlow's Adam still computes it.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        _check_hyperparameters(params, lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
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
                    state["exp_avg"] = torch.zeros_like(param)  # notes: grad.new().resize_as_(grad).zero_()
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
                param.addcdiv_(exp_avg, denom, value=-step_size)  # notes: p.data.addcdiv_(-step_size, exp_avg, denom)
        return loss


@torch.no_grad()
def sgd_momentum_update(param: Tensor, grad: Tensor, buf: Tensor | None, lr: float, momentum: float, dampening=0.0):
    """One step of PyTorch's SGD with momentum on one tensor, in place; returns the momentum buffer for next time."""
    _check_sgd_arguments(lr, momentum)
    if momentum == 0:  # plain SGD, as in torch.optim.SGD: no buffer, and dampening plays no part
        param.add_(grad, alpha=-lr)  # p = p - lr * grad
        return None
    if buf is None:
        buf = grad.clone()  # the first step takes the whole gradient: dampening is not applied yet
    else:
        buf.mul_(momentum).add_(grad, alpha=1 - dampening)  # buf = momentum * buf + (1 - dampening) * grad
    param.add_(buf, alpha=-lr)  # p = p - lr * buf
    return buf


# The lesson's experiments: a small model on the digits, the same batches for every optimizer ------------------------


def digits_mlp(seed: int = 0, hidden: int = 32) -> nn.Sequential:
    """A small classifier for the 8x8 digits (64 -> hidden -> 10), its initial weights set by `seed` alone.

    Not lesson 10's `checkpoint.make_model`: comparing optimizers wants no BatchNorm (its statistics would move with
    every optimizer differently) and a model small enough to train many copies in seconds. The caller's random state
    plays no part and is left as it was; on another CPU the last bits may differ.
    """
    with torch.random.fork_rng(devices=[]):  # leave the caller's random state as it was
        torch.manual_seed(seed)
        return nn.Sequential(nn.Flatten(), nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def digits_batches(steps: int, batch_size: int = 64, seed: int = 0) -> list[tuple[Tensor, Tensor]]:
    """`steps` shuffled mini-batches (images, labels) of the digits training set: the same data for every optimizer."""
    images, labels = digits_datasets()[0].tensors  # (1348, 1, 8, 8), (1348,)
    generator = torch.Generator().manual_seed(seed)
    batches = []
    while len(batches) < steps:  # one epoch after another, each in a new order; the last short batch is dropped
        order = torch.randperm(len(labels), generator=generator)
        for start in range(0, len(order) - batch_size + 1, batch_size):
            chosen = order[start : start + batch_size]
            batches.append((images[chosen], labels[chosen]))  # (batch_size, 1, 8, 8), (batch_size,)
    return batches[:steps]


def train(model: nn.Module, optimizer: torch.optim.Optimizer, batches: list[tuple[Tensor, Tensor]]) -> list[float]:
    """One optimizer step per batch with lesson 08's loop (a one-batch epoch each), so every step's loss is kept."""
    return [train_one_epoch(model, [batch], optimizer, F.cross_entropy) for batch in batches]


def train_copies(make_optimizers: dict[str, MakeOptimizer], steps: int = 100, seed: int = 0) -> dict[str, nn.Module]:
    """Train one copy of the same digits MLP per optimizer, on the same batches; the trained models by name."""
    batches = digits_batches(steps, seed=seed)
    models = {}
    for name, make_optimizer in make_optimizers.items():
        models[name] = digits_mlp(seed)
        train(models[name], make_optimizer(models[name].parameters()), batches)
    return models


def first_step_sizes(make_optimizer: MakeOptimizer, seed: int = 0) -> tuple[Tensor, Tensor]:
    """|gradient| and |change| of each digits-MLP element after one step on one batch (zero gradients left out)."""
    model = digits_mlp(seed)
    before = [p.detach().clone() for p in model.parameters()]
    train(model, make_optimizer(model.parameters()), digits_batches(1, seed=seed))
    grads = torch.cat([p.grad.flatten() for p in model.parameters()]).abs()  # (2410,)
    moves = torch.cat([(p.detach() - b).flatten() for p, b in zip(model.parameters(), before, strict=True)]).abs()
    moved = grads > 0  # an element with a zero gradient does not move under any of these optimizers
    return grads[moved], moves[moved]


def max_abs_difference(model_a: nn.Module, model_b: nn.Module) -> float:
    """The largest |a - b| over all parameters of two models with the same architecture (0.0 means equal)."""
    params_a, params_b = list(model_a.parameters()), list(model_b.parameters())
    if len(params_a) != len(params_b) or any(a.shape != b.shape for a, b in zip(params_a, params_b, strict=False)):
        raise ValueError(
            in_language(
                "the two models must have the same architecture: build both with the same function",
                "两个模型的结构必须相同：请用同一个函数建出两者",
            )
        )
    return max((a - b).abs().max().item() for a, b in zip(params_a, params_b, strict=True))  # max over all elements


def rosenbrock(xy: Tensor, a: float = 1.0, b: float = 100.0) -> Tensor:
    """Rosenbrock's banana valley (a - x)^2 + b (y - x^2)^2, over the last dimension: minimum 0 at (a, a^2)."""
    x, y = xy[..., 0], xy[..., 1]  # (...,) each
    return (a - x) ** 2 + b * (y - x**2) ** 2


def trajectory(make_optimizer: MakeOptimizer, start=(-1.5, 2.0), steps=500, function=rosenbrock) -> Tensor:
    """The points an optimizer visits while minimizing `function` from `start`: shape (steps + 1, 2), float64.

    It calls `optimizer.step(closure)`, which every optimizer accepts and LBFGS requires.
    """
    point = torch.tensor(start, dtype=torch.float64, requires_grad=True)  # (2,)
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
    return torch.stack(path)  # (steps + 1, 2)


def plot_trajectories(paths: dict[str, Tensor], function: Callable[[Tensor], Tensor] = rosenbrock) -> Figure:
    """One panel per named path: the path over the contours of `function` (log scale), the minimum (1, 1) starred."""
    points = torch.cat(list(paths.values()))  # (total points, 2)
    low, high = points.min(0).values.clamp(max=-0.5) - 0.3, points.max(0).values.clamp(min=1.5) + 0.3
    xs, ys = torch.linspace(low[0], high[0], 200), torch.linspace(low[1], high[1], 200)
    grid = torch.stack(torch.meshgrid(xs, ys, indexing="xy"), dim=-1)  # (200, 200, 2)
    heights = torch.log10(function(grid) + 1e-3)  # log scale: the valley floor is visible, not only the walls
    fig, axes = plt.subplots(
        1, len(paths), figsize=(COLUMN_WIDTH, 3.0), sharex=True, sharey=True, squeeze=False, layout="constrained"
    )
    for ax, (name, path) in zip(axes[0], paths.items(), strict=True):
        ax.contour(xs, ys, heights, levels=15, colors="0.7", linewidths=0.6)
        ax.plot(path[:, 0], path[:, 1], color="C3", marker=".", markersize=2, linewidth=1)
        ax.plot(*path[0].tolist(), marker="o", color="black", markersize=5)
        ax.plot([1.0], [1.0], marker="*", markersize=14, color="gold", markeredgecolor="black")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("x")
    axes[0, 0].set_ylabel("y")
    fig.suptitle(f"Rosenbrock: {say('start ●, minimum ★', '起点 ●，最小值 ★')}", fontsize=11)
    return fig


# Argument checks of the two optimizers: deliberately defensive, since a learner's own hyperparameters arrive here --


def _check_hyperparameters(params: object, lr: float, betas: Sequence[float], eps: float, weight_decay: float) -> None:
    """Raise a TypeError or ValueError that names the value to pass instead, before any state is created."""
    if isinstance(params, nn.Module):
        kind = type(params).__name__
        raise TypeError(
            in_language(
                f"params must be the tensors to optimize, not the {kind} itself: pass model.parameters()",
                f"params 必须是要优化的张量，而不是 {kind} 本身：请传入 model.parameters()",
            )
        )
    for name, value, example in (("lr", lr, "1e-3"), ("eps", eps, "1e-8"), ("weight_decay", weight_decay, "1e-2")):
        require_number(value, name, example=example)
    if not isinstance(betas, tuple | list):
        raise TypeError(_betas_message(repr(betas)))
    if not lr >= 0:  # `not >=` also catches NaN
        raise ValueError(
            in_language(
                f"lr must be >= 0 (a small positive number such as 1e-3), not {lr}",
                f"lr 必须 >= 0（一个小的正数，例如 1e-3），而不是 {lr}",
            )
        )
    if len(betas) != 2:
        raise ValueError(_betas_message(str(betas)))
    for i, beta in enumerate(betas):
        if not 0 <= beta < 1:
            raise ValueError(
                in_language(
                    f"betas[{i}] must be in [0, 1), e.g. betas=(0.9, 0.999), not {beta}: "
                    "beta = 1 would never forget the first gradient and divide by zero in the bias correction",
                    f"betas[{i}] 必须在 [0, 1) 内，例如 betas=(0.9, 0.999)，而不是 {beta}："
                    "beta = 1 会永远记住第一个梯度，并在偏差修正里除以零",
                )
            )
    if not eps >= 0:
        raise ValueError(
            in_language(
                f"eps must be >= 0 (it keeps the denominator away from zero; the default is 1e-8), not {eps}",
                f"eps 必须 >= 0（它让分母远离零；默认值是 1e-8），而不是 {eps}",
            )
        )
    if not weight_decay >= 0:
        raise ValueError(
            in_language(
                f"weight_decay must be >= 0 (0 turns it off; 1e-2 is a common value), not {weight_decay}",
                f"weight_decay 必须 >= 0（0 表示关闭；1e-2 是常用值），而不是 {weight_decay}",
            )
        )


def _betas_message(shown: str) -> str:
    """What to pass for betas, quoting the value given as `shown`."""
    return in_language(
        f"betas must be a pair (beta1, beta2) such as (0.9, 0.999), not {shown}",
        f"betas 必须是一对数 (beta1, beta2)，例如 (0.9, 0.999)，而不是 {shown}",
    )


def _check_sgd_arguments(lr: float, momentum: float) -> None:
    """lr and momentum as torch.optim.SGD accepts them, or a ValueError that names a value to pass."""
    if not lr >= 0:  # `not >=` also catches NaN
        raise ValueError(in_language(f"lr must be >= 0 (e.g. 0.1), not {lr}", f"lr 必须 >= 0（例如 0.1），而不是 {lr}"))
    if not momentum >= 0:
        raise ValueError(
            in_language(
                f"momentum must be >= 0 (0.9 is common; 0 is plain SGD), not {momentum}",
                f"momentum 必须 >= 0（常用 0.9；0 就是普通的 SGD），而不是 {momentum}",
            )
        )
