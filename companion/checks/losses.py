"""Self-checks for lesson 04 (losses): a stable multi-label BCE with pos_weight, and a weighted per-pixel
cross-entropy with ignore_index. Each checker compares with PyTorch's own loss (computed before the learner's code
runs), and names a typical mistake by comparing the answer with what PyTorch gives for that mistake."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from companion.exercises import call_learner, passed, require

# The functions an exercise forbids, by the module that holds them: patched to raise while the learner's code runs.
_BCE_FUNCTIONS = {
    F: ("binary_cross_entropy", "binary_cross_entropy_with_logits", "multilabel_soft_margin_loss"),
    torch: ("binary_cross_entropy_with_logits",),
    torch._C._nn: ("binary_cross_entropy",),
}
_LOSS_FUNCTIONS = {
    F: tuple(name for name in dir(F) if name.endswith("_loss") or "entropy" in name or name == "kl_div"),
    torch: ("binary_cross_entropy_with_logits", "poisson_nll_loss"),
    torch._C._nn: ("binary_cross_entropy", "cross_entropy_loss", "nll_loss", "nll_loss2d", "nll_loss_nd"),
}


@contextmanager
def _forbidden(functions: dict, where: str, hint: str, hint_zh: str) -> Iterator[None]:
    """While the learner's code runs, each listed function raises WrongAnswer naming itself."""
    saved = {(module, name): getattr(module, name) for module, names in functions.items() for name in names}

    def refuse(name: str) -> Callable:
        def call(*args: object, **kwargs: object) -> None:
            require(False, f"{where} calls {name}: {hint}", f"{where} 调用了 {name}：{hint_zh}")

        return call

    for module, name in saved:
        setattr(module, name, refuse(name))
    try:
        yield
    finally:
        for (module, name), function in saved.items():
            setattr(module, name, function)


def _agree(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Equal with the tolerance of want's dtype (torch.testing.assert_close's defaults), nan equal to nan."""
    try:
        torch.testing.assert_close(got, want, equal_nan=True, check_dtype=False)
    except AssertionError:
        return False
    return True


def _two(got: torch.Tensor, want: torch.Tensor) -> tuple[str, str]:
    """Both numbers with as many digits as it takes to see that they differ."""
    a, b = got.item(), want.item()
    for digits in range(4, 18):
        if f"{a:.{digits}g}" != f"{b:.{digits}g}":
            break
    return f"{a:.{digits}g}", f"{b:.{digits}g}"


def _one_number(got: object, want: torch.Tensor, where: str) -> torch.Tensor:
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
    require(
        got.dtype == want.dtype and got.device == want.device,
        f"{where} is a {got.dtype} tensor on {got.device}; PyTorch's loss is {want.dtype} on {want.device}, like the "
        "logits: compute in the logits' dtype and on their device.",
        f"{where} 是位于 {got.device} 的 {got.dtype} 张量；PyTorch 的损失和 logit 一样是位于 {want.device} 的 "
        f"{want.dtype}：请用 logit 的数据类型、在它们所在的设备上计算。",
    )
    return got


# Exercise 1 ---------------------------------------------------------------------------------------------------------


def _bce_cases() -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(41)
    logits = torch.randn(6, 4, generator=generator) * 2
    target = (torch.rand(6, 4, generator=generator) < 0.4).float()
    wide = torch.randn(3, 5, generator=generator, dtype=torch.float64).T  # (5, 3), not contiguous
    return [
        # negatives in classes whose pos_weight is not 1, so a pos_weight on the wrong term shows
        (
            torch.tensor([[2.0, -1.0, 0.5], [0.3, 1.5, -2.0]]),
            torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]),
            torch.tensor([2.0, 3.0, 0.5]),
        ),
        (logits, target, torch.tensor([1.0, 3.0, 0.5, 2.0])),
        # Confidently wrong: sigmoid rounds to exactly 0 or 1 in float32, so log(sigmoid) is -inf.
        (
            torch.tensor([[-200.0, 200.0], [150.0, -150.0], [3.0, -2.0]]),
            torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
            torch.tensor([2.0, 1.0]),
        ),
        (wide * 3, (wide > 0.2).double(), torch.tensor([0.5, 4.0, 1.5], dtype=torch.float64)),
    ]


def check_bce_with_logits(bce_with_logits: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """`bce_with_logits(logits, target, pos_weight)` must equal F.binary_cross_entropy_with_logits(...,
    pos_weight=pos_weight), also for logits of hundreds, without calling a BCE function."""
    require(
        callable(bce_with_logits),
        "Pass the function itself: check_bce_with_logits(bce_with_logits), without ().",
        "把函数本身传进去：check_bce_with_logits(bce_with_logits)，不要加 ()。",
    )
    for logits, target, pos_weight in _bce_cases():
        want = F.binary_cross_entropy_with_logits(logits, target, pos_weight=pos_weight)
        where = (
            f"bce_with_logits(<{str(logits.dtype)[6:]} logits {tuple(logits.shape)}>, <target>, "
            f"pos_weight={pos_weight.tolist()})"
        )
        with _forbidden(
            _BCE_FUNCTIONS,
            where,
            "the exercise is to build the loss yourself, without any BCE function (F.binary_cross_entropy, "
            "F.binary_cross_entropy_with_logits, nn.BCELoss, nn.BCEWithLogitsLoss).",
            "这道练习要你自己写出这个损失，不能调用任何 BCE 函数（F.binary_cross_entropy、"
            "F.binary_cross_entropy_with_logits、nn.BCELoss、nn.BCEWithLogitsLoss）。",
        ):
            got = call_learner(bce_with_logits, logits.clone(), target.clone(), pos_weight.clone())
        got = _one_number(got, want, where)
        require(
            bool(got.isfinite()),
            f"{where} is {got.item()}: for logits of +-200, sigmoid rounds to exactly 0 or 1 in float32 and its "
            "log is -inf (0 * -inf is nan); take the logs straight from the logits with F.logsigmoid(z) and "
            "F.logsigmoid(-z).",
            f"{where} 是 {got.item()}：logit 为 ±200 时，sigmoid 在 float32 下恰好舍入成 0 或 1，取对数得 -inf"
            "（0 * -inf 是 nan）；请直接从 logit 求对数：F.logsigmoid(z) 和 F.logsigmoid(-z)。",
        )
        if _agree(got, want):
            continue
        shown, expected = _two(got, want)
        where, where_zh = f"{where} gives {shown}, expected {expected}", f"{where} 得到 {shown}，应为 {expected}"
        require(
            not _agree(got, -want),
            f"{where}: the sign is wrong; the loss is minus the log-probability, a positive number.",
            f"{where_zh}：符号反了；损失是对数概率取负，是个正数。",
        )
        require(
            not _agree(got, F.binary_cross_entropy_with_logits(logits, target)),
            f"{where}: it leaves out pos_weight; the term of the positive targets, y * log(sigmoid(z)), is "
            "multiplied by pos_weight (one number per class).",
            f"{where_zh}：没有用上 pos_weight；正标签那一项 y * log(sigmoid(z)) 要乘以 pos_weight（每个类别一个数）。",
        )
        # pos_weight on the term of the negatives: the same loss with the roles of y and 1 - y swapped
        require(
            not _agree(got, F.binary_cross_entropy_with_logits(-logits, 1 - target, pos_weight=pos_weight)),
            f"{where}: pos_weight sits on the term of the negative targets (y = 0); it weights the positives, "
            "y = 1, only.",
            f"{where_zh}：pos_weight 乘在了负标签（y = 0）那一项上；它只加权正标签（y = 1）。",
        )
        per_element = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
        require(
            not _agree(got, (pos_weight * per_element).mean()),
            f"{where}: it multiplies both terms by pos_weight; pos_weight weights only the term of the positive "
            "targets (y = 1), and the negatives keep weight 1.",
            f"{where_zh}：把两项都乘上了 pos_weight；pos_weight 只加权正标签（y = 1）那一项，负标签的权重仍是 1。",
        )
        weighted = F.binary_cross_entropy_with_logits(logits, target, pos_weight=pos_weight, reduction="none")
        require(
            not _agree(got, weighted.sum(dim=1).mean()),
            f"{where}: it sums over the classes; every (sample, class) pair is its own yes/no question, and the "
            "mean runs over all N * C elements.",
            f"{where_zh}：先对类别求了和；每个 (样本, 类别) 组合都是一道独立的是非题，平均要对全部 N * C 个元素求。",
        )
        sigmoid = torch.sigmoid(logits)
        log_clamped = sigmoid.log().clamp(min=-100), (1 - sigmoid).log().clamp(min=-100)
        clamped = -(pos_weight * target * log_clamped[0] + (1 - target) * log_clamped[1]).mean()
        require(
            not _agree(got, clamped),
            f"{where}: for logits of +-200, sigmoid rounds to exactly 0 or 1 in float32, and a log clamped at "
            "-100 (as BCELoss does) cuts the loss short; take the logs straight from the logits with F.logsigmoid.",
            f"{where_zh}：logit 为 ±200 时，sigmoid 在 float32 下恰好舍入成 0 或 1，把对数截断在 -100"
            "（BCELoss 就是这样做的）会让损失偏小；请用 F.logsigmoid 直接从 logit 求对数。",
        )
        require(
            False,
            f"{where}: the loss of each element is -(pos_weight * y * log(sigmoid(z)) + (1 - y) * "
            "log(1 - sigmoid(z))), and the result is their mean over all N * C elements.",
            f"{where_zh}：每个元素的损失是 -(pos_weight * y * log(sigmoid(z)) + (1 - y) * log(1 - sigmoid(z)))，"
            "结果是它们对全部 N * C 个元素的平均值。",
        )
    passed(
        "bce_with_logits agrees with F.binary_cross_entropy_with_logits, logits of 200 included",
        "bce_with_logits 与 F.binary_cross_entropy_with_logits 一致，logit 高达 200 时也一样。",
    )


# Exercise 2 ---------------------------------------------------------------------------------------------------------


def _pixel_cases() -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]]:
    """Four batches, built fresh for every check: (logits, target, weight, ignore_index)."""
    generator = torch.Generator().manual_seed(42)

    def weight(dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.tensor([0.2, 1.0, 3.0, 0.5], dtype=dtype)

    def labels(shape: tuple[int, ...], ignore_index: int, fraction: float) -> torch.Tensor:
        target = torch.randint(0, 4, shape, generator=generator)
        return target.masked_fill(torch.rand(shape, generator=generator) < fraction, ignore_index)

    # 1: the usual -100, a third of the pixels ignored, logits in channels-last memory order
    first = torch.randn(2, 4, 3, 3, generator=generator).contiguous(memory_format=torch.channels_last)
    # 2: an ignore_index that is also a class: the pixels of class 3 are ignored; float64
    second = labels((2, 3, 4), 3, 0.0)
    assert (second == 3).any() and (second != 3).any(), "case 2 must hold pixels of class 3 and others"
    # 3: nothing ignored, and two pixels whose true class lies 400 below the largest logit
    third = torch.randn(3, 4, 2, 2, generator=generator)
    third[0, :, 0, 0] = torch.tensor([-200.0, 200.0, 0.0, 1.0])
    third[2, :, 1, 1] = torch.tensor([1.0, 0.0, 200.0, -200.0])
    third_target = labels((3, 2, 2), -100, 0.0)
    third_target[0, 0, 0], third_target[2, 1, 1] = 0, 3
    return [
        (first, labels((2, 3, 3), -100, 0.3), weight(), -100),
        (torch.randn(2, 4, 3, 4, generator=generator, dtype=torch.float64) * 3, second, weight(torch.float64), 3),
        (third, third_target, weight(), -100),
        (torch.randn(1, 4, 2, 2, generator=generator), torch.full((1, 2, 2), -1), weight(), -1),  # all ignored
    ]


def check_pixel_cross_entropy(
    pixel_cross_entropy: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor],
) -> None:
    """`pixel_cross_entropy(logits, target, weight, ignore_index)` on (N, C, H, W) logits and (N, H, W) targets
    must equal F.cross_entropy(logits, target, weight=weight, ignore_index=ignore_index), nan for a batch where every
    pixel is ignored, without calling a loss function or changing its arguments."""
    require(
        callable(pixel_cross_entropy),
        "Pass the function itself: check_pixel_cross_entropy(pixel_cross_entropy), without ().",
        "把函数本身传进去：check_pixel_cross_entropy(pixel_cross_entropy)，不要加 ()。",
    )
    for logits, target, weight, ignore_index in _pixel_cases():
        want = F.cross_entropy(logits, target, weight=weight, ignore_index=ignore_index)
        where = (
            f"pixel_cross_entropy(<{str(logits.dtype)[6:]} logits {tuple(logits.shape)}>, <target>, weight, "
            f"{ignore_index})"
        )
        with _forbidden(
            _LOSS_FUNCTIONS,
            where,
            "the exercise is to compute the loss yourself, without F.cross_entropy, F.nll_loss or any other loss "
            "function (nor their nn modules).",
            "这道练习要你自己算出这个损失，不能调用 F.cross_entropy、F.nll_loss 或其他任何损失函数"
            "（也不能用它们对应的 nn 模块）。",
        ):
            got = call_learner(pixel_cross_entropy, logits.clone(), target.clone(), weight.clone(), ignore_index)
        got = _one_number(got, want, where)
        kept = target.ne(ignore_index)  # (N, H, W): the pixels that count
        if not kept.any():
            require(
                bool(got.isnan()) or got.item() != 0,
                f"{where} is 0, but every pixel is ignored: the weighted mean is 0 / 0, and the exercise asks for "
                "nan there, as PyTorch returns; a guard that skips such a batch belongs in the training loop, "
                "not in this function.",
                f"{where} 是 0，但所有像素都被忽略了：加权平均是 0 / 0，练习要求这时像 PyTorch 一样返回 nan；"
                "跳过这种批的防护应写在训练循环里，而不是写在这个函数里。",
            )
            require(
                bool(got.isnan()),
                f"{where} is {got.item()}, but every pixel is ignored: nothing is left to average, and PyTorch "
                "returns nan (0 / 0).",
                f"{where} 是 {got.item()}，但所有像素都被忽略了：没有可以平均的像素，PyTorch 返回 nan（0 / 0）。",
            )
            continue
        require(
            bool(got.isfinite()),
            f"{where} is {got.item()}, but PyTorch's loss is finite: a logit 400 below its pixel's largest one has "
            "a softmax that rounds to exactly 0, whose log is -inf; take log-probabilities with F.log_softmax, not "
            "the log of a softmax.",
            f"{where} 是 {got.item()}，而 PyTorch 的损失是有限的：比该像素最大 logit 小 400 的那个 logit，"
            "softmax 恰好舍入成 0，取对数就是 -inf；请用 F.log_softmax 求对数概率，不要对 softmax 取对数。",
        )
        if _agree(got, want):
            continue
        shown, expected = _two(got, want)
        where, where_zh = f"{where} gives {shown}, expected {expected}", f"{where} 得到 {shown}，应为 {expected}"
        # Each mistake, as PyTorch computes it (outside the learner's call, so the loss functions work here).
        wrong_dim = F.nll_loss(F.log_softmax(logits, dim=-1), target, weight=weight, ignore_index=ignore_index)
        require(
            not _agree(got, wrong_dim),
            f"{where}: it takes log_softmax over the last dimension; the classes are dimension 1 of (N, C, H, W).",
            f"{where_zh}：在最后一个维度上做了 log_softmax；在 (N, C, H, W) 中类别是维度 1。",
        )
        negatives_only = F.cross_entropy(logits, target.where(target >= 0, -100), weight=weight)
        require(
            not _agree(got, negatives_only),
            f"{where}: it never reads the argument ignore_index; it is {ignore_index} here, a class number, so "
            "the pixels of that class must be left out, not -100 or the negative targets.",
            f"{where_zh}：没有用到参数 ignore_index；它在这里是 {ignore_index}，本身就是一个类别编号，"
            "所以要去掉的是这个类别的像素，而不是 -100 或负数标签。",
        )
        summed = F.cross_entropy(logits, target, weight=weight, ignore_index=ignore_index, reduction="sum")
        require(
            not _agree(got, summed / target.numel()),
            f"{where}: it divides by every pixel, the ignored ones included; ignored pixels count neither in the "
            "sum nor in the divisor.",
            f"{where_zh}：除以的是全部像素数，被忽略的像素也算进去了；被忽略的像素既不进总和，也不进分母。",
        )
        require(
            not _agree(got, summed / kept.sum()),
            f"{where}: it divides by the number of kept pixels; with class weights, the divisor is the sum of "
            "weight[target] over the kept pixels.",
            f"{where_zh}：除以的是保留下来的像素数；有类别权重时，分母是保留像素的 weight[target] 之和。",
        )
        require(
            not _agree(got, F.cross_entropy(logits, target.clamp(0, logits.shape[1] - 1), weight=weight)),
            f"{where}: it still counts the ignored pixels, as whatever class stands in for them; their loss and "
            "their weight must both drop out.",
            f"{where_zh}：仍然把被忽略的像素算了进去（当成了替它们填上的那个类别）；它们的损失和权重都必须去掉。",
        )
        require(
            not _agree(got, F.cross_entropy(logits, target, ignore_index=ignore_index)),
            f"{where}: it leaves out the class weights; each pixel's loss is multiplied by weight[target], and the "
            "divisor is the sum of those weights.",
            f"{where_zh}：没有用上类别权重；每个像素的损失要乘以 weight[target]，分母是这些权重之和。",
        )
        require(
            False,
            f"{where}: each kept pixel's loss is -weight[c] * log p_c for its class c, with p the softmax over "
            "the classes; the mean divides their sum by the sum of the kept pixels' weight[c].",
            f"{where_zh}：每个保留像素的损失是 -weight[c] * log p_c（c 是它的类别，p 是对各类别的 softmax）；"
            "平均值是它们的总和除以保留像素的 weight[c] 之和。",
        )
    passed(
        "pixel_cross_entropy agrees with F.cross_entropy on 4 batches, an all-ignored one included",
        "pixel_cross_entropy 在 4 个批上与 F.cross_entropy 一致，其中包括一个所有像素都被忽略的批。",
    )
