"""Each Chinese cell records the English text it renders; a changed English cell with a stale twin is named."""

import json
import shutil
import subprocess
import sys

import nbformat
import pytest

from tools import zh_sync
from tools.course import ROOT, lesson_files

NOTEBOOKS = lesson_files()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_chinese_cell_renders_the_current_english(path):
    stale = zh_sync.stale_pairs(nbformat.from_dict(json.loads(path.read_text(encoding="utf-8"))))
    assert stale == [], (
        f"{path.name}: English cells {[en for en, _ in stale]} changed since their Chinese twins were written; "
        "run `python -m tools.zh_sync` to see the diffs, revise the Chinese, then --accept"
    )


def test_a_changed_english_cell_is_named_and_accepted_by_the_tool(tmp_path):
    path = tmp_path / NOTEBOOKS[0].name
    shutil.copy(NOTEBOOKS[0], path)
    notebook = nbformat.read(path, as_version=4)
    zh_sync.accept_all(path)
    notebook = nbformat.read(path, as_version=4)
    english, chinese = zh_sync.pairs(notebook)[2]
    notebook.cells[english].source += "\n\nOne more English sentence."
    nbformat.write(notebook, path)
    assert zh_sync.stale_pairs(nbformat.read(path, as_version=4)) == [(english, chinese)]
    subprocess.run([sys.executable, "-m", "tools.zh_sync", "--accept", str(path), str(chinese)], check=True, cwd=ROOT)
    assert zh_sync.stale_pairs(nbformat.read(path, as_version=4)) == []
