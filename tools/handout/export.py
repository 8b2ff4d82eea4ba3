"""An edition's notebook as an HTML page, and the handout's own pages (front page, glossary).

Lesson pages come from nbconvert's stock `HTMLExporter` with the course's template (tools/templates/handout/
index.html.j2: offline MathJax, the CJK font, CSS paged media for print); the front page and the glossary from the
plain Jinja templates beside it.
"""

import functools
import html
import re
import threading

import jinja2
import nbformat
from nbconvert import HTMLExporter
from nbconvert.exporters.templateexporter import TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.strings import clean_html

from tools.course import NOTEBOOK_DIR, ROOT
from tools.handout.editions import (
    COURSE,
    EDITIONS,
    Edition,
    lesson_pdf,
    lesson_title,
    markdown_cell,
    running_head,
    word,
)

TEMPLATES = ROOT / "tools" / "templates"
PAGES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES / "handout"), autoescape=True, keep_trailing_newline=True
)
HTML_LANG = {"en": "en", "zh": "zh-CN", "bilingual": "en"}
CELL = re.compile(r'(?=<div [^>]*class="jp-Cell )')  # where each cell of an exported page starts: split on it
# Each source line in a span of its own, so that a line too long for the page wraps with a hanging indent (CSS).
HIGHLIGHT = Highlight2HTML(pygments_lexer="ipython3", extra_formatter_options={"linespans": "line"})


@functools.cache
def _highlight(source: str, language: str | None, magics_language: str | None) -> str:
    metadata = {"magics_language": magics_language} if magics_language else None
    lines = HIGHLIGHT(source, language=language, metadata=metadata)
    return re.sub(r'<span id="line-\d+">', '<span class="code-line">', lines)  # ids would repeat in every cell


def cached_highlight(source: str, language: str | None = None, metadata=None) -> str:
    """nbconvert's highlight_code, computed once per source: the build exports every cell a dozen times (six
    editions, each lesson alone and in its book), and of a cell's metadata only a cell magic's language matters."""
    return _highlight(source, language, (metadata or {}).get("magics_language"))


cached_clean_html = functools.cache(clean_html)  # the same reason: one clean per distinct piece of HTML

EXPORTERS = threading.local()


def exporter_for(language: str) -> HTMLExporter:
    """One exporter per language and thread: building one (and its templates) costs more than exporting a lesson,
    and an exporter keeps state while it works, so two threads never share one."""
    made = EXPORTERS.__dict__.setdefault("by_language", {})
    if language not in made:
        made[language] = HTMLExporter(
            template_name="handout",
            extra_template_basedirs=[str(TEMPLATES)],
            language_code=HTML_LANG[language],
            filters={"highlight_code": cached_highlight, "clean_html": cached_clean_html},
        )
    return made[language]


def accessible(page: str) -> str:
    """The two attributes HTMLExporter adds after rendering: alt text on an image without one, and keyboard focus
    (tabindex) on every input and output, so that a reader can scroll a wide one without a mouse."""
    page = re.sub(r"<img(?![^>]*\balt=)", '<img alt="No description has been provided for this image"', page)
    return re.sub(
        r'(<div class="[^"]*\b(?:jp-Cell-inputWrapper|jp-OutputArea-output)\b[^"]*")', r'\1 tabindex="0"', page
    )


def export_html(
    notebook, edition: Edition, title: str, root: str, css: str, nav: str = "", lessons_folder: str | None = None
) -> str:
    """HTML for one edition, with `root` the relative path from the page to the handout folder and
    `lessons_folder` from the page to the edition's lesson pages (by default: beside it, or the book's)."""
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
    # Rendered by the template exporter HTMLExporter builds on. HTMLExporter's own from_notebook_node adds to it a
    # filter for widget state (the lessons have no widgets) and, for the two attributes of `accessible`, a
    # BeautifulSoup pass that re-serialises the whole page: a third of the export time, and different HTML.
    body, _ = TemplateExporter.from_notebook_node(exporter_for(edition.language), notebook, resources)
    body = accessible(body)
    if edition.language == "bilingual":
        body = unlisted_twin_headings(body)
    if lessons_folder is None:
        lessons_folder = "" if root == "../../" else f"{edition.name}/"
    return fix_links(body, root, lessons_folder)


def unlisted_twin_headings(page: str) -> str:
    """The bilingual page with the headings of its Chinese cells kept out of the PDF outline (role="presentation"):
    a section is one bookmark, its English heading, not two."""
    cells = CELL.split(page)
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


def page_css(lessons: list[tuple[str, str]], edition: Edition) -> str:
    """Named pages: each lesson's pages carry its title in the running header and the edition label."""
    label = css_string(edition.header_label)
    rules = [f"@page {{ @top-right {{ content: {label}; }} }}"]
    for number, title in lessons:
        rules.append(f"{whole_cells(f'lesson-{number}')} {{ page: lesson-{number}; }}")
        rules.append(f"@page lesson-{number} {{ @top-left {{ content: {css_string(running_head(title))}; }} }}")
        # Sections numbered as in a book, 05.3: the lesson's title cell starts the count, each `##` of the lesson's
        # prose adds one (in the bilingual edition the English heading counts, its Chinese twin repeats it).
        rules.append(
            f".celltag_lesson-{number}:is(.celltag_lang-en, .celltag_lang-zh) h2::before "
            f'{{ content: "{number}." counter(lesson-section) "\\2003"; }}'
        )
        # Displayed equations numbered as the figures are, (4.2), at the right margin. Each language counts its
        # own: a bilingual cell may hold two, and its Chinese twin holds the same two in the same order.
        for language in ("en", "zh"):
            rules.append(
                f".celltag_lesson-{number}.celltag_lang-{language} .MathJax_Display::after "
                f'{{ content: "({int(number)}." counter(equation-{language}) ")"; }}'
            )
    rules.append(".jp-Cell:has(h1) { counter-reset: lesson-section equation-en equation-zh; }")  # a lesson's title
    counted = "zh" if edition.language == "zh" else "en"
    rules.append(f".celltag_lang-{counted} h2 {{ counter-increment: lesson-section; }}")
    for language in ("en", "zh"):
        rules.append(f".celltag_lang-{language} .MathJax_Display {{ counter-increment: equation-{language}; }}")
    return "\n".join(rules)


def whole_cells(tag: str) -> str:
    """A selector for the cells tagged `tag` as whole blocks: nbconvert puts a code cell's tags on the cell but a
    markdown cell's on its rendered text, and a page name must sit on the cell, or Chromium breaks the page
    between the cell and its own contents."""
    return f".jp-Cell.celltag_{tag}, .jp-Cell:has(.celltag_{tag})"


def css_string(text: str) -> str:
    """`text` as a CSS string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def nav_links(stems: list[str], index: int, edition: Edition) -> str:
    """Previous / contents / next links for a lesson page."""
    links = []
    if index > 0:
        links.append(f'<a rel="prev" href="{stems[index - 1]}.html">← {word(edition, "prev")}</a>')
    links.append(f'<a href="../../index.html">{word(edition, "contents")}</a>')
    if index + 1 < len(stems):
        links.append(f'<a rel="next" href="{stems[index + 1]}.html">{word(edition, "next")} →</a>')
    return " · ".join(links)


def title_html(title: str) -> str:
    """A lesson title as HTML: escaped, its `code` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(title))


def index_page(lessons: list[tuple[str, nbformat.NotebookNode]], with_pdf: bool) -> str:
    """The handout's front page: every lesson in every edition, as HTML and PDF, plus the student notebooks."""
    titles = [(stem, title_html(lesson_title(notebook, "bilingual"))) for stem, notebook in lessons]
    return PAGES.get_template("front.html.j2").render(
        lessons=titles, editions=EDITIONS, with_pdf=with_pdf, lesson_pdf=lesson_pdf
    )


def glossary_page() -> str:
    """The glossary as a stand-alone page, so lesson links to it resolve in every edition."""
    notebook = nbformat.v4.new_notebook(cells=[markdown_cell((NOTEBOOK_DIR / "GLOSSARY.md").read_text("utf-8"))])
    body, _ = HTMLExporter(template_name="basic").from_notebook_node(notebook)
    return PAGES.get_template("glossary.html.j2").render(body=body)
