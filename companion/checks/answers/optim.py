"""Lesson 09's reference answers, other correct answers and typical mistakes (the teacher's part: never imported by
companion/checks/optim.py, left out of the student bundle)."""

import math

import torch

from companion.checks.optim import check_adam_update, check_adamw_update
from companion.exercises import Exercise, Mistake

# --- exercise 1: adam_update ------------------------------------------------------------------------------------------


def _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    m_hat = exp_avg / (1 - beta1**step)
    v_hat = exp_avg_sq / (1 - beta2**step)
    param.sub_(lr * m_hat / (v_hat.sqrt() + eps))


def _right_pytorch_order(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    # torch.optim.Adam's own order: lerp, the bias corrections folded into the denominator and the step size
    b1, b2 = betas
    exp_avg.lerp_(grad, 1 - b1)
    exp_avg_sq.mul_(b2).addcmul_(grad, grad.conj(), value=1 - b2)
    denom = (exp_avg_sq.sqrt() / math.sqrt(1 - b2**step)).add_(eps)
    param.addcdiv_(exp_avg, denom, value=-lr / (1 - b1**step))


def _right_written_out(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    # the review's answer: *= and +=, lerp_ for v, sqrt(v) / sqrt(bc2) + eps, (lr / bc1) * m / denom
    b1, b2 = betas
    exp_avg *= b1
    exp_avg += (1 - b1) * grad
    exp_avg_sq.lerp_(grad * grad, 1 - b2)
    bc1, bc2 = 1 - b1**step, 1 - b2**step
    denominator = exp_avg_sq.sqrt() / bc2**0.5 + eps
    param -= (lr / bc1) * exp_avg / denominator


def _right_copy_into(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    # new tensors computed out of place, then copied into the caller's tensors
    b1, b2 = betas
    m = b1 * exp_avg + (1 - b1) * grad
    v = b2 * exp_avg_sq + (1 - b2) * grad.square()
    exp_avg.copy_(m)
    exp_avg_sq.copy_(v)
    param.copy_(param - lr * (m / (1 - b1**step)) / (torch.sqrt(v / (1 - b2**step)) + eps))


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


def _adam_counting_steps_from_zero(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    t = step + 1  # "steps start at 0", but the caller already passes 1 first
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    param.sub_(lr * (exp_avg / (1 - beta1**t)) / ((exp_avg_sq / (1 - beta2**t)).sqrt() + eps))


def _adam_with_fixed_betas(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = 0.9, 0.999  # the argument is ignored
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    param.sub_(lr * (exp_avg / (1 - beta1**step)) / ((exp_avg_sq / (1 - beta2**step)).sqrt() + eps))


def _adam_squaring_grad_in_place(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).add_(grad.mul_(grad), alpha=1 - beta2)  # squares the caller's gradient
    param.sub_(lr * (exp_avg / (1 - beta1**step)) / ((exp_avg_sq / (1 - beta2**step)).sqrt() + eps))


def _adam_with_abs_gradient(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).add_(grad.abs(), alpha=1 - beta2)  # forgets to square
    param.sub_(lr * (exp_avg / (1 - beta1**step)) / ((exp_avg_sq / (1 - beta2**step)).sqrt() + eps))


# --- exercise 2: adamw_update -----------------------------------------------------------------------------------------


def _reference_adamw_update(
    param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2
):
    param.mul_(1 - lr * weight_decay)
    _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


def _right_adamw_add_alpha(
    param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2
):
    param.add_(param, alpha=-lr * weight_decay)
    _right_pytorch_order(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


def _right_adamw_decay_the_old_value(
    param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2
):
    # the review's third way: the Adam step does not depend on param, so the decay may use the value kept aside
    old = param.clone()
    _right_written_out(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)
    param.sub_(lr * weight_decay * old)


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


def _adamw_with_the_default_decay(
    param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2
):
    param.mul_(1 - lr * 1e-2)  # the default, not the argument
    _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


def _adamw_forgetting_the_decay(
    param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2
):
    _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


def _adamw_subtracting_a_constant(
    param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2
):
    param.sub_(lr * weight_decay)  # a constant, not a fraction of the weight
    _reference_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


def _adamw_on_a_step_without_bias_correction(
    param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2
):
    param.mul_(1 - lr * weight_decay)
    _adam_without_bias_correction(param, grad, exp_avg, exp_avg_sq, step, lr=lr, betas=betas, eps=eps)


EXERCISES = [
    Exercise(
        check=check_adam_update,
        reference=_reference_adam_update,
        mistakes=(
            Mistake(
                "no bias correction",
                _adam_without_bias_correction,
                "there is no bias correction",
                what_zh="没有做偏差修正",
            ),
            Mistake(
                "eps before the bias correction (the notes)",
                _adam_with_the_notes_eps,
                "before the bias correction",
                what_zh="eps 加在偏差修正之前（学习笔记的写法）",
            ),
            Mistake(
                "eps inside the square root",
                _adam_with_eps_inside_the_sqrt,
                "inside the square root",
                what_zh="eps 放进了平方根里",
            ),
            Mistake(
                "moments rebound, not updated in place",
                _adam_rebinding_the_moments,
                "Update the moments in place",
                what_zh="两个矩被重新赋值为新张量，没有原地更新",
            ),
            Mistake(
                "step counted from 0 (step + 1 in the corrections)",
                _adam_counting_steps_from_zero,
                "one step ahead",
                what_zh="步数从 0 开始数（偏差修正里用了 step + 1）",
            ),
            Mistake(
                "betas hard-coded, the argument ignored",
                _adam_with_fixed_betas,
                "from the `betas` argument",
                what_zh="把 betas 写死，忽略了传入的参数",
            ),
            Mistake(
                "squares grad in place",
                _adam_squaring_grad_in_place,
                "changed grad in place",
                what_zh="原地对 grad 求平方",
            ),
            Mistake(
                "|g| instead of g*g in v",
                _adam_with_abs_gradient,
                "exp_avg_sq differs",
                what_zh="v 里累加的是 |g| 而不是 g*g",
            ),
            Mistake("called instead of passed", None, "without ()", what_zh="传入了函数的调用结果，而不是函数本身"),
        ),
        right=(_right_pytorch_order, _right_written_out, _right_copy_into),
        why="m and v start at zero, so dividing by 1 - beta**step undoes their bias; eps then keeps the division "
        "finite where the corrected second moment is tiny.",
        why_zh="m 和 v 都从 0 开始，除以 1 - beta**step 正好抵消这一偏差；eps 则在修正后的二阶矩很小时让除法保持有限。",
        discuss="The checker compares with torch.optim.Adam within torch.testing.assert_close's tolerances for the "
        "dtype (float64: 1e-7): why not demand bit-for-bit equality, as the lesson's Adam class achieves? And why "
        "does only the case with eps=1e-2 catch eps added before the bias correction?",
        discuss_zh="自检以 torch.testing.assert_close 针对该数据类型的容差（float64 为 1e-7）与 torch.optim.Adam 比较："
        "为什么不像本课的 Adam 类那样要求逐位相等？又为什么只有 eps=1e-2 的那一组能发现 eps 加在了偏差修正之前？",
    ),
    Exercise(
        check=check_adamw_update,
        reference=_reference_adamw_update,
        mistakes=(
            Mistake(
                "coupled (L2) weight decay", _coupled_adamw, "Adam's L2 weight decay", what_zh="耦合式（L2）权重衰减"
            ),
            Mistake(
                "decay after the Adam step",
                _adamw_decaying_after,
                "shrinks param first",
                what_zh="在 Adam 这一步之后才做衰减",
            ),
            Mistake(
                "decay not multiplied by lr",
                _adamw_without_lr,
                "the decay multiplied by lr",
                what_zh="衰减没有乘以学习率 lr",
            ),
            Mistake(
                "the default weight_decay, not the argument",
                _adamw_with_the_default_decay,
                "not its default",
                what_zh="用了默认的 weight_decay，而不是传入的参数",
            ),
            Mistake(
                "accepts weight_decay, never decays",
                _adamw_forgetting_the_decay,
                "never happened",
                what_zh="接收了 weight_decay，却从不衰减",
            ),
            Mistake(
                "subtracts lr * weight_decay, a constant",
                _adamw_subtracting_a_constant,
                "so the decay is what differs",
                what_zh="减去常数 lr * weight_decay",
            ),
            Mistake(
                "right decay on an Adam step without bias correction",
                _adamw_on_a_step_without_bias_correction,
                "should be Adam, but the first steps are too large",
                what_zh="衰减正确，但 Adam 那一步没有偏差修正",
            ),
            Mistake(
                "no weight_decay argument",
                _reference_adam_update,
                "must accept (param, grad",
                what_zh="没有 weight_decay 参数",
            ),
        ),
        right=(_right_adamw_add_alpha, _right_adamw_decay_the_old_value),
        why="AdamW takes lr * weight_decay off every weight in proportion to its size, apart from the adaptive "
        "step, so the decay is not divided by sqrt(v_hat).",
        why_zh="AdamW 在自适应的那一步之外，按每个权重的大小扣掉 lr * weight_decay 的比例，"
        "所以衰减不会被 sqrt(v_hat) 除。",
        discuss="With AdamW, what happens to a weight whose loss gradient is always zero? And with Adam's L2 decay?",
        discuss_zh="用 AdamW 时，一个损失梯度始终为零的权重会怎样变化？换成 Adam 的 L2 衰减呢？",
    ),
]
