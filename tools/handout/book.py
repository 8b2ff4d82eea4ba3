"""The whole handout: for each edition a page and a PDF per lesson and the book (cover, contents, every lesson, the
glossary and, for teachers, the answer key); the front page, the glossary page and the student bundle.

The book's contents, its index and its cross-references need pages, which only printing tells: Chromium has no CSS
`target-counter()`. So the book is printed with a first guess (each lesson as long as its own PDF), the pages are
read back from the PDF (its running headers, its text), filled in, and the book printed again (twice at most)
until they agree.
"""

import copy
import datetime
import html
import json
import queue
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jupyter_server_mathjax
import nbformat
import torch

from tools.course import NOTEBOOK_DIR, ROOT, lesson_files
from tools.handout.book_index import index_cells, index_pages, index_terms, index_title, lesson_pages, page_texts
from tools.handout.bundle import student_bundle
from tools.handout.editions import (
    COPY_LANGUAGE,
    COURSE,
    EDITIONS,
    Edition,
    edition_notebook,
    lesson_pdf,
    lesson_title,
    markdown_cell,
    plain,
    running_head,
    word,
)
from tools.handout.export import css_string, export_html, glossary_page, index_page, nav_links, page_css, whole_cells
from tools.handout.fonts import install_fonts
from tools.handout.key import answer_key_cells, hints
from tools.handout.plan import plan_cells, plan_head
from tools.handout.printing import Printer, part_starts
from tools.handout.worksheet import worksheet_cells, worksheet_word
from tools.handout.xref import guessed_pages, linked_book, target_pages
from tools.lesson_copies import edition_file, exercises, one_language, with_chinese_code

SCRATCH = ROOT / "build" / "handout"  # what the build and its checks write besides the handouts
PRINTERS = 2  # editions built side by side, each by its own Chromium: printing, not Python, takes the time
# The cover and the contents have no running header or page number; the glossary and answer key have their own.
BOOK_CSS = f"""
{whole_cells("lesson-cover")} {{ page: cover; }}
@page cover {{ @top-left {{ content: none; }} @top-right {{ content: none; }} @bottom-center {{ content: none; }} }}
{whole_cells("lesson-glossary")} {{ page: glossary; }}
{whole_cells("lesson-index")} {{ page: book-index; }}
"""


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


def glossary_cells(edition: Edition) -> list[nbformat.NotebookNode]:
    """The glossary as the book's last section (its table is bilingual in every edition: it pairs the terms)."""
    text = (NOTEBOOK_DIR / "GLOSSARY.md").read_text(encoding="utf-8")
    table = text[text.index("| English") :]
    heading = f'<h1 id="glossary">{word(edition, "glossary")}</h1>'
    return [markdown_cell(heading + "\n\n" + table, "lesson-glossary", "glossary")]


def build(out_dir: Path, notebook_dir: Path = NOTEBOOK_DIR, chromium: str | None = None) -> dict:
    """Build every edition of every lesson into `out_dir`; PDFs only when `chromium` is given. Returns a summary."""
    paths = lesson_files(notebook_dir)
    if not paths:
        raise ValueError(f"no lessons (NN-name.ipynb) found in {notebook_dir}: pass the course's notebooks folder")
    start = time.monotonic()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    shutil.copytree(Path(jupyter_server_mathjax.__file__).parent / "static", out_dir / "mathjax")
    install_fonts(out_dir)
    lessons = [(path.stem, nbformat.read(path, as_version=4)) for path in paths]
    chinese = {path.stem: nbformat.read(edition_file(path, "zh"), as_version=4) for path in paths}
    hints()  # the answer key's hints, computed once before the threads start (see hints)
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
                if edition.language == "zh":  # the Chinese books show the Chinese edition's code and outputs
                    ours = [(stem, with_chinese_code(nb, chinese[stem])) for stem, nb in lessons]
                else:
                    ours = lessons
                pages[edition.name] = build_edition(out_dir, ours, edition, printer)
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


def build_worksheets(out_dir: Path, lessons: list, edition: Edition, printer: Printer | None) -> None:
    """A student edition's worksheets: a page per lesson, and all of them as one PDF, each on pages of its own."""
    folder = out_dir / "html" / edition.name / "worksheets"
    folder.mkdir(parents=True, exist_ok=True)
    css, workbook = page_css([], edition), []
    for stem, notebook in lessons:
        number = stem[:2]
        cells = worksheet_cells(one_language(notebook, COPY_LANGUAGE[edition.language]), number, edition)
        css += f"\n{whole_cells(f'worksheet-{number}')} {{ page: worksheet-{number}; }}"
        head = css_string(worksheet_word(edition, "head", n=number))
        css += f"\n@page worksheet-{number} {{ @top-left {{ content: {head}; }} }}"
        title = f"{plain(cells[0].source.removeprefix('# '))} · {edition.title}"
        sheet = nbformat.v4.new_notebook(metadata=notebook.metadata, cells=cells)
        (folder / f"{stem}.html").write_text(export_html(sheet, edition, title, "../../../", css, lessons_folder="../"))
        workbook += cells
    book = nbformat.v4.new_notebook(metadata=lessons[0][1].metadata, cells=workbook)
    title = f"{worksheet_word(edition, 'all')} · {edition.title}"
    whole = out_dir / "html" / edition.name / "worksheets" / "all.html"
    whole.write_text(export_html(book, edition, title, "../../../", css, lessons_folder="../"))
    if printer:
        printer.print(whole, out_dir / "pdf" / edition.name / f"worksheets.{edition.name}.pdf")


def build_edition(out_dir: Path, lessons: list, edition: Edition, printer: Printer | None) -> list[int]:
    """One edition: a page and a PDF per lesson, then the book; returns the page counts (the book's last)."""
    stems = [stem for stem, _ in lessons]
    editions = [edition_notebook(notebook, edition, stem[:2]) for stem, notebook in lessons]
    titles = [(stem[:2], lesson_title(nb, edition.language)) for stem, nb in zip(stems, editions, strict=True)]
    css = page_css(titles, edition)
    if edition.version == "teacher":  # a lesson plan page before each lesson, on a named page of its own
        for (stem, source_notebook), notebook in zip(lessons, editions, strict=True):
            number = stem[:2]
            notebook.cells[:0] = plan_cells(source_notebook, number, edition)
            css += f"\n{whole_cells(f'plan-{number}')} {{ page: plan-{number}; }}"
            css += f"\n@page plan-{number} {{ @top-left {{ content: {css_string(plan_head(number, edition))}; }} }}"
        css += f"\n{whole_cells('lesson-key')} {{ page: answer-key; }}"
        css += f"\n@page answer-key {{ @top-left {{ content: {css_string(word(edition, 'key'))}; }} }}"
    if edition.version == "student":
        build_worksheets(out_dir, lessons, edition, printer)
    counts = []
    for index, (stem, notebook) in enumerate(zip(stems, editions, strict=True)):
        page = out_dir / "html" / edition.name / f"{stem}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        title = f"{plain(lesson_title(notebook, edition.language))} · {edition.title}"  # the PDF's title too
        alone = notebook
        if edition.version == "teacher" and exercises(notebook):  # the teacher's pack: plan, lesson, its answer key
            alone = copy.copy(notebook)
            alone.cells = notebook.cells + answer_key_cells([(stem[:2], notebook)], edition)
        page.write_text(export_html(alone, edition, title, "../../", css, nav_links(stems, index, edition)))
        if printer:
            counts.append(printer.print(page, out_dir / "pdf" / edition.name / lesson_pdf(stem, edition)))
    appendix = glossary_cells(edition)
    parts = [plain(title) for _, title in titles] + [word(edition, "glossary")]
    heads = [running_head(title) for _, title in titles] + [word(edition, "glossary")]
    if edition.version == "teacher":
        appendix += answer_key_cells(list(zip([s[:2] for s in stems], editions, strict=True)), edition)
        parts.append(word(edition, "key"))
        heads.append(word(edition, "key"))
    parts.append(index_title(edition))
    heads.append(index_title(edition))
    # A first guess: each lesson starts a named page, so it fills about as many pages as in its own PDF.
    # (An HTML-only build has no page numbers to give.)
    starts = [3 + sum(counts[:i]) for i in range(len(parts))] if printer else [""] * len(parts)
    terms = index_terms()
    indexed = [""] * len(terms)
    appendix += index_cells(edition, terms, indexed)
    whole = out_dir / "html" / f"{edition.name}.html"
    book_pdf = out_dir / "pdf" / f"{edition.name}.pdf"
    book_css = (
        css + BOOK_CSS + f"@page glossary {{ @top-left {{ content: {css_string(word(edition, 'glossary'))}; }} }}\n"
        f"@page book-index {{ @top-left {{ content: {css_string(index_title(edition))}; }} }}\n"
    )
    book = nbformat.v4.new_notebook(metadata=lessons[0][1].metadata)
    book.cells = cover_cells(edition, list(zip(parts, starts, strict=True)))
    book.cells += [cell for notebook in editions for cell in notebook.cells] + appendix
    book_html = export_html(book, edition, f"{COURSE[edition.language]} · {edition.title}", "../", book_css)
    book_html, targets = linked_book(book_html, edition, [stem[:2] for stem in stems])
    # the first guess for the links' pages too: their labels as long as the right ones, so pages move less
    referred = guessed_pages(targets, starts) if printer else [""] * len(targets)
    whole.write_text(filled(book_html, "xref-page", referred))
    if not printer:
        return counts
    # Untagged: this print is only read back (a tagged PDF, which the bookmarks need, takes twice as long to write),
    # and the book is always printed again, tagged, with its pages filled in.
    printed, tagged = printer.print(whole, book_pdf, tagged=False), False
    for _ in range(2):  # read where each part starts and each name shows; fill in contents, index and links; reprint
        texts = page_texts(book_pdf)
        if texts is None:
            break
        found = part_starts(texts, heads)
        # the index is the last part: its own length moves no earlier page
        names = index_pages(lesson_pages(texts, found[0], found[len(titles)]), terms)
        pages = target_pages(targets, texts, found)
        if (found, names, pages) == (starts, indexed, referred) and tagged:
            break
        starts, indexed, referred = found, names, pages
        labels = {".toc-page": [str(n) for n in starts], ".index-pages": indexed, ".xref-page": referred}
        printed, tagged = printer.reprint(book_pdf, labels), True
    for name, values in [("toc-page", [str(n) for n in starts]), ("index-pages", indexed), ("xref-page", referred)]:
        book_html = filled(book_html, name, values)
    whole.write_text(book_html)
    return counts + [printed]


def filled(page: str, name: str, values: list[str]) -> str:
    """`page` with the text of its `<span class="name">` elements set to `values`, in order."""
    shown = iter(values)
    return re.sub(rf'(?<=<span class="{name}">)[^<]*', lambda _: next(shown), page)
