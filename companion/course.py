"""Lesson 00: the one-call notebook setup, the environment report and the seeding exercise."""

import inspect
import platform
import random

import matplotlib
import numpy as np
import torch

from companion.plotting import use_course_style


def setup_notebook(seed: int = 0) -> None:
    """Make a lesson print the same thing on every run and machine: seeds, one thread, print options, plot style."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int such as 0, not {type(seed).__name__}")
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed must be between 0 and 2**32 - 1 (NumPy's limit), not {seed}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA and MPS device
    # Sums over many elements round differently when split over several threads.
    torch.set_num_threads(1)
    torch.set_printoptions(profile="default")
    np.set_printoptions(legacy=False, precision=8, suppress=False)
    use_course_style()
    _use_notebook_display()
    print(f"Ready / 准备就绪: seed {seed}, 1 CPU thread, default print options, course plot style")


def environment_report() -> str:
    """Versions and accelerators of this machine, one per line: what to paste into a bug report."""
    mps = getattr(torch.backends, "mps", None)
    lines = [
        f"Python      {platform.python_version()}",
        f"PyTorch     {torch.__version__}",
        f"NumPy       {np.__version__}",
        f"Matplotlib  {matplotlib.__version__}",
        f"CUDA        {torch.cuda.is_available()} ({torch.cuda.device_count()} device(s))",
        f"MPS         {bool(mps and mps.is_available())}",
    ]
    lines += [f"  cuda:{i}  {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count())]
    return "\n".join(lines)


def _use_notebook_display() -> None:
    """In a notebook: short expected errors (`Type: message`), and figures stored at 2x pixel density."""
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: nothing to configure
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return
    # A learner needs the failing line (the cell above it) and `Type: message`, not 60 frames of PyTorch internals.
    shell.InteractiveTB.set_mode(mode="Minimal")  # what %xmode Minimal does, without its printed notice
    # 2x PNGs display at the same size but print sharp (200 ppi at figure.dpi 100).
    shell.run_line_magic("config", "InlineBackend.figure_formats = ['retina']")


def show_source(obj: object) -> None:
    """Print the source code of a function or class, so the page (and the handout) shows the code itself."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)):
        raise TypeError(f"show_source takes a function, method or class, not {type(obj).__name__}")
    print(inspect.getsource(obj).rstrip())
