"""Handouts: the edition logic (fast, in `make test`) and the built handout itself (`make handout`, marker handout)."""

import functools
import html
import http.server
import itertools
import json
import os
import re
import shutil
import subprocess
import threading
import tomllib
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import nbformat
import pytest

from tools import zh_code
from tools.course import CHINESE_CHARACTERS, CJK, NOTEBOOK_DIR, ROOT, exercise_tables, lesson_files, tags
from tools.handout.book_index import index_pages, index_terms, page_texts, pattern, shows
from tools.handout.bundle import bundle_leaks, reference_answers, student_bundle
from tools.handout.editions import EDITIONS, WORDS, Edition, edition_notebook, lesson_pdf, lesson_title, word
from tools.handout.export import index_page, page_css
from tools.handout.key import join_chinese_lines
from tools.handout.plan import plan_cells, plan_head, plan_text, sections
from tools.handout.printing import CHROMIUM_ARGS, find_chromium
from tools.handout.worksheet import predict_cells, worksheet_answer_cells, worksheet_cells
from tools.lesson_copies import answer_lines, exercises, one_language

LESSONS = lesson_files()
HANDOUT = Path(os.environ.get("HANDOUT_DIR", ROOT / "handout"))
# What the checks write for a person to look at (screenshots, the blank-page record): beside the build, not in it.
SCRATCH = ROOT / "build" / "handout"


def lesson(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def solution_lines(notebook) -> list[str]:
    """Lines only a solution holds (not lines other cells repeat): a student must not see them."""
    elsewhere = "\n".join(cell.source for cell in notebook.cells if "solution" not in tags(cell))
    elsewhere += json.dumps([c.get("outputs", []) for c in notebook.cells], ensure_ascii=False)  # printed source
    return [
        line.strip()
        for cell in notebook.cells
        if "solution" in tags(cell)
        for line in answer_lines(cell.source)
        if line.strip() not in elsewhere and len(line.strip()) > 8
    ]


# ---- the edition logic -------------------------------------------------------------------------------------------


# 78 cases, 11 s: run with the checks of the built handout (`make handout`), not in `make test`.
@pytest.mark.handout
@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_edition_keeps_its_language_and_hides_solutions_from_students(path, edition):
    original = lesson(path)
    result = edition_notebook(original, edition, path.stem[:2])
    languages = {tag for cell in result.cells for tag in tags(cell) if tag.startswith("lang-")}
    assert languages == {"en": {"lang-en"}, "zh": {"lang-zh"}, "bilingual": {"lang-en", "lang-zh"}}[edition.language]
    assert sum(c.cell_type == "code" for c in result.cells) == sum(c.cell_type == "code" for c in original.cells)
    text = "\n".join(cell.source for cell in result.cells)
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))  # not the prompts
    hidden = solution_lines(original)
    assert hidden, "every lesson has an exercise"
    solutions = sum("solution" in tags(c) for c in original.cells)
    if edition.version == "student":
        assert not [line for line in hidden if line in code]
        assert sum("answer-area" in tags(c) for c in result.cells) == solutions
    else:
        assert all(line in text for line in hidden)
        assert sum("teacher-solution" in tags(c) for c in result.cells) == solutions
    assert "```output:" not in text
    assert all(f"lesson-{path.stem[:2]}" in tags(c) for c in result.cells), "named pages need every cell tagged"
    assert original == lesson(path), "the source notebook must not change"


def test_figures_are_numbered_in_the_editions_language():
    path = next(p for p in LESSONS if any("caption" in tags(c) for c in lesson(p).cells))
    number = int(path.stem[:2])
    english = edition_notebook(lesson(path), Edition("en", "teacher"), path.stem[:2])
    chinese = edition_notebook(lesson(path), Edition("zh", "teacher"), path.stem[:2])
    captions = [c.source for c in english.cells if "caption" in tags(c)]
    assert captions[0].startswith(f"**Figure {number}.1**: ") and captions[-1].startswith(
        f"**Figure {number}.{len(captions)}**"
    )
    assert [c.source for c in chinese.cells if "caption" in tags(c)][0].startswith(f"**图 {number}.1**：")


def test_chinese_source_lines_are_joined_without_stray_spaces():
    assert join_chinese_lines("张量的形状，\n也就是它的维度。\nPyTorch 里\n`view` 共享内存") == (
        "张量的形状，也就是它的维度。PyTorch 里 `view` 共享内存"
    )
    assert join_chinese_lines("列表：\n- 第一项\n- 第二项") == "列表：\n- 第一项\n- 第二项", "lists stay lists"
    assert join_chinese_lines("代码：\n```python\nx = 1\ny = 2\n```") == "代码：\n```python\nx = 1\ny = 2\n```"


def test_bad_edition_names_the_choices():
    with pytest.raises(ValueError, match="'en', 'zh', 'bilingual'"):
        edition_notebook(lesson(LESSONS[0]), Edition("fr", "student"))


def test_lesson_titles_per_language():
    notebook = lesson(NOTEBOOK_DIR / "03-scatter.ipynb")
    assert lesson_title(notebook, "en").startswith("03 · `scatter_`")
    assert lesson_title(notebook, "zh").startswith("03 · `scatter_`")
    assert CJK.search(lesson_title(notebook, "zh")) and not CJK.search(lesson_title(notebook, "en"))
    assert lesson_title(notebook, "bilingual").count(" / ") == 1


def test_a_lesson_plan_gives_each_section_its_minutes_and_what_to_show_live():
    notebook = lesson(NOTEBOOK_DIR / "03-scatter.ipynb")
    parts = sections(notebook)
    assert [parts[1]["en"], parts[1]["zh"], parts[-1]["en"]] == [
        "The rule for a 2-d tensor",
        "二维情形下的规则",
        "Summary",
    ]
    english = [c.source for c in notebook.cells if "lang-en" in tags(c)]
    assert len(parts) - 1 == sum(line.startswith("## ") for text in english for line in text.splitlines())
    assert parts[0]["en"] is None and all(p["zh"] for p in parts[1:])
    images = sum("image/png" in o.get("data", {}) for c in notebook.cells for o in c.get("outputs", []))
    assert sum(p["figures"] for p in parts) == images > 0
    assert sum(p["errors"] for p in parts) == sum("raises-exception" in tags(c) for c in notebook.cells) > 0
    exercise = next(p for p in parts if p["exercises"])
    assert exercise["minutes"] >= 10  # the course map's 10 minutes per exercise
    total = sum(p["minutes"] for p in parts)
    minutes = next(
        e["minutes"] for e in tomllib.loads((NOTEBOOK_DIR / "course.toml").read_text())["lesson"] if e["number"] == "03"
    )
    assert minutes - 5 <= total <= minutes + 5  # the course map rounds the whole lesson up to 5 minutes


def test_a_sections_minutes_count_its_own_cells_only():
    cells = [nbformat.v4.new_code_cell("x = 1") for _ in range(10)]  # the opening: 10 cells, 5 minutes
    cells += [
        nbformat.v4.new_markdown_cell("## Short", metadata={"tags": ["lang-en"]}),
        nbformat.v4.new_markdown_cell("## 短", metadata={"tags": ["lang-zh"]}),
    ]
    parts = sections(nbformat.v4.new_notebook(cells=cells))
    assert [(p["en"], p["zh"], p["minutes"]) for p in parts] == [(None, None, 5), ("Short", "短", 1)]


def test_a_lesson_plan_is_in_the_editions_language_and_not_taken_for_the_lesson():
    notebook = lesson(NOTEBOOK_DIR / "03-scatter.ipynb")
    english, chinese = plan_text(notebook, "03", "en"), plan_text(notebook, "03", "zh")
    assert "check_inverse_permutation" in english and "returns perm itself" in english
    assert "Lesson plan" in english and not re.search(CJK, english.replace("·", ""))
    assert "教案" in chinese and "returns perm itself" not in chinese and "Objectives" not in chinese
    mistakes = exercise_tables()["check_inverse_permutation"].mistakes
    assert all(m.what_zh in chinese and m.what in english for m in mistakes)
    assert [len(plan_cells(notebook, "03", Edition(language, "teacher"))) for language in ("en", "bilingual")] == [1, 2]
    for edition in EDITIONS:  # the book finds a lesson's first page by its title in the running header
        assert "scatter" not in plan_head("03", edition)


def test_each_lesson_gets_a_named_page_with_its_title_and_the_edition_label():
    css = page_css([("03", "03 · `scatter_`")], Edition("zh", "teacher"))
    assert ".jp-Cell.celltag_lesson-03, .jp-Cell:has(.celltag_lesson-03) { page: lesson-03; }" in css
    assert '@page lesson-03 { @top-left { content: "03 · scatter_"; } }' in css
    assert '@top-right { content: "教师版（含答案）"; }' in css


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.sources = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and "href" in attrs:
            self.links.append(attrs["href"])
        for key in ("src", "href"):
            if key in attrs:
                self.sources.append(attrs[key])


def test_index_links_every_lesson_in_every_edition():
    parser = Links()
    parser.feed(index_page([(p.stem, lesson(p)) for p in LESSONS], with_pdf=True))
    for path in LESSONS:
        for edition in EDITIONS:
            assert f"html/{edition.name}/{path.stem}.html" in parser.links
            assert f"pdf/{edition.name}/{path.stem}.{edition.name}.pdf" in parser.links
        assert f"notebooks/{path.stem}.ipynb" in parser.links
    assert all(f"pdf/{e.name}.pdf" in parser.links for e in EDITIONS)
    assert "<code>scatter_</code>" in index_page([(p.stem, lesson(p)) for p in LESSONS[3:4]], with_pdf=False)


# ---- the built handout (make handout) ---------------------------------------------------------------------------

handout = pytest.mark.handout


def built_pdfs() -> bool:
    """Whether the built handout has PDFs; CI must have them, a machine without Chromium may not."""
    has = (HANDOUT / "pdf").is_dir()
    if not has and os.environ.get("CI"):
        pytest.fail("CI must build PDFs: make handout installs Chromium")
    return has


class Prose(HTMLParser):
    """Collects the text of markdown cells and of the page chrome (title, banner), i.e. everything but code."""

    def __init__(self):
        super().__init__()
        self.depth, self.chunks, self.in_title = 0, [], False

    def handle_starttag(self, tag, attrs):
        classes = dict(attrs).get("class") or ""
        if self.depth:
            self.depth += tag != "br"
        elif tag == "div" and ("jp-MarkdownCell" in classes or "handout-banner" in classes):
            self.depth = 1
        self.in_title = tag == "title"

    def handle_endtag(self, tag):
        if self.depth and tag != "br":
            self.depth -= 1
        self.in_title = False

    def handle_data(self, data):
        if self.depth or self.in_title:
            self.chunks.append(data)


def prose_of(page: Path) -> str:
    parser = Prose()
    parser.feed(page.read_text(encoding="utf-8"))
    return " ".join(parser.chunks)


@handout
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_each_edition_holds_only_its_language(edition):
    pages = sorted((HANDOUT / "html" / edition.name).glob("*.html"))
    assert [p.stem for p in pages] == [p.stem for p in LESSONS]
    for page in pages:
        prose = prose_of(page)
        assert len(prose) > 500
        if edition.language == "en":
            assert not CJK.search(prose), f"Chinese in the English edition of {page.name}: {CJK.search(prose)}"
        else:
            assert CJK.search(prose)
        text = page.read_text(encoding="utf-8")
        english_cells = re.findall(r'class="[^"]*celltag_lang-en', text)
        chinese_cells = re.findall(r'class="[^"]*celltag_lang-zh', text)
        assert (english_cells == []) == (edition.language == "zh")
        assert (chinese_cells == []) == (edition.language == "en")


@pytest.mark.parametrize("language", ["en", "zh", "bilingual"])
def test_a_worksheet_asks_the_marked_questions_and_the_exercises_without_their_answers(language):
    path = LESSONS[3]
    notebook = one_language(lesson(path), {"bilingual": "both"}.get(language, language))
    edition = Edition(language, "student")
    questions = [cell for cell in notebook.cells if cell.cell_type == "code" and "predict" in cell.metadata]
    assert len(questions) >= 3
    cells = worksheet_cells(notebook, "03", edition)
    text = "\n".join(cell.source for cell in cells)
    predict = [cell for cell in cells if "worksheet-predict" in cell.metadata["tags"]]
    assert [cell.source for cell in predict] == [cell.source for cell in questions]
    assert all(cell.outputs == [] for cell in cells if cell.cell_type == "code"), "no printed answer on a worksheet"
    for question in questions:
        for lang in edition.languages:
            assert question.metadata["predict"][lang] in text
    boxes = [cell for cell in cells if "answer-area" in cell.metadata["tags"]]
    assert len(boxes) == len(exercises(notebook)) >= 1
    assert not [line for line in solution_lines(lesson(path)) if line.strip() in text.splitlines()]
    assert all("worksheet-03" in cell.metadata["tags"] for cell in cells)  # its named page
    if language == "en":
        assert not CJK.search(text.replace("·", ""))
    if language == "zh":
        assert not re.search(r"\b(the|Worksheet|Exercises)\b", text.split("```")[0])


def test_the_teachers_pack_answers_the_worksheet_with_the_lessons_outputs():
    notebook = lesson(LESSONS[3])
    cells = worksheet_answer_cells(notebook, "03", Edition("en", "teacher"))
    code = [cell for cell in cells if cell.cell_type == "code"]
    asked = [cell for cell in notebook.cells if cell.cell_type == "code" and "predict" in cell.metadata]
    assert [cell.outputs for cell in code] == [cell.outputs for cell in asked] and all(c.outputs for c in code)
    assert all("lesson-key" in cell.metadata["tags"] for cell in cells)


@pytest.mark.parametrize("language", ["en", "zh", "bilingual"])
def test_pitfalls_summaries_and_errata_are_boxed_and_sections_numbered(language):
    edition = Edition(language, "student")
    notebook = edition_notebook(lesson(LESSONS[3]), edition, "03")
    boxed = {tag for cell in notebook.cells for tag in tags(cell) if tag.startswith("callout-")}
    assert boxed == {"callout-pitfall", "callout-summary", "callout-elsewhere"}
    summary = [cell for cell in notebook.cells if "callout-summary" in tags(cell)]
    assert len(summary) == len(edition.languages) and all(cell.source.startswith("## ") for cell in summary)
    css = page_css([("03", "03 · `scatter_`")], edition)
    assert '"03." counter(lesson-section)' in css and "counter-reset: lesson-section" in css
    counted = "zh" if language == "zh" else "en"  # the bilingual edition's Chinese twin repeats its number
    assert f".celltag_lang-{counted} h2 {{ counter-increment: lesson-section; }}" in css


def test_index_terms_are_the_taught_names_each_once_and_found_as_whole_names():
    terms = index_terms()
    assert len(terms) == len(set(terms)) > 100 and "torch.cat" in terms and ".backward" in terms
    assert terms.index("torch.cat") < terms.index("DataLoader")  # sorted without the torch. prefix
    assert pattern(".sum").search("x.sum(dim=0)") and not pattern(".sum").search("x.sum_to_size(3)")
    assert pattern("torch.cat").search("torch.cat([a, b])") and not pattern("torch.cat").search("torch.catx")


def test_index_pages_finds_a_name_as_written_or_broken_over_lines_and_lists_its_first_pages():
    pages = {3: "x = torch.cat([a, b])", 4: "y = torch.\ncat(z)", 5: "torch.catx, concat", 6: "torch.\ncatx"}
    pages |= {n: f"line {n}: a.sum()" for n in range(10, 20)}
    found = index_pages(pages, ["torch.cat", ".sum", ".sum_", "torch.stack"])
    assert found == ["3, 4", "10, 11, 12, 13, 14, 15, 16, 17, …", "", ""]


@handout
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_the_index_lists_every_taught_name_with_pages_that_show_it(edition):
    needs_pdfs()
    texts = page_texts(HANDOUT / "pdf" / f"{edition.name}.pdf")
    page = (HANDOUT / "html" / f"{edition.name}.html").read_text(encoding="utf-8")
    entries = re.findall(r'<li><code>([^<]*)</code> <span class="index-pages">([^<]*)</span></li>', page)
    assert [html.unescape(term) for term, _ in entries] == index_terms()
    listed = [(html.unescape(term), pages) for term, pages in entries if pages]
    assert len(listed) >= 0.9 * len(entries), [term for term, pages in entries if not pages]
    for term, pages in listed:
        for number in re.findall(r"\d+", pages):
            assert shows(term, texts[int(number) - 1]), (term, number)
    last = "".join(texts[-4:])
    assert all(pages.split(",")[0] in last for _, pages in listed[-5:]), "the printed index shows the pages"


class Printed(HTMLParser):
    """Collects what the cells printed: the text of every output area (tracebacks, stdout, results)."""

    def __init__(self):
        super().__init__()
        self.depth, self.chunks = 0, []

    def handle_starttag(self, tag, attrs):
        if tag != "div":
            return
        if self.depth:
            self.depth += 1
        elif "jp-OutputArea-output" in (dict(attrs).get("class") or ""):
            self.depth = 1

    def handle_endtag(self, tag):
        if tag == "div" and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.chunks.append(data)


def kept_english() -> list[str]:
    """What the lessons' catalogs allow in English in the Chinese edition: PyTorch's messages, code values."""
    kept = []
    for path in LESSONS:
        catalog = zh_code.load_catalog(path)
        kept += zh_code.kept_english(catalog)
    return kept


@handout
@pytest.mark.parametrize("edition", [e for e in EDITIONS if e.language != "bilingual"], ids=lambda e: e.name)
def test_what_each_edition_prints_is_in_its_language(edition):
    """The printed outputs of the English pages hold no Chinese character; those of the Chinese pages no English
    label or message but what the catalogs keep (PyTorch's own words)."""
    kept = kept_english()
    for page in sorted((HANDOUT / "html" / edition.name).glob("*.html")):
        parser = Printed()
        for cell in re.split(r'(?=<div [^>]*class="jp-Cell )', page.read_text(encoding="utf-8")):
            if "show_source" not in cell:  # a listing of companion's code is code, in English as the lessons' is
                parser.feed(cell)
        lines = "".join(parser.chunks).splitlines()
        assert len(lines) > 10, page.name
        if edition.language == "en":
            chinese = [line for line in lines if re.search(f"[{CHINESE_CHARACTERS}]", line)]
            assert chinese == [], f"Chinese printed in {page}: {chinese[:5]}"
        else:
            english = [
                run for line in lines for run in zh_code.ENGLISH_RUN.findall(line) if not any(run in k for k in kept)
            ]
            assert english == [], f"English printed in {page}: {english[:5]}"


@handout
def test_student_editions_and_notebooks_contain_no_solution_code():
    for path in LESSONS:
        hidden = solution_lines(lesson(path))
        student = nbformat.read(HANDOUT / "notebooks" / path.name, as_version=4)
        code = "\n".join(
            line
            for c in student.cells
            if c.cell_type == "code"
            for line in c.source.splitlines()
            if not line.lstrip().startswith("#")
        )  # the exercise prompts (comments) may name what to return
        assert not [line for line in hidden if line in code]
        for edition in EDITIONS:
            page = (HANDOUT / "html" / edition.name / f"{path.stem}.html").read_text(encoding="utf-8")
            plain = re.sub(r"<[^>]+>", "", page).replace("&quot;", '"').replace("&#39;", "'")
            plain = plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
            # the exercise prompts (comment lines of the stub, wrapped over several) may name what to return
            plain = "\n".join(line for line in plain.splitlines() if not line.lstrip().startswith("#"))
            leaked = [line for line in hidden if line in plain]
            assert (leaked == []) == (edition.version == "student"), (edition.name, path.name, leaked[:3])


@handout
def test_the_student_bundle_holds_no_reference_answer():
    # every answers table's reference and right answers, and every solution cell, line by line (tools/handout/bundle.py)
    assert (HANDOUT / "notebooks" / "companion").is_dir()
    assert bundle_leaks(HANDOUT / "notebooks") == {}
    # the zip the front page links holds exactly that folder
    files = {p.relative_to(HANDOUT / "notebooks").as_posix() for p in (HANDOUT / "notebooks").rglob("*") if p.is_file()}
    with zipfile.ZipFile(HANDOUT / "student-notebooks.zip") as archive:
        assert {name.removeprefix("tensor-by-tensor/") for name in archive.namelist()} == files


def student_bundle_copy(tmp_path: Path) -> Path:
    """A copy of the built student bundle, or, where none is built (make test), the bundle built here (notebooks and
    companion only: a second)."""
    if (HANDOUT / "notebooks" / "companion").is_dir():
        shutil.copytree(HANDOUT / "notebooks", tmp_path / "notebooks")
    else:
        student_bundle(tmp_path, [(path.stem, lesson(path)) for path in LESSONS])
    return tmp_path / "notebooks"


def test_a_reference_answer_planted_in_a_copy_of_the_student_bundle_is_found(tmp_path):
    folder = student_bundle_copy(tmp_path)
    assert bundle_leaks(folder) == {}
    answers = reference_answers()
    checker = folder / "companion" / "checks" / "tensors.py"  # as the handout once shipped them: _reference_* beside
    lines = answers["check_center_rows: _reference_center_rows"]
    checker.write_text(checker.read_text(encoding="utf-8") + "".join(f"\n    {line}" for line in lines))
    found = bundle_leaks(folder)
    assert "check_center_rows: _reference_center_rows" in found, found
    assert all(files == ["companion/checks/tensors.py"] for files in found.values()), found
    checker.write_text(checker.read_text(encoding="utf-8").removesuffix("".join(f"\n    {line}" for line in lines)))
    assert bundle_leaks(folder) == {}
    path = folder / "10-checkpoints.ipynb"  # a teacher's notebook copied in by mistake: its solution cells are whole
    teacher = json.loads((NOTEBOOK_DIR / path.name).read_text(encoding="utf-8"))
    path.write_text(json.dumps(teacher), encoding="utf-8")
    found = bundle_leaks(folder)
    assert found and all(files == [path.name] for files in found.values()), found
    assert any(name.startswith("10-checkpoints cell") for name in found), "the lesson's own solution cells"


@handout
def test_every_link_in_every_page_resolves():
    pages = [HANDOUT / "index.html", HANDOUT / "glossary.html", *(HANDOUT / "html").rglob("*.html")]
    broken = []
    for page in pages:
        parser = Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for link in parser.links:
            target = link.split("#")[0]
            if target and not link.startswith(("data:", "mailto:")) and not (page.parent / target).is_file():
                broken.append((page.relative_to(HANDOUT).as_posix(), link))
    assert broken == []
    index = Links()
    index.feed((HANDOUT / "index.html").read_text(encoding="utf-8"))
    assert {f"html/{e.name}/{p.stem}.html" for e in EDITIONS for p in LESSONS} <= set(index.links)


REMOTE = re.compile(
    r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?(?:https?:)?//|@import\s+["']?https?:""", re.I
)


@handout
def test_html_references_no_remote_url():
    pages = list(HANDOUT.glob("*.html")) + list((HANDOUT / "html").rglob("*.html"))
    students = [edition for edition in EDITIONS if edition.version == "student"]
    assert len(pages) == 2 + len(EDITIONS) * (len(LESSONS) + 1) + len(students) * (len(LESSONS) + 1)  # worksheets
    offenders = {page.name: REMOTE.findall(page.read_text(encoding="utf-8"))[:3] for page in pages}
    assert {name: hits for name, hits in offenders.items() if hits} == {}


@handout
def test_the_student_notebooks_ship_companion():
    folder = HANDOUT / "notebooks"
    assert (folder / "companion" / "__init__.py").is_file() and (folder / "companion" / "checks").is_dir()
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert "pip install" in readme and CJK.search(readme)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert all(f'"{requirement}"' in readme for requirement in project["dependencies"]), "what companion needs"


def pdf_pages(path: Path) -> int:
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))


@functools.cache
@functools.cache
def pdf_page_texts(path: Path) -> list[str]:
    """The text layer of each page in the order it was drawn (a wrapped title stays in reading order; the running
    header comes first, then the footer); pdftotext's form feeds split the pages."""
    text = subprocess.run(["pdftotext", "-raw", str(path), "-"], capture_output=True, text=True, check=True).stdout
    return text.split("\f")[:-1]


def all_pdfs() -> list[Path]:
    return sorted((HANDOUT / "pdf").rglob("*.pdf"))


def needs_pdfs():
    if not built_pdfs():
        pytest.skip("no PDFs on this machine: Chromium was not found (make handout says how to get it)")


EDITION_MARK = {
    "en": {"student": "Student edition", "teacher": "Teacher edition"},
    "zh": {"student": "学生版", "teacher": "教师版"},
}


@handout
def test_every_pdf_page_is_numbered_and_names_its_edition():
    needs_pdfs()
    for pdf in all_pdfs():
        edition = next(e for e in EDITIONS if e.name in pdf.as_posix())
        mark = EDITION_MARK["zh" if edition.language == "zh" else "en"][edition.version]
        pages = pdf_page_texts(pdf)
        book = pdf.parent.name == "pdf"
        for number, text in enumerate(pages, start=1):
            if book and number <= 2:
                continue  # the cover and the contents carry no page furniture
            squeezed = re.sub(r"\s+", "", text)
            assert f"{number}/{len(pages)}" in squeezed, (pdf.name, number)
            assert re.sub(r"\s+", "", mark) in squeezed, (pdf.name, number, mark)


def book_lessons(edition) -> list[tuple[Path, int]]:
    """Each lesson of a combined PDF with the page its table of contents gives."""
    pages = pdf_page_texts(HANDOUT / "pdf" / f"{edition.name}.pdf")
    numbers = [int(n) for n in re.findall(r"(\d+)\s*$", pages[1], re.M)][: len(LESSONS)]
    return list(zip(LESSONS, numbers, strict=True))


@handout
@pytest.mark.parametrize("edition", [e for e in EDITIONS if e.version == "teacher"], ids=lambda e: e.name)
def test_each_teacher_lesson_pdf_is_a_pack_plan_lesson_key_and_the_book_keeps_the_plan(edition):
    needs_pdfs()
    plans = len(plan_cells(lesson(LESSONS[0]), "00", edition))  # pages: one per language
    key = re.sub(r"\s+", "", word(edition, "key"))
    book = [re.sub(r"\s+", "", page) for page in pdf_page_texts(HANDOUT / "pdf" / f"{edition.name}.pdf")]
    for path, start in book_lessons(edition):
        head = re.sub(r"\s+", "", plan_head(path.stem[:2], edition))
        texts = pdf_page_texts(HANDOUT / "pdf" / edition.name / lesson_pdf(path.stem, edition))
        headers = [re.sub(r"\s+", "", "".join(text.splitlines()[:2])) for text in texts]
        assert [head in header for header in headers[: plans + 1]] == [True] * plans + [False], path.name
        assert (key in headers[-1]) == bool(exercises(lesson(path))), path.name  # then the lesson's answer key
        # pages start - plans ... start - 1 hold the plan; the one before ends the last lesson (or the contents)
        assert [head in page for page in book[start - plans - 2 : start]] == [False] + [True] * plans + [False]


@handout
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_every_lesson_of_a_book_starts_at_the_top_of_the_page_its_contents_give(edition):
    needs_pdfs()
    pages = pdf_page_texts(HANDOUT / "pdf" / f"{edition.name}.pdf")
    for path, number in book_lessons(edition):
        lines = [re.sub(r"\s+|`", "", line) for line in pages[number - 1].splitlines() if line.strip()]
        # drawn first: the running header (a long bilingual one wraps), then the footer "n / N"; then the page
        footer = next(i for i, line in enumerate(lines) if re.fullmatch(r"\d+/\d+", line))
        notebook = lesson(path)
        if edition.language == "zh":
            title = notebook.cells[1].source.splitlines()[0].strip("*")
        else:
            title = notebook.cells[0].source.splitlines()[0].lstrip("# ")
        title = re.sub(r"\s+|`", "", title)[:12]
        assert lines[footer + 1].startswith(title), (edition.name, path.name, number, lines[: footer + 2])


def blank_fraction(png: Path) -> float:
    """The share of the page's text area (inside the margins) left empty below its last line: a page that ends
    early (the gaps between lines of a full page are not waste)."""
    from PIL import Image

    image = Image.open(png).convert("L")
    top, bottom = int(image.height * 0.07), int(image.height * 0.93)
    inked = [y for y in range(top, bottom) if image.crop((0, y, image.width, y + 1)).getextrema()[0] <= 235]
    last = max(inked, default=top)
    return (bottom - last) / (bottom - top)


@handout
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_no_page_but_a_lessons_last_is_mostly_empty(edition, tmp_path):
    needs_pdfs()
    book = HANDOUT / "pdf" / f"{edition.name}.pdf"
    subprocess.run(["pdftoppm", "-png", "-r", "12", "-gray", str(book), str(tmp_path / "p")], check=True)
    images = sorted(tmp_path.glob("p-*.png"), key=lambda p: int(p.stem.split("-")[1]))
    texts = pdf_page_texts(book)
    # Each part (lesson, glossary, answer key) starts a page: the page before a start may end a part early.
    starts = [number for _, number in book_lessons(edition)]

    part = appendix_part
    starts += [i for i, t in enumerate(texts, start=1) if i > 2 and part(t) and part(t) != part(texts[i - 2])]
    exempt = {1, 2, len(images)} | {start - 1 for start in starts}
    fractions = {i: blank_fraction(image) for i, image in enumerate(images, start=1)}
    wasted = {i: round(f, 2) for i, f in fractions.items() if f > 0.6 and i not in exempt}
    SCRATCH.mkdir(parents=True, exist_ok=True)
    report = SCRATCH / "blank-pages.json"
    record = json.loads(report.read_text()) if report.exists() else {}
    ordered = sorted(fractions.values())
    record[edition.name] = {
        "pages": len(images),
        "median_blank": round(ordered[len(ordered) // 2], 2),
        "over_30": sum(f > 0.3 for f in ordered),
        "over_60_not_last": len(wasted),
    }
    report.write_text(json.dumps(record, indent=1))
    assert wasted == {}, wasted


TORCH_FRAME = re.compile(r"torch/[\w/]+\.py|site-packages")
HAN = f"[{CHINESE_CHARACTERS}]"
CHINESE_SPACE = re.compile(rf"{HAN} +{HAN}|[，。；：！？、（） ] +\S")


@handout
def test_no_torch_traceback_in_any_pdf():
    needs_pdfs()
    for pdf in all_pdfs():
        text = "\n".join(pdf_page_texts(pdf))
        assert not TORCH_FRAME.search(text), (pdf.name, TORCH_FRAME.search(text).group(0))


@handout
def test_no_stray_space_in_chinese_text():
    for edition in EDITIONS:
        if edition.language == "en":
            continue
        for path in LESSONS:
            page = HANDOUT / "html" / edition.name / f"{path.stem}.html"
            cells = page.read_text(encoding="utf-8").split("<main>", 1)[1].split('<div class="jp-Cell')
            chinese = "".join(cell for cell in cells if "celltag_lang-zh" in cell)  # English may quote a "： "
            # text nodes joined as the browser shows them: no space is added between an element and its neighbour;
            # inline code is not prose (lesson 00 shows the full-width colon itself: `：` 和 `，`)
            chinese = re.sub(r"<code>[^<]*</code>", "<code>code</code>", chinese)
            # a quoted output is what print wrote ("标签： True": print puts a space between its arguments)
            chinese = re.sub(r"<pre[ >].*?</pre>", "<pre>output</pre>", chinese, flags=re.S)
            prose = "".join(re.findall(r">([^<>]+)<", chinese))
            stray = [m.group(0) for m in re.finditer(rf"{HAN} {HAN}|[，。；：！？、] \S", prose)]
            assert stray == [], (edition.name, path.name, stray[:5])


@handout
def test_a_rendered_pdf_page_is_not_blank_and_is_kept_for_a_look(tmp_path):
    needs_pdfs()
    from PIL import Image

    pdf = HANDOUT / "pdf" / "bilingual-teacher" / lesson_pdf("03-scatter", Edition("bilingual", "teacher"))
    SCRATCH.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["pdftoppm", "-png", "-r", "80", "-f", "1", "-l", "1", str(pdf), str(SCRATCH / "screenshot-pdf")], check=True
    )
    shot = next(SCRATCH.glob("screenshot-pdf*.png"))
    image = Image.open(shot).convert("L")
    dark = sum(image.histogram()[:128])
    assert dark / (image.width * image.height) > 0.01


# ---- the handout as a book: whole words, one block per print, bookmarks, editions, no leftovers (issue 25) --------


def printed_text(notebook) -> str:
    """The text a notebook's cells print, streams and plain-text results."""
    texts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            texts.append(output.get("text", "") if output.get("output_type") == "stream" else "")
            texts.append(output.get("data", {}).get("text/plain", ""))
    return "\n".join(text if isinstance(text, str) else "".join(text) for text in texts)


def whole_lines(notebook) -> set[str]:
    """Every line of a notebook's code and printed text, stripped: a printed line that is one ends where it ends."""
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    return {line.strip() for line in (code + "\n" + printed_text(notebook)).splitlines()}


def broken_words(lines: list[str], words: set[str], ends: set[str] = frozenset(), longest: int = 80) -> list[str]:
    """Words of `words` that `lines` print split over two lines ('indic|es'): the end of one line and the start of
    the next make a word, the first piece is not a word itself, and the first line is not one of `ends` (a line of
    the notebook's code or print, which ends there: '1, 6, 5' before ') # kernel'). Words longer than `longest`
    characters (wider than a printed line) may break anywhere, and a line may end after a hyphen ('2-|d')."""
    found = []
    for line, following in itertools.pairwise(lines):
        last, first = line.split()[-1:], following.split()[:1]
        if last and first and line.strip() not in ends:
            joined = last[0] + first[0]
            if joined in words and len(joined) <= longest and last[0] not in words and not last[0].endswith("-"):
                found.append(f"{last[0]}|{first[0]}")
    return found


def body_lines(pages: list[str]) -> list[str]:
    """The text lines of a PDF's pages in reading order, each page's running header and footer left out
    (pdftotext -raw gives them first, the footer 'n / N' last of the two)."""
    lines = []
    for text in pages:
        page = [line for line in text.splitlines() if line.strip()]
        footer = next((i for i, line in enumerate(page) if re.fullmatch(r"\d+\s*/\s*\d+", line.strip())), -1)
        lines += page[footer + 1 :]
    return lines


def test_a_word_broken_over_two_lines_is_found():
    words = {"indices", "dimension", "ceil_mode=False)", "(3,", "1)"}
    assert broken_words(["kept indic", "es and the", "dimension"], words) == ["indic|es"]
    assert broken_words(["padding=0, ceil_mode=Fal", "se)"], words) == ["ceil_mode=Fal|se)"]
    assert broken_words(["stride (3,", "1) kept"], words) == [], "a break at a space breaks no word"
    assert broken_words(["a 2-", "d tensor"], {"2-d"}) == [], "nor one after a hyphen"
    assert broken_words(["1, 6, 5", ") # kernel"], {"5)"}, {"1, 6, 5"}) == [], "nor the end of a line of code"
    assert body_lines(["01 · Tensors\nStudent edition\n3 / 9\nins\n", "01 · Tensors\n4 / 9\ntead.\n"]) == [
        "ins",
        "tead.",
    ]


@handout
def test_no_printed_output_breaks_inside_a_word():
    needs_pdfs()
    broken = {}
    for path in LESSONS:
        notebook = lesson(path)
        words, ends = set(printed_text(notebook).split()), whole_lines(notebook)
        for edition in EDITIONS:
            pdf = HANDOUT / "pdf" / edition.name / lesson_pdf(path.stem, edition)
            if found := broken_words(body_lines(pdf_page_texts(pdf)), words, ends):
                broken[pdf.name] = found[:4]
    assert broken == {}, broken


def output_blocks(page: str) -> list[list[str]]:
    """For each code cell of an exported page, the kind of each output block in order: its mime type (a printed
    stream is text/plain or ...stderr), or 'result' for the value of the cell's last expression."""
    cells = re.split(r'(?=<div [^>]*class="jp-Cell jp-CodeCell)', page)[1:]
    kinds = []
    for cell in cells:
        children = re.split(r'<div class="jp-OutputArea-child', cell)[1:]
        kinds.append(
            [
                "result" if child.startswith(" jp-OutputArea-executeResult") else mime.group(1)
                for child in children
                if (mime := re.search(r'jp-OutputArea-output"[^>]*data-mime-type="([^"]+)"', child))
            ]
        )
    return kinds


def test_a_print_split_into_two_blocks_is_found():
    child = '<div class="jp-OutputArea-child{}"><div class="jp-RenderedText jp-OutputArea-output" tabindex="0" '
    child += 'data-mime-type="text/plain"><pre>{}</pre></div></div>'
    page = '<div id="c" class="jp-Cell jp-CodeCell">' + child.format("", "stride:") + child.format("", " (3, 1)")
    page += (
        '<div id="d" class="jp-Cell jp-CodeCell">'
        + child.format("", "x")
        + child.format(" jp-OutputArea-executeResult", "1")
    )
    assert output_blocks(page) == [["text/plain", "text/plain"], ["text/plain", "result"]]
    assert split_blocks(page) == [0]


def split_blocks(page: str) -> list[int]:
    """The code cells (by position) whose prints to one stream show as two blocks or more, one after the other."""
    streams = ("text/plain", "application/vnd.jupyter.stderr")
    return [
        index
        for index, kinds in enumerate(output_blocks(page))
        if any(a == b and a in streams for a, b in itertools.pairwise(kinds))
    ]


@handout
def test_what_a_cell_prints_to_one_stream_is_one_block():
    split = {}
    for edition in EDITIONS:
        for page in sorted((HANDOUT / "html" / edition.name).glob("*.html")):
            if found := split_blocks(page.read_text(encoding="utf-8")):
                split[f"{edition.name}/{page.name}"] = found
    assert split == {}, split


def outline(pdf: Path) -> list[tuple[int, str]]:
    """A PDF's bookmarks as (depth, title), depth 1 at the top, in order (poppler's pdftohtml -xml lists them)."""
    command = ["pdftohtml", "-xml", "-i", "-q", "-stdout", "-f", "1", "-l", "1", str(pdf)]
    xml = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    entries, depth = [], 0
    for found in re.finditer(r"<(/?)outline>|<item[^>]*>(.*?)</item>", xml, re.S):
        if found.group(2) is not None:
            entries.append((depth, html.unescape(found.group(2))))
        else:
            depth += -1 if found.group(1) else 1
    return entries


def squeezed_title(text: str) -> str:
    """A heading as the checks compare it: its words (letters, digits, _), the first 40 characters: markdown and
    punctuation differ, a space lost where a printed heading wrapped ('viewsand') does not."""
    return " ".join(re.findall(r"\w+", text))[:40]


def headings(notebook, edition: Edition) -> list[tuple[int, str]]:
    """The (level, title) of each markdown heading of a lesson in an edition; in the bilingual edition the English
    ones, whose Chinese twins are not listed again."""
    found = []
    for cell in edition_notebook(notebook, edition, "00").cells:
        if cell.cell_type != "markdown" or (edition.language == "bilingual" and "lang-zh" in tags(cell)):
            continue
        prose = re.sub(r"^```.*?^```", "", cell.source, flags=re.S | re.M)
        found += [(len(m.group(1)), m.group(2)) for m in re.finditer(r"^(#{1,6}) +(.+)$", prose, re.M)]
    return found


def same_bookmarks(found: list[tuple[int, str]], expected: list[tuple[int, str]]) -> bool:
    """Whether bookmarks are the expected headings, one each, in order, each at its level and starting with its
    heading's words."""
    return len(found) == len(expected) and all(
        depth == level and title.startswith(heading)
        for (depth, title), (level, heading) in zip(found, expected, strict=True)
    )


@handout
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_every_pdf_has_bookmarks_for_each_lesson_and_section(edition):
    needs_pdfs()
    book = [(depth, squeezed_title(title)) for depth, title in outline(HANDOUT / "pdf" / f"{edition.name}.pdf")]
    for path in LESSONS:
        expected = [(level, squeezed_title(title)) for level, title in headings(lesson(path), edition)]
        assert expected[0][0] == 1, (path.name, "a lesson's title is its first heading")
        pdf = HANDOUT / "pdf" / edition.name / lesson_pdf(path.stem, edition)
        found = [(depth, squeezed_title(title)) for depth, title in outline(pdf)]
        # (Chromium may repeat a heading's text in its bookmark: '读笔记里的代码读笔记里的代码')
        assert same_bookmarks(found[: len(expected)], expected), (pdf.name, found[:3], expected[:3])
        after = found[len(expected) :]  # a teacher's lesson PDF ends with the lesson's answer key
        if edition.version == "teacher" and exercises(lesson(path)):
            key = squeezed_title(WORDS["zh" if edition.language == "zh" else "en"]["key"])
            asked = bool(predict_cells(lesson(path)))  # then the answers of its worksheet
            assert after[0][0] == 1 and after[0][1].startswith(key)
            assert len(after) == 1 + len(exercises(lesson(path))) + asked, (pdf.name, after)
        else:
            assert after == [], (pdf.name, after[:3])
        start = book.index(found[0])  # in the book, the lesson's bookmarks in the same order
        assert same_bookmarks(book[start : start + len(expected)], expected), path.name
    tops = [title for depth, title in book if depth == 1]
    appendix = ["glossary"] + (["key"] if edition.version == "teacher" else [])
    languages = edition.languages
    for key in appendix:
        assert any(title.startswith(squeezed_title(WORDS[languages[0]][key])) for title in tops), (key, tops)


@handout
@pytest.mark.parametrize("edition", [e for e in EDITIONS if e.version == "teacher"], ids=lambda e: e.name)
def test_the_teacher_books_contents_list_the_answer_key(edition):
    needs_pdfs()
    pages = pdf_page_texts(HANDOUT / "pdf" / f"{edition.name}.pdf")
    key = re.sub(r"\s+", "", word(edition, "key"))
    row = next((line for line in pages[1].splitlines() if re.sub(r"\s+", "", line).startswith(key)), None)
    assert row is not None, pages[1]
    number = int(re.search(r"(\d+)\s*$", row).group(1))
    header = re.sub(r"\s+", "", "".join(pages[number - 1].splitlines()[:2]))
    assert key in header and key not in re.sub(r"\s+", "", "".join(pages[number - 2].splitlines()[:2]))


def pdf_title(path: Path) -> str:
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    return re.search(r"^Title:\s*(.*)$", info, re.M).group(1)


@handout
def test_every_pdf_names_its_edition_in_its_file_name_and_title():
    needs_pdfs()
    for pdf in all_pdfs():
        edition = next((e for e in EDITIONS if pdf.stem.endswith(e.name)), None)  # 01-tensors.zh-student.pdf
        assert edition is not None and pdf.parent.name in ("pdf", edition.name), pdf
        assert edition.title in pdf_title(pdf), (pdf.name, pdf_title(pdf))
    names = [pdf.name for pdf in all_pdfs()]
    workbooks = sum(edition.version == "student" for edition in EDITIONS)  # the worksheets, one PDF per edition
    assert len(names) == len(set(names)) == len(EDITIONS) * (len(LESSONS) + 1) + workbooks, "no two PDFs share a name"


@handout
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_every_running_header_fits_one_line(edition):
    needs_pdfs()
    # the top margin (17 mm, 48 pt) holds the header alone: the vertical centres of its words, page by page (a
    # Chinese glyph's box is taller than a Latin one's, so lines are told apart by centre, not by top)
    command = ["pdftotext", "-bbox", "-y", "0", "-H", "46", "-W", "600", "-f", "3"]
    book = HANDOUT / "pdf" / f"{edition.name}.pdf"
    text = subprocess.run([*command, str(book), "-"], capture_output=True, text=True, check=True).stdout
    wrapped = {}
    for number, page in enumerate(text.split("<page ")[1:], start=3):
        boxes = re.findall(r'<word xMin="[\d.]+" yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">([^<]*)<', page)
        centres = {word: (float(top) + float(bottom)) / 2 for top, bottom, word in boxes if float(bottom) < 46}
        if centres and max(centres.values()) - min(centres.values()) > 5:  # a second line is ~10 pt lower
            wrapped[number] = centres
    assert wrapped == {}, dict(list(wrapped.items())[:3])


LABELS = re.compile(
    "|".join(re.escape(WORDS[language][key].split(":")[0]) for language in WORDS for key in ("answer", "solution"))
    + r"|Self-check|自检"
)


def page_faults(pages: list[str], last_pages: set[int]) -> dict[int, str]:
    """The pages (numbered from 1; the cover and contents of a book left out by the caller through `pages`) that
    hold no text, or fewer than 4 lines except the last page of a lesson or part, and those whose last line is an
    exercise's label ('Your answer', 'Solution', 'Self-check', ...) with what it names on the next page."""
    faults = {}
    for number, text in enumerate(pages, start=1):
        lines = body_lines([text])
        if not lines:  # even a last page: blank but for its header and number
            faults[number] = "blank"
        elif len(lines) < 4 and number not in last_pages:
            faults[number] = f"{len(lines)} lines: {lines}"
        elif lines and LABELS.match(lines[-1].strip()):
            faults[number] = f"ends with a label: {lines[-1].strip()[:40]}"
    return faults


def appendix_part(text: str) -> str | None:
    """The part other than a lesson (a teacher's lesson plan, the glossary, the answer key, the index) a page's
    running header names, if any."""
    head = (text.strip().splitlines() or [""])[0]
    found = re.search(r"Lesson plan|教案|Glossary|术语表|Answer key|答案与讲解|Index|索引", head)
    return found and found.group(0)


def test_a_widow_page_and_a_stranded_label_are_found():
    page = "01 · Tensors\nStudent edition\n{n} / 9\n{text}"
    full = page.format(n=1, text="a\nb\nc\nd")
    pages = [full, page.format(n=2, text="么。"), full, page.format(n=4, text="a\nb\nc\nYour answer"), "1 / 9\nend"]
    assert page_faults(pages, {5}) == {2: "1 lines: ['么。']", 4: "ends with a label: Your answer"}
    assert page_faults([full, page.format(n=2, text="")], {2}) == {2: "blank"}


@handout
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_no_page_holds_a_widow_or_ends_with_a_label(edition):
    needs_pdfs()
    faults = {}
    for path in LESSONS:
        pdf = HANDOUT / "pdf" / edition.name / lesson_pdf(path.stem, edition)
        pages = pdf_page_texts(pdf)
        parts = [appendix_part(text) for text in pages]  # a teacher's: plan, lesson, key, each may end short
        ends = {n for n in range(1, len(pages)) if parts[n] != parts[n - 1]} | {len(pages)}
        faults |= {f"{pdf.name} p. {n}": fault for n, fault in page_faults(pages, ends).items()}
    pages = pdf_page_texts(HANDOUT / "pdf" / f"{edition.name}.pdf")
    parts = [appendix_part(text) for text in pages]
    starts = {number for _, number in book_lessons(edition)}
    starts |= {n for n in range(4, len(pages) + 1) if parts[n - 1] and parts[n - 1] != parts[n - 2]}
    book = page_faults(pages[2:], {n - 3 for n in starts} | {len(pages) - 2})  # after the cover and the contents
    faults |= {f"{edition.name}.pdf p. {n + 2}": fault for n, fault in book.items()}
    assert faults == {}, dict(list(faults.items())[:6])


@handout
def test_the_handout_holds_only_what_it_hands_out():
    # the checks' screenshots and records go to build/handout/, not among the handouts
    expected = {"index.html", "glossary.html", "html", "notebooks", "student-notebooks.zip", "mathjax", "fonts"} | (
        {"pdf"} if (HANDOUT / "pdf").is_dir() else set()
    )
    assert {path.name for path in HANDOUT.iterdir()} == expected


@handout
def test_the_chinese_answer_key_uses_full_width_colons():
    for edition in EDITIONS:
        if edition.version == "teacher" and edition.language != "en":
            page = (HANDOUT / "html" / f"{edition.name}.html").read_text(encoding="utf-8")
            key = page[page.index('id="answer-key"') :]
            half = re.findall(rf"{HAN}</strong>: |{HAN}: ", key)
            assert half == [], (edition.name, half[:3])


@pytest.fixture(scope="module")
def served_handout():
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(HANDOUT))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def pages_with_maths() -> list[str]:
    stems = [p.stem for p in LESSONS if any(c.cell_type == "markdown" and "$" in c.source for c in lesson(p).cells)]
    assert stems, "no lesson has maths to render"
    return stems


@handout
def test_browser_renders_all_maths_the_cjk_font_and_a_phone_sized_index(served_handout):
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium on this machine (make handout says how to get it)")
    from playwright.sync_api import sync_playwright

    SCRATCH.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page()
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        for stem in pages_with_maths():
            for edition in ("bilingual-teacher", "zh-student"):
                page.goto(f"{served_handout}/html/{edition}/{stem}.html", wait_until="load")
                page.evaluate("() => new Promise(done => MathJax.Hub.Queue(done))")
                rendered = page.evaluate("() => document.querySelectorAll('.MathJax, .MathJax_Display').length")
                failed = page.evaluate("() => document.querySelectorAll('.MathJax_Error, .merror').length")
                raw = page.evaluate(
                    """() => [...document.querySelectorAll('.jp-MarkdownCell')]
                           .map(c => c.innerText).join(' ').match(/\\$[^$\\s][^$]*\\$/g)"""
                )
                assert rendered > 0 and failed == 0 and raw is None, (stem, edition, rendered, failed, raw)
        page.goto(f"{served_handout}/html/bilingual-teacher/09-adam.html", wait_until="load")
        page.evaluate("() => new Promise(done => MathJax.Hub.Queue(done))")
        page.evaluate("() => document.fonts.ready.then(() => true)")
        # the display with the bias-corrected moments: hats over m and v, and v-hat under a root
        formula = page.locator(".MathJax_Display", has=page.locator(".MathJax")).filter(has_text=re.compile("√")).first
        formula.scroll_into_view_if_needed()
        formula.screenshot(path=str(SCRATCH / "screenshot-adam-formula.png"))
        font = page.evaluate(
            """() => [...document.fonts].filter(f => f.family.replace(/"/g, '') === 'Course Sans SC')
                                      .map(f => f.status)"""
        )
        covers = page.evaluate("""() => document.fonts.check('16px "Course Sans SC"', '张量拾级')""")
        page.screenshot(path=str(SCRATCH / "screenshot-bilingual.png"), full_page=False)
        phone = browser.new_page(viewport={"width": 400, "height": 800})
        phone.goto(f"{served_handout}/index.html", wait_until="load")
        overflow = phone.evaluate("() => document.documentElement.scrollWidth")
        phone.screenshot(path=str(SCRATCH / "screenshot-index-400px.png"), full_page=False)
        lesson_page = browser.new_page(viewport={"width": 1280, "height": 800})
        lesson_page.goto(f"{served_handout}/html/en-student/03-scatter.html", wait_until="load")
        measure = lesson_page.evaluate(
            """() => { const p = document.querySelector('.jp-MarkdownCell p');
                       return p.getBoundingClientRect().width / parseFloat(getComputedStyle(p).fontSize); }"""
        )
        # Chromium shrinks a whole printout to fit its widest line: on an A4 column every book must fit as it is.
        printed = browser.new_page(viewport={"width": 720, "height": 1000})
        printed.emulate_media(media="print")
        too_wide = {}
        # the two books that hold every line of every edition: all lessons in both languages, with English and with
        # Chinese code, the solutions, the answer key and the index. ?maths=reuse: without typesetting their formulas
        # (seconds per book); the lessons' formulas are typeset above.
        for edition in [e for e in EDITIONS if e.name in ("bilingual-teacher", "zh-teacher")]:
            printed.goto(f"{served_handout}/html/{edition.name}.html?maths=reuse", wait_until="load")
            width = printed.evaluate("() => document.documentElement.scrollWidth")
            if width > 720:
                too_wide[edition.name] = width
        browser.close()
    assert too_wide == {}, f"wider than the page, so printed smaller: {too_wide}"
    assert font == ["loaded"] and covers
    assert overflow <= 400, "the index is wider than a phone"
    assert measure < 50, f"a prose line is {measure:.0f} em wide: too long to read"
    remote = [u for u in requests if not u.startswith((served_handout, "data:", "blob:", "about:"))]
    assert remote == [], remote


# ---- fonts, equations and cross-references (tools/handout/fonts.py, export.page_css, xref.py) ---------------------

HANDOUT_FONTS = re.compile(
    r"[A-Z]{6}\+(DejaVuSans(Mono)?(-Bold)?(-Oblique|-BoldOblique)?|CourseSansSC-Regular|STIXMathJax_\w+-\w+)"
)


@handout
def test_every_pdf_embeds_only_the_handouts_own_fonts_as_truetype():
    needs_pdfs()
    wrong = {}
    for pdf in all_pdfs():
        listing = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
        for row in listing.splitlines()[2:]:
            name, kind = row.split()[0], " ".join(row.split()[1:3])
            if kind != "CID TrueType" or not HANDOUT_FONTS.fullmatch(name):
                wrong.setdefault(pdf.name, set()).add(f"{name} {kind}")
    assert wrong == {}, f"a Type 3 font or a font of the build machine: {wrong}"


def test_the_cjk_and_maths_fonts_become_truetype_with_every_character(tmp_path):
    from fontTools.ttLib import TTFont

    from companion.plotting import FONT_PATH
    from tools.handout.fonts import as_truetype

    as_truetype(FONT_PATH, tmp_path / "cjk.ttf")
    source, made = TTFont(FONT_PATH), TTFont(tmp_path / "cjk.ttf")
    assert "CFF " in source and "glyf" in made and "CFF " not in made
    assert made.getBestCmap().keys() == source.getBestCmap().keys() and len(made.getBestCmap()) > 7000
    assert made["glyf"][made.getBestCmap()[ord("张")]].numberOfContours > 0  # 张 is drawn, not an empty box


def displayed_equations(path: Path, languages=("en",)) -> list[str]:
    """The numbers a lesson's displayed formulas ($$...$$) print, in reading order: each language counts its own
    (a Chinese twin repeats its English cell's numbers)."""
    counted, numbers = dict.fromkeys(languages, 0), []
    for cell in lesson(path).cells:
        language = next((lang for lang in languages if f"lang-{lang}" in tags(cell)), None)
        if cell.cell_type == "markdown" and language:
            for _ in range(cell.source.count("$$") // 2):
                counted[language] += 1
                numbers.append(str(counted[language]))
    return numbers


@handout
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_displayed_equations_are_numbered_in_each_lesson_in_order(edition):
    needs_pdfs()
    numbered = [path for path in LESSONS if displayed_equations(path)]
    assert len(numbered) >= 2
    for path in numbered:
        n = int(path.stem[:2])
        text = "\n".join(pdf_page_texts(HANDOUT / "pdf" / edition.name / lesson_pdf(path.stem, edition)))
        labels = re.findall(rf"\({n}\.(\d+)\)", text)
        assert labels == displayed_equations(path, edition.languages), (path.name, labels)


@handout
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_the_books_cross_references_link_inside_it_and_print_the_pages_they_lead_to(edition):
    needs_pdfs()
    page = (HANDOUT / "html" / f"{edition.name}.html").read_text(encoding="utf-8")
    texts = pdf_page_texts(HANDOUT / "pdf" / f"{edition.name}.pdf")
    ids = set(re.findall(r'<h[1-6][^>]*? id="([^"]*)"', page))
    contents = dict(re.findall(r'<span class="toc-title">(\d\d) · [^<]*</span><span class="toc-page">(\d+)', page))
    refs = re.findall(r'<a href="#([^"]*)">([^<]*)</a><span class="xref-page">([^<]*)</span>', page)
    assert len(refs) >= 40 and not re.search(r'href="[\w-]+/\d\d-[\w-]+\.html', page), "every lesson link is inside"
    for anchor, text, label in refs:
        assert anchor in ids, anchor
        number = int(re.search(r"(\d+)\D*$", label).group(1))
        heading = re.search(rf'<h([1-6])[^>]*? id="{re.escape(anchor)}"[^>]*>(.*?)</h\1>', page, re.S).group(2)
        if heading.startswith("第") or re.match(r"\d\d · ", html.unescape(re.sub(r"<[^>]+>", "", heading))):
            assert str(number) == contents[anchor[:2]], (text, label)  # a lesson: its page in the contents
        else:
            words = re.sub(r"\s+|¶", "", html.unescape(re.sub(r"<[^>]+>", "", heading)))
            assert words in re.sub(r"\s+", "", texts[number - 1]), (text, label, words)
    pdf = (HANDOUT / "pdf" / f"{edition.name}.pdf").read_bytes()
    assert len(re.findall(rb"/Subtype\s*/Link", pdf)) >= len(refs), "the PDF's links are clickable"
    names = re.findall(rb"/Dest\s*/([^\s/\[\]<>()]+)", pdf)  # where each link leads, by name
    assert names and max(map(len, names)) <= 127, "a PDF name has at most 127 bytes"


def test_a_link_to_a_section_no_lesson_has_stops_the_build():
    from tools.handout.xref import linked_book

    cell = '<div class="jp-Cell x"><div class="celltag_lesson-{n}"><h1 id="{n}-T">T</h1>{body}</div></div>'
    page = cell.format(n="01", body='<a href="en-student/02-b.html#Nowhere">lesson 02</a>') + cell.format(
        n="02", body='<h2 id="Somewhere">S</h2>'
    )
    with pytest.raises(ValueError, match="Nowhere"):
        linked_book(page, Edition("en", "student"), ["01", "02"])
    fixed, targets = linked_book(page.replace("Nowhere", "Somewhere"), Edition("en", "student"), ["01", "02"])
    assert '<a href="#02-Somewhere">lesson 02</a><span class="xref-page"></span>' in fixed
    assert [(t.lesson, t.heading) for t in targets] == [(1, "S")]


def test_a_link_to_a_chinese_heading_leads_to_a_short_ascii_id():
    from tools.handout.xref import linked_book

    # nbconvert's id is the heading's text percent-encoded, and Chromium names a PDF destination after it: 15
    # Chinese characters pass the 127 bytes a PDF name may have.
    heading = "第二节：什么时候该用哪一种统计量呢"
    cell = '<div class="jp-Cell x"><div class="celltag_lesson-{n}"><h1 id="{n}-T">T</h1>{body}</div></div>'
    body = f'<h2 id="{quote(heading)}">{heading}<a class="anchor-link" href="#{quote(heading)}">¶</a></h2>'
    link = f'<a href="zh-student/02-b.html#{quote(heading)}">第 02 课</a>'
    page = cell.format(n="01", body=link) + cell.format(n="02", body=body)
    fixed, targets = linked_book(page, Edition("zh", "student"), ["01", "02"])
    assert '<a href="#02-h2">第 02 课</a>' in fixed and '<h2 id="02-h2">' in fixed and 'href="#02-h2">¶' in fixed
    assert quote(heading) not in fixed
    assert [(t.lesson, t.heading) for t in targets] == [(1, heading)]


def figure_outputs(notebook: nbformat.NotebookNode) -> list[dict]:
    """A notebook's figure outputs (a PNG, as the lessons store them)."""
    return [o for c in notebook.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_stored_figure_keeps_its_vector_copy(language):
    from tools.lesson_copies import edition_file

    figures = 0
    for path in LESSONS:
        notebook = nbformat.read(edition_file(path, language) if language == "zh" else path, as_version=4)
        for output in figure_outputs(notebook):
            svg = output.metadata["image/png"].get("vector_copy", "")
            assert "<svg" in svg and "<dc:date>" not in svg, f"{path.name}: re-run `make execute`"
            figures += 1
    assert figures >= 20


@handout
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_every_figure_prints_as_a_vector_drawing(edition):
    for path in LESSONS:
        page = (HANDOUT / "html" / edition.name / f"{path.stem}.html").read_text(encoding="utf-8")
        assert 'class="jp-RenderedImage' not in page, f"a bitmap figure in {edition.name}/{path.stem}"
        if figure_outputs(lesson(path)):
            assert 'class="jp-RenderedSVG' in page, f"no figure in {edition.name}/{path.stem}"
    assert 'class="jp-RenderedImage' not in (HANDOUT / "html" / f"{edition.name}.html").read_text(encoding="utf-8")
