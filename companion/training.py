"""Lesson 05: a training loop that is hard to get wrong, evaluation, a progress bar whose text is
the same on every run, the loss/accuracy plot and the exercise checks. Later lessons reuse the loop functions."""

import sys
from collections.abc import Callable, Iterable

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import nn
from torch.utils.data import TensorDataset
from tqdm import tqdm

from companion.exercises import passed, require

LossFunction = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
Batches = Iterable[tuple[torch.Tensor, torch.Tensor]]
HISTORY_KEYS = ("train_loss", "test_loss", "test_accuracy")


def count_parameters(model: nn.Module, trainable_only: bool = False) -> int:
    """How many numbers the model learns: the elements of all its parameters, a shared one counted once."""
    _check_model(model)
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


def resize_images(dataset: TensorDataset, size: int) -> TensorDataset:
    """The same (images, labels) with every image enlarged to size x size by repeating pixels (mode 'nearest')."""
    if not isinstance(dataset, TensorDataset) or len(dataset.tensors) != 2:
        raise TypeError("dataset must be a TensorDataset(images, labels), e.g. from companion.data.digits_datasets()")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive int such as 32, not {size!r}")
    images, labels = dataset.tensors
    if images.dim() != 4:
        raise ValueError(f"images must have shape (N, channels, height, width), not {tuple(images.shape)}")
    return TensorDataset(F.interpolate(images, size=size, mode="nearest"), labels)


def train_one_epoch(
    model: nn.Module, loader: Batches, optimizer: torch.optim.Optimizer, loss_fn: LossFunction
) -> float:
    """One pass over `loader` in training mode (zero_grad, forward, loss, backward, step); the mean loss per sample.

    `loss_fn` returns the mean over a batch (the default reduction). Batches go to the device of the model's
    parameters; the model is left in the mode it was in.
    """
    _check_model(model)
    _check_loss_fn(loss_fn)
    if isinstance(optimizer, type):
        raise TypeError("optimizer is a class: pass an instance, e.g. torch.optim.SGD(model.parameters(), lr=0.01)")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer such as SGD, not {type(optimizer).__name__}")
    in_optimizer = {id(p) for group in optimizer.param_groups for p in group["params"]}
    if not any(id(p) in in_optimizer for p in model.parameters()):
        raise ValueError(
            "the optimizer holds none of this model's parameters: build it from this model, "
            "torch.optim.SGD(model.parameters(), lr=0.01)"
        )
    device = _device_of(model)
    was_training = model.training
    model.train()
    total, count = 0.0, 0
    try:
        for inputs, targets in loader:
            inputs, targets = inputs.to(device), targets.to(device)
            optimizer.zero_grad()  # otherwise backward() adds this batch's gradient to the last one's
            loss = loss_fn(model(inputs), targets)
            _check_scalar_loss(loss)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(targets)  # .item(): a float, so the graph of this batch can be freed
            count += len(targets)
    finally:
        model.train(was_training)
    if count == 0:
        raise ValueError("the loader gave no batches: check that the dataset is not empty")
    return total / count


def evaluate(model: nn.Module, loader: Batches, loss_fn: LossFunction = F.cross_entropy) -> tuple[float, float]:
    """(mean loss per sample, accuracy) over `loader`, in evaluation mode without autograd; the mode is restored."""
    _check_model(model)
    _check_loss_fn(loss_fn)
    device = _device_of(model)
    was_training = model.training
    model.eval()
    total, correct, count = 0.0, 0, 0
    try:
        with torch.no_grad():
            for inputs, targets in loader:
                inputs, targets = inputs.to(device), targets.to(device)
                outputs = model(inputs)
                if outputs.dim() != 2 or targets.dim() != 1:
                    raise ValueError(
                        f"evaluate needs outputs of shape (N, classes) and targets of class indices, shape (N,); "
                        f"got {tuple(outputs.shape)} and {tuple(targets.shape)} (one-hot targets: targets.argmax(1))"
                    )
                loss = loss_fn(outputs, targets)
                _check_scalar_loss(loss)
                total += loss.item() * len(targets)
                correct += (outputs.argmax(dim=1) == targets).sum().item()
                count += len(targets)
    finally:
        model.train(was_training)
    if count == 0:
        raise ValueError("the loader gave no batches: check that the dataset is not empty")
    return total / count, correct / count


def progress_bar(iterable: Iterable, description: str, total: int | None = None) -> tqdm:
    """A tqdm bar whose text is the same on every run: stdout, a redraw per item, no rates or times, fixed width."""
    if total is None:
        if not hasattr(iterable, "__len__"):
            raise ValueError("this iterable has no len(): pass total=<number of items> so the bar can show a count")
        total = len(iterable)
    return tqdm(
        iterable,
        desc=description,
        total=total,
        file=sys.stdout,  # tqdm's default, stderr, is stored as an error stream in a notebook
        mininterval=0,  # redraw after every item, not when 0.1 s of wall-clock time has passed
        miniters=1,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}",  # no elapsed time, no it/s
        ncols=60,
        ascii=False,
        leave=True,
    )


def fit(
    model: nn.Module,
    train_loader: Batches,
    test_loader: Batches,
    optimizer: torch.optim.Optimizer,
    loss_fn: LossFunction,
    epochs: int,
    progress: bool = True,
) -> dict[str, list[float]]:
    """Train for `epochs` epochs, evaluating after each; per-epoch train_loss, test_loss and test_accuracy lists."""
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int such as 10, not {epochs!r}")
    history = {key: [] for key in HISTORY_KEYS}
    for _ in progress_bar(range(epochs), "epochs") if progress else range(epochs):
        history["train_loss"].append(train_one_epoch(model, train_loader, optimizer, loss_fn))
        test_loss, test_accuracy = evaluate(model, test_loader, loss_fn)
        history["test_loss"].append(test_loss)
        history["test_accuracy"].append(test_accuracy)
    return history


def plot_history(history: dict[str, list[float]]) -> Figure:
    """Loss (train and test) and test accuracy against the epoch, from the dict that `fit` returns."""
    if not isinstance(history, dict) or set(history) != set(HISTORY_KEYS):
        raise ValueError(f"history must be the dict that fit() returns, with the keys {list(HISTORY_KEYS)}")
    lengths = {len(values) for values in history.values()}
    if len(lengths) != 1 or 0 in lengths:
        raise ValueError("history lists must be non-empty and of equal length, one value per epoch")
    epochs = range(1, lengths.pop() + 1)
    fig, (ax_loss, ax_accuracy) = plt.subplots(1, 2, figsize=(9.0, 3.4))
    ax_loss.plot(epochs, history["train_loss"], marker="o", label="train / 训练")
    ax_loss.plot(epochs, history["test_loss"], marker="o", label="test / 测试")
    ax_loss.set_ylabel("loss / 损失")
    ax_loss.legend(loc="upper right")
    ax_accuracy.plot(epochs, [100 * a for a in history["test_accuracy"]], marker="o", color="C1")
    ax_accuracy.set_ylim(0, 100)
    ax_accuracy.set_ylabel("test accuracy (%) / 测试准确率")
    for ax in (ax_loss, ax_accuracy):
        ax.set_xlabel("epoch / 轮")
        ax.set_xticks(list(epochs))
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _check_model(model) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module such as nn.Linear(64, 10), not {type(model).__name__}")


def _check_loss_fn(loss_fn) -> None:
    if isinstance(loss_fn, torch.Tensor):
        raise TypeError(
            "loss_fn is a tensor, not a function: a line like `loss = loss(output, target)` replaced the loss "
            "function with its value; give them two names, e.g. `loss = criterion(output, target)`"
        )
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, e.g. nn.CrossEntropyLoss(), not {type(loss_fn).__name__}")


def _check_scalar_loss(loss) -> None:
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
        raise ValueError(f"loss_fn must return one number per batch (reduction='mean'), not {shape}")


def _device_of(model: nn.Module) -> torch.device | None:
    """The device of the model's first parameter (None for a model without parameters: batches stay put)."""
    first = next(model.parameters(), None)
    return None if first is None else first.device


def _step_case() -> tuple[nn.Module, torch.optim.Optimizer, list[tuple[torch.Tensor, torch.Tensor]]]:
    """A small model, its SGD optimizer and three batches, identical on every call (global RNG untouched)."""
    generator = torch.Generator().manual_seed(5)
    with torch.random.fork_rng(devices=[]):  # building layers draws default weights from the global generator
        model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
    batches = [(torch.randn(8, 4, generator=generator), torch.randint(0, 3, (8,), generator=generator)) for _ in "abc"]
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), batches


def _reference_parameters(clear_gradients: bool) -> tuple[list[torch.Tensor], list[float]]:
    """Parameters after three steps on `_step_case()`, and the loss of each step; optionally never zero_grad."""
    model, optimizer, batches = _step_case()
    losses = []
    for inputs, targets in batches:
        if clear_gradients:
            optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return [p.detach().clone() for p in model.parameters()], losses


def check_training_step(train_step: Callable) -> None:
    """Self-check: `train_step(model, optimizer, loss_fn, inputs, targets)` must make one correct SGD step."""
    require(callable(train_step), "Pass the function itself: check_training_step(train_step), without ().")
    want, want_losses = _reference_parameters(clear_gradients=True)
    accumulated, _ = _reference_parameters(clear_gradients=False)
    model, optimizer, batches = _step_case()
    before = [p.detach().clone() for p in model.parameters()]
    results = [train_step(model, optimizer, nn.CrossEntropyLoss(), inputs, targets) for inputs, targets in batches[:1]]
    require(
        isinstance(results[0], float),
        f"train_step returned {type(results[0]).__name__}; return loss.item(), a Python float "
        "(a tensor would keep the whole graph of the step alive).",
    )
    require(
        not all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True)),
        "One step left the parameters unchanged: optimizer.step() needs the gradients, so it comes after "
        "loss.backward(), and zero_grad() must not sit between backward() and step().",
    )
    require(
        abs(results[0] - want_losses[0]) < 1e-6,
        f"train_step returned {results[0]:.4f}, but the loss of the batch before the step is {want_losses[0]:.4f}: "
        "return the loss you called backward() on.",
    )
    results += [train_step(model, optimizer, nn.CrossEntropyLoss(), inputs, targets) for inputs, targets in batches[1:]]
    got = [p.detach() for p in model.parameters()]
    if not all(torch.allclose(a, b, atol=1e-6) for a, b in zip(got, want, strict=True)):
        require(
            not all(torch.allclose(a, b, atol=1e-6) for a, b in zip(got, accumulated, strict=True)),
            "Gradients add up from call to call: backward() adds to .grad, so call optimizer.zero_grad() "
            "before loss.backward() in every step.",
        )
        require(
            False,
            "After three steps the parameters differ from the reference: the order is zero_grad, forward, "
            "loss, backward, step, on the model, optimizer and batch you are given.",
        )
    passed("three steps give the same parameters as zero_grad -> forward -> loss -> backward -> step")


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


def check_predict(predict: Callable) -> None:
    """Self-check: `predict(model, inputs)` must return class indices from evaluation mode, without autograd."""
    require(callable(predict), "Pass the function itself: check_predict(predict), without ().")
    model, inputs = _predict_case()
    want = model.eval()(inputs).argmax(dim=1)
    model.train()
    buffers = [b.clone() for b in model.buffers()]
    grad_modes = []
    model.register_forward_hook(lambda module, args, output: grad_modes.append(torch.is_grad_enabled()))
    got = predict(model, inputs)
    require(isinstance(got, torch.Tensor), f"predict should return a tensor, not {type(got).__name__}.")
    require(
        got.shape == want.shape and got.dtype == torch.int64,
        f"predict returned shape {tuple(got.shape)} and {got.dtype}; return one class index per sample: "
        "outputs.argmax(dim=1).",
    )
    require(
        all(torch.equal(a, b) for a, b in zip(buffers, model.buffers(), strict=True)),
        "BatchNorm's running statistics changed: the forward pass ran in training mode; call model.eval() first.",
    )
    require(
        torch.equal(got, want),
        "The predictions differ from the model's evaluation-mode predictions: call model.eval() before the "
        "forward pass, so Dropout keeps every value.",
    )
    require(
        grad_modes and not any(grad_modes),
        "The forward pass recorded a graph for autograd: run it inside `with torch.no_grad():`.",
    )
    require(
        model.training,
        "predict left the model in evaluation mode, so training would go on without Dropout: remember "
        "was_training = model.training, and call model.train(was_training) before returning.",
    )
    passed("evaluation mode, no graph, and the model is back in the mode it was in")
