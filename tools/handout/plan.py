"""The teacher's lesson plan: one page before each lesson of a teacher edition, made from what the course already
knows about the lesson: its objectives (notebooks/course.toml), each section's time (the course map's estimate,
tools/course_map.py, per section), the cells worth showing live (those that draw a figure or raise on purpose), the
misconceptions its self-checks catch (the checkers' tables) and the questions for discussion.
The per-lesson teacher PDFs and the teacher books both open each lesson with it.
"""

import html
import re

import nbformat

from tools.course import CHECK_CALL, course_map, exercise_tables, source, tags
from tools.course_map import study_minutes
from tools.handout.editions import Edition, markdown_cell
from tools.handout.key import join_chinese_lines
from tools.lesson_copies import exercises

PLAN_WORDS = {
    "en": {
        "plan": "Lesson plan",
        "head": "Lesson plan · lesson {n}",
        "objectives": "Objectives",
        "timing": "Timing: about {minutes} minutes",
        "section": "Section",
        "minutes": "Minutes",
        "live": "Show live",
        "opening": "Opening: the question and the setup cell",
        "figure": "{n} figure{s}",
        "error": "{n} error{s} on purpose",
        "and": ", ",
        "catch": "Misconceptions the self-checks catch",
        "discuss": "For discussion",
    },
    "zh": {
        "plan": "教案",
        "head": "教案 · 第 {n} 课",
        "objectives": "教学目标",
        "timing": "时间安排：约 {minutes} 分钟",
        "section": "小节",
        "minutes": "分钟",
        "live": "现场演示",
        "opening": "开场：本课的问题和设置单元格",
        "figure": "{n} 幅图",
        "error": "{n} 处有意的报错",
        "and": "、",
        "catch": "自检能发现的错误",
        "discuss": "课堂讨论",
    },
}


def heading(cell: dict) -> str | None:
    """A cell's `##` heading, if it has one."""
    return next((line[3:].strip() for line in source(cell).splitlines() if line.startswith("## ")), None)


def sections(notebook: nbformat.NotebookNode) -> list[dict]:
    """The lesson's `##` sections in order (the part before the first one is the opening): each one's titles in
    both languages, its minutes by the course map's rule, and how many figures and deliberate errors it shows."""
    found = [{"en": None, "zh": None, "cells": []}]
    for index, cell in enumerate(notebook.cells):
        if "lang-en" in tags(cell) and heading(cell):
            twin = notebook.cells[index + 1] if index + 1 < len(notebook.cells) else {"source": ""}
            found.append({"en": heading(cell), "zh": heading(twin) or heading(cell), "cells": []})
        found[-1]["cells"].append(cell)
    for part in found:
        cells = part.pop("cells")
        part["minutes"] = max(1, round(study_minutes(cells)))
        part["exercises"] = sum("solution" in tags(cell) for cell in cells)
        part["errors"] = sum("raises-exception" in tags(cell) for cell in cells)
        part["figures"] = sum("image/png" in out.get("data", {}) for cell in cells for out in cell.get("outputs", []))
    return found


def misconceptions(notebook: nbformat.NotebookNode, language: str) -> list[tuple[str, list[str], str]]:
    """Per exercise: its checker, the typical wrong answers its table names and the discussion question, in
    `language`."""
    tables, found = exercise_tables(), []
    for _, check in exercises(notebook):
        name = CHECK_CALL.findall(source(notebook.cells[check]))[-1]
        exercise = tables.get(name)
        if exercise is not None:
            said = [mistake.what if language == "en" else mistake.what_zh for mistake in exercise.mistakes]
            found.append((name, said, exercise.discuss if language == "en" else exercise.discuss_zh))
    return found


def plan_text(notebook: nbformat.NotebookNode, number: str, language: str) -> str:
    """The plan of one lesson in one language, as markdown."""
    words = PLAN_WORDS[language]
    lesson = next(entry for entry in course_map() if entry["number"] == number)
    objectives = lesson["objectives"] if language == "en" else lesson["objectives_zh"]
    title = lesson["title"] if language == "en" else lesson["title_zh"]
    title = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(title))  # inside HTML, markdown is not read
    lines = [f'<p class="plan-title">{words["plan"]} · {number} · {title}</p>', "", f"**{words['objectives']}**", ""]
    lines += [f"- {objective}" for objective in objectives]
    lines += ["", f"**{words['timing'].format(minutes=lesson['minutes'])}**", ""]
    lines += [f"| {words['section']} | {words['minutes']} | {words['live']} |", "| --- | ---: | --- |"]
    for part in sections(notebook):
        counts = {kind: part[f"{kind}s"] for kind in ("figure", "error")}
        shown = [words[kind].format(n=n, s="s" if n > 1 else "") for kind, n in counts.items() if n]
        lines.append(f"| {part[language] or words['opening']} | {part['minutes']} | {words['and'].join(shown)} |")
    found = misconceptions(notebook, language)
    if found:
        lines += ["", f"**{words['catch']}**", ""]
        separator, colon = ("; ", ": ") if language == "en" else ("；", "：")
        lines += [f"- `{name}`{colon}{separator.join(said)}" for name, said, _ in found]
        questions = [question for _, _, question in found if question]
        if questions:
            lines += ["", f"**{words['discuss']}**", ""] + [f"- {question}" for question in questions]
    return join_chinese_lines("\n".join(lines))


def plan_cells(notebook: nbformat.NotebookNode, number: str, edition: Edition) -> list[nbformat.NotebookNode]:
    """The lesson plan page of a teacher edition (the bilingual one: an English page, then a Chinese one), from the
    source notebook (both languages, its stored outputs). Its own named page keeps it out of the lesson's pages."""
    cells = [
        markdown_cell(plan_text(notebook, number, language), "lesson-plan", f"plan-{number}")
        for language in edition.languages
    ]
    for cell in cells[1:]:
        cell.metadata["tags"].append("plan-second-language")  # a page of its own
    return cells


def plan_head(number: str, edition: Edition) -> str:
    """The plan page's running header: it names the lesson by number only, so that it is not taken for the lesson's
    first page (tools.handout.printing.part_starts finds a lesson by its title in the header)."""
    return " · ".join(PLAN_WORDS[language]["head"].format(n=number) for language in edition.languages)
