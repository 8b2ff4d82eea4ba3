"""Self-checks for lesson 09: one Adam update on one tensor, and AdamW's decoupled weight decay.

Each check runs the learner's function for several steps on three cases and compares every step with
`torch.optim.Adam` / `torch.optim.AdamW`; where the result matches a known wrong version, the hint names it.
"""

import inspect
from collections.abc import Callable

import torch

from companion.exercises import Exercise, Mistake, passed, require

# (shape, lr, betas, eps, steps, gradient scale): the last case makes eps matter, so its placement shows.
CASES = [
    ((5,), 1e-3, (0.9, 0.999), 1e-8, 10, 1.0),
    ((3, 4), 0.05, (0.8, 0.99), 1e-8, 25, 10.0),
    ((6,), 0.01, (0.9, 0.999), 1e-2, 15, 1e-2),
]
TOLERANCE = {"rtol": 1e-10, "atol": 1e-12}  # float64 throughout: any other order of operations stays this close


def _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    """Step number `step` of Adam on one tensor, as the equations read (the reference answer of exercise 1)."""
    beta1, beta2 = betas
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    m_hat = exp_avg / (1 - beta1**step)
    v_hat = exp_avg_sq / (1 - beta2**step)
    param.sub_(lr * m_hat / (v_hat.sqrt() + eps))


def _reference_adamw_update(
    param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2
):
    """AdamW: shrink the parameter itself first, then the plain Adam step (the reference answer of exercise 2)."""
    param.mul_(1 - lr * weight_decay)
    _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


def _mistaken_update(param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps, weight_decay, mistake):
    """A known wrong version of the update, named by `mistake`, to recognise it in a learner's result."""
    beta1, beta2 = betas
    if mistake == "coupled":
        grad = grad + weight_decay * param
    elif mistake == "decay without lr":
        param.mul_(1 - weight_decay)
    elif weight_decay and mistake != "decay after":
        param.mul_(1 - lr * weight_decay)
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    bc1, bc2 = (1.0, 1.0) if mistake == "no bias correction" else (1 - beta1**step, 1 - beta2**step)
    if mistake == "eps before correction":
        param.addcdiv_(exp_avg, exp_avg_sq.sqrt() + eps, value=-lr * bc2**0.5 / bc1)
    elif mistake == "eps inside sqrt":
        param.addcdiv_(exp_avg / bc1, (exp_avg_sq / bc2 + eps).sqrt(), value=-lr)
    else:
        param.addcdiv_(exp_avg / bc1, (exp_avg_sq / bc2).sqrt() + eps, value=-lr)
    if mistake == "decay after":
        param.mul_(1 - lr * weight_decay)


ADAM_MISTAKES = {
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
        "eps is inside the square root, sqrt(v_hat + eps). Add it after the root: sqrt(v_hat) + eps.",
        "eps 放在了平方根里面，写成了 sqrt(v_hat + eps)。应该开方之后再加：sqrt(v_hat) + eps。",
    ),
}
ADAMW_MISTAKES = {
    "coupled": (
        "this is Adam's L2 weight decay: the decay went into the gradient. AdamW shrinks the parameter itself, "
        "param.mul_(1 - lr * weight_decay), and gives Adam the plain gradient.",
        "这是 Adam 的 L2 权重衰减：衰减项被加进了梯度。AdamW 直接缩小参数本身，param.mul_(1 - lr * weight_decay)，"
        "交给 Adam 的是原来的梯度。",
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
}


def _run(update, case, seed, weight_decay=None, mistake=None):
    """Run `update` (the learner's, or a known wrong version) on a fresh float64 tensor; the start and each step."""
    shape, lr, betas, eps, steps, scale = case
    generator = torch.Generator().manual_seed(seed)
    param = torch.randn(shape, dtype=torch.float64, generator=generator)
    start = param.clone()
    exp_avg, exp_avg_sq = torch.zeros_like(param), torch.zeros_like(param)
    grads = [torch.randn(shape, dtype=torch.float64, generator=generator) * scale for _ in range(steps)]
    history = []
    for step, grad in enumerate(grads, start=1):
        if mistake is None:
            extra = {} if weight_decay is None else {"weight_decay": weight_decay}
            update(param, grad.clone(), exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps, **extra)
        else:
            _mistaken_update(param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps, weight_decay or 0.0, mistake)
        history.append((param.clone(), exp_avg.clone(), exp_avg_sq.clone()))
    return start, grads, history


def _torch_run(optimizer_class, case, grads, start, **options):
    """The same run with a torch.optim optimizer (single-tensor path); the parameter after each step."""
    _, lr, betas, eps, _, _ = case
    param = start.clone().requires_grad_(True)
    optimizer = optimizer_class([param], lr=lr, betas=betas, eps=eps, foreach=False, **options)
    after = []
    for grad in grads:
        param.grad = grad.clone()
        optimizer.step()
        after.append(param.detach().clone())
    return torch.stack(after)  # (steps, *shape)


def _check_update(update, name, optimizer_class, mistakes, weight_decay=None) -> int:
    """Shared body of the two checks: every case against torch.optim, with a hint for each known mistake."""
    require(
        callable(update),
        f"Pass the function itself: check_{name}({name}), without ().",
        f"把函数本身传进去：check_{name}({name})，不要加 ()。",
    )
    options = {} if weight_decay is None else {"weight_decay": weight_decay}
    arguments = "param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps" + (", weight_decay" if options else "")
    try:
        inspect.signature(update).bind(*range(5), lr=0, betas=0, eps=0, **options)
        fits = True
    except TypeError:
        fits = False
    require(
        fits,
        f"{name} must accept ({arguments}), with lr, betas and eps{' and weight_decay' * bool(options)} "
        "as keyword arguments.",
        f"{name} 的参数应为 ({arguments})，其中 lr、betas、eps{'、weight_decay' * bool(options)} 可以按关键字传入。",
    )
    for number, case in enumerate(CASES, start=1):
        seed = 100 + number
        start, grads, history = _run(update, case, seed, weight_decay)
        want = _torch_run(optimizer_class, case, grads, start, **options)
        where = f"case {number} (lr={case[1]}, betas={case[2]}, eps={case[3]})"
        where_zh = f"第 {number} 组（lr={case[1]}，betas={case[2]}，eps={case[3]}）"
        param_1, exp_avg_1, exp_avg_sq_1 = history[0]
        require(
            not torch.equal(param_1, start),
            f"{where}: param did not change. Update it in place (param.sub_(...)); `param = ...` only rebinds a "
            "local name.",
            f"{where_zh}：param 没有变化。请原地更新它（param.sub_(...)）；`param = ...` 只是给局部变量重新赋值。",
        )
        require(
            bool(exp_avg_1.any()) and bool(exp_avg_sq_1.any()),
            f"{where}: exp_avg or exp_avg_sq is still zero after step 1. Update the moments in place "
            "(exp_avg.mul_(beta1).add_(...)); `exp_avg = ...` only rebinds a local name.",
            f"{where_zh}：第 1 步之后 exp_avg 或 exp_avg_sq 仍然是零。请原地更新这两个矩"
            "（exp_avg.mul_(beta1).add_(...)）；`exp_avg = ...` 只是给局部变量重新赋值。",
        )
        got = torch.stack([p for p, _, _ in history])  # (steps, *shape)
        if torch.allclose(got, want, **TOLERANCE):
            continue
        for mistake, (hint, hint_zh) in mistakes.items():
            _, _, wrong = _run(None, case, seed, weight_decay, mistake)
            require(
                not torch.allclose(got, torch.stack([p for p, _, _ in wrong]), **TOLERANCE),
                f"{where}: {hint}",
                f"{where_zh}：{hint_zh}",
            )
        first_bad = next(
            i for i, (g, w) in enumerate(zip(got, want, strict=True)) if not torch.allclose(g, w, **TOLERANCE)
        )
        require(
            False,
            f"{where}: param differs from torch.optim.{optimizer_class.__name__} from step {first_bad + 1} on. "
            "Check m = beta1*m + (1-beta1)*g, v = beta2*v + (1-beta2)*g*g, then "
            "p -= lr * (m / (1 - beta1**step)) / (sqrt(v / (1 - beta2**step)) + eps).",
            f"{where_zh}：从第 {first_bad + 1} 步起，param 与 torch.optim.{optimizer_class.__name__} 不同。"
            "请核对 m = beta1*m + (1-beta1)*g，v = beta2*v + (1-beta2)*g*g，"
            "然后 p -= lr * (m / (1 - beta1**step)) / (sqrt(v / (1 - beta2**step)) + eps)。",
        )
    return len(CASES)


def check_adam_update(adam_update: Callable[..., None]) -> None:
    """`adam_update(param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps)` must step like torch.optim.Adam."""
    cases = _check_update(adam_update, "adam_update", torch.optim.Adam, ADAM_MISTAKES)
    passed(
        f"adam_update follows torch.optim.Adam step for step in {cases} cases, bias correction included",
        f"adam_update 在 {cases} 组数据上每一步都与 torch.optim.Adam 一致，偏差修正也没问题",
    )


def check_adamw_update(adamw_update: Callable[..., None]) -> None:
    """`adamw_update(..., weight_decay)` must step like torch.optim.AdamW (decoupled weight decay)."""
    cases = _check_update(adamw_update, "adamw_update", torch.optim.AdamW, ADAMW_MISTAKES, weight_decay=0.1)
    passed(
        f"adamw_update follows torch.optim.AdamW step for step in {cases} cases, with decoupled weight decay",
        f"adamw_update 在 {cases} 组数据上每一步都与 torch.optim.AdamW 一致，权重衰减确实是解耦的",
    )


# Typical wrong answers, each as a learner would write it -------------------------------------------------------------


def _adam_without_bias_correction(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    param.sub_(lr * exp_avg / (exp_avg_sq.sqrt() + eps))


def _adam_with_the_notes_eps(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    step_size = lr * (1 - beta2**step) ** 0.5 / (1 - beta1**step)
    param.sub_(step_size * exp_avg / (exp_avg_sq.sqrt() + eps))


def _adam_with_eps_inside_the_sqrt(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    m_hat, v_hat = exp_avg / (1 - beta1**step), exp_avg_sq / (1 - beta2**step)
    param.sub_(lr * m_hat / (v_hat + eps).sqrt())


def _adam_rebinding_the_moments(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    exp_avg = beta1 * exp_avg + (1 - beta1) * grad  # a new tensor: the caller's exp_avg stays zero
    exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
    param.sub_(lr * (exp_avg / (1 - beta1**step)) / ((exp_avg_sq / (1 - beta2**step)).sqrt() + eps))


def _coupled_adamw(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    _reference_adam_update(param, grad + weight_decay * param, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


def _adamw_decaying_after(
    param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2
):
    _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)
    param.mul_(1 - lr * weight_decay)


def _adamw_without_lr(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    param.mul_(1 - weight_decay)
    _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


EXERCISES = [
    Exercise(
        check=check_adam_update,
        reference=_reference_adam_update,
        mistakes=(
            Mistake("no bias correction", _adam_without_bias_correction, "there is no bias correction"),
            Mistake(
                "eps before the bias correction (the notes)", _adam_with_the_notes_eps, "before the bias correction"
            ),
            Mistake("eps inside the square root", _adam_with_eps_inside_the_sqrt, "inside the square root"),
            Mistake(
                "moments rebound, not updated in place", _adam_rebinding_the_moments, "Update the moments in place"
            ),
            Mistake("called instead of passed", None, "without ()"),
        ),
        why="m and v start at zero, so dividing by 1 - beta**step undoes their bias; eps then keeps the division "
        "finite where the corrected second moment is tiny.",
        why_zh="m 和 v 都从 0 开始，除以 1 - beta**step 正好抵消这一偏差；eps 则在修正后的二阶矩很小时让除法保持有限。",
        discuss="The checker compares in float64 with a tolerance of 1e-10: why not demand bit-for-bit equality, as "
        "the lesson's Adam class achieves?",
        discuss_zh="自检在 float64 下以 1e-10 的容差比较：为什么不像本课的 Adam 类那样要求逐位相等？",
    ),
    Exercise(
        check=check_adamw_update,
        reference=_reference_adamw_update,
        mistakes=(
            Mistake("coupled (L2) weight decay", _coupled_adamw, "Adam's L2 weight decay"),
            Mistake("decay after the Adam step", _adamw_decaying_after, "shrinks param first"),
            Mistake("decay not multiplied by lr", _adamw_without_lr, "the decay multiplied by lr"),
            Mistake("no weight_decay argument", _reference_adam_update, "must accept (param, grad"),
        ),
        why="AdamW takes lr * weight_decay off every weight in proportion to its size, apart from the adaptive "
        "step, so the decay is not divided by sqrt(v_hat).",
        why_zh="AdamW 在自适应的那一步之外，按每个权重的大小扣掉 lr * weight_decay 的比例，"
        "所以衰减不会被 sqrt(v_hat) 除。",
        discuss="With AdamW, what happens to a weight whose loss gradient is always zero? And with Adam's L2 decay?",
        discuss_zh="用 AdamW 时，一个损失梯度始终为零的权重会怎样变化？换成 Adam 的 L2 衰减呢？",
    ),
]
