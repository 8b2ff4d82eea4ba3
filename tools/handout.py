"""Classroom handouts from the executed notebooks: three languages x student/teacher, as HTML, PDF and notebooks.

Run `python -m tools.handout` (or `make handout`). Everything is built offline: MathJax comes from the
`jupyter-server-mathjax` package (SVG output, whose glyphs are drawn from its bundled STIX-Web data, so hats and
roots never depend on a web font), the CJK font from `companion/fonts`, and PDFs are printed by a local Chromium,
whose CSS paged media gives the page furniture: a running header per lesson (named pages), "n / N" footers, a
cover, a table of contents and PDF bookmarks.
"""

import argparse
import contextlib
import copy
import datetime
import functools
import html
import importlib
import io
import json
import pkgutil
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import jupyter_server_mathjax
import nbformat
import torch
from nbconvert import HTMLExporter
from nbconvert.exporters.templateexporter import TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.strings import clean_html
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.preprocessors import CoalesceStreamsPreprocessor

from companion.plotting import FONT_PATH
from tools import zh_sync
from tools.course import CHECK_CALL, CJK_RANGES, course_map, lesson_files, source
from tools.lesson_copies import exercises, one_language, stub_solutions

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = Path(__file__).parent / "templates"
SCRATCH = ROOT / "build" / "handout"  # what the build and its checks write besides the handouts
LANGUAGES = ("en", "zh", "bilingual")
VERSIONS = ("student", "teacher")
COPY_LANGUAGE = {"en": "en", "zh": "zh", "bilingual": "both"}
# Page chrome in the edition's own language, so the English edition holds no Chinese and vice versa.
TITLES = {
    ("en", "student"): "Student edition",
    ("en", "teacher"): "Teacher edition — answers inside",
    ("zh", "student"): "学生版",
    ("zh", "teacher"): "教师版（含答案）",
    ("bilingual", "student"): "Student edition · 学生版",
    ("bilingual", "teacher"): "Teacher edition — answers inside · 教师版（含答案）",
}
# The edition in the running header: the bilingual label without "— answers inside", so that with the lesson's
# title it fits one line.
HEADER_LABELS = {
    ("bilingual", "student"): "Student edition · 学生版",
    ("bilingual", "teacher"): "Teacher edition · 教师版",
}
COURSE = {"en": "Tensor by Tensor", "zh": "张量拾级", "bilingual": "Tensor by Tensor · 张量拾级"}
HTML_LANG = {"en": "en", "zh": "zh-CN", "bilingual": "en"}
WORDS = {  # the few fixed words the handout adds, per edition language
    "en": {
        "figure": "Figure",
        "contents": "Contents",
        "glossary": "Glossary",
        "key": "Answer key",
        "answer": "Your answer",
        "check": "Self-check: run it in the notebook; it prints ✓ Correct or a hint",
        "solution": "Solution",
        "stale": "The Chinese text below was written for an earlier version of the English; it is being revised.",
        "why": "Why it works",
        "mistakes": "Typical wrong answers and the hint the self-check gives",
        "discuss": "For discussion",
        "lesson": "Lesson",
        "prev": "previous",
        "next": "next",
        "made": "PyTorch {torch} · built {date}",
    },
    "zh": {
        "figure": "图",
        "contents": "目录",
        "glossary": "术语表",
        "key": "答案与讲解",
        "answer": "你的答案",
        "check": "自检：请在笔记本里运行，答对打印 ✓ 正确，答错给出提示",
        "solution": "参考答案",
        "stale": "下面的中文对应的是英文的旧版本，正在修订。",
        "why": "为什么这样做",
        "mistakes": "常见错误及自检给出的提示",
        "discuss": "课堂讨论",
        "lesson": "第 {n} 课",
        "prev": "上一课",
        "next": "下一课",
        "made": "PyTorch {torch} · 生成于 {date}",
    },
}
COLON = {"en": ": ", "zh": "："}  # after a label: Chinese text takes the full-width colon
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# A line break in the source between two Chinese characters, or after Chinese punctuation, is not a space in print.
CJK_PUNCTUATION = r"\u3000-\u303f\uff00-\uffef"
LINE_AFTER_CJK = re.compile(rf"(?<=[{CJK_RANGES}])\n[ \t]*(?![-*+>#|\d\s])(?=(.))")


LONG_INPUT = 25  # lines of code: over a third of an A4 page, which waiting for the next page could waste


@dataclass(frozen=True)
class Edition:
    """One of the six handouts: a language and a version."""

    language: str
    version: str

    @property
    def name(self) -> str:
        """Folder name, e.g. 'zh-student'."""
        return f"{self.language}-{self.version}"

    @property
    def title(self) -> str:
        """The edition's label in its own language(s), e.g. '学生版'."""
        return TITLES[(self.language, self.version)]

    @property
    def header_label(self) -> str:
        """The edition's label in the running header (the bilingual one shorter)."""
        return HEADER_LABELS.get((self.language, self.version), self.title)


EDITIONS = [Edition(language, version) for language in LANGUAGES for version in VERSIONS]


def word(edition: Edition, key: str, **values: object) -> str:
    """A fixed handout word in the edition's language(s)."""
    if edition.language == "bilingual":
        return f"{WORDS['en'][key].format(**values)} · {WORDS['zh'][key].format(**values)}"
    return WORDS[edition.language][key].format(**values)


def join_chinese_lines(text: str) -> str:
    """Join source lines broken inside Chinese prose (code fences left alone): no space between two Chinese
    characters or after Chinese punctuation, one space between Chinese and Latin text. For the answer key's text,
    built here from the checkers' strings; the lessons' own Chinese cells are kept on one line by the notebook rules."""
    parts = re.split(r"(```.*?```)", text, flags=re.S)
    for i in range(0, len(parts), 2):
        parts[i] = LINE_AFTER_CJK.sub(lambda m: "" if re.match(f"[{CJK_RANGES}]", m.group(1)) else " ", parts[i])
        parts[i] = re.sub(rf"(?<=[{CJK_PUNCTUATION}]) (?=\S)", "", parts[i])
    return "".join(parts)


def edition_notebook(notebook: nbformat.NotebookNode, edition: Edition, number: str = "") -> nbformat.NotebookNode:
    """A copy of `notebook` for one edition: its language only, solutions stubbed for students and marked for
    teachers, figures numbered, long inputs marked, stale Chinese marked, consecutive prints to one stream merged,
    every cell tagged with its lesson."""
    if edition.language not in LANGUAGES or edition.version not in VERSIONS:
        raise ValueError(f"edition must use a language from {list(LANGUAGES)} and a version from {list(VERSIONS)}")
    marked = copy.deepcopy(notebook)
    for cell in marked.cells:  # a print split into flushes is one block on paper, as in JupyterLab
        CoalesceStreamsPreprocessor().preprocess_cell(cell, {}, 0)
    for i, cell in enumerate(marked.cells[:-1]):  # a Chinese cell written for older English is shown as such
        twin = marked.cells[i + 1]
        if "lang-en" in cell.metadata.get("tags", []) and twin.metadata.get("en_sha") not in (
            None,
            zh_sync.english_hash(cell.source),
        ):
            twin.metadata["tags"] = [*twin.metadata.get("tags", []), "zh-stale"]
    for solution, check in exercises(marked):
        marked.cells[solution].metadata["tags"] = [*marked.cells[solution].metadata["tags"], "teacher-solution"]
        marked.cells[check].metadata.setdefault("tags", []).append("self-check")
    result = one_language(marked, COPY_LANGUAGE[edition.language])
    if edition.version == "student":
        result = stub_solutions(result)
        for cell in result.cells:
            tags = cell.metadata.get("tags", [])
            if "teacher-solution" in tags:
                cell.metadata["tags"] = [t for t in tags if t != "teacher-solution"] + ["answer-area"]
    figure = 0
    for cell in result.cells:
        tags = cell.metadata.setdefault("tags", [])
        if number:
            tags.append(f"lesson-{number}")
        if cell.cell_type == "code" and cell.source.count("\n") >= LONG_INPUT:
            tags.append("long-input")  # printed across a page break rather than moved whole to the next page
        if cell.cell_type != "markdown":
            continue
        if edition.language == "zh" and "lang-zh" in tags:  # the lesson's title, bold in the source, is its heading
            cell.source = re.sub(r"\A\*\*(第 \d\d 课 · .+)\*\*$", r"# \1", cell.source, flags=re.M)
        # `output:NAME` fences exist for the tests; readers see plain text blocks
        cell.source = re.sub(r"^```output:[\w-]+$", "```text", cell.source, flags=re.M)
        if "caption" in tags:
            language = "zh" if "lang-zh" in tags else "en"
            figure += "lang-en" in tags or edition.language == "zh"
            label = f"{WORDS[language]['figure']} {int(number or 0)}.{figure}"
            text = re.sub(r"^(?:\*\*)?(?:Figure|图)\s*[:：]\s*(?:\*\*)?\s*", "", cell.source.strip())
            cell.source = f"**{label}**{'：' if language == 'zh' else ': '}{text}"
    return result


def lesson_title(notebook: nbformat.NotebookNode, language: str) -> str:
    """The lesson's title in one language ('bilingual' gives 'English / 中文'), as notebooks/course.toml gives it,
    for the lesson whose number the notebook's first lines carry (the source, or a one-language copy)."""
    firsts = "\n".join(c.source.splitlines()[0] if c.source else "" for c in notebook.cells[:3])
    number = re.search(r"^(?:# |\*\*第 |# 第 )(\d\d)", firsts, re.M).group(1)
    lesson = next(entry for entry in course_map() if entry["number"] == number)
    english, chinese = f"{number} · {lesson['title']}", f"{number} · {lesson['title_zh']}"
    return {"en": english, "zh": chinese, "bilingual": f"{english} / {chinese}"}[language]


def plain(title: str) -> str:
    """A title without backticks, for headers, bookmarks and page titles."""
    return title.replace("`", "")


def running_head(title: str) -> str:
    """A lesson's running header: its title, or in the bilingual edition ('NN · English / NN · 中文') each title up
    to its colon, once numbered ('01 · Tensors / 张量'), so that with the edition label it fits one line."""
    if " / " not in title:
        return plain(title)
    english, chinese = (plain(part) for part in title.split(" / ", 1))
    english, chinese = english.split(": ")[0], chinese.split("：")[0].split(" · ", 1)[1]
    return english if english.endswith(f" · {chinese}") else f"{english} / {chinese}"


def page_css(lessons: list[tuple[str, str]], edition: Edition) -> str:
    """Named pages: each lesson's pages carry its title in the running header and the edition label."""
    label = css_string(edition.header_label)
    rules = [f"@page {{ @top-right {{ content: {label}; }} }}"]
    for number, title in lessons:
        rules.append(f"{whole_cells(f'lesson-{number}')} {{ page: lesson-{number}; }}")
        rules.append(f"@page lesson-{number} {{ @top-left {{ content: {css_string(running_head(title))}; }} }}")
    return "\n".join(rules)


def whole_cells(tag: str) -> str:
    """A selector for the cells tagged `tag` as whole blocks: nbconvert puts a code cell's tags on the cell but a
    markdown cell's on its rendered text, and a page name must sit on the cell, or Chromium breaks the page
    between the cell and its own contents."""
    return f".jp-Cell.celltag_{tag}, .jp-Cell:has(.celltag_{tag})"


def css_string(text: str) -> str:
    """`text` as a CSS string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class HandoutExporter(HTMLExporter):
    """nbconvert's HTML exporter for a build that exports every cell a dozen times (six editions, each lesson alone
    and in its book): highlighting and HTML cleaning are cached by their input, and the BeautifulSoup pass over the
    whole page (a third of the build, for two attributes) gives way to two substitutions that add the same ones."""

    def from_notebook_node(self, nb, resources=None, **kw):
        resources = self._init_resources(resources)
        self.register_filter("highlight_code", cached_highlight)
        self.register_filter("clean_html", cached_clean_html)
        self.register_filter(
            "filter_data_type",
            WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self, resources=resources),
        )
        page, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        page = re.sub(r"<img(?![^>]*\balt=)", '<img alt="No description has been provided for this image"', page)
        page = re.sub(
            r'(<div class="[^"]*\b(?:jp-Cell-inputWrapper|jp-OutputArea-output)\b[^"]*")', r'\1 tabindex="0"', page
        )
        return page, resources


# Each source line in a span of its own, so that a line too long for the page wraps with a hanging indent (CSS).
HIGHLIGHT = Highlight2HTML(pygments_lexer="ipython3", extra_formatter_options={"linespans": "line"})


@functools.cache
def _highlight(source: str, language: str | None, magics_language: str | None) -> str:
    metadata = {"magics_language": magics_language} if magics_language else None
    lines = HIGHLIGHT(source, language=language, metadata=metadata)
    return re.sub(r'<span id="line-\d+">', '<span class="code-line">', lines)  # ids would repeat in every cell


def cached_highlight(source: str, language: str | None = None, metadata=None) -> str:
    """nbconvert's highlight_code, computed once per source (of a cell's metadata, only a cell magic's language
    changes the result)."""
    return _highlight(source, language, (metadata or {}).get("magics_language"))


cached_clean_html = functools.cache(clean_html)

EXPORTERS = threading.local()


def exporter_for(language: str) -> HTMLExporter:
    """One exporter per language and thread: building one (and its templates) costs more than exporting a lesson,
    and an exporter keeps state while it works, so two threads never share one."""
    made = EXPORTERS.__dict__.setdefault("by_language", {})
    if language not in made:
        made[language] = HandoutExporter(
            template_name="handout", extra_template_basedirs=[str(TEMPLATES)], language_code=HTML_LANG[language]
        )
    return made[language]


def export_html(notebook, edition: Edition, title: str, root: str, css: str, nav: str = "") -> str:
    """HTML for one edition, with `root` the relative path from the page to the handout folder."""
    resources = {
        "metadata": {"name": title},
        "handout_root": root,
        "edition_language": edition.language,
        "edition_version": edition.version,
        "banner": f'<a href="{root}index.html">{COURSE[edition.language]}</a> · {html.escape(edition.title)}',
        "nav": nav,
        "page_css": css,
        "words": {key: word(edition, key) for key in ("answer", "check", "solution", "stale")},
    }
    body, _ = exporter_for(edition.language).from_notebook_node(notebook, resources=resources)
    if edition.language == "bilingual":
        body = unlisted_twin_headings(body)
    return fix_links(body, root, "" if root == "../../" else f"{edition.name}/")


def unlisted_twin_headings(page: str) -> str:
    """The bilingual page with the headings of its Chinese cells kept out of the PDF outline (role="presentation"):
    a section is one bookmark, its English heading, not two."""
    cells = re.split(r'(?=<div [^>]*class="jp-Cell )', page)
    for i, cell in enumerate(cells):
        if re.search(r'<div class="jp-RenderedHTMLCommon jp-RenderedMarkdown[^"]*\bcelltag_lang-zh\b', cell):
            cells[i] = re.sub(r"<(h[1-6])(?=[\s>])", r'<\1 role="presentation"', cell)
    return "".join(cells)


def fix_links(page: str, root: str, lessons_folder: str = "") -> str:
    """Links a lesson makes into the project: another lesson becomes its page in this edition, the glossary the
    handout's glossary page; README and companion/ are not in the handout, so those links become plain text."""
    page = re.sub(r'href="(\d\d-[\w-]+)\.ipynb', rf'href="{lessons_folder}\1.html', page)
    page = page.replace('href="GLOSSARY.md"', f'href="{root}glossary.html"')
    return re.sub(r'<a href="\.\./(?:README\.md|companion/?)[^"]*">(.*?)</a>', r"\1", page)


def markdown_cell(source: str, *tags: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(source, metadata={"tags": list(tags)})


def glossary_cells(edition: Edition) -> list[nbformat.NotebookNode]:
    """The glossary as the book's last section (its table is bilingual in every edition: it pairs the terms)."""
    text = (ROOT / "notebooks" / "GLOSSARY.md").read_text(encoding="utf-8")
    table = text[text.index("| English") :]
    heading = f'<h1 id="glossary">{word(edition, "glossary")}</h1>'
    return [markdown_cell(heading + "\n\n" + table, "lesson-glossary", "glossary")]


def answer_key_cells(lessons: list[tuple[str, nbformat.NotebookNode]], edition: Edition) -> list:
    """The teacher's appendix: each exercise's solution, why it works, the wrong answers its checker catches
    (from the checkers' tables, with the hint each one gets) and a question for class discussion."""
    tables = check_tables()
    languages = ["en", "zh"] if edition.language == "bilingual" else [edition.language]
    cells = [markdown_cell(f'<h1 id="answer-key">{word(edition, "key")}</h1>', "lesson-key")]
    for _number, notebook in lessons:
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
                    hint = hint_for(exercise, index)
                    parts = hint.split("\n提示：", 1) + [""]
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
    return cells


def check_tables() -> dict:
    """Every exercise of the EXERCISES tables (companion/checks/answers/, or beside a checker), by check function."""
    names = [
        f"companion.checks.{package}{info.name}"
        for package in ("", "answers.")
        for info in pkgutil.iter_modules(importlib.import_module(f"companion.checks.{package}".rstrip(".")).__path__)
        if info.name != "answers"
    ]
    return {
        exercise.check.__name__: exercise
        for name in names
        for exercise in getattr(importlib.import_module(name), "EXERCISES", [])
    }


HINTS: dict[tuple[str, int], str] = {}


def hint_for(exercise, index: int) -> str:
    """The hint a checker gives for its `index`-th typical mistake (printed output dropped); computed once per
    build, since some checkers train a small model on each answer."""

    key = (exercise.check.__name__, index)
    if key not in HINTS:
        HINTS[key] = _hint(exercise, exercise.mistakes[index].answer)
    return HINTS[key]


def _hint(exercise, answer) -> str:
    from companion.exercises import WrongAnswer

    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exercise.check(answer)
    except WrongAnswer as error:
        return str(error)
    return ""


def cover_cells(edition: Edition, contents: list[tuple[str, int | str]]) -> list[nbformat.NotebookNode]:
    """The book's cover (title in both languages, edition, PyTorch version, date) and its table of contents."""
    made = word(edition, "made", torch=torch.__version__.split("+")[0], date=datetime.date.today().isoformat())
    cover = (
        '<div class="cover"><p class="cover-course">Tensor by Tensor<br>张量拾级</p>'
        f'<p class="cover-edition">{html.escape(edition.title)}</p><p class="cover-made">{html.escape(made)}</p></div>'
    )
    rows = "".join(
        f'<li><span class="toc-title">{html.escape(plain(title))}</span><span class="toc-page">{page}</span></li>'
        for title, page in contents
    )
    toc = f'<h1 class="toc-heading">{word(edition, "contents")}</h1><ol class="toc">{rows}</ol>'
    return [markdown_cell(cover, "lesson-cover"), markdown_cell(toc, "lesson-cover")]


def pdf_page_count(path: Path) -> int:
    """Pages of a PDF Chromium printed (pdfinfo when present, else its page objects)."""
    if shutil.which("pdfinfo"):
        info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
        return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    return len(re.findall(rb"/Type\s*/Page\b", path.read_bytes()))


def find_chromium() -> str | None:
    """Path of a Chromium or Chrome executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if path := shutil.which(name):
            return path
    return None


class Printer:
    """One headless Chromium that prints pages to A4 PDFs after MathJax and the fonts have finished. The PDFs are
    tagged: Chromium makes the outline (bookmarks) from the tagged headings, and without tags writes none."""

    def __init__(self, chromium: str) -> None:
        from playwright.sync_api import sync_playwright

        self.playwright = sync_playwright().start()
        self.browser = self.playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        self.page = self.browser.new_page()

    def print(self, html_path: Path, pdf_path: Path) -> int:
        """Print one page; return its page count."""
        self.page.goto(html_path.resolve().as_uri(), wait_until="load")
        self.page.evaluate("() => new Promise(done => window.MathJax ? MathJax.Hub.Queue(done) : done())")
        self.page.evaluate("() => document.fonts.ready.then(() => true)")
        pdf_path.parent.mkdir(parents=True, exist_ok=True)
        self.page.pdf(path=str(pdf_path), prefer_css_page_size=True, print_background=True, outline=True, tagged=True)
        return pdf_page_count(pdf_path)

    def reprint(self, pdf_path: Path, selector: str, texts: list[str]) -> int:
        """Print the loaded page again after setting the text of the elements `selector` finds (no reload, so
        MathJax does not typeset again); return the page count."""
        self.page.evaluate(
            "([selector, texts]) => document.querySelectorAll(selector).forEach((e, i) => e.textContent = texts[i])",
            [selector, texts],
        )
        self.page.pdf(path=str(pdf_path), prefer_css_page_size=True, print_background=True, outline=True, tagged=True)
        return pdf_page_count(pdf_path)

    def close(self) -> None:
        self.browser.close()
        self.playwright.stop()


def nav_links(stems: list[str], index: int, edition: Edition) -> str:
    """Previous / contents / next links for a lesson page."""
    links = []
    if index > 0:
        links.append(f'<a rel="prev" href="{stems[index - 1]}.html">← {word(edition, "prev")}</a>')
    links.append(f'<a href="../../index.html">{word(edition, "contents")}</a>')
    if index + 1 < len(stems):
        links.append(f'<a rel="next" href="{stems[index + 1]}.html">{word(edition, "next")} →</a>')
    return " · ".join(links)


def index_page(lessons: list[tuple[str, nbformat.NotebookNode]], with_pdf: bool) -> str:
    """The handout's front page: every lesson in every edition, as HTML and PDF, plus the student notebooks."""
    rows = []
    for stem, notebook in lessons:
        links = []
        for edition in EDITIONS:
            link = f'<a href="html/{edition.name}/{stem}.html">HTML</a>'
            if with_pdf:
                link += f' · <a href="pdf/{edition.name}/{lesson_pdf(stem, edition)}">PDF</a>'
            links.append(f'<td data-edition="{html.escape(edition.title)}">{link}</td>')
        notebook_link = f'<td data-edition="ipynb"><a href="notebooks/{stem}.ipynb">ipynb</a></td>'
        title = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(lesson_title(notebook, "bilingual")))
        rows.append(f"<tr><th>{title}</th>{''.join(links)}{notebook_link}</tr>")
    header = "".join(f"<th>{html.escape(e.title)}</th>" for e in EDITIONS)
    if with_pdf:
        items = "".join(f'<li><a href="pdf/{e.name}.pdf">{html.escape(e.title)}</a></li>' for e in EDITIONS)
        combined = f"<h2>Whole course, one PDF per edition · 全部课程合订本</h2><ul>{items}</ul>"
    else:
        combined = (
            "<p>PDFs were not built: no Chromium was found. Install it (Debian/Ubuntu: <code>apt-get install "
            "chromium</code>) and run <code>make handout</code> again. · 未找到 Chromium，因此没有生成 PDF。</p>"
        )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tensor by Tensor · 张量拾级 — handouts</title>
<style>
@font-face {{ font-family: "Course Sans SC"; src: url("fonts/CourseSansSC-Regular.otf") format("opentype");
  unicode-range: U+3000-303F, U+3400-4DBF, U+4E00-9FFF, U+F900-FAFF, U+FF00-FFEF; }}
body {{ font-family: "Course Sans SC", system-ui, Helvetica, Arial, sans-serif; margin: 1em auto; padding: 0 1em;
  max-width: 72rem; line-height: 1.5; }}
table {{ border-collapse: collapse; }} th, td {{ border: 1px solid #ccc; padding: 0.4em 0.6em; text-align: left; }}
@media (max-width: 700px) {{
  table, tbody, tr, th, td {{ display: block; }} tr:first-child {{ display: none; }}
  tr {{ margin-bottom: 1em; border: 1px solid #ccc; }} th, td {{ border: none; }}
  td::before {{ content: attr(data-edition) ": "; color: #555; }}
}}
</style></head>
<body>
<h1>Tensor by Tensor · 张量拾级</h1>
<p>Handouts for class: each lesson in English, in Chinese and bilingual; student versions leave the exercises to
solve, teacher versions keep the solutions and end with an answer key. The <a href="glossary.html">glossary</a>
pairs every term with its Chinese name.<br>
课堂讲义：每一课都有英文版、中文版和双语版；学生版把练习留给学生完成，教师版保留答案，并在书末附答案与讲解。<a
href="glossary.html">术语表</a>列出每个术语的中文译名。</p>
<table><tr><th>Lesson · 课程</th>{header}<th>Student notebook · 学生笔记本</th></tr>
{"".join(rows)}
</table>
{combined}
</body></html>
"""


def glossary_page() -> str:
    """The glossary as a stand-alone page, so lesson links to it resolve in every edition."""
    exporter = HTMLExporter(template_name="basic")
    notebook = nbformat.v4.new_notebook(cells=[markdown_cell((ROOT / "notebooks" / "GLOSSARY.md").read_text("utf-8"))])
    body, _ = exporter.from_notebook_node(notebook)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Glossary · 术语表</title>
<style>
@font-face {{ font-family: "Course Sans SC"; src: url("fonts/CourseSansSC-Regular.otf") format("opentype");
  unicode-range: U+3000-303F, U+3400-4DBF, U+4E00-9FFF, U+F900-FAFF, U+FF00-FFEF; }}
body {{ font-family: "Course Sans SC", system-ui, sans-serif; margin: 1em auto; padding: 0 1em; max-width: 52rem; }}
table {{ border-collapse: collapse; }} th, td {{ border: 1px solid #ccc; padding: 0.3em 0.5em; text-align: left; }}
</style></head><body><p><a href="index.html">Tensor by Tensor · 张量拾级</a></p>{body}</body></html>
"""


def student_bundle(out_dir: Path, lessons: list[tuple[str, nbformat.NotebookNode]]) -> None:
    """The student notebooks with the `companion` package beside them, so they run on their own."""
    folder = out_dir / "notebooks"
    folder.mkdir()
    for stem, notebook in lessons:
        nbformat.write(edition_notebook(notebook, Edition("bilingual", "student")), folder / f"{stem}.ipynb")
    # The reference answers (companion/checks/answers/) are the teacher's: no solution ships to students.
    shutil.copytree(ROOT / "companion", folder / "companion", ignore=shutil.ignore_patterns("__pycache__", "answers"))
    shutil.copy(ROOT / "notebooks" / "GLOSSARY.md", folder / "GLOSSARY.md")
    (folder / "README.md").write_text(
        """# Tensor by Tensor · 张量拾级 — student notebooks / 学生笔记本

These notebooks run on their own: the `companion` package they import is in this folder. Install the course's
packages once, then open the folder in Jupyter:

    python -m pip install "torch>=2.13,<2.15" numpy matplotlib scikit-learn tqdm psutil jupyterlab
    jupyter lab

这些笔记本可以单独运行：它们导入的 `companion` 包就在本文件夹里。先安装一次课程所需的软件包，再用 Jupyter
打开本文件夹（命令见上）。
""",
        encoding="utf-8",
    )


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
        if "solution" in cell.get("metadata", {}).get("tags", []):
            continue
        printed = "".join("".join(output.get("text", "")) for output in cell.get("outputs", []))
        shown |= {squeezed(line) for line in ("".join(cell["source"]) + "\n" + printed).splitlines()}
    return shown


def lesson_answers(path: Path) -> dict[str, list[str]]:
    """The telling lines of each answer cell of a lesson (lines shown above that cell left out), by where it is."""
    from tools.lesson_copies import answer_lines

    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    answers = {}
    for index, cell in enumerate(cells):
        if "solution" in cell.get("metadata", {}).get("tags", []):
            lines = answer_lines("".join(cell["source"]))
            answers[f"{path.stem} cell {index}"] = telling_lines(lines, _shown_lines(cells[:index]))
    return answers


def reference_answers(notebook_dir: Path = ROOT / "notebooks") -> dict[str, list[str]]:
    """The telling lines of every function of every answers table (each exercise's `reference` and its `right`
    answers, by checker and function name), leaving out the lines its lesson shows above the exercise."""
    import inspect
    import textwrap

    from tools.lesson_copies import answer_lines

    shown_before: dict[str, set[str]] = {}  # checker name -> lines its lesson shows above the exercise
    for path in lesson_files(notebook_dir):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for index, cell in enumerate(cells):
            if cell["cell_type"] == "code" and "solution" not in cell.get("metadata", {}).get("tags", []):
                for name in CHECK_CALL.findall(source(cell)):
                    shown_before.setdefault(name, _shown_lines(cells[:index]))
    answers = {}
    for name, exercise in check_tables().items():
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
                "".join(cell["source"]) + "\n" + "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
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


PRINTERS = 2  # editions built side by side, each by its own Chromium: printing, not Python, takes the time


def build(out_dir: Path, notebook_dir: Path = ROOT / "notebooks", chromium: str | None = None) -> dict:
    """Build every edition of every lesson into `out_dir`; PDFs only when `chromium` is given. Returns a summary."""
    paths = lesson_files(notebook_dir)
    if not paths:
        raise ValueError(f"no lessons (NN-name.ipynb) found in {notebook_dir}: pass the course's notebooks folder")
    start = time.monotonic()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    shutil.copytree(Path(jupyter_server_mathjax.__file__).parent / "static", out_dir / "mathjax")
    (out_dir / "fonts").mkdir(parents=True)
    for name in (FONT_PATH.name, "OFL.txt"):
        shutil.copy(FONT_PATH.parent / name, out_dir / "fonts" / name)
    lessons = [(path.stem, nbformat.read(path, as_version=4)) for path in paths]
    for exercise in check_tables().values():  # the answer key's hints, computed once before the threads start
        for index in range(len(exercise.mistakes)):
            hint_for(exercise, index)
    waiting = queue.SimpleQueue()
    for edition in sorted(EDITIONS, key=lambda e: e.language != "bilingual"):  # the longest books first
        waiting.put(edition)
    pages: dict[str, list[int]] = {}

    def work() -> None:
        printer = Printer(chromium) if chromium else None
        try:
            while True:
                try:
                    edition = waiting.get_nowait()
                except queue.Empty:
                    return
                pages[edition.name] = build_edition(out_dir, lessons, edition, printer)
        finally:
            if printer:
                printer.close()

    with ThreadPoolExecutor(PRINTERS) as pool:
        for done in [pool.submit(work) for _ in range(PRINTERS)]:
            done.result()  # an error in a thread stops the build here
    pages = {edition.name: pages[edition.name] for edition in EDITIONS}
    student_bundle(out_dir, lessons)
    (out_dir / "glossary.html").write_text(glossary_page(), encoding="utf-8")
    (out_dir / "index.html").write_text(index_page(lessons, with_pdf=bool(chromium)), encoding="utf-8")
    SCRATCH.mkdir(parents=True, exist_ok=True)  # the page counts, for a person: beside the handout, not in it
    (SCRATCH / "pages.json").write_text(json.dumps(pages, indent=1))
    return {
        "lessons": len(lessons),
        "total_seconds": round(time.monotonic() - start, 1),
        "pdfs": sum(len(c) for c in pages.values()) if chromium else 0,
        "book_pages": {name: counts[-1] for name, counts in pages.items()} if chromium else {},
    }


def build_edition(out_dir: Path, lessons: list, edition: Edition, printer: "Printer | None") -> list[int]:
    """One edition: a page and a PDF per lesson, then the book; returns the page counts (the book's last)."""
    stems = [stem for stem, _ in lessons]
    editions = [edition_notebook(notebook, edition, stem[:2]) for stem, notebook in lessons]
    titles = [(stem[:2], lesson_title(nb, edition.language)) for stem, nb in zip(stems, editions, strict=True)]
    css = page_css(titles, edition)
    counts = []
    for index, (stem, notebook) in enumerate(zip(stems, editions, strict=True)):
        page = out_dir / "html" / edition.name / f"{stem}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        title = f"{plain(lesson_title(notebook, edition.language))} · {edition.title}"  # the PDF's title too
        page.write_text(export_html(notebook, edition, title, "../../", css, nav_links(stems, index, edition)))
        if printer:
            counts.append(printer.print(page, out_dir / "pdf" / edition.name / lesson_pdf(stem, edition)))
    appendix = glossary_cells(edition)
    parts = [plain(title) for _, title in titles] + [word(edition, "glossary")]
    heads = [running_head(title) for _, title in titles] + [word(edition, "glossary")]
    if edition.version == "teacher":
        appendix += answer_key_cells(list(zip([s[:2] for s in stems], editions, strict=True)), edition)
        parts.append(word(edition, "key"))
        heads.append(word(edition, "key"))
    # A first guess: each lesson starts a named page, so it fills about as many pages as in its own PDF.
    # (An HTML-only build has no page numbers to give.)
    starts = [3 + sum(counts[:i]) for i in range(len(parts))] if printer else [""] * len(parts)
    whole = out_dir / "html" / f"{edition.name}.html"
    book_pdf = out_dir / "pdf" / f"{edition.name}.pdf"
    book_css = (
        css
        + BOOK_CSS
        + "".join(
            f"@page {page} {{ @top-left {{ content: {css_string(word(edition, key))}; }} }}\n"
            for page, key in (("glossary", "glossary"), ("answer-key", "key"))
        )
    )
    book = nbformat.v4.new_notebook(metadata=lessons[0][1].metadata)
    book.cells = cover_cells(edition, list(zip(parts, starts, strict=True)))
    book.cells += [cell for notebook in editions for cell in notebook.cells] + appendix
    book_html = export_html(book, edition, f"{COURSE[edition.language]} · {edition.title}", "../", book_css)
    whole.write_text(book_html)
    if not printer:
        return counts
    book_pages = printer.print(whole, book_pdf)
    for _ in range(2):  # read where each part really starts; correct the contents in the page and print again
        found = part_starts(book_pdf, heads)
        if found is None or found == starts:
            break
        starts = found
        book_pages = printer.reprint(book_pdf, ".toc-page", [str(n) for n in starts])
    pages = iter(starts)
    whole.write_text(re.sub(r'(?<=<span class="toc-page">)[^<]*', lambda _: str(next(pages)), book_html))
    return counts + [book_pages]


def lesson_pdf(stem: str, edition: Edition) -> str:
    """A lesson's PDF file name, which names its edition: '01-tensors.zh-student.pdf'."""
    return f"{stem}.{edition.name}.pdf"


def part_starts(pdf: Path, parts: list[str]) -> list[int] | None:
    """The page each part of a printed book starts on: the first page whose running header (`parts`) names it
    (pdftotext reads the header as the page's first line in -raw order). None without poppler's pdftotext."""
    if not shutil.which("pdftotext"):
        return None
    text = subprocess.run(["pdftotext", "-raw", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    heads = [re.sub(r"\s+", "", " ".join(page.strip().splitlines()[:2])) for page in text.split("\f")]
    starts = []
    for part in parts:
        key = re.sub(r"\s+", "", part)[:16]
        after = starts[-1] if starts else 3
        starts.append(next((n for n, head in enumerate(heads, start=1) if n >= after and key in head), after))
    return starts


# The cover and the contents have no running header or page number; the glossary and answer key have their own.
BOOK_CSS = f"""
{whole_cells("lesson-cover")} {{ page: cover; }}
@page cover {{ @top-left {{ content: none; }} @top-right {{ content: none; }} @bottom-center {{ content: none; }} }}
{whole_cells("lesson-glossary")} {{ page: glossary; }}
{whole_cells("lesson-key")} {{ page: answer-key; }}
"""


def main(argv: list[str] | None = None) -> int:
    """Command line: build the handouts and print what was made."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "handout", help="output folder (replaced)")
    parser.add_argument("--no-pdf", action="store_true", help="build HTML only")
    args = parser.parse_args(argv)
    chromium = None if args.no_pdf else find_chromium()
    summary = build(args.out, chromium=chromium)
    size_mb = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file()) / 1e6
    print(json.dumps({**summary, "size_mb": round(size_mb, 1), "out": str(args.out)}))
    if chromium is None and not args.no_pdf:
        print(
            "No Chromium found, so only HTML was built. For PDFs install Chromium "
            "(Debian/Ubuntu: apt-get install chromium) and run `make handout` again.",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
