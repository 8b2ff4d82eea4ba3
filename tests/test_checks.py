"""Every exercise's table of typical wrong answers (`EXERCISES` in companion/checks/<module>.py): the reference
answer passes, each mistake is rejected with the hint aimed at it, and every checker has a table."""

import ast
import contextlib
import importlib
import inspect
import io
import json
import pkgutil
import random
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import companion
import companion.checks
import companion.checks.answers
from companion import exercises
from companion.exercises import PASS_MARK, Exercise, WrongAnswer, call_learner, sandbox
from tests.bad_inputs import bad
from tools.course import CJK, lesson_files
from tools.handout.bundle import COMPARED_WITH_PYTORCH, answer_leaks, lesson_answers, reference_answers

CHECK_MODULES = [
    importlib.import_module(f"companion.checks.{info.name}")
    for info in pkgutil.iter_modules(companion.checks.__path__)
    if info.name != "answers"
]
ANSWER_MODULES = [
    importlib.import_module(f"companion.checks.answers.{info.name}")
    for info in pkgutil.iter_modules(companion.checks.answers.__path__)
]
# A table lives in companion/checks/answers/<module>.py (the teacher's part), or still beside its checker.
ROWS = [
    (module, exercise) for module in ANSWER_MODULES + CHECK_MODULES for exercise in getattr(module, "EXERCISES", [])
]


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
def test_other_correct_answers_pass(row):
    _, exercise = row
    for answer in exercise.right:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exercise.check(answer)
        assert out.getvalue().startswith(PASS_MARK), f"a correct answer was rejected: {out.getvalue()}"


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


def test_every_mistake_is_named_in_chinese_too():
    # The Chinese teacher's lesson plan lists the mistakes by `what_zh` (tools/handout/plan.py).
    for module, exercise in ROWS:
        for mistake in exercise.mistakes:
            assert re.search(CJK, mistake.what_zh), f"{row_id((module, exercise))}: {mistake.what!r} has no what_zh"
        whats = [m.what_zh for m in exercise.mistakes]
        assert len(set(whats)) == len(whats), f"{row_id((module, exercise))}: two mistakes share a Chinese name"


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
    for path in lesson_files():
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for cell in notebook["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and "solution" not in cell["metadata"].get("tags", []):
                called = {w.split("(")[0] for w in source.split() if w.startswith("check_") and "(" in w}
                assert called <= tabled, f"{path.name} calls {called - tabled}, which have no EXERCISES row"


def _reseeds(x):
    torch.manual_seed(0)
    return x * 2


def _draws_from_numpy(x):
    return x + float(np.random.rand())


def _draws_from_python(x):
    random.random()
    return x * 2


def _leaves_autograd_off(x):
    torch.set_grad_enabled(False)
    return x * 2


def _changes_default_dtype(x):
    torch.set_default_dtype(torch.float64)
    return x * 2


def _doubles_in_place(x):
    return x.mul_(2)


def _sets_grad(x):
    x.grad = torch.zeros_like(x)
    return x.detach() * 2


def _leaves_a_child_in_eval(model):
    model.training = True  # the flag of the top module only: its children keep eval mode
    return model


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (_reseeds, "global random generator"),
        (_draws_from_numpy, "NumPy's global generator"),
        (_draws_from_python, "Python's global `random` module"),
        (_leaves_autograd_off, "Autograd was still switched off"),
        (_changes_default_dtype, "default dtype"),
        (_doubles_in_place, "changed its argument number 1"),
        (_sets_grad, "changed its argument number 1"),
    ],
)
def test_the_harness_names_each_side_effect_and_restores_the_state(answer, hint):
    rng, grad, dtype = torch.random.get_rng_state(), torch.is_grad_enabled(), torch.get_default_dtype()
    with pytest.raises(WrongAnswer, match=hint):
        call_learner(answer, torch.ones(3, requires_grad=answer is _sets_grad))
    assert torch.equal(torch.random.get_rng_state(), rng) and torch.is_grad_enabled() == grad
    assert torch.get_default_dtype() == dtype


def test_the_harness_sees_a_module_whose_child_keeps_another_mode():
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout())
    model.eval()
    model.training = False
    with pytest.raises(WrongAnswer, match="a module's mode"):
        call_learner(_leaves_a_child_in_eval, model)


def _zeroes_the_gradients(model):
    model.zero_grad()
    return model(torch.ones(1, 2))


def test_the_harness_keeps_a_modules_gradients_to_compare_with():
    """copy.deepcopy leaves out an nn.Parameter's .grad: the harness keeps it, so a function that reads a model whose
    gradients are set passes, and one that clears them is caught."""
    model = nn.Linear(2, 1)
    model(torch.ones(1, 2)).sum().backward()
    call_learner(lambda m: m(torch.ones(1, 2)), model)
    with pytest.raises(WrongAnswer, match=r"\.grad"):
        call_learner(_zeroes_the_gradients, model)


def test_the_harness_compares_plain_python_arguments_too():
    call_learner(sum, [1, 2, 3])
    with pytest.raises(WrongAnswer, match="changed its argument number 2"):
        call_learner(lambda first, values: values.append(4), "a", [1, 2, 3])
    with pytest.raises(WrongAnswer, match="changed its argument number 1"):
        call_learner(lambda pairs: pairs[0].reverse(), [[1, 2], (3, torch.ones(1))])


def test_the_harness_lets_a_correct_answer_through_and_allows_what_the_exercise_is_about():
    assert torch.equal(call_learner(lambda x: x * 2, torch.ones(2)), torch.full((2,), 2.0))
    with sandbox(may_change=frozenset({"torch_rng"})):
        torch.manual_seed(3)


COMPANION = Path(companion.__file__).parent
LESSON_PATHS = lesson_files()


# The search itself lives in tools/handout/bundle.py, which runs it on the student bundle too (tests/test_handout.py).
@pytest.mark.parametrize("path", LESSON_PATHS, ids=lambda p: p.stem)
def test_no_answer_ships_outside_the_answers(path):
    leaks = answer_leaks(COMPANION, lesson_answers(path))
    assert leaks == {}, "move reference answers to companion/checks/answers/ (left out of the student bundle)"


def test_no_answers_table_function_ships_outside_the_answers():
    answers = {name: lines for name, lines in reference_answers().items() if name not in COMPARED_WITH_PYTORCH}
    assert answer_leaks(COMPANION, answers) == {}, "keep reference and right answers in companion/checks/answers/"


def test_an_answer_is_found_in_shipped_code_but_not_in_the_answers(tmp_path):
    name, solution = next((n, s) for path in LESSON_PATHS for n, s in lesson_answers(path).items() if len(s) >= 2)
    body = "".join(f"    {line}\n" for line in solution)
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "course.py").write_text(f"def reference():\n{body}", encoding="utf-8")
    assert answer_leaks(tmp_path, {name: solution}) == {}
    (tmp_path / "course.py").write_text(f"def reference():\n{body}", encoding="utf-8")
    assert answer_leaks(tmp_path, {name: solution}) == {name: ["course.py"]}
    (tmp_path / "course.py").write_text(f"def idiom():\n    {solution[0]}\n", encoding="utf-8")
    assert answer_leaks(tmp_path, {name: solution}) == {}, "one line of a longer answer is an idiom, not the answer"


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(
        exercises.require,
        (torch.tensor([True, False]), "hint", "提示"),
        TypeError,
        "reduce it to one bool with .all() or .any()",
        "tensor-condition",
    ),
]
