"""Self-checks for lesson 10: fine-tuning a head with a frozen backbone, and a checkpoint that resumes exactly.

Both exercises are protocols rather than functions of a tensor: the learner's code runs inside the harness's
`sandbox` (global state left as found, except the global generator, which training with dropout draws from and a
restore must set), and the checks judge what it did: which parameters moved, which layers ran in which mode, how
many passes over the data it made, and whether the trained or resumed weights equal a run computed here.
"""

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
from companion.checkpoint import _equal, states_equal, train_epochs  # lesson 10's loop, one scheduler step an epoch
from companion.exercises import passed, require, sandbox

_DRAWS = frozenset({"torch_rng"})  # dropout draws from the global generator; a restore sets it on purpose

# ----------------------------------------------------------------------------------------------------------------
# Exercise 1: fine-tune everything but a frozen backbone.

SAMPLES, BATCH = 48, 16  # 3 batches an epoch
# Each case trains a fresh model for this many epochs (a fixed epoch count passes only one), handed over in training
# mode or, as after a validation pass, in evaluation mode (an answer that never calls model.train() trains nothing).
EPOCH_CASES = ((2, "train"), (1, "eval"))


@functools.cache
def _data(samples: int, features: int, classes: int) -> TensorDataset:
    """Random inputs and labels from a seeded generator of their own: small and quick, the same on every call."""
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(samples, features, generator=generator)  # (samples, features)
    return TensorDataset(inputs, torch.randint(classes, (samples,), generator=generator))


def _finetune_case() -> tuple[nn.Sequential, DataLoader]:
    """A model unlike the lesson's (a `backbone`, a `neck` with its own BatchNorm and dropout, a `head`), and data.
    Call it right after torch.manual_seed: the weights come from the global generator."""
    model = nn.Sequential(
        OrderedDict(
            backbone=nn.Sequential(nn.Linear(12, 8), nn.BatchNorm1d(8), nn.ReLU()),
            neck=nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.5)),
            head=nn.Linear(8, 4),
        )
    )
    # No shuffling: the batches are the same in every pass, so a validation pass over the loader between epochs
    # leaves the training steps as they were. The loader's own generator gives each pass its base seed, which
    # would otherwise be drawn from the global generator and change dropout's masks.
    loader = DataLoader(_data(SAMPLES, 12, 4), batch_size=BATCH, shuffle=False, generator=torch.Generator())
    return model, loader


def _record_modes(model: nn.Module) -> dict[str, list[tuple[bool, bool]]]:
    """Hooks that note, at every forward call of each BatchNorm and Dropout layer, whether it was in training mode
    and whether autograd was on (a training step, not a validation pass under no_grad or inference_mode)."""
    modes = {}

    def note(module, args, seen):
        seen.append((module.training, torch.is_grad_enabled()))

    for name, module in model.named_modules():
        if isinstance(module, _BatchNorm | nn.Dropout):
            modes[name] = []
            module.register_forward_pre_hook(functools.partial(note, seen=modes[name]))
    return modes


def _count_training_rows(model: nn.Module) -> list[int]:
    """A hook that adds up the rows the head saw with autograd on: the samples the training steps used."""
    rows = [0]

    def count(module, args):
        if torch.is_grad_enabled():
            rows[0] += args[0].shape[0]

    model.head.register_forward_pre_hook(count)
    return rows


@functools.cache
def _expected_finetune(epochs: int) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """The state_dict that `epochs` epochs of the task give: Adam(lr=0.01) on the cross-entropy, one step a batch,
    the backbone's parameters fixed and its BatchNorm normalising with its stored statistics; and the global
    generator's state afterwards (dropout's masks are its only draws)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        net, batches = _finetune_case()
        net.backbone.requires_grad_(False)
        adam = torch.optim.Adam(list(net.neck.parameters()) + list(net.head.parameters()), lr=0.01)
        for _epoch in range(epochs):
            net.train()
            net.backbone[1].train(False)
            for x, y in batches:
                loss = F.cross_entropy(net(x), y)
                adam.zero_grad(set_to_none=True)
                loss.backward()
                adam.step()
        rng = torch.random.get_rng_state()
    return {name: value.clone() for name, value in net.state_dict().items()}, rng


def check_finetune(finetune: Callable[[nn.Module, DataLoader, int], Any]) -> None:
    """Self-check: `finetune(model, loader, epochs)` trains all but `backbone.*`, whose BatchNorm stays fixed."""
    require(
        callable(finetune),
        "Pass the function itself: check_finetune(finetune), without ().",
        "把函数本身传进去：check_finetune(finetune)，不要加 ()。",
    )
    for epochs, mode in EPOCH_CASES:
        _check_finetune_case(finetune, epochs, mode)
    passed(
        "the backbone and its BatchNorm statistics stayed fixed; the neck, its BatchNorm and dropout trained",
        "backbone 及其 BatchNorm 统计量保持不变；neck、它的 BatchNorm 和 dropout 照常训练。",
    )


def _check_finetune_case(finetune: Callable, epochs: int, mode: str) -> None:
    """One run of the learner's finetune on a fresh model handed over in `mode`; raise WrongAnswer at the first thing
    it got wrong."""
    with torch.random.fork_rng(devices=[]):  # the check seeds torch; the notebook's random state is left alone
        torch.manual_seed(0)
        model, loader = _finetune_case()
        model.train(mode == "train")
        before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
        parameters = dict(model.named_parameters())
        modes = _record_modes(model)
        rows = _count_training_rows(model)
        read_state_dict = []
        model.register_state_dict_post_hook(lambda *args: read_state_dict.append(True))
        with sandbox(_DRAWS):
            finetune(model, loader, epochs)
            rng_after = torch.random.get_rng_state()
    learner_read_state_dict = bool(read_state_dict)
    after = model.state_dict()
    frozen = [name for name, p in parameters.items() if not p.requires_grad]
    backbone_moved = any(not torch.equal(after[n], before[n]) for n in parameters if n.startswith("backbone."))
    require(
        all(p is parameters[n] for n, p in model.named_parameters()),
        "The model's parameters were replaced: only switch requires_grad off, do not build new parameters.",
        "模型的参数被换掉了：只需关掉 requires_grad，不要新建参数。",
    )
    require(
        frozen or not learner_read_state_dict,
        "No parameter was frozen. The tensors in model.state_dict() are detached copies, so changing them does "
        "nothing: loop over model.named_parameters() and call p.requires_grad_(False).",
        "没有任何参数被冻结。model.state_dict() 里的张量是分离出来的副本，改它们不起作用："
        "要遍历 model.named_parameters()，对参数调用 p.requires_grad_(False)。",
    )
    require(
        frozen or backbone_moved,
        "The backbone did not move, but its parameters still have requires_grad=True: keeping them out of the "
        "optimizer is not freezing. backward() still computes and stores their gradients (memory and time), and "
        "any other optimizer would update them. Freeze them: requires_grad_(False).",
        "backbone 没有变，但它的参数仍然是 requires_grad=True：不交给优化器并不等于冻结。backward() 仍会计算并保存"
        "它们的梯度（费内存也费时间），换一个优化器就会更新它们。要冻结它们：requires_grad_(False)。",
    )
    require(
        bool(frozen),
        "No parameter was frozen, so the backbone trained too: switch requires_grad off for every parameter whose "
        "name starts with 'backbone.'.",
        "没有任何参数被冻结，所以 backbone 也被训练了：名字以 'backbone.' 开头的参数都要关掉 requires_grad。",
    )
    require(
        rows[0] == epochs * SAMPLES,
        f"finetune(model, loader, {epochs}) trained on {rows[0]} samples ({rows[0] / SAMPLES:g} × the loader's "
        f"{SAMPLES}): it should train for exactly `epochs` epochs, one step per batch.",
        f"finetune(model, loader, {epochs}) 训练了 {rows[0]} 个样本（加载器 {SAMPLES} 个样本的 "
        f"{rows[0] / SAMPLES:g} 倍）：应当正好训练 `epochs` 轮，每一批一步。",
    )
    stepping = {name: [training for training, grad in seen if grad] for name, seen in modes.items()}
    for name, parameter in parameters.items():
        in_backbone = name.startswith("backbone.")
        require(
            in_backbone or parameter.requires_grad,
            f"{name} did not learn (its requires_grad is off): freeze only the parameters whose names start with "
            "'backbone.'.",
            f"{name} 没有被训练（它的 requires_grad 是关着的）：只冻结名字以 'backbone.' 开头的参数。",
        )
        require(
            not in_backbone or (not parameter.requires_grad and torch.equal(after[name], before[name])),
            f"{name} changed or still requires a gradient: freeze every parameter whose name starts with "
            "'backbone.', chosen by name.",
            f"{name} 变了或者仍然需要梯度：名字以 'backbone.' 开头的参数都要冻结，按名字挑选。",
        )
    require(
        bool(stepping["neck.3"]) and any(stepping["neck.3"]) or mode == "train",
        "The model came in evaluation mode (as after a validation pass) and dropout never trained: call "
        "model.train() at the start of every epoch, then put the frozen BatchNorm layers in evaluation mode.",
        "模型交进来时处于评估模式（就像刚做完一次验证），dropout 一次都没有以训练模式运行：每一轮开始时调用 "
        "model.train()，再把被冻结的 BatchNorm 层切到评估模式。",
    )
    require(
        bool(stepping["neck.3"]) and all(stepping["neck.3"]),
        "Dropout was off while training: model.eval() switches every layer. Put only the frozen BatchNorm layers "
        "in evaluation mode.",
        "训练时 Dropout 被关掉了：model.eval() 会切换所有层。只把被冻结的 BatchNorm 层切到评估模式。",
    )
    require(
        all(stepping["neck.1"]),
        "neck.1 is a BatchNorm layer that still trains, so it stays in training mode: put only the frozen "
        "BatchNorm layers (those in the backbone) in evaluation mode.",
        "neck.1 是仍在训练的 BatchNorm 层，应当保持训练模式：只把被冻结的 BatchNorm 层（backbone 里的）切到评估模式。",
    )
    frozen_modes = [training for training, _ in modes["backbone.1"]]  # with autograd on or off
    require(
        not all(frozen_modes),
        "backbone.1 (a frozen BatchNorm) was in training mode in every forward pass. In that mode it normalises "
        "each batch with the batch's own mean and variance instead of its stored ones, and by default it still "
        "updates its running statistics; momentum, track_running_stats or torch.no_grad() do not change that, "
        "its mode does.",
        "backbone.1（被冻结的 BatchNorm）在每一次前向传播中都处于训练模式。在这个模式下，它用当前这一批自己的均值和"
        "方差做归一化，而不是用存下来的统计量，并且默认仍会更新滑动统计量；改 momentum、track_running_stats 或者用 "
        "torch.no_grad() 都改变不了这一点，能改变它的是层的模式。",
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
    expected, expected_rng = _expected_finetune(epochs)
    for name, value in expected.items():
        try:
            torch.testing.assert_close(after[name], value)
        except AssertionError:
            gap = (after[name].double() - value.double()).abs().max().item()
            require(
                False,
                f"After {epochs} epoch(s), {name} differs from what Adam(lr=0.01) on the cross-entropy, one step "
                f"per batch, gives (largest difference {gap:.3g}): look for gradients that pile up from batch to "
                "batch, another optimizer or learning rate, or another loss.",
                f"训练 {epochs} 轮之后，{name} 与 Adam（lr=0.01）、交叉熵、每批一步得到的结果不同（最大差 {gap:.3g}）："
                "检查梯度是否在各批之间累加、优化器或学习率是否不对、损失函数是否不对。",
            )
    require(
        torch.equal(rng_after, expected_rng),
        "The weights are right, but PyTorch's global random generator was left elsewhere than training leaves it "
        "(dropout's masks are its only draws): your function reseeded it (torch.manual_seed) or drew extra numbers "
        "from it, which changes every later random number of the caller. Seed nothing inside finetune.",
        "权重是对的，但 PyTorch 的全局随机数生成器停在了与正常训练不同的位置（正常训练只有 dropout 的掩码会从中抽取）："
        "你的函数重设了它的种子（torch.manual_seed）或者多抽了随机数，这会改变调用者之后的每一个随机数。"
        "不要在 finetune 里设种子。",
    )


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
        for half in BREAKS:
            _check_resume(capture, restore, half)
    passed(
        "the resumed run ends with exactly the parameters of the uninterrupted one (torch.equal)",
        "续训结束时的参数与不中断的训练完全相同（torch.equal）。",
    )


TOTAL = 4  # epochs of the resume check's run
BREAKS = (2, 1)  # the epochs it breaks after: the learning rate drops (after epoch 3) in the resumed part


def _start(seed: int):
    """Seed torch, then build a small run: a model with BatchNorm and dropout, Adam, StepLR and a shuffling loader."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    loader = DataLoader(_data(24, 8, 3), batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(seed))
    return model, optimizer, scheduler, loader  # 3 batches an epoch


@functools.cache
def _unbroken() -> dict[str, torch.Tensor]:
    """The state_dict at the end of the run trained without a break (computed once, then shared by every check)."""
    with torch.random.fork_rng(devices=[]):
        model, optimizer, scheduler, loader = _start(seed=0)
        train_epochs(model, optimizer, loader, TOTAL, scheduler=scheduler)
    return model.state_dict()


def _check_resume(capture: Callable[..., dict], restore: Callable[..., int], half: int) -> None:
    """One break after `half` epochs: the resumed run must end where the unbroken one does. Only when it does not
    are the restored pieces compared, to name the first one that went wrong."""
    model, optimizer, scheduler, loader = _start(seed=0)
    train_epochs(model, optimizer, loader, half, scheduler=scheduler)
    expected = {
        "model": {k: v.clone() for k, v in model.state_dict().items()},
        "optimizer": _clone(optimizer.state_dict()),
        "last_epoch": scheduler.last_epoch,
        "torch": torch.get_rng_state(),
        "loader": loader.generator.get_state(),
    }
    with sandbox():
        checkpoint = capture(model, optimizer, scheduler, loader, half)
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
    with sandbox(_DRAWS):  # restoring the global generator is the point; the sandbox puts it back, so keep it
        done = restore(loaded, model, optimizer, scheduler, loader)
        restored_rng = torch.get_rng_state()
    torch.set_rng_state(restored_rng)
    require(
        isinstance(done, int) and not isinstance(done, bool) and done == half,
        f"restore returned {done!r} for a checkpoint taken after epoch {half}; it should return the number of "
        "epochs already done: store the epoch.",
        f"restore 对第 {half} 轮之后保存的检查点返回了 {done!r}；它应当返回已经完成的轮数：要把轮数存进检查点。",
    )
    restored = {
        "model": {k: v.clone() for k, v in model.state_dict().items()},
        "optimizer": _clone(optimizer.state_dict()),
        "last_epoch": scheduler.last_epoch,
        "torch": restored_rng,
        "loader": loader.generator.get_state(),
    }
    train_epochs(model, optimizer, loader, TOTAL - done, scheduler=scheduler)
    if states_equal(model.state_dict(), _unbroken()):
        return  # every piece that matters came back, however it was restored
    _name_the_missing_piece(restored, expected, loaded)


def _name_the_missing_piece(restored: dict, expected: dict, loaded: dict) -> None:
    """The resumed run went astray: raise WrongAnswer for the first piece restored differently from the saved run."""
    require(
        states_equal(restored["model"], expected["model"]),
        "The model's parameters or buffers were not restored: model.load_state_dict(checkpoint['model']).",
        "模型的参数或缓冲区没有恢复：model.load_state_dict(checkpoint['model'])。",
    )
    require(
        _equal(restored["optimizer"], expected["optimizer"]),
        "The optimizer starts afresh (Adam's moments and step counts are lost): save optimizer.state_dict() and "
        "restore it with optimizer.load_state_dict(...).",
        "优化器从头开始了（Adam 的矩估计和步数都丢了）：保存 optimizer.state_dict()，"
        "再用 optimizer.load_state_dict(...) 恢复。",
    )
    require(
        not (torch.equal(restored["torch"], expected["loader"]) and torch.equal(restored["loader"], expected["torch"])),
        "The two random states were swapped: the global generator (dropout) got the loader's saved state and the "
        "loader's generator (batch order) got the global one. Give each generator back its own state.",
        "两个随机状态装反了：全局生成器（dropout）拿到了加载器保存的状态，加载器的生成器（数据顺序）拿到了全局的状态。"
        "每个生成器要恢复它自己的状态。",
    )
    saved_rng = any(_equal(value, expected["torch"]) for value in _leaves(loaded))
    require(
        torch.equal(restored["torch"], expected["torch"]) or not saved_rng,
        "The global random state was restored, then something drew from it before training went on: restore the "
        "random generators last, and draw nothing after them.",
        "全局随机状态恢复之后，在继续训练之前又有代码从中抽了随机数：最后再恢复随机数生成器，恢复之后什么都不要抽。",
    )
    require(
        torch.equal(restored["torch"], expected["torch"]),
        "Dropout will draw other masks: save torch.get_rng_state() and restore it with torch.set_rng_state(...).",
        "Dropout 会抽到别的掩码：保存 torch.get_rng_state()，再用 torch.set_rng_state(...) 恢复。",
    )
    require(
        torch.equal(restored["loader"], expected["loader"]),
        "The batches will come in another order: save loader.generator.get_state() and restore it with "
        "loader.generator.set_state(...).",
        "各批数据的顺序会变：保存 loader.generator.get_state()，再用 loader.generator.set_state(...) 恢复。",
    )
    require(
        restored["last_epoch"] == expected["last_epoch"],
        f"The learning-rate scheduler was not restored: it counts from epoch {restored['last_epoch']} instead of "
        f"{expected['last_epoch']}, so the learning rate drops at the wrong time. Save scheduler.state_dict() and "
        "restore it with scheduler.load_state_dict(...).",
        f"学习率调度器没有恢复：它从第 {restored['last_epoch']} 轮而不是第 {expected['last_epoch']} 轮开始计数，"
        "学习率会在错误的时候下降。保存 scheduler.state_dict()，再用 scheduler.load_state_dict(...) 恢复。",
    )
    require(
        False,
        "After resuming, the parameters differ from an uninterrupted run: restore every piece, and nothing else.",
        "续训之后，参数和不中断的训练不一样：每一部分都要恢复，而且不要多做别的事。",
    )


def _leaves(value: Any) -> list:
    """Every value inside a nested checkpoint (dicts, lists, tuples), so a state saved one level down is found."""
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list | tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


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
