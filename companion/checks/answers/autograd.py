"""The teacher's part of lesson 02's self-checks: reference answers, other correct answers and typical mistakes."""

import math

import torch

from companion.checks.autograd import check_accumulated_gradient, check_tanh_grads
from companion.exercises import Exercise, Mistake

# Exercise 1 ---------------------------------------------------------------------------------------------------------


def _reference_tanh_grads(w, b, x, t):
    y = torch.tanh(w * x + b)
    dz = 2 * (y - t) * (1 - y**2)  # dL/dy * dy/dz
    return dz * x, dz


def _right_tanh_grads_math_floats(w, b, x, t):
    z = (w * x + b).item()
    g = 2 * (math.tanh(z) - t.item()) / math.cosh(z) ** 2  # 1 - tanh² = 1 / cosh²
    return g * x.item(), g


def _right_tanh_grads_float32(w, b, x, t):
    w, b, x, t = (v.float() for v in (w, b, x, t))
    y = torch.tanh(w * x + b)
    dl_dz = 2 * (y - t) * (1 - y * y)
    return dl_dz * x, dl_dz


def _right_tanh_grads_list(w, b, x, t):
    sech2 = 1 / torch.cosh(w * x + b) ** 2
    dz = 2 * (torch.tanh(w * x + b) - t) * sech2
    return [dz * x, dz]


def _y(w, b, x):
    return torch.tanh(torch.as_tensor(w * x + b, dtype=torch.float64))


def _no_tanh_derivative(w, b, x, t):
    y = _y(w, b, x)
    return (2 * (y - t) * x).item(), (2 * (y - t)).item()


def _no_factor_two(w, b, x, t):
    y = _y(w, b, x)
    return ((y - t) * (1 - y**2) * x).item(), ((y - t) * (1 - y**2)).item()


def _dw_without_x(w, b, x, t):
    y = _y(w, b, x)
    dz = (2 * (y - t) * (1 - y**2)).item()
    return dz, dz


def _dw_times_w(w, b, x, t):
    y = _y(w, b, x)
    dz = 2 * (y - t) * (1 - y**2)
    return dz * w, dz


def _tanh_derivative_not_squared(w, b, x, t):
    y = _y(w, b, x)
    dz = 2 * (y - t) * (1 - y)
    return dz * x, dz


def _sigmoid_derivative(w, b, x, t):
    y = _y(w, b, x)
    dz = 2 * (y - t) * y * (1 - y)
    return dz * x, dz


def _swapped(w, b, x, t):
    dw, db = _reference_tanh_grads(*(torch.as_tensor(v, dtype=torch.float64) for v in (w, b, x, t)))
    return db.item(), dw.item()


def _db_with_x(w, b, x, t):
    dw, _ = _reference_tanh_grads(*(torch.as_tensor(v, dtype=torch.float64) for v in (w, b, x, t)))
    return dw.item(), dw.item()


def _wrong_sign(w, b, x, t):
    y = _y(w, b, x)
    dz = 2 * (t - y) * (1 - y**2)
    return (dz * x).item(), dz.item()


def _returns_a_1d_tensor(w, b, x, t):
    dw, db = _reference_tanh_grads(w, b, x, t)
    return dw.reshape(1), db.reshape(1)


# Exercise 2 ---------------------------------------------------------------------------------------------------------


def _reference_accumulate(w, x_batches, t_batches):
    w.grad = None
    for x, t in zip(x_batches, t_batches, strict=True):
        loss = ((x @ w - t) ** 2).mean() / len(x_batches)
        loss.backward()
    return w.grad


def _right_accumulate_zero_and_sum(w, x_batches, t_batches):
    w.grad.zero_()
    total = sum(len(x) for x in x_batches)
    for x, t in zip(x_batches, t_batches, strict=True):
        (((x @ w - t) ** 2).sum() / total).backward()
    return w.grad


def _right_accumulate_weighted_reversed(w, x_batches, t_batches):
    w.grad = torch.zeros_like(w)
    n = sum(len(t) for t in t_batches)
    for x, t in reversed(list(zip(x_batches, t_batches, strict=True))):  # any order adds up the same
        loss = torch.nn.functional.mse_loss(x @ w, t) * len(t) / n  # right for unequal micro-batches too
        torch.autograd.backward(loss)
    return w.grad.clone()


def _no_zeroing(w, x_batches, t_batches):
    for x, t in zip(x_batches, t_batches, strict=True):
        (((x @ w - t) ** 2).mean() / len(x_batches)).backward()
    return w.grad


def _no_zeroing_divide_at_end(w, x_batches, t_batches):
    for x, t in zip(x_batches, t_batches, strict=True):
        ((x @ w - t) ** 2).mean().backward()
    w.grad /= len(x_batches)
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


def _full_batch_three_times(w, x_batches, t_batches):
    w.grad = None
    x, t = torch.cat(x_batches), torch.cat(t_batches)
    for _ in x_batches:  # the whole batch each time: no micro-batching at all
        (((x @ w - t) ** 2).mean() / len(x_batches)).backward()
    return w.grad


def _sums_locally(w, x_batches, t_batches):
    total = torch.zeros_like(w)
    for x, t in zip(x_batches, t_batches, strict=True):
        w.grad = None
        (((x @ w - t) ** 2).mean() / len(x_batches)).backward()
        total += w.grad
    return total


def _steps_w(w, x_batches, t_batches):
    w.grad = None
    for x, t in zip(x_batches, t_batches, strict=True):
        (((x @ w - t) ** 2).mean() / len(x_batches)).backward()
    with torch.no_grad():
        w -= 0.1 * w.grad  # the optimizer's step does not belong here
    return w.grad


EXERCISES = [
    Exercise(
        check=check_tanh_grads,
        reference=_reference_tanh_grads,
        mistakes=(
            Mistake(
                "treats tanh as the identity",
                _no_tanh_derivative,
                "tanh's derivative",
                what_zh="把 tanh 当成恒等函数，漏掉它的导数",
            ),
            Mistake(
                "1 - tanh instead of 1 - tanh**2",
                _tanh_derivative_not_squared,
                "with tanh squared",
                what_zh="把 1 - tanh**2 写成 1 - tanh",
            ),
            Mistake(
                "sigmoid's derivative y(1 - y)",
                _sigmoid_derivative,
                "sigmoid's derivative",
                what_zh="误用 sigmoid 的导数 y(1 - y)",
            ),
            Mistake("forgets the 2 of the square", _no_factor_two, "factor 2", what_zh="漏掉平方求导带出的因子 2"),
            Mistake("dL/dw without the factor x", _dw_without_x, "dz/dw = x", what_zh="dL/dw 漏乘因子 x"),
            Mistake("dz/dw taken as w", _dw_times_w, "the factor w where it needs x", what_zh="把 dz/dw 当成 w"),
            Mistake("(t - y) instead of (y - t)", _wrong_sign, "sign is flipped", what_zh="把 (y - t) 写成 (t - y)"),
            Mistake("returns (dL/db, dL/dw)", _swapped, "wrong order", what_zh="返回顺序颠倒，成了 (dL/db, dL/dw)"),
            Mistake("dL/db multiplied by x too", _db_with_x, "extra factor x", what_zh="dL/db 也多乘了 x"),
            Mistake(
                "returns tensors of shape (1,)",
                _returns_a_1d_tensor,
                "return one number per gradient",
                what_zh="返回形状为 (1,) 的张量",
            ),
        ),
        right=(_right_tanh_grads_math_floats, _right_tanh_grads_float32, _right_tanh_grads_list),
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
            Mistake(
                "never clears the stale gradient",
                _no_zeroing,
                "previous step's gradient",
                what_zh="始终不清零上一步留下的旧梯度",
            ),
            Mistake(
                "never clears, divides w.grad by 3 at the end",
                _no_zeroing_divide_at_end,
                "previous step's gradient",
                what_zh="不清零旧梯度，最后把 w.grad 除以 3",
            ),
            Mistake(
                "clears inside the loop",
                _zero_inside_loop,
                "Only the last micro-batch counted",
                what_zh="在循环内部清零梯度",
            ),
            Mistake(
                "micro-batch means not scaled",
                _not_scaled,
                "Divide each micro-batch's loss",
                what_zh="各微批量的均值损失没有按比例缩放",
            ),
            Mistake("sum instead of mean", _sum_not_mean, "not the sum", what_zh="损失求和而不是求平均"),
            Mistake(
                "one backward() over the whole batch",
                _one_backward,
                "once per micro-batch",
                what_zh="对整批只调用一次 backward()",
            ),
            Mistake(
                "the full batch's loss / 3, three times",
                _full_batch_three_times,
                "not one per micro-batch",
                what_zh="把整批损失除以 3，反向传播三次",
            ),
            Mistake(
                "clears before every pass, sums locally",
                _sums_locally,
                "you added the micro-batches up yourself",
                what_zh="每次反向传播前都清零，另用局部变量自己累加",
            ),
            Mistake("also updates w", _steps_w, "only w.grad may change", what_zh="顺带更新了 w"),
        ),
        right=(_right_accumulate_zero_and_sum, _right_accumulate_weighted_reversed),
        why="backward() adds into .grad, so three backward() calls sum three gradients; scaling each mean by 1/3 "
        "makes the sum the mean over all six samples.",
        why_zh="backward() 会把梯度加到 .grad 上，所以三次 backward() 得到三个梯度之和；每个均值乘以 1/3，"
        "这个和就正好是全部 6 个样本上的均值的梯度。",
        discuss="With micro-batches of unequal size, what should each loss be divided by instead?",
        discuss_zh="如果各个微批量大小不一样，每个损失应该改为除以什么？",
    ),
]
