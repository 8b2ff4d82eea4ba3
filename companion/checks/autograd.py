"""Self-checks for lesson 02 (autograd): a gradient worked out by hand, and a gradient accumulated over
micro-batches that must equal the full batch's."""

from collections.abc import Callable

import torch

from companion.exercises import Exercise, Mistake, passed, require

# Exercise 1: L = (tanh(w * x + b) - t) ** 2 at these points (w, b, x, t); no x is 1, so dL/dw and dL/db differ.
POINTS = ((0.5, -0.3, 1.5, 0.2), (-1.2, 0.4, 0.7, -0.5), (2.0, 0.1, -0.6, 0.9), (0.3, 0.3, 2.0, 1.0))


def autograd_tanh_grads(w: float, b: float, x: float, t: float) -> tuple[float, float]:
    """dL/dw and dL/db from autograd, in float64."""
    w_, b_ = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (w, b))
    loss = (torch.tanh(w_ * x + b_) - t) ** 2
    loss.backward()
    return w_.grad.item(), b_.grad.item()


def _as_float(value: object) -> float:
    return value.item() if isinstance(value, torch.Tensor) else float(value)


def check_tanh_grads(tanh_grads: Callable[[float, float, float, float], tuple]) -> None:
    """`tanh_grads(w, b, x, t)` returns (dL/dw, dL/db) of L = (tanh(w*x + b) - t)**2, worked out by hand."""
    require(
        callable(tanh_grads),
        "Pass the function itself: check_tanh_grads(tanh_grads), without ().",
        "把函数本身传进去：check_tanh_grads(tanh_grads)，不要加 ()。",
    )
    theirs, truth = [], []
    for w, b, x, t in POINTS:
        answer = tanh_grads(*(torch.tensor(v, dtype=torch.float64) for v in (w, b, x, t)))
        require(
            isinstance(answer, tuple) and len(answer) == 2,
            "Return a pair: `return dw, db`.",
            "请返回一对值：`return dw, db`。",
        )
        theirs.append(tuple(_as_float(v) for v in answer))
        truth.append(autograd_tanh_grads(w, b, x, t))
    # Each typical slip, rebuilt from the true gradient: match the learner's numbers against them.
    slips = [
        (
            _no_tanh_derivative,
            "You left out tanh's derivative: d tanh(z)/dz = 1 - tanh(z)**2 multiplies both.",
            "漏掉了 tanh 的导数：d tanh(z)/dz = 1 - tanh(z)**2，两个梯度都要乘上它。",
        ),
        (
            _no_factor_two,
            "Both are half the true value: the square gives a factor 2, d(u**2)/du = 2u.",
            "两个梯度都只有真实值的一半：平方项会带出因子 2，d(u**2)/du = 2u。",
        ),
        (
            _dw_without_x,
            "dL/dw lacks a factor: z = w*x + b, so dz/dw = x (while dz/db = 1).",
            "dL/dw 少了一个因子：z = w*x + b，所以 dz/dw = x（而 dz/db = 1）。",
        ),
        (
            _swapped,
            "Your two values are in the wrong order: return (dL/dw, dL/db), the gradient for w first.",
            "两个值的顺序反了：请返回 (dL/dw, dL/db)，先返回 w 的梯度。",
        ),
        (
            _db_with_x,
            "dL/dw is right, but dL/db has an extra factor x: z = w*x + b, so dz/db = 1.",
            "dL/dw 是对的，但 dL/db 多乘了一个 x：z = w*x + b，所以 dz/db = 1。",
        ),
        (
            _wrong_sign,
            "The sign is flipped: the inner derivative of (y - t) with respect to y is +1, not -1.",
            "符号反了：(y - t) 对 y 的导数是 +1，不是 -1。",
        ),
    ]
    close = [
        all(abs(a - b) < 1e-9 for a, b in zip(mine, true, strict=True))
        for mine, true in zip(theirs, truth, strict=True)
    ]
    if not all(close):
        for slip, hint, hint_zh in slips:
            require(
                not all(
                    abs(a - b) < 1e-9
                    for point, mine in zip(POINTS, theirs, strict=True)
                    for a, b in zip(mine, slip(*point), strict=True)
                ),
                hint,
                hint_zh,
            )
        first = close.index(False)
        require(
            False,
            f"At (w, b, x, t) = {POINTS[first]} autograd gives (dw, db) = "
            f"({truth[first][0]:.4f}, {truth[first][1]:.4f}), yours ({theirs[first][0]:.4f}, {theirs[first][1]:.4f}). "
            "Write the chain rule one factor at a time: dL/dy, dy/dz, dz/dw.",
            f"在 (w, b, x, t) = {POINTS[first]} 处，自动求导给出 (dw, db) = "
            f"({truth[first][0]:.4f}, {truth[first][1]:.4f})，"
            f"你的结果是 ({theirs[first][0]:.4f}, {theirs[first][1]:.4f})。"
            "请把链式法则一个因子一个因子地写出来：dL/dy、dy/dz、dz/dw。",
        )
    passed(
        f"your hand-derived gradients match autograd at {len(POINTS)} points",
        f"你手算的梯度在 {len(POINTS)} 个点上都与自动求导一致。",
    )


def _reference_tanh_grads(w, b, x, t):
    y = torch.tanh(w * x + b)
    dz = 2 * (y - t) * (1 - y**2)  # dL/dy * dy/dz
    return dz * x, dz


def _no_tanh_derivative(w, b, x, t):
    y = torch.tanh(torch.as_tensor(w * x + b, dtype=torch.float64))
    return (2 * (y - t) * x).item(), (2 * (y - t)).item()


def _no_factor_two(w, b, x, t):
    y = torch.tanh(torch.as_tensor(w * x + b, dtype=torch.float64))
    return ((y - t) * (1 - y**2) * x).item(), ((y - t) * (1 - y**2)).item()


def _dw_without_x(w, b, x, t):
    y = torch.tanh(torch.as_tensor(w * x + b, dtype=torch.float64))
    dz = (2 * (y - t) * (1 - y**2)).item()
    return dz, dz


def _swapped(w, b, x, t):
    dw, db = _reference_tanh_grads(*(torch.as_tensor(v, dtype=torch.float64) for v in (w, b, x, t)))
    return db.item(), dw.item()


def _db_with_x(w, b, x, t):
    dw, _ = _reference_tanh_grads(*(torch.as_tensor(v, dtype=torch.float64) for v in (w, b, x, t)))
    return dw.item(), dw.item()


def _wrong_sign(w, b, x, t):
    y = torch.tanh(torch.as_tensor(w * x + b, dtype=torch.float64))
    dz = 2 * (t - y) * (1 - y**2)
    return (dz * x).item(), dz.item()


# Exercise 2: the mean squared error of a linear model x @ w over 6 samples, in 3 micro-batches of 2.
SAMPLES, MICRO_BATCHES, FEATURES = 6, 3, 3
STALE = 100.0  # what w.grad holds when the learner's function is called: the previous step's gradient


def accumulation_data() -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """The starting weights, and x and t split into micro-batches (a private generator: global seed untouched)."""
    generator = torch.Generator().manual_seed(7)
    x = torch.randn(SAMPLES, FEATURES, generator=generator)  # (6, 3)
    t = torch.randn(SAMPLES, generator=generator)  # (6,)
    w = torch.tensor([0.5, -1.0, 2.0])
    return w, list(x.chunk(MICRO_BATCHES)), list(t.chunk(MICRO_BATCHES))


def full_batch_gradient() -> tuple[torch.Tensor, torch.Tensor]:
    """The gradient of ((x @ w - t) ** 2).mean() over all 6 samples: by autograd, and by hand, 2/N x^T (x w - t)."""
    w0, xs, ts = accumulation_data()
    x, t = torch.cat(xs), torch.cat(ts)  # (6, 3), (6,)
    w = w0.clone().requires_grad_(True)
    ((x @ w - t) ** 2).mean().backward()
    by_hand = 2 / SAMPLES * x.T @ (x @ w0 - t)  # (3,)
    return w.grad, by_hand


def check_accumulated_gradient(accumulate: Callable[[torch.Tensor, list, list], torch.Tensor]) -> None:
    """`accumulate(w, x_batches, t_batches)` calls backward() once per micro-batch and returns w.grad: the gradient
    of the full batch's mean squared error, whatever w.grad held before."""
    require(
        callable(accumulate),
        "Pass the function itself: check_accumulated_gradient(accumulate), without ().",
        "把函数本身传进去：check_accumulated_gradient(accumulate)，不要加 ()。",
    )
    w0, xs, ts = accumulation_data()
    w = w0.clone().requires_grad_(True)
    w.grad = torch.full_like(w, STALE)  # left over from a previous training step
    passes = []
    hook = w.register_hook(lambda grad: passes.append(1))  # runs once for each backward pass that reaches w
    try:
        result = accumulate(w, xs, ts)
    finally:
        hook.remove()
    require(
        isinstance(result, torch.Tensor) and result.shape == w.shape,
        "Return w.grad after the last micro-batch: a tensor of shape (3,).",
        "最后一个小批量处理完之后，返回 w.grad：一个形状为 (3,) 的张量。",
    )
    require(
        len(passes) == MICRO_BATCHES,
        f"backward() reached w {len(passes)} time(s); call it once per micro-batch ({MICRO_BATCHES} times), as "
        "if each micro-batch only fitted in memory on its own, and let .grad add the gradients up.",
        f"backward() 传到 w 的次数是 {len(passes)}；请每个小批量调用一次（共 {MICRO_BATCHES} 次），"
        "就当每次内存里只放得下一个小批量，让 .grad 把梯度加起来。",
    )
    result = result.detach().clone()
    truth, by_hand = full_batch_gradient()
    parts = []
    for x, t in zip(xs, ts, strict=True):
        part = w0.clone().requires_grad_(True)
        ((x @ part - t) ** 2).mean().backward()
        parts.append(part.grad / MICRO_BATCHES)
    require(
        not torch.allclose(result, truth + STALE),
        "w.grad still held the previous step's gradient (100 in every entry): clear it once before the first "
        "micro-batch, with w.grad = None or w.grad.zero_().",
        "w.grad 里还留着上一步的梯度（每一项都是 100）：在处理第一个小批量之前清零一次，"
        "用 w.grad = None 或 w.grad.zero_()。",
    )
    require(
        not torch.allclose(result, parts[-1]) and not torch.allclose(result, parts[-1] * MICRO_BATCHES),
        "Only the last micro-batch counted: you cleared w.grad inside the loop. Clear it once, before the loop, "
        "and let backward() add up the micro-batches.",
        "只有最后一个小批量起了作用：你在循环里清零了 w.grad。只在循环开始前清零一次，"
        "让 backward() 把各个小批量的梯度加起来。",
    )
    require(
        not torch.allclose(result, truth * MICRO_BATCHES),
        f"{MICRO_BATCHES} times too large: each micro-batch's mean is over 2 samples, the full batch's over 6. "
        f"Divide each micro-batch's loss by the number of micro-batches ({MICRO_BATCHES}).",
        f"结果大了 {MICRO_BATCHES} 倍：每个小批量的均值只对 2 个样本求平均，而整批是对 6 个样本。"
        f"请把每个小批量的损失除以小批量的个数（{MICRO_BATCHES}）。",
    )
    require(
        not torch.allclose(result, truth * SAMPLES),
        f"{SAMPLES} times too large: the loss is the mean over samples, not the sum.",
        f"结果大了 {SAMPLES} 倍：损失应该是对样本求平均，而不是求和。",
    )
    require(
        torch.allclose(result, truth, atol=1e-6),
        f"Expected {[round(v, 4) for v in truth.tolist()]}, got {[round(v, 4) for v in result.tolist()]}. "
        "Per micro-batch: loss = ((x @ w - t) ** 2).mean() / number_of_micro_batches, then loss.backward().",
        f"应为 {[round(v, 4) for v in truth.tolist()]}，实际得到 {[round(v, 4) for v in result.tolist()]}。"
        "每个小批量：loss = ((x @ w - t) ** 2).mean() / 小批量个数，然后 loss.backward()。",
    )
    assert torch.allclose(truth, by_hand, atol=1e-6)  # the checker's own two answers agree
    passed(
        "3 micro-batches add up to the full batch's gradient (autograd and 2/N xᵀ(xw - t) by hand), stale "
        "gradient cleared",
        "3 个小批量累加起来等于整批的梯度（自动求导与手算的 2/N xᵀ(xw - t) 一致），旧梯度已清零。",
    )


def _reference_accumulate(w, x_batches, t_batches):
    w.grad = None
    for x, t in zip(x_batches, t_batches, strict=True):
        loss = ((x @ w - t) ** 2).mean() / len(x_batches)
        loss.backward()
    return w.grad


def _no_zeroing(w, x_batches, t_batches):
    for x, t in zip(x_batches, t_batches, strict=True):
        (((x @ w - t) ** 2).mean() / len(x_batches)).backward()
    return w.grad


def _zero_inside_loop(w, x_batches, t_batches):
    for x, t in zip(x_batches, t_batches, strict=True):
        w.grad = None
        (((x @ w - t) ** 2).mean() / len(x_batches)).backward()
    return w.grad


def _not_scaled(w, x_batches, t_batches):
    w.grad = None
    for x, t in zip(x_batches, t_batches, strict=True):
        ((x @ w - t) ** 2).mean().backward()
    return w.grad


def _one_backward(w, x_batches, t_batches):
    w.grad = None
    x, t = torch.cat(x_batches), torch.cat(t_batches)  # (6, 3), (6,)
    ((x @ w - t) ** 2).mean().backward()
    return w.grad


def _sum_not_mean(w, x_batches, t_batches):
    w.grad = None
    for x, t in zip(x_batches, t_batches, strict=True):
        ((x @ w - t) ** 2).sum().backward()
    return w.grad


EXERCISES = [
    Exercise(
        check=check_tanh_grads,
        reference=_reference_tanh_grads,
        mistakes=(
            Mistake("treats tanh as the identity", _no_tanh_derivative, "tanh's derivative"),
            Mistake("forgets the 2 of the square", _no_factor_two, "factor 2"),
            Mistake("dL/dw without the factor x", _dw_without_x, "dz/dw = x"),
            Mistake("(t - y) instead of (y - t)", _wrong_sign, "sign is flipped"),
            Mistake("returns (dL/db, dL/dw)", _swapped, "wrong order"),
            Mistake("dL/db multiplied by x too", _db_with_x, "extra factor x"),
        ),
        why="Chain rule: dL/dw = 2(y - t) * (1 - y**2) * x and dL/db = 2(y - t) * (1 - y**2), with y = tanh(wx + b).",
        why_zh="链式法则：dL/dw = 2(y - t) * (1 - y**2) * x，dL/db = 2(y - t) * (1 - y**2)，其中 y = tanh(wx + b)。",
        discuss="Where is the gradient close to zero even though the prediction is wrong, and what does that mean "
        "for training a tanh unit?",
        discuss_zh="在哪些地方，预测明明是错的，梯度却接近 0？这对训练一个 tanh 单元意味着什么？",
    ),
    Exercise(
        check=check_accumulated_gradient,
        reference=_reference_accumulate,
        mistakes=(
            Mistake("never clears the stale gradient", _no_zeroing, "previous step's gradient"),
            Mistake("clears inside the loop", _zero_inside_loop, "Only the last micro-batch counted"),
            Mistake("micro-batch means not scaled", _not_scaled, "Divide each micro-batch's loss"),
            Mistake("sum instead of mean", _sum_not_mean, "not the sum"),
            Mistake("one backward() over the whole batch", _one_backward, "once per micro-batch"),
        ),
        why="backward() adds into .grad, so three backward() calls sum three gradients; scaling each mean by 1/3 "
        "makes the sum the mean over all six samples.",
        why_zh="backward() 会把梯度加到 .grad 上，所以三次 backward() 得到三个梯度之和；每个均值乘以 1/3，"
        "这个和就正好是全部 6 个样本上的均值的梯度。",
        discuss="With micro-batches of unequal size, what should each loss be divided by instead?",
        discuss_zh="如果各个小批量大小不一样，每个损失应该改为除以什么？",
    ),
]
