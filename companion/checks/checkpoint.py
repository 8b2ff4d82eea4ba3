"""Self-checks for lesson 10: fine-tuning a head with a frozen backbone, and a checkpoint that resumes exactly."""

import functools
import io
import pickle
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.utils.data import DataLoader, TensorDataset

from companion._torch_errors import REFUSED_GLOBAL
from companion.checkpoint import _equal, eval_frozen_batchnorm, states_equal
from companion.exercises import Exercise, Mistake, passed, require

# ----------------------------------------------------------------------------------------------------------------
# Exercise 1: fine-tune everything but a frozen backbone.


@functools.cache
def _data(samples: int, features: int, classes: int) -> TensorDataset:
    """Random inputs and labels from a seeded generator of their own: small and quick, the same on every call."""
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(samples, features, generator=generator)  # (samples, features)
    return TensorDataset(inputs, torch.randint(classes, (samples,), generator=generator))


def _finetune_case() -> tuple[nn.Sequential, DataLoader]:
    """A model unlike the lesson's (a `backbone`, a `neck` with its own BatchNorm and dropout, a `head`), and data."""
    model = nn.Sequential(
        OrderedDict(
            backbone=nn.Sequential(nn.Linear(12, 8), nn.BatchNorm1d(8), nn.ReLU()),
            neck=nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.5)),
            head=nn.Linear(8, 4),
        )
    )
    loader = DataLoader(_data(48, 12, 4), batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(0))
    return model, loader  # 3 batches an epoch


def _record_modes(model: nn.Module) -> dict[str, list[bool]]:
    """Hooks that note, at every forward call, whether each BatchNorm and Dropout layer was in training mode."""
    modes = {}
    for name, module in model.named_modules():
        if isinstance(module, _BatchNorm | nn.Dropout):
            modes[name] = []
            module.register_forward_pre_hook(lambda m, args, seen=modes[name]: seen.append(m.training))
    return modes


def check_finetune(finetune: Callable[[nn.Module, DataLoader, int], Any]) -> None:
    """Self-check: `finetune(model, loader, epochs)` trains all but `backbone.*`, whose BatchNorm stays fixed."""
    require(
        callable(finetune),
        "Pass the function itself: check_finetune(finetune), without ().",
        "把函数本身传进去：check_finetune(finetune)，不要加 ()。",
    )
    with torch.random.fork_rng(devices=[]):  # the check seeds torch; the notebook's random state is left alone
        torch.manual_seed(0)
        model, loader = _finetune_case()
        before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
        parameters = dict(model.named_parameters())
        modes = _record_modes(model)
        finetune(model, loader, 2)
    after = model.state_dict()
    require(
        all(p is parameters[n] for n, p in model.named_parameters()),
        "The model's parameters were replaced: only switch requires_grad off, do not build new parameters.",
        "模型的参数被换掉了：只需关掉 requires_grad，不要新建参数。",
    )
    require(
        any(not p.requires_grad for p in parameters.values()),
        "No parameter was frozen. The tensors in model.state_dict() are detached copies, so changing them does "
        "nothing: loop over model.named_parameters() and call p.requires_grad_(False).",
        "没有任何参数被冻结。model.state_dict() 里的张量是分离出来的副本，改它们不起作用："
        "要遍历 model.named_parameters()，对参数调用 p.requires_grad_(False)。",
    )
    for name, parameter in parameters.items():
        in_backbone = name.startswith("backbone.")
        require(
            in_backbone or (parameter.requires_grad and not torch.equal(after[name], before[name])),
            f"{name} did not learn: freeze only the parameters whose names start with 'backbone.'.",
            f"{name} 没有被训练：只冻结名字以 'backbone.' 开头的参数。",
        )
        require(
            not in_backbone or torch.equal(after[name], before[name]),
            f"{name} changed: freeze every parameter whose name starts with 'backbone.', chosen by name.",
            f"{name} 变了：名字以 'backbone.' 开头的参数都要冻结，按名字挑选。",
        )
    require(
        all(modes["neck.3"]) and modes["neck.3"],
        "Dropout was off while training: model.eval() switches every layer. Put only the frozen BatchNorm layers "
        "in evaluation mode.",
        "训练时 Dropout 被关掉了：model.eval() 会切换所有层。只把被冻结的 BatchNorm 层切到评估模式。",
    )
    require(
        all(modes["neck.1"]),
        "neck.1 is a BatchNorm layer that still trains, so it stays in training mode: put only the frozen "
        "BatchNorm layers (those in the backbone) in evaluation mode.",
        "neck.1 是仍在训练的 BatchNorm 层，应当保持训练模式：只把被冻结的 BatchNorm 层（backbone 里的）切到评估模式。",
    )
    frozen_modes = modes["backbone.1"]
    require(
        not all(frozen_modes),
        "backbone.1.running_mean changed: a frozen BatchNorm layer still updates its running statistics in "
        "training mode. Put it in evaluation mode.",
        "backbone.1.running_mean 变了：被冻结的 BatchNorm 层在训练模式下仍会更新滑动统计量，要把它切到评估模式。",
    )
    require(
        not any(frozen_modes),
        "backbone.1 was in evaluation mode only for part of the training: model.train() switches it back, so put "
        "it in evaluation mode again after every model.train().",
        "backbone.1 只在一部分训练中处于评估模式：model.train() 会把它切回训练模式，"
        "所以每次 model.train() 之后都要再切一次。",
    )
    require(
        all(torch.equal(after[k], before[k]) for k in before if k.startswith("backbone.")),
        "A buffer of the backbone changed: nothing in the frozen backbone should move.",
        "backbone 的某个缓冲区变了：被冻结的 backbone 里什么都不该变。",
    )
    passed(
        "the backbone and its BatchNorm statistics stayed fixed; the neck, its BatchNorm and dropout trained",
        "backbone 及其 BatchNorm 统计量保持不变；neck、它的 BatchNorm 和 dropout 照常训练。",
    )


def _finetune_reference(model, loader, epochs):
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(not name.startswith("backbone."))
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
    for _ in range(epochs):
        model.train()
        for module in model.backbone.modules():
            if isinstance(module, nn.BatchNorm1d | nn.BatchNorm2d):
                module.eval()
        for inputs, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(inputs), labels).backward()
            optimizer.step()


def _train(prepare=lambda model: None, every_epoch=lambda model: None):
    """A plain loop for the wrong answers: `prepare` once, `every_epoch` after each model.train()."""

    def finetune(model, loader, epochs):
        prepare(model)
        optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
        for _ in range(epochs):
            model.train()
            every_epoch(model)
            for inputs, labels in loader:
                optimizer.zero_grad()
                F.cross_entropy(model(inputs), labels).backward()
                optimizer.step()

    return finetune


def _freeze_backbone(model):
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(not name.startswith("backbone."))


def _freeze_through_state_dict(model):
    for name, tensor in model.state_dict().items():
        if name.startswith("backbone."):
            tensor.requires_grad_(False)


def _freeze_all_but_head(model):  # the lesson's line, reused where the neck should train too
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(name.startswith("head."))


def _every_batchnorm_eval(model):
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.eval()


def _eval_once_then_validate(model, loader, epochs):
    _freeze_backbone(model)
    model.train()
    eval_frozen_batchnorm(model)  # once, before the loop
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
    for _ in range(epochs):
        for inputs, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(inputs), labels).backward()
            optimizer.step()
        model.eval()  # a validation pass after each epoch...
        model.train()  # ...then back to training: the frozen BatchNorm layers too


def _whole_model_eval(model, loader, epochs):
    _freeze_backbone(model)
    model.eval()
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
    for _ in range(epochs):
        for inputs, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(inputs), labels).backward()
            optimizer.step()


# ----------------------------------------------------------------------------------------------------------------
# Exercise 2: capture and restore a run with a learning-rate scheduler.


def check_resume(capture: Callable[..., dict], restore: Callable[..., int] | None = None) -> None:
    """Self-check: a run with a StepLR scheduler, resumed from `capture`'s checkpoint, must equal an unbroken run.

    capture(model, optimizer, scheduler, loader, epoch) -> dict; restore(checkpoint, model, optimizer, scheduler,
    loader) -> the number of epochs already done. The pair may also come as one tuple (capture, restore).
    """
    if restore is None and isinstance(capture, tuple) and len(capture) == 2:
        capture, restore = capture
    require(
        callable(capture) and callable(restore),
        "Pass the two functions themselves: check_resume(capture, restore), without ().",
        "把两个函数本身传进去：check_resume(capture, restore)，不要加 ()。",
    )
    with torch.random.fork_rng(devices=[]):  # the check seeds torch; the notebook's random state is left alone
        _check_resume(capture, restore)
    passed(
        "the resumed run ends with exactly the parameters of the uninterrupted one (torch.equal)",
        "续训结束时的参数与不中断的训练完全相同（torch.equal）。",
    )


TOTAL, HALF = 4, 2  # epochs of the resume check's run, and the epoch it breaks after


def _start(seed: int):
    """Seed torch, then build a small run: a model with BatchNorm and dropout, Adam, StepLR and a shuffling loader."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    loader = DataLoader(_data(24, 8, 3), batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(seed))
    return model, optimizer, scheduler, loader  # 3 batches an epoch


def _train_run(model, optimizer, scheduler, loader, epochs) -> None:
    """The plain loop of lesson 08, with one scheduler step an epoch."""
    for _ in range(epochs):
        model.train()
        for inputs, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(inputs), labels).backward()
            optimizer.step()
        scheduler.step()


@functools.cache
def _unbroken() -> dict[str, torch.Tensor]:
    """The state_dict at the end of the run trained without a break (computed once, then shared by every check)."""
    with torch.random.fork_rng(devices=[]):
        model, optimizer, scheduler, loader = _start(seed=0)
        _train_run(model, optimizer, scheduler, loader, TOTAL)
    return model.state_dict()


def _check_resume(capture: Callable[..., dict], restore: Callable[..., int]) -> None:
    """The body of check_resume: raise WrongAnswer at the first piece of state that was not restored."""
    model, optimizer, scheduler, loader = _start(seed=0)
    _train_run(model, optimizer, scheduler, loader, HALF)
    expected = {
        "model": {k: v.clone() for k, v in model.state_dict().items()},
        "optimizer": _clone(optimizer.state_dict()),
        "scheduler": _clone(scheduler.state_dict()),
        "torch": torch.get_rng_state(),
        "loader": loader.generator.get_state(),
    }
    checkpoint = capture(model, optimizer, scheduler, loader, HALF)
    require(
        isinstance(checkpoint, dict),
        f"capture should return a dict, not {type(checkpoint).__name__}.",
        f"capture 应该返回一个字典，而不是 {type(checkpoint).__name__}。",
    )
    buffer = io.BytesIO()
    torch.save(checkpoint, buffer)
    buffer.seek(0)
    try:
        loaded = torch.load(buffer, weights_only=True)
    except pickle.UnpicklingError as error:
        unsafe = REFUSED_GLOBAL.search(str(error))
        what = unsafe.group(1) if unsafe else "an object it cannot rebuild"
        raise_refused(what)
    model, optimizer, scheduler, loader = _start(seed=1)  # another seed: everything must come from the checkpoint
    done = restore(loaded, model, optimizer, scheduler, loader)
    require(
        done == HALF and isinstance(done, int),
        f"restore returned {done!r}; it should return the number of epochs already done ({HALF}): store the epoch.",
        f"restore 返回了 {done!r}；它应当返回已经完成的轮数（{HALF}）：要把轮数存进检查点。",
    )
    require(
        states_equal(model.state_dict(), expected["model"]),
        "The model's parameters or buffers were not restored: model.load_state_dict(checkpoint['model']).",
        "模型的参数或缓冲区没有恢复：model.load_state_dict(checkpoint['model'])。",
    )
    require(
        _equal(optimizer.state_dict(), expected["optimizer"]),
        "The optimizer starts afresh (Adam's moments and step counts are lost): save optimizer.state_dict() and "
        "restore it with optimizer.load_state_dict(...).",
        "优化器从头开始了（Adam 的矩估计和步数都丢了）：保存 optimizer.state_dict()，"
        "再用 optimizer.load_state_dict(...) 恢复。",
    )
    require(
        _equal(scheduler.state_dict(), expected["scheduler"]),
        "The learning-rate scheduler starts again from epoch 0: save scheduler.state_dict() and restore it with "
        "scheduler.load_state_dict(...).",
        "学习率调度器又从第 0 轮开始了：保存 scheduler.state_dict()，再用 scheduler.load_state_dict(...) 恢复。",
    )
    saved_rng = any(_equal(value, expected["torch"]) for value in loaded.values())
    require(
        torch.equal(torch.get_rng_state(), expected["torch"]) or not saved_rng,
        "The global random state was restored, then something drew from it before training went on: restore the "
        "random generators last, and draw nothing after them.",
        "全局随机状态恢复之后，在继续训练之前又有代码从中抽了随机数：最后再恢复随机数生成器，恢复之后什么都不要抽。",
    )
    require(
        torch.equal(torch.get_rng_state(), expected["torch"]),
        "Dropout will draw other masks: save torch.get_rng_state() and restore it with torch.set_rng_state(...).",
        "Dropout 会抽到别的掩码：保存 torch.get_rng_state()，再用 torch.set_rng_state(...) 恢复。",
    )
    require(
        torch.equal(loader.generator.get_state(), expected["loader"]),
        "The batches will come in another order: save loader.generator.get_state() and restore it with "
        "loader.generator.set_state(...).",
        "各批数据的顺序会变：保存 loader.generator.get_state()，再用 loader.generator.set_state(...) 恢复。",
    )
    _train_run(model, optimizer, scheduler, loader, TOTAL - done)
    require(
        states_equal(model.state_dict(), _unbroken()),
        "After resuming, the parameters differ from an uninterrupted run: restore every piece, and nothing else.",
        "续训之后，参数和不中断的训练不一样：每一部分都要恢复，而且不要多做别的事。",
    )


def raise_refused(what: str) -> None:
    """The hint when torch.load(weights_only=True) refuses the learner's checkpoint."""
    require(
        False,
        f"torch.load(..., weights_only=True) refuses your checkpoint ({what}): store the state_dict() of each "
        "object, and plain numbers or tensors, not the objects themselves.",
        f"torch.load(..., weights_only=True) 拒绝加载你的检查点（{what}）：要存每个对象的 state_dict()，"
        "以及普通的数字或张量，而不是对象本身。",
    )


def _clone(value: Any) -> Any:
    """A deep copy of a nested state (dicts, lists, tensors), so later training cannot change it."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_clone(v) for v in value)
    return value


PIECES = ("model", "optimizer", "scheduler", "torch_rng", "loader_rng")


def _capture(leave_out=(), store_objects=False):
    def capture(model, optimizer, scheduler, loader, epoch):
        everything = {
            "model": model.state_dict(),
            "optimizer": optimizer if store_objects else optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "loader_rng": loader.generator.get_state(),
        }
        return {"epoch": epoch, **{k: v for k, v in everything.items() if k not in leave_out}}

    return capture


def _restore(epoch_offset=0, extra_draw=False):
    def restore(checkpoint, model, optimizer, scheduler, loader):
        if "model" in checkpoint:
            model.load_state_dict(checkpoint["model"])
        if "optimizer" in checkpoint:
            optimizer.load_state_dict(checkpoint["optimizer"])
        if "scheduler" in checkpoint:
            scheduler.load_state_dict(checkpoint["scheduler"])
        if "torch_rng" in checkpoint:
            torch.set_rng_state(checkpoint["torch_rng"])
        if "loader_rng" in checkpoint:
            loader.generator.set_state(checkpoint["loader_rng"])
        if extra_draw:
            torch.rand(1)  # a stray draw after restoring the generator
        return checkpoint["epoch"] + epoch_offset

    return restore


EXERCISES = [
    Exercise(
        check=check_finetune,
        reference=_finetune_reference,
        mistakes=(
            Mistake(
                "BatchNorm of the backbone left in training mode",
                _train(prepare=_freeze_backbone),
                "still updates its running statistics",
            ),
            Mistake("model.eval() for the whole model", _whole_model_eval, "Dropout was off while training"),
            Mistake(
                "every BatchNorm in eval mode, the trainable one too",
                _train(prepare=_freeze_backbone, every_epoch=_every_batchnorm_eval),
                "neck.1 is a BatchNorm layer that still trains",
            ),
            Mistake(
                "BatchNorm put in eval mode once, before a loop that validates after each epoch",
                _eval_once_then_validate,
                "again after every model.train()",
            ),
            Mistake(
                "frozen through state_dict()",
                _train(prepare=_freeze_through_state_dict),
                "detached copies",
            ),
            Mistake(
                "the lesson's freeze-all-but-head, which freezes the neck too",
                _train(prepare=_freeze_all_but_head, every_epoch=eval_frozen_batchnorm),
                "neck.0.weight did not learn",
            ),
        ),
        why="Freezing stops gradients, not BatchNorm's running statistics: those move in training mode, so the "
        "frozen BatchNorm layers go to evaluation mode after each model.train(), while dropout and the trainable "
        "BatchNorm keep training.",
        why_zh="冻结只挡住梯度，挡不住 BatchNorm 的滑动统计量：它们在训练模式下照样更新。所以每次 model.train() 之后，"
        "都要把被冻结的 BatchNorm 层切回评估模式，而 dropout 和仍在训练的 BatchNorm 保持训练模式。",
        discuss="When would you let a frozen backbone's BatchNorm statistics adapt to the new data after all?",
        discuss_zh="什么情况下，你反而希望被冻结的 backbone 的 BatchNorm 统计量去适应新数据？",
    ),
    Exercise(
        check=check_resume,
        reference=(_capture(), _restore()),
        mistakes=(
            Mistake("model left out", (_capture(leave_out=["model"]), _restore()), "model.load_state_dict"),
            Mistake("optimizer left out", (_capture(leave_out=["optimizer"]), _restore()), "optimizer starts afresh"),
            Mistake("scheduler left out", (_capture(leave_out=["scheduler"]), _restore()), "scheduler.state_dict"),
            Mistake("global generator left out", (_capture(leave_out=["torch_rng"]), _restore()), "other masks"),
            Mistake("loader generator left out", (_capture(leave_out=["loader_rng"]), _restore()), "another order"),
            Mistake("a random draw after restoring", (_capture(), _restore(extra_draw=True)), "restore the random"),
            Mistake("epoch off by one", (_capture(), _restore(epoch_offset=1)), "number of epochs already done"),
            Mistake("the optimizer object stored", (_capture(store_objects=True), _restore()), "refuses your"),
            Mistake("returns a list", (lambda *args: [1, 2], _restore()), "should return a dict"),
        ),
        why="Every random draw and every stateful object the remaining epochs use must continue from where it was: "
        "model, optimizer, scheduler, the global generator (dropout) and the loader's generator (batch order).",
        why_zh="后面几轮要用到的每一路随机数、每一个有状态的对象，都必须从中断处接着走：模型、优化器、调度器、"
        "全局生成器（dropout）和加载器自己的生成器（数据顺序）。",
        discuss="Which of these pieces could you drop if you only need to resume approximately, and what would change?",
        discuss_zh="如果只需要大致续训，哪些部分可以不存？结果会有什么不同？",
    ),
]
