"""The course map (notebooks/course.toml) agrees with the lessons, and the lessons come in a learnable order."""

import copy
import json

import nbformat
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


def test_every_torch_name_a_lesson_uses_is_introduced_by_it_or_an_earlier_lesson():
    assert course_map.unintroduced_names(LESSONS, NOTEBOOKS) == []


def test_the_names_check_fails_when_no_lesson_or_only_a_later_one_introduces_a_used_name():
    # Lesson 01 explains torch.linspace and lesson 08 uses it again: dropped, both uses are reported;
    # listed by the last lesson instead, the two earlier uses still are.
    dropped = [
        dict(lesson, introduces=[a for a in lesson["introduces"] if a != "torch.linspace"]) for lesson in LESSONS
    ]
    problems = course_map.unintroduced_names(dropped, NOTEBOOKS)
    assert [p for p in problems if "'torch.linspace'" in p] == [
        "lesson 01 uses 'torch.linspace', which no lesson up to it introduces",
        "lesson 08 uses 'torch.linspace', which no lesson up to it introduces",
    ]
    moved = [*dropped[:-1], dict(dropped[-1], introduces=[*dropped[-1]["introduces"], "torch.linspace"])]
    assert course_map.unintroduced_names(moved, NOTEBOOKS) == problems


def test_the_names_check_fails_on_a_new_torch_name_in_a_lessons_code():
    planted = [
        "import torch.distributed as dist",
        "running = torch.cumsum(torch.arange(4), dim=0)",
        "smooth = F.gelu(torch.randn(3))  # F.gelu: a smooth relu",
        "dist.all_gather_object",
        "print(torch.optim.lr_scheduler.CosineAnnealingLR.__doc__)",
        "from torch.utils.data import SequentialSampler",
        "# a full-line comment is not code: torch.not_a_use",
    ]
    notebooks = dict(NOTEBOOKS)
    lesson = LESSONS[5]["number"]
    notebooks[lesson] = copy.deepcopy(NOTEBOOKS[lesson])
    notebooks[lesson]["cells"].append(nbformat.v4.new_code_cell("\n".join(planted)))
    appendix = nbformat.v4.new_code_cell("torch.in_an_appendix(1)", metadata={"tags": ["appendix"]})
    notebooks[lesson]["cells"].append(appendix)
    assert course_map.unintroduced_names(LESSONS, notebooks) == [
        f"lesson {lesson} uses {name!r}, which no lesson up to it introduces"
        for name in sorted(
            [
                "torch.cumsum",
                "F.gelu",
                "torch.distributed",  # a module is a name too
                "torch.distributed.all_gather_object",
                "torch.optim.lr_scheduler.CosineAnnealingLR",
                "torch.utils.data.SequentialSampler",
            ],
            key=course_map.full_path,
        )
    ]


@pytest.mark.parametrize(
    ("entry", "name", "introduces"),
    [
        ("F.one_hot", "torch.nn.functional.one_hot", True),
        ("nn.init.zeros_", "torch.nn.init.zeros_", True),
        ("nn.init", "torch.nn.init.zeros_", False),  # a module entry is the module, not what is in it
        ("torch.float32", "torch.float64", False),
        ("DataLoader", "torch.utils.data.DataLoader", True),
        (".sum", "torch.sum", True),
        ("autocast", "torch.autocast", True),
        (".sum", "torch.cumsum", False),
    ],
)
def test_how_an_introduces_entry_matches_a_torch_name(entry, name, introduces):
    assert course_map.introduced_by(entry, name) is introduces


def test_the_readme_shows_the_map():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert course_map.readme_map(LESSONS) in readme, "run `python -m tools.course_map --write`"


def test_the_readme_map_gives_each_lessons_objectives_in_both_languages():
    table = course_map.readme_map(LESSONS)
    for lesson in LESSONS:
        row = next(line for line in table.splitlines() if line.startswith(f"| {lesson['number']} |"))
        assert all(goal in row for goal in lesson["objectives"] + lesson["objectives_zh"]), lesson["number"]
        assert row.index(lesson["objectives"][-1]) < row.index(lesson["objectives_zh"][0]), "English, then Chinese"
