"""Self-checks for lesson 04 (losses): a stable multi-label BCE with pos_weight, and the gradient of a weighted
per-pixel cross-entropy with ignore_index. Each checker compares with PyTorch itself (its loss, or its gradient by
autograd, computed outside the learner's call), and names a typical mistake by comparing the answer with what
PyTorch gives for that mistake."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch.autograd.variable import Variable

from companion.exercises import call_learner, passed, require

# The functions exercise 1 forbids, by the module that holds them: patched to raise while the learner's code runs.
_BCE_FUNCTIONS = {
    F: ("binary_cross_entropy", "binary_cross_entropy_with_logits", "multilabel_soft_margin_loss"),
    torch: ("binary_cross_entropy_with_logits",),
    torch._C._nn: ("binary_cross_entropy",),
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


def _a_tensor(got: object, where: str) -> None:
    require(
        isinstance(got, torch.Tensor),
        f"{where} should return a tensor, not {type(got).__name__}.",
        f"{where} 应该返回一个张量，而不是 {type(got).__name__}。",
    )


def _one_number(got: object, want: torch.Tensor, where: str) -> torch.Tensor:
    _a_tensor(got, where)
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
            f"{where} is {got.item()}: for logits of +-200, sigmoid rounds to exactly 0 or 1 in float32, so its "
            "log is -inf (and 0 * -inf is nan), and exp(200) overflows to inf; take the logs straight from the "
            "logits with F.logsigmoid(z) and F.logsigmoid(-z), since 1 - sigmoid(z) = sigmoid(-z).",
            f"{where} 是 {got.item()}：logit 为 ±200 时，sigmoid 在 float32 下恰好舍入成 0 或 1，取对数得 -inf"
            "（0 * -inf 是 nan），exp(200) 也会上溢成 inf；请直接从 logit 求对数：F.logsigmoid(z) 和 "
            "F.logsigmoid(-z)，因为 1 - sigmoid(z) = sigmoid(-z)。",
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
            f"{where_zh}：先对类别求了和；每个 (样本, 类别) 组合都是一道独立的二分类题，平均要对全部 N * C 个元素求。",
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
    # 2: an ignore_index that is also a class: the pixels of class 3 are ignored; float64, H != W
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


def _gradient(logits: torch.Tensor, target: torch.Tensor, **options: object) -> torch.Tensor:
    """What autograd gives for the gradient of F.cross_entropy(logits, target, **options) with respect to the
    logits."""
    z = logits.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        (grad,) = torch.autograd.grad(F.cross_entropy(z, target, **options), z)
    return grad


class _NoBackward:
    """Stands in for autograd's engine while the learner's code runs: every backward pass (backward(),
    torch.autograd.grad, torch.func) goes through the engine, and this one refuses it."""

    def __init__(self, where: str):
        self.where = where

    def __getattr__(self, name: str) -> Callable:
        def refuse(*args: object, **kwargs: object) -> None:
            require(
                False,
                f"{self.where} runs a backward pass: the exercise is to work the gradient out by hand, without "
                "autograd (backward(), torch.autograd.grad, torch.func).",
                f"{self.where} 做了一次反向传播：这道练习要你自己推导出梯度，不能用自动求导"
                "（backward()、torch.autograd.grad、torch.func）。",
            )

        return refuse


@contextmanager
def _without_autograd(where: str) -> Iterator[None]:
    engine = Variable._execution_engine
    Variable._execution_engine = _NoBackward(where)
    try:
        yield
    finally:
        Variable._execution_engine = engine


def _gradient_shape(got: object, logits: torch.Tensor, where: str) -> torch.Tensor:
    _a_tensor(got, where)
    require(
        got.shape == logits.shape,
        f"{where} has shape {tuple(got.shape)}: the gradient holds one number per logit, so it has the logits' "
        f"shape {tuple(logits.shape)}, (N, C, H, W) with the classes in dimension 1.",
        f"{where} 的形状是 {tuple(got.shape)}：梯度对每个 logit 都有一个数，所以形状与 logit 相同，是 "
        f"{tuple(logits.shape)}，即 (N, C, H, W)，类别在维度 1。",
    )
    require(
        got.dtype == logits.dtype and got.device == logits.device,
        f"{where} is a {got.dtype} tensor on {got.device}; logits.grad has the logits' dtype and device "
        f"({logits.dtype} on {logits.device}).",
        f"{where} 是位于 {got.device} 的 {got.dtype} 张量；logits.grad 的数据类型和设备与 logit 相同"
        f"（位于 {logits.device} 的 {logits.dtype}）。",
    )
    return got.detach()


def check_pixel_cross_entropy_grad(
    pixel_cross_entropy_grad: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor],
) -> None:
    """`pixel_cross_entropy_grad(logits, target, weight, ignore_index)` on (N, C, H, W) logits and (N, H, W)
    targets must return what backward() leaves in logits.grad for F.cross_entropy(logits, target, weight=weight,
    ignore_index=ignore_index), without autograd and without changing its arguments."""
    require(
        callable(pixel_cross_entropy_grad),
        "Pass the function itself: check_pixel_cross_entropy_grad(pixel_cross_entropy_grad), without ().",
        "把函数本身传进去：check_pixel_cross_entropy_grad(pixel_cross_entropy_grad)，不要加 ()。",
    )
    for logits, target, weight, ignore_index in _pixel_cases():
        want = _gradient(logits, target, weight=weight, ignore_index=ignore_index)
        where = (
            f"pixel_cross_entropy_grad(<{str(logits.dtype)[6:]} logits {tuple(logits.shape)}>, <target>, weight, "
            f"{ignore_index})"
        )
        with _without_autograd(where):
            got = call_learner(pixel_cross_entropy_grad, logits.clone(), target.clone(), weight.clone(), ignore_index)
        got = _gradient_shape(got, logits, where)
        kept = target.ne(ignore_index)  # (N, H, W): the pixels that count
        if not kept.any():
            require(
                bool(got.isfinite().all()),
                f"{where} holds nan or inf, but every pixel is ignored: the loss no longer depends on the logits, "
                "and PyTorch's backward gives zeros (the section on a batch where every target is ignored). The "
                "divisor, the sum of the kept pixels' weights, is 0 here: guard it.",
                f"{where} 里有 nan 或 inf，但所有像素都被忽略了：损失不再依赖 logit，PyTorch 的反向传播给出全 0"
                "（见讲标签全被忽略的批的那一节）。这里的分母，即保留像素的权重之和，等于 0：需要加以防范。",
            )
            require(
                bool((got == 0).all()),
                f"{where} is not all zeros, but every pixel is ignored: no logit changes the loss, so PyTorch's "
                "gradient is 0 everywhere.",
                f"{where} 不全是 0，但所有像素都被忽略了：哪个 logit 都不影响损失，所以 PyTorch 的梯度处处为 0。",
            )
            continue
        require(
            bool(got.isfinite().all()),
            f"{where} holds nan or inf, but PyTorch's gradient is finite: two pixels have logits of +-200, where "
            "exp overflows float32 (inf / inf is nan); torch.softmax subtracts each pixel's largest logit first.",
            f"{where} 里有 nan 或 inf，而 PyTorch 的梯度是有限的：有两个像素的 logit 是 ±200，exp 在 float32 下"
            "上溢（inf / inf 是 nan）；torch.softmax 会先减去每个像素最大的 logit。",
        )
        if _agree(got, want):
            continue
        where_zh = f"{where} 的结果不对"
        where = f"{where} differs from PyTorch's gradient"
        # Each mistake, as autograd computes it for PyTorch's own losses (outside the learner's call).
        require(
            not _agree(got, -want),
            f"{where}: the sign is wrong; raising the true class's logit lowers the loss, so its gradient is "
            "negative there.",
            f"{where_zh}：符号反了；调高真实类别的 logit 会让损失变小，所以那里的梯度是负的。",
        )
        require(
            not _agree(got, _gradient(logits, target.where(target >= 0, -100), weight=weight)),
            f"{where}: it never reads the argument ignore_index; it is {ignore_index} here, a class number, so "
            "the pixels of that class are the ignored ones, not those of -100 or of a negative target.",
            f"{where_zh}：没有用到参数 ignore_index；它在这里是 {ignore_index}，本身就是一个类别编号，"
            "所以被忽略的是这个类别的像素，而不是 -100 或负数标签的像素。",
        )
        require(
            bool((got.movedim(1, -1)[~kept] == 0).all()),
            f"{where}: the ignored pixels (target == {ignore_index}) have a gradient that is not 0; they drop out "
            "of the loss, so no logit of theirs changes it.",
            f"{where_zh}：被忽略的像素（target == {ignore_index}）梯度不是 0；它们不在损失里，"
            "所以它们的 logit 怎么变都不影响损失。",
        )
        summed = _gradient(logits, target, weight=weight, ignore_index=ignore_index, reduction="sum")
        require(
            not _agree(got, summed),
            f"{where}: it is the gradient of the sum of the pixels' losses; F.cross_entropy takes their weighted "
            "mean, the sum divided by the sum of the kept pixels' weight[target].",
            f"{where_zh}：这是各像素损失之和的梯度；F.cross_entropy 取的是加权平均，"
            "即总和除以保留像素的 weight[target] 之和。",
        )
        for count, what, what_zh in [
            (logits.shape[0], "N, the batch size", "N，也就是批大小"),
            (target.numel(), "every pixel, the ignored ones included", "全部像素数（连被忽略的也算上）"),
            (kept.sum(), "the number of kept pixels", "保留的像素数"),
        ]:
            require(
                not _agree(got, summed / count),
                f"{where}: it divides by {what}; each pixel is a sample, and with class weights the mean divides "
                "by the sum of weight[target] over the kept pixels.",
                f"{where_zh}：除以的是{what_zh}；每个像素都是一个样本，有类别权重时，平均值除以的是"
                "保留像素的 weight[target] 之和。",
            )
        require(
            not _agree(got, _gradient(logits, target, ignore_index=ignore_index)),
            f"{where}: it leaves out the class weights; each kept pixel's loss is multiplied by weight[target], and "
            "the mean divides by the sum of those weights.",
            f"{where_zh}：没有用上类别权重；每个保留像素的损失都要乘以 weight[target]，平均值除以这些权重之和。",
        )
        row_sums = got.sum(dim=1)  # (N, H, W): PyTorch's are 0 (up to rounding)
        require(
            _agree(row_sums, torch.zeros_like(row_sums)),
            f"{where}: at some pixels it does not sum to 0 over the {logits.shape[1]} classes, as PyTorch's does: "
            "the softmax over dimension 1 (the classes) sums to 1, the one-hot target too, and one number, the "
            "pixel's weight[target], scales the whole loss of that pixel.",
            f"{where_zh}：有些像素的梯度在 {logits.shape[1]} 个类别上加起来不等于 0，而 PyTorch 的等于 0："
            "沿维度 1（类别）的 softmax 之和为 1，独热标签之和也是 1，而该像素的整个损失都乘以同一个数，"
            "即它的 weight[target]。",
        )
        require(
            False,
            f"{where}: the loss is the sum over the kept pixels of weight[y] * -log p_y (y the pixel's class, p the "
            "softmax over dimension 1), divided by the sum of their weight[y], a constant for the gradient; "
            "differentiate one pixel's term with respect to its C logits.",
            f"{where_zh}：损失是各保留像素的 weight[y] * -log p_y 之和（y 是该像素的类别，p 是沿维度 1 的 softmax），"
            "再除以它们的 weight[y] 之和，这个和对梯度来说是常数；请对一个像素的这一项关于它的 C 个 logit 求导。",
        )
    passed(
        "pixel_cross_entropy_grad agrees with PyTorch's backward on 4 batches, an all-ignored one included",
        "pixel_cross_entropy_grad 在 4 个批上与 PyTorch 的反向传播一致，其中包括一个所有像素都被忽略的批。",
    )
