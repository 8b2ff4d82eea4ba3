"""Self-checks for lesson 04 (losses): a stable multi-label BCE with pos_weight, and a weighted per-pixel
cross-entropy with ignore_index."""

from collections.abc import Callable

import torch
import torch.nn.functional as F

from companion.exercises import Exercise, Mistake, passed, require


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float32 rounding, nan equal to nan."""
    return a.shape == b.shape and torch.allclose(a.double(), b.double(), rtol=1e-4, atol=1e-5, equal_nan=True)


def _one_number(got: object, where: str) -> torch.Tensor:
    require(
        isinstance(got, torch.Tensor),
        f"{where} should return a tensor, not {type(got).__name__}.",
        f"{where} 应该返回一个张量，而不是 {type(got).__name__}。",
    )
    require(
        got.shape == (),
        f"{where} has shape {tuple(got.shape)}: return one number, the mean (a 0-d tensor).",
        f"{where} 的形状是 {tuple(got.shape)}：应返回一个数，即平均值（零维张量）。",
    )
    return got


# Exercise 1 ---------------------------------------------------------------------------------------------------------


def _bce_cases() -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(41)
    logits = torch.randn(6, 4, generator=generator) * 2
    target = (torch.rand(6, 4, generator=generator) < 0.4).float()
    return [
        (torch.tensor([[2.0, -1.0, 0.5]]), torch.tensor([[1.0, 0.0, 1.0]]), torch.tensor([2.0, 1.0, 0.5])),
        (logits, target, torch.tensor([1.0, 3.0, 0.5, 2.0])),
        # Confidently wrong: sigmoid rounds to exactly 0 or 1 in float32, so log(sigmoid) is -inf.
        (
            torch.tensor([[-200.0, 200.0], [150.0, -150.0], [3.0, -2.0]]),
            torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
            torch.tensor([2.0, 1.0]),
        ),
    ]


def check_bce_with_logits(bce_with_logits: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """`bce_with_logits(logits, target, pos_weight)` must equal F.binary_cross_entropy_with_logits(...,
    pos_weight=pos_weight), also for logits of hundreds."""
    require(
        callable(bce_with_logits),
        "Pass the function itself: check_bce_with_logits(bce_with_logits), without ().",
        "把函数本身传进去：check_bce_with_logits(bce_with_logits)，不要加 ()。",
    )
    for logits, target, pos_weight in _bce_cases():
        want = F.binary_cross_entropy_with_logits(logits, target, pos_weight=pos_weight)
        where = f"bce_with_logits(<logits {tuple(logits.shape)}>, <target>, pos_weight={pos_weight.tolist()})"
        got = _one_number(bce_with_logits(logits, target, pos_weight), where)
        require(
            bool(got.isfinite()),
            f"{where} is {got.item()}: for logits of +-200, sigmoid rounds to exactly 0 or 1 in float32 and its "
            "log is -inf (0 * -inf is nan); take the logs straight from the logits with F.logsigmoid(z) and "
            "F.logsigmoid(-z).",
            f"{where} 是 {got.item()}：logit 为 ±200 时，sigmoid 在 float32 下恰好舍入成 0 或 1，取对数得 -inf"
            "（0 * -inf 是 nan）；请直接从 logit 求对数：F.logsigmoid(z) 和 F.logsigmoid(-z)。",
        )
        require(
            not _close(got, -want),
            f"{where} has the wrong sign: the loss is minus the log-probability, a positive number.",
            f"{where} 的符号反了：损失是对数概率取负，是个正数。",
        )
        no_pos_weight = F.binary_cross_entropy_with_logits(logits, target)
        require(
            not _close(got, no_pos_weight) or _close(no_pos_weight, want),
            f"{where} leaves out pos_weight: multiply the term of the positive targets, y * log(sigmoid(z)), "
            "by pos_weight (one number per class).",
            f"{where} 没有用上 pos_weight：要把正标签那一项 y * log(sigmoid(z)) 乘以 pos_weight（每个类别一个数）。",
        )
        both_terms = (pos_weight * F.binary_cross_entropy_with_logits(logits, target, reduction="none")).mean()
        require(
            not _close(got, both_terms) or _close(both_terms, want),
            f"{where} multiplies both terms by pos_weight: it weights only the term of the positive targets "
            "(y = 1); the negatives keep weight 1.",
            f"{where} 把两项都乘上了 pos_weight：它只加权正标签（y = 1）那一项，负标签的权重仍是 1。",
        )
        per_sample = F.binary_cross_entropy_with_logits(logits, target, pos_weight=pos_weight, reduction="none")
        require(
            not _close(got, per_sample.sum(dim=1).mean()) or logits.shape[1] == 1,
            f"{where} sums over the classes: every (sample, class) pair is its own yes/no question, and the mean "
            "runs over all N * C elements.",
            f"{where} 先对类别求了和：每个 (样本, 类别) 组合都是一道独立的是非题，平均要对全部 N * C 个元素求。",
        )
        probabilities = torch.sigmoid(logits)
        clamped = -(
            pos_weight * target * probabilities.log().clamp(min=-100)
            + (1 - target) * (1 - probabilities).log().clamp(min=-100)
        ).mean()
        require(
            not _close(got, clamped) or _close(clamped, want),
            f"{where} gives {got.item():.4f}, expected {want.item():.4f}: for logits of +-200, sigmoid rounds to "
            "exactly 0 or 1 in float32, and a log clamped at -100 (as BCELoss does) cuts the loss short; take "
            "the logs straight from the logits with F.logsigmoid.",
            f"{where} 得到 {got.item():.4f}，应为 {want.item():.4f}：logit 为 ±200 时，sigmoid 在 float32 下恰好舍入成"
            " 0 或 1，把对数截断在 -100（BCELoss 就是这样做的）会让损失偏小；请用 F.logsigmoid 直接从 logit 求对数。",
        )
        require(
            _close(got, want),
            f"{where} gives {got.item():.4f}, expected {want.item():.4f}: the loss of each element is "
            "-(pos_weight * y * logsigmoid(z) + (1 - y) * logsigmoid(-z)); return their mean.",
            f"{where} 得到 {got.item():.4f}，应为 {want.item():.4f}：每个元素的损失是 "
            "-(pos_weight * y * logsigmoid(z) + (1 - y) * logsigmoid(-z))，返回它们的平均值。",
        )
    passed(
        "bce_with_logits agrees with F.binary_cross_entropy_with_logits, logits of 200 included",
        "bce_with_logits 与 F.binary_cross_entropy_with_logits 一致，logit 高达 200 时也一样。",
    )


def _bce_with_logits(logits, target, pos_weight):
    log_p = F.logsigmoid(logits)  # log(sigmoid(z)), finite for any z
    log_not_p = F.logsigmoid(-logits)  # log(1 - sigmoid(z)) = log(sigmoid(-z))
    return -(pos_weight * target * log_p + (1 - target) * log_not_p).mean()  # over all N * C elements


def _bce_sigmoid_then_log(logits, target, pos_weight):
    p = torch.sigmoid(logits)
    return -(pos_weight * target * p.log() + (1 - target) * (1 - p).log()).mean()


def _bce_clamped_like_bce_loss(logits, target, pos_weight):
    weight = pos_weight * target + (1 - target)  # what BCELoss would need to mimic pos_weight
    return F.binary_cross_entropy(torch.sigmoid(logits), target, weight=weight)


def _bce_without_pos_weight(logits, target, pos_weight):
    return -(target * F.logsigmoid(logits) + (1 - target) * F.logsigmoid(-logits)).mean()


def _bce_pos_weight_on_both_terms(logits, target, pos_weight):
    return -(pos_weight * (target * F.logsigmoid(logits) + (1 - target) * F.logsigmoid(-logits))).mean()


def _bce_summed_over_classes(logits, target, pos_weight):
    per_element = -(pos_weight * target * F.logsigmoid(logits) + (1 - target) * F.logsigmoid(-logits))
    return per_element.sum(dim=1).mean()  # (N, C) -> (N,) -> ()


# Exercise 2 ---------------------------------------------------------------------------------------------------------

WEIGHT = torch.tensor([0.2, 1.0, 3.0, 0.5])


def _pixel_cases() -> list[tuple[torch.Tensor, torch.Tensor, int]]:
    generator = torch.Generator().manual_seed(42)

    def with_ignored(shape, ignore_index, fraction):
        target = torch.randint(0, 4, shape, generator=generator)
        target[torch.rand(shape, generator=generator) < fraction] = ignore_index
        return target

    return [
        (torch.randn(2, 4, 3, 3, generator=generator), with_ignored((2, 3, 3), -100, 0.3), -100),
        (torch.randn(1, 4, 2, 5, generator=generator) * 3, with_ignored((1, 2, 5), 3, 0.0), 3),
        (torch.randn(3, 4, 2, 2, generator=generator), with_ignored((3, 2, 2), -100, 0.0), -100),
        (torch.randn(1, 4, 2, 2, generator=generator), torch.full((1, 2, 2), -1), -1),  # every pixel ignored
    ]


def check_pixel_cross_entropy(
    pixel_cross_entropy: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor],
) -> None:
    """`pixel_cross_entropy(logits, target, weight, ignore_index)` on (N, C, H, W) logits and (N, H, W) targets
    must equal F.cross_entropy(logits, target, weight=weight, ignore_index=ignore_index)."""
    require(
        callable(pixel_cross_entropy),
        "Pass the function itself: check_pixel_cross_entropy(pixel_cross_entropy), without ().",
        "把函数本身传进去：check_pixel_cross_entropy(pixel_cross_entropy)，不要加 ()。",
    )
    for logits, target, ignore_index in _pixel_cases():
        before = target.clone()
        want = F.cross_entropy(logits, target, weight=WEIGHT, ignore_index=ignore_index)
        where = f"pixel_cross_entropy(<logits {tuple(logits.shape)}>, <target>, weight, {ignore_index})"
        got = _one_number(pixel_cross_entropy(logits, target, WEIGHT, ignore_index), where)
        require(
            torch.equal(target, before),
            f"{where} changed target: build a new tensor with target.where(kept, 0) instead.",
            f"{where} 改动了 target：请用 target.where(kept, 0) 新建一个张量。",
        )
        kept = target != ignore_index  # (N, H, W)
        if not kept.any():
            require(
                bool(got.isnan()),
                f"{where} is {got.item()}, but every pixel is ignored: the mean is 0 / 0, which PyTorch returns "
                "as nan; divide by the sum of the kept weights without guarding it.",
                f"{where} 是 {got.item()}，但所有像素都被忽略了：平均值是 0 / 0，PyTorch 返回 nan；"
                "直接除以保留下来的权重之和，不要另加保护。",
            )
            continue
        safe = target.where(kept, 0)  # (N, H, W)
        log_probs = F.log_softmax(logits, dim=1)  # (N, C, H, W)
        losses = -WEIGHT[safe] * log_probs.gather(1, safe.unsqueeze(1)).squeeze(1)  # (N, H, W)
        kept_sum = (losses * kept).sum()
        wrong_dim = F.log_softmax(logits, dim=-1).gather(1, safe.unsqueeze(1)).squeeze(1)  # softmax over W
        wrong_dim_mean = -(WEIGHT[safe] * kept * wrong_dim).sum() / (WEIGHT[safe] * kept).sum()
        require(
            not _close(got, wrong_dim_mean),
            f"{where} takes log_softmax over the last dimension: the classes are dimension 1 of (N, C, H, W), "
            "so use F.log_softmax(logits, dim=1).",
            f"{where} 在最后一个维度上做了 log_softmax：在 (N, C, H, W) 中类别是维度 1，"
            "所以要用 F.log_softmax(logits, dim=1)。",
        )
        require(
            not _close(got, kept_sum / target.numel()) or _close(want, kept_sum / target.numel()),
            f"{where} divides by every pixel, the ignored ones included: ignored pixels must count neither in "
            "the sum nor in the divisor.",
            f"{where} 除以的是全部像素数，被忽略的像素也算进去了：被忽略的像素既不进总和，也不进分母。",
        )
        require(
            not _close(got, kept_sum / kept.sum()) or _close(want, kept_sum / kept.sum()),
            f"{where} divides by the number of kept pixels: with class weights, divide by the sum of "
            "weight[target] over the kept pixels.",
            f"{where} 除以的是保留下来的像素数：有类别权重时，要除以保留像素的 weight[target] 之和。",
        )
        require(
            not _close(got, losses.sum() / WEIGHT[safe].sum()) or kept.all(),
            f"{where} still counts the ignored pixels: set their loss and their weight to 0 with the mask "
            "target != ignore_index.",
            f"{where} 仍然把被忽略的像素算了进去：用掩码 target != ignore_index 把它们的损失和权重都置为 0。",
        )
        unweighted = F.cross_entropy(logits, target, ignore_index=ignore_index)
        require(
            not _close(got, unweighted),
            f"{where} leaves out the class weights: multiply each pixel's loss by weight[target], and divide by "
            "the sum of those weights.",
            f"{where} 没有用上类别权重：每个像素的损失要乘以 weight[target]，再除以这些权重之和。",
        )
        require(
            _close(got, want),
            f"{where} gives {got.item():.4f}, expected {want.item():.4f}: take F.log_softmax over dim=1, gather "
            "the true class with target.unsqueeze(1), weight it, zero the ignored pixels, and divide the sum by "
            "the sum of the kept weights.",
            f"{where} 得到 {got.item():.4f}，应为 {want.item():.4f}：沿 dim=1 做 F.log_softmax，用 target.unsqueeze(1) "
            "gather 出真实类别，乘上权重，把被忽略的像素置零，再用总和除以保留下来的权重之和。",
        )
    passed(
        "pixel_cross_entropy agrees with F.cross_entropy on 4 batches, an all-ignored one included",
        "pixel_cross_entropy 在 4 个批上与 F.cross_entropy 一致，其中包括一个所有像素都被忽略的批。",
    )


def _pixel_cross_entropy(logits, target, weight, ignore_index):
    kept = target != ignore_index  # (N, H, W)
    safe = target.where(kept, 0)  # any valid class where ignored: masked out below
    log_probs = F.log_softmax(logits, dim=1)  # over the classes: (N, C, H, W)
    true_log_prob = log_probs.gather(1, safe.unsqueeze(1)).squeeze(1)  # (N, 1, H, W) -> (N, H, W)
    pixel_weight = weight[safe] * kept  # (N, H, W), 0 where ignored
    return -(pixel_weight * true_log_prob).sum() / pixel_weight.sum()


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


EXERCISES = [
    Exercise(
        check=check_bce_with_logits,
        reference=_bce_with_logits,
        mistakes=(
            Mistake("sigmoid, then log", _bce_sigmoid_then_log, "F.logsigmoid(z) and"),
            Mistake("sigmoid, then BCELoss (log clamped at -100)", _bce_clamped_like_bce_loss, "clamped at -100"),
            Mistake("forgets pos_weight", _bce_without_pos_weight, "leaves out pos_weight"),
            Mistake("pos_weight on both terms", _bce_pos_weight_on_both_terms, "multiplies both terms"),
            Mistake("sums over the classes", _bce_summed_over_classes, "sums over the classes"),
        ),
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
            Mistake("guards the all-ignored batch", _pixel_guarded_mean, "PyTorch returns as nan"),
        ),
        why="Each pixel is a sample whose classes sit in dimension 1; the weighted mean divides by the weights of "
        "the kept pixels, so an all-ignored batch is 0 / 0.",
        why_zh="每个像素都是一个样本，它的各个类别位于维度 1；加权平均除以保留像素的权重之和，"
        "所以全部被忽略的批是 0 / 0。",
        discuss="Why does PyTorch return nan for an all-ignored batch rather than 0, and how would you skip it?",
        discuss_zh="一个批全部被忽略时，PyTorch 为什么返回 nan 而不是 0？训练时你会怎样跳过这样的批？",
    ),
]
