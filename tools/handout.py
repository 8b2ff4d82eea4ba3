"""Classroom handouts from the executed notebooks: three languages x student/teacher, as HTML, PDF and notebooks.

Run `python tools/handout.py` (or `make handout`). Everything is built offline: MathJax comes from the
`jupyter-server-mathjax` package, the CJK font from `companion/fonts`, and PDFs are printed by a local Chromium.
"""

import argparse
import ast
import copy
import functools
import html
import json
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import jupyter_server_mathjax
import nbformat
from nbconvert import HTMLExporter

from companion.plotting import FONT_PATH

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = Path(__file__).parent / "templates"
LANGUAGES = ("en", "zh", "bilingual")
VERSIONS = ("student", "teacher")
# Page chrome in the edition's own language, so the English edition holds no Chinese and vice versa.
TITLES = {
    ("en", "student"): "English · Student",
    ("en", "teacher"): "English · Teacher",
    ("zh", "student"): "中文 · 学生版",
    ("zh", "teacher"): "中文 · 教师版",
    ("bilingual", "student"): "Bilingual 双语 · Student 学生版",
    ("bilingual", "teacher"): "Bilingual 双语 · Teacher 教师版",
}
COURSE = {"en": "Tensor by Tensor", "zh": "张量拾级", "bilingual": "Tensor by Tensor · 张量拾级"}
DROPPED_TAG = {"en": "lang-zh", "zh": "lang-en", "bilingual": None}
HTML_LANG = {"en": "en", "zh": "zh-CN", "bilingual": "en"}
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
STUB_NOTE = (
    "# Exercise / 练习: write your answer here, then run the self-check below. / 在这里写出答案，再运行下面的自检。"
)


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
        """Human title in the edition's language, e.g. '中文 · 学生版'."""
        return TITLES[(self.language, self.version)]


EDITIONS = [Edition(language, version) for language in LANGUAGES for version in VERSIONS]


def stub_solution(source: str) -> str:
    """Replace an answer with what the learner must write: the same function signatures and names, no bodies."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise ValueError(f"a solution cell must be valid Python; fix line {error.lineno} first") from error
    lines, stub = source.splitlines(), [STUB_NOTE]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            signature_end = node.body[0].lineno - 1
            stub += lines[node.lineno - 1 : signature_end]
            stub.append('    raise NotImplementedError("your answer / 你的答案")')
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            stub.append(" = ".join(ast.unparse(target) for target in targets) + " = ...  # your answer / 你的答案")
    return "\n".join(stub) + "\n"


def edition_notebook(notebook: nbformat.NotebookNode, edition: Edition) -> nbformat.NotebookNode:
    """A copy of `notebook` holding only the edition's language, with solutions stubbed for students."""
    if edition.language not in LANGUAGES or edition.version not in VERSIONS:
        raise ValueError(f"edition must use a language from {list(LANGUAGES)} and a version from {list(VERSIONS)}")
    result = copy.deepcopy(notebook)
    dropped = DROPPED_TAG[edition.language]
    result.cells = [cell for cell in result.cells if dropped not in cell.get("metadata", {}).get("tags", [])]
    for cell in result.cells:
        if cell.cell_type == "markdown":  # `output:NAME` fences exist for the tests; readers see plain text blocks
            cell.source = re.sub(r"^```output:[\w-]+$", "```text", cell.source, flags=re.M)
    if edition.version == "student":
        for i, cell in enumerate(result.cells):
            if "solution" in cell.get("metadata", {}).get("tags", []):
                cell.source = stub_solution(cell.source)
                cell.outputs, cell.execution_count = [], None
                following = next((c for c in result.cells[i + 1 :] if c.cell_type == "code"), None)
                if following is not None:  # the self-check stays, but its "correct" line would be a spoiler
                    following.outputs = []
    return result


def lesson_title(notebook: nbformat.NotebookNode, language: str) -> str:
    """The lesson's title heading in one language ('bilingual' gives 'English / 中文')."""
    titles = {}
    for cell in notebook.cells[:2]:
        for tag in cell.get("metadata", {}).get("tags", []):
            if tag in ("lang-en", "lang-zh"):
                titles[tag[5:]] = cell.source.splitlines()[0].lstrip("# ").strip()
    if language == "bilingual":
        return f"{titles['en']} / {titles['zh']}"
    return titles[language]


@functools.cache
def exporter_for(language: str) -> HTMLExporter:
    """One exporter per language: building one (and its templates) costs more than exporting a lesson."""
    return HTMLExporter(
        template_name="handout", extra_template_basedirs=[str(TEMPLATES)], language_code=HTML_LANG[language]
    )


def export_html(notebook: nbformat.NotebookNode, edition: Edition, title: str, root: str) -> str:
    """HTML for one edition, with `root` the relative path from the page to the handout folder."""
    exporter = exporter_for(edition.language)
    banner = f'<a href="{root}index.html">{COURSE[edition.language]}</a> · {html.escape(edition.title)}'
    resources = {
        "metadata": {"name": title},
        "handout_root": root,
        "edition_language": edition.language,
        "edition_version": edition.version,
        "banner": banner,
    }
    body, _ = exporter.from_notebook_node(notebook, resources=resources)
    return body


def combined_notebook(notebooks: list[nbformat.NotebookNode]) -> nbformat.NotebookNode:
    """All lessons in one notebook, each lesson after the first starting on a new page."""
    combined = copy.deepcopy(notebooks[0])
    for notebook in notebooks[1:]:
        cells = copy.deepcopy(notebook.cells)
        for cell in cells[:2]:
            cell.metadata.setdefault("tags", []).append("lesson-start")
        combined.cells += cells
    return combined


def find_chromium() -> str | None:
    """Path of a Chromium or Chrome executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if path := shutil.which(name):
            return path
    return None


def print_pdfs(pages: list[tuple[Path, Path]], chromium: str) -> None:
    """Print each (html, pdf) pair to A4 with headless Chromium, after MathJax and the fonts have finished."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page()
        for html_path, pdf_path in pages:
            page.goto(html_path.resolve().as_uri(), wait_until="load")
            page.evaluate("() => new Promise(done => window.MathJax ? MathJax.Hub.Queue(done) : done())")
            page.evaluate("() => document.fonts.ready.then(() => true)")
            pdf_path.parent.mkdir(parents=True, exist_ok=True)
            page.pdf(path=str(pdf_path), prefer_css_page_size=True, print_background=True)
        browser.close()


def index_page(lessons: list[tuple[str, nbformat.NotebookNode]], with_pdf: bool) -> str:
    """The handout's front page: every lesson in every edition, as HTML and PDF, plus the student notebooks."""
    rows = []
    for stem, notebook in lessons:
        links = []
        for edition in EDITIONS:
            link = f'<a href="html/{edition.name}/{stem}.html">HTML</a>'
            if with_pdf:
                link += f' · <a href="pdf/{edition.name}/{stem}.pdf">PDF</a>'
            links.append(f"<td>{link}</td>")
        notebook_link = f'<td><a href="notebooks/{stem}.ipynb">ipynb</a></td>'
        title = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(lesson_title(notebook, "bilingual")))
        rows.append(f"<tr><th>{title}</th>{''.join(links)}{notebook_link}</tr>")
    header = "".join(f"<th>{html.escape(e.title)}</th>" for e in EDITIONS)
    combined = ""
    if with_pdf:
        items = "".join(f'<li><a href="pdf/{e.name}.pdf">{html.escape(e.title)}</a></li>' for e in EDITIONS)
        combined = f"<h2>Whole course, one PDF per edition · 全部课程合订本</h2><ul>{items}</ul>"
    else:
        combined = (
            "<p>PDFs were not built: no Chromium was found. Install it (Debian/Ubuntu: <code>apt-get install "
            "chromium</code>) and run <code>make handout</code> again. · 未找到 Chromium，因此没有生成 PDF。</p>"
        )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Tensor by Tensor · 张量拾级 — handouts</title>
<style>
@font-face {{ font-family: "Course Sans SC"; src: url("fonts/CourseSansSC-Regular.otf") format("opentype");
  unicode-range: U+3000-303F, U+3400-4DBF, U+4E00-9FFF, U+F900-FAFF, U+FF00-FFEF; }}
body {{ font-family: "Course Sans SC", system-ui, Helvetica, Arial, sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; }} th, td {{ border: 1px solid #ccc; padding: 0.4em 0.6em; text-align: left; }}
</style></head>
<body>
<h1>Tensor by Tensor · 张量拾级</h1>
<p>Handouts for class: each lesson in English, in Chinese and bilingual; student versions replace the exercise
solutions with a stub, teacher versions keep them.<br>
课堂讲义：每一课都有英文版、中文版和双语版；学生版把练习答案换成待填写的空白，教师版保留答案。</p>
<table><tr><th>Lesson · 课程</th>{header}<th>Student notebook · 学生笔记本</th></tr>
{"".join(rows)}
</table>
{combined}
</body></html>
"""


def build(out_dir: Path, notebook_dir: Path = ROOT / "notebooks", chromium: str | None = None) -> dict:
    """Build every edition of every lesson into `out_dir`; PDFs only when `chromium` is given. Returns a summary."""
    paths = sorted(notebook_dir.glob("[0-9][0-9]-*.ipynb"))
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
    pdf_jobs = []
    for edition in EDITIONS:
        editions = [edition_notebook(notebook, edition) for _, notebook in lessons]
        for (stem, _), notebook in zip(lessons, editions, strict=True):
            page = out_dir / "html" / edition.name / f"{stem}.html"
            page.parent.mkdir(parents=True, exist_ok=True)
            title = lesson_title(notebook, edition.language).replace("`", "")  # a page title shows no markdown
            page.write_text(export_html(notebook, edition, title, "../../"))
            pdf_jobs.append((page, out_dir / "pdf" / edition.name / f"{stem}.pdf"))
        whole = out_dir / "html" / f"{edition.name}.html"
        title = f"{COURSE[edition.language]} · {edition.title}"
        whole.write_text(export_html(combined_notebook(editions), edition, title, "../"))
        pdf_jobs.append((whole, out_dir / "pdf" / f"{edition.name}.pdf"))
    (out_dir / "notebooks").mkdir()
    for stem, notebook in lessons:
        nbformat.write(
            edition_notebook(notebook, Edition("bilingual", "student")), out_dir / "notebooks" / f"{stem}.ipynb"
        )
    html_seconds = time.monotonic() - start
    if chromium:
        print_pdfs(pdf_jobs, chromium)
    (out_dir / "index.html").write_text(index_page(lessons, with_pdf=bool(chromium)))
    return {
        "lessons": len(lessons),
        "html_seconds": round(html_seconds, 1),
        "total_seconds": round(time.monotonic() - start, 1),
        "pdfs": len(pdf_jobs) if chromium else 0,
    }


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
