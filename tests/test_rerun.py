"""`make rerun` runs every notebook twice in one kernel (`--rerun-notebooks`, conftest.py): prove the second pass can
fail, on a notebook whose cell depends on state the first pass left behind, and passes on a re-run safe one."""

import os
import subprocess
import sys

import nbformat
import pytest

from tools.course import ROOT

SAFE = "log = []\nlog.append(1)\nprint(len(log))"  # the cell rebuilds what it reads
STATEFUL = "log = globals().get('log', [])\nlog.append(1)\nprint(len(log))"  # a second Run All prints 2


def lesson(source: str):
    """A one-cell notebook whose stored output is "1"."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = nbformat.v4.new_code_cell(source, execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    notebook.cells = [cell]
    return notebook


@pytest.fixture
def folder(tmp_path):
    # Inside the project, so that pytest loads the project's conftest.py with the --rerun-notebooks option.
    path = ROOT / "build" / "rerun-test" / tmp_path.name
    path.mkdir(parents=True, exist_ok=True)
    yield path
    for file in path.iterdir():
        file.unlink()
    path.rmdir()


@pytest.mark.integration
def test_the_second_pass_fails_on_state_left_by_the_first_and_passes_a_safe_notebook(folder):
    for name, source in (("safe", SAFE), ("stateful", STATEFUL)):
        nbformat.write(lesson(source), folder / f"{name}.ipynb")
    command = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-o", "addopts=", "--nbval"]
    command += ["--nbval-current-env", "--rerun-notebooks", str(folder)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, env=os.environ.copy())
    # -rA's summary: "PASSED id" and, as wide as the terminal allows, "FAILED id - reason"
    outcomes = sorted(
        line.split(" - ")[0] for line in result.stdout.splitlines() if line.startswith(("PASSED", "FAILED"))
    )
    where = f"build/rerun-test/{folder.name}"
    assert outcomes == [
        f"FAILED {where}/stateful.ipynb::Cell 0 (re-run)",  # the second Run All printed 2
        f"PASSED {where}/safe.ipynb::Cell 0",
        f"PASSED {where}/safe.ipynb::Cell 0 (re-run)",
        f"PASSED {where}/stateful.ipynb::Cell 0",
    ], result.stdout[-2000:]
    assert result.returncode == 1
