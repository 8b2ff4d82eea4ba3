"""After `make execute`: rewrite stored tracebacks so they name files relative to the project or site-packages.

A traceback frame stores an absolute path (`/home/ada/course/.venv/lib/python3.11/site-packages/torch/...`), which
differs per machine and tells a learner nothing. `torch/nn/functional.py:3555` says the same, everywhere.
Usage: python -m tools.tidy_errors NOTEBOOK ...
"""

import re
import sys
from pathlib import Path

import nbformat

from tools.course import ROOT

SITE_PACKAGES = re.compile(r"(?:[A-Za-z]:)?[\\/][^\s:\"']*?[\\/](?:site|dist)-packages[\\/]")


def tidy_frame(frame: str, root: str = str(ROOT)) -> str:
    """One traceback frame with machine-specific path prefixes removed."""
    return SITE_PACKAGES.sub("", frame).replace(root + "/", "")


def tidy_notebook(path: Path) -> int:
    """Tidy every stored traceback of one notebook in place; return how many frames changed."""
    notebook = nbformat.read(path, as_version=4)
    changed = 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                tidy = [tidy_frame(frame) for frame in output.traceback]
                changed += sum(a != b for a, b in zip(tidy, output.traceback, strict=True))
                output.traceback = tidy
    if changed:
        nbformat.write(notebook, path)
    return changed


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(f"{name}: {tidy_notebook(Path(name))} traceback frame(s) tidied")
