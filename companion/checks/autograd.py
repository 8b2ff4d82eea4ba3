"""Self-checks for lesson 02 (autograd): a gradient worked out by hand, and a gradient accumulated over
micro-batches that must equal the full batch's. The reference answers and the tables of typical mistakes live in
companion/checks/answers/autograd.py (the teacher's part); these checks compare with autograd itself."""

import math
from collections.abc import Callable

import torch

from companion.exercises import call_learner, passed, require, sandbox

# Exercise 1: L = (tanh(w * x + b) - t) ** 2 at these points (w, b, x, t); no x is 1, so dL/dw and dL/db differ.
POINTS = ((0.5, -0.3, 1.5, 0.2), (-1.2, 0.4, 0.7, -0.5), (2.0, 0.1, -0.6, 0.9), (0.3, 0.3, 2.0, 1.0))
# A hand-derived gradient may be computed in float32 or float64: both must pass, so the tolerance is float32's
# (torch.testing.assert_close's defaults for float32), still far finer than any slip below.
RTOL, ATOL = 1.3e-6, 1e-5


def autograd_tanh_grads(w: float, b: float, x: float, t: float) -> tuple[float, float]:
    """dL/dw and dL/db from autograd, in float64."""
    w_, b_ = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (w, b))
    loss = (torch.tanh(w_ * x + b_) - t) ** 2
    loss.backward()
    return w_.grad.item(), b_.grad.item()


def _slips(w: float, b: float, x: float, t: float) -> list[tuple[tuple[float, float], str, str]]:
    """Each typical slip's (dw, db) at one point, built from Python's math (not from a learner-style formula),
    with its hint."""
    y = math.tanh(w * x + b)
    outer = 2.0 * (y - t)  # dL/dy
    inner = 1.0 - y * y  # dy/dz
    true_dz = outer * inner  # dL/dz = dL/db
    return [
        (
            (outer * x, outer),
            "You left out tanh's derivative: d tanh(z)/dz = 1 - tanh(z)**2 multiplies both.",
            "漏掉了 tanh 的导数：d tanh(z)/dz = 1 - tanh(z)**2，两个梯度都要乘上它。",
        ),
        (
            (outer * (1.0 - y) * x, outer * (1.0 - y)),
            "tanh's derivative is 1 - tanh(z)**2, with tanh squared: yours used 1 - tanh(z).",
            "tanh 的导数是 1 - tanh(z)**2，tanh 要平方：你用的是 1 - tanh(z)。",
        ),
        (
            (outer * y * (1.0 - y) * x, outer * y * (1.0 - y)),
            "That is sigmoid's derivative, y * (1 - y); tanh's is 1 - tanh(z)**2.",
            "这是 sigmoid 的导数 y * (1 - y)；tanh 的导数是 1 - tanh(z)**2。",
        ),
        (
            (true_dz * x / 2, true_dz / 2),
            "Both are half the true value: the square gives a factor 2, d(u**2)/du = 2u.",
            "两个梯度都只有真实值的一半：平方项会带出因子 2，d(u**2)/du = 2u。",
        ),
        (
            (true_dz, true_dz),
            "dL/dw lacks a factor: z = w*x + b, so dz/dw = x (while dz/db = 1).",
            "dL/dw 少了一个因子：z = w*x + b，所以 dz/dw = x（而 dz/db = 1）。",
        ),
        (
            (true_dz * w, true_dz),
            "dL/dw has the factor w where it needs x: z = w*x + b, so dz/dw is the number w multiplies.",
            "dL/dw 乘的是 w，应该乘 x：z = w*x + b，所以 dz/dw 是与 w 相乘的那个数。",
        ),
        (
            (true_dz, true_dz * x),
            "Your two values are in the wrong order: return (dL/dw, dL/db), the gradient for w first.",
            "两个值的顺序反了：请返回 (dL/dw, dL/db)，先返回 w 的梯度。",
        ),
        (
            (true_dz * x, true_dz * x),
            "dL/dw is right, but dL/db has an extra factor x: z = w*x + b, so dz/db = 1.",
            "dL/dw 是对的，但 dL/db 多乘了一个 x：z = w*x + b，所以 dz/db = 1。",
        ),
        (
            (-true_dz * x, -true_dz),
            "The sign is flipped: the inner derivative of (y - t) with respect to y is +1, not -1.",
            "符号反了：(y - t) 对 y 的导数是 +1，不是 -1。",
        ),
    ]


def _near(mine: tuple[float, float], want: tuple[float, float]) -> bool:
    return all(math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL) for a, b in zip(mine, want, strict=True))


def _one_number(value: object, which: str) -> float:
    """A returned gradient as a float: a Python number or a one-element floating tensor, nothing else."""
    if isinstance(value, torch.Tensor):
        require(
            value.dim() == 0 and value.is_floating_point(),
            f"{which} is a tensor of shape {tuple(value.shape)} and dtype {value.dtype}; return one number per "
            "gradient: a 0-d floating-point tensor (what the arithmetic on w, b, x, t gives) or a float.",
            f"{which} 是形状为 {tuple(value.shape)}、数据类型为 {value.dtype} 的张量；每个梯度请返回一个数："
            "0 维浮点张量（对 w、b、x、t 做运算得到的就是它）或一个 float。",
        )
        require(
            not value.requires_grad,
            f"{which} still records a graph (requires_grad=True): a gradient worked out by hand needs none.",
            f"{which} 仍然在记录计算图（requires_grad=True）：手算的梯度不需要计算图。",
        )
        return value.item()
    require(
        isinstance(value, int | float) and not isinstance(value, bool),
        f"{which} is {type(value).__name__}; return a float or a 0-d tensor.",
        f"{which} 的类型是 {type(value).__name__}；请返回一个 float 或 0 维张量。",
    )
    return float(value)


def check_tanh_grads(tanh_grads: Callable[[float, float, float, float], tuple]) -> None:
    """`tanh_grads(w, b, x, t)` returns (dL/dw, dL/db) of L = (tanh(w*x + b) - t)**2, worked out by hand."""
    require(
        callable(tanh_grads),
        "Pass the function itself: check_tanh_grads(tanh_grads), without ().",
        "把函数本身传进去：check_tanh_grads(tanh_grads)，不要加 ()。",
    )
    theirs, truth = [], []
    for point in POINTS:
        answer = call_learner(tanh_grads, *(torch.tensor(v, dtype=torch.float64) for v in point))
        require(
            isinstance(answer, tuple | list) and len(answer) == 2,
            "Return a pair: `return dw, db`.",
            "请返回一对值：`return dw, db`。",
        )
        theirs.append((_one_number(answer[0], "dL/dw"), _one_number(answer[1], "dL/db")))
        truth.append(autograd_tanh_grads(*point))
    close = [_near(mine, true) for mine, true in zip(theirs, truth, strict=True)]
    if all(close):
        passed(
            f"your hand-derived gradients match autograd at {len(POINTS)} points",
            f"你手算的梯度在 {len(POINTS)} 个点上都与自动求导一致。",
        )
        return
    for k in range(len(_slips(*POINTS[0]))):  # a slip explains the answer only if it does so at every point
        per_point = [_slips(*point)[k] for point in POINTS]
        if all(_near(mine, slip) for mine, (slip, _, _) in zip(theirs, per_point, strict=True)):
            _, hint, hint_zh = per_point[0]
            require(False, hint, hint_zh)
    first = close.index(False)
    (tw, tb), (mw, mb) = truth[first], theirs[first]
    require(
        False,
        f"At (w, b, x, t) = {POINTS[first]} autograd gives (dw, db) = ({tw:.9g}, {tb:.9g}), yours ({mw:.9g}, "
        f"{mb:.9g}) (allowed: a relative difference of {RTOL:g} or {ATOL:g} absolute). "
        "Write the chain rule one factor at a time: dL/dy, dy/dz, dz/dw.",
        f"在 (w, b, x, t) = {POINTS[first]} 处，自动求导给出 (dw, db) = ({tw:.9g}, {tb:.9g})，"
        f"你的结果是 ({mw:.9g}, {mb:.9g})（允许的误差：相对 {RTOL:g} 或绝对 {ATOL:g}）。"
        "请把链式法则一个因子一个因子地写出来：dL/dy、dy/dz、dz/dw。",
    )


# Exercise 2: the mean squared error of a linear model x @ w over 6 samples, in 3 micro-batches of 2.
SAMPLES, MICRO_BATCHES, FEATURES = 6, 3, 3
STALE = 100.0  # what w.grad holds when the learner's function is called: the previous step's gradient
# Two cases: the lesson's (float32, a stale 100) and a float64 one with another stale gradient.
_CASES = ((7, torch.float32, STALE), (8, torch.float64, -3.0))


def accumulation_data() -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """The lesson's case: the starting weights, and x and t split into micro-batches."""
    return _accumulation_data(7, torch.float32)


def full_batch_gradient() -> tuple[torch.Tensor, torch.Tensor]:
    """The lesson's case: the full batch's gradient by autograd, and by hand."""
    return _full_batch_gradient(7, torch.float32)


def _accumulation_data(seed: int, dtype: torch.dtype) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """The starting weights, and x and t split into micro-batches (a private generator: global seed untouched)."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(SAMPLES, FEATURES, generator=generator, dtype=dtype)  # (6, 3)
    t = torch.randn(SAMPLES, generator=generator, dtype=dtype)  # (6,)
    w = torch.tensor([0.5, -1.0, 2.0], dtype=dtype)
    return w, list(x.chunk(MICRO_BATCHES)), list(t.chunk(MICRO_BATCHES))


def _full_batch_gradient(seed: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradient of ((x @ w - t) ** 2).mean() over all 6 samples: by autograd, and by hand, 2/N x^T (x w - t)."""
    w0, xs, ts = _accumulation_data(seed, dtype)
    x, t = torch.cat(xs), torch.cat(ts)  # (6, 3), (6,)
    w = w0.clone().requires_grad_(True)
    torch.nn.functional.mse_loss(x @ w, t).backward()
    by_hand = 2 / SAMPLES * x.T @ (x @ w0 - t)  # (3,)
    return w.grad, by_hand


def _micro_batch_gradients(seed: int, dtype: torch.dtype) -> list[torch.Tensor]:
    """What each backward() must send to w: one micro-batch's share of the full batch's gradient (its samples'
    squared errors over all 6 samples), by autograd."""
    w0, xs, ts = _accumulation_data(seed, dtype)
    shares = []
    for x, t in zip(xs, ts, strict=True):
        w = w0.clone().requires_grad_(True)
        (torch.nn.functional.mse_loss(x @ w, t, reduction="sum") / SAMPLES).backward()
        shares.append(w.grad)
    return shares


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal within assert_close's default tolerances for the dtype of `b`."""
    try:
        torch.testing.assert_close(a, b, check_dtype=False)
    except AssertionError:
        return False
    return True


def _show(v: torch.Tensor) -> list[float]:
    return [float(f"{x:.7g}") for x in v.tolist()]


def check_accumulated_gradient(accumulate: Callable[[torch.Tensor, list, list], torch.Tensor]) -> None:
    """`accumulate(w, x_batches, t_batches)` calls backward() once per micro-batch and returns w.grad: the gradient
    of the full batch's mean squared error, whatever w.grad held before."""
    require(
        callable(accumulate),
        "Pass the function itself: check_accumulated_gradient(accumulate), without ().",
        "把函数本身传进去：check_accumulated_gradient(accumulate)，不要加 ()。",
    )
    for seed, dtype, stale in _CASES:
        _check_one_case(accumulate, seed, dtype, stale)
    passed(
        "3 micro-batches add up to the full batch's gradient (autograd and 2/N xᵀ(xw - t) by hand), stale "
        "gradient cleared",
        "3 个微批量累加起来等于整批的梯度（自动求导与手算的 2/N xᵀ(xw - t) 一致），旧梯度已清零。",
    )


def _check_one_case(accumulate: Callable, seed: int, dtype: torch.dtype, stale: float) -> None:
    w0, xs, ts = _accumulation_data(seed, dtype)
    w = w0.clone().requires_grad_(True)
    w.grad = torch.full_like(w0, stale)  # left over from a previous training step
    x_batches, t_batches = [x.clone() for x in xs], [t.clone() for t in ts]
    passes: list[torch.Tensor] = []  # the gradient each backward pass sends to w, before .grad adds it up
    hook = w.register_hook(lambda grad: passes.append(grad.detach().clone()))
    try:
        with sandbox():  # w.grad may change (that is the exercise); the global state may not
            result = accumulate(w, x_batches, t_batches)
    finally:
        hook.remove()
    require(
        all(torch.equal(a, b) for a, b in zip(x_batches + t_batches, xs + ts, strict=True))
        and len(x_batches) == len(xs)
        and torch.equal(w.detach(), w0)
        and w.requires_grad,
        "Your function changed w or a micro-batch in place: only w.grad may change; the training step that "
        "updates w comes after it.",
        "你的函数原地改动了 w 或某个微批量：只有 w.grad 可以变；更新 w 是之后训练步骤的事。",
    )
    require(
        isinstance(result, torch.Tensor) and result.shape == w.shape,
        f"Return w.grad after the last micro-batch: a tensor of shape ({FEATURES},).",
        f"最后一个微批量处理完之后，返回 w.grad：一个形状为 ({FEATURES},) 的张量。",
    )
    require(
        len(passes) == MICRO_BATCHES,
        f"backward() reached w {len(passes)} time(s); call it once per micro-batch ({MICRO_BATCHES} times), as "
        "if each micro-batch only fitted in memory on its own, and let .grad add the gradients up.",
        f"backward() 传到 w 的次数是 {len(passes)}；请每个微批量调用一次（共 {MICRO_BATCHES} 次），"
        "就当每次内存里只放得下一个微批量，让 .grad 把梯度加起来。",
    )
    require(
        result.dtype == w.dtype and result.device == w.device,
        f"The result is {result.dtype} on {result.device}; w.grad has w's dtype and device ({w.dtype}, "
        f"{w.device}): return w.grad itself.",
        f"结果是 {result.device} 上的 {result.dtype}；w.grad 的数据类型和设备与 w 相同（{w.dtype}，{w.device}）："
        "请直接返回 w.grad。",
    )
    result = result.detach().clone()
    truth, by_hand = _full_batch_gradient(seed, dtype)
    shares = _micro_batch_gradients(seed, dtype)  # sum to truth
    require(
        not (_close(result, truth + stale) or _close(result, truth + stale / MICRO_BATCHES)),
        f"w.grad still held the previous step's gradient ({stale:g} in every entry): clear it once before the "
        "first micro-batch, with w.grad = None or w.grad.zero_().",
        f"w.grad 里还留着上一步的梯度（每一项都是 {stale:g}）：在处理第一个微批量之前清零一次，"
        "用 w.grad = None 或 w.grad.zero_()。",
    )
    require(
        not any(_close(result, shares[-1] * k) for k in (1, MICRO_BATCHES)),
        "Only the last micro-batch counted: you cleared w.grad inside the loop. Clear it once, before the loop, "
        "and let backward() add up the micro-batches.",
        "只有最后一个微批量起了作用：你在循环里清零了 w.grad。只在循环开始前清零一次，"
        "让 backward() 把各个微批量的梯度加起来。",
    )
    require(
        not _close(result, truth * MICRO_BATCHES),
        f"{MICRO_BATCHES} times too large: each micro-batch's mean is over 2 samples, the full batch's over 6. "
        f"Divide each micro-batch's loss by the number of micro-batches ({MICRO_BATCHES}).",
        f"结果大了 {MICRO_BATCHES} 倍：每个微批量的均值只对 2 个样本求平均，而整批是对 6 个样本。"
        f"请把每个微批量的损失除以微批量的个数（{MICRO_BATCHES}）。",
    )
    require(
        not _close(result, truth * SAMPLES),
        f"{SAMPLES} times too large: the loss is the mean over samples, not the sum.",
        f"结果大了 {SAMPLES} 倍：损失应该是对样本求平均，而不是求和。",
    )
    require(
        _close(result, truth),
        f"Expected {_show(truth)}, got {_show(result)}. Per micro-batch: its mean squared error, scaled so that "
        "the micro-batches' losses add up to the full batch's mean, then backward().",
        f"应为 {_show(truth)}，实际得到 {_show(result)}。每个微批量：它的均方误差，按比例缩放，"
        "使各微批量的损失加起来等于整批的均值，然后调用 backward()。",
    )
    unmatched = list(range(MICRO_BATCHES))
    for sent in passes:
        match = next((k for k in unmatched if _close(sent, shares[k])), None)
        require(
            match is not None,
            "The total is right, but the backward() passes were not one per micro-batch: each pass should carry "
            "one micro-batch's loss alone (you sent another gradient, e.g. the full batch's loss divided by "
            f"{MICRO_BATCHES}, {MICRO_BATCHES} times). Only one micro-batch fits in memory at a time.",
            "总和是对的，但这几次 backward() 并不是每个微批量一次：每次只应该传一个微批量自己的损失"
            f"（你传的是别的梯度，比如把整批的损失除以 {MICRO_BATCHES} 传了 {MICRO_BATCHES} 次）。"
            "内存里一次只放得下一个微批量。",
        )
        unmatched.remove(match)
    require(
        w.grad is not None and _close(w.grad.detach(), truth),
        "The value you returned is right, but w.grad itself holds only part of it: you added the micro-batches "
        "up yourself. Clear w.grad once, before the loop, and let backward() add each micro-batch into it; "
        "return w.grad.",
        "你返回的值是对的，但 w.grad 本身只有其中一部分：各微批量是你自己加起来的。"
        "只在循环前清零一次 w.grad，让 backward() 把每个微批量的梯度加进去，然后返回 w.grad。",
    )
    assert _close(truth, by_hand)  # the checker's own two answers agree
