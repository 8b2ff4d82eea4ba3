"""`make test` runs every notebook twice in one kernel (`--rerun-notebooks`, conftest.py): prove the second pass can
fail, on a notebook whose cell depends on state the first pass left behind, and passes on a re-run safe one."""

import os
import subprocess
import sys

import nbformat
import pytest

from notebook_rules import ROOT

SAFE = "log = []\nlog.append(1)\nprint(len(log))"  # the cell rebuilds what it reads
STATEFUL = "log = globals().get('log', [])\nlog.append(1)\nprint(len(log))"  # a second Run All prints 2


def run_twice(source: str, folder) -> subprocess.CompletedProcess:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = nbformat.v4.new_code_cell(source, execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    notebook.cells = [cell]
    path = folder / "lesson.ipynb"
    nbformat.write(notebook, path)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "--nbval"]
    command += ["--nbval-current-env", "--rerun-notebooks", str(path)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, env=os.environ.copy())


@pytest.fixture
def folder(tmp_path):
    # Inside the project, so that pytest loads the project's conftest.py with the --rerun-notebooks option.
    path = ROOT / "build" / "rerun-test" / tmp_path.name
    path.mkdir(parents=True, exist_ok=True)
    yield path
    for file in path.iterdir():
        file.unlink()
    path.rmdir()


def test_the_second_pass_catches_state_left_by_the_first(folder):
    result = run_twice(STATEFUL, folder)
    assert result.returncode == 1, result.stdout[-2000:]
    assert "1 failed, 1 passed" in result.stdout
    assert "Cell 0 (re-run)" in result.stdout


def test_a_re_run_safe_notebook_passes_both_passes(folder):
    result = run_twice(SAFE, folder)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "2 passed" in result.stdout
