"""Self-checks for lesson 08: one optimizer step from micro-batches of unequal size, and predicting mid-training.

Each checker runs the learner's code inside the harness of companion/exercises.py (global state left as found,
arguments not changed behind the caller's back) and compares with PyTorch itself: one SGD step on the whole batch,
and the model's own evaluation-mode output. Known wrong versions are recognised by what they do to the gradient
(computed here from each micro-batch's own gradient), not by running copies of learner code. The reference answers,
other correct answers and the table of typical mistakes live in companion/checks/answers/training.py."""

import copy
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from companion.exercises import _same, call_learner, passed, require, sandbox

Batch = tuple[torch.Tensor, torch.Tensor]
# Micro-batches of unequal size (8, 8, 4), then (6, 6, 6, 2): dividing each loss by their number is wrong here.
SIZES = ((8, 8, 4), (6, 6, 6, 2))


def _close(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Same dtype, shape and values up to the rounding of that dtype (torch.testing.assert_close's defaults)."""
    try:
        torch.testing.assert_close(got, want)
    except AssertionError:
        return False
    return True


def _all_close(got: list[torch.Tensor], want: list[torch.Tensor]) -> bool:
    return len(got) == len(want) and all(_close(a, b) for a, b in zip(got, want, strict=True))


# --- exercise 1: accumulated_step -------------------------------------------------------------------------------------


def _accumulation_case() -> tuple[nn.Module, torch.optim.Optimizer, list[list[Batch]]]:
    """A small model, its SGD optimizer with momentum, and two calls' micro-batches; global RNG untouched."""
    generator = torch.Generator().manual_seed(5)
    with torch.random.fork_rng(devices=[]):  # building layers draws default weights from the global generator
        model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    with torch.set_grad_enabled(False):
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
    calls = [
        [(torch.randn(n, 4, generator=generator), torch.randint(0, 3, (n,), generator=generator)) for n in sizes]
        for sizes in SIZES
    ]
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), calls


def _whole_batch_steps(calls: list[list[Batch]]) -> tuple[list[list[torch.Tensor]], list[float]]:
    """What PyTorch does with the whole batch at once: the parameters after each call's one SGD step, and the mean
    loss per sample before it."""
    model, optimizer, _ = _accumulation_case()
    parameters, losses = [], []
    for pieces in calls:
        everything = torch.cat([x for x, _ in pieces]), torch.cat([y for _, y in pieces])
        model.zero_grad(set_to_none=True)
        whole = F.cross_entropy(model(everything[0]), everything[1])
        whole.backward()
        optimizer.step()
        losses.append(whole.item())
        parameters.append([p.detach().clone() for p in model.parameters()])
    return parameters, losses


# How a known wrong version combines the gradients g_i of each micro-batch's mean loss (sizes n_i, N in all, k
# micro-batches; `left` is what the last call left in .grad). The right combination is sum(n_i / N * g_i).
_COMBINATIONS: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None], torch.Tensor]] = {
    "by count": lambda g, n, left: g.mean(dim=0),
    "unscaled": lambda g, n, left: g.sum(dim=0),
    "last only": lambda g, n, left: g[-1] * n[-1] / n.sum(),
    "leaks": lambda g, n, left: torch.tensordot(n / n.sum(), g, dims=1) + (0 if left is None else left),
    "by total": lambda g, n, left: g.sum(dim=0) / n.sum(),
}
_COMBINATION_HINTS = {
    "by count": (
        "Each micro-batch's loss was divided by the number of micro-batches, but these micro-batches differ "
        "in size: weight each loss by its own share of all the samples in the batch.",
        "每个微批量的损失都除以了微批量的个数，可这些微批量大小不同：要按每个微批量在整批样本中所占的比例给它的损失加权。",
    ),
    "unscaled": (
        "The gradients were added up without scaling, so the step is as large as the number of micro-batches "
        "times the right one: weight each loss by its share of the samples before backward().",
        "梯度直接相加而没有缩放，更新步长就成了正确值的若干倍（微批量有几个就是几倍）："
        "在 backward() 之前，按每个微批量所占的样本比例给损失加权。",
    ),
    "last only": (
        "Only the last micro-batch's gradient reached the step: zero_grad() inside the loop erases the others. "
        "Clear the gradients once, before the first micro-batch.",
        "只有最后一个微批量的梯度用在了更新上：循环里的 zero_grad() 把其他微批量的梯度都清掉了。"
        "要在第一个微批量之前清一次梯度。",
    ),
    "leaks": (
        "The first call is right, the second is not: the gradients of the last call are still in .grad. "
        "Clear the gradients at the start of each call.",
        "第一次调用正确，第二次不对：上一次调用的梯度还留在 .grad 里。每次调用开始时都要先清空梯度。",
    ),
    "by total": (
        "Each micro-batch's loss was divided by the number of samples in the whole batch, but loss_fn already "
        "returns a mean over its micro-batch: its share is its number of samples over the total, not one over "
        "the total.",
        "每个微批量的损失都除以了整批的样本数，可 loss_fn 返回的已经是这个微批量上的平均值："
        "它所占的比例是它的样本数除以总样本数，而不是 1 除以总样本数。",
    ),
}


def _combined_steps(calls: list[list[Batch]], combination: str) -> list[list[torch.Tensor]]:
    """The parameters after each call of a wrong version that combines the micro-batch gradients as named."""
    model, optimizer, _ = _accumulation_case()
    combine, left, after = _COMBINATIONS[combination], None, []
    for pieces in calls:
        params = list(model.parameters())
        per_piece = [torch.autograd.grad(F.cross_entropy(model(x), y), params) for x, y in pieces]
        counts = torch.tensor([float(len(y)) for _, y in pieces])
        grads = [combine(torch.stack([g[i] for g in per_piece]), counts, left and left[i]) for i in range(len(params))]
        for p, g in zip(params, grads, strict=True):
            p.grad = g.clone()
        optimizer.step()
        left = grads
        after.append([p.detach().clone() for p in params])
    return after


def _watch(model: nn.Module) -> list[tuple[str, int]]:
    """Record each forward pass (with its batch size) and each backward pass through the model's output."""
    events: list[tuple[str, int]] = []

    def forward_hook(module: nn.Module, args: tuple, output: torch.Tensor) -> None:
        events.append(("forward", len(args[0])))
        if output.requires_grad:
            output.register_hook(lambda grad: events.append(("backward", len(grad))))

    model.register_forward_hook(forward_hook)
    return events


def check_accumulated_step(accumulated_step: Callable) -> None:
    """`accumulated_step(model, optimizer, loss_fn, micro_batches)`: one step with the whole batch's gradient."""
    require(
        callable(accumulated_step),
        "Pass the function itself: check_accumulated_step(accumulated_step), without ().",
        "把函数本身传进去：check_accumulated_step(accumulated_step)，不要加 ()。",
    )
    model, optimizer, calls = _accumulation_case()
    steps: list[int] = []
    optimizer.register_step_post_hook(lambda *_: steps.append(1))
    events = _watch(model)
    want_parameters, want_losses = _whole_batch_steps(calls)
    for call, micro_batches in enumerate(calls):
        steps.clear()
        events.clear()
        largest = max(len(y) for _, y in micro_batches)
        # the micro-batches must come back unchanged, and no global state may change (grad mode, generators, ...)
        result = call_learner(
            lambda pieces: accumulated_step(model, optimizer, nn.CrossEntropyLoss(), pieces), micro_batches
        )
        require(
            isinstance(result, float),
            f"accumulated_step returned {type(result).__name__}; return a Python float (.item() of each "
            "micro-batch's loss), so no graph is kept alive.",
            f"accumulated_step 返回的是 {type(result).__name__}；要返回 Python 浮点数（对每个微批量的损失调用 "
            ".item()），这样就不会留着计算图。",
        )
        seen = [n for kind, n in events if kind == "forward"]
        require(
            bool(seen) and max(seen) <= largest,
            f"A forward pass saw {max(seen, default=0)} samples, but the largest micro-batch has {largest}: the "
            "point of accumulating is that only one micro-batch's activations are in memory at a time. Run the "
            "model on each micro-batch separately.",
            f"有一次前向传播处理了 {max(seen, default=0)} 个样本，而最大的微批量只有 {largest} 个：梯度累积的意义"
            "就在于内存里每次只有一个微批量的激活值。要对每个微批量分别运行模型。",
        )
        kinds = [kind for kind, _ in events]
        require(
            all(kinds[i + 1] == "backward" for i, kind in enumerate(kinds[:-1]) if kind == "forward")
            and kinds[-1:] == ["backward"],
            "Every micro-batch ran forward before the first backward(), so the graphs of all of them were kept "
            "in memory at once, as with one big batch: call backward() on each micro-batch's loss before the next "
            "forward pass.",
            "所有微批量都先做完了前向传播，才第一次调用 backward()，于是它们的计算图同时留在内存里，"
            "和一次用一个大批量没有区别：要在下一个微批量的前向传播之前，对当前微批量的损失调用 backward()。",
        )
        require(
            len(steps) == 1,
            f"One call made {len(steps)} optimizer steps: accumulate the gradients of all micro-batches, then "
            "call optimizer.step() once, after the loop.",
            f"调用一次做了 {len(steps)} 次优化器更新：先把所有微批量的梯度累积起来，"
            "循环结束后再调用一次 optimizer.step()。",
        )
        got = [p.detach().clone() for p in model.parameters()]
        if not _all_close(got, want_parameters[call]):
            for combination, (hint, hint_zh) in _COMBINATION_HINTS.items():
                wrong = _combined_steps(calls, combination)[call]
                require(not (_all_close(got, wrong) and not _all_close(wrong, want_parameters[call])), hint, hint_zh)
            require(
                False,
                "After the step the parameters differ from one step on the whole batch: clear the gradients once, "
                "then for each micro-batch forward, loss weighted by its share of the samples, backward; then one "
                "optimizer.step().",
                "更新之后的参数和在整批数据上走一步的结果不同：先清一次梯度，然后对每个微批量做前向传播、"
                "按样本比例加权损失、backward；最后调用一次 optimizer.step()。",
            )
        want = want_losses[call]
        require(
            abs(result - want) <= 1e-5 + 1.3e-6 * abs(want),  # float32's tolerances in torch.testing.assert_close
            f"accumulated_step returned {result:.6f}, but the mean loss per sample over the whole batch is "
            f"{want:.6f}: add up each micro-batch's loss weighted by its share of the samples.",
            f"accumulated_step 返回了 {result:.6f}，但整批数据上每个样本的平均损失是 {want:.6f}："
            "把每个微批量的损失按它所占的样本比例加权后再相加。",
        )
    passed(
        "one step per call, with the gradient of the whole batch, even when the micro-batches differ in size",
        "每次调用只更新一次，用的是整批数据的梯度，即使各个微批量大小不同也是如此。",
    )


# --- exercise 2: predict ----------------------------------------------------------------------------------------------


def _predict_case(training: bool) -> tuple[nn.Module, torch.Tensor]:
    """A model with BatchNorm and Dropout (in training or evaluation mode) and a batch of inputs."""
    generator = torch.Generator().manual_seed(6)
    with torch.random.fork_rng(devices=[]):
        model = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))
    with torch.set_grad_enabled(False):
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator))
        model[1].running_mean.copy_(torch.randn(16, generator=generator))
        model[1].running_var.copy_(torch.rand(16, generator=generator) + 0.5)
    return model.train(training), torch.randn(12, 4, generator=generator)


def _run_predict(predict: Callable, model: nn.Module, inputs: torch.Tensor) -> tuple[object, list[bool], bool]:
    """Call predict in the sandbox; the result, the grad mode of each forward pass, and whether it drew from (or
    reseeded) PyTorch's global generator. Other global state it leaves changed gets the harness's own hint."""
    grad_modes: list[bool] = []
    model.register_forward_hook(lambda module, args, output: grad_modes.append(torch.is_grad_enabled()))
    with sandbox(may_change=frozenset({"torch_rng"})):
        torch.manual_seed(8)  # an answer that leaves Dropout on draws random numbers: the same ones every run
        before = torch.random.get_rng_state()
        got = predict(model, inputs)
        drew = not torch.equal(before, torch.random.get_rng_state())
    return got, grad_modes, drew


def check_predict(predict: Callable) -> None:
    """`predict(model, inputs)`: class indices from evaluation mode, without autograd, the model's mode restored."""
    require(
        callable(predict),
        "Pass the function itself: check_predict(predict), without ().",
        "把函数本身传进去：check_predict(predict)，不要加 ()。",
    )
    for training in (True, False):  # mid-training, then on a model already in evaluation mode (a final test)
        model, inputs = _predict_case(training)
        found, found_inputs = copy.deepcopy(model), inputs.clone()
        with torch.set_grad_enabled(False):
            want = torch.argmax(copy.deepcopy(model).eval()(inputs), dim=1)  # (N,) int64
        got, grad_modes, drew = _run_predict(predict, model, inputs)
        require(
            isinstance(got, torch.Tensor),
            f"predict should return a tensor, not {type(got).__name__}.",
            f"predict 应该返回一个张量，而不是 {type(got).__name__}。",
        )
        require(
            got.shape == want.shape and got.dtype == torch.int64 and got.device == want.device,
            f"predict returned shape {tuple(got.shape)} and {got.dtype}; return one class index per sample: "
            "outputs.argmax(dim=1).",
            f"predict 返回的形状是 {tuple(got.shape)}、数据类型是 {got.dtype}；"
            "每个样本应返回一个类别索引：outputs.argmax(dim=1)。",
        )
        require(
            _same(list(found.buffers()), list(model.buffers())),
            "BatchNorm's running statistics changed: the forward pass ran in training mode; call model.eval() first.",
            "BatchNorm 的滑动统计量变了：前向传播是在训练模式下运行的；要先调用 model.eval()。",
        )
        require(
            torch.equal(got, want),
            "The predictions differ from the model's evaluation-mode predictions: call model.eval() before the "
            "forward pass, so Dropout keeps every value.",
            "预测结果和模型在评估模式下的预测不一致：要在前向传播之前调用 model.eval()，"
            "这样 Dropout 才会保留所有数值。",
        )
        require(
            bool(grad_modes) and not any(grad_modes),
            "The forward pass recorded a graph for autograd: run it inside `with torch.no_grad():`.",
            "前向传播为自动求导记录了计算图：要把它放在 `with torch.no_grad():` 里面运行。",
        )
        modes_found = [m.training for m in found.modules()]
        modes_left = [m.training for m in model.modules()]
        if training:
            require(
                model.training,
                "predict left the model in evaluation mode, so training would go on without Dropout: remember "
                "was_training = model.training, and call model.train(was_training) before returning.",
                "predict 把模型留在了评估模式，接下来的训练就没有 Dropout 了：先记下 was_training = model.training，"
                "返回之前调用 model.train(was_training)。",
            )
        else:
            require(
                not model.training,
                "Called on a model in evaluation mode, predict handed it back in training mode: restore the mode "
                "you found, model.train(was_training), not always model.train().",
                "对一个处于评估模式的模型调用 predict，返回时它却变成了训练模式：要恢复调用时的模式，"
                "model.train(was_training)，而不是一律调用 model.train()。",
            )
        require(
            modes_left == modes_found,
            f"model.training is back to {training}, but its submodules are not ({modes_left.count(not training)} "
            f"of {len(modes_left)} modules, e.g. Dropout and BatchNorm, are in the other mode): setting the "
            "attribute changes the top module only; model.train(mode) sets it in every submodule.",
            f"model.training 恢复成了 {training}，可它的子模块没有（{len(modes_left)} 个模块中有 "
            f"{modes_left.count(not training)} 个，例如 Dropout 和 BatchNorm，处于另一种模式）："
            "给这个属性赋值只改变最外层的模块；model.train(mode) 才会设置每一个子模块。",
        )
        require(
            _same(found, model) and _same(found_inputs, inputs),
            "predict changed the model's weights or .grad, or the inputs, in place: the caller still needs them as "
            "they were.",
            "predict 原地改动了模型的权重或 .grad，或者输入：调用者之后还要用原来的它们。",
        )
        require(
            not drew,
            "predict drew from (or reseeded) PyTorch's global random generator, which changes every later random "
            "number of the training run: nothing in a prediction needs random numbers.",
            "predict 从 PyTorch 的全局随机数生成器抽取了随机数（或者重设了它），这会改变训练过程之后的每一个随机数："
            "预测本身不需要任何随机数。",
        )
    passed(
        "evaluation mode, no graph, and the model is back in the mode it was in, whichever that was",
        "在评估模式下、不记录计算图地做预测，并且模型回到了调用前的模式，无论那是哪一种。",
    )
