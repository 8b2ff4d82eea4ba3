"""HTML pages to A4 PDFs with a local Chromium, and what the handout reads back from a PDF (pages, where parts start).

Chromium's CSS paged media gives the page furniture: a running header per lesson (named pages), "n / N" footers and
PDF bookmarks. It has no `target-counter()`, so a book's contents learn their page numbers by printing: see
`part_starts` and tools.handout.book.
"""

import re
import shutil
import subprocess
from pathlib import Path

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def find_chromium() -> str | None:
    """Path of a Chromium or Chrome executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if path := shutil.which(name):
            return path
    return None


def pdf_page_count(path: Path) -> int:
    """Pages of a PDF Chromium printed (pdfinfo when present, else its page objects)."""
    if shutil.which("pdfinfo"):
        info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
        return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    return len(re.findall(rb"/Type\s*/Page\b", path.read_bytes()))


class Printer:
    """One headless Chromium that prints pages to A4 PDFs after MathJax and the fonts have finished. The PDFs are
    tagged: Chromium makes the outline (bookmarks) from the tagged headings, and without tags writes none."""

    def __init__(self, chromium: str) -> None:
        from playwright.sync_api import sync_playwright  # only `make handout` installs it (the handout extra)

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

    def reprint(self, pdf_path: Path, texts: dict[str, list[str]]) -> int:
        """Print the loaded page again after setting the text of the elements each selector of `texts` finds, in
        order (no reload, so MathJax does not typeset again); return the page count."""
        fill = (
            "([selector, values]) => document.querySelectorAll(selector).forEach((e, i) => e.textContent = values[i])"
        )
        for selector, values in texts.items():
            self.page.evaluate(fill, [selector, values])
        self.page.pdf(path=str(pdf_path), prefer_css_page_size=True, print_background=True, outline=True, tagged=True)
        return pdf_page_count(pdf_path)

    def close(self) -> None:
        """Close the browser and the Playwright driver behind it."""
        self.browser.close()
        self.playwright.stop()


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
