"""Lesson 00: the one-call notebook setup, the environment report and the seeding exercise."""

import platform
import random
from collections.abc import Callable

import matplotlib
import numpy as np
import torch

from companion.exercises import passed, require
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


def check_repeatable_draws(draw_twice: Callable[[], tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Self-check for lesson 00: `draw_twice()` must return two equal random draws of `torch.randn(3)`."""
    require(callable(draw_twice), "Pass the function itself: check_repeatable_draws(draw_twice), without ().")
    result = draw_twice()
    require(
        isinstance(result, tuple) and len(result) == 2,
        "draw_twice() should return a pair: `return first, second`.",
    )
    first, second = result
    require(
        all(isinstance(t, torch.Tensor) and t.shape == (3,) for t in (first, second)),
        "Each draw should be torch.randn(3): a tensor of shape (3,).",
    )
    require(
        first.unique().numel() == 3,
        "All three numbers are the same: draw them with torch.randn(3), not torch.zeros or torch.ones.",
    )
    require(
        torch.equal(first, second),
        "The two draws differ: call torch.manual_seed(<same number>) before each torch.randn(3).",
    )
    require(
        torch.equal(draw_twice()[0], first),
        "A second call of draw_twice() gave other numbers: seed inside the function, not once outside it.",
    )
    passed("the same seed gives the same numbers, every time")
