"""Lesson 04 (losses), the teacher's part: reference answers, other correct answers and typical mistakes."""

import torch
import torch.nn.functional as F

from companion.checks.losses import check_bce_with_logits, check_pixel_cross_entropy_grad
from companion.exercises import Exercise, Mistake

# Exercise 1 ---------------------------------------------------------------------------------------------------------


def _bce_with_logits(logits, target, pos_weight):
    log_p = F.logsigmoid(logits)  # log(sigmoid(z)), finite for any z
    log_not_p = F.logsigmoid(-logits)  # log(1 - sigmoid(z)) = log(sigmoid(-z))
    return -(pos_weight * target * log_p + (1 - target) * log_not_p).mean()  # over all N * C elements


def _right_bce_log1p_form(logits, target, pos_weight):
    # log(1 + exp(-z)) written as max(-z, 0) + log1p(exp(-|z|)), whose exponent is never positive
    softplus_neg = (-logits).clamp(min=0) + torch.log1p(torch.exp(-logits.abs()))
    return ((1 - target) * logits + (1 + (pos_weight - 1) * target) * softplus_neg).mean()


def _right_bce_softplus(logits, target, pos_weight):
    return (pos_weight * target * F.softplus(-logits) + (1 - target) * F.softplus(logits)).mean()


def _right_bce_in_float64(logits, target, pos_weight):
    z, y, w = logits.double(), target.double(), pos_weight.double()
    loss = -(w * y * F.logsigmoid(z) + (1 - y) * F.logsigmoid(-z)).mean()
    return loss.to(logits.dtype)


def _bce_sigmoid_then_log(logits, target, pos_weight):
    p = torch.sigmoid(logits)
    return -(pos_weight * target * p.log() + (1 - target) * (1 - p).log()).mean()


def _bce_log1p_exp_as_written(logits, target, pos_weight):
    log_p = -torch.log1p(torch.exp(-logits))  # -log(1 + e^-z) typed as written: e^200 is inf
    log_not_p = -torch.log1p(torch.exp(logits))
    return -(pos_weight * target * log_p + (1 - target) * log_not_p).mean()


def _bce_clamped_like_bce_loss(logits, target, pos_weight):
    p = torch.sigmoid(logits)  # BCELoss clamps each log at -100
    return -(pos_weight * target * p.log().clamp(min=-100) + (1 - target) * (1 - p).log().clamp(min=-100)).mean()


def _bce_without_pos_weight(logits, target, pos_weight):
    return -(target * F.logsigmoid(logits) + (1 - target) * F.logsigmoid(-logits)).mean()


def _bce_pos_weight_on_both_terms(logits, target, pos_weight):
    return -(pos_weight * (target * F.logsigmoid(logits) + (1 - target) * F.logsigmoid(-logits))).mean()


def _bce_pos_weight_on_the_negatives(logits, target, pos_weight):
    return -(target * F.logsigmoid(logits) + pos_weight * (1 - target) * F.logsigmoid(-logits)).mean()


def _bce_summed_over_classes(logits, target, pos_weight):
    per_element = -(pos_weight * target * F.logsigmoid(logits) + (1 - target) * F.logsigmoid(-logits))
    return per_element.sum(dim=1).mean()  # (N, C) -> (N,) -> ()


def _bce_calls_torch(logits, target, pos_weight):
    return F.binary_cross_entropy_with_logits(logits, target, pos_weight=pos_weight)


# Exercise 2 ---------------------------------------------------------------------------------------------------------


def _pixel_cross_entropy_grad(logits, target, weight, ignore_index):
    kept = target != ignore_index  # (N, H, W)
    safe = target.where(kept, 0)  # any valid class where ignored: its weight is zeroed below
    pixel_weight = weight[safe] * kept  # (N, H, W), 0 where ignored
    scale = pixel_weight / pixel_weight.sum() if kept.any() else pixel_weight  # all ignored: 0 / 0 guarded
    one_hot = F.one_hot(safe, logits.shape[1]).movedim(-1, 1)  # (N, H, W, C) -> (N, C, H, W)
    return scale.unsqueeze(1) * (torch.softmax(logits, dim=1) - one_hot)  # (N, 1, H, W) * (N, C, H, W)


def _right_grad_rows(logits, target, weight, ignore_index):
    n, c, h, w = logits.shape
    rows = logits.movedim(1, -1).reshape(-1, c)  # one row of C logits per pixel: (N * H * W, C)
    labels = target.reshape(-1)
    keep = labels != ignore_index
    grad = torch.zeros_like(rows)
    if keep.any():
        p = rows[keep].softmax(dim=1)
        p[torch.arange(len(p)), labels[keep]] -= 1  # softmax minus one-hot
        kept_weight = weight[labels[keep]]
        grad[keep] = kept_weight[:, None] * p / kept_weight.sum()
    return grad.reshape(n, h, w, c).movedim(-1, 1)


def _right_grad_float64_clamped(logits, target, weight, ignore_index):
    kept = target != ignore_index
    classes = torch.where(kept, target, torch.zeros_like(target))
    p = torch.log_softmax(logits.double(), 1).exp()
    y = torch.zeros_like(p).scatter_(1, classes.unsqueeze(1), 1.0)
    w = weight.double()[classes] * kept
    total = w.sum().clamp(min=torch.finfo(torch.float64).tiny)  # a guarded divisor: 0 / tiny = 0
    return ((p - y) * (w / total)[:, None]).to(logits.dtype)


def _right_grad_where(logits, target, weight, ignore_index):
    kept = (target != ignore_index).unsqueeze(1)  # (N, 1, H, W)
    y = F.one_hot(target.clamp(0, logits.shape[1] - 1), logits.shape[1]).permute(0, 3, 1, 2)
    w = weight[target.clamp(0, logits.shape[1] - 1)].unsqueeze(1) * kept
    per_pixel = w * (logits.softmax(1) - y)
    return torch.where(w.sum() > 0, per_pixel / w.sum(), torch.zeros_like(per_pixel))


def _grad_parts(logits, target, weight, ignore_index):
    kept = target != ignore_index
    safe = target.where(kept, 0)
    one_hot = F.one_hot(safe, logits.shape[1]).movedim(-1, 1)
    return kept, safe, torch.softmax(logits, dim=1) - one_hot


def _grad_guarded(kept, numerator, divisor):
    return numerator / divisor if kept.any() else numerator * 0


def _grad_sign_flipped(logits, target, weight, ignore_index):
    kept, safe, diff = _grad_parts(logits, target, weight, ignore_index)
    w = weight[safe] * kept
    return _grad_guarded(kept, w.unsqueeze(1) * -diff, w.sum())


def _grad_softmax_last_dim(logits, target, weight, ignore_index):
    kept = target != ignore_index
    safe = target.where(kept, 0)
    diff = torch.softmax(logits, dim=-1) - F.one_hot(safe, logits.shape[1]).movedim(-1, 1)
    w = weight[safe] * kept
    return _grad_guarded(kept, w.unsqueeze(1) * diff, w.sum())


def _grad_never_reads_ignore_index(logits, target, weight, ignore_index):
    kept = target >= 0  # right for -100 only
    safe = target.clamp(min=0)
    diff = torch.softmax(logits, dim=1) - F.one_hot(safe, logits.shape[1]).movedim(-1, 1)
    w = weight[safe] * kept
    return _grad_guarded(kept, w.unsqueeze(1) * diff, w.sum())


def _grad_ignored_not_masked(logits, target, weight, ignore_index):
    kept, safe, diff = _grad_parts(logits, target, weight, ignore_index)
    w = weight[safe] * kept
    return _grad_guarded(kept, weight[safe].unsqueeze(1) * diff, w.sum())  # masked in the divisor only


def _grad_divided_by_batch_size(logits, target, weight, ignore_index):
    kept, safe, diff = _grad_parts(logits, target, weight, ignore_index)
    return (weight[safe] * kept).unsqueeze(1) * diff / logits.shape[0]  # (N, C) rule: divide by N


def _grad_divided_by_kept_count(logits, target, weight, ignore_index):
    kept, safe, diff = _grad_parts(logits, target, weight, ignore_index)
    return _grad_guarded(kept, (weight[safe] * kept).unsqueeze(1) * diff, kept.sum())


def _grad_without_weights(logits, target, weight, ignore_index):
    kept, safe, diff = _grad_parts(logits, target, weight, ignore_index)
    return _grad_guarded(kept, kept.unsqueeze(1) * diff, kept.sum())


def _grad_weight_on_one_hot_only(logits, target, weight, ignore_index):
    kept = target != ignore_index
    safe = target.where(kept, 0)
    w = weight[safe] * kept
    one_hot = F.one_hot(safe, logits.shape[1]).movedim(-1, 1)
    return _grad_guarded(kept, kept.unsqueeze(1) * torch.softmax(logits, dim=1) - w.unsqueeze(1) * one_hot, w.sum())


def _grad_weight_per_class(logits, target, weight, ignore_index):
    kept, safe, diff = _grad_parts(logits, target, weight, ignore_index)
    per_class = weight.reshape(1, -1, 1, 1) * kept.unsqueeze(1)  # weight[c] on the row of class c
    return _grad_guarded(kept, per_class * diff, (weight[safe] * kept).sum())


def _grad_unguarded(logits, target, weight, ignore_index):
    kept, safe, diff = _grad_parts(logits, target, weight, ignore_index)
    w = weight[safe] * kept
    return (w / w.sum()).unsqueeze(1) * diff  # all ignored: 0 / 0 is nan


def _grad_exp_by_hand(logits, target, weight, ignore_index):
    kept = target != ignore_index
    safe = target.where(kept, 0)
    e = logits.exp()  # overflows at 200
    diff = e / e.sum(dim=1, keepdim=True) - F.one_hot(safe, logits.shape[1]).movedim(-1, 1)
    w = weight[safe] * kept
    return _grad_guarded(kept, w.unsqueeze(1) * diff, w.sum())


def _grad_by_autograd(logits, target, weight, ignore_index):
    z = logits.detach().requires_grad_()
    F.cross_entropy(z, target, weight=weight, ignore_index=ignore_index).backward()
    return z.grad


def _grad_classes_last(logits, target, weight, ignore_index):
    return _pixel_cross_entropy_grad(logits, target, weight, ignore_index).movedim(1, -1)  # (N, H, W, C)


EXERCISES = [
    Exercise(
        check=check_bce_with_logits,
        reference=_bce_with_logits,
        mistakes=(
            Mistake(
                "sigmoid, then log", _bce_sigmoid_then_log, "F.logsigmoid(z) and", what_zh="先算 sigmoid，再取对数"
            ),
            Mistake(
                "-log(1 + exp(-z)) typed as written",
                _bce_log1p_exp_as_written,
                "exp(200) overflows",
                what_zh="照公式原样写 -log(1 + exp(-z))",
            ),
            Mistake(
                "sigmoid, then a log clamped at -100 like BCELoss",
                _bce_clamped_like_bce_loss,
                "clamped at -100",
                what_zh="先算 sigmoid，再像 BCELoss 那样取对数并截断在 -100",
            ),
            Mistake(
                "forgets pos_weight", _bce_without_pos_weight, "leaves out pos_weight", what_zh="漏掉了 pos_weight"
            ),
            Mistake(
                "pos_weight on both terms",
                _bce_pos_weight_on_both_terms,
                "multiplies both terms",
                what_zh="两项都乘上了 pos_weight",
            ),
            Mistake(
                "pos_weight on the negative term",
                _bce_pos_weight_on_the_negatives,
                "term of the negative targets",
                what_zh="pos_weight 乘在了负标签那一项上",
            ),
            Mistake(
                "sums over the classes",
                _bce_summed_over_classes,
                "sums over the classes",
                what_zh="先对类别求和，再对样本取平均",
            ),
            Mistake(
                "calls F.binary_cross_entropy_with_logits",
                _bce_calls_torch,
                "without any BCE function",
                what_zh="直接调用 F.binary_cross_entropy_with_logits",
            ),
        ),
        right=(_right_bce_log1p_form, _right_bce_softplus, _right_bce_in_float64),
        why="log(sigmoid(z)) = -log(1 + exp(-z)) is computed by logsigmoid without ever forming sigmoid(z), so it "
        "stays finite where sigmoid rounds to 0 or 1; log(1 - sigmoid(z)) is logsigmoid(-z).",
        why_zh="log(sigmoid(z)) = -log(1 + exp(-z))，logsigmoid 计算它时根本不经过 sigmoid(z)，"
        "所以在 sigmoid 舍入成 0 或 1 的地方也保持有限；log(1 - sigmoid(z)) 就是 logsigmoid(-z)。",
        discuss="A class is positive in 1 sample of 100. What pos_weight would you try, and what does it trade away?",
        discuss_zh="某个类别在 100 个样本里只有 1 个是正例。你会试多大的 pos_weight？这样做又会牺牲什么？",
    ),
    Exercise(
        check=check_pixel_cross_entropy_grad,
        reference=_pixel_cross_entropy_grad,
        mistakes=(
            Mistake(
                "one-hot minus softmax: the sign flipped",
                _grad_sign_flipped,
                "the sign is wrong",
                what_zh="写成独热减 softmax：符号反了",
            ),
            Mistake(
                "softmax over the last dimension",
                _grad_softmax_last_dim,
                "the softmax over dimension 1",
                what_zh="沿最后一个维度做 softmax",
            ),
            Mistake(
                "never reads ignore_index (target >= 0)",
                _grad_never_reads_ignore_index,
                "never reads",
                what_zh="没有用到 ignore_index（只判断 target >= 0）",
            ),
            Mistake(
                "ignored pixels masked in the divisor only",
                _grad_ignored_not_masked,
                "ignored pixels",
                what_zh="被忽略的像素只从分母中剔除",
            ),
            Mistake(
                "divides by N, as for (N, C) logits",
                _grad_divided_by_batch_size,
                "N, the batch size",
                what_zh="照 (N, C) 形状 logit 的做法除以 N",
            ),
            Mistake(
                "divides by the kept count, not the weights",
                _grad_divided_by_kept_count,
                "number of kept",
                what_zh="除以保留的像素数，而不是权重之和",
            ),
            Mistake(
                "leaves out the class weights",
                _grad_without_weights,
                "leaves out the class weights",
                what_zh="漏掉了类别权重",
            ),
            Mistake(
                "weight on the one-hot part only",
                _grad_weight_on_one_hot_only,
                "scales the whole loss",
                what_zh="权重只乘在独热那一部分上",
            ),
            Mistake(
                "weight[c] on class c's row, not weight[target]",
                _grad_weight_per_class,
                "scales the whole loss",
                what_zh="类别 c 那一行乘 weight[c]，而不是 weight[target]",
            ),
            Mistake(
                "0 / 0 when every pixel is ignored",
                _grad_unguarded,
                "every pixel is ignored",
                what_zh="所有像素都被忽略时出现 0 / 0",
            ),
            Mistake(
                "softmax by hand: exp overflows", _grad_exp_by_hand, "exp overflows", what_zh="手写 softmax：exp 上溢"
            ),
            Mistake("asks autograd", _grad_by_autograd, "without autograd", what_zh="借助自动求导来算梯度"),
            Mistake(
                "classes moved last", _grad_classes_last, "classes in dimension 1", what_zh="把类别挪到了最后一个维度"
            ),
        ),
        right=(_right_grad_rows, _right_grad_float64_clamped, _right_grad_where),
        why="Each kept pixel is a sample with loss weight[y] * -log p_y; the mean divides by the constant sum of "
        "the kept weights, and d(-log p_y)/dz = p - one_hot(y), so the gradient is weight[y] * (p - one_hot(y)) "
        "over that sum, 0 for ignored pixels, and all 0 when nothing is kept.",
        why_zh="每个保留的像素都是一个样本，损失为 weight[y] * -log p_y；平均值除以保留权重之和，这是常数；"
        "又因为 d(-log p_y)/dz = p - one_hot(y)，梯度就是 weight[y] * (p - one_hot(y)) 除以这个和；"
        "被忽略的像素梯度为 0，什么都没保留时梯度全为 0。",
        discuss="PyTorch's loss is nan for an all-ignored batch, yet its gradient is 0. Which one would you rather "
        "have in a training loop, and why?",
        discuss_zh="一个批全部被忽略时，PyTorch 的损失是 nan，梯度却是 0。在训练循环里你更希望得到哪一个？为什么？",
    ),
]
