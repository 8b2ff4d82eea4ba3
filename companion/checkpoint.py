"""Lesson 10: checkpoints that survive a crash, notice a damaged file, refuse a hostile one, load in part, and resume
training exactly.

The taught code comes first: saving atomically with a SHA-256 digest inside the file, and loading safely. Then the
small model, data order and training loop the lesson resumes, partial loads, freezing and the resume figure. The
argument checks are at the end; the explanations of PyTorch's errors are in companion/_torch_errors.py and the
exercise checks in companion/checks/checkpoint.py.
"""

import hashlib
import os
import re
import secrets
import textwrap
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset, Subset, TensorDataset

from companion._torch_errors import explain_load_error
from companion._validate import require_int
from companion.language import in_language, say

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# A torch.save file is a zip archive. It ends with a 22-byte record whose last 2 bytes give the length of a free-text
# comment that follows; torch.save leaves the comment empty and torch.load ignores it. save_checkpoint writes there.
END_OF_ARCHIVE = b"PK\x05\x06"  # the signature that starts that last record
DIGEST_MARK = b"tensor-by-tensor sha256 "  # the comment: this mark, then 64 hex digits
RECORD_LENGTH = len(DIGEST_MARK) + 64

# What harmless_payload records: proof that code hidden in a file ran while the file was loaded.
PAYLOAD_LOG: list[str] = []


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be loaded: missing, empty, truncated, damaged, or asking to run code."""


# ----------------------------------------------------------------------------------------------------------------
# Saving and loading: the code the lesson teaches.


def save_checkpoint(obj: Any, path: str | os.PathLike) -> None:
    """torch.save `obj` to `path` atomically, with a SHA-256 digest of the bytes written inside the file.

    Atomic: the bytes go to a hidden temporary file in the same folder, are flushed to disk (os.fsync), and only
    then renamed over `path` with os.replace, which swaps the name in one step. A save killed part-way leaves the
    old checkpoint untouched plus a stray `.<name>.<random>.tmp` file that can be deleted.

    Integrity: the digest goes into the zip comment at the very end of the file (see END_OF_ARCHIVE), so it is
    written before the rename and arrives with the file in the same os.replace: the file and its digest can never
    disagree after a crash, and every copy of the file carries its digest. It covers every byte torch.save wrote
    except the comment's 2-byte length. load_checkpoint recomputes it before loading; the file stays an ordinary
    torch.save file that torch.load and any zip tool read.
    """
    path = _check_save_path(path)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temporary, "x+b") as file:  # "x": never overwrite anything, not even a stray temporary file
            torch.save(obj, file)
            _append_digest(file)
            file.flush()
            # Flushed before the new name points at them (on macOS the drive may still hold them in its cache):
            os.fsync(file.fileno())
        os.replace(temporary, path)  # one step: `path` names the old file or the new one, never half of one
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def load_checkpoint(
    path: str | os.PathLike,
    map_location: Any = "cpu",
    *,
    weights_only: bool = True,
    safe_globals: Iterable[Any] = (),
) -> Any:
    """torch.load with weights_only=True and tensors on `map_location`, after checking the file's SHA-256 digest.

    `safe_globals` lists your own trusted classes that the file may hold; weights_only=False runs any code the file
    asks for, so pass it only for a file you made yourself. Every failure is a CheckpointError that says what to do.
    A file from plain torch.save has no digest and loads without that check. A garbled digest record is refused, and
    so is a zip file whose last record announces a comment of another length than the bytes that follow it (cut
    short, damaged, or with bytes appended); a file whose last record is itself cut off is refused by torch.load.
    """
    path = _check_load_arguments(path, map_location, weights_only, safe_globals)
    verify_digest(path)
    try:
        with torch.serialization.safe_globals(list(safe_globals)):
            return torch.load(path, map_location=map_location, weights_only=weights_only)
    except Exception as error:  # PyTorch's errors vary: UnpicklingError, RuntimeError, EOFError, OSError, ...
        raise CheckpointError(explain_load_error(error, path)) from None


def verify_digest(path: str | os.PathLike) -> None:
    """Raise CheckpointError unless the file holds the bytes save_checkpoint wrote (no digest: nothing to check)."""
    path = _check_file(_as_path(path, "path"))
    expected = _recorded_digest(path)
    if expected is None:
        return
    with open(path, "rb") as file:
        actual = _sha256(file, path.stat().st_size - RECORD_LENGTH - 2)
    if actual != expected:
        raise CheckpointError(
            in_language(
                f"'{path.name}' is damaged: its bytes no longer match the SHA-256 digest save_checkpoint recorded in "
                f"it (expected {expected[:12]}..., found {actual[:12]}...). A flipped bit on disk or a bad copy "
                "changes numbers without any other error: load an earlier checkpoint, or copy the file again from "
                "its source",
                f"'{path.name}' 已损坏：它的字节与 save_checkpoint 记录在文件里的 SHA-256 摘要不再一致"
                f"（应为 {expected[:12]}...，实际为 {actual[:12]}...）。磁盘上翻转的一位或一次出错的复制，"
                "会在没有任何其他报错的情况下改变数值：请加载更早的检查点，或者从来源重新复制这个文件",
            )
        )


def _recorded_digest(path: Path) -> str | None:
    """The SHA-256 (64 hex digits) that save_checkpoint wrote into the file, or None if it has none.

    A damaged or cut-short record must not pass for "no digest" (that would load the file unchecked), so the file
    counts as signed when its end still looks like save_checkpoint's record: the mark with at most a third of its
    bytes changed, anywhere in the tail (also cut off by the end of the file), or an end-of-archive record anywhere
    in the tail announcing a comment of exactly RECORD_LENGTH bytes, whether or not they are all there.
    """
    with open(path, "rb") as file:
        is_zip = file.read(4) == b"PK\x03\x04"  # a legacy (pre-1.6) torch.save file is not a zip archive
        file.seek(max(0, path.stat().st_size - 22 - 0xFFFF))  # a zip comment is at most 65535 bytes long
        end = file.read()
    if is_zip:
        _check_comment_length(end, path)
    tail = end[-22 - RECORD_LENGTH :]  # the archive's last record, then the comment
    if not _looks_signed(tail):
        return None  # a plain torch.save file
    digest = tail[-64:]
    if not (
        tail.startswith(END_OF_ARCHIVE)
        and tail[20:22] == RECORD_LENGTH.to_bytes(2, "little")
        and tail[22:].startswith(DIGEST_MARK)
        and re.fullmatch(rb"[0-9a-f]{64}", digest)
    ):
        raise CheckpointError(
            in_language(
                f"'{path.name}' is damaged: the digest record save_checkpoint wrote at its end is garbled. Load an "
                "earlier checkpoint, or copy the file again from its source",
                f"'{path.name}' 已损坏：save_checkpoint 写在文件末尾的摘要记录已经错乱。"
                "请加载更早的检查点，或者从来源重新复制这个文件",
            )
        )
    return digest.decode()


def _check_comment_length(end: bytes, path: Path) -> None:
    """Refuse a zip file whose last record announces a comment of another length than the bytes that follow it.

    torch.save's record announces 0 bytes and ends the file; save_checkpoint's announces RECORD_LENGTH, which follow.
    torch.load ignores a mismatch, so a damaged length field (with the mark damaged too) could otherwise make a file
    with a digest pass for one without. `end` is the file's last 22 + 65535 bytes (a zip comment is at most 65535
    bytes long); the record is the last END_OF_ARCHIVE in it, as zip readers take it. With no whole record there
    (cut short, or its signature damaged), torch.load finds no archive end and refuses the file itself.
    """
    start = end.rfind(END_OF_ARCHIVE)
    follows = len(end) - start - 22
    if start < 0 or follows < 0:
        return
    announced = int.from_bytes(end[start + 20 : start + 22], "little")
    if announced != follows:
        raise CheckpointError(
            in_language(
                f"'{path.name}' is damaged: the zip archive's last record announces a comment of {announced} bytes, "
                f"but {follows} follow it. Load an earlier checkpoint, or copy the file again from its source",
                f"'{path.name}' 已损坏：zip 归档的最后一条记录声明注释有 {announced} 字节，"
                f"但后面跟着的是 {follows} 字节。请加载更早的检查点，或者从来源重新复制这个文件",
            )
        )


def _looks_signed(tail: bytes) -> bool:
    """Whether the last 22 + RECORD_LENGTH bytes of a file still show save_checkpoint's record, even damaged or cut."""
    announced = any(
        tail[start + 20 : start + 22] == RECORD_LENGTH.to_bytes(2, "little")
        for start in range(len(tail))
        if tail.startswith(END_OF_ARCHIVE, start)
    )
    size = len(DIGEST_MARK)
    near_mark = any(  # windows that run past the end of the file count too: the record may be cut short
        sum(a == b for a, b in zip(tail[start : start + size], DIGEST_MARK, strict=False)) >= 2 * size // 3
        for start in range(len(tail))
    )
    return announced or near_mark


def _append_digest(file) -> None:
    """Write the SHA-256 of the torch.save bytes in `file` (open for reading and writing) into its zip comment."""
    size = file.seek(0, os.SEEK_END)
    file.seek(size - 22)
    last_record = file.read(22)
    if not last_record.startswith(END_OF_ARCHIVE) or last_record[20:] != b"\x00\x00":
        raise RuntimeError("torch.save did not end its zip archive with an empty comment: no room for a digest")
    digest = _sha256(file, size - 2)
    file.seek(size - 2)
    file.write(RECORD_LENGTH.to_bytes(2, "little") + DIGEST_MARK + digest.encode())


def _sha256(file, length: int) -> str:
    """SHA-256 of the first `length` bytes of an open file, read a megabyte at a time."""
    digest = hashlib.sha256()
    file.seek(0)
    while length > 0 and (chunk := file.read(min(length, 1 << 20))):
        digest.update(chunk)
        length -= len(chunk)
    return digest.hexdigest()


def harmless_payload(note: str) -> str:
    """Stand-in for an attacker's code hidden in a pickle: it only appends `note` to PAYLOAD_LOG, and returns it."""
    PAYLOAD_LOG.append(note)
    return note


# ----------------------------------------------------------------------------------------------------------------
# A small model, data order and training loop of our own (lesson 08 has the full story of the training loop).


def make_model(num_classes: int = 10) -> nn.Sequential:
    """A small digit classifier with named layers: two conv + BatchNorm blocks, dropout, and a linear `head`.

    Richer than lesson 09's `optim.digits_mlp` on purpose: a checkpoint must carry buffers (BatchNorm's running
    statistics) and a mode-dependent layer (dropout), and fine-tuning needs a `head` to replace."""
    return nn.Sequential(
        OrderedDict(
            conv1=nn.Conv2d(1, 8, kernel_size=3, padding=1),
            bn1=nn.BatchNorm2d(8),
            relu1=nn.ReLU(),
            pool1=nn.MaxPool2d(2),  # (N, 8, 8, 8) -> (N, 8, 4, 4)
            conv2=nn.Conv2d(8, 16, kernel_size=3, padding=1),
            bn2=nn.BatchNorm2d(16),
            relu2=nn.ReLU(),
            pool2=nn.MaxPool2d(2),  # (N, 16, 4, 4) -> (N, 16, 2, 2)
            flatten=nn.Flatten(),  # (N, 64)
            dropout=nn.Dropout(0.25),
            head=nn.Linear(16 * 2 * 2, num_classes),
        )
    )


def make_loader(dataset: Dataset, batch_size: int = 64, seed: int = 0) -> DataLoader:
    """A shuffling DataLoader with a random generator of its own, so its order can be saved and restored."""
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=torch.Generator().manual_seed(seed))


def new_run(
    dataset: Dataset, seed: int = 0, lr: float = 0.01, batch_size: int = 64
) -> tuple[nn.Sequential, torch.optim.Adam, DataLoader]:
    """Seed torch, then build a fresh model, its Adam optimizer and a shuffling loader: the start of a run."""
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
    after_step: Callable[[nn.Module], Any] | None = None,
) -> list[float]:
    """Train for `epochs` passes over `loader` (scheduler stepped once per epoch); return the loss of every step.

    A loop of its own rather than companion.training.train_one_epoch, because the lesson looks inside every step
    (each loss, and `after_step(model)` for the parameters) and puts frozen BatchNorm layers back in evaluation mode
    after model.train().
    """
    epochs = _check_epochs(epochs)
    losses = []
    for _ in range(epochs):
        model.train()
        if keep_frozen_batchnorm:
            eval_frozen_batchnorm(model)  # after train(), which switches every layer back to training mode
        for images, labels in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)  # shape (): the mean over the batch
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if after_step is not None:
                after_step(model)
        if scheduler is not None:
            scheduler.step()
    return losses


def flat_parameters(model: nn.Module) -> torch.Tensor:
    """Every parameter of `model` (of the module inside a DDP wrapper; no buffers) in order, in one detached 1-D CPU
    tensor: a point to measure another run's distance from (lesson 10) or, as .tolist(), what a DDP rank reports."""
    model = model.module if isinstance(model, DistributedDataParallel) else model
    return torch.cat([p.detach().cpu().flatten() for p in model.parameters()])  # (number of parameters,)


def accuracy(model: nn.Module, dataset: TensorDataset | Subset) -> float:
    """Fraction of `dataset` classified correctly: lesson 08's evaluate (evaluation mode, no autograd, the mode
    restored) on the whole data set as one batch."""
    # Imported here, not at the top: companion.training imports matplotlib, which every DDP rank would then load
    # at start although only this function needs training.
    from companion.training import evaluate

    images, labels = _images_and_labels(dataset)
    return evaluate(model, [(images, labels)])[1]


def states_equal(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    """True when two state_dicts have the same keys in the same order and torch.equal values."""
    for state in (first, second):
        if not isinstance(state, Mapping):
            kind = type(state).__name__
            raise TypeError(
                in_language(
                    f"states_equal compares state_dicts, not a {kind}: pass model.state_dict() "
                    "(or optimizer.state_dict())",
                    f"states_equal 比较的是 state_dict，而不是 {kind}：请传入 model.state_dict()"
                    "（或 optimizer.state_dict()）",
                )
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

        loaded, skipped, missing, unexpected = (
            len(self.loaded),
            len(self.skipped),
            len(self.missing),
            len(self.unexpected),
        )
        lines = [in_language(f"loaded ({loaded}):", f"已加载（{loaded}）："), *wrapped(self.loaded)]
        lines.append(
            in_language(
                f"skipped, shape differs; the model keeps its own values ({skipped}):",
                f"已跳过，形状不同；模型保留自己的值（{skipped}）：",
            )
        )
        lines += [
            in_language(f"    {key}: file {list(a)}, model {list(b)}", f"    {key}：文件 {list(a)}，模型 {list(b)}")
            for key, (a, b) in self.skipped.items()
        ]
        lines.append(
            in_language(
                f"missing from the file; the model keeps its own values ({missing}):",
                f"文件里没有；模型保留自己的值（{missing}）：",
            )
        )
        lines += wrapped(self.missing)
        lines.append(
            in_language(
                f"unexpected, not in the model; ignored ({unexpected}):",
                f"多出来的，模型里没有；已忽略（{unexpected}）：",
            )
        )
        lines += wrapped(self.unexpected)
        prefixes = {key.split(".", 1)[0] + "." for key in self.unexpected if "." in key}
        if self.unexpected and not self.loaded and len(prefixes) == 1:
            prefix = prefixes.pop()
            lines.append(
                in_language(
                    f"hint: every unexpected key starts with {prefix!r}: strip_prefix it first",
                    f"提示：每个多出来的键都以 {prefix!r} 开头：请先用 strip_prefix 去掉它",
                )
            )
        return "\n".join(lines)


def load_partial_state_dict(model: nn.Module, state_dict: Mapping[str, Any]) -> PartialLoadReport:
    """Load every tensor of `state_dict` whose name and shape fit `model`; report the rest instead of crashing."""
    if not isinstance(model, nn.Module):
        raise TypeError(_not_a_module(model))
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


def strip_prefix(state_dict: Mapping[str, Any], prefix: str = "module.") -> OrderedDict:
    """A copy of `state_dict` with `prefix` removed from the keys that start with it ('module.' from DataParallel)."""
    if not isinstance(prefix, str) or not prefix:
        raise TypeError(
            in_language(
                f"prefix must be a non-empty str such as 'module.', not {prefix!r}",
                f"prefix 必须是非空的 str，例如 'module.'，而不是 {prefix!r}",
            )
        )
    if not prefix.endswith("."):
        raise ValueError(
            in_language(
                f"prefix {prefix!r} should end with a dot, as module names do: pass {prefix + '.'!r}",
                f"prefix {prefix!r} 应当以点结尾，和模块名一样：请传入 {prefix + '.'!r}",
            )
        )
    state_dict = _check_state_dict(state_dict)
    stripped = OrderedDict((key.removeprefix(prefix), value) for key, value in state_dict.items())
    if len(stripped) != len(state_dict):
        both = next(k for k in state_dict if k.startswith(prefix) and k.removeprefix(prefix) in state_dict)
        plain = both.removeprefix(prefix)
        raise ValueError(
            in_language(
                f"both {both!r} and {plain!r} are in the state_dict: stripping {prefix!r} would "
                "merge them; pass a state_dict from one model",
                f"state_dict 里同时有 {both!r} 和 {plain!r}：去掉 {prefix!r} 会把两者合并；"
                "请传入来自同一个模型的 state_dict",
            )
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
        raise TypeError(_not_a_module(model))
    names = []
    for name, module in model.named_modules():
        parameters = list(module.parameters())
        if isinstance(module, _BatchNorm) and parameters and not any(p.requires_grad for p in parameters):
            module.eval()
            names.append(name)
    return names


# ----------------------------------------------------------------------------------------------------------------
# The resume figure (called with the lesson's own runs).


def plot_resume(
    straight: list[float], resumed: Mapping[str, list[float]], distances: Mapping[str, list[float]]
) -> "Figure":
    """Left: the loss of every step, unbroken run and resumed runs. Right: each resumed run's parameter distance
    from the unbroken run after every step since the break."""
    import matplotlib.pyplot as plt  # here, not at the top: saving and loading should not wait for matplotlib

    from companion.plotting import COLUMN_WIDTH

    start = len(straight) - len(next(iter(resumed.values())))
    steps = list(range(start + 1, len(straight) + 1))
    fig, (left, right) = plt.subplots(1, 2, figsize=(COLUMN_WIDTH, 3.8), layout="constrained")
    left.plot(range(1, len(straight) + 1), straight, color="0.75", linewidth=5, label=say("unbroken", "不中断"))
    styles = ["-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1))]
    for i, label in enumerate(resumed):
        style = {"linestyle": styles[i % len(styles)], "color": f"C{i}"}
        left.plot(steps, resumed[label], label=label, **style)
        right.plot(steps, distances[label], **style)
    for ax in (left, right):
        ax.axvline(start + 0.5, color="black", linewidth=0.8)
        ax.set_xlabel(say("step", "步"))
    left.set_ylabel(say("loss", "损失"))
    fig.legend(loc="outside lower center", ncols=3)  # below both panels: every corner of them holds a curve
    right.set_yscale("symlog", linthresh=0.01)  # linear near 0, where the exact run stays; logarithmic above
    right.set_ylim(bottom=0)  # distances are never negative
    right.set_ylabel(say("distance from unbroken", "与不中断训练的距离"))
    return fig


# ----------------------------------------------------------------------------------------------------------------
# Argument checks. Deliberately defensive where a learner's own paths and files arrive: each error names the fix.


def _as_path(path: Any, what: str) -> Path:
    """`path` as a Path, or a TypeError that says what to pass."""
    if isinstance(path, bool) or not isinstance(path, str | os.PathLike):
        kind = type(path).__name__
        raise TypeError(
            in_language(
                f"{what} must be a file path (str or pathlib.Path) like 'last.pt', not {kind}",
                f"{what} 必须是文件路径（str 或 pathlib.Path），例如 'last.pt'，而不是 {kind}",
            )
        )
    return Path(path)


def _not_a_module(model: Any) -> str:
    """The message for a `model` argument that is not an nn.Module."""
    kind = type(model).__name__
    return in_language(f"model must be an nn.Module, not {kind}", f"model 必须是 nn.Module，而不是 {kind}")


def _check_save_path(path: Any) -> Path:
    path = _as_path(path, "path")
    if path.is_dir():
        raise IsADirectoryError(
            in_language(
                f"'{path.name}' is a folder: pass a file path inside it, such as folder / 'last.pt'",
                f"'{path.name}' 是一个文件夹：请传入其中的文件路径，例如 folder / 'last.pt'",
            )
        )
    if not path.parent.is_dir():
        raise FileNotFoundError(
            in_language(
                f"the folder of '{path.name}' does not exist: create it first with path.parent.mkdir(parents=True)",
                f"'{path.name}' 所在的文件夹不存在：请先用 path.parent.mkdir(parents=True) 创建它",
            )
        )
    return path


def _check_load_arguments(path: Any, map_location: Any, weights_only: Any, safe_globals: Any) -> Path:
    path = _as_path(path, "path")
    if not isinstance(weights_only, bool):
        raise TypeError(
            in_language(
                f"weights_only must be True or False, not {weights_only!r}",
                f"weights_only 必须是 True 或 False，而不是 {weights_only!r}",
            )
        )
    if not (map_location is None or isinstance(map_location, str | torch.device | dict) or callable(map_location)):
        kind = type(map_location).__name__
        raise TypeError(
            in_language(
                "map_location must be a device such as 'cpu' or torch.device('cuda:0'), a dict such as "
                f"{{'cuda:1': 'cuda:0'}}, or a function; not {kind}",
                "map_location 必须是设备，例如 'cpu' 或 torch.device('cuda:0')，或者字典，例如 "
                f"{{'cuda:1': 'cuda:0'}}，或者函数；而不是 {kind}",
            )
        )
    if isinstance(map_location, str):
        try:
            torch.device(map_location)
        except RuntimeError:
            raise ValueError(
                in_language(
                    f"map_location {map_location!r} is not a device: pass 'cpu', 'cuda', 'cuda:0' or 'mps'",
                    f"map_location {map_location!r} 不是设备：请传入 'cpu'、'cuda'、'cuda:0' 或 'mps'",
                )
            ) from None
    if isinstance(safe_globals, str | type) or not isinstance(safe_globals, Iterable):
        raise TypeError(
            in_language(
                f"safe_globals must be a list of classes, e.g. safe_globals=[RunConfig]; not {safe_globals!r}",
                f"safe_globals 必须是由类组成的列表，例如 safe_globals=[RunConfig]；而不是 {safe_globals!r}",
            )
        )
    return _check_file(path)


def _check_file(path: Path) -> Path:
    if not path.exists():
        folder = in_language(
            "exists" if path.parent.is_dir() else "does not exist either",
            "存在" if path.parent.is_dir() else "也不存在",
        )
        raise CheckpointError(
            in_language(
                f"no checkpoint file '{path.name}' (its folder {folder}): check the path, or start training from "
                "scratch",
                f"没有检查点文件 '{path.name}'（它所在的文件夹{folder}）：请检查路径，或者从头开始训练",
            )
        )
    if path.is_dir():
        raise CheckpointError(
            in_language(
                f"'{path.name}' is a folder, not a checkpoint file: pass the file inside it",
                f"'{path.name}' 是一个文件夹，不是检查点文件：请传入其中的文件",
            )
        )
    if path.stat().st_size == 0:
        raise CheckpointError(
            in_language(
                f"'{path.name}' is empty (0 bytes), most likely from an interrupted save: load an earlier "
                "checkpoint, and save with save_checkpoint, which never leaves a partial file under the "
                "checkpoint's own name",
                f"'{path.name}' 是空的（0 字节），很可能是保存被中断了：请加载更早的检查点，并用 save_checkpoint "
                "保存，它从不会在检查点自己的名字下留下不完整的文件",
            )
        )
    return path


def _check_epochs(epochs: Any) -> int:
    return require_int(epochs, "epochs", smallest=0, example=3)  # 0: a resumed run with nothing left to train


def _images_and_labels(dataset: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """The (images, labels) tensors of a TensorDataset, or of the part of one that a Subset (random_split) picks."""
    base = dataset.dataset if isinstance(dataset, Subset) else dataset
    if not isinstance(base, TensorDataset) or len(base.tensors) != 2:
        kind = type(dataset).__name__
        raise TypeError(
            in_language(
                f"dataset must be a TensorDataset(images, labels) or a Subset of one (from random_split), not "
                f"{kind}: for a DataLoader pass loader.dataset",
                f"dataset 必须是 TensorDataset(images, labels) 或它的 Subset（来自 random_split），而不是 "
                f"{kind}：DataLoader 请传入 loader.dataset",
            )
        )
    images, labels = base.tensors
    if isinstance(dataset, Subset):
        indices = torch.as_tensor(dataset.indices, dtype=torch.long)
        return images[indices], labels[indices]  # (len(subset), ...) each
    return images, labels


def _check_state_dict(state_dict: Any) -> Mapping[str, Any]:
    """Reject what people pass instead of a state_dict, with the fix."""
    if isinstance(state_dict, nn.Module):
        raise TypeError(
            in_language(
                "pass the model's state_dict(), not the model itself: other_model.state_dict()",
                "请传入模型的 state_dict()，而不是模型本身：other_model.state_dict()",
            )
        )
    if not isinstance(state_dict, Mapping):
        kind = type(state_dict).__name__
        raise TypeError(
            in_language(
                f"state_dict must be a mapping of names to tensors, not {kind}",
                f"state_dict 必须是从名字到张量的映射，而不是 {kind}",
            )
        )
    for key, value in state_dict.items():
        if not isinstance(key, str):
            raise TypeError(
                in_language(
                    f"state_dict keys must be str names such as 'head.weight', not {key!r}",
                    f"state_dict 的键必须是 str 名字，例如 'head.weight'，而不是 {key!r}",
                )
            )
        if isinstance(value, Mapping):
            raise ValueError(
                in_language(
                    f"state_dict[{key!r}] is a dict: this looks like a whole training checkpoint; pass the model's "
                    f"part, e.g. checkpoint[{key!r}] or checkpoint['model']",
                    f"state_dict[{key!r}] 是一个字典：这看起来是整个训练检查点；请传入其中模型的部分，"
                    f"例如 checkpoint[{key!r}] 或 checkpoint['model']",
                )
            )
        if not isinstance(value, torch.Tensor):
            kind = type(value).__name__
            raise TypeError(
                in_language(
                    f"state_dict[{key!r}] is a {kind}, not a tensor: pass model.state_dict()",
                    f"state_dict[{key!r}] 是 {kind}，不是张量：请传入 model.state_dict()",
                )
            )
    return state_dict


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
