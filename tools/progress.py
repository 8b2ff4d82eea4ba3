"""The learner's progress: run each workspace lesson's exercises with their self-checks, print a bilingual table.

    python -m tools.progress [--workspace workspace] [--timeout 120] [--strict] [LESSON ...]   (make progress)

Each lesson runs in a fresh kernel, in a temporary folder, from its first cell to its last self-check (the
exercises use what the lesson built before them), one cell at a time with a time limit: a cell that raises is
recorded and the run goes on; a cell that runs too long is interrupted. The learner's files are only read.
A lesson whose cells are exactly as copied is reported "not attempted" without running it.

Exit status: 0, or with --strict 1 unless every exercise passed (for grading).
"""

import argparse
import subprocess
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from companion.exercises import shows_pass
from tools.course import ANSI, lesson_files, source
from tools.lesson_copies import check_name, exercises, is_unanswered
from tools.workspace import DEFAULT_WORKSPACE, ROOT, Workspace

PASSED, WRONG, NOT_ATTEMPTED = "passed", "wrong", "not attempted"
LABELS = {PASSED: "passed / 通过", WRONG: "wrong / 有误", NOT_ATTEMPTED: "not attempted / 未作答"}


@dataclass
class Result:
    lesson: str
    exercise: str
    status: str
    hint: str = ""


def error_of(cell: dict) -> dict | None:
    """A code cell's error output, if it raised."""
    return next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def text_of(cell: dict) -> str:
    return "".join(
        o.get("text", "") if o.get("output_type") == "stream" else o.get("data", {}).get("text/plain", "")
        for o in cell.get("outputs", [])
    )


def message(error: dict) -> str:
    return ANSI.sub("", f"{error.get('ename')}: {error.get('evalue')}").strip()


def judge(lesson: str, solution: dict, check: dict, timeout: float) -> Result:
    """One exercise's result from its answer cell and its self-check after the run."""
    name = check_name(check).removeprefix("check_") or "exercise"
    error = error_of(check)
    if (
        error is not None
        and error.get("ename") == "NotImplementedError"
        or (is_unanswered(source(solution)) and not shows_pass(text_of(check)))
    ):
        return Result(lesson, name, NOT_ATTEMPTED)
    if shows_pass(text_of(check)) and error is None:  # the pass line of any edition: en, zh or both
        return Result(lesson, name, PASSED)
    if error_of(solution) is not None:
        hint = "Your answer cell raised / 你的答案单元格出错: " + message(error_of(solution))
    elif check.get("execution_count") is None and error is None:
        hint = f"The lesson stopped before this self-check (a cell ran over {timeout:g} s) / 自检之前有单元格超时"
    elif error is not None and error.get("ename") == "WrongAnswer":
        hint = ANSI.sub("", error.get("evalue", "")).strip()
    elif error is not None and error.get("ename") == "KeyboardInterrupt":
        hint = (
            f"Stopped after {timeout:g} s: does your answer loop forever? / 超过 {timeout:g} 秒被中断：是否陷入死循环？"
        )
    elif error is not None:
        hint = "The self-check stopped with / 自检出错: " + message(error)
    else:
        hint = "The self-check printed no ✓ line / 自检没有输出 ✓"
    return Result(lesson, name, WRONG, hint)


def run_lesson(path: Path, timeout: float) -> list[Result]:
    """Run one lesson up to its last self-check in a fresh kernel; the file itself is only read."""
    notebook = nbformat.read(path, as_version=4)
    found = exercises(notebook)
    if not found:
        return []
    last = found[-1][1]
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,
        interrupt_on_timeout=True,
        record_timing=False,
    )
    with tempfile.TemporaryDirectory(prefix="course-progress-") as folder:
        client.resources = {"metadata": {"path": folder}}
        # The kernel's own stderr (ipykernel's transport notice) is not the learner's output: cells' output comes
        # back over the kernel protocol.
        with client.setup_kernel(cwd=folder, stderr=subprocess.DEVNULL):
            for index, cell in enumerate(notebook.cells[: last + 1]):
                if cell.cell_type != "code":
                    continue
                try:
                    client.execute_cell(cell, index)
                except Exception as error:  # a dead kernel or a timeout nbclient could not interrupt
                    cell.outputs = [nbformat.v4.new_output("error", ename=type(error).__name__, evalue=str(error))]
                    break
    return [judge(path.stem, notebook.cells[s], notebook.cells[c], timeout) for s, c in found]


def not_attempted(path: Path) -> list[Result]:
    notebook = nbformat.read(path, as_version=4)
    return [
        Result(path.stem, check_name(notebook.cells[c]).removeprefix("check_"), NOT_ATTEMPTED)
        for _, c in exercises(notebook)
    ]


def width(text: str) -> int:
    """Columns a string takes in a terminal (Chinese characters take two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def pad(text: str, columns: int) -> str:
    return text + " " * (columns - width(text))


def table(results: list[Result]) -> str:
    """The bilingual progress table, hints indented under wrong answers, and a count per result."""
    header = ("Lesson / 课", "Exercise / 练习", "Result / 结果")
    rows = [(r.lesson, r.exercise, LABELS[r.status]) for r in results]
    widths = [max(width(row[i]) for row in [header, *rows]) for i in range(3)]
    lines = ["  ".join(pad(cell, w) for cell, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for result, row in zip(results, rows, strict=True):
        lines.append("  ".join(pad(cell, w) for cell, w in zip(row, widths, strict=True)).rstrip())
        for hint_line in result.hint.splitlines():
            lines.append(" " * (widths[0] + widths[1] + 4) + "  " + hint_line)
    counts = {status: sum(r.status == status for r in results) for status in LABELS}
    lines.append("")
    lines.append(
        f"{counts[PASSED]} passed, {counts[WRONG]} wrong, {counts[NOT_ATTEMPTED]} not attempted / "
        f"通过 {counts[PASSED]}，有误 {counts[WRONG]}，未作答 {counts[NOT_ATTEMPTED]}"
    )
    return "\n".join(lines)


def progress(workspace_dir: Path, lessons: list[str] | None = None, timeout: float = 120, echo=print) -> list[Result]:
    """Every exercise's result in the workspace's lessons (all of them, or those whose number or name is given)."""
    workspace = Workspace(workspace_dir)
    paths = lesson_files(workspace_dir)
    if lessons:
        paths = [p for p in paths if any(p.name == x or p.name.startswith(f"{x}-") for x in lessons)]
    results = []
    for path in paths:
        if workspace.untouched(path.name):
            results += not_attempted(path)
            continue
        echo(f"Running / 运行 {path.name} ...")
        results += run_lesson(path, timeout)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lessons", nargs="*", help="lesson numbers or file names (default: every lesson)")
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--timeout", type=float, default=120, help="seconds per cell (default 120)")
    parser.add_argument("--strict", action="store_true", help="exit 1 unless every exercise passed")
    args = parser.parse_args(argv)
    folder = args.workspace if args.workspace.is_absolute() else ROOT / args.workspace
    if not folder.is_dir():
        print(f"No workspace in {folder}: run `make lab` first. / 还没有学习目录：请先运行 `make lab`。")
        return 1 if args.strict else 0
    results = progress(folder, args.lessons, args.timeout, echo=lambda line: print(line, flush=True))
    print(table(results))
    return 1 if args.strict and any(r.status != PASSED for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
