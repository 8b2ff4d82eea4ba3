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


# MathJax lays out each formula of a page in turn, and every layout of a whole book costs a few hundred milliseconds:
# typesetting a book's formulas took 8-10 s of its print. So each formula is typeset once per printer, on the first
# (short) lesson page that has it, and kept (its HTML, keyed by its script's type and TeX; the ids MathJax numbers
# pages by removed) with the styles and @font-face rules MathJax wrote; every later page, a book of the lessons
# printed before or the same lesson in another edition, inserts them before MathJax's scripts: the same HTML in the
# same column width and fonts. Whatever a page has that no page before it had, MathJax typesets as usual.
KEEP_MATHS = """() => [
  Object.fromEntries(Array.from(document.querySelectorAll('script[type^="math/tex"]'), script => [
    script.type + "\\n" + script.text,
    (script.previousElementSibling?.outerHTML ?? "").replace(/ id="MathJax-Element-\\d+-Frame"/g, ""),
  ]).filter(([, shown]) => /^<(span|div) class="MathJax(_Display)?"/.test(shown))),
  Array.from(document.querySelectorAll("style"), style => style.textContent)
    .filter(css => css.includes("MathJax") && !css.includes("Course Sans")),  // MathJax's, not the page's own
]"""
REUSE_MATHS = """([maths, styles]) => new Promise(done => MathJax.Hub.Queue(
  ["PreProcess", MathJax.Hub, document.body],
  () => {
    for (const css of styles) document.head.append(Object.assign(document.createElement("style"), {textContent: css}));
    let left = 0;
    for (const script of document.querySelectorAll('script[type^="math/tex"]')) {
      const shown = maths[script.type + "\\n" + script.text];
      if (shown === undefined) {
        left += 1;
        continue;
      }
      const preview = script.previousElementSibling;  // the TeX source, shown until a formula is typeset
      if (preview?.classList.contains("MathJax_Preview")) preview.remove();
      script.insertAdjacentHTML("beforebegin", shown);
      script.type = "math/reused";
    }
    // Typeset, even with nothing to do, costs MathJax 7 s on a book: only when a formula is left.
    if (left) MathJax.Hub.Queue(["Typeset", MathJax.Hub, document.body], done);
    else done();
  }))"""


class Printer:
    """One headless Chromium that prints pages to A4 PDFs after MathJax and the fonts have finished. The PDFs are
    tagged: Chromium makes the outline (bookmarks) from the tagged headings, and without tags writes none."""

    def __init__(self, chromium: str) -> None:
        from playwright.sync_api import sync_playwright  # only `make handout` installs it (the handout extra)

        self.playwright = sync_playwright().start()
        self.browser = self.playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        self.page = self.browser.new_page()
        self.maths: dict[str, str] = {}  # a formula's kind and TeX -> its typeset HTML (see KEEP_MATHS)
        self.maths_styles: set[str] = set()

    def print(self, html_path: Path, pdf_path: Path, tagged: bool = True) -> int:
        """Print one page; return its page count. The page typesets only the formulas that no page printed before
        typeset, and those are kept in turn. Untagged, the PDF has no bookmarks."""
        self.page.goto(html_path.resolve().as_uri() + "?maths=reuse", wait_until="load")
        if self.page.evaluate("() => window.MathJax !== undefined"):
            self.page.evaluate(REUSE_MATHS, [self.maths, sorted(self.maths_styles)])
            formulas, styles = self.page.evaluate(KEEP_MATHS)
            self.maths.update(formulas)
            self.maths_styles.update(styles)
        self.page.evaluate("() => document.fonts.ready.then(() => true)")
        pdf_path.parent.mkdir(parents=True, exist_ok=True)
        self.page.pdf(
            path=str(pdf_path), prefer_css_page_size=True, print_background=True, outline=tagged, tagged=tagged
        )
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


def part_starts(texts: list[str], parts: list[str]) -> list[int]:
    """The page each part of a printed book starts on, from its pages' text (book_index.page_texts): the first page
    whose running header (`parts`) names it (pdftotext reads the header as the page's first line in -raw order)."""
    heads = [re.sub(r"\s+", "", " ".join(page.strip().splitlines()[:2])) for page in texts]
    starts = []
    for part in parts:
        key = re.sub(r"\s+", "", part)[:16]
        after = starts[-1] if starts else 3
        starts.append(next((n for n, head in enumerate(heads, start=1) if n >= after and key in head), after))
    return starts
