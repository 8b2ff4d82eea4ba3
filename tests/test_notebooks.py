"""Every lesson notebook follows every convention in tools/notebook_rules.py (stored JSON; nothing is run)."""

import json

import pytest

from tools.course import NOTEBOOK_DIR, lesson_files
from tools.notebook_rules import RULES

NOTEBOOKS = lesson_files()


def test_lessons_are_numbered_from_00_without_gaps():
    numbers = [int(path.name[:2]) for path in NOTEBOOKS]
    assert numbers == list(range(len(NOTEBOOKS))) and len(NOTEBOOKS) >= 2
    assert not set(NOTEBOOK_DIR.glob("*.ipynb")) - set(NOTEBOOKS), "every notebook needs an NN-name.ipynb name"


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.__name__)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_follows_rule(path, rule):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert rule(notebook) == []
