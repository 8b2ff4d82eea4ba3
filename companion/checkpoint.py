"""Lesson 07: checkpoints that survive a crash, load safely, load in part, and resume training exactly."""

import io
import os
import pickle
import re
import secrets
import textwrap
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.utils.data import DataLoader, Dataset, TensorDataset

from companion.exercises import WrongAnswer, passed, require

# What harmless_payload records: proof that code hidden in a file ran while the file was loaded.
PAYLOAD_LOG: list[str] = []

_UNSAFE_GLOBAL = re.compile(r"GLOBAL (\S+) was not an allowed global")
_DEVICE_TROUBLE = re.compile(r"deserialize object on a|device not recognized|restore data location")


class CheckpointError(RuntimeError):
    """A checkpoint file that cannot be loaded: missing, empty, truncated, corrupt, or holding unsafe objects."""


# ----------------------------------------------------------------------------------------------------------------
# A small model, data order and training loop of our own (lesson 05 has the full story of the training loop).


def make_model(num_classes: int = 10) -> nn.Sequential:
    """A small digit classifier with named layers: two conv + BatchNorm blocks, dropout, and a linear `head`."""
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"num_classes must be a positive int such as 10, not {num_classes!r}")
    return nn.Sequential(
        OrderedDict(
            conv1=nn.Conv2d(1, 8, kernel_size=3, padding=1),
            bn1=nn.BatchNorm2d(8),
            relu1=nn.ReLU(),
            pool1=nn.MaxPool2d(2),  # 8x8 -> 4x4
            conv2=nn.Conv2d(8, 16, kernel_size=3, padding=1),
            bn2=nn.BatchNorm2d(16),
            relu2=nn.ReLU(),
            pool2=nn.MaxPool2d(2),  # 4x4 -> 2x2
            flatten=nn.Flatten(),
            dropout=nn.Dropout(0.25),
            head=nn.Linear(16 * 2 * 2, num_classes),
        )
    )


def make_loader(dataset: Dataset, batch_size: int = 64, seed: int = 0) -> DataLoader:
    """A shuffling DataLoader with a random generator of its own, so its order can be saved and restored."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int such as 64, not {batch_size!r}")
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=torch.Generator().manual_seed(seed))


def new_run(
    dataset: Dataset, seed: int = 0, lr: float = 0.01, batch_size: int = 64
) -> tuple[nn.Sequential, torch.optim.Adam, DataLoader]:
    """Seed torch, then build a fresh model, its Adam optimizer and a shuffling loader: the start of a run."""
    if isinstance(lr, bool) or not isinstance(lr, int | float):
        raise TypeError(f"lr must be a number such as 0.01, not {lr!r}")
    if not lr >= 0:
        raise ValueError(f"lr must be >= 0 (a small positive number such as 0.01), not {lr}")
    torch.manual_seed(seed)
    model = make_model()
    return model, torch.optim.Adam(model.parameters(), lr=lr), make_loader(dataset, batch_size, seed)


def train_epochs(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loader: DataLoader,
    epochs: int,
    *,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    keep_frozen_batchnorm: bool = False,
) -> list[float]:
    """Train for `epochs` passes over `loader` (scheduler stepped once per epoch); return the loss of every step."""
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
        raise ValueError(f"epochs must be an int >= 0, not {epochs!r}")
    losses = []
    for _ in range(epochs):
        model.train()
        if keep_frozen_batchnorm:
            eval_frozen_batchnorm(model)  # after train(), which switches every layer back to training mode
        for images, labels in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        if scheduler is not None:
            scheduler.step()
    return losses


def accuracy(model: nn.Module, dataset: TensorDataset) -> float:
    """Fraction of `dataset` classified correctly, in evaluation mode; the model's mode is restored afterwards."""
    if not isinstance(dataset, TensorDataset):
        raise TypeError(
            f"dataset must be a TensorDataset(images, labels), not {type(dataset).__name__}: "
            "for a DataLoader pass loader.dataset"
        )
    was_training = model.training
    model.eval()
    images, labels = dataset.tensors
    with torch.no_grad():
        correct = (model(images).argmax(dim=1) == labels).sum().item()
    model.train(was_training)
    return correct / len(labels)


def states_equal(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    """True when two state_dicts have the same keys in the same order and torch.equal values."""
    for state in (first, second):
        if not isinstance(state, Mapping):
            raise TypeError(
                f"states_equal compares state_dicts, not a {type(state).__name__}: pass model.state_dict() "
                "(or optimizer.state_dict())"
            )
    if list(first) != list(second):
        return False
    return all(_equal(first[key], second[key]) for key in first)


def _equal(a: Any, b: Any) -> bool:
    """Exact equality for nested containers of tensors and plain values (optimizer and scheduler states)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def plot_resume(straight: list[float], resumed: Mapping[str, list[float]]) -> Figure:
    """Losses of an unbroken run and of runs resumed near its end (left), and each one's distance from it (right)."""
    lengths = {len(losses) for losses in resumed.values()}
    if len(lengths) != 1 or not 0 < lengths.pop() <= len(straight):
        raise ValueError("every resumed run must have the same number of steps, at most as many as the unbroken run")
    start = len(straight) - len(next(iter(resumed.values())))
    steps = list(range(start + 1, len(straight) + 1))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.plot(range(1, len(straight) + 1), straight, color="0.75", linewidth=5, label="unbroken run / 不中断")
    styles = ["-", "--", ":", "-."]
    for i, (label, losses) in enumerate(resumed.items()):
        style = {"linestyle": styles[i % len(styles)], "color": f"C{i}"}
        left.plot(steps, losses, label=label, **style)
        right.plot(steps, [abs(a - b) for a, b in zip(losses, straight[start:], strict=True)], label=label, **style)
    for ax in (left, right):
        ax.axvline(start + 0.5, color="black", linewidth=0.8)
        ax.set_xlabel("step / 步")
    left.set_ylabel("loss / 损失")
    left.set_title("loss of every step / 每一步的损失", fontsize=11)
    right.set_ylabel("|resumed - unbroken| / 与不中断训练之差")
    right.set_title("after the break / 中断之后", fontsize=11)
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------------------------------
# Saving and loading files.


def _as_path(path: str | os.PathLike, what: str) -> Path:
    """`path` as a Path, or a TypeError that says what to pass."""
    if isinstance(path, bool) or not isinstance(path, str | os.PathLike):
        raise TypeError(f"{what} must be a file path (str or pathlib.Path) like 'last.pt', not {type(path).__name__}")
    return Path(path)


def save_checkpoint(obj: Any, path: str | os.PathLike) -> None:
    """torch.save `obj` atomically: a crash mid-save leaves the previous file at `path` intact, never half a file.

    The bytes go to a hidden temporary file in the same folder, are flushed to disk (os.fsync), and only then
    renamed over `path` with os.replace, which swaps the name in one step. A save killed part-way leaves the old
    checkpoint untouched plus a stray `.<name>.<random>.tmp` file that can be deleted.
    """
    path = _as_path(path, "path")
    if path.is_dir():
        raise IsADirectoryError(f"'{path.name}' is a folder: pass a file path inside it, such as folder / 'last.pt'")
    if not path.parent.is_dir():
        raise FileNotFoundError(
            f"the folder of '{path.name}' does not exist: create it first with path.parent.mkdir(parents=True)"
        )
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    file = open(temporary, "xb")  # "x": never overwrite anything, not even a stray temporary file
    try:
        with file:
            torch.save(obj, file)
            file.flush()
            os.fsync(file.fileno())  # the bytes are on the disk before the new name points at them
        os.replace(temporary, path)  # one step: `path` names the old file or the new one, never half of one
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    """Flush the folder entry of a rename to disk where the system allows it (POSIX; Windows cannot open folders)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def load_checkpoint(
    path: str | os.PathLike,
    map_location: Any = "cpu",
    *,
    weights_only: bool = True,
    safe_globals: Iterable[Any] = (),
) -> Any:
    """torch.load with weights_only=True, tensors on `map_location`, and a CheckpointError that names the fix.

    `safe_globals` lists your own trusted classes that the file may contain; weights_only=False runs any code
    the file asks for, so pass it only for files you made yourself.
    """
    path = _as_path(path, "path")
    if not isinstance(weights_only, bool):
        raise TypeError(f"weights_only must be True or False, not {weights_only!r}")
    if not (map_location is None or isinstance(map_location, str | torch.device | dict) or callable(map_location)):
        raise TypeError(
            "map_location must be a device such as 'cpu' or torch.device('cuda:0'), a dict such as "
            f"{{'cuda:1': 'cuda:0'}}, or a function; not {type(map_location).__name__}"
        )
    if isinstance(map_location, str):
        try:
            torch.device(map_location)
        except RuntimeError:
            raise ValueError(
                f"map_location {map_location!r} is not a device: pass 'cpu', 'cuda', 'cuda:0' or 'mps'"
            ) from None
    if isinstance(safe_globals, str | type) or not isinstance(safe_globals, Iterable):
        raise TypeError(f"safe_globals must be a list of classes, e.g. safe_globals=[RunConfig]; not {safe_globals!r}")
    safe_globals = list(safe_globals)
    if not path.exists():
        folder = "exists" if path.parent.is_dir() else "does not exist either"
        raise CheckpointError(
            f"no checkpoint file '{path.name}' (its folder {folder}): check the path, or start training from scratch"
        )
    if path.is_dir():
        raise CheckpointError(f"'{path.name}' is a folder, not a checkpoint file: pass the file inside it")
    size = path.stat().st_size
    if size == 0:
        raise CheckpointError(
            f"'{path.name}' is empty (0 bytes), most likely from an interrupted save: load an earlier checkpoint, "
            "and save with save_checkpoint, which never leaves a partial file"
        )
    try:
        with torch.serialization.safe_globals(safe_globals):
            return torch.load(path, map_location=map_location, weights_only=weights_only)
    except pickle.UnpicklingError as error:
        unsafe = _UNSAFE_GLOBAL.search(str(error))
        if unsafe is None:
            raise _corrupt(path, size, error) from None
        raise CheckpointError(
            f"'{path.name}' holds a Python object that weights_only=True refuses to rebuild: {unsafe.group(1)}. "
            "If the file holds a whole pickled model, load its state_dict instead. If you trust this class, pass "
            "safe_globals=[TheClass]; pass weights_only=False only for a file you made yourself, since loading it "
            "can run any code"
        ) from None
    except (AttributeError, ImportError) as error:  # only with weights_only=False: a pickled class moved
        raise CheckpointError(
            f"'{path.name}' names a class or module that cannot be found ({type(error).__name__}: {error}): a "
            "pickled model needs its class under the same name in the same module; save state_dicts instead"
        ) from None
    except Exception as error:  # EOFError, RuntimeError, OSError, KeyError, IndexError, ...: bytes that do not parse
        if _DEVICE_TROUBLE.search(str(error)):
            raise CheckpointError(
                f"'{path.name}' holds tensors for a device this machine cannot give them "
                f"({_first_sentence(error)}): pass map_location='cpu' (the default), or a device it has"
            ) from None
        raise _corrupt(path, size, error) from None


def _corrupt(path: Path, size: int, error: BaseException) -> CheckpointError:
    """The error for a file torch.load cannot read: say what happened and what to do, quote PyTorch's first line."""
    return CheckpointError(
        f"'{path.name}' ({size} bytes) is truncated or corrupt, not a complete torch.save file "
        f"({_first_sentence(error)}). Load an earlier checkpoint, and save with save_checkpoint, which "
        "never leaves a partial file"
    )


def _first_sentence(error: BaseException) -> str:
    """The error's type and the first sentence of what PyTorch said, to quote inside our own message."""
    text = str(error).strip()
    if "WeightsUnpickler error:" in text:  # the real reason follows PyTorch's advice about weights_only
        text = text.split("WeightsUnpickler error:", 1)[1].strip()
    first = re.split(r"\.\s|\n", text, maxsplit=1)[0][:150]
    return f"{type(error).__name__}: {first}"


def harmless_payload(note: str) -> str:
    """Stand-in for an attacker's code hidden in a pickle: it only appends `note` to PAYLOAD_LOG, and returns it."""
    PAYLOAD_LOG.append(note)
    return note


# ----------------------------------------------------------------------------------------------------------------
# Loading part of a state_dict.


@dataclass
class PartialLoadReport:
    """What load_partial_state_dict did with each key; print it for a readable summary."""

    loaded: list[str] = field(default_factory=list)
    skipped: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=dict)  # (file, model)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        def wrapped(keys: list[str]) -> list[str]:
            return textwrap.wrap(", ".join(keys), width=100, initial_indent="    ", subsequent_indent="    ")

        lines = [f"loaded ({len(self.loaded)}):", *wrapped(self.loaded)]
        lines.append(f"skipped, shape differs; the model keeps its own values ({len(self.skipped)}):")
        lines += [f"    {key}: file {list(a)}, model {list(b)}" for key, (a, b) in self.skipped.items()]
        lines.append(f"missing from the file; the model keeps its own values ({len(self.missing)}):")
        lines += wrapped(self.missing)
        lines.append(f"unexpected, not in the model; ignored ({len(self.unexpected)}):")
        lines += wrapped(self.unexpected)
        prefixes = {key.split(".", 1)[0] + "." for key in self.unexpected if "." in key}
        if self.unexpected and not self.loaded and len(prefixes) == 1:
            lines.append(f"hint: every unexpected key starts with {prefixes.pop()!r}: strip_prefix it first")
        return "\n".join(lines)


def load_partial_state_dict(model: nn.Module, state_dict: Mapping[str, Any]) -> PartialLoadReport:
    """Load every tensor of `state_dict` whose name and shape fit `model`; report the rest instead of crashing."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, not {type(model).__name__}")
    state_dict = _check_state_dict(state_dict)
    own = model.state_dict()
    report = PartialLoadReport()
    fitting = OrderedDict()
    for key, value in state_dict.items():
        if key not in own:
            report.unexpected.append(key)
        elif isinstance(own[key], torch.Tensor) and value.shape != own[key].shape:
            report.skipped[key] = (tuple(value.shape), tuple(own[key].shape))
        else:
            fitting[key] = value
            report.loaded.append(key)
    if hasattr(state_dict, "_metadata"):  # module versions: BatchNorm reads them to load old files correctly
        fitting._metadata = state_dict._metadata
    model.load_state_dict(fitting, strict=False)
    report.missing = [key for key in own if key not in state_dict]
    return report


def _check_state_dict(state_dict: Any) -> Mapping[str, Any]:
    """Reject what people pass instead of a state_dict, with the fix."""
    if isinstance(state_dict, nn.Module):
        raise TypeError("pass the model's state_dict(), not the model itself: other_model.state_dict()")
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"state_dict must be a mapping of names to tensors, not {type(state_dict).__name__}")
    for key, value in state_dict.items():
        if not isinstance(key, str):
            raise TypeError(f"state_dict keys must be str names such as 'head.weight', not {key!r}")
        if isinstance(value, Mapping):
            raise ValueError(
                f"state_dict[{key!r}] is a dict: this looks like a whole training checkpoint; pass the model's "
                f"part, e.g. checkpoint[{key!r}] or checkpoint['model']"
            )
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"state_dict[{key!r}] is a {type(value).__name__}, not a tensor: pass model.state_dict()")
    return state_dict


def strip_prefix(state_dict: Mapping[str, Any], prefix: str = "module.") -> OrderedDict:
    """A copy of `state_dict` with `prefix` removed from the keys that start with it ('module.' from DataParallel)."""
    if not isinstance(prefix, str) or not prefix:
        raise TypeError(f"prefix must be a non-empty str such as 'module.', not {prefix!r}")
    if not prefix.endswith("."):
        raise ValueError(f"prefix {prefix!r} should end with a dot, as module names do: pass {prefix + '.'!r}")
    state_dict = _check_state_dict(state_dict)
    stripped = OrderedDict((key.removeprefix(prefix), value) for key, value in state_dict.items())
    if len(stripped) != len(state_dict):
        both = next(k for k in state_dict if k.startswith(prefix) and k.removeprefix(prefix) in state_dict)
        raise ValueError(
            f"both {both!r} and {both.removeprefix(prefix)!r} are in the state_dict: stripping {prefix!r} would "
            "merge them; pass a state_dict from one model"
        )
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:  # module names in the metadata lose the prefix too ('module' itself becomes '')
        renamed = OrderedDict()
        for key, value in metadata.items():
            if key == prefix[:-1]:
                renamed[""] = value
            elif key.startswith(prefix):
                renamed[key.removeprefix(prefix)] = value
            elif key != "":
                renamed[key] = value
        stripped._metadata = renamed
    return stripped


# ----------------------------------------------------------------------------------------------------------------
# Freezing.


def eval_frozen_batchnorm(model: nn.Module) -> list[str]:
    """Put each BatchNorm layer whose parameters are all frozen in evaluation mode; return their names.

    Call it after every model.train(), which switches them back. Layers with affine=False have no parameters to
    judge by and are left alone.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, not {type(model).__name__}")
    names = []
    for name, module in model.named_modules():
        parameters = list(module.parameters())
        if isinstance(module, _BatchNorm) and parameters and not any(p.requires_grad for p in parameters):
            module.eval()
            names.append(name)
    return names


# ----------------------------------------------------------------------------------------------------------------
# Exercise checks.


def _head_models() -> list[nn.Module]:
    """Two models with a `head`: the lesson's and one of another shape, so positions cannot be hard-coded."""
    other = nn.Sequential(
        OrderedDict(
            body=nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 8)),
            head=nn.Linear(8, 3),
        )
    )
    return [make_model(), other]


def check_freeze_all_but_head(freeze_all_but_head: Callable[[nn.Module], Any]) -> None:
    """Self-check: `freeze_all_but_head(model)` must freeze every parameter except those named 'head.*'."""
    require(
        callable(freeze_all_but_head),
        "Pass the function itself: check_freeze_all_but_head(freeze_all_but_head), without ().",
    )
    for model in _head_models():
        before = dict(model.named_parameters())
        buffers = {name: b.clone() for name, b in model.named_buffers()}
        freeze_all_but_head(model)
        after = dict(model.named_parameters())
        require(
            after.keys() == before.keys() and all(after[n] is before[n] for n in before),
            "The model's parameters were replaced: only switch requires_grad off, do not build new parameters.",
        )
        require(
            states_equal(buffers, dict(model.named_buffers())),
            "A buffer (running mean or variance) changed: freezing should not run the model.",
        )
        frozen = [name for name, p in after.items() if not p.requires_grad]
        require(
            bool(frozen),
            "No parameter was frozen. The tensors in model.state_dict() are detached copies, so changing them does "
            "nothing: loop over model.named_parameters() and call p.requires_grad_(False).",
        )
        for name, parameter in after.items():
            in_head = name.startswith("head.")
            require(
                not in_head or parameter.requires_grad,
                f"{name} is frozen, but it belongs to the head: keep the names that start with 'head.' trainable. "
                "(Positions looked up in state_dict() count buffers too, so they do not match parameters().)",
            )
            require(
                in_head or not parameter.requires_grad,
                f"{name} is still trainable: freeze every parameter outside the head, chosen by name "
                "(name.startswith('head.')), not by position.",
            )
    passed("everything but the head is frozen, chosen by name, on two different models")


def check_resume(
    capture: Callable[..., dict],
    restore: Callable[..., int],
) -> None:
    """Self-check: a run with a StepLR scheduler, resumed from `capture`'s checkpoint, must equal an unbroken run.

    capture(model, optimizer, scheduler, loader, epoch) -> dict; restore(checkpoint, model, optimizer, scheduler,
    loader) -> the number of epochs already done.
    """
    require(
        callable(capture) and callable(restore),
        "Pass the two functions themselves: check_resume(capture, restore), without ().",
    )
    with torch.random.fork_rng(devices=[]):  # the check seeds torch; the notebook's random state is left alone
        _check_resume(capture, restore)
    passed("the resumed run ends with exactly the parameters of the uninterrupted one (torch.equal)")


def _check_resume(capture: Callable[..., dict], restore: Callable[..., int]) -> None:
    """The body of check_resume: raise WrongAnswer at the first piece of state that was not restored."""
    from companion.data import digits_datasets

    images, labels = digits_datasets()[0].tensors
    dataset = TensorDataset(images[:256], labels[:256])
    total, half = 4, 2

    def start(seed: int):
        model, optimizer, loader = new_run(dataset, seed=seed, batch_size=32)
        return model, optimizer, torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5), loader

    model, optimizer, scheduler, loader = start(seed=0)
    train_epochs(model, optimizer, loader, half, scheduler=scheduler)
    expected = {
        "model": {k: v.clone() for k, v in model.state_dict().items()},
        "optimizer": _clone(optimizer.state_dict()),
        "scheduler": _clone(scheduler.state_dict()),
        "torch": torch.get_rng_state(),
        "loader": loader.generator.get_state(),
    }
    checkpoint = capture(model, optimizer, scheduler, loader, half)
    require(isinstance(checkpoint, dict), f"capture should return a dict, not {type(checkpoint).__name__}.")
    buffer = io.BytesIO()
    torch.save(checkpoint, buffer)
    train_epochs(model, optimizer, loader, total - half, scheduler=scheduler)
    straight = model.state_dict()

    buffer.seek(0)
    try:
        loaded = torch.load(buffer, weights_only=True)
    except pickle.UnpicklingError as error:
        unsafe = _UNSAFE_GLOBAL.search(str(error))
        what = unsafe.group(1) if unsafe else "an object it cannot rebuild"
        raise WrongAnswer(
            f"torch.load(..., weights_only=True) refuses your checkpoint ({what}): store the state_dict() of each "
            "object, and plain numbers or tensors, not the objects themselves."
        ) from None
    model, optimizer, scheduler, loader = start(seed=1)  # another seed: everything must come from the checkpoint
    done = restore(loaded, model, optimizer, scheduler, loader)
    require(
        done == half and isinstance(done, int),
        f"restore returned {done!r}; it should return the number of epochs already done ({half}): store the epoch.",
    )
    require(
        states_equal(model.state_dict(), expected["model"]),
        "The model's parameters or buffers were not restored: model.load_state_dict(checkpoint['model']).",
    )
    require(
        _equal(optimizer.state_dict(), expected["optimizer"]),
        "The optimizer starts afresh (Adam's moments and step counts are lost): save optimizer.state_dict() and "
        "restore it with optimizer.load_state_dict(...).",
    )
    require(
        _equal(scheduler.state_dict(), expected["scheduler"]),
        "The learning-rate scheduler starts again from epoch 0: save scheduler.state_dict() and restore it with "
        "scheduler.load_state_dict(...).",
    )
    require(
        torch.equal(torch.get_rng_state(), expected["torch"]),
        "Dropout will draw other masks: save torch.get_rng_state() and restore it with torch.set_rng_state(...).",
    )
    require(
        torch.equal(loader.generator.get_state(), expected["loader"]),
        "The batches will come in another order: save loader.generator.get_state() and restore it with "
        "loader.generator.set_state(...).",
    )
    train_epochs(model, optimizer, loader, total - done, scheduler=scheduler)
    require(
        states_equal(model.state_dict(), straight),
        "After resuming, the parameters differ from an uninterrupted run: restore every piece, and nothing else.",
    )


def _clone(value: Any) -> Any:
    """A deep copy of a nested state (dicts, lists, tensors), so later training cannot change it."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, Mapping):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_clone(v) for v in value)
    return value
