"""The course map (notebooks/course.toml) agrees with the lessons, and the lessons come in a learnable order."""

import json

import pytest

from tools import course, course_map
from tools.course import NOTEBOOK_DIR, ROOT, lesson_files

LESSONS = course.course_map()
NOTEBOOKS = {
    lesson["number"]: json.loads((NOTEBOOK_DIR / lesson["file"]).read_text(encoding="utf-8")) for lesson in LESSONS
}


def test_the_map_lists_every_lesson_in_order():
    files = [p.name for p in lesson_files()]
    assert [lesson["file"] for lesson in LESSONS] == files
    assert [lesson["number"] for lesson in LESSONS] == [f[:2] for f in files]


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson["number"])
def test_each_lesson_entry_is_complete(lesson):
    assert lesson["title"] and lesson["title_zh"]
    assert 3 <= len(lesson["objectives"]) <= 4 and len(lesson["objectives_zh"]) == len(lesson["objectives"])
    assert "TODO" not in lesson["objectives"] + lesson["objectives_zh"]
    assert lesson["minutes"] == course_map.estimate_minutes(NOTEBOOKS[lesson["number"]]), (
        "run python -m tools.course_map --write"
    )


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson["number"])
def test_each_lesson_opens_with_the_titles_of_the_map(lesson):
    first, second = ("".join(cell["source"]).splitlines()[0] for cell in NOTEBOOKS[lesson["number"]]["cells"][:2])
    assert first == f"# {lesson['number']} · {lesson['title']}"
    assert second == f"**第 {lesson['number']} 课 · {lesson['title_zh']}**"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson["number"])
def test_each_lesson_opens_with_its_objectives_box(lesson):
    assert course_map.box_problem(NOTEBOOKS[lesson["number"]], lesson) is None


def test_prerequisites_and_apis_come_before_they_are_used():
    assert course_map.order_problems(LESSONS, NOTEBOOKS) == []


def test_the_order_check_fails_when_an_api_is_introduced_too_late():
    # Move `.backward` from the autograd lesson to the last lesson: every earlier lesson that calls it is flagged.
    moved = [dict(lesson, introduces=[a for a in lesson["introduces"] if a != ".backward"]) for lesson in LESSONS]
    moved[-1] = dict(moved[-1], introduces=[*moved[-1]["introduces"], ".backward"])
    problems = course_map.order_problems(moved, NOTEBOOKS)
    assert any("'.backward', which lesson" in p for p in problems)


def test_the_order_check_fails_when_a_prerequisite_comes_later():
    swapped = [dict(lesson) for lesson in LESSONS]
    swapped[1] = dict(swapped[1], requires=[LESSONS[-1]["number"]])
    assert any("does not come before it" in p for p in course_map.order_problems(swapped, NOTEBOOKS))


def test_the_readme_shows_the_map():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert course_map.readme_map(LESSONS) in readme, "run `python -m tools.course_map --write`"


def test_the_readme_map_gives_each_lessons_objectives_in_both_languages():
    table = course_map.readme_map(LESSONS)
    for lesson in LESSONS:
        row = next(line for line in table.splitlines() if line.startswith(f"| {lesson['number']} |"))
        assert all(goal in row for goal in lesson["objectives"] + lesson["objectives_zh"]), lesson["number"]
        assert row.index(lesson["objectives"][-1]) < row.index(lesson["objectives_zh"][0]), "English, then Chinese"
