"""Lesson 10's reference answers, other correct answers and typical mistakes (the teacher's part: never imported by
companion/checks/checkpoint.py, left out of the student bundle)."""

import copy

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from companion.checkpoint import eval_frozen_batchnorm
from companion.checks.checkpoint import check_finetune, check_resume
from companion.exercises import Exercise, Mistake

# --- exercise 1: finetune -------------------------------------------------------------------------------------------


def _reference_finetune(model, loader, epochs):
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


def _right_whole_backbone_all_parameters(model, loader, epochs):
    """The review's R: freeze the backbone module at once; Adam over all parameters skips those without .grad."""
    model.backbone.requires_grad_(False)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(epochs):
        model.train()
        model.backbone.eval()
        for inputs, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(inputs), labels).backward()
            optimizer.step()


def _right_lesson_helper_and_loss_module(model, loader, epochs):
    """The lesson's eval_frozen_batchnorm, nn.CrossEntropyLoss, filter() and zero_grad after the step."""
    for name, parameter in model.named_parameters():
        if name.startswith("backbone."):
            parameter.requires_grad = False
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=0.01)
    model.train()
    for _ in range(epochs):
        model.train()
        eval_frozen_batchnorm(model)
        for inputs, labels in loader:
            loss = loss_fn(model(inputs), labels)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)


def _right_validates_under_inference_mode(model, loader, epochs):
    """Sets the frozen layers' mode once and never calls model.train() again; a validation pass after each epoch
    under torch.inference_mode() in evaluation mode (it draws no dropout mask), then back to training."""
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(not name.startswith("backbone."))
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(trainable, lr=0.01, foreach=True)

    def training_mode():
        for name, module in model.named_modules():
            module.train(not (name.startswith("backbone") and isinstance(module, _BatchNorm)))

    for _ in range(epochs):
        training_mode()
        for inputs, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(inputs), labels).backward()
            optimizer.step()
        model.eval()
        with torch.inference_mode():
            sum(int((model(inputs).argmax(1) == labels).sum()) for inputs, labels in loader)


def _train(prepare=lambda model: None, every_epoch=lambda model: None, optimizer=None, zero_grad=True, passes=None):
    """A plain loop for the wrong answers: `prepare` once, `every_epoch` after each model.train()."""

    def finetune(model, loader, epochs):
        prepare(model)
        trainable = [p for p in model.parameters() if p.requires_grad]
        opt = (optimizer or (lambda ps: torch.optim.Adam(ps, lr=0.01)))(trainable)
        for _ in range(epochs if passes is None else passes):
            model.train()
            every_epoch(model)
            for inputs, labels in loader:
                if zero_grad:
                    opt.zero_grad()
                F.cross_entropy(model(inputs), labels).backward()
                opt.step()

    return finetune


def _mistake_freeze_backbone(model):
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(not name.startswith("backbone."))


def _mistake_freeze_through_state_dict(model):
    for name, tensor in model.state_dict().items():
        if name.startswith("backbone."):
            tensor.requires_grad_(False)


def _mistake_freeze_all_but_head(model):  # the lesson's line, reused where the neck should train too
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(name.startswith("head."))


def _mistake_every_batchnorm_eval(model):
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.eval()


def _mistake_momentum_zero(model):  # review W2: "keeps the statistics still", yet normalises with batch statistics
    _mistake_freeze_backbone(model)
    model.backbone[1].momentum = 0.0


def _mistake_no_running_stats(model):  # review W6
    _mistake_freeze_backbone(model)
    model.backbone[1].track_running_stats = False


def _mistake_eval_before_train(model, loader, epochs):  # review W5: backbone.eval(), then model.train() undoes it
    _mistake_freeze_backbone(model)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
    for _ in range(epochs):
        model.backbone.eval()
        model.train()
        for inputs, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(inputs), labels).backward()
            optimizer.step()


def _mistake_eval_once_then_validate(model, loader, epochs):
    _mistake_freeze_backbone(model)
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


def _mistake_whole_model_eval(model, loader, epochs):
    _mistake_freeze_backbone(model)
    model.eval()
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
    for _ in range(epochs):
        for inputs, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(inputs), labels).backward()
            optimizer.step()


def _mistake_never_calls_train(model, loader, epochs):  # mutation testing: a model handed over in eval mode stays so
    _mistake_freeze_backbone(model)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
    for _ in range(epochs):
        eval_frozen_batchnorm(model)
        for inputs, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(inputs), labels).backward()
            optimizer.step()


def _mistake_draws_after_training(model, loader, epochs):  # a random peek moves the caller's generator
    _reference_finetune(model, loader, epochs)
    inputs, _ = loader.dataset[torch.randint(len(loader.dataset), (4,))]  # a few samples to look at afterwards
    model.eval()
    with torch.no_grad():
        model(inputs).argmax(1)
    model.train()
    eval_frozen_batchnorm(model)


def _mistake_backbone_under_no_grad(model, loader, epochs):  # review W1: frozen by no_grad, BatchNorm still trains
    _mistake_freeze_backbone(model)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
    for _ in range(epochs):
        model.train()
        for inputs, labels in loader:
            with torch.no_grad():
                features = model.backbone(inputs)
            optimizer.zero_grad()
            F.cross_entropy(model.head(model.neck(features)), labels).backward()
            optimizer.step()


def _mistake_only_out_of_the_optimizer(model, loader, epochs):  # review W4: requires_grad stays True
    optimizer = torch.optim.Adam([*model.neck.parameters(), *model.head.parameters()], lr=0.01)
    for _ in range(epochs):
        model.train()
        model.backbone.eval()
        for inputs, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(inputs), labels).backward()
            optimizer.step()


EXERCISE_FINETUNE = Exercise(
    check=check_finetune,
    reference=_reference_finetune,
    mistakes=(
        Mistake(
            "BatchNorm of the backbone left in training mode",
            _train(prepare=_mistake_freeze_backbone),
            "still updates its running statistics",
            what_zh="backbone 的 BatchNorm 仍处于训练模式",
        ),
        Mistake(
            "the backbone run under torch.no_grad(), its BatchNorm left in training mode",
            _mistake_backbone_under_no_grad,
            "torch.no_grad() do not change that",
            what_zh="在 torch.no_grad() 下运行 backbone，它的 BatchNorm 却仍处于训练模式",
        ),
        Mistake(
            "momentum = 0 on the frozen BatchNorm instead of evaluation mode",
            _train(prepare=_mistake_momentum_zero),
            "normalises each batch with the batch's own mean and variance",
            what_zh="给被冻结的 BatchNorm 设 momentum = 0，而不是切到评估模式",
        ),
        Mistake(
            "track_running_stats = False on the frozen BatchNorm instead of evaluation mode",
            _train(prepare=_mistake_no_running_stats),
            "momentum, track_running_stats",
            what_zh="给被冻结的 BatchNorm 设 track_running_stats = False，而不是切到评估模式",
        ),
        Mistake(
            "backbone.eval() before model.train() in each epoch",
            _mistake_eval_before_train,
            "was in training mode in every forward pass",
            what_zh="每轮先调用 backbone.eval()，再调用 model.train()",
        ),
        Mistake(
            "model.eval() for the whole model",
            _mistake_whole_model_eval,
            "Dropout was off while training",
            what_zh="对整个模型调用 model.eval()",
        ),
        Mistake(
            "model.train() never called, so a model handed over in evaluation mode stays there",
            _mistake_never_calls_train,
            "call model.train() at the start of every epoch",
            what_zh="从不调用 model.train()，传进来时处于评估模式的模型就一直停在评估模式",
        ),
        Mistake(
            "a random draw after training (a peek at a few predictions)",
            _mistake_draws_after_training,
            "drew extra numbers",
            what_zh="训练结束后又抽了随机数（随手看几个预测结果）",
        ),
        Mistake(
            "every BatchNorm in eval mode, the trainable one too",
            _train(prepare=_mistake_freeze_backbone, every_epoch=_mistake_every_batchnorm_eval),
            "neck.1 is a BatchNorm layer that still trains",
            what_zh="所有 BatchNorm 都切到评估模式，连要训练的那个也不例外",
        ),
        Mistake(
            "BatchNorm put in eval mode once, before a loop that validates after each epoch",
            _mistake_eval_once_then_validate,
            "again after every model.train()",
            what_zh="只在循环开始前把 BatchNorm 切到评估模式一次，而循环每轮之后都要验证",
        ),
        Mistake(
            "frozen through state_dict()",
            _train(prepare=_mistake_freeze_through_state_dict),
            "detached copies",
            what_zh="通过 state_dict() 冻结参数",
        ),
        Mistake(
            "the backbone only kept out of the optimizer, its requires_grad left on",
            _mistake_only_out_of_the_optimizer,
            "keeping them out of the optimizer is not freezing",
            what_zh="只是没把 backbone 的参数交给优化器，它们的 requires_grad 仍为 True",
        ),
        Mistake(
            "nothing frozen at all",
            _train(every_epoch=eval_frozen_batchnorm),
            "No parameter was frozen, so the backbone trained too",
            what_zh="什么都没冻结",
        ),
        Mistake(
            "the lesson's freeze-all-but-head, which freezes the neck too",
            _train(prepare=_mistake_freeze_all_but_head, every_epoch=eval_frozen_batchnorm),
            "neck.0.weight did not learn",
            what_zh="照搬课上除 head 外全部冻结的写法，连 neck 也冻结了",
        ),
        Mistake(
            "epochs ignored: one epoch always",
            _train(prepare=_mistake_freeze_backbone, every_epoch=eval_frozen_batchnorm, passes=1),
            "it should train for exactly `epochs` epochs",
            what_zh="忽略 epochs，总是只训练一轮",
        ),
        Mistake(
            "gradients never zeroed",
            _train(prepare=_mistake_freeze_backbone, every_epoch=eval_frozen_batchnorm, zero_grad=False),
            "gradients that pile up",
            what_zh="从不清零梯度",
        ),
        Mistake(
            "SGD instead of Adam",
            _train(
                prepare=_mistake_freeze_backbone,
                every_epoch=eval_frozen_batchnorm,
                optimizer=lambda ps: torch.optim.SGD(ps, lr=0.01),
            ),
            "another optimizer or learning rate",
            what_zh="用了 SGD 而不是 Adam",
        ),
    ),
    right=(
        _right_whole_backbone_all_parameters,
        _right_lesson_helper_and_loss_module,
        _right_validates_under_inference_mode,
    ),
    why="Freezing stops gradients, not BatchNorm's running statistics: those move in training mode, so the "
    "frozen BatchNorm layers go to evaluation mode after each model.train(), while dropout and the trainable "
    "BatchNorm keep training.",
    why_zh="冻结只挡住梯度，挡不住 BatchNorm 的滑动统计量：它们在训练模式下照样更新。所以每次 model.train() 之后，"
    "都要把被冻结的 BatchNorm 层切回评估模式，而 dropout 和仍在训练的 BatchNorm 保持训练模式。",
    discuss="When would you let a frozen backbone's BatchNorm statistics adapt to the new data after all?",
    discuss_zh="什么情况下，你反而希望被冻结的 backbone 的 BatchNorm 统计量去适应新数据？",
)

# --- exercise 2: capture and restore ---------------------------------------------------------------------------------


def _reference_capture(model, optimizer, scheduler, loader, epoch):
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "epoch": epoch,
        "torch_rng": torch.get_rng_state(),
        "loader_rng": loader.generator.get_state(),
    }


def _reference_restore(checkpoint, model, optimizer, scheduler, loader):
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    torch.set_rng_state(checkpoint["torch_rng"])
    loader.generator.set_state(checkpoint["loader_rng"])
    return checkpoint["epoch"]


def _right_nested_capture(model, optimizer, scheduler, loader, epoch):
    """The review's R: a nested dict, copies of every state."""
    return {
        "epoch": torch.tensor(epoch),
        "rng": {"global": torch.random.get_rng_state(), "loader": loader.generator.get_state()},
        "states": copy.deepcopy({"net": model.state_dict(), "opt": optimizer.state_dict()})
        | {"sched": scheduler.state_dict()},
    }


def _right_nested_restore(checkpoint, model, optimizer, scheduler, loader):
    """Generators restored first (load_state_dict draws nothing), the epoch stored as a tensor, returned as int."""
    torch.random.set_rng_state(checkpoint["rng"]["global"])
    loader.generator.set_state(checkpoint["rng"]["loader"])
    states = checkpoint["states"]
    model.load_state_dict(states["net"])
    optimizer.load_state_dict(states["opt"])
    scheduler.load_state_dict(states["sched"])
    return int(checkpoint["epoch"])


def _right_last_epoch_restore(checkpoint, model, optimizer, scheduler, loader):
    """The review's W4: StepLR's learning rate depends on last_epoch alone (the optimizer's state holds the current
    rate), so setting it gives a run bit-identical to the unbroken one."""
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.last_epoch = checkpoint["epoch"]
    torch.set_rng_state(checkpoint["torch_rng"])
    loader.generator.set_state(checkpoint["loader_rng"])
    return checkpoint["epoch"]


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


def _restore(epoch_offset=0, extra_draw=False, swap=False, fixed_epoch=None):
    def restore(checkpoint, model, optimizer, scheduler, loader):
        if "model" in checkpoint:
            model.load_state_dict(checkpoint["model"])
        if "optimizer" in checkpoint:
            optimizer.load_state_dict(checkpoint["optimizer"])
        if "scheduler" in checkpoint:
            scheduler.load_state_dict(checkpoint["scheduler"])
        global_key, loader_key = ("loader_rng", "torch_rng") if swap else ("torch_rng", "loader_rng")
        if global_key in checkpoint:
            torch.set_rng_state(checkpoint[global_key])
        if loader_key in checkpoint:
            loader.generator.set_state(checkpoint[loader_key])
        if extra_draw:
            torch.rand(1)  # a stray draw after restoring the generator
        return fixed_epoch if fixed_epoch is not None else checkpoint["epoch"] + epoch_offset

    return restore


def _mistake_seed_capture(which):
    """Review W1 and W2: a generator's initial_seed() saved instead of its state."""

    def capture(model, optimizer, scheduler, loader, epoch):
        saved = _capture(leave_out=[f"{which}_rng"])(model, optimizer, scheduler, loader, epoch)
        generator = torch.default_generator if which == "torch" else loader.generator
        return {**saved, f"{which}_seed": generator.initial_seed()}

    return capture


def _mistake_reseed_restore(which):
    def restore(checkpoint, model, optimizer, scheduler, loader):
        done = _restore()(checkpoint, model, optimizer, scheduler, loader)
        generator = torch.default_generator if which == "torch" else loader.generator
        generator.manual_seed(checkpoint[f"{which}_seed"])
        return done

    return restore


def _mistake_scheduler_steps_to_epoch(checkpoint, model, optimizer, scheduler, loader):
    """last_epoch set one too far: the learning rate drops an epoch early."""
    _right_last_epoch_restore(checkpoint, model, optimizer, scheduler, loader)
    scheduler.last_epoch += 1
    return checkpoint["epoch"]


EXERCISE_RESUME = Exercise(
    check=check_resume,
    reference=(_reference_capture, _reference_restore),
    mistakes=(
        Mistake(
            "model left out",
            (_capture(leave_out=["model"]), _restore()),
            "model.load_state_dict",
            what_zh="检查点里漏了模型",
        ),
        Mistake(
            "optimizer left out",
            (_capture(leave_out=["optimizer"]), _restore()),
            "optimizer starts afresh",
            what_zh="检查点里漏了优化器",
        ),
        Mistake(
            "scheduler left out",
            (_capture(leave_out=["scheduler"]), _restore()),
            "scheduler was not restored",
            what_zh="检查点里漏了学习率调度器",
        ),
        Mistake(
            "scheduler's last_epoch set one too far",
            (_reference_capture, _mistake_scheduler_steps_to_epoch),
            "counts from epoch 3 instead of 2",
            what_zh="学习率调度器的 last_epoch 多设了 1",
        ),
        Mistake(
            "global generator left out",
            (_capture(leave_out=["torch_rng"]), _restore()),
            "other masks",
            what_zh="检查点里漏了全局随机数生成器",
        ),
        Mistake(
            "global generator re-seeded from torch.initial_seed()",
            (_mistake_seed_capture("torch"), _mistake_reseed_restore("torch")),
            "other masks",
            what_zh="用 torch.initial_seed() 给全局随机数生成器重设随机种子",
        ),
        Mistake(
            "loader generator left out",
            (_capture(leave_out=["loader_rng"]), _restore()),
            "another order",
            what_zh="检查点里漏了数据加载器的随机数生成器",
        ),
        Mistake(
            "loader generator re-seeded from its initial_seed()",
            (_mistake_seed_capture("loader"), _mistake_reseed_restore("loader")),
            "another order",
            what_zh="用数据加载器的随机数生成器自己的 initial_seed() 重设随机种子",
        ),
        Mistake(
            "the two generator states swapped",
            (_capture(), _restore(swap=True)),
            "random states were swapped",
            what_zh="两个随机数生成器的状态恢复反了",
        ),
        Mistake(
            "a random draw after restoring",
            (_capture(), _restore(extra_draw=True)),
            "restore the random",
            what_zh="恢复之后又抽了随机数",
        ),
        Mistake(
            "epoch off by one",
            (_capture(), _restore(epoch_offset=1)),
            "number of epochs already done",
            what_zh="轮数差了 1",
        ),
        Mistake("epoch hard-coded", (_capture(), _restore(fixed_epoch=2)), "taken after epoch 1", what_zh="轮数写死了"),
        Mistake(
            "the optimizer object stored",
            (_capture(store_objects=True), _restore()),
            "refuses your",
            what_zh="存的是优化器对象本身",
        ),
        Mistake("returns a list", (lambda *args: [1, 2], _restore()), "should return a dict", what_zh="返回了一个列表"),
    ),
    right=(
        (_right_nested_capture, _right_nested_restore),
        (_reference_capture, _right_last_epoch_restore),
        (_capture(), _restore()),
    ),
    why="Every random draw and every stateful object the remaining epochs use must continue from where it was: "
    "model, optimizer, scheduler, the global generator (dropout) and the loader's generator (batch order).",
    why_zh="后面几轮要用到的每一路随机数、每一个有状态的对象，都必须从中断处接着走：模型、优化器、调度器、"
    "全局生成器（dropout）和加载器自己的生成器（数据顺序）。",
    discuss="Which of these pieces could you drop if you only need to resume approximately, and what would change?",
    discuss_zh="如果只需要大致续训，哪些部分可以不存？结果会有什么不同？",
)

EXERCISES = [EXERCISE_FINETUNE, EXERCISE_RESUME]
