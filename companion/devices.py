"""Lesson 11: choosing a device, running code in a fresh process, and a picture of DataParallel beside DDP.

`pick_device` picks CUDA first, then Apple's MPS, then the CPU, unless the learner says otherwise; every later lesson
that computes on an accelerator calls it.
"""

import os
import subprocess
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

import torch

from companion._validate import require_number
from companion.language import by_language, in_language, say

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
    if wanted is not None:
        return _usable_device(wanted)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def run_python(code: str, env: Mapping[str, str] | None = None, timeout: float = 120.0) -> None:
    """Run `code` in a fresh Python process with `env` added to the environment; print its output, re-raise its error.

    A fresh process is the only place to show settings that count at start-up, such as CUDA_VISIBLE_DEVICES.
    """
    env = _check_run_arguments(code, env, timeout)
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
        raise ChildProcessError(in_language(f"the fresh process stopped with {last}", f"新进程出错停止：{last}"))


def plot_data_parallel(num_gpus: int = 3) -> "Figure":
    """DataParallel (one process, a thread per GPU, everything through GPU 0) above DDP (a process per GPU)."""
    import matplotlib.pyplot as plt

    from companion.plotting import COLUMN_WIDTH

    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(COLUMN_WIDTH, 6.6), height_ratios=(1.0, 0.65), layout="constrained"
    )
    for ax in (top, bottom):
        ax.set_xlim(0, 10)
        ax.set_ylim(0, 10)
        ax.axis("off")
    bottom.set_ylim(1.0, 9.0)
    step = 10.0 / num_gpus
    width = step - 0.4
    gpu_x = [0.2 + i * step for i in range(num_gpus)]
    share = f"1/{num_gpus}"
    white = {"facecolor": "white", "edgecolor": "none", "pad": 1.5}

    top.set_title(f"DataParallel: {say('1 process, 1 thread per GPU', '1 个进程，每块 GPU 一个线程')}", fontsize=11)
    _box(top, 1.5, 8.0, 7.0, 1.8, say("GPU 0: model + whole batch", "GPU 0：模型 + 整批数据", "\n"), "#f6d6a8")
    _box(
        top, 1.5, 0.2, 7.0, 1.8, say("GPU 0: outputs, loss, gradients", "GPU 0：汇总输出、损失与梯度", "\n"), "#f6d6a8"
    )
    for i, x in enumerate(gpu_x):
        replica = by_language(
            f"GPU {i}: replica\n{share} batch",
            f"GPU {i}：副本\n{share} 批",
            f"GPU {i}: replica\n{share} batch\n副本，{share} 批",
        )
        _box(top, x, 3.6, width, 2.2, replica, "#cfe3f5")
        _arrow(top, (5.0, 7.95), (x + width / 2, 5.85))
        _arrow(top, (x + width / 2, 3.55), (5.0, 2.05), colour="#b5562b")
    top.text(5.0, 6.9, say("every step: split the batch, copy the model", "每一步：切分数据、复制模型"), **_note(white))
    top.text(5.0, 2.8, say("gather on GPU 0", "汇总到 GPU 0"), **_note(white, colour="#b5562b"))

    bottom.set_title(f"DistributedDataParallel: {say('1 process per GPU', '每块 GPU 一个进程')}", fontsize=11)
    for i, x in enumerate(gpu_x):
        label = by_language(
            f"process {i}, GPU {i}\nmodel, {share} batch",
            f"进程 {i}，GPU {i}\n模型，{share} 批",
            f"process {i}, GPU {i}\nmodel, {share} batch\n进程 {i}：模型，{share} 批",
        )
        _box(bottom, x, 5.6, width, 3.0, label, "#d5ecd4")
        if i + 1 < num_gpus:
            _arrow(bottom, (x + width, 7.3), (gpu_x[i + 1], 7.3), colour="#2b7a3d")
            _arrow(bottom, (gpu_x[i + 1], 6.9), (x + width, 6.9), colour="#2b7a3d")
    travel = say("gradients travel (all-reduce)", "交换梯度（全归约）")
    bottom.text(5.0, 4.6, travel, **_note(white, colour="#2b7a3d"))
    note = say("no model copies per step, no GIL shared between GPUs", "每一步不复制模型，GPU 之间不争用 GIL", "\n")
    bottom.text(5.0, 2.4, note, **_note(white, colour="0.3"))
    return fig


def _box(ax, x: float, y: float, width: float, height: float, text: str, colour: str) -> None:
    """A rounded box with centred text, in data coordinates."""
    from matplotlib.patches import FancyBboxPatch

    style = "round,pad=0.02,rounding_size=0.08"
    ax.add_patch(FancyBboxPatch((x, y), width, height, boxstyle=style, facecolor=colour, edgecolor="0.3"))
    ax.text(x + width / 2, y + height / 2, text, ha="center", va="center", fontsize=10)


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], colour: str = "0.25") -> None:
    """An arrow from `start` to `end`."""
    ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "->", "color": colour, "lw": 1.3})


def _note(background: dict, colour: str = "0.25") -> dict:
    """Text options for a centred note on the arrows."""
    return {"ha": "center", "va": "center", "fontsize": 10, "color": colour, "bbox": background}


# Argument checks: deliberately defensive, since these take a learner's device names, code and environment ---------


def _usable_device(wanted: object) -> torch.device:
    """`wanted` as a torch.device this machine has, or an error that says what to pass instead."""
    if not isinstance(wanted, str):
        kind = type(wanted).__name__
        raise TypeError(
            in_language(
                f"prefer must be a device name such as 'cpu' or 'cuda:0', not {kind}",
                f"prefer 必须是设备名，例如 'cpu' 或 'cuda:0'，而不是 {kind}",
            )
        )
    try:
        device = torch.device(wanted)
    except RuntimeError as error:
        raise ValueError(
            in_language(
                f"{wanted!r} is not a device name: use 'cpu', 'cuda', 'cuda:N' or 'mps'",
                f"{wanted!r} 不是设备名：请用 'cpu'、'cuda'、'cuda:N' 或 'mps'",
            )
        ) from error
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (device.index or 0) >= count:
            raise ValueError(
                in_language(
                    f"{wanted!r} asked for, but this machine has {count} CUDA device(s): use 'cpu'",
                    f"要求的是 {wanted!r}，但这台机器只有 {count} 个 CUDA 设备：请用 'cpu'",
                )
            )
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(
            in_language(
                f"{wanted!r} asked for, but MPS (Apple GPU) is not available here: use 'cpu'",
                f"要求的是 {wanted!r}，但这里没有 MPS（Apple GPU）：请用 'cpu'",
            )
        )
    elif device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(
            in_language(
                f"{wanted!r}: the course runs on 'cpu', 'cuda' or 'mps'",
                f"{wanted!r}：本课程只在 'cpu'、'cuda' 或 'mps' 上运行",
            )
        )
    return device


def _check_run_arguments(code: object, env: object, timeout: object) -> Mapping[str, str]:
    """run_python's arguments, or an error that names the fix; `env` as a mapping (empty when None)."""
    if not isinstance(code, str):
        kind = type(code).__name__
        raise TypeError(
            in_language(
                f"code must be Python source as a str, such as 'print(1)', not {kind}",
                f"code 必须是 str 形式的 Python 源代码，例如 'print(1)'，而不是 {kind}",
            )
        )
    if env is None:
        env = {}
    if not isinstance(env, Mapping):
        raise TypeError(
            in_language(
                f"env must be a dict of names to values, such as {{'CUDA_VISIBLE_DEVICES': ''}}, not {env!r}",
                f"env 必须是从名字到值的字典，例如 {{'CUDA_VISIBLE_DEVICES': ''}}，而不是 {env!r}",
            )
        )
    for name, value in env.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(
                in_language(
                    f"env holds {name!r}: {value!r}; names and values must be strings, e.g. '0' not 0",
                    f"env 里有 {name!r}: {value!r}；名字和值都必须是字符串，例如 '0' 而不是 0",
                )
            )
    require_number(timeout, "timeout", example=120)
    if not timeout > 0:
        raise ValueError(
            in_language(
                f"timeout must be a positive number of seconds, such as 120, not {timeout!r}",
                f"timeout 必须是正的秒数，例如 120，而不是 {timeout!r}",
            )
        )
    return env
