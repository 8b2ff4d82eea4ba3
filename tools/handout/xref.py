"""A book's cross-references: a lesson's link to another lesson, or to a section, becomes a link inside the book
(clickable in the PDF) followed by the page it leads to, "lesson 08 (p. 143)", read from the printed book as the
contents' pages are (tools/handout/book.py).

In the book every heading id is made unique by its lesson's number ("05-Padding"): two lessons may have a section of
the same name, and a link must reach its own lesson's. A heading id that spells more than ASCII (nbconvert
percent-encodes a Chinese heading's text into its id, 9 bytes a character) becomes the lesson's number and the
heading's place in it ("05-h3"): Chromium names a PDF link's destination after its id, and those names outgrew the
127 bytes a PDF name may have (poppler warned at every read of a Chinese book).
"""

import html
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from tools.handout.editions import Edition
from tools.handout.export import CELL

PAGE_WORDS = {"en": " (p. {page})", "zh": "（第 {page} 页）"}
LINK = re.compile(r'<a href="(?:[\w-]+/)?(?:(\d\d)-[\w-]+\.html)?(?:#([^"]*))?">(.*?)</a>', re.S)


@dataclass(frozen=True)
class Target:
    """Where a cross-reference leads: a lesson (by its index in the book), and a heading of it or its start."""

    lesson: int
    heading: str  # the heading's text, "" for the lesson's start
    language: str  # the language of the sentence that refers to it


def linked_book(page: str, edition: Edition, numbers: list[str]) -> tuple[str, list[Target]]:
    """The book's HTML with its lessons' links made internal, each followed by an empty `xref-page` span for its
    page, and the target of each span in order."""
    cells, titles, final, seen = CELL.split(page), {}, {}, {}
    for i, cell in enumerate(cells):  # heading ids unique per lesson; a lesson's first h1 is its title
        if lesson := lesson_of(cell):
            cell = re.sub(r'(<h[1-6][^>]*? id="|<a class="anchor-link" href="#)', rf"\g<1>{lesson}-", cell)
            for unique in re.findall(r'<h[1-6][^>]*? id="([^"]*)"', cell):
                seen[lesson] = seen.get(lesson, 0) + 1
                final.setdefault(unique, unique if unquote(unique).isascii() else f"{lesson}-h{seen[lesson]}")
                cell = cell.replace(f'id="{unique}"', f'id="{final[unique]}"').replace(
                    f'href="#{unique}"', f'href="#{final[unique]}"'
                )
            if lesson not in titles and (title := re.search(r'<h1[^>]*? id="([^"]*)"', cell)):
                titles[lesson] = title.group(1)
            cells[i] = cell
    page = "".join(cells)
    ids = set(final)  # the ids a lesson's links name, each lesson's number before it
    targets: list[Target] = []
    cells = CELL.split(page)
    for i, cell in enumerate(cells):
        if not (lesson := lesson_of(cell)):
            continue
        language = "zh" if edition.language == "zh" or "celltag_lang-zh" in cell else "en"

        def internal(link: re.Match, lesson: str = lesson, language: str = language) -> str:
            number, fragment, text = link.group(1) or lesson, link.group(2), link.group(3)
            if number not in titles or (link.group(1) is None and fragment is None):
                return link.group(0)
            anchor = heading_id(ids, number, fragment) if fragment else None
            if fragment and anchor is None:
                raise ValueError(f"lesson {lesson} links to #{fragment} of lesson {number}, which has no such heading")
            anchor = final.get(anchor)
            targets.append(Target(numbers.index(number), heading_text(page, anchor) if anchor else "", language))
            return f'<a href="#{anchor or titles[number]}">{text}</a><span class="xref-page"></span>'

        cells[i] = LINK.sub(internal, cell)
    return "".join(cells), targets


def lesson_of(cell: str) -> str | None:
    """The number of the lesson a cell's HTML belongs to (its `lesson-NN` tag), None for the book's own parts."""
    found = re.search(r"celltag_lesson-(\d\d)\b", cell)
    return found.group(1) if found else None


def heading_id(ids: set[str], number: str, fragment: str) -> str | None:
    """The book's id of the heading a lesson's `#fragment` names (written raw or percent-encoded), or None."""
    for candidate in (fragment, quote(unquote(fragment), safe=":,()'!*-._~")):
        if f"{number}-{candidate}" in ids:
            return f"{number}-{candidate}"
    return None


def heading_text(page: str, anchor: str) -> str:
    """The text of the heading with id `anchor`, as a reader sees it."""
    found = re.search(rf'<h[1-6][^>]*? id="{re.escape(anchor)}"[^>]*>(.*?)</h[1-6]>', page, re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).replace("¶", "").strip()


def target_pages(targets: list[Target], texts: list[str], starts: list[int]) -> list[str]:
    """Each target's page label: its lesson's first page, or the first page of its lesson that shows its heading."""
    labels = []
    for target in targets:
        first = starts[target.lesson]
        last = starts[target.lesson + 1] if target.lesson + 1 < len(starts) else len(texts) + 1
        page = first
        if target.heading:
            key = re.sub(r"\s+", "", target.heading)
            page = next((n for n in range(first, last) if key in re.sub(r"\s+", "", texts[n - 1])), first)
        labels.append(PAGE_WORDS[target.language].format(page=page))
    return labels


def guessed_pages(targets: list[Target], starts: list[int]) -> list[str]:
    """Each target's label before the book is printed: its lesson's guessed first page."""
    return [PAGE_WORDS[target.language].format(page=starts[target.lesson]) for target in targets]
