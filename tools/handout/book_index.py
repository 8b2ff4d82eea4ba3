"""The book's index: every name the course teaches (the `introduces` lists of notebooks/course.toml), with the pages
of the book's lessons where it appears. The pages are read from the printed book itself (poppler's pdftotext) and
filled in when the contents' page numbers are (tools/handout/book.py).
"""

import html
import re
import shutil
import subprocess
from pathlib import Path

from tools.course import course_map
from tools.handout.editions import Edition, markdown_cell

INDEX_WORDS = {"en": "Index", "zh": "索引"}
MOST_PAGES = 8  # an entry lists its first pages; a name used everywhere (torch.tensor) is not a list of 200


def index_terms() -> list[str]:
    """The names the lessons introduce, each once, sorted as a reader looks them up (`torch.`, `nn.`, `F.` and a
    leading dot aside, case ignored)."""
    names = {name for lesson in course_map() for name in lesson.get("introduces", [])}
    return sorted(names, key=lambda name: (re.sub(r"^(torch\.|nn\.|F\.|dist\.|\.)+", "", name).lower(), name))


def index_title(edition: Edition) -> str:
    """The index's heading in the edition's language(s)."""
    return " · ".join(INDEX_WORDS[language] for language in edition.languages)


def index_cells(edition: Edition, terms: list[str], pages: list[str]) -> list:
    """The index as the book's last part: one entry per name with its pages (empty in a book not printed)."""
    rows = "".join(
        f'<li><code>{html.escape(term)}</code> <span class="index-pages">{shown}</span></li>'
        for term, shown in zip(terms, pages, strict=True)
    )
    heading = f'<h1 id="book-index">{html.escape(index_title(edition))}</h1>'
    return [markdown_cell(f'{heading}\n<ul class="book-index">{rows}</ul>', "lesson-index", "book-index")]


def pattern(term: str) -> re.Pattern:
    """How a name shows on a page: as written, not inside a longer name (`.sum` is not `.sum_`, `cat` not `concat`)."""
    return re.compile(rf"(?<![\w]){re.escape(term)}(?![\w])" if term[0] != "." else rf"{re.escape(term)}(?!\w)")


def unbroken(text: str) -> str:
    """A page's text with a name broken over two lines (a long name in a narrow column) joined again."""
    return re.sub(r"(?<=[\w.])\s*\n\s*(?=[\w.])", "", text)


def shows(term: str, text: str) -> bool:
    """Whether a page's text shows `term`: as written, or broken over two lines."""
    return bool(pattern(term).search(text) or pattern(term).search(unbroken(text)))


def page_texts(pdf: Path) -> list[str] | None:
    """The text of each page of a PDF (None without poppler's pdftotext)."""
    if not shutil.which("pdftotext"):
        return None
    text = subprocess.run(["pdftotext", "-raw", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    return text.split("\f")


def lesson_pages(texts: list[str], first: int, last: int) -> dict[int, str]:
    """The pages `first` to `last` - 1 of a printed book (its lessons: the parts after them are not indexed)."""
    return {n: texts[n - 1] for n in range(first, min(last, len(texts) + 1))}


def index_pages(pages: dict[int, str], terms: list[str]) -> list[str]:
    """For each term, the book pages that show it, as the index prints them: "12, 15, 40" (at most MOST_PAGES)."""
    # Each page joined once, each pattern compiled once, and searched only on pages that hold its letters (a name
    # has no space, so wherever it shows, as written or broken, the joined text holds it): `shows`, term by page,
    # took 9 s of a book's build.
    readings = [(n, text, unbroken(text)) for n, text in sorted(pages.items())]
    found = []
    for term in terms:
        name = pattern(term)
        numbers = [n for n, text, joined in readings if term in joined and (name.search(text) or name.search(joined))]
        shown = ", ".join(str(n) for n in numbers[:MOST_PAGES])
        found.append(shown + (", …" if len(numbers) > MOST_PAGES else ""))
    return found
