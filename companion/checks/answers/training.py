"""Lesson 08's reference answers, other correct answers and typical mistakes (the teacher's part: never imported by
companion/checks/training.py, left out of the student bundle)."""

import torch

from companion.checks.training import check_accumulated_step, check_predict
from companion.exercises import Exercise, Mistake

# --- exercise 1: accumulated_step -------------------------------------------------------------------------------------


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


def _right_divide_the_summed_gradient(model, optimizer, loss_fn, micro_batches) -> float:
    # the review's answer: backward of loss * size per micro-batch, then one division of .grad by the total
    total = sum(x.shape[0] for x, _ in micro_batches)
    model.zero_grad()
    summed = 0.0
    for x, y in micro_batches:
        summed_loss = loss_fn(model(x), y) * y.numel()
        summed_loss.backward()
        summed += summed_loss.item()
    for p in model.parameters():
        if p.grad is not None:
            p.grad.div_(total)
    optimizer.step()
    return summed / total


def _right_zero_after_the_step(model, optimizer, loss_fn, micro_batches) -> float:
    # gradients cleared at the end of each call (and once at the start, for whatever was there before)
    optimizer.zero_grad(set_to_none=False)
    sizes = torch.tensor([len(y) for _, y in micro_batches], dtype=torch.float32)
    shares = sizes / sizes.sum()
    parts = []
    for (x, y), share in zip(micro_batches, shares, strict=True):
        part = share * loss_fn(model(x), y)
        part.backward()
        parts.append(part.detach())
    optimizer.step()
    optimizer.zero_grad()
    return torch.stack(parts).sum().item()


def _divides_by_the_number_of_micro_batches(model, optimizer, loss_fn, micro_batches) -> float:
    optimizer.zero_grad()
    mean_loss = 0.0
    for inputs, targets in micro_batches:
        loss = loss_fn(model(inputs), targets) / len(micro_batches)
        loss.backward()
        mean_loss += loss.item()
    optimizer.step()
    return mean_loss


def _divides_by_the_total(model, optimizer, loss_fn, micro_batches) -> float:
    total = sum(len(targets) for _, targets in micro_batches)
    optimizer.zero_grad()
    mean_loss = 0.0
    for inputs, targets in micro_batches:
        loss = loss_fn(model(inputs), targets) / total  # forgets that loss_fn already averages
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


def _concatenates_the_micro_batches(model, optimizer, loss_fn, micro_batches) -> float:
    inputs = torch.cat([x for x, _ in micro_batches])  # the same numbers, but the whole batch in memory at once
    targets = torch.cat([y for _, y in micro_batches])
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss.item()


def _one_backward_on_the_sum(model, optimizer, loss_fn, micro_batches) -> float:
    total = sum(len(targets) for _, targets in micro_batches)
    optimizer.zero_grad()
    loss = sum(loss_fn(model(x), y) * len(y) / total for x, y in micro_batches)  # every graph kept alive
    loss.backward()
    optimizer.step()
    return loss.item()


def _leaves_autograd_off(model, optimizer, loss_fn, micro_batches) -> float:
    mean_loss = _reference_accumulated_step(model, optimizer, loss_fn, micro_batches)
    torch.set_grad_enabled(False)  # "no graph for the loss value", switched off for good
    return mean_loss


# --- exercise 2: predict ----------------------------------------------------------------------------------------------


def _reference_predict(model, inputs):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        classes = model(inputs).argmax(dim=1)
    model.train(was_training)
    return classes


def _right_inference_mode_and_finally(model, inputs):
    # the review's answer: inference_mode, try/finally, softmax(-1).max(-1).indices
    mode = model.training
    model.eval()
    try:
        with torch.inference_mode():
            return model(inputs).softmax(-1).max(-1).indices
    finally:
        model.train(mode)


def _right_restores_every_submodule(model, inputs):
    modes = {module: module.training for module in model.modules()}  # also right for mixed modes
    model.train(False)
    with torch.no_grad():
        logits = model(inputs)
    for module, mode in modes.items():
        module.training = mode
    return torch.argmax(logits, dim=-1)


@torch.no_grad()
def _right_no_grad_decorator(model, inputs):
    was = model.training
    classes = model.eval()(inputs).argmax(1)
    model.train(was)
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


def _restores_the_top_flag_only(model, inputs):
    was = model.training
    model.eval()
    with torch.no_grad():
        classes = model(inputs).argmax(dim=1)
    model.training = was  # the children (Dropout, BatchNorm) stay in evaluation mode
    return classes


def _switches_autograd_off_for_good(model, inputs):
    was = model.training
    model.eval()
    torch.set_grad_enabled(False)
    classes = model(inputs).argmax(dim=1)
    model.train(was)
    return classes


def _reseeds_for_repeatable_predictions(model, inputs):
    torch.manual_seed(0)
    return _reference_predict(model, inputs)


EXERCISES = [
    Exercise(
        check=check_accumulated_step,
        reference=_reference_accumulated_step,
        mistakes=(
            Mistake(
                "divides each loss by the number of micro-batches (right only for equal sizes)",
                _divides_by_the_number_of_micro_batches,
                "differ in size",
                what_zh="每个损失都除以微批量的个数（只有各微批量大小相同时才对）",
            ),
            Mistake(
                "divides each mean loss by the total number of samples",
                _divides_by_the_total,
                "not one over",
                what_zh="每个平均损失都除以了总样本数",
            ),
            Mistake(
                "adds the gradients without scaling the losses",
                _sums_without_weights,
                "without scaling",
                what_zh="损失不加缩放，梯度直接相加",
            ),
            Mistake(
                "zero_grad inside the loop",
                _zero_grad_inside_the_loop,
                "erases the others",
                what_zh="在循环里调用 zero_grad",
            ),
            Mistake(
                "no zero_grad at all: the last call's gradient leaks in",
                _never_zeroes,
                "still in .grad",
                what_zh="根本不调用 zero_grad：上一次调用的梯度混了进来",
            ),
            Mistake(
                "one optimizer step per micro-batch",
                _step_per_micro_batch,
                "call optimizer.step() once",
                what_zh="每个微批量都做一次优化器更新",
            ),
            Mistake("returns a tensor", _returns_the_loss_tensor, "return a Python float", what_zh="返回的是张量"),
            Mistake(
                "returns the last micro-batch's loss",
                _returns_the_last_loss,
                "mean loss per sample",
                what_zh="返回的是最后一个微批量的损失",
            ),
            Mistake(
                "concatenates the micro-batches into one batch (no accumulation)",
                _concatenates_the_micro_batches,
                "only one micro-batch's activations",
                what_zh="把微批量拼成一整批（根本没有梯度累积）",
            ),
            Mistake(
                "sums every micro-batch's loss, then one backward() (all graphs in memory)",
                _one_backward_on_the_sum,
                "before the first backward()",
                what_zh="把所有微批量的损失加起来，再调用一次 backward()（所有计算图同时留在内存里）",
            ),
            Mistake(
                "leaves autograd switched off",
                _leaves_autograd_off,
                "Autograd was still switched off",
                what_zh="关掉自动求导后没有再打开",
            ),
        ),
        right=(_right_divide_the_summed_gradient, _right_zero_after_the_step),
        why="backward() adds to .grad, so micro-batch losses weighted by their share of the samples add up to the "
        "gradient of the whole batch's mean loss; one step then uses it, and only one micro-batch's graph is in "
        "memory at a time.",
        why_zh="backward() 会累加到 .grad 上，所以把各微批量的损失按样本比例加权后反向传播，"
        "累积起来正好是整批数据平均损失的梯度；然后只更新一次，而内存里每次只有一个微批量的计算图。",
        discuss="With BatchNorm in the model, is accumulating four micro-batches of 8 the same as one batch of 32?",
        discuss_zh="如果模型里有 BatchNorm，累积 4 个大小为 8 的微批量，和直接用一个大小为 32 的批，结果一样吗？",
    ),
    Exercise(
        check=check_predict,
        reference=_reference_predict,
        mistakes=(
            Mistake("never calls model.eval()", _no_eval, "call model.eval() first", what_zh="没有调用 model.eval()"),
            Mistake(
                "model.eval() after the forward pass",
                _eval_after_the_forward_pass,
                "call model.eval() first",
                what_zh="在前向传播之后才调用 model.eval()",
            ),
            Mistake("no torch.no_grad()", _no_no_grad, "torch.no_grad()", what_zh="没有用 torch.no_grad()"),
            Mistake(
                "leaves the model in evaluation mode",
                _left_in_eval_mode,
                "model.train(was_training)",
                what_zh="把模型留在了评估模式",
            ),
            Mistake(
                "always ends with model.train(), whatever the mode it found",
                _always_ends_in_training_mode,
                "not always model.train()",
                what_zh="不管调用前是什么模式，最后一律调用 model.train()",
            ),
            Mistake(
                "returns the logits, not the classes",
                _returns_logits,
                "argmax(dim=1)",
                what_zh="返回的是 logit，而不是类别",
            ),
            Mistake(
                "restores model.training only, its children stay in evaluation mode",
                _restores_the_top_flag_only,
                "changes the top module only",
                what_zh="只恢复了 model.training，子模块仍处于评估模式",
            ),
            Mistake(
                "torch.set_grad_enabled(False), never switched back on",
                _switches_autograd_off_for_good,
                "Autograd was still switched off",
                what_zh="调用 torch.set_grad_enabled(False) 后再也没有打开",
            ),
            Mistake(
                "reseeds the global generator",
                _reseeds_for_repeatable_predictions,
                "global random generator",
                what_zh="给全局随机数生成器重设随机种子",
            ),
        ),
        right=(_right_inference_mode_and_finally, _right_restores_every_submodule, _right_no_grad_decorator),
        why="eval() switches Dropout and BatchNorm to their inference behaviour, no_grad() stops autograd recording, "
        "and train(was_training) hands the model back as it was found.",
        why_zh="eval() 让 Dropout 和 BatchNorm 切换到推理时的行为，no_grad() 让自动求导不再记录，"
        "train(was_training) 则把模型按原样交还。",
        discuss="Why does evaluate() in companion.training restore the mode in a `finally:` block?",
        discuss_zh="为什么 companion.training 里的 evaluate() 要在 `finally:` 块里恢复模型的模式？",
    ),
]
