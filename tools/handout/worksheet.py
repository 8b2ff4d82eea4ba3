"""The student's worksheet: one per lesson, to answer on paper, and its answers for the teacher.

Part A asks what cells of the lesson print: the code cells the author marked with a `predict` question in their
metadata ({"en": ..., "zh": ...}, saying what the code needs from earlier cells). Part B holds the lesson's exercises
with their starter code and a ruled box, no solution. The teacher's pack answers Part A with the cells' own stored
outputs, and Part B is the answer key's.
"""

import copy
import hashlib

import nbformat

from tools.course import source
from tools.handout.editions import Edition, lesson_title, markdown_cell
from tools.lesson_copies import exercise_text, exercises, stub_source

WORKSHEET_WORDS = {
    "en": {
        "title": "Worksheet · {title}",
        "head": "Worksheet · lesson {n}",
        "all": "Worksheets",
        "intro": "Answer on paper before you run anything. Then open the lesson and check: run the cells of part A, "
        "and each exercise's self-check for part B.",
        "predict": "A · What does it print?",
        "exercises": "B · Exercises",
        "answers": "Worksheet answers · lesson {n}",
        "exercise_answers": "Part B: the solutions are in the answer key.",
    },
    "zh": {
        "title": "练习单 · {title}",
        "head": "练习单 · 第 {n} 课",
        "all": "练习单",
        "intro": "先在纸上作答，不要运行任何代码。然后打开这一课核对："
        "A 部分运行对应的单元格，B 部分运行每道练习的自检。",
        "predict": "A · 它会打印什么？",
        "exercises": "B · 练习",
        "answers": "练习单答案 · 第 {n} 课",
        "exercise_answers": "B 部分：参考答案见“答案与讲解”。",
    },
}
PREDICT_TAG = "worksheet-predict"  # a code cell with a ruled box under it for the learner's prediction
QUESTION_TAG = "worksheet-question"  # a question, kept on the page of the code it asks about


def predict_cells(notebook: nbformat.NotebookNode) -> list[tuple[dict[str, str], nbformat.NotebookNode]]:
    """(question in each language, code cell) for every cell the author marked with a `predict` question."""
    return [
        (cell.metadata["predict"], cell)
        for cell in notebook.cells
        if cell.cell_type == "code" and isinstance(cell.metadata.get("predict"), dict)
    ]


def _code_cell(cell: nbformat.NotebookNode, code: str, *tags: str, outputs: bool = False) -> nbformat.NotebookNode:
    """A copy of a lesson's code cell for the worksheet: the given code, its outputs only when asked."""
    made = copy.deepcopy(cell)
    made.source, made.metadata = code, {"tags": [*tags]}
    made.id = hashlib.sha256(f"{tags}{code}".encode()).hexdigest()[:8]  # not the lesson cell's: one page holds both
    if not outputs:
        made.outputs, made.execution_count = [], None
    return made


def _text(edition: Edition, texts: dict[str, str]) -> str:
    """`texts` in the edition's language, or both, English first."""
    return "\n\n".join(texts[language] for language in edition.languages)


def worksheet_word(edition: Edition, key: str, **values: object) -> str:
    """A fixed worksheet word in the edition's language(s), joined by " · " in the bilingual one."""
    return " · ".join(WORKSHEET_WORDS[language][key].format(**values) for language in edition.languages)


def worksheet_cells(notebook: nbformat.NotebookNode, number: str, edition: Edition) -> list[nbformat.NotebookNode]:
    """The student's worksheet for one lesson: the questions of part A with a box each, then the exercises."""
    tag = f"worksheet-{number}"
    title = lesson_title(notebook, edition.language)
    cells = [
        markdown_cell(f"# {worksheet_word(edition, 'title', title=title)}", tag),
        markdown_cell(_text(edition, {k: v["intro"] for k, v in WORKSHEET_WORDS.items()}), tag),
    ]
    questions = predict_cells(notebook)
    if questions:  # lesson 00 asks none: it teaches how to use the course
        cells.append(markdown_cell(f"## {worksheet_word(edition, 'predict')}", tag))
    for index, (question, cell) in enumerate(questions, start=1):
        cells.append(markdown_cell(f"**A{index}.** {_text(edition, question)}", tag, QUESTION_TAG))
        cells.append(_code_cell(cell, source(cell), tag, PREDICT_TAG))
    cells.append(markdown_cell(f"## {worksheet_word(edition, 'exercises')}", tag))
    language = "both" if edition.language == "bilingual" else edition.language
    for index, (solution, _check) in enumerate(exercises(notebook), start=1):
        cell = notebook.cells[solution]
        text = exercise_text(cell)
        cells.append(markdown_cell(f"**B{index}.** {_text(edition, text)}", tag, QUESTION_TAG))
        stub = stub_source(source(cell), text, language).splitlines()
        while stub and (stub[0].startswith("#") or not stub[0].strip()):  # the task is printed just above
            stub.pop(0)
        cells.append(_code_cell(cell, "\n".join(stub) + "\n", tag, "answer-area"))
    return cells


def worksheet_answer_cells(notebook: nbformat.NotebookNode, number: str, edition: Edition) -> list:
    """For the teacher: each question of part A with the code and what it printed in the lesson."""
    predicted = predict_cells(notebook)
    if not predicted:
        return []
    cells = [markdown_cell(f"## {worksheet_word(edition, 'answers', n=number)}", "lesson-key")]
    for index, (question, cell) in enumerate(predicted, start=1):
        cells.append(markdown_cell(f"**A{index}.** {_text(edition, question)}", "lesson-key"))
        cells.append(_code_cell(cell, source(cell), "lesson-key", "worksheet-answer", outputs=True))
    cells.append(
        markdown_cell(worksheet_word(edition, "exercise_answers"), "lesson-key", f"worksheet-answers-{number}")
    )
    return cells
