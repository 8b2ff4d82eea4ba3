"""Every exercise's table of typical wrong answers (`EXERCISES` in companion/checks/<module>.py): the reference
answer passes, each mistake is rejected with the hint aimed at it, and every checker has a table."""

import ast
import contextlib
import importlib
import inspect
import io
import json
import pkgutil
from pathlib import Path

import pytest

import companion
import companion.checks
from companion.exercises import PASS_MARK, Exercise, WrongAnswer
from notebook_rules import CJK, NOTEBOOK_DIR

CHECK_MODULES = [
    importlib.import_module(f"companion.checks.{info.name}") for info in pkgutil.iter_modules(companion.checks.__path__)
]
ROWS = [(module, exercise) for module in CHECK_MODULES for exercise in getattr(module, "EXERCISES", [])]


def row_id(row) -> str:
    module, exercise = row
    return f"{module.__name__.rsplit('.', 1)[1]}.{exercise.check.__name__}"


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_the_reference_answer_passes(row):
    _, exercise = row
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exercise.check(exercise.reference)
    assert out.getvalue().startswith(PASS_MARK), out.getvalue()
    english, chinese = out.getvalue().split("\n", 1)
    assert not CJK.search(english.removeprefix(PASS_MARK)) and CJK.search(chinese), "pass line in both languages"


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_every_typical_mistake_is_rejected_with_its_own_hint(row):
    _, exercise = row
    assert len(exercise.mistakes) >= 3, "each exercise lists at least three typical wrong answers"
    for mistake in exercise.mistakes:
        with contextlib.redirect_stdout(io.StringIO()), pytest.raises(WrongAnswer) as caught:
            exercise.check(mistake.answer)
        hint = str(caught.value)
        assert mistake.hint in hint, f"{mistake.what!r}: the hint should say {mistake.hint!r}, got {hint!r}"
        english, chinese = hint.split("\n提示：", 1)
        assert not CJK.search(english) and CJK.search(chinese), f"{mistake.what!r}: the hint needs both languages"


def test_rows_are_distinct_mistakes_with_more_than_one_hint():
    # Two mistakes with one cause may share a hint (calling model.eval() late or never); a table whose every
    # mistake gets the same hint would be a checker that diagnoses nothing.
    for module, exercise in ROWS:
        assert isinstance(exercise, Exercise)
        whats = [m.what for m in exercise.mistakes]
        assert len(set(whats)) == len(whats), f"{row_id((module, exercise))}: a mistake is listed twice"
        assert len({m.hint for m in exercise.mistakes}) >= 3, f"{row_id((module, exercise))}: too few distinct hints"


def test_every_checker_has_a_table():
    tabled = {exercise.check for _, exercise in ROWS}
    for module in CHECK_MODULES:
        checkers = [f for name, f in inspect.getmembers(module, inspect.isfunction) if name.startswith("check_")]
        for checker in checkers:
            if checker.__module__ == module.__name__:
                assert checker in tabled, f"{module.__name__}.{checker.__name__} has no EXERCISES row"


def test_no_checker_outside_companion_checks():
    for path in Path(companion.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [
            node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("check_")
        ]
        assert not names, f"{path.name} defines {names}: checkers live in companion/checks/"


def test_every_checker_a_lesson_calls_is_tabled():
    tabled = {exercise.check.__name__ for _, exercise in ROWS}
    for path in sorted(NOTEBOOK_DIR.glob("[0-9][0-9]-*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for cell in notebook["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and "solution" not in cell["metadata"].get("tags", []):
                called = {w.split("(")[0] for w in source.split() if w.startswith("check_") and "(" in w}
                assert called <= tabled, f"{path.name} calls {called - tabled}, which have no EXERCISES row"
