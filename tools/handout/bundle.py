"""The student bundle (handout/notebooks/: the student notebooks with `companion` beside them, so they run on their
own), and the search that proves no reference answer ships in it: a student never holds a solution."""

import inspect
import json
import re
import shutil
import textwrap
import tomllib
import zipfile
from pathlib import Path

import nbformat

from tools.course import CHECK_CALL, NOTEBOOK_DIR, ROOT, exercise_tables, lesson_files, source, tags
from tools.handout.editions import Edition, edition_notebook
from tools.lesson_copies import answer_lines

BUNDLE_ZIP = "student-notebooks.zip"  # beside index.html, which links it
README = """# Tensor by Tensor · 张量拾级 — student notebooks / 学生笔记本

These notebooks run on their own: the `companion` package they import is in this folder. Install the course's
packages once, then open the folder in Jupyter:

    python -m pip install {requirements}
    jupyter lab

这些笔记本可以单独运行：它们导入的 `companion` 包就在本文件夹里。先安装一次课程所需的软件包，再用 Jupyter
打开本文件夹（命令见上）。
"""


def student_requirements() -> list[str]:
    """What a student installs, as pyproject.toml says: the package's dependencies and, of the course extra,
    JupyterLab alone (the rest is for building and testing the course), so the README never falls behind."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lab = [r for r in project["optional-dependencies"]["course"] if re.match(r"jupyterlab(?![\w-])", r)]
    return project["dependencies"] + lab


def student_bundle(out_dir: Path, lessons: list[tuple[str, nbformat.NotebookNode]]) -> None:
    """The student notebooks with the `companion` package beside them, so they run on their own."""
    folder = out_dir / "notebooks"
    folder.mkdir()
    for stem, notebook in lessons:
        nbformat.write(edition_notebook(notebook, Edition("bilingual", "student")), folder / f"{stem}.ipynb")
    # The reference answers (companion/checks/answers/) are the teacher's: no solution ships to students.
    shutil.copytree(ROOT / "companion", folder / "companion", ignore=shutil.ignore_patterns("__pycache__", "answers"))
    shutil.copy(NOTEBOOK_DIR / "GLOSSARY.md", folder / "GLOSSARY.md")
    # Quoted: a version range's < and > are redirections to a shell.
    requirements = " ".join(f'"{requirement}"' for requirement in student_requirements())
    (folder / "README.md").write_text(README.format(requirements=requirements), encoding="utf-8")
    # The same folder as one download for a learning platform; fixed dates, so the same course zips the same bytes.
    with zipfile.ZipFile(out_dir / BUNDLE_ZIP, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            entry = zipfile.ZipInfo(f"tensor-by-tensor/{path.relative_to(folder).as_posix()}", (1980, 1, 1, 0, 0, 0))
            archive.writestr(entry, path.read_bytes(), zipfile.ZIP_DEFLATED)


# ---- no reference answer in a student's hands ---------------------------------------------------------------------

TELLING = 20  # characters: a shorter line (`return x`, `loss.backward()`) is an idiom, not an answer
HEADERS = ("#", "for ", "while ", "if ", "elif ", "else:", "try:", "with ", "def ", '"""')


def squeezed(line: str) -> str:
    """A line as the answer check compares it: an inline comment (two spaces, then #) dropped, whitespace collapsed."""
    return " ".join(line.split("  # ")[0].split())


def telling_lines(lines: list[str], shown: set[str] = frozenset()) -> list[str]:
    """The lines of an answer that give it away: code of `TELLING` characters or more, except loop, branch and
    function headers, and lines the lesson already shows above the answer (its own code and printed
    sources teach them: they give nothing away)."""
    found = []
    for line in map(squeezed, lines):
        if len(line) >= TELLING and not line.startswith(HEADERS) and line not in shown and line not in found:
            found.append(line)
    return found


def _shown_lines(cells: list) -> set[str]:
    """Every line the cells show to a student: code and prose of cells that are not answers, and their outputs."""
    shown = set()
    for cell in cells:
        if "solution" in tags(cell):
            continue
        printed = "".join("".join(output.get("text", "")) for output in cell.get("outputs", []))
        shown |= {squeezed(line) for line in (source(cell) + "\n" + printed).splitlines()}
    return shown


def lesson_answers(path: Path) -> dict[str, list[str]]:
    """The telling lines of each answer cell of a lesson (lines shown above that cell left out), by where it is."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    answers = {}
    for index, cell in enumerate(cells):
        if "solution" in tags(cell):
            lines = answer_lines(source(cell))
            answers[f"{path.stem} cell {index}"] = telling_lines(lines, _shown_lines(cells[:index]))
    return answers


def reference_answers(notebook_dir: Path = NOTEBOOK_DIR) -> dict[str, list[str]]:
    """The telling lines of every function of every answers table (each exercise's `reference` and its `right`
    answers, by checker and function name), leaving out the lines its lesson shows above the exercise."""
    shown_before: dict[str, set[str]] = {}  # checker name -> lines its lesson shows above the exercise
    for path in lesson_files(notebook_dir):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for index, cell in enumerate(cells):
            if cell["cell_type"] == "code" and "solution" not in tags(cell):
                for name in CHECK_CALL.findall(source(cell)):
                    shown_before.setdefault(name, _shown_lines(cells[:index]))
    answers = {}
    for name, exercise in exercise_tables().items():
        functions = []
        for answer in (exercise.reference, *exercise.right):
            functions += [f for f in (answer if isinstance(answer, tuple) else (answer,)) if inspect.isfunction(f)]
        for function in dict.fromkeys(functions):
            lines = answer_lines(textwrap.dedent(inspect.getsource(function)))
            answers[f"{name}: {function.__name__}"] = telling_lines(lines, shown_before.get(name, set()))
    return answers


def shipped_lines(root: Path) -> dict[str, set[str]]:
    """Each file under `root` a student gets, as its set of squeezed lines: Python and text files as they are, a
    notebook as its cells' sources and printed outputs. Folders named `answers` (the teacher's part) are left out."""
    files = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if not path.is_file() or "answers" in relative.parts[:-1] or "__pycache__" in relative.parts:
            continue
        if path.suffix == ".ipynb":
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            text = "\n".join(
                source(cell) + "\n" + "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
                for cell in cells
            )
        elif path.suffix in (".py", ".md", ".txt", ".toml", ".cfg", ".json", ".html"):
            text = path.read_text(encoding="utf-8", errors="replace")
        else:
            continue
        files[relative.as_posix()] = {squeezed(line) for line in text.splitlines()}
    return files


def leaks(answer: list[str], files: dict[str, set[str]]) -> list[str]:
    """The files that hold most of one answer: half its telling lines or more, and at least two (one line of a
    longer answer, such as `optimizer.zero_grad()` in the lesson's own code, is an idiom, not the answer); an answer
    of one telling line, that line."""
    need = 1 if len(answer) == 1 else max(2, (len(answer) + 1) // 2)
    return [name for name, lines in files.items() if answer and sum(line in lines for line in answer) >= need]


# Answers that call the very PyTorch function their checker compares with: the checker holds the same lines, and
# they give away nothing the exercise's prompt does not already name.
COMPARED_WITH_PYTORCH = {
    "check_shard: _right_the_sampler_itself": "DistributedSampler itself, which check_shard compares with",
}


def bundle_leaks(root: Path) -> dict[str, list[str]]:
    """Every answer (a lesson's solution cell, or a function of an answers table) that the folder `root` of a
    student bundle gives away, with the files that hold it; empty when the bundle is clean."""
    answers = {name: lines for path in lesson_files() for name, lines in lesson_answers(path).items()}
    answers |= {name: lines for name, lines in reference_answers().items() if name not in COMPARED_WITH_PYTORCH}
    return answer_leaks(root, answers)


def answer_leaks(root: Path, answers: dict[str, list[str]]) -> dict[str, list[str]]:
    """For each answer found in the files under `root` (see `leaks`), the files that hold it."""
    files = shipped_lines(root)
    return {name: found for name, lines in answers.items() if (found := leaks(lines, files))}
