"""Handouts: the edition logic (fast, in `make test`) and the built handout itself (`make handout`, marker handout)."""

import functools
import http.server
import json
import os
import re
import subprocess
import threading
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from handout import (
    EDITIONS,
    Edition,
    combined_notebook,
    edition_notebook,
    find_chromium,
    index_page,
    lesson_title,
    stub_solution,
)
from notebook_rules import CJK, NOTEBOOK_DIR, ROOT

LESSONS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]-*.ipynb"))
HANDOUT = Path(os.environ.get("HANDOUT_DIR", ROOT / "handout"))


def lesson(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def solution_lines(notebook) -> list[str]:
    """Lines only a solution holds (not its signatures, nor lines other cells repeat): a student must not see them."""
    elsewhere = "\n".join(cell.source for cell in notebook.cells if "solution" not in tags(cell))
    lines = []
    for cell in notebook.cells:
        if "solution" in tags(cell):
            stub = stub_solution(cell.source)
            lines += [s for line in cell.source.splitlines() if (s := line.strip()) and s not in stub + elsewhere]
    return lines


# ---- the edition logic -------------------------------------------------------------------------------------------


def test_stub_keeps_signatures_and_names_but_no_answer():
    source = "def one_hot(labels, num_classes):\n    return torch.zeros(3)\n\nanswer: int = 42\nx = y = 1\n"
    stub = stub_solution(source)
    assert "def one_hot(labels, num_classes):" in stub
    assert "answer = ...  # your answer" in stub and "x = y = ..." in stub
    assert "torch.zeros" not in stub and "42" not in stub
    assert stub.startswith("# Exercise / 练习")
    compile(stub, "stub", "exec")


def test_stub_rejects_a_broken_solution_with_the_line():
    with pytest.raises(ValueError, match="fix line 1"):
        stub_solution("def f(:\n")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_edition_keeps_its_language_and_hides_solutions_from_students(path, edition):
    original = lesson(path)
    result = edition_notebook(original, edition)
    languages = {tag for cell in result.cells for tag in tags(cell) if tag.startswith("lang-")}
    assert languages == {"en": {"lang-en"}, "zh": {"lang-zh"}, "bilingual": {"lang-en", "lang-zh"}}[edition.language]
    assert sum(c.cell_type == "code" for c in result.cells) == sum(c.cell_type == "code" for c in original.cells)
    text = "\n".join(cell.source for cell in result.cells)
    hidden = solution_lines(original)
    assert hidden, "every lesson has an exercise"
    if edition.version == "student":
        assert not [line for line in hidden if line in text]
        assert text.count("# Exercise / 练习") == sum("solution" in tags(c) for c in original.cells)
    else:
        assert all(line in text for line in hidden)
    assert "```output:" not in text
    assert original == lesson(path), "the source notebook must not change"


def test_bad_edition_names_the_choices():
    with pytest.raises(ValueError, match="'en', 'zh', 'bilingual'"):
        edition_notebook(lesson(LESSONS[0]), Edition("fr", "student"))


def test_lesson_titles_per_language():
    notebook = lesson(NOTEBOOK_DIR / "03-scatter.ipynb")
    assert lesson_title(notebook, "en") == "01 · `scatter_`: writing values where an index points"
    assert lesson_title(notebook, "zh") == "01 · `scatter_`：按索引把值写到指定位置"
    assert lesson_title(notebook, "bilingual").count(" / ") == 1


def test_combined_notebook_starts_each_later_lesson_on_a_new_page():
    notebooks = [lesson(path) for path in LESSONS]
    combined = combined_notebook(notebooks)
    assert len(combined.cells) == sum(len(n.cells) for n in notebooks)
    starts = [i for i, cell in enumerate(combined.cells) if "lesson-start" in tags(cell)]
    assert len(starts) == 2 * (len(notebooks) - 1)


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
            assert f"pdf/{edition.name}/{path.stem}.pdf" in parser.links
        assert f"notebooks/{path.stem}.ipynb" in parser.links
    assert all(f"pdf/{e.name}.pdf" in parser.links for e in EDITIONS)
    assert "<code>scatter_</code>" in index_page([(p.stem, lesson(p)) for p in LESSONS[1:2]], with_pdf=False)


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


@handout
def test_student_editions_and_notebooks_contain_no_solution_code():
    for path in LESSONS:
        hidden = solution_lines(lesson(path))
        student_notebook = (HANDOUT / "notebooks" / path.name).read_text(encoding="utf-8")
        assert not [line for line in hidden if json.dumps(line)[1:-1] in student_notebook]
        for edition in EDITIONS:
            page = (HANDOUT / "html" / edition.name / f"{path.stem}.html").read_text(encoding="utf-8")
            plain = re.sub(r"<[^>]+>", "", page).replace("&quot;", '"').replace("&#39;", "'")
            plain = plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
            leaked = [line for line in hidden if line in plain]
            assert (leaked == []) == (edition.version == "student"), (edition.name, path.name, leaked[:3])


@handout
def test_index_links_resolve_to_built_files():
    parser = Links()
    parser.feed((HANDOUT / "index.html").read_text(encoding="utf-8"))
    pdfs = built_pdfs()
    expected = len(LESSONS) * (len(EDITIONS) * (2 if pdfs else 1) + 1) + (len(EDITIONS) if pdfs else 0)
    assert len(parser.links) == expected
    missing = [link for link in parser.links if not (HANDOUT / link).is_file()]
    assert missing == []


REMOTE = re.compile(
    r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?(?:https?:)?//|@import\s+["']?https?:""", re.I
)


@handout
def test_html_references_no_remote_url():
    pages = list(HANDOUT.glob("*.html")) + list((HANDOUT / "html").rglob("*.html"))
    assert len(pages) == 1 + len(EDITIONS) * (len(LESSONS) + 1)
    offenders = {page.name: REMOTE.findall(page.read_text(encoding="utf-8"))[:3] for page in pages}
    assert {name: hits for name, hits in offenders.items() if hits} == {}


def pdf_pages(path: Path) -> int:
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))


def pdf_text(path: Path, last_page: int = 0) -> str:
    pages = ["-l", str(last_page)] if last_page else []
    command = ["pdftotext", *pages, str(path), "-"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


@handout
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_pdfs_have_sensible_pages_and_the_titles_in_their_language(edition):
    if not built_pdfs():
        pytest.skip("no PDFs on this machine: Chromium was not found (make handout says how to get it)")
    total = 0
    for path in LESSONS:
        pdf = HANDOUT / "pdf" / edition.name / f"{path.stem}.pdf"
        pages = pdf_pages(pdf)
        assert 1 <= pages <= 40, (pdf.name, pages)
        total += pages
        # The title page; pdftotext breaks lines and puts spaces around code spans.
        text = re.sub(r"\s+", "", pdf_text(pdf, last_page=1))
        english = re.sub(r"\s+|`", "", lesson_title(lesson(path), "en"))
        assert (english in text) == (edition.language != "zh"), (edition.name, path.name, english)
        # pdftotext returns mixed Chinese/Latin headings in scrambled pieces: look for every Chinese character.
        chinese = set(re.findall(r"[\u4e00-\u9fff]", lesson_title(lesson(path), "zh")))
        assert len(chinese) >= 2 and (chinese <= set(text)) == (edition.language != "en"), (edition.name, path.name)
    combined = pdf_pages(HANDOUT / "pdf" / f"{edition.name}.pdf")
    assert total - len(LESSONS) <= combined <= total + len(LESSONS)


@handout
def test_a_rendered_pdf_page_is_not_blank(tmp_path):
    if not built_pdfs():
        pytest.skip("no PDFs on this machine: Chromium was not found (make handout says how to get it)")
    from PIL import Image

    pdf = HANDOUT / "pdf" / "bilingual-teacher" / "01-scatter.pdf"
    subprocess.run(["pdftoppm", "-png", "-r", "50", "-f", "1", "-l", "1", str(pdf), str(tmp_path / "page")], check=True)
    image = Image.open(next(tmp_path.glob("page*.png"))).convert("L")
    dark = sum(image.histogram()[:128])
    assert dark / (image.width * image.height) > 0.01


@pytest.fixture(scope="module")
def served_handout():
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(HANDOUT))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def page_with_maths() -> str:
    for path in LESSONS:
        if any(c.cell_type == "markdown" and "$" in c.source for c in lesson(path).cells):
            return path.stem
    pytest.fail("no lesson has maths to render")


@handout
def test_browser_renders_maths_and_the_cjk_font_offline(served_handout):
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium on this machine (make handout says how to get it)")
    from playwright.sync_api import sync_playwright

    from handout import CHROMIUM_ARGS

    url = f"{served_handout}/html/bilingual-teacher/{page_with_maths()}.html"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page()
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(url, wait_until="load")
        page.evaluate("() => new Promise(done => MathJax.Hub.Queue(done))")
        page.evaluate("() => document.fonts.ready.then(() => true)")
        rendered = page.evaluate("() => document.querySelectorAll('.MathJax, .MathJax_Display, .MathJax_SVG').length")
        failed = page.evaluate("() => document.querySelectorAll('.MathJax_Error, .merror').length")
        font = page.evaluate(
            """() => [...document.fonts].filter(f => f.family.replace(/"/g, '') === 'Course Sans SC')
                                      .map(f => f.status)"""
        )
        covers = page.evaluate("() => document.fonts.check('16px \"Course Sans SC\"', '张量拾级')")
        shot = HANDOUT / "screenshot-bilingual.png"
        page.screenshot(path=str(shot), full_page=False)
        browser.close()
    assert rendered > 0 and failed == 0
    assert font == ["loaded"] and covers
    assert all(u.startswith(served_handout) or u.startswith("data:") for u in requests), requests
    assert shot.stat().st_size > 10_000
