"""Lesson 08: choosing a device, running code in a fresh process, a picture of DataParallel, and the exercise checks.

`pick_device` picks CUDA first, then Apple's MPS, then the CPU, unless the learner says otherwise; every later lesson
that computes on an accelerator calls it.
"""

import inspect
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np
import torch

from companion.exercises import WrongAnswer, passed, require

if TYPE_CHECKING:  # matplotlib is imported only when a picture is drawn: DDP workers import this module too
    from matplotlib.figure import Figure

DEVICE_VARIABLE = "COURSE_DEVICE"

# Runs the learner's code from stdin and reports an error as one line, "TypeName: message". Python's own traceback
# would end the same way, but newer Pythons add "Did you mean ...?" to it, which would change the stored output.
_CHILD_RUNNER = """\
import sys
source = sys.stdin.read()
try:
    exec(compile(source, "<fresh process>", "exec"), {"__name__": "__main__"})
except SystemExit:
    raise
except BaseException as error:
    sys.stdout.flush()
    print(f"{type(error).__name__}: {error}", file=sys.stderr)
    sys.exit(1)
"""


def pick_device(prefer: str | None = None) -> torch.device:
    """The best available device, or `prefer` (or $COURSE_DEVICE) such as "cpu", "cuda:1" or "mps" when given."""
    wanted = prefer if prefer is not None else os.environ.get(DEVICE_VARIABLE) or None
    if wanted is None:
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if not isinstance(wanted, str):
        raise TypeError(f"prefer must be a device name such as 'cpu' or 'cuda:0', not {type(wanted).__name__}")
    try:
        device = torch.device(wanted)
    except RuntimeError as error:
        raise ValueError(f"{wanted!r} is not a device name: use 'cpu', 'cuda', 'cuda:N' or 'mps'") from error
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (device.index or 0) >= count:
            raise ValueError(f"{wanted!r} asked for, but this machine has {count} CUDA device(s): use 'cpu'")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{wanted!r} asked for, but MPS (Apple GPU) is not available here: use 'cpu'")
    elif device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"{wanted!r}: the course runs on 'cpu', 'cuda' or 'mps'")
    return device


def run_python(code: str, env: Mapping[str, str] | None = None, timeout: float = 120.0) -> None:
    """Run `code` in a fresh Python process with `env` added to the environment; print its output, re-raise its error.

    A fresh process is the only place to show settings that count at start-up, such as CUDA_VISIBLE_DEVICES.
    """
    if not isinstance(code, str):
        raise TypeError(f"code must be Python source as a str, such as 'print(1)', not {type(code).__name__}")
    if env is None:
        env = {}
    if not isinstance(env, Mapping):
        raise TypeError(f"env must be a dict of names to values, such as {{'CUDA_VISIBLE_DEVICES': ''}}, not {env!r}")
    for name, value in env.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"env holds {name!r}: {value!r}; names and values must be strings, e.g. '0' not 0")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, such as 120, not {timeout!r}")
    child = subprocess.run(
        [sys.executable, "-c", _CHILD_RUNNER],
        input=code,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    print(child.stdout, end="")
    if child.returncode != 0:
        lines = [line for line in child.stderr.splitlines() if line.strip()]
        last = lines[-1] if lines else f"exit status {child.returncode}"
        raise ChildProcessError(f"the fresh process stopped with {last}")


def _box(ax, x: float, y: float, width: float, height: float, text: str, colour: str) -> None:
    """A rounded box with centred text, in data coordinates."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (x, y), width, height, boxstyle="round,pad=0.02,rounding_size=0.08", facecolor=colour, edgecolor="0.3"
        )
    )
    ax.text(x + width / 2, y + height / 2, text, ha="center", va="center", fontsize=8.5)


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], colour: str = "0.25") -> None:
    """An arrow from `start` to `end`."""
    ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "->", "color": colour, "lw": 1.3})


def plot_data_parallel(num_gpus: int = 3) -> "Figure":
    """DataParallel (one process, a thread per GPU, everything through GPU 0) beside DDP (a process per GPU)."""
    if isinstance(num_gpus, bool) or not isinstance(num_gpus, int):
        raise TypeError(f"num_gpus must be an int such as 3, not {type(num_gpus).__name__}")
    if not 2 <= num_gpus <= 4:
        raise ValueError(f"num_gpus must be between 2 and 4 to fit the picture, not {num_gpus}")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.8))
    for ax in (left, right):
        ax.set_xlim(0, 10)
        ax.set_ylim(0, 10)
        ax.axis("off")
    step = 10.0 / num_gpus
    width = step - 0.4
    gpu_x = [0.2 + i * step for i in range(num_gpus)]
    share = f"1/{num_gpus}"
    white = {"facecolor": "white", "edgecolor": "none", "pad": 1.5}

    left.set_title("DataParallel: 1 process, 1 thread per GPU\n1 个进程，每块 GPU 一个线程", fontsize=10)
    _box(left, 2.0, 8.0, 6.0, 1.5, "GPU 0: model + whole batch\nGPU 0：模型 + 整批数据", "#f6d6a8")
    _box(left, 2.0, 0.4, 6.0, 1.5, "GPU 0: outputs, loss, gradients\nGPU 0：汇总输出、损失与梯度", "#f6d6a8")
    for i, x in enumerate(gpu_x):
        _box(left, x, 3.6, width, 2.0, f"GPU {i}\nreplica, {share} batch\n副本，{share} 批", "#cfe3f5")
        _arrow(left, (5.0, 7.95), (x + width / 2, 5.65))
        _arrow(left, (x + width / 2, 3.55), (5.0, 1.95), colour="#b5562b")
    left.text(
        5.0,
        6.8,
        "every step: split the batch, copy the model\n每一步：切分数据、复制模型",
        ha="center",
        va="center",
        fontsize=8,
        color="0.25",
        bbox=white,
    )
    left.text(
        5.0, 2.75, "gather on GPU 0 / 汇总到 GPU 0", ha="center", va="center", fontsize=8, color="#b5562b", bbox=white
    )

    right.set_title("DistributedDataParallel: 1 process per GPU\n每块 GPU 一个进程", fontsize=10)
    for i, x in enumerate(gpu_x):
        label = f"process {i}, GPU {i}\nmodel, {share} batch\n进程 {i}\n模型，{share} 批"
        _box(right, x, 5.4, width, 2.8, label, "#d5ecd4")
        if i + 1 < num_gpus:
            _arrow(right, (x + width, 7.0), (gpu_x[i + 1], 7.0), colour="#2b7a3d")
            _arrow(right, (gpu_x[i + 1], 6.6), (x + width, 6.6), colour="#2b7a3d")
    right.text(
        5.0,
        3.9,
        "only gradients travel (all-reduce)\n只交换梯度（全归约）",
        ha="center",
        va="center",
        fontsize=9,
        color="#2b7a3d",
    )
    note = "no model copies per step, no GIL shared between GPUs\n每一步不复制模型，GPU 之间不争用 GIL"
    right.text(5.0, 1.6, note, ha="center", va="center", fontsize=8.5, color="0.3")
    fig.tight_layout()
    return fig


def _tensor_cases(device: torch.device) -> list[tuple[str, torch.Tensor]]:
    """Tensors `to_numpy` must handle, built on the CPU (the same numbers everywhere), then moved to `device`."""
    generator = torch.Generator().manual_seed(8)
    weight = torch.randn(2, 3, generator=generator).to(device).requires_grad_()
    return [
        ("a float32 tensor of shape (2, 3)", torch.randn(2, 3, generator=generator).to(device)),
        ("a tensor that requires grad", weight),
        ("a model output (it has a grad_fn)", weight * 2),
        ("int64 labels", torch.randint(0, 10, (5,), generator=generator).to(device)),
        ("a bool mask", (torch.randn(4, generator=generator) > 0).to(device)),
        ("a 0-d loss", (weight**2).mean()),
        ("an empty tensor of shape (0, 4)", torch.zeros(0, 4).to(device)),
    ]


def _source(function: Callable) -> str | None:
    """The source of `function`, or None where Python cannot find it (typed at a plain prompt, or built in)."""
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return None


def check_to_numpy(to_numpy: Callable[[torch.Tensor], np.ndarray]) -> None:
    """Self-check: `to_numpy(t)` must give t's values as a NumPy array for any tensor, grad or device."""
    require(callable(to_numpy), "Pass the function itself: check_to_numpy(to_numpy), without ().")
    cases = _tensor_cases(pick_device())
    for what, tensor in cases:
        requires_grad = tensor.requires_grad
        want = tensor.detach().cpu().numpy()
        try:
            got = to_numpy(tensor)
        except Exception as error:  # turn the learner's error into a hint that names the missing step
            message = str(error)
            if isinstance(error, NotImplementedError):
                hint = "write the body of to_numpy first"
            elif "requires grad" in message:
                hint = "cut it from autograd first with .detach()"
            elif "device type tensor to numpy" in message:
                hint = "copy it to the CPU first with .cpu()"
            elif "cannot be converted to Scalar" in message:
                hint = ".item() gives one number; .numpy() works for any shape"
            else:
                hint = "see the error above"
            first_line = message.splitlines()[0] if message else ""
            raise WrongAnswer(f"to_numpy({what}) raised {type(error).__name__}: {first_line} ({hint}).") from error
        where = f"to_numpy({what})"
        require(
            isinstance(got, np.ndarray),
            f"{where} returned a {type(got).__name__}, not a NumPy array: end with .numpy() "
            "(a tensor, .tolist() or .item() is not one).",
        )
        require(got.shape == want.shape, f"{where} has shape {got.shape}, expected {want.shape}: keep the shape.")
        require(
            got.dtype == want.dtype,
            f"{where} is {got.dtype}, expected {want.dtype}: keep the data type (no .float(), no "
            "np.array(t.tolist())).",
        )
        require(np.array_equal(got, want), f"{where} holds other values than the tensor: do not change them.")
        require(
            tensor.requires_grad == requires_grad,
            f"{where} changed the caller's tensor: .detach() makes a new view, requires_grad_(False) does not.",
        )
    source = _source(to_numpy)
    if source is not None:
        require(
            re.search(r"\.data\b", source) is None,
            "It works, but .data hides the tensor from autograd's safety checks: use .detach() instead.",
        )
        require(
            re.search(r"\.cpu\(|[\"']cpu[\"']|force\s*=\s*True", source) is not None,
            "Every tensor here is on the CPU already, but on a GPU .numpy() fails: copy to the CPU with .cpu().",
        )
    passed(f"to_numpy gives the right array for {len(cases)} kinds of tensor, gradients and devices included")


def _count_cases(device: torch.device) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """Logits and labels for `count_correct`, built on the CPU, then moved to `device`."""
    generator = torch.Generator().manual_seed(8)
    logits = torch.randn(32, 5, generator=generator)
    labels = torch.randint(0, 5, (32,), generator=generator)
    all_wrong = torch.tensor([[0.0, 3.0], [5.0, 1.0], [2.0, 4.0]])
    cases = [
        ("a batch of 32 (model output)", logits.to(device).requires_grad_(), labels.to(device)),
        ("one right sample", torch.tensor([[0.1, 0.2, 0.9]]).to(device), torch.tensor([2]).to(device)),
        ("three wrong samples", all_wrong.to(device), torch.tensor([0, 1, 0]).to(device)),
        ("an empty batch", torch.zeros(0, 4).to(device), torch.zeros(0, dtype=torch.long).to(device)),
    ]
    return cases


def check_count_correct(count_correct: Callable[[torch.Tensor, torch.Tensor], int]) -> None:
    """Self-check: `count_correct(logits, labels)` must return, as a Python int, how many argmax predictions match."""
    require(callable(count_correct), "Pass the function itself: check_count_correct(count_correct), without ().")
    cases = _count_cases(pick_device())
    for what, logits, labels in cases:
        want = int((logits.argmax(dim=1) == labels).sum())
        got = count_correct(logits, labels)
        where = f"count_correct({what})"
        require(
            not isinstance(got, torch.Tensor),
            f"{where} returned a tensor: turn the 0-d count into a Python int with .item().",
        )
        require(
            not isinstance(got, np.ndarray | np.generic),
            f"{where} returned a NumPy {type(got).__name__}: .item() gives a Python int without .cpu().numpy().",
        )
        require(
            isinstance(got, int) and not isinstance(got, bool),
            f"{where} returned a {type(got).__name__}; return an int such as 7.",
        )
        require(
            not (got == len(labels) - want and got != want),
            f"{where} counted the mistakes ({got}); count where the prediction equals the label.",
        )
        require(
            got == want,
            f"{where} gives {got}, expected {want}: compare logits.argmax(dim=1) with labels, then .sum().item().",
        )
    passed(f"count_correct agrees on {len(cases)} batches, an empty one included, and returns a Python int")
