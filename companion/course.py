"""Lesson 00: the one-call notebook setup, the environment report and the seeding exercise."""

import inspect
import linecache
import os
import platform
import random
import traceback

import matplotlib
import numpy as np
import torch

from companion._validate import require_int
from companion.exercises import WrongAnswer
from companion.language import by_language, in_language
from companion.plotting import use_course_style


def setup_notebook(seed: int = 0) -> None:
    """Make a lesson print the same on every run and machine: seeds, one thread, AVX2 kernels, print options, style."""
    require_int(seed, "seed", example=0)
    if not 0 <= seed < 2**32:
        raise ValueError(
            in_language(
                f"seed must be between 0 and 2**32 - 1 (NumPy's limit), not {seed}",
                f"seed 必须在 0 到 2**32 - 1 之间（NumPy 的上限），而不是 {seed}",
            )
        )
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA and MPS device
    # Sums over many elements round differently when split over several threads.
    torch.set_num_threads(1)
    _pin_x86_kernels()
    torch.set_printoptions(profile="default")
    np.set_printoptions(legacy=False, precision=8, suppress=False)
    use_course_style()
    _use_notebook_display()
    settings = f"seed {seed}, 1 CPU thread, default print options, course plot style"
    print(
        by_language(
            f"Ready: {settings}",
            f"准备就绪：随机种子 {seed}，1 个 CPU 线程，默认打印选项，课程绘图样式",
            f"Ready / 准备就绪: {settings}",
        )
    )


# PyTorch's own kernels, MKL's matrix products and oneDNN's convolutions each pick the widest vector instructions
# the CPU has; AVX-512 and AVX2 add in other orders, so a trained model's accuracy can differ in its last digit.
# MKL honours MKL_CBWR=AVX2 on Intel CPUs only (on AMD it keeps its own choice, MKL_VERBOSE says CNR:AUTO).
AVX2_PINS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def _pin_x86_kernels() -> None:
    """On an x86 CPU with AVX2, use the AVX2 kernels even where AVX-512 exists: the same numbers on both kinds.

    Each library reads its variable once, when PyTorch first calls it (one matrix product is enough), so this works
    only before the first tensor operation (the lessons call it in their first cell); a value already set is kept.
    Arm CPUs (Apple, Graviton) have other kernels, and their last digits may differ from the stored outputs.
    """
    # A private helper; torch.backends.cpu.get_cpu_capability() would fix PyTorch's choice before the pin.
    if torch.cpu._is_avx2_supported():
        for name, value in AVX2_PINS.items():
            os.environ.setdefault(name, value)


def environment_report() -> str:
    """Versions and accelerators of this machine, one per line: what to paste into a bug report."""
    mps = getattr(torch.backends, "mps", None)
    cuda, count = torch.cuda.is_available(), torch.cuda.device_count()
    lines = [
        f"Python      {platform.python_version()}",
        f"PyTorch     {torch.__version__}",
        f"NumPy       {np.__version__}",
        f"Matplotlib  {matplotlib.__version__}",
        in_language(f"CUDA        {cuda} ({count} device(s))", f"CUDA        {cuda}（{count} 个设备）"),
        f"MPS         {bool(mps and mps.is_available())}",
    ]
    lines += [f"  cuda:{i}  {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count())]
    return "\n".join(lines)


def _use_notebook_display() -> None:
    """In a notebook: short errors (the line of a cell that raised, then `Type: message`), and figures stored at 2x
    pixel density with a vector copy."""
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: nothing to configure
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return
    # A learner needs the failing line and `Type: message`, not 60 frames of PyTorch internals.
    shell.InteractiveTB.set_mode(mode="Minimal")  # what %xmode Minimal does, without its printed notice
    _show_raising_line(shell)
    # 2x PNGs display at the same size and stay sharp on a high-density screen (200 ppi at figure.dpi 100).
    _keep_a_vector_copy()
    shell.run_line_magic("config", "InlineBackend.figure_formats = ['retina']")


def _keep_a_vector_copy() -> None:
    """Each figure's PNG output also carries the figure as SVG, in its metadata (`vector_copy`), for the printed
    handout (tools/handout/editions.py): Lab shows the PNG, and nbval compares an output's data, not its metadata.
    IPython builds the inline backend's PNG formatter from `pylabtools.retina_figure` each time it selects formats,
    so the copy is added there."""
    from IPython.core import pylabtools

    retina = pylabtools.retina_figure
    if getattr(retina, "keeps_vector_copy", False):
        return  # setup_notebook() runs again on a second Run All

    def retina_with_vector_copy(figure, base64=False, **kwargs):
        made = retina(figure, base64=base64, **kwargs)
        if made is None:  # an empty figure shows nothing
            return None
        data, metadata = made
        # No date in the SVG, so that the same figure is the same text on every run.
        svg = pylabtools.print_figure(figure, fmt="svg", metadata={"Date": None}, **kwargs)
        return data, {**metadata, "vector_copy": svg}

    retina_with_vector_copy.keeps_vector_copy = True
    pylabtools.retina_figure = retina_with_vector_copy


def _show_raising_line(shell) -> None:
    """Under `%xmode Minimal`, put the line of the notebook's own code that raised above `Type: message`: the
    innermost frame that lies in a cell (a learner's function called by a self-check, or the cell itself), never
    PyTorch's or companion's internals. A self-check's verdict (WrongAnswer) stays one message: its hint is the
    point. `%xmode Verbose` shows every frame with its variables; `%xmode Minimal` comes back to this."""
    tb = shell.InteractiveTB
    if getattr(tb, "course_raising_line", False):
        return  # setup_notebook() runs again on a second Run All
    original = tb.structured_traceback

    def structured_traceback(etype, evalue, etb=None, tb_offset=None, context=5):
        lines = original(etype, evalue, etb, tb_offset, context)
        if tb.mode != "Minimal" or isinstance(evalue, WrongAnswer) or not isinstance(evalue, BaseException):
            return lines
        return _raising_line(shell, evalue.__traceback__) + lines

    tb.structured_traceback = structured_traceback
    tb.course_raising_line = True


def _raising_line(shell, tb) -> list[str]:
    """`Cell In[7], line 3, in one_hot` and that line's source, for the innermost frame of `tb` in a notebook cell;
    [] when no frame is in a cell, or when it is the only line of the cell that raised (the line is in plain view)."""
    found = []
    for frame, line_number in traceback.walk_tb(tb):
        cell = shell.compile.format_code_name(frame.f_code.co_filename)
        if cell is not None:
            found = [frame.f_code.co_filename, cell[1], line_number, frame.f_code.co_name]
    if not found:
        return []
    filename, label, line_number, function = found
    if function == "<module>" and len([x for x in linecache.getlines(filename) if x.strip()]) <= 1:
        return []
    where = f"Cell {label}, line {line_number}" + ("" if function == "<module>" else f", in {function}")
    return [where, "    " + linecache.getline(filename, line_number).strip()]


def show_source(obj: object) -> None:
    """Print the source code of a function or class, so the page (and the handout) shows the code itself."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)):
        raise TypeError(
            in_language(
                f"show_source takes a function, method or class, not {type(obj).__name__}",
                f"show_source 接受函数、方法或类，而不是 {type(obj).__name__}",
            )
        )
    print(inspect.getsource(obj).rstrip())
