"""Course benchmark: run every notebook as nbval does (fresh kernel, cells in order) and print what a class waits for.

Per notebook: wall time, the floor (kernel start plus the setup cell's imports, measured in the same run), time
above the floor, the slowest cell, and the kernel's peak memory. Then the totals, the targets, and the wall time of
one real serial `pytest --nbval` run. Usage: python -m tools.bench [NOTEBOOK ...]
"""

import argparse
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tools.course import ROOT, lesson_files

TARGET_TOTAL_S, TARGET_CELL_S, TARGET_MEMORY_MIB = 120.0, 10.0, 1024.0
# Run All that feels instant: each lesson's wall time, and the course's at most 3x what kernels and imports cost.
TARGET_LESSON_S, TARGET_DDP_LESSON_S, TARGET_FLOOR_RATIO = 8.0, 12.0, 3.0
PEAK_MEMORY = "import resource, sys; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"


@dataclass
class NotebookTiming:
    """What one notebook costs."""

    name: str
    wall_s: float
    floor_s: float
    slowest_cell: int
    slowest_s: float
    peak_mib: float


def cell_seconds(cell: nbformat.NotebookNode) -> float:
    """Seconds a cell ran, from nbclient's recorded timestamps."""
    timing = cell.metadata.get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return 0.0
    return (datetime.fromisoformat(end.rstrip("Z")) - datetime.fromisoformat(start.rstrip("Z"))).total_seconds()


def max_rss_mib(text: str) -> float:
    """ru_maxrss as MiB: kilobytes on Linux, bytes on macOS."""
    value = float(text)
    return value / 2**20 if sys.platform == "darwin" else value / 1024


def run_notebook(path: Path) -> NotebookTiming:
    """Execute `path` in a fresh kernel in its own folder; time each cell and read the kernel's peak memory."""
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(PEAK_MEMORY))
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=600,
        allow_errors=True,
        record_timing=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            client.execute_cell(cell, index)
            if index == first_code_index(notebook):
                floor = time.perf_counter() - start  # kernel start + setup cell (imports torch, matplotlib)
    wall = time.perf_counter() - start
    peak = max_rss_mib("".join(o.get("text", "") for o in notebook.cells[-1].outputs))
    seconds = [cell_seconds(c) if c.cell_type == "code" else 0.0 for c in notebook.cells[:-1]]
    seconds[first_code_index(notebook)] = 0.0  # the setup cell is the floor, not a lesson cell
    slowest = max(range(len(seconds)), key=seconds.__getitem__)
    return NotebookTiming(path.name, wall, floor, slowest, seconds[slowest], peak)


def lesson_target(name: str) -> float:
    """A lesson's target wall time: lesson 12's ranks each start a Python and import torch again."""
    return TARGET_DDP_LESSON_S if name.startswith("12-") else TARGET_LESSON_S


def first_code_index(notebook: nbformat.NotebookNode) -> int:
    """Index of the setup cell, the first code cell."""
    return next(i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code")


def nbval_wall(paths: list[Path]) -> float:
    """Wall seconds of one serial `pytest --nbval` run over `paths`, exactly as `make test` runs the notebooks."""
    command = [sys.executable, "-m", "pytest", "-q", "--nbval", "--nbval-current-env", *map(str, paths)]
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Print the per-notebook table, the totals and how they compare with the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.notebooks or lesson_files()
    print(f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '(unset)')}, {os.cpu_count()} CPUs")
    print(f"{'notebook':<34}{'wall s':>8}{'floor s':>9}{'above s':>9}{'slowest cell':>14}{'peak MiB':>10}")
    timings = []
    for path in paths:
        t = run_notebook(path)
        timings.append(t)
        slowest = f"#{t.slowest_cell} {t.slowest_s:.2f}s"
        print(
            f"{t.name:<34}{t.wall_s:>8.2f}{t.floor_s:>9.2f}{t.wall_s - t.floor_s:>9.2f}{slowest:>14}{t.peak_mib:>10.0f}"
        )
    total = sum(t.wall_s for t in timings)
    floors = sum(t.floor_s for t in timings)
    print(f"{'total':<34}{total:>8.2f}{floors:>9.2f}{total - floors:>9.2f}")
    serial = nbval_wall(paths)
    worst_cell = max(timings, key=lambda t: t.slowest_s)
    worst_memory = max(timings, key=lambda t: t.peak_mib)
    slow = [t for t in timings if t.wall_s > lesson_target(t.name)]
    checks = [
        (
            "every lesson's wall time: "
            + (", ".join(f"{t.name[:2]} {t.wall_s:.1f} s" for t in slow) + " over" if slow else "all within"),
            not slow,
            f"<= {TARGET_LESSON_S:.0f} s, lesson 12 <= {TARGET_DDP_LESSON_S:.0f} s",
        ),
        (
            f"the course: {total:.1f} s, {total / floors:.1f}x its floor of {floors:.1f} s",
            total <= TARGET_FLOOR_RATIO * floors,
            f"<= {TARGET_FLOOR_RATIO:.0f}x",
        ),
        (
            f"pytest --nbval, serial, all notebooks: {serial:.1f} s",
            serial <= TARGET_TOTAL_S,
            f"<= {TARGET_TOTAL_S:.0f} s",
        ),
        (
            f"slowest cell: {worst_cell.slowest_s:.2f} s ({worst_cell.name} #{worst_cell.slowest_cell})",
            worst_cell.slowest_s <= TARGET_CELL_S,
            f"<= {TARGET_CELL_S:.0f} s",
        ),
        (
            f"largest kernel: {worst_memory.peak_mib:.0f} MiB ({worst_memory.name})",
            worst_memory.peak_mib <= TARGET_MEMORY_MIB,
            f"<= {TARGET_MEMORY_MIB:.0f} MiB",
        ),
    ]
    for text, ok, target in checks:
        print(f"{'PASS' if ok else 'MISS'}  {text}  (target {target})")
    print(f"this process's peak memory: {max_rss_mib(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)):.0f} MiB")
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
