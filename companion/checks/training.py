"""Self-checks for lesson 08: one optimizer step from micro-batches of unequal size, and predicting mid-training."""

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from companion.exercises import Exercise, Mistake, passed, require

Batch = tuple[torch.Tensor, torch.Tensor]
# Micro-batches of unequal size (8, 8, 4), then (6, 6, 6, 2): dividing each loss by their number is wrong here.
SIZES = ((8, 8, 4), (6, 6, 6, 2))
TOLERANCE = 1e-6  # summing a batch in pieces rounds differently from summing it whole


def check_accumulated_step(accumulated_step: Callable) -> None:
    """`accumulated_step(model, optimizer, loss_fn, micro_batches)`: one step with the whole batch's gradient."""
    require(
        callable(accumulated_step),
        "Pass the function itself: check_accumulated_step(accumulated_step), without ().",
        "把函数本身传进去：check_accumulated_step(accumulated_step)，不要加 ()。",
    )
    model, optimizer, calls = _accumulation_case()
    steps = []
    optimizer.register_step_post_hook(lambda *_: steps.append(1))
    want = _after_full_batch_steps(calls)
    for call, micro_batches in enumerate(calls):
        steps.clear()
        result = accumulated_step(model, optimizer, nn.CrossEntropyLoss(), micro_batches)
        require(
            isinstance(result, float),
            f"accumulated_step returned {type(result).__name__}; return a Python float (.item() of each "
            "micro-batch's loss), so no graph is kept alive.",
            f"accumulated_step 返回的是 {type(result).__name__}；要返回 Python 浮点数（对每个小批量的损失调用 "
            ".item()），这样就不会留着计算图。",
        )
        require(
            len(steps) == 1,
            f"One call made {len(steps)} optimizer steps: accumulate the gradients of all micro-batches, then "
            "call optimizer.step() once, after the loop.",
            f"调用一次做了 {len(steps)} 次优化器更新：先把所有小批量的梯度累积起来，"
            "循环结束后再调用一次 optimizer.step()。",
        )
        got = [p.detach().clone() for p in model.parameters()]
        if not _close(got, want["parameters"][call]):
            _name_the_mistake(got, call, calls)
        require(
            abs(result - want["losses"][call]) < TOLERANCE,
            f"accumulated_step returned {result:.4f}, but the mean loss per sample over the whole batch is "
            f"{want['losses'][call]:.4f}: add up each micro-batch's loss weighted by its share of the samples.",
            f"accumulated_step 返回了 {result:.4f}，但整批数据上每个样本的平均损失是 {want['losses'][call]:.4f}："
            "把每个小批量的损失按它所占的样本比例加权后再相加。",
        )
    passed(
        "one step per call, with the gradient of the whole batch, even when the micro-batches differ in size",
        "每次调用只更新一次，用的是整批数据的梯度，即使各个小批量大小不同也是如此。",
    )


def check_predict(predict: Callable) -> None:
    """`predict(model, inputs)`: class indices from evaluation mode, without autograd, the model's mode restored."""
    require(
        callable(predict),
        "Pass the function itself: check_predict(predict), without ().",
        "把函数本身传进去：check_predict(predict)，不要加 ()。",
    )
    model, inputs = _predict_case()
    want = model.eval()(inputs).argmax(dim=1)  # (N,)
    model.train()
    buffers = [b.clone() for b in model.buffers()]
    grad_modes = []
    model.register_forward_hook(lambda module, args, output: grad_modes.append(torch.is_grad_enabled()))
    with torch.random.fork_rng(devices=[]):  # an answer that leaves Dropout on draws random numbers
        torch.manual_seed(0)
        got = predict(model, inputs)
    require(
        isinstance(got, torch.Tensor),
        f"predict should return a tensor, not {type(got).__name__}.",
        f"predict 应该返回一个张量，而不是 {type(got).__name__}。",
    )
    require(
        got.shape == want.shape and got.dtype == torch.int64,
        f"predict returned shape {tuple(got.shape)} and {got.dtype}; return one class index per sample: "
        "outputs.argmax(dim=1).",
        f"predict 返回的形状是 {tuple(got.shape)}、数据类型是 {got.dtype}；"
        "每个样本应返回一个类别索引：outputs.argmax(dim=1)。",
    )
    require(
        all(torch.equal(a, b) for a, b in zip(buffers, model.buffers(), strict=True)),
        "BatchNorm's running statistics changed: the forward pass ran in training mode; call model.eval() first.",
        "BatchNorm 的滑动统计量变了：前向传播是在训练模式下运行的；要先调用 model.eval()。",
    )
    require(
        torch.equal(got, want),
        "The predictions differ from the model's evaluation-mode predictions: call model.eval() before the "
        "forward pass, so Dropout keeps every value.",
        "预测结果和模型在评估模式下的预测不一致：要在前向传播之前调用 model.eval()，这样 Dropout 才会保留所有数值。",
    )
    require(
        bool(grad_modes) and not any(grad_modes),
        "The forward pass recorded a graph for autograd: run it inside `with torch.no_grad():`.",
        "前向传播为自动求导记录了计算图：要把它放在 `with torch.no_grad():` 里面运行。",
    )
    require(
        model.training,
        "predict left the model in evaluation mode, so training would go on without Dropout: remember "
        "was_training = model.training, and call model.train(was_training) before returning.",
        "predict 把模型留在了评估模式，接下来的训练就没有 Dropout 了：先记下 was_training = model.training，"
        "返回之前调用 model.train(was_training)。",
    )
    model.eval()  # called again, on a model already in evaluation mode (e.g. during a final test)
    predict(model, inputs)
    require(
        not model.training,
        "Called on a model in evaluation mode, predict handed it back in training mode: restore the mode you "
        "found, model.train(was_training), not always model.train().",
        "对一个处于评估模式的模型调用 predict，返回时它却变成了训练模式：要恢复调用时的模式，"
        "model.train(was_training)，而不是一律调用 model.train()。",
    )
    passed(
        "evaluation mode, no graph, and the model is back in the mode it was in, whichever that was",
        "在评估模式下、不记录计算图地做预测，并且模型回到了调用前的模式，无论那是哪一种。",
    )


# The cases the checkers build, and the references they compare with.


def _accumulation_case() -> tuple[nn.Module, torch.optim.Optimizer, list[list[Batch]]]:
    """A small model, its SGD optimizer with momentum, and two calls' micro-batches; global RNG untouched."""
    generator = torch.Generator().manual_seed(5)
    with torch.random.fork_rng(devices=[]):  # building layers draws default weights from the global generator
        model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
    calls = [
        [(torch.randn(n, 4, generator=generator), torch.randint(0, 3, (n,), generator=generator)) for n in sizes]
        for sizes in SIZES
    ]
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), calls


def _after_full_batch_steps(calls: list[list[Batch]], variant: Callable | None = None) -> dict[str, list]:
    """Parameters and mean losses after each call of `variant` (default: the reference) on a fresh case."""
    model, optimizer, _ = _accumulation_case()
    parameters, losses = [], []
    for micro_batches in calls:
        losses.append((variant or _reference_accumulated_step)(model, optimizer, F.cross_entropy, micro_batches))
        parameters.append([p.detach().clone() for p in model.parameters()])
    return {"parameters": parameters, "losses": losses}


def _close(got: list[torch.Tensor], want: list[torch.Tensor]) -> bool:
    return all(torch.allclose(a, b, atol=TOLERANCE, rtol=0) for a, b in zip(got, want, strict=True))


def _name_the_mistake(got: list[torch.Tensor], call: int, calls: list[list[Batch]]) -> None:
    """The parameters differ from the reference: find the typical mistake that gives these parameters."""
    for variant, hint, hint_zh in (
        (
            _divides_by_the_number_of_micro_batches,
            "Each micro-batch's loss was divided by the number of micro-batches, but these micro-batches differ "
            "in size: weight each loss by len(targets) / (samples in all micro-batches).",
            "每个小批量的损失都除以了小批量的个数，可这些小批量大小不同："
            "要按 len(targets) / （所有小批量的样本总数）给每个损失加权。",
        ),
        (
            _sums_without_weights,
            "The gradients were added up without scaling, so the step is as large as the number of micro-batches "
            "times the right one: weight each loss by its share of the samples before backward().",
            "梯度直接相加而没有缩放，更新步长就成了正确值的若干倍（小批量有几个就是几倍）："
            "在 backward() 之前，按每个小批量所占的样本比例给损失加权。",
        ),
        (
            _zero_grad_inside_the_loop,
            "Only the last micro-batch's gradient reached the step: zero_grad() inside the loop erases the others. "
            "Call optimizer.zero_grad() once, before the first micro-batch.",
            "只有最后一个小批量的梯度用在了更新上：循环里的 zero_grad() 把其他小批量的梯度都清掉了。"
            "要在第一个小批量之前调用一次 optimizer.zero_grad()。",
        ),
        (
            _never_zeroes,
            "The first call is right, the second is not: the gradients of the last call are still in .grad. "
            "Call optimizer.zero_grad() at the start of each call.",
            "第一次调用正确，第二次不对：上一次调用的梯度还留在 .grad 里。"
            "每次调用开始时都要先调用 optimizer.zero_grad()。",
        ),
    ):
        require(not _close(got, _after_full_batch_steps(calls, variant)["parameters"][call]), hint, hint_zh)
    require(
        False,
        "After the step the parameters differ from one step on the whole batch: zero_grad once, then for each "
        "micro-batch forward, loss weighted by its share of the samples, backward; then one optimizer.step().",
        "更新之后的参数和在整批数据上走一步的结果不同：先调用一次 zero_grad，然后对每个小批量做前向传播、"
        "按样本比例加权损失、backward；最后调用一次 optimizer.step()。",
    )


def _predict_case() -> tuple[nn.Module, torch.Tensor]:
    """A model with BatchNorm and Dropout (in training mode, as during training) and a batch of inputs."""
    generator = torch.Generator().manual_seed(6)
    with torch.random.fork_rng(devices=[]):
        model = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator))
        model[1].running_mean.copy_(torch.randn(16, generator=generator))
        model[1].running_var.copy_(torch.rand(16, generator=generator) + 0.5)
    return model.train(), torch.randn(12, 4, generator=generator)


# Reference answers and the typical mistakes (tests/test_checks.py runs every row; the answer key prints them).


def _reference_accumulated_step(model, optimizer, loss_fn, micro_batches) -> float:
    total = sum(len(targets) for _, targets in micro_batches)
    optimizer.zero_grad()
    mean_loss = 0.0
    for inputs, targets in micro_batches:
        loss = loss_fn(model(inputs), targets) * len(targets) / total  # this micro-batch's share of the mean
        loss.backward()  # adds to .grad
        mean_loss += loss.item()
    optimizer.step()
    return mean_loss


def _divides_by_the_number_of_micro_batches(model, optimizer, loss_fn, micro_batches) -> float:
    optimizer.zero_grad()
    mean_loss = 0.0
    for inputs, targets in micro_batches:
        loss = loss_fn(model(inputs), targets) / len(micro_batches)
        loss.backward()
        mean_loss += loss.item()
    optimizer.step()
    return mean_loss


def _sums_without_weights(model, optimizer, loss_fn, micro_batches) -> float:
    optimizer.zero_grad()
    losses = []
    for inputs, targets in micro_batches:
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        losses.append(loss.item())
    optimizer.step()
    return sum(losses) / len(losses)


def _zero_grad_inside_the_loop(model, optimizer, loss_fn, micro_batches) -> float:
    total = sum(len(targets) for _, targets in micro_batches)
    mean_loss = 0.0
    for inputs, targets in micro_batches:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets) * len(targets) / total
        loss.backward()
        mean_loss += loss.item()
    optimizer.step()
    return mean_loss


def _never_zeroes(model, optimizer, loss_fn, micro_batches) -> float:
    total = sum(len(targets) for _, targets in micro_batches)
    mean_loss = 0.0
    for inputs, targets in micro_batches:
        loss = loss_fn(model(inputs), targets) * len(targets) / total
        loss.backward()
        mean_loss += loss.item()
    optimizer.step()
    return mean_loss


def _step_per_micro_batch(model, optimizer, loss_fn, micro_batches) -> float:
    total = sum(len(targets) for _, targets in micro_batches)
    mean_loss = 0.0
    for inputs, targets in micro_batches:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets) * len(targets) / total
        loss.backward()
        optimizer.step()
        mean_loss += loss.item()
    return mean_loss


def _returns_the_loss_tensor(model, optimizer, loss_fn, micro_batches):
    total = sum(len(targets) for _, targets in micro_batches)
    optimizer.zero_grad()
    mean_loss = 0.0
    for inputs, targets in micro_batches:
        loss = loss_fn(model(inputs), targets) * len(targets) / total
        loss.backward()
        mean_loss = mean_loss + loss.detach()
    optimizer.step()
    return mean_loss


def _returns_the_last_loss(model, optimizer, loss_fn, micro_batches) -> float:
    total = sum(len(targets) for _, targets in micro_batches)
    optimizer.zero_grad()
    for inputs, targets in micro_batches:
        loss = loss_fn(model(inputs), targets)
        (loss * len(targets) / total).backward()
    optimizer.step()
    return loss.item()


def _reference_predict(model, inputs):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        classes = model(inputs).argmax(dim=1)
    model.train(was_training)
    return classes


def _no_eval(model, inputs):
    with torch.no_grad():
        return model(inputs).argmax(dim=1)


def _no_no_grad(model, inputs):
    was_training = model.training
    model.eval()
    classes = model(inputs).argmax(dim=1)
    model.train(was_training)
    return classes


def _left_in_eval_mode(model, inputs):
    model.eval()
    with torch.no_grad():
        return model(inputs).argmax(dim=1)


def _always_ends_in_training_mode(model, inputs):
    model.eval()
    with torch.no_grad():
        classes = model(inputs).argmax(dim=1)
    model.train()
    return classes


def _returns_logits(model, inputs):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        logits = model(inputs)
    model.train(was_training)
    return logits


def _eval_after_the_forward_pass(model, inputs):
    with torch.no_grad():
        classes = model(inputs).argmax(dim=1)
    model.eval()
    return classes


EXERCISES = [
    Exercise(
        check=check_accumulated_step,
        reference=_reference_accumulated_step,
        mistakes=(
            Mistake(
                "divides each loss by the number of micro-batches (right only for equal sizes)",
                _divides_by_the_number_of_micro_batches,
                "differ in size",
            ),
            Mistake("adds the gradients without scaling the losses", _sums_without_weights, "without scaling"),
            Mistake("zero_grad inside the loop", _zero_grad_inside_the_loop, "erases the others"),
            Mistake("no zero_grad at all: the last call's gradient leaks in", _never_zeroes, "still in .grad"),
            Mistake("one optimizer step per micro-batch", _step_per_micro_batch, "call optimizer.step() once"),
            Mistake("returns a tensor", _returns_the_loss_tensor, "return a Python float"),
            Mistake("returns the last micro-batch's loss", _returns_the_last_loss, "mean loss per sample"),
        ),
        why="backward() adds to .grad, so micro-batch losses weighted by their share of the samples add up to the "
        "gradient of the whole batch's mean loss; one step then uses it.",
        why_zh="backward() 会累加到 .grad 上，所以把各小批量的损失按样本比例加权后反向传播，"
        "累积起来正好是整批数据平均损失的梯度；然后只更新一次。",
        discuss="With BatchNorm in the model, is accumulating four micro-batches of 8 the same as one batch of 32?",
        discuss_zh="如果模型里有 BatchNorm，累积 4 个大小为 8 的小批量，和直接用一个大小为 32 的批，结果一样吗？",
    ),
    Exercise(
        check=check_predict,
        reference=_reference_predict,
        mistakes=(
            Mistake("never calls model.eval()", _no_eval, "call model.eval() first"),
            Mistake("model.eval() after the forward pass", _eval_after_the_forward_pass, "call model.eval() first"),
            Mistake("no torch.no_grad()", _no_no_grad, "torch.no_grad()"),
            Mistake("leaves the model in evaluation mode", _left_in_eval_mode, "model.train(was_training)"),
            Mistake(
                "always ends with model.train(), whatever the mode it found",
                _always_ends_in_training_mode,
                "not always model.train()",
            ),
            Mistake("returns the logits, not the classes", _returns_logits, "argmax(dim=1)"),
        ),
        why="eval() switches Dropout and BatchNorm to their inference behaviour, no_grad() stops autograd recording, "
        "and train(was_training) hands the model back as it was found.",
        why_zh="eval() 让 Dropout 和 BatchNorm 切换到推理时的行为，no_grad() 让自动求导不再记录，"
        "train(was_training) 则把模型按原样交还。",
        discuss="Why does evaluate() in companion.training restore the mode in a `finally:` block?",
        discuss_zh="为什么 companion.training 里的 evaluate() 要在 `finally:` 块里恢复模型的模式？",
    ),
]
