"""`make progress` (tools/progress.py): not attempted on a fresh workspace, passed with the reference answers, wrong
with the checker's hint for a typical mistake, and a learner's cell that raises or loops does not stop the report."""

import importlib.util
import shutil

import nbformat
import pytest

from tools import progress as pg
from tools import workspace as ws
from tools.course import NOTEBOOK_DIR
from tools.lesson_copies import exercises, learner_copy

# Two small lessons keep this fast: lesson 00 and the scatter lesson; only the one a test answers runs.
LESSONS = [next(NOTEBOOK_DIR.glob("00-*.ipynb")), next(NOTEBOOK_DIR.glob("03-*.ipynb"))]


@pytest.fixture
def course(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for path in LESSONS:
        shutil.copy(path, notebooks / path.name)
    folder = tmp_path / "workspace"
    ws.Workspace(folder, notebooks).sync()
    return folder


def set_answers(path, answers: dict[int, str]) -> None:
    """Write answers into the learner's copy: exercise number -> source of its answer cell."""
    notebook = nbformat.read(path, as_version=4)
    for number, source in answers.items():
        notebook.cells[exercises(notebook)[number][0]].source = source
    nbformat.write(notebook, path)


def reference(path, number: int) -> str:
    source = nbformat.read(NOTEBOOK_DIR / path.name, as_version=4)
    return source.cells[exercises(source)[number][0]].source


def typical_mistake(path, number: int) -> tuple[str, str]:
    """An answer cell holding the first typical mistake of the exercise's EXERCISES table, and that mistake's hint."""
    source = nbformat.read(NOTEBOOK_DIR / path.name, as_version=4)
    check = source.cells[exercises(source)[number][1]].source
    module = check.split("from ", 1)[1].split(" import", 1)[0]
    answers = module.replace("companion.checks.", "companion.checks.answers.", 1)  # the teacher's tables
    module = answers if importlib.util.find_spec(answers) else module
    checker = pg.check_name({"source": check})
    call = check.rsplit(checker + "(", 1)[1].split(")", 1)[0]
    cell = (
        f"from {module} import EXERCISES\n\n"
        f"{call} = next(e for e in EXERCISES if e.check.__name__ == {checker!r}).mistakes[0].answer\n"
    )
    module_object = __import__(module, fromlist=["EXERCISES"])
    exercise = next(e for e in module_object.EXERCISES if e.check.__name__ == checker)
    return cell, exercise.mistakes[0].hint


def test_fresh_workspace_reports_every_exercise_not_attempted(course):
    results = pg.progress(course)
    assert len(results) >= 2 and {r.status for r in results} == {pg.NOT_ATTEMPTED}
    report = pg.table(results)
    assert "not attempted / 未作答" in report and "Lesson / 课" in report


@pytest.mark.integration
def test_reference_answers_pass_and_a_typical_mistake_gets_its_hint(course):
    lesson_03 = course / LESSONS[1].name  # lesson 00 stays untouched: reported without running it
    wrong, hint = typical_mistake(lesson_03, 1)
    set_answers(lesson_03, {0: reference(lesson_03, 0), 1: wrong})
    before = {p.name: p.read_bytes() for p in course.iterdir() if p.is_file()}

    results = pg.progress(course, timeout=300)

    statuses = [(r.lesson[:2], r.status) for r in results]
    assert statuses == [("00", pg.NOT_ATTEMPTED)] * (len(statuses) - 2) + [("03", pg.PASSED), ("03", pg.WRONG)]
    assert hint in results[-1].hint and "提示" in results[-1].hint, "the hint aimed at the mistake, in both languages"
    assert {p.name: p.read_bytes() for p in course.iterdir() if p.is_file()} == before, "the learner's files changed"
    assert not any((course / name).exists() for name in ("checkpoints", "runs")), "lessons ran in a temporary folder"


@pytest.mark.integration
def test_a_cell_that_raises_or_loops_is_reported_and_the_run_goes_on(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("def check_runs(f):\n    f()\n    print('✓ Correct / 正确: it ran')"),
        nbformat.v4.new_code_cell("raise ValueError('a learner experiment that fails')"),
        nbformat.v4.new_code_cell("def forever():\n    while True:\n        pass", metadata={"tags": ["solution"]}),
        nbformat.v4.new_code_cell("check_runs(forever)"),
        nbformat.v4.new_code_cell("def quick():\n    return 1", metadata={"tags": ["solution"]}),
        nbformat.v4.new_code_cell("check_runs(quick)"),
        nbformat.v4.new_code_cell("def later():\n    return 1", metadata={"tags": ["solution"]}),
        nbformat.v4.new_code_cell("check_runs(later)"),
    ]
    folder = tmp_path / "workspace"
    folder.mkdir()
    nbformat.write(learner_copy(notebook), folder / "50-loop.ipynb")  # stubs everywhere: not attempted
    results = pg.progress(folder, timeout=30)
    assert [r.status for r in results] == [pg.NOT_ATTEMPTED] * 3
    nbformat.write(notebook, folder / "50-loop.ipynb")  # the learner's answers
    results = pg.progress(folder, timeout=1)
    assert [r.status for r in results] == [pg.WRONG, pg.PASSED, pg.PASSED]
    assert "loop" in results[0].hint


def test_strict_exits_non_zero_unless_all_passed(course, capsys):
    assert pg.main(["--workspace", str(course)]) == 0
    assert "通过 0，有误 0" in capsys.readouterr().out
    assert pg.main(["--workspace", str(course), "--strict"]) == 1
    assert pg.main(["--workspace", str(course / "missing")]) == 0 and "make lab" in capsys.readouterr().out
