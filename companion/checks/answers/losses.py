"""Lesson 04 (losses), the teacher's part: reference answers, other correct answers and typical mistakes."""

import torch
import torch.nn.functional as F

from companion.checks.losses import check_bce_with_logits, check_pixel_cross_entropy
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


def _pixel_cross_entropy(logits, target, weight, ignore_index):
    kept = target != ignore_index  # (N, H, W)
    safe = target.where(kept, 0)  # any valid class where ignored: masked out below
    log_probs = F.log_softmax(logits, dim=1)  # over the classes: (N, C, H, W)
    true_log_prob = log_probs.gather(1, safe.unsqueeze(1)).squeeze(1)  # (N, 1, H, W) -> (N, H, W)
    pixel_weight = weight[safe] * kept  # (N, H, W), 0 where ignored
    return -(pixel_weight * true_log_prob).sum() / pixel_weight.sum()


def _right_pixel_rows(logits, target, weight, ignore_index):
    rows = logits.movedim(1, -1).reshape(-1, logits.shape[1])  # one row of C logits per pixel
    labels = target.reshape(-1)
    keep = labels != ignore_index
    rows, labels = rows[keep], labels[keep]
    log_probs = rows - rows.logsumexp(dim=1, keepdim=True)
    w = weight[labels]
    return -(w * log_probs[torch.arange(len(labels)), labels]).sum() / w.sum()


def _right_pixel_nan_guard(logits, target, weight, ignore_index):
    kept = target != ignore_index
    if not kept.any():  # a guard that still gives PyTorch's answer
        return torch.full((), float("nan"), dtype=logits.dtype, device=logits.device)
    one_hot = F.one_hot(target.clamp(0, logits.shape[1] - 1), logits.shape[1]).movedim(-1, 1)  # (N, C, H, W)
    log_p = (one_hot * F.log_softmax(logits, dim=1)).sum(dim=1)  # (N, H, W)
    w = weight[target.clamp(0, logits.shape[1] - 1)] * kept
    return -(w * log_p).sum() / w.sum()


def _right_pixel_in_float64(logits, target, weight, ignore_index):
    kept = target != ignore_index
    classes = torch.where(kept, target, torch.zeros_like(target))
    log_p = torch.log_softmax(logits.double(), 1).gather(1, classes[:, None])[:, 0]
    w = weight.double()[classes] * kept
    return (-(w * log_p).sum() / w.sum()).to(logits.dtype)


def _pixel_parts(logits, target, weight, ignore_index):
    kept = target != ignore_index
    safe = target.where(kept, 0)
    true_log_prob = F.log_softmax(logits, dim=1).gather(1, safe.unsqueeze(1)).squeeze(1)
    return kept, safe, -(weight[safe] * kept * true_log_prob)


def _pixel_wrong_dim(logits, target, weight, ignore_index):
    kept = target != ignore_index
    safe = target.where(kept, 0)
    true_log_prob = F.log_softmax(logits, dim=-1).gather(1, safe.unsqueeze(1)).squeeze(1)
    return -(weight[safe] * kept * true_log_prob).sum() / (weight[safe] * kept).sum()


def _pixel_mean_over_every_pixel(logits, target, weight, ignore_index):
    _, _, losses = _pixel_parts(logits, target, weight, ignore_index)
    return losses.mean()  # divides by N * H * W, the ignored pixels included


def _pixel_mean_over_kept_count(logits, target, weight, ignore_index):
    kept, _, losses = _pixel_parts(logits, target, weight, ignore_index)
    return losses.sum() / kept.sum()


def _pixel_no_mask(logits, target, weight, ignore_index):
    safe = target.clamp(0, logits.shape[1] - 1)  # ignored pixels become a real class
    true_log_prob = F.log_softmax(logits, dim=1).gather(1, safe.unsqueeze(1)).squeeze(1)
    return -(weight[safe] * true_log_prob).sum() / weight[safe].sum()


def _pixel_guarded_mean(logits, target, weight, ignore_index):
    kept, safe, losses = _pixel_parts(logits, target, weight, ignore_index)
    return losses.sum() / (weight[safe] * kept).sum().clamp(min=1e-12)


def _pixel_never_reads_ignore_index(logits, target, weight, ignore_index):
    kept = target >= 0  # right for -100 only
    safe = target.clamp(min=0)
    true_log_prob = F.log_softmax(logits, dim=1).gather(1, safe.unsqueeze(1)).squeeze(1)
    return -(weight[safe] * kept * true_log_prob).sum() / (weight[safe] * kept).sum()


def _pixel_log_of_softmax(logits, target, weight, ignore_index):
    kept = target != ignore_index
    safe = target.where(kept, 0)
    true_log_prob = torch.softmax(logits, dim=1).log().gather(1, safe.unsqueeze(1)).squeeze(1)
    return -(weight[safe] * kept * true_log_prob).sum() / (weight[safe] * kept).sum()


def _pixel_without_weights(logits, target, weight, ignore_index):
    kept = target != ignore_index
    safe = target.where(kept, 0)
    true_log_prob = F.log_softmax(logits, dim=1).gather(1, safe.unsqueeze(1)).squeeze(1)
    return -(kept * true_log_prob).sum() / kept.sum()


def _pixel_nll_loss(logits, target, weight, ignore_index):
    return F.nll_loss(F.log_softmax(logits, dim=1), target, weight=weight, ignore_index=ignore_index)


EXERCISES = [
    Exercise(
        check=check_bce_with_logits,
        reference=_bce_with_logits,
        mistakes=(
            Mistake("sigmoid, then log", _bce_sigmoid_then_log, "F.logsigmoid(z) and"),
            Mistake("sigmoid, then a log clamped at -100 like BCELoss", _bce_clamped_like_bce_loss, "clamped at -100"),
            Mistake("forgets pos_weight", _bce_without_pos_weight, "leaves out pos_weight"),
            Mistake("pos_weight on both terms", _bce_pos_weight_on_both_terms, "multiplies both terms"),
            Mistake(
                "pos_weight on the negative term", _bce_pos_weight_on_the_negatives, "term of the negative targets"
            ),
            Mistake("sums over the classes", _bce_summed_over_classes, "sums over the classes"),
            Mistake("calls F.binary_cross_entropy_with_logits", _bce_calls_torch, "without any BCE function"),
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
        check=check_pixel_cross_entropy,
        reference=_pixel_cross_entropy,
        mistakes=(
            Mistake("log_softmax over the last dimension", _pixel_wrong_dim, "over the last dimension"),
            Mistake("biased mean over ignored pixels", _pixel_mean_over_every_pixel, "the ignored ones included"),
            Mistake("divides by the kept count, not the weights", _pixel_mean_over_kept_count, "number of kept"),
            Mistake("no mask: ignored pixels clamped to a class", _pixel_no_mask, "still counts the ignored"),
            Mistake("guards the all-ignored batch to 0", _pixel_guarded_mean, "belongs in the training loop"),
            Mistake("never reads ignore_index (target >= 0)", _pixel_never_reads_ignore_index, "never reads"),
            Mistake("log of softmax", _pixel_log_of_softmax, "not the log of a softmax"),
            Mistake("leaves out the class weights", _pixel_without_weights, "leaves out the class weights"),
            Mistake("calls F.nll_loss on log_softmax", _pixel_nll_loss, "or any other loss function"),
        ),
        right=(_right_pixel_rows, _right_pixel_nan_guard, _right_pixel_in_float64),
        why="Each pixel is a sample whose classes sit in dimension 1; the weighted mean divides by the weights of "
        "the kept pixels, so an all-ignored batch is 0 / 0.",
        why_zh="每个像素都是一个样本，它的各个类别位于维度 1；加权平均除以保留像素的权重之和，"
        "所以全部被忽略的批是 0 / 0。",
        discuss="Why does PyTorch return nan for an all-ignored batch rather than 0, and how would you skip it?",
        discuss_zh="一个批全部被忽略时，PyTorch 为什么返回 nan 而不是 0？训练时你会怎样跳过这样的批？",
    ),
]
