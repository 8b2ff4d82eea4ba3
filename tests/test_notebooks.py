"""Every lesson notebook follows every convention in tests/notebook_rules.py (stored JSON; nothing is run)."""

import json

import pytest

from notebook_rules import NOTEBOOK_DIR, RULES

NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]-*.ipynb"))


def test_lessons_are_numbered_from_00_without_gaps():
    numbers = [int(path.name[:2]) for path in NOTEBOOKS]
    assert numbers == list(range(len(NOTEBOOKS))) and len(NOTEBOOKS) >= 2
    assert not set(NOTEBOOK_DIR.glob("*.ipynb")) - set(NOTEBOOKS), "every notebook needs an NN-name.ipynb name"


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.__name__)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_follows_rule(path, rule):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert rule(notebook) == []
