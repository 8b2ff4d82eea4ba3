"""Handouts: the edition logic (fast, in `make test`) and the built handout itself (`make handout`, marker handout)."""

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from tools.course import CJK, NOTEBOOK_DIR, ROOT, lesson_files
from tools.handout import (
    EDITIONS,
    Edition,
    bundle_leaks,
    edition_notebook,
    find_chromium,
    index_page,
    join_chinese_lines,
    lesson_title,
    page_css,
    reference_answers,
    student_bundle,
)
from tools.lesson_copies import answer_lines

LESSONS = lesson_files()
HANDOUT = Path(os.environ.get("HANDOUT_DIR", ROOT / "handout"))


def lesson(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def solution_lines(notebook) -> list[str]:
    """Lines only a solution holds (not lines other cells repeat): a student must not see them."""
    elsewhere = "\n".join(cell.source for cell in notebook.cells if "solution" not in tags(cell))
    elsewhere += json.dumps([c.get("outputs", []) for c in notebook.cells], ensure_ascii=False)  # printed source
    return [
        line.strip()
        for cell in notebook.cells
        if "solution" in tags(cell)
        for line in answer_lines(cell.source)
        if line.strip() not in elsewhere and len(line.strip()) > 8
    ]


# ---- the edition logic -------------------------------------------------------------------------------------------


# 78 cases, 11 s: run with the checks of the built handout (`make handout`), not in `make test`.
@pytest.mark.handout
@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_edition_keeps_its_language_and_hides_solutions_from_students(path, edition):
    original = lesson(path)
    result = edition_notebook(original, edition, path.stem[:2])
    languages = {tag for cell in result.cells for tag in tags(cell) if tag.startswith("lang-")}
    assert languages == {"en": {"lang-en"}, "zh": {"lang-zh"}, "bilingual": {"lang-en", "lang-zh"}}[edition.language]
    assert sum(c.cell_type == "code" for c in result.cells) == sum(c.cell_type == "code" for c in original.cells)
    text = "\n".join(cell.source for cell in result.cells)
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))  # not the prompts
    hidden = solution_lines(original)
    assert hidden, "every lesson has an exercise"
    solutions = sum("solution" in tags(c) for c in original.cells)
    if edition.version == "student":
        assert not [line for line in hidden if line in code]
        assert sum("answer-area" in tags(c) for c in result.cells) == solutions
    else:
        assert all(line in text for line in hidden)
        assert sum("teacher-solution" in tags(c) for c in result.cells) == solutions
    assert "```output:" not in text
    assert all(f"lesson-{path.stem[:2]}" in tags(c) for c in result.cells), "named pages need every cell tagged"
    assert original == lesson(path), "the source notebook must not change"


def test_figures_are_numbered_in_the_editions_language():
    path = next(p for p in LESSONS if any("caption" in tags(c) for c in lesson(p).cells))
    number = int(path.stem[:2])
    english = edition_notebook(lesson(path), Edition("en", "teacher"), path.stem[:2])
    chinese = edition_notebook(lesson(path), Edition("zh", "teacher"), path.stem[:2])
    captions = [c.source for c in english.cells if "caption" in tags(c)]
    assert captions[0].startswith(f"**Figure {number}.1**: ") and captions[-1].startswith(
        f"**Figure {number}.{len(captions)}**"
    )
    assert [c.source for c in chinese.cells if "caption" in tags(c)][0].startswith(f"**图 {number}.1**：")


def test_chinese_source_lines_are_joined_without_stray_spaces():
    assert join_chinese_lines("张量的形状，\n也就是它的维度。\nPyTorch 里\n`view` 共享内存") == (
        "张量的形状，也就是它的维度。PyTorch 里 `view` 共享内存"
    )
    assert join_chinese_lines("列表：\n- 第一项\n- 第二项") == "列表：\n- 第一项\n- 第二项", "lists stay lists"
    assert join_chinese_lines("代码：\n```python\nx = 1\ny = 2\n```") == "代码：\n```python\nx = 1\ny = 2\n```"


def test_bad_edition_names_the_choices():
    with pytest.raises(ValueError, match="'en', 'zh', 'bilingual'"):
        edition_notebook(lesson(LESSONS[0]), Edition("fr", "student"))


def test_lesson_titles_per_language():
    notebook = lesson(NOTEBOOK_DIR / "03-scatter.ipynb")
    assert lesson_title(notebook, "en").startswith("03 · `scatter_`")
    assert lesson_title(notebook, "zh").startswith("03 · `scatter_`")
    assert CJK.search(lesson_title(notebook, "zh")) and not CJK.search(lesson_title(notebook, "en"))
    assert lesson_title(notebook, "bilingual").count(" / ") == 1


def test_each_lesson_gets_a_named_page_with_its_title_and_the_edition_label():
    css = page_css([("03", "03 · `scatter_`")], Edition("zh", "teacher"))
    assert ".jp-Cell.celltag_lesson-03, .jp-Cell:has(.celltag_lesson-03) { page: lesson-03; }" in css
    assert '@page lesson-03 { @top-left { content: "03 · scatter_"; } }' in css
    assert '@top-right { content: "教师版（含答案）"; }' in css


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
    assert "<code>scatter_</code>" in index_page([(p.stem, lesson(p)) for p in LESSONS[3:4]], with_pdf=False)


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
        student = nbformat.read(HANDOUT / "notebooks" / path.name, as_version=4)
        code = "\n".join(
            line
            for c in student.cells
            if c.cell_type == "code"
            for line in c.source.splitlines()
            if not line.lstrip().startswith("#")
        )  # the exercise prompts (comments) may name what to return
        assert not [line for line in hidden if line in code]
        for edition in EDITIONS:
            page = (HANDOUT / "html" / edition.name / f"{path.stem}.html").read_text(encoding="utf-8")
            plain = re.sub(r"<[^>]+>", "", page).replace("&quot;", '"').replace("&#39;", "'")
            plain = plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
            # the exercise prompts (comment lines of the stub, wrapped over several) may name what to return
            plain = "\n".join(line for line in plain.splitlines() if not line.lstrip().startswith("#"))
            leaked = [line for line in hidden if line in plain]
            assert (leaked == []) == (edition.version == "student"), (edition.name, path.name, leaked[:3])


@handout
def test_the_student_bundle_holds_no_reference_answer():
    # every answers table's reference and right answers, and every solution cell, line by line (tools/handout.py)
    assert (HANDOUT / "notebooks" / "companion").is_dir()
    assert bundle_leaks(HANDOUT / "notebooks") == {}


def student_bundle_copy(tmp_path: Path) -> Path:
    """A copy of the built student bundle, or, where none is built (make test), the bundle built here (notebooks and
    companion only: a second)."""
    if (HANDOUT / "notebooks" / "companion").is_dir():
        shutil.copytree(HANDOUT / "notebooks", tmp_path / "notebooks")
    else:
        student_bundle(tmp_path, [(path.stem, lesson(path)) for path in LESSONS])
    return tmp_path / "notebooks"


def test_a_reference_answer_planted_in_a_copy_of_the_student_bundle_is_found(tmp_path):
    folder = student_bundle_copy(tmp_path)
    assert bundle_leaks(folder) == {}
    answers = reference_answers()
    checker = folder / "companion" / "checks" / "tensors.py"  # as the handout once shipped them: _reference_* beside
    lines = answers["check_center_rows: _reference_center_rows"]
    checker.write_text(checker.read_text(encoding="utf-8") + "".join(f"\n    {line}" for line in lines))
    found = bundle_leaks(folder)
    assert "check_center_rows: _reference_center_rows" in found, found
    assert all(files == ["companion/checks/tensors.py"] for files in found.values()), found
    checker.write_text(checker.read_text(encoding="utf-8").removesuffix("".join(f"\n    {line}" for line in lines)))
    assert bundle_leaks(folder) == {}
    path = folder / "10-checkpoints.ipynb"  # a teacher's notebook copied in by mistake: its solution cells are whole
    teacher = json.loads((NOTEBOOK_DIR / path.name).read_text(encoding="utf-8"))
    path.write_text(json.dumps(teacher), encoding="utf-8")
    found = bundle_leaks(folder)
    assert found and all(files == [path.name] for files in found.values()), found
    assert any(name.startswith("10-checkpoints cell") for name in found), "the lesson's own solution cells"


@handout
def test_every_link_in_every_page_resolves():
    pages = [HANDOUT / "index.html", HANDOUT / "glossary.html", *(HANDOUT / "html").rglob("*.html")]
    broken = []
    for page in pages:
        parser = Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for link in parser.links:
            target = link.split("#")[0]
            if target and not link.startswith(("data:", "mailto:")) and not (page.parent / target).is_file():
                broken.append((page.relative_to(HANDOUT).as_posix(), link))
    assert broken == []
    index = Links()
    index.feed((HANDOUT / "index.html").read_text(encoding="utf-8"))
    assert {f"html/{e.name}/{p.stem}.html" for e in EDITIONS for p in LESSONS} <= set(index.links)


REMOTE = re.compile(
    r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?(?:https?:)?//|@import\s+["']?https?:""", re.I
)


@handout
def test_html_references_no_remote_url():
    pages = list(HANDOUT.glob("*.html")) + list((HANDOUT / "html").rglob("*.html"))
    assert len(pages) == 2 + len(EDITIONS) * (len(LESSONS) + 1)
    offenders = {page.name: REMOTE.findall(page.read_text(encoding="utf-8"))[:3] for page in pages}
    assert {name: hits for name, hits in offenders.items() if hits} == {}


@handout
def test_the_student_notebooks_ship_companion():
    folder = HANDOUT / "notebooks"
    assert (folder / "companion" / "__init__.py").is_file() and (folder / "companion" / "checks").is_dir()
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert "pip install" in readme and CJK.search(readme)


def pdf_pages(path: Path) -> int:
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))


@functools.cache
@functools.cache
def pdf_page_texts(path: Path) -> list[str]:
    """The text layer of each page in the order it was drawn (a wrapped title stays in reading order; the running
    header comes first, then the footer); pdftotext's form feeds split the pages."""
    text = subprocess.run(["pdftotext", "-raw", str(path), "-"], capture_output=True, text=True, check=True).stdout
    return text.split("\f")[:-1]


def all_pdfs() -> list[Path]:
    return sorted((HANDOUT / "pdf").rglob("*.pdf"))


def needs_pdfs():
    if not built_pdfs():
        pytest.skip("no PDFs on this machine: Chromium was not found (make handout says how to get it)")


EDITION_MARK = {
    "en": {"student": "Student edition", "teacher": "Teacher edition"},
    "zh": {"student": "学生版", "teacher": "教师版"},
}


@handout
def test_every_pdf_page_is_numbered_and_names_its_edition():
    needs_pdfs()
    for pdf in all_pdfs():
        edition = next(e for e in EDITIONS if e.name in pdf.as_posix())
        mark = EDITION_MARK["zh" if edition.language == "zh" else "en"][edition.version]
        pages = pdf_page_texts(pdf)
        book = pdf.parent.name == "pdf"
        for number, text in enumerate(pages, start=1):
            if book and number <= 2:
                continue  # the cover and the contents carry no page furniture
            squeezed = re.sub(r"\s+", "", text)
            assert f"{number}/{len(pages)}" in squeezed, (pdf.name, number)
            assert re.sub(r"\s+", "", mark) in squeezed, (pdf.name, number, mark)


def book_lessons(edition) -> list[tuple[Path, int]]:
    """Each lesson of a combined PDF with the page its table of contents gives."""
    pages = pdf_page_texts(HANDOUT / "pdf" / f"{edition.name}.pdf")
    numbers = [int(n) for n in re.findall(r"(\d+)\s*$", pages[1], re.M)][: len(LESSONS)]
    return list(zip(LESSONS, numbers, strict=True))


@handout
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_every_lesson_of_a_book_starts_at_the_top_of_the_page_its_contents_give(edition):
    needs_pdfs()
    pages = pdf_page_texts(HANDOUT / "pdf" / f"{edition.name}.pdf")
    for path, number in book_lessons(edition):
        lines = [re.sub(r"\s+|`", "", line) for line in pages[number - 1].splitlines() if line.strip()]
        # drawn first: the running header (a long bilingual one wraps), then the footer "n / N"; then the page
        footer = next(i for i, line in enumerate(lines) if re.fullmatch(r"\d+/\d+", line))
        notebook = lesson(path)
        if edition.language == "zh":
            title = notebook.cells[1].source.splitlines()[0].strip("*")
        else:
            title = notebook.cells[0].source.splitlines()[0].lstrip("# ")
        title = re.sub(r"\s+|`", "", title)[:12]
        assert lines[footer + 1].startswith(title), (edition.name, path.name, number, lines[: footer + 2])


def blank_fraction(png: Path) -> float:
    """The share of the page's text area (inside the margins) left empty below its last line: a page that ends
    early (the gaps between lines of a full page are not waste)."""
    from PIL import Image

    image = Image.open(png).convert("L")
    top, bottom = int(image.height * 0.07), int(image.height * 0.93)
    inked = [y for y in range(top, bottom) if image.crop((0, y, image.width, y + 1)).getextrema()[0] <= 235]
    last = max(inked, default=top)
    return (bottom - last) / (bottom - top)


@handout
@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.name)
def test_no_page_but_a_lessons_last_is_mostly_empty(edition, tmp_path):
    needs_pdfs()
    book = HANDOUT / "pdf" / f"{edition.name}.pdf"
    subprocess.run(["pdftoppm", "-png", "-r", "12", "-gray", str(book), str(tmp_path / "p")], check=True)
    images = sorted(tmp_path.glob("p-*.png"), key=lambda p: int(p.stem.split("-")[1]))
    texts = pdf_page_texts(book)
    # Each part (lesson, glossary, answer key) starts a page: the page before a start may end a part early.
    starts = [number for _, number in book_lessons(edition)]

    def part(text: str) -> str | None:  # the part a page's running header names, if it is the glossary or key
        found = re.search(r"Glossary|术语表|Answer key|答案与讲解", (text.strip().splitlines() or [""])[0])
        return found and found.group(0)

    starts += [i for i, t in enumerate(texts, start=1) if i > 2 and part(t) and part(t) != part(texts[i - 2])]
    exempt = {1, 2, len(images)} | {start - 1 for start in starts}
    fractions = {i: blank_fraction(image) for i, image in enumerate(images, start=1)}
    wasted = {i: round(f, 2) for i, f in fractions.items() if f > 0.6 and i not in exempt}
    report = HANDOUT / "blank-pages.json"
    record = json.loads(report.read_text()) if report.exists() else {}
    ordered = sorted(fractions.values())
    record[edition.name] = {
        "pages": len(images),
        "median_blank": round(ordered[len(ordered) // 2], 2),
        "over_30": sum(f > 0.3 for f in ordered),
        "over_60_not_last": len(wasted),
    }
    report.write_text(json.dumps(record, indent=1))
    assert wasted == {}, wasted


TORCH_FRAME = re.compile(r"torch/[\w/]+\.py|site-packages")
CHINESE_SPACE = re.compile(r"[\u4e00-\u9fff] +[\u4e00-\u9fff]|[，。；：！？、（） ] +\S")


@handout
def test_no_torch_traceback_in_any_pdf():
    needs_pdfs()
    for pdf in all_pdfs():
        text = "\n".join(pdf_page_texts(pdf))
        assert not TORCH_FRAME.search(text), (pdf.name, TORCH_FRAME.search(text).group(0))


@handout
def test_no_stray_space_in_chinese_text():
    for edition in EDITIONS:
        if edition.language == "en":
            continue
        for path in LESSONS:
            page = HANDOUT / "html" / edition.name / f"{path.stem}.html"
            cells = page.read_text(encoding="utf-8").split("<main>", 1)[1].split('<div class="jp-Cell')
            chinese = "".join(cell for cell in cells if "celltag_lang-zh" in cell)  # English may quote a "： "
            # text nodes joined as the browser shows them: no space is added between an element and its neighbour
            prose = "".join(re.findall(r">([^<>]+)<", chinese))
            stray = [m.group(0) for m in re.finditer(r"[\u4e00-\u9fff] [\u4e00-\u9fff]|[，。；：！？、] \S", prose)]
            assert stray == [], (edition.name, path.name, stray[:5])


@handout
def test_a_rendered_pdf_page_is_not_blank_and_is_kept_for_a_look(tmp_path):
    needs_pdfs()
    from PIL import Image

    pdf = HANDOUT / "pdf" / "bilingual-teacher" / "03-scatter.pdf"
    subprocess.run(
        ["pdftoppm", "-png", "-r", "80", "-f", "1", "-l", "1", str(pdf), str(HANDOUT / "screenshot-pdf")], check=True
    )
    shot = next(HANDOUT.glob("screenshot-pdf*.png"))
    image = Image.open(shot).convert("L")
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


def pages_with_maths() -> list[str]:
    stems = [p.stem for p in LESSONS if any(c.cell_type == "markdown" and "$" in c.source for c in lesson(p).cells)]
    assert stems, "no lesson has maths to render"
    return stems


@handout
def test_browser_renders_all_maths_the_cjk_font_and_a_phone_sized_index(served_handout):
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium on this machine (make handout says how to get it)")
    from playwright.sync_api import sync_playwright

    from tools.handout import CHROMIUM_ARGS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page()
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        for stem in pages_with_maths():
            for edition in ("bilingual-teacher", "zh-student"):
                page.goto(f"{served_handout}/html/{edition}/{stem}.html", wait_until="load")
                page.evaluate("() => new Promise(done => MathJax.Hub.Queue(done))")
                rendered = page.evaluate("() => document.querySelectorAll('.MathJax, .MathJax_Display').length")
                failed = page.evaluate("() => document.querySelectorAll('.MathJax_Error, .merror').length")
                raw = page.evaluate(
                    """() => [...document.querySelectorAll('.jp-MarkdownCell')]
                           .map(c => c.innerText).join(' ').match(/\\$[^$\\s][^$]*\\$/g)"""
                )
                assert rendered > 0 and failed == 0 and raw is None, (stem, edition, rendered, failed, raw)
        page.goto(f"{served_handout}/html/bilingual-teacher/09-adam.html", wait_until="load")
        page.evaluate("() => new Promise(done => MathJax.Hub.Queue(done))")
        page.evaluate("() => document.fonts.ready.then(() => true)")
        # the display with the bias-corrected moments: hats over m and v, and v-hat under a root
        formula = page.locator(".MathJax_Display", has=page.locator(".MathJax")).filter(has_text=re.compile("√")).first
        formula.scroll_into_view_if_needed()
        formula.screenshot(path=str(HANDOUT / "screenshot-adam-formula.png"))
        font = page.evaluate(
            """() => [...document.fonts].filter(f => f.family.replace(/"/g, '') === 'Course Sans SC')
                                      .map(f => f.status)"""
        )
        covers = page.evaluate("""() => document.fonts.check('16px "Course Sans SC"', '张量拾级')""")
        page.screenshot(path=str(HANDOUT / "screenshot-bilingual.png"), full_page=False)
        phone = browser.new_page(viewport={"width": 400, "height": 800})
        phone.goto(f"{served_handout}/index.html", wait_until="load")
        overflow = phone.evaluate("() => document.documentElement.scrollWidth")
        phone.screenshot(path=str(HANDOUT / "screenshot-index-400px.png"), full_page=False)
        lesson_page = browser.new_page(viewport={"width": 1280, "height": 800})
        lesson_page.goto(f"{served_handout}/html/en-student/03-scatter.html", wait_until="load")
        measure = lesson_page.evaluate(
            """() => { const p = document.querySelector('.jp-MarkdownCell p');
                       return p.getBoundingClientRect().width / parseFloat(getComputedStyle(p).fontSize); }"""
        )
        # Chromium shrinks a whole printout to fit its widest line: on an A4 column every book must fit as it is.
        printed = browser.new_page(viewport={"width": 720, "height": 1000})
        printed.emulate_media(media="print")
        too_wide = {}
        for edition in EDITIONS:
            printed.goto(f"{served_handout}/html/{edition.name}.html", wait_until="load")
            width = printed.evaluate("() => document.documentElement.scrollWidth")
            if width > 720:
                too_wide[edition.name] = width
        browser.close()
    assert too_wide == {}, f"wider than the page, so printed smaller: {too_wide}"
    assert font == ["loaded"] and covers
    assert overflow <= 400, "the index is wider than a phone"
    assert measure < 50, f"a prose line is {measure:.0f} em wide: too long to read"
    remote = [u for u in requests if not u.startswith((served_handout, "data:", "blob:", "about:"))]
    assert remote == [], remote
