"""The course map (notebooks/course.toml) as each lesson's objectives box and as the README's table.

    python -m tools.course_map --write    # refresh every lesson's box, the minutes in course.toml, the README map

Estimated time = reading + running + exercises, rounded up to 5 minutes: English prose words at 150 words a minute
(technical text read with the code beside it), half a minute per code cell (run it, look at the output), and
10 minutes per exercise. The Chinese prose carries the same content, so one language is counted.
"""

import argparse
import json
import math
import re
from pathlib import Path

import nbformat

from tools import zh_sync
from tools.course import COURSE_MAP, NOTEBOOK_DIR, ROOT, course_map, source

README = ROOT / "README.md"
README_START, README_END = "<!-- course-map: start -->", "<!-- course-map: end -->"
WORDS_PER_MINUTE, MINUTES_PER_CELL, MINUTES_PER_EXERCISE = 150, 0.5, 10


def study_minutes(cells: list) -> float:
    """Reading + running + exercises of some cells, unrounded (a lesson's, or one section's in the lesson plan)."""
    words = sum(len(source(c).split()) for c in cells if "lang-en" in c["metadata"].get("tags", []))
    code = sum(c["cell_type"] == "code" for c in cells)
    exercises = sum("solution" in c["metadata"].get("tags", []) for c in cells)
    return words / WORDS_PER_MINUTE + code * MINUTES_PER_CELL + exercises * MINUTES_PER_EXERCISE


def estimate_minutes(notebook: dict) -> int:
    """Reading + running + exercises, rounded up to 5 minutes (see the module docstring)."""
    return 5 * math.ceil(study_minutes(notebook["cells"]) / 5)


def objectives_box(lesson: dict) -> tuple[str, str]:
    """The (English, Chinese) markdown of a lesson's opening box; each lesson it needs is a link to it."""
    files = {entry["number"]: entry["file"] for entry in course_map()}
    needs = ", ".join(f"[lesson {n}]({files[n]})" for n in lesson["requires"])
    needs_zh = "、".join(f"[第 {n} 课]({files[n]})" for n in lesson["requires"])
    english = f"**In this lesson** (about {lesson['minutes']} minutes; before it: {needs})\n\n"
    chinese = f"**本课目标**（约 {lesson['minutes']} 分钟；先修：{needs_zh}）\n\n"
    if not lesson["requires"]:
        english = f"**In this lesson** (about {lesson['minutes']} minutes; no lesson before it)\n\n"
        chinese = f"**本课目标**（约 {lesson['minutes']} 分钟；无须先修）\n\n"
    english += "\n".join(f"- {line}" for line in lesson["objectives"])
    chinese += "\n".join(f"- {line}" for line in lesson["objectives_zh"])
    return english, chinese


def box_cells(notebook: dict) -> list[int]:
    """Indices of the cells tagged objectives."""
    return [i for i, c in enumerate(notebook["cells"]) if "objectives" in c["metadata"].get("tags", [])]


def box_problem(notebook: dict, lesson: dict) -> str | None:
    """Why a lesson's objectives box is missing, misplaced or out of step with the map (None if it is right)."""
    found = box_cells(notebook)
    if found != [2, 3]:
        return f"the objectives box must be cells 2 and 3 (after the title), found at {found}"
    if (source(notebook["cells"][2]), source(notebook["cells"][3])) != objectives_box(lesson):
        return "the objectives box differs from notebooks/course.toml: run `python -m tools.course_map --write`"
    return None


def write_box(path: Path, lesson: dict) -> None:
    """Put the map's objectives box right after the two title cells (markdown only: outputs stay as they are)."""
    notebook = nbformat.read(path, as_version=4)
    old = [notebook.cells[i] for i in box_cells(notebook)]
    cells = [c for i, c in enumerate(notebook.cells) if i not in box_cells(notebook)]
    english, chinese = objectives_box(lesson)
    box = [
        nbformat.v4.new_markdown_cell(english, metadata={"tags": ["lang-en", "objectives"]}),
        # generated from the same map entry as the English, so the pair is in step by construction
        nbformat.v4.new_markdown_cell(
            chinese, metadata={"tags": ["lang-zh", "objectives"], "en_sha": zh_sync.english_hash(english)}
        ),
    ]
    if len(old) == 2:  # the box is rewritten in place: its cells keep their ids, so a diff shows only the text
        for new, previous in zip(box, old, strict=True):
            new.id = previous.id
    notebook.cells = cells[:2] + box + cells[2:]
    nbformat.write(notebook, path)


def api_pattern(api: str) -> re.Pattern:
    """A map entry as a regex over code: '.backward' matches a method call, 'DataLoader' a whole word."""
    if api.startswith("."):
        return re.compile(re.escape(api) + r"\b")
    return re.compile(r"(?<![\w.])" + re.escape(api) + r"\b")


def code_without_comments(notebook: dict) -> str:
    """All code of a notebook, comments and strings left in except full-line comments; cells tagged `appendix`
    (lesson 00's look at the notes' code, which names later lessons' APIs on purpose) are left out."""
    lines = [
        line
        for c in notebook["cells"]
        if c["cell_type"] == "code" and "appendix" not in c["metadata"].get("tags", [])
        for line in source(c).splitlines()
    ]
    return "\n".join(line for line in lines if not line.lstrip().startswith(("#", "%")))


def order_problems(lessons: list[dict], notebooks: dict[str, dict]) -> list[str]:
    """Prerequisites that come later, and APIs used in code before the lesson that introduces them."""
    problems, position = [], {lesson["number"]: i for i, lesson in enumerate(lessons)}
    for i, lesson in enumerate(lessons):
        for need in lesson["requires"]:
            if position.get(need, len(lessons)) >= i:
                problems.append(f"lesson {lesson['number']} requires {need}, which does not come before it")
    for i, lesson in enumerate(lessons):
        code = code_without_comments(notebooks[lesson["number"]])
        for later in lessons[i + 1 :]:
            for api in later["introduces"]:
                if api in code and api_pattern(api).search(code):  # `in` first: most APIs are absent, and fast
                    problems.append(
                        f"lesson {lesson['number']} uses {api!r}, which lesson {later['number']} introduces later"
                    )
    return problems


# A dotted name in code (`torch.optim.SGD`, `F.relu`, `dist.barrier`); torch_names keeps those that start with torch or
# an alias of a torch module.
TORCH_NAME = re.compile(r"(?<![\w.])(\w+)((?:\.\w+)+)")
IMPORT_AS = re.compile(r"^\s*import\s+(torch(?:\.\w+)*)\s+as\s+(\w+)", re.MULTILINE)
FROM_IMPORT = re.compile(r"^\s*from\s+(torch(?:\.\w+)*)\s+import[ \t]+\(?([\w \t,]+)", re.MULTILINE)
SHORT_FORMS = {"torch.nn.functional.": "F.", "torch.nn.": "nn."}  # the course's own spelling, longest first


def full_path(name: str) -> str:
    """`F.relu` -> `torch.nn.functional.relu`, `nn.Linear` -> `torch.nn.Linear`; other names as they are."""
    for long, short in SHORT_FORMS.items():
        if name.startswith(short):
            return long + name.removeprefix(short)
    return name


def short_form(path: str) -> str:
    """The inverse of full_path: how the course writes a name (and an `introduces` entry for it)."""
    for long, short in SHORT_FORMS.items():
        if path.startswith(long):
            return short + path.removeprefix(long)
    return path


def torch_names(code: str) -> set[str]:
    """Every torch name `code` uses, as a full dotted path (see unintroduced_names)."""
    aliases = {"torch": "torch", "F": "torch.nn.functional", "nn": "torch.nn"}
    aliases |= {alias: module for module, alias in IMPORT_AS.findall(code)}  # import torch.distributed as dist
    names = set()
    for module, imported in FROM_IMPORT.findall(code):  # from torch.utils.data import DataLoader, Subset as S
        names |= {f"{module}.{part.split()[0]}" for part in imported.split(",") if part.strip()}
    for head, rest in TORCH_NAME.findall(FROM_IMPORT.sub("", code)):  # a from-import's module is only X's address
        if head in aliases:
            words = rest.split(".")[1:]
            dunder = next((i for i, word in enumerate(words) if word.startswith("__")), len(words))
            if dunder:  # `torch.manual_seed.__doc__` uses torch.manual_seed; Python's own attributes are not torch's
                names.add(".".join([aliases[head], *words[:dunder]]))
    return names


def introduced_by(entry: str, path: str) -> bool:
    """Whether a course.toml `introduces` entry introduces the torch name `path` (a full dotted path)."""
    if "." in entry.lstrip("."):
        return full_path(entry) == path
    return path.rsplit(".", 1)[-1] == entry.lstrip(".")


def unintroduced_names(lessons: list[dict], notebooks: dict[str, dict]) -> list[str]:
    """The torch names a lesson's code uses that neither it nor an earlier lesson lists in `introduces`.

    Code is `code_without_comments` (so `appendix` cells are left out, trailing comments and strings count). A torch
    name is the longest dotted name that starts with `torch.`, `F.`, `nn.` or a module alias the lesson imports
    (`import torch.distributed as dist`: `dist.barrier`), read as its full path (`F.relu` is
    `torch.nn.functional.relu`); it stops before a dunder (`torch.manual_seed.__doc__` uses `torch.manual_seed`).
    A module is a name like any other (`torch.distributed` in `import torch.distributed as dist`, `torch.nn` in
    `from torch import nn`), except that `from torch.M import X` uses only `torch.M.X`: the module is X's address,
    and the bare `X` after it is that name.

    An entry introduces a name in one of two ways, and only these:
    - a dotted entry is that exact name (`nn` and `F` spelled as above): `torch.float32`, `F.one_hot`,
      `nn.init.zeros_`, `torch.optim.lr_scheduler.StepLR`; `nn.init` introduces the module `torch.nn.init`, not each
      function in it, and each dtype is its own entry;
    - a single word, with or without a leading dot, is the last word of the name: `DataLoader` introduces
      `torch.utils.data.DataLoader`, `autocast` `torch.autocast`, and the method entry `.sum` `torch.sum` (the same
      operation as a function).
    Names are reported in the course's spelling (short_form), which is the entry to add.
    """
    problems, entries = [], []
    for lesson in lessons:
        entries += lesson["introduces"]
        for path in sorted(torch_names(code_without_comments(notebooks[lesson["number"]]))):
            if not any(introduced_by(entry, path) for entry in entries):
                problems.append(
                    f"lesson {lesson['number']} uses {short_form(path)!r}, which no lesson up to it introduces"
                )
    return problems


def readme_map(lessons: list[dict]) -> str:
    """The README's course map: a table (each title and the objectives in English, then after a `<br>` in Chinese,
    in the same cell) and a dependency graph (mermaid)."""
    rows = [
        "| # | Lesson / 课程 | You will / 你将学会 | Before it / 先修 | Minutes / 分钟 |",
        "| --- | --- | --- | --- | --- |",
    ]
    for lesson in lessons:
        link = f"[{lesson['title']}](notebooks/{lesson['file']})<br>{lesson['title_zh']}"
        goals = "; ".join(lesson["objectives"]) + "<br>" + "；".join(lesson["objectives_zh"])
        rows.append(
            f"| {lesson['number']} | {link} | {goals} | {', '.join(lesson['requires']) or '—'} | {lesson['minutes']} |"
        )
    graph = ["```mermaid", "graph LR"]
    graph += [
        f"  L{need}[{need}] --> L{lesson['number']}[{lesson['number']}]"
        for lesson in lessons
        for need in lesson["requires"]
    ]
    graph.append("```")
    return "\n".join(rows) + "\n\n" + "\n".join(graph)


def write_all() -> None:
    """Refresh minutes in course.toml, every lesson's box, and the README map."""
    text = COURSE_MAP.read_text(encoding="utf-8")
    for lesson in course_map():
        path = NOTEBOOK_DIR / lesson["file"]
        notebook = json.loads(path.read_text(encoding="utf-8"))
        minutes = estimate_minutes(notebook)
        block = re.compile(rf'(number = "{lesson["number"]}"\n(?:.*\n)*?minutes = )\d+')
        text = block.sub(lambda m, minutes=minutes: f"{m.group(1)}{minutes}", text, count=1)
    COURSE_MAP.write_text(text, encoding="utf-8")
    lessons = course_map()
    for lesson in lessons:
        write_box(NOTEBOOK_DIR / lesson["file"], lesson)
    readme = README.read_text(encoding="utf-8")
    start, end = readme.index(README_START) + len(README_START), readme.index(README_END)
    README.write_text(readme[:start] + "\n" + readme_map(lessons) + "\n" + readme[end:], encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="refresh minutes, boxes and the README map")
    if parser.parse_args().write:
        write_all()
