"""Copies of a lesson for readers: one language or both, exercises stubbed for learners.

Shared by the learner's workspace (tools/workspace.py) and the handouts. Every function takes a notebook
(an `nbformat.NotebookNode`) and returns a new one; the source notebook is never changed.
"""

import ast
import copy
import re
import unicodedata
from pathlib import Path

import nbformat

from tools.course import CHECK_CALL, CJK_PUNCTUATION, CJK_RANGES, source, tags

LANGUAGES = ("en", "zh", "both")
DROPPED_TAG = {"en": "lang-zh", "zh": "lang-en", "both": None}
CHINESE_TITLE = re.compile(r"^\*\*(第 \d\d 课 · [^*\n]+)\*\*[ \t]*$", re.M)
# Said in a stub when a solution cell's metadata has no "exercise" text yet.
GENERIC_EXERCISE = {
    "en": "write your answer here, then run the self-check below.",
    "zh": "在这里写出你的答案，再运行下面的自检。",
}
# Where a stub leaves the learner's answer out, in the copy's language(s).
ANSWER_MARKS = {"en": "your answer", "zh": "你的答案", "both": "your answer / 你的答案"}
ANSWER_MARK = ANSWER_MARKS["both"]
# Tagged on the self-check after a stub, so that Run All goes on past an exercise not yet done (JupyterLab and
# Notebook 7 do not stop at a cell with this tag); the learner sees the stub's NotImplementedError there.
UNSOLVED_CHECK_TAG = "raises-exception"


def is_solution(cell: dict) -> bool:
    """Whether `cell` is an exercise's answer cell."""
    return cell.get("cell_type") == "code" and "solution" in tags(cell)


def exercise_text(cell: dict) -> dict[str, str]:
    """What the learner must write for this solution cell, {"en": ..., "zh": ...} (generic when not given)."""
    given = cell.get("metadata", {}).get("exercise") or {}
    return {language: (given.get(language) or GENERIC_EXERCISE[language]).strip() for language in ("en", "zh")}


STUB_WIDTH = 88  # code cells do not wrap: a longer comment line runs off the screen
# A word, a `code span` with what sticks to it, a run of spaces, or one other character (a Chinese one).
WRAP_TOKEN = re.compile(rf"`[^`]*`[^\s{CJK_RANGES}]*|[^\s{CJK_RANGES}`]+|\s+|.")
FULL_WIDTH_PUNCTUATION = re.compile(f"[{CJK_PUNCTUATION}]")


def display_width(text: str) -> int:
    """Columns `text` takes in a monospaced editor: a Chinese character or full-width sign takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def wrap(text: str, first: str, then: str, width: int = STUB_WIDTH) -> list[str]:
    """`text` as lines of at most `width` columns, the first after `first`, the rest after `then`: broken at
    spaces or between Chinese characters, never inside a word or a code span, and never before a full-width
    punctuation mark (which may then overhang by its two columns)."""
    lines, line, space = [], first, ""
    for token in WRAP_TOKEN.findall(text):
        if token.isspace():
            space = " "
            continue
        fits = display_width(line + space + token) <= width or line in (first, then)
        if fits or FULL_WIDTH_PUNCTUATION.fullmatch(token):
            line += (space if line not in (first, then) else "") + token
        else:
            lines.append(line.rstrip())
            line = then + token
        space = ""
    return lines + [line.rstrip()]


def comment_block(label: str, text: str) -> list[str]:
    """`text` as Python comment lines of at most STUB_WIDTH columns, the first starting with `label`."""
    paragraphs = text.splitlines() or [""]
    lines = wrap(paragraphs[0], f"# {label}", "#   ")
    for paragraph in paragraphs[1:]:
        lines += wrap(paragraph, "#   ", "#   ")
    return lines


def stub_source(source: str, exercise: dict[str, str] | None = None, language: str = "both") -> str:
    """An answer cell's stub: what to write (in the copy's language, or both), then the same imports, function
    signatures and names as the answer, with no bodies (the self-check below calls them by name)."""
    exercise = exercise or dict(GENERIC_EXERCISE)
    mark = ANSWER_MARKS[language]
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise ValueError(f"a solution cell must be valid Python; fix line {error.lineno} first") from error
    lines = source.splitlines()
    stub = comment_block("Exercise: ", exercise["en"]) if language != "zh" else []
    stub += comment_block("练习：", exercise["zh"]) if language != "en" else []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            stub += ["", *lines[node.lineno - 1 : node.end_lineno]]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            body_start = node.body[0].lineno
            if isinstance(node.body[0], ast.Expr) and isinstance(getattr(node.body[0], "value", None), ast.Constant):
                body_start = node.body[0].end_lineno + 1  # keep the docstring: it says what the function returns
            indent = " " * (node.body[0].col_offset)
            stub += ["", "", *lines[first - 1 : body_start - 1], f'{indent}raise NotImplementedError("{mark}")']
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = " = ".join(ast.unparse(target) for target in targets)
            if is_question_table(node.value):  # {question: answer, ...}: keep the questions, blank the answers
                stub += ["", f"{names} = {{  # {mark}"]
                stub += [f"    {ast.get_source_segment(source, key)}: ...," for key in node.value.keys] + ["}"]
            else:
                stub += ["", f"{names} = ...  # {mark}"]
    return "\n".join(stub).rstrip() + "\n"


def is_question_table(value: ast.AST | None) -> bool:
    """A dict literal whose keys are constants: the questions of a fill-in exercise."""
    return isinstance(value, ast.Dict) and bool(value.keys) and all(isinstance(k, ast.Constant) for k in value.keys)


def is_unanswered(source: str) -> bool:
    """Whether an answer cell is still a stub: function bodies only raise NotImplementedError, assigned values are
    `...` (or a dict of `...`). Comments, imports and docstrings do not count as an answer."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    blank = ast.Constant(value=...)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
            raises = [isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n) for n in body]
            if not body or not all(raises):
                return False
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            value = node.value
            if isinstance(value, ast.Dict):
                if not all(ast.dump(v) == ast.dump(blank) for v in value.values):
                    return False
            elif value is not None and ast.dump(value) != ast.dump(blank):
                return False
        elif not isinstance(node, ast.Import | ast.ImportFrom | ast.Pass):
            return False
    return True


def answer_lines(source: str) -> list[str]:
    """The lines of an answer a stub must not show: function bodies (docstrings aside), assigned values."""
    tree, lines, found = ast.parse(source), source.splitlines(), []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                body = body[1:]
            if body:
                found += lines[body[0].lineno - 1 : body[-1].end_lineno]
        elif isinstance(node, ast.Assign | ast.AnnAssign) and is_question_table(node.value):
            found += [lines[v.lineno - 1] for v in node.value.values]
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            found += lines[node.value.lineno - 1 : node.value.end_lineno]
    return [line for line in found if line.strip()]


def stub_cell(cell: dict, language: str = "both") -> None:
    """Replace a solution cell's answer by its stub, in place, and clear its outputs."""
    cell["source"] = stub_source(source(cell), exercise_text(cell), language)
    cell["outputs"], cell["execution_count"] = [], None


def self_check_after(cells: list, index: int) -> dict | None:
    """The code cell after `cells[index]`: an exercise's self-check."""
    return next((cell for cell in cells[index + 1 :] if cell.get("cell_type") == "code"), None)


def exercises(notebook: dict) -> list[tuple[int, int]]:
    """(solution cell index, self-check cell index) of every exercise, in order."""
    found = []
    for index, cell in enumerate(notebook["cells"]):
        if is_solution(cell):
            check = self_check_after(notebook["cells"], index)
            if check is not None:
                found.append((index, notebook["cells"].index(check)))
    return found


def check_name(cell: dict) -> str:
    """The self-check a cell calls, e.g. 'check_one_hot' ('' when it calls none)."""
    names = CHECK_CALL.findall(source(cell))
    return names[-1] if names else ""


def stub_solutions(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy with every solution replaced by its stub, and the outputs of the answer and its self-check cleared
    (the self-check's "✓ Correct" line would give the answer away)."""
    result = copy.deepcopy(notebook)
    language = result.metadata.get("course_language", "both")
    for solution, check in exercises(result):
        stub_cell(result.cells[solution], language)
        checker = result.cells[check]
        checker.outputs, checker.execution_count = [], None
        checker.metadata["tags"] = sorted({*tags(checker), UNSOLVED_CHECK_TAG})
    for index, cell in enumerate(result.cells):  # a solution cell with no self-check after it
        if is_solution(cell) and not any(mark in source(cell) for mark in ANSWER_MARKS.values()):
            stub_cell(result.cells[index], language)
    return result


def one_language(notebook: nbformat.NotebookNode, language: str) -> nbformat.NotebookNode:
    """A copy holding only `language`'s prose ("en", "zh" or "both"). The Chinese copy gets its title line
    `**第 NN 课 · 标题**` as the level-1 heading, so the table of contents has one title per lesson."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {list(LANGUAGES)}, not {language!r}")
    result = copy.deepcopy(notebook)
    dropped = DROPPED_TAG[language]
    result.cells = [cell for cell in result.cells if dropped not in tags(cell)]
    if language == "zh":
        for cell in result.cells:
            if cell.cell_type == "markdown" and "lang-zh" in tags(cell):
                text = source(cell)
                if CHINESE_TITLE.match(text):
                    cell.source = CHINESE_TITLE.sub(r"# \1", text, count=1)
                break  # only the first Chinese cell holds the title
    if language != "both":
        result.metadata["course_language"] = language
    return result


def edition_file(lesson: Path, language: str) -> Path:
    """The file a copy in `language` is made from: for Chinese, the executed Chinese edition beside the lesson
    (zh/NN-name.ipynb: code comments, labels and outputs in Chinese) where it exists; the lesson otherwise."""
    chinese = lesson.parent / "zh" / lesson.name
    return chinese if language == "zh" and chinese.exists() else lesson


def with_chinese_code(notebook: nbformat.NotebookNode, chinese: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of a lesson whose code cells (source and outputs) are those of its executed Chinese edition, in
    order: the prose and its metadata stay the lesson's, for copies that still need both languages' cells."""
    result = copy.deepcopy(notebook)
    code = [cell for cell in result.cells if cell.cell_type == "code"]
    chinese_code = [cell for cell in chinese.cells if cell.cell_type == "code"]
    if len(code) != len(chinese_code):
        counts = f"{len(chinese_code)} code cells, the lesson {len(code)}"
        raise ValueError(f"the Chinese edition has {counts}: run make execute")
    for cell, translated in zip(code, chinese_code, strict=True):
        cell.source, cell.outputs = translated.source, copy.deepcopy(translated.outputs)
        cell.execution_count = translated.execution_count
    return result


def learner_copy(notebook: nbformat.NotebookNode, language: str = "both") -> nbformat.NotebookNode:
    """What a learner's workspace holds for a lesson: one language (or both), exercises stubbed."""
    return stub_solutions(one_language(notebook, language))


def edited_text(notebook: dict) -> str:
    """What a learner can change in a lesson, as one string: each cell's type and source. Outputs, execution
    counts and metadata are left out, so running cells or saving unchanged ones does not count as an edit."""
    return "\n\x00".join(f"{cell.get('cell_type')}\x01{source(cell)}" for cell in notebook.get("cells", []))
