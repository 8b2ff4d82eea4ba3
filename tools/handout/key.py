"""The teacher's answer key: for each exercise its solution, why it works, the typical wrong answers its checker
catches with the hint each one gets, and a question for class discussion, from the exercises' EXERCISES tables.

A table names each mistake (`Mistake.what`) but holds only a phrase of its hint (`Mistake.hint`, which proves the
checker names *that* mistake); the hint a student reads, in English and Chinese, is the checker's own message, so
the key still runs each checker on each mistake, once per build.
"""

import contextlib
import functools
import io
import re

import nbformat

from companion.exercises import HINT_SEP, WrongAnswer
from companion.language import speaking
from tools.course import CHECK_CALL, CJK_PUNCTUATION, CJK_RANGES, exercise_tables
from tools.handout.editions import WORDS, Edition, lesson_title, markdown_cell, word
from tools.handout.worksheet import worksheet_answer_cells
from tools.lesson_copies import exercises

COLON = {"en": ": ", "zh": "："}  # after a label: Chinese text takes the full-width colon
# A line break in the source between two Chinese characters, or after Chinese punctuation, is not a space in print.
LINE_AFTER_CJK = re.compile(rf"(?<=[{CJK_RANGES}])\n[ \t]*(?![-*+>#|\d\s])(?=(.))")


@functools.cache
def hints() -> dict[tuple[str, int], str]:
    """The hint each checker gives for each of its typical mistakes, by (checker, index), printed output dropped.
    Once per build, and before any thread starts: some checkers train a small model on each answer, and every
    checker swaps global state (random generators) that a second thread would see changing. Each hint in both
    languages, whatever COURSE_LANG the build runs under: the key splits them at HINT_SEP."""
    found = {}
    for name, exercise in exercise_tables().items():
        for index, mistake in enumerate(exercise.mistakes):
            try:
                with contextlib.redirect_stdout(io.StringIO()), speaking("both"):
                    exercise.check(mistake.answer)
                found[name, index] = ""
            except WrongAnswer as error:
                found[name, index] = str(error)
    return found


def join_chinese_lines(text: str) -> str:
    """Join source lines broken inside Chinese prose (code fences left alone): no space between two Chinese
    characters or after Chinese punctuation, one space between Chinese and Latin text. For the answer key's text,
    built here from the checkers' strings; the lessons' own Chinese cells are kept on one line by the notebook rules."""
    parts = re.split(r"(```.*?```)", text, flags=re.S)
    for i in range(0, len(parts), 2):
        parts[i] = LINE_AFTER_CJK.sub(lambda m: "" if re.match(f"[{CJK_RANGES}]", m.group(1)) else " ", parts[i])
        parts[i] = re.sub(rf"(?<=[{CJK_PUNCTUATION}]) (?=\S)", "", parts[i])
    return "".join(parts)


def answer_key_cells(lessons: list[tuple[str, nbformat.NotebookNode]], edition: Edition) -> list:
    """The teacher's appendix: each exercise's solution, why it works, the wrong answers its checker catches
    (from the checkers' tables, with the hint each one gets) and a question for class discussion."""
    tables = exercise_tables()
    languages = edition.languages
    cells = [markdown_cell(f'<h1 id="answer-key">{word(edition, "key")}</h1>', "lesson-key")]
    for number, notebook in lessons:
        for solution, check in exercises(notebook):
            name = CHECK_CALL.findall(notebook.cells[check].source)[-1]
            exercise = tables.get(name)
            lines = [f"## {lesson_title(notebook, 'en' if 'en' in languages else 'zh')} · `{name}`", ""]
            lines += ["```python", notebook.cells[solution].source.strip(), "```", ""]
            if exercise is not None:
                for language in languages:
                    why = exercise.why if language == "en" else exercise.why_zh
                    if why:
                        lines += [f"**{WORDS[language]['why']}**{COLON[language]}{why}", ""]
                lines += [f"**{word(edition, 'mistakes')}**", ""]
                for index, mistake in enumerate(exercise.mistakes):
                    parts = hints()[name, index].split(HINT_SEP, 1) + [""]
                    shown = {"en": parts[0], "zh": parts[1]}
                    said = " / ".join(shown[language] for language in languages if shown[language])
                    lines.append(f"- {mistake.what}: {said}" if "en" in languages else f"- {said}")
                lines.append("")
                for language in languages:
                    question = exercise.discuss if language == "en" else exercise.discuss_zh
                    if question:
                        lines += [f"**{WORDS[language]['discuss']}**{COLON[language]}{question}", ""]
            source = join_chinese_lines("\n".join(lines))
            cells.append(markdown_cell(source, "lesson-key"))
        cells += worksheet_answer_cells(notebook, number, edition)
    return cells
