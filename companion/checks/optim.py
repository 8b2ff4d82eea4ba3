"""Self-checks for lesson 09: one Adam update on one tensor, and AdamW's decoupled weight decay.

Each check runs the learner's function (inside the harness's sandbox: global state left as found, `grad` not
changed) for several steps on three cases and compares every step's param, exp_avg and exp_avg_sq with the state of
`torch.optim.Adam` / `torch.optim.AdamW` themselves, with torch.testing.assert_close's tolerances for the case's
dtype. Known wrong versions are computed from PyTorch's own moments (or by PyTorch with other settings), and where
the learner's result matches one, the hint names it. The reference answers, other correct answers and the table of
typical mistakes live in companion/checks/answers/optim.py."""

import inspect
from collections.abc import Callable

import torch

from companion.exercises import passed, require, sandbox

# (shape, lr, betas, eps, steps, gradient scale, dtype): betas other than the defaults in case 2, float32 in case 2,
# and case 3 makes eps matter (eps=1e-2 with gradients of 1e-2), so its placement shows.
CASES = [
    ((5,), 1e-3, (0.9, 0.999), 1e-8, 10, 1.0, torch.float64),
    ((3, 4), 0.05, (0.8, 0.99), 1e-8, 25, 10.0, torch.float32),
    ((6,), 0.01, (0.9, 0.999), 1e-2, 15, 1e-2, torch.float64),
]
WEIGHT_DECAY = 0.1  # not the default 1e-2, so an answer that ignores the argument shows

Trajectory = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # param, exp_avg, exp_avg_sq after each step


def _close(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Same dtype, shape and values up to the rounding of that dtype (torch.testing.assert_close's defaults)."""
    try:
        torch.testing.assert_close(got, want.to(got.dtype) if got.dtype != want.dtype else want)
    except AssertionError:
        return False
    return True


def _same_run(got: Trajectory, want: Trajectory) -> bool:
    return all(_close(g, w) for g, w in zip(got, want, strict=True))


def _first_step_off(got: torch.Tensor, want: torch.Tensor) -> int:
    return next(i for i in range(len(got)) if not _close(got[i], want[i])) + 1


def _start(case: tuple, seed: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """A fresh parameter and the gradients of every step, in the case's dtype (no module-level tensor)."""
    shape, _, _, _, steps, scale, dtype = case
    generator = torch.Generator().manual_seed(seed)
    param = torch.randn(shape, dtype=torch.float64, generator=generator).to(dtype)
    grads = [(torch.randn(shape, dtype=torch.float64, generator=generator) * scale).to(dtype) for _ in range(steps)]
    return param, grads


def _learner_run(update: Callable, case: tuple, seed: int, options: dict) -> Trajectory:
    """Run the learner's update step by step on fresh tensors, inside the sandbox; `grad` must come back unchanged."""
    _, lr, betas, eps, _, _, _ = case
    param, grads = _start(case, seed)
    exp_avg, exp_avg_sq = torch.zeros_like(param), torch.zeros_like(param)
    history = []
    for step, grad in enumerate(grads, start=1):
        given = grad.clone()
        with sandbox():
            update(param, given, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps, **options)
        require(
            given.dtype == grad.dtype and torch.equal(given, grad),
            f"step {step}: the update changed grad in place. The caller's gradient belongs to the caller (in "
            "torch.optim it is param.grad): compute with it out of place, e.g. grad * grad, not grad.mul_(...).",
            f"第 {step} 步：更新原地改动了 grad。调用者的梯度属于调用者（在 torch.optim 里它就是 param.grad）："
            "请用非原地的写法计算，例如 grad * grad，而不是 grad.mul_(...)。",
        )
        history.append((param.clone(), exp_avg.clone(), exp_avg_sq.clone()))
    return tuple(torch.stack([h[i] for h in history]) for i in range(3))  # each (steps, *shape)


def _torch_run(
    optimizer_class: type, case: tuple, seed: int, dtype: torch.dtype | None = None, **options
) -> Trajectory:
    """The same run with a torch.optim optimizer (single-tensor path): param and its moments after each step."""
    _, lr, betas, eps, _, _, case_dtype = case
    start, grads = _start(case, seed)
    param = start.to(dtype or case_dtype).requires_grad_(True)
    optimizer = optimizer_class([param], lr=lr, betas=betas, eps=eps, foreach=False, **options)
    history = []
    for grad in grads:
        param.grad = grad.to(param.dtype)
        optimizer.step()
        state = optimizer.state[param]
        history.append((param.detach().clone(), state["exp_avg"].clone(), state["exp_avg_sq"].clone()))
    return tuple(torch.stack([h[i] for h in history]) for i in range(3))


# What a known wrong version does, computed in float64 from PyTorch's own moments (for these the moments do not
# depend on param): the Adam step u_t of each step, and when the weight decay comes in.
def _adam_steps(m: torch.Tensor, v: torch.Tensor, case: tuple, how: str) -> torch.Tensor:
    _, lr, (b1, b2), eps, steps, _, _ = case
    t = torch.arange(1, steps + 1, dtype=torch.float64).reshape(-1, *[1] * (m.dim() - 1))  # (steps, 1, ...)
    if how == "step from 0":
        t = t + 1
    c1, c2 = 1 - b1**t, 1 - b2**t
    if how == "no bias correction":
        return lr * m / (v.sqrt() + eps)
    if how == "eps before correction":
        return lr * c2.sqrt() / c1 * m / (v.sqrt() + eps)
    if how == "eps inside sqrt":
        return lr * (m / c1) / (v / c2 + eps).sqrt()
    return lr * (m / c1) / ((v / c2).sqrt() + eps)


def _by_formula(case: tuple, seed: int, how: str = "", decay: str = "", factor: float = 1.0) -> Trajectory:
    """param after each step of a wrong version: Adam's step computed `how`, the decay (factor) `decay`."""
    start, _ = _start(case, seed)
    _, m, v = _torch_run(torch.optim.Adam, case, seed, dtype=torch.float64)
    param, after = start.double(), []
    for u in _adam_steps(m, v, case, how):
        if decay == "before":
            param = param * factor - u
        elif decay == "after":
            param = (param - u) * factor
        else:
            param = param - u
        after.append(param)
    return torch.stack(after), m, v


def _wrong_runs(case: tuple, seed: int, weight_decay: float | None) -> dict[str, Trajectory]:
    """Every known wrong version of this exercise on this case."""
    _, lr, _, _, _, _, _ = case
    if weight_decay is None:
        return {
            how: _by_formula(case, seed, how)
            for how in ("no bias correction", "eps before correction", "eps inside sqrt", "step from 0")
        } | {"betas ignored": _torch_run(torch.optim.Adam, case[:2] + ((0.9, 0.999),) + case[3:], seed)}
    return {
        "coupled": _torch_run(torch.optim.Adam, case, seed, weight_decay=weight_decay),
        "decay after": _by_formula(case, seed, decay="after", factor=1 - lr * weight_decay),
        "decay without lr": _by_formula(case, seed, decay="before", factor=1 - weight_decay),
        "decay ignored": _torch_run(torch.optim.AdamW, case, seed, weight_decay=1e-2),
        "no decay": _torch_run(torch.optim.Adam, case, seed),
    }


HINTS = {
    "no bias correction": (
        "the first steps are too large: there is no bias correction. Divide m by 1 - beta1**step and v by "
        "1 - beta2**step before using them.",
        "最初几步走得太大：缺少偏差修正。使用 m 和 v 之前，先分别除以 1 - beta1**step 和 1 - beta2**step。",
    ),
    "eps before correction": (
        "eps is added to sqrt(v) before the bias correction, as in the notes' old source (the paper's "
        "'efficient version'). torch.optim.Adam adds eps to sqrt(v / (1 - beta2**step)).",
        "eps 在偏差修正之前就加到了 sqrt(v) 上，和学习笔记里的旧源码（论文中的“高效版本”）一样。"
        "torch.optim.Adam 是把 eps 加到 sqrt(v / (1 - beta2**step)) 上。",
    ),
    "eps inside sqrt": (
        "eps is inside the square root, sqrt(v_hat + eps). Add it after the root.",
        "eps 放在了平方根里面，写成了 sqrt(v_hat + eps)。应该开方之后再加。",
    ),
    "step from 0": (
        "the bias correction is one step ahead: `step` is already 1 on the first call (as in torch.optim.Adam), "
        "so use it as it is in beta1**step and beta2**step.",
        "偏差修正超前了一步：第一次调用时 `step` 已经是 1（和 torch.optim.Adam 一样），"
        "所以 beta1**step 和 beta2**step 里直接用它即可。",
    ),
    "betas ignored": (
        "the moments follow the default betas (0.9, 0.999), not the betas this case passes: read beta1, beta2 "
        "from the `betas` argument.",
        "两个矩用的是默认的 betas (0.9, 0.999)，而不是这一组传入的 betas：要从参数 `betas` 里取 beta1 和 beta2。",
    ),
    "coupled": (
        "this is Adam's L2 weight decay (torch.optim.Adam(weight_decay=...)): the decay went into the gradient, "
        "and so into the moments. AdamW shrinks the parameter itself and gives Adam the plain gradient.",
        "这是 Adam 的 L2 权重衰减（torch.optim.Adam(weight_decay=...)）：衰减项被加进了梯度，也就进了两个矩。"
        "AdamW 直接缩小参数本身，交给 Adam 的是原来的梯度。",
    ),
    "decay after": (
        "the decay comes after the Adam step; torch.optim.AdamW shrinks param first, then steps.",
        "衰减放在了 Adam 更新之后；torch.optim.AdamW 是先缩小 param，再走 Adam 的一步。",
    ),
    "decay without lr": (
        "the parameter shrinks by weight_decay itself each step; the factor is 1 - lr * weight_decay, "
        "the decay multiplied by lr.",
        "参数每步缩小的比例用了 weight_decay 本身；正确的因子是 1 - lr * weight_decay，也就是衰减要乘以学习率 lr。",
    ),
    "decay ignored": (
        f"param decays as with weight_decay=1e-2, but this case passes weight_decay={WEIGHT_DECAY}: use the "
        "argument, not its default value.",
        f"param 的衰减相当于 weight_decay=1e-2，可这一组传入的是 weight_decay={WEIGHT_DECAY}：要用传入的参数，"
        "而不是它的默认值。",
    ),
    "no decay": (
        "param follows plain Adam: the weight decay never happened. AdamW also shrinks the parameter by a "
        "fraction of itself each step.",
        "param 的变化和普通的 Adam 一样：权重衰减根本没有发生。AdamW 每一步还要把参数按它自身的一个比例缩小。",
    ),
}


def _signature_fits(update: Callable, name: str, options: dict) -> None:
    arguments = "param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps" + (", weight_decay" if options else "")
    try:
        inspect.signature(update).bind(*range(5), lr=0, betas=0, eps=0, **options)
        fits = True
    except (TypeError, ValueError):
        fits = False
    require(
        fits,
        f"{name} must accept ({arguments}), with lr, betas and eps{' and weight_decay' * bool(options)} "
        "as keyword arguments.",
        f"{name} 的参数应为 ({arguments})，其中 lr、betas、eps{'、weight_decay' * bool(options)} 可以按关键字传入。",
    )


def _check_update(update: Callable, name: str, optimizer_class: type, weight_decay: float | None = None) -> int:
    """Shared body of the two checks: every case against torch.optim, with a hint for each known mistake."""
    require(
        callable(update),
        f"Pass the function itself: check_{name}({name}), without ().",
        f"把函数本身传进去：check_{name}({name})，不要加 ()。",
    )
    options = {} if weight_decay is None else {"weight_decay": weight_decay}
    _signature_fits(update, name, options)
    torch_name = f"torch.optim.{optimizer_class.__name__}"
    for number, case in enumerate(CASES, start=1):
        seed = 100 + number
        where = f"case {number} (lr={case[1]}, betas={case[2]}, eps={case[3]}, {str(case[6])[6:]})"
        where_zh = f"第 {number} 组（lr={case[1]}，betas={case[2]}，eps={case[3]}，{str(case[6])[6:]}）"
        start, _ = _start(case, seed)
        got = _learner_run(update, case, seed, options)
        want = _torch_run(optimizer_class, case, seed, **options)
        require(
            not torch.equal(got[0][0], start),
            f"{where}: param did not change. Update it in place (param.sub_(...)); `param = ...` only rebinds a "
            "local name.",
            f"{where_zh}：param 没有变化。请原地更新它（param.sub_(...)）；`param = ...` 只是给局部变量重新赋值。",
        )
        require(
            bool(got[1][0].any()) and bool(got[2][0].any()),
            f"{where}: exp_avg or exp_avg_sq is still zero after step 1. Update the moments in place "
            "(exp_avg.mul_(beta1).add_(...)); `exp_avg = ...` only rebinds a local name.",
            f"{where_zh}：第 1 步之后 exp_avg 或 exp_avg_sq 仍然是零。请原地更新这两个矩"
            "（exp_avg.mul_(beta1).add_(...)）；`exp_avg = ...` 只是给局部变量重新赋值。",
        )
        if _same_run(got, want):
            continue
        for mistake, wrong in _wrong_runs(case, seed, weight_decay).items():
            hint, hint_zh = HINTS[mistake]
            require(
                not (_same_run(got, wrong) and not _same_run(wrong, want)), f"{where}: {hint}", f"{where_zh}：{hint_zh}"
            )
        for index, moment in enumerate(("exp_avg", "exp_avg_sq"), start=1):
            if not _close(got[index], want[index]):
                step = _first_step_off(got[index], want[index])
                worst = (got[index][step - 1].double() - want[index][step - 1].double()).abs().argmax()
                mine, theirs = (
                    got[index][step - 1].flatten()[worst].item(),
                    want[index][step - 1].flatten()[worst].item(),
                )
                require(
                    False,
                    f"{where}: {moment} differs from {torch_name}'s from step {step} on ({mine:.10g} instead of "
                    f"{theirs:.10g}). Check m = beta1*m + (1-beta1)*g and v = beta2*v + (1-beta2)*g*g, with the "
                    "plain gradient g.",
                    f"{where_zh}：从第 {step} 步起，{moment} 与 {torch_name} 的不同"
                    f"（{mine:.10g}，应为 {theirs:.10g}）。"
                    "请核对 m = beta1*m + (1-beta1)*g 和 v = beta2*v + (1-beta2)*g*g，其中 g 是原来的梯度。",
                )
        step = _first_step_off(got[0], want[0])
        if weight_decay is not None:
            _name_the_adam_part(update, case, seed, where, where_zh, step)
        require(
            False,
            f"{where}: the moments match {torch_name}, but param differs from step {step} on. Check "
            "p -= lr * (m / (1 - beta1**step)) / (sqrt(v / (1 - beta2**step)) + eps).",
            f"{where_zh}：两个矩与 {torch_name} 一致，但从第 {step} 步起 param 不同。请核对 "
            "p -= lr * (m / (1 - beta1**step)) / (sqrt(v / (1 - beta2**step)) + eps)。",
        )
    return len(CASES)


def _name_the_adam_part(update: Callable, case: tuple, seed: int, where: str, where_zh: str, step: int) -> None:
    """An AdamW answer whose moments are right but param is not: run it with weight_decay=0, where it must be Adam,
    to tell a wrong decay from a wrong Adam step."""
    plain = _learner_run(update, case, seed, {"weight_decay": 0.0})
    adam = _torch_run(torch.optim.Adam, case, seed)
    if _same_run(plain, adam):
        require(
            False,
            f"{where}: with weight_decay=0 your adamw_update is Adam, as it should be, so the decay is what differs "
            f"from torch.optim.AdamW (from step {step} on). AdamW multiplies param by 1 - lr * weight_decay once "
            "per step, before the Adam step, and leaves grad and the moments alone.",
            f"{where_zh}：weight_decay=0 时你的 adamw_update 就是 Adam，这没有问题，所以与 torch.optim.AdamW 不同"
            f"（从第 {step} 步起）的是衰减。AdamW 每一步在 Adam 更新之前把 param 乘以 1 - lr * weight_decay 一次，"
            "不动 grad 和两个矩。",
        )
    for mistake, wrong in _wrong_runs(case, seed, None).items():
        hint, hint_zh = HINTS[mistake]
        require(
            not _same_run(plain, wrong),
            f"{where}: with weight_decay=0 your adamw_update should be Adam, but {hint}",
            f"{where_zh}：weight_decay=0 时你的 adamw_update 应该就是 Adam，但是{hint_zh}",
        )
    require(
        False,
        f"{where}: even with weight_decay=0 your adamw_update differs from torch.optim.Adam, so the Adam step "
        "itself is off: check p -= lr * (m / (1 - beta1**step)) / (sqrt(v / (1 - beta2**step)) + eps).",
        f"{where_zh}：即使 weight_decay=0，你的 adamw_update 也与 torch.optim.Adam 不同，所以是 Adam 这一步本身有误："
        "请核对 p -= lr * (m / (1 - beta1**step)) / (sqrt(v / (1 - beta2**step)) + eps)。",
    )


def check_adam_update(adam_update: Callable[..., None]) -> None:
    """`adam_update(param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps)` must step like torch.optim.Adam."""
    cases = _check_update(adam_update, "adam_update", torch.optim.Adam)
    passed(
        f"adam_update follows torch.optim.Adam step for step in {cases} cases, bias correction included",
        f"adam_update 在 {cases} 组数据上每一步都与 torch.optim.Adam 一致，偏差修正也没问题",
    )


def check_adamw_update(adamw_update: Callable[..., None]) -> None:
    """`adamw_update(..., weight_decay)` must step like torch.optim.AdamW (decoupled weight decay)."""
    cases = _check_update(adamw_update, "adamw_update", torch.optim.AdamW, weight_decay=WEIGHT_DECAY)
    passed(
        f"adamw_update follows torch.optim.AdamW step for step in {cases} cases, with decoupled weight decay",
        f"adamw_update 在 {cases} 组数据上每一步都与 torch.optim.AdamW 一致，权重衰减确实是解耦的",
    )
