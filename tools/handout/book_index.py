"""The book's index: every name the course teaches (the `introduces` lists of notebooks/course.toml), with the pages
of the printed book where it appears. The pages come from the printed PDF itself (poppler's pdftotext), so the index
is filled in after the first print, as the contents are.
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


def index_cells(edition: Edition, terms: list[str]) -> list:
    """The index as the book's last part: one entry per name, its pages left empty until the book is printed."""
    rows = "".join(f'<li><code>{html.escape(term)}</code> <span class="index-pages"></span></li>' for term in terms)
    heading = f'<h1 id="book-index">{html.escape(index_title(edition))}</h1>'
    return [markdown_cell(f'{heading}\n<ul class="book-index">{rows}</ul>', "lesson-index", "book-index")]


def pattern(term: str) -> re.Pattern:
    """How a name shows on a page: as written, not inside a longer name (`.sum` is not `.sum_`, `cat` not `concat`)."""
    return re.compile(rf"(?<![\w]){re.escape(term)}(?![\w])" if term[0] != "." else rf"{re.escape(term)}(?!\w)")


def page_texts(pdf: Path) -> list[str] | None:
    """The text of each page of a PDF (None without poppler's pdftotext)."""
    if not shutil.which("pdftotext"):
        return None
    text = subprocess.run(["pdftotext", "-raw", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    return text.split("\f")


def index_pages(pdf: Path, terms: list[str], first: int, last: int) -> list[str] | None:
    """For each term, the pages from `first` to `last` (the lessons and appendices before the index) that show
    it, as the index prints them: "12, 15, 40" (at most MOST_PAGES, then "…")."""
    texts = page_texts(pdf)
    if texts is None:
        return None
    found = []
    for term in terms:
        seen = pattern(term)
        pages = [n for n in range(first, last) if n - 1 < len(texts) and seen.search(texts[n - 1])]
        shown = ", ".join(str(n) for n in pages[:MOST_PAGES])
        found.append(shown + (", …" if len(pages) > MOST_PAGES else ""))
    return found
