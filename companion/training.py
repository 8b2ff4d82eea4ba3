"""Lesson 08: the plain training loop (`train_one_epoch`), evaluation (`evaluate`), and both once per epoch (`fit`).

Lesson 08 writes the loop in the notebook and shows it equals this copy bit for bit. It is the course's plain loop,
kept for any later lesson that needs one; a lesson that writes a loop of its own instead (a custom optimizer step,
checkpoints between epochs, one process per rank) should say why in one line.
Below the loop: counting parameters, enlarging the digits for LeNet, a progress bar whose text is the same on
every run and the loss/accuracy plot; the argument guards come last. The exercise checks are in
companion/checks/training.py.
"""

import sys
from collections.abc import Callable, Iterable

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from torch import nn
from torch.utils.data import TensorDataset
from tqdm import tqdm

from companion._validate import require_int
from companion.language import by_language, in_language, say
from companion.plotting import COLUMN_WIDTH

LossFunction = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
Batches = Iterable[tuple[torch.Tensor, torch.Tensor]]
HISTORY_KEYS = ("train_loss", "val_loss", "val_accuracy")


def train_one_epoch(
    model: nn.Module, loader: Batches, optimizer: torch.optim.Optimizer, loss_fn: LossFunction
) -> float:
    """One pass over `loader` in training mode (zero_grad, forward, loss, backward, step); the epoch's mean loss.

    `loss_fn` returns the mean over a batch (the default reduction); each batch's loss counts len(targets) times,
    so for a mean over samples the result is the mean loss per sample (for a loss that averages over anything else,
    such as pixels or class weights, a mean of batch means weighted by batch size). Batches go to the device of the
    model's parameters; the model is left in the mode it was in.
    """
    _check_loop_arguments(model, optimizer, loss_fn)
    loss_fn = _one_number_per_batch(loss_fn)  # a loss that is not one number raises an error naming the fix
    device = _device_of(model)
    was_training = model.training
    model.train()
    total, count = 0.0, 0
    try:
        for inputs, targets in loader:
            inputs, targets = inputs.to(device), targets.to(device)
            optimizer.zero_grad()  # otherwise backward() adds this batch's gradient to the last one's
            loss = loss_fn(model(inputs), targets)  # shape (): the mean over the batch
            loss.backward()
            optimizer.step()
            total += loss.item() * len(targets)  # .item(): summing the tensors would keep every batch's graph alive
            count += len(targets)
    finally:
        model.train(was_training)
    _check_not_empty(count)
    return total / count


def evaluate(model: nn.Module, loader: Batches, loss_fn: LossFunction = F.cross_entropy) -> tuple[float, float]:
    """(mean loss, weighted by batch size as in train_one_epoch; accuracy) over `loader`, in evaluation mode without
    autograd; the mode is restored."""
    _check_model(model)
    _check_loss_fn(loss_fn)
    loss_fn = _one_number_per_batch(loss_fn)
    device = _device_of(model)
    was_training = model.training
    model.eval()
    total, correct, count = 0.0, 0, 0
    try:
        with torch.no_grad():
            for inputs, targets in loader:
                inputs, targets = inputs.to(device), targets.to(device)
                outputs = model(inputs)  # (N, classes)
                _check_classification_batch(outputs, targets)
                loss = loss_fn(outputs, targets)
                total += loss.item() * len(targets)
                correct += (outputs.argmax(dim=1) == targets).sum().item()  # argmax over classes: (N,)
                count += len(targets)
    finally:
        model.train(was_training)
    _check_not_empty(count)
    return total / count, correct / count


def fit(
    model: nn.Module,
    train_loader: Batches,
    val_loader: Batches,
    optimizer: torch.optim.Optimizer,
    loss_fn: LossFunction,
    epochs: int,
    progress: bool = True,
) -> dict[str, list[float]]:
    """Train `epochs` epochs, evaluating on `val_loader` (not the test set) after each; the per-epoch history."""
    epochs = _check_epochs(epochs)
    history = {key: [] for key in HISTORY_KEYS}
    for _ in progress_bar(range(epochs), in_language("epochs", "轮次")) if progress else range(epochs):
        history["train_loss"].append(train_one_epoch(model, train_loader, optimizer, loss_fn))
        val_loss, val_accuracy = evaluate(model, val_loader, loss_fn)
        history["val_loss"].append(val_loss)
        history["val_accuracy"].append(val_accuracy)
    return history


def count_parameters(model: nn.Module, trainable_only: bool = False) -> int:
    """How many numbers the model learns: the elements of all its parameters, a shared one counted once."""
    _check_model(model)
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


def resize_images(dataset: TensorDataset, size: int) -> TensorDataset:
    """The same (images, labels) with every image enlarged to size x size by repeating pixels (mode 'nearest')."""
    images, labels = _check_image_dataset(dataset)
    size = _check_size(size)
    return TensorDataset(F.interpolate(images, size=size, mode="nearest"), labels)  # (N, C, size, size)


def progress_bar(iterable: Iterable, description: str, total: int | None = None) -> tqdm:
    """A tqdm bar whose text is the same on every run: stdout, a redraw per item, no rates or times, fixed width."""
    if total is None:
        if not hasattr(iterable, "__len__"):
            raise ValueError(
                in_language(
                    "this iterable has no len(): pass total=<number of items> so the bar can show a count",
                    "这个可迭代对象没有 len()：请传入 total=<元素个数>，进度条才能显示计数",
                )
            )
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


def plot_history(history: dict[str, list[float]], best_epoch: int | None = None) -> Figure:
    """Loss (training and validation) and validation accuracy against the epoch, from a dict such as `fit` returns.

    `best_epoch` (counted from 1), when given, is marked on both panels: the epoch whose weights were kept.
    """
    epochs = range(1, len(history["train_loss"]) + 1)
    fig, (ax_loss, ax_accuracy) = plt.subplots(1, 2, figsize=(COLUMN_WIDTH, 2.8), layout="constrained")
    ax_loss.plot(epochs, history["train_loss"], marker="o", markersize=4, label=say("train", "训练"))
    (validation,) = ax_loss.plot(epochs, history["val_loss"], marker="o", markersize=4, label=say("validation", "验证"))
    ax_loss.set_ylabel(say("loss", "损失"))
    accuracy = [100 * a for a in history["val_accuracy"]]
    ax_accuracy.plot(epochs, accuracy, marker="o", markersize=4, color=validation.get_color())  # validation's too
    ax_accuracy.set_ylim(0, 100)
    ax_accuracy.set_ylabel(by_language("accuracy (%)", "准确率 (%)", "accuracy (%) / 准确率"))
    if best_epoch is not None:
        ax_loss.axvline(best_epoch, color="0.4", linestyle="--", linewidth=1, label=say("kept", "保留"))
        ax_accuracy.axvline(best_epoch, color="0.4", linestyle="--", linewidth=1)
    fig.legend(loc="outside lower center", ncols=3)  # below both panels, clear of every curve
    for ax in (ax_loss, ax_accuracy):
        ax.set_xlabel(say("epoch", "轮"))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # whole epochs, a readable number of ticks
        ax.grid(alpha=0.3)
    return fig


# Argument guards. Deliberately defensive: the loop functions are where a learner's own model, optimizer and loss
# arrive, so each error names the fix.


def _check_model(model) -> None:
    if not isinstance(model, nn.Module):
        kind = type(model).__name__
        raise TypeError(
            in_language(
                f"model must be an nn.Module such as nn.Linear(64, 10), not {kind}",
                f"model 必须是 nn.Module，例如 nn.Linear(64, 10)，而不是 {kind}",
            )
        )


def _check_loss_fn(loss_fn) -> None:
    if isinstance(loss_fn, torch.Tensor):
        raise TypeError(
            in_language(
                "loss_fn is a tensor, not a function: a line like `loss = loss(output, target)` replaced the loss "
                "function with its value; give them two names, e.g. `loss = criterion(output, target)`",
                "loss_fn 是张量，不是函数：像 `loss = loss(output, target)` 这样的一行把损失函数换成了它的值；"
                "请给两者起不同的名字，例如 `loss = criterion(output, target)`",
            )
        )
    if not callable(loss_fn):
        kind = type(loss_fn).__name__
        raise TypeError(
            in_language(
                f"loss_fn must be callable, e.g. nn.CrossEntropyLoss(), not {kind}",
                f"loss_fn 必须可以调用，例如 nn.CrossEntropyLoss()，而不是 {kind}",
            )
        )


def _check_loop_arguments(model, optimizer, loss_fn) -> None:
    _check_model(model)
    _check_loss_fn(loss_fn)
    if isinstance(optimizer, type):
        raise TypeError(
            in_language(
                "optimizer is a class: pass an instance, e.g. torch.optim.SGD(model.parameters(), lr=0.01)",
                "optimizer 是一个类：请传入它的实例，例如 torch.optim.SGD(model.parameters(), lr=0.01)",
            )
        )
    if not isinstance(optimizer, torch.optim.Optimizer):
        kind = type(optimizer).__name__
        raise TypeError(
            in_language(
                f"optimizer must be a torch.optim.Optimizer such as SGD, not {kind}",
                f"optimizer 必须是 torch.optim.Optimizer，例如 SGD，而不是 {kind}",
            )
        )
    in_optimizer = {id(p) for group in optimizer.param_groups for p in group["params"]}
    if not any(id(p) in in_optimizer for p in model.parameters()):
        raise ValueError(
            in_language(
                "the optimizer holds none of this model's parameters: build it from this model, "
                "torch.optim.SGD(model.parameters(), lr=0.01)",
                "优化器里没有这个模型的任何参数：请用这个模型来建它，torch.optim.SGD(model.parameters(), lr=0.01)",
            )
        )


def _one_number_per_batch(loss_fn: LossFunction) -> LossFunction:
    """`loss_fn`, checked at each call: the loss of a batch must be one number (a 0-d tensor) for backward()."""

    def checked(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        loss = loss_fn(outputs, targets)
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
            shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
            raise ValueError(
                in_language(
                    f"loss_fn must return one number per batch (reduction='mean'), not {shape}",
                    f"loss_fn 必须对每个批返回一个数（reduction='mean'），而不是 {shape}",
                )
            )
        return loss

    return checked


def _check_classification_batch(outputs: torch.Tensor, targets: torch.Tensor) -> None:
    if outputs.dim() != 2 or targets.dim() != 1:
        raise ValueError(
            in_language(
                f"evaluate needs outputs of shape (N, classes) and targets of class indices, shape (N,); "
                f"got {tuple(outputs.shape)} and {tuple(targets.shape)} (one-hot targets: targets.argmax(1))",
                f"evaluate 需要形状为 (N, classes) 的输出和形状为 (N,) 的类别索引目标；"
                f"实际得到 {tuple(outputs.shape)} 和 {tuple(targets.shape)}（one-hot 目标请用 targets.argmax(1)）",
            )
        )


def _check_not_empty(count: int) -> None:
    if count == 0:
        raise ValueError(
            in_language(
                "the loader gave no batches: check that the dataset is not empty",
                "loader 没有给出任何批：请检查数据集是不是空的",
            )
        )


def _check_epochs(epochs) -> int:
    return require_int(epochs, "epochs", smallest=1, example=10)


def _check_image_dataset(dataset) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(dataset, TensorDataset) or len(dataset.tensors) != 2:
        raise TypeError(
            in_language(
                "dataset must be a TensorDataset(images, labels), e.g. from companion.data.digits_datasets()",
                "dataset 必须是 TensorDataset(images, labels)，例如 companion.data.digits_datasets() 给出的",
            )
        )
    images, labels = dataset.tensors
    if images.dim() != 4:
        shape = tuple(images.shape)
        raise ValueError(
            in_language(
                f"images must have shape (N, channels, height, width), not {shape}",
                f"images 的形状必须是 (N, channels, height, width)，而不是 {shape}",
            )
        )
    return images, labels


def _check_size(size) -> int:
    return require_int(size, "size", smallest=1, example=32)


def _device_of(model: nn.Module) -> torch.device | None:
    """The device of the model's first parameter (None for a model without parameters: batches stay put)."""
    first = next(model.parameters(), None)
    return None if first is None else first.device
