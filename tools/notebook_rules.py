"""The course's notebook conventions as rules: each takes a notebook (nbformat JSON as a dict), returns problems.

The README's "Notebook conventions" section explains each rule; tests/test_notebooks.py applies them to every
lesson, and tests/test_notebook_rules.py breaks a good notebook once per rule to prove each rule can fail.
"""

import json
import re
from itertools import pairwise
from pathlib import Path

from companion.exercises import PASS_MARK, PASS_MARKS
from tools.course import ANSI, CHECK_CALL, CJK, CJK_RANGES, NOTEBOOK_DIR, source, tags

GLOSSARY = NOTEBOOK_DIR / "GLOSSARY.md"

ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]{4,}|\b0x[0-9a-fA-F]{8,}\b")
MACHINE_PATH = re.compile(r"/tmp/|/home/|/root/|/Users/|/private/var/|site-packages|[A-Za-z]:\\Users")
# What a leaked warning looks like: "file.py:12: UserWarning: ..."
WARNING_LINE = re.compile(r":\d+: \w*Warning:")
UNCHECKED_TAGS = {"nbval-ignore-output", "nbval-skip"}
UNCHECKED_REASON = "# Not checked by nbval:"
ENGLISH_TITLE = re.compile(r"^# (\d\d) · \S")
CHINESE_TITLE = re.compile(r"^\*\*第 (\d\d) 课 · [^*\n]+\*\*")
MAX_ERROR_LINES = 8
# `Adam??` pointers send the learner away from the page: print the source with companion.course.show_source instead.
SOURCE_POINTER = re.compile(r"`[\w.]+\?\?`")
# *...* or _..._ around Chinese: browsers fake a slant for CJK, which reads badly; use **bold** or 「」 instead.
CHINESE_ITALIC = re.compile(
    r"(?<![*A-Za-z0-9_])[*_](?![*\s])[^*_\n]*[\u3400-\u9fff][^*_\n]*(?<![*\s])[*_](?![*A-Za-z0-9_])"
)
OUTPUT_FENCE = re.compile(r"^```output:([\w-]+)\n(.*?)^```", re.S | re.M)


def output_text(output: dict) -> str:
    """The text a learner sees for one output: stream text, or text/plain of a result or display."""
    if output.get("output_type") == "stream":
        text = output.get("text", "")
    elif output.get("output_type") == "error":
        return f"{output.get('ename')}: {output.get('evalue')}"
    else:
        text = output.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else text


def cell_text(cell: dict) -> str:
    """All text outputs of a code cell, joined in order."""
    return "".join(output_text(o) for o in cell.get("outputs", []))


def code_cells(nb: dict) -> list[dict]:
    """The non-empty code cells, in order."""
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def prose(text: str) -> str:
    """Markdown without code: fenced blocks, inline code, maths and link targets removed."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " ", text, flags=re.S)
    return re.sub(r"\]\([^)]*\)", "]", text)


def markdown_pairs(nb: dict) -> list[tuple[dict, dict]]:
    """(English, Chinese) markdown cells, each English cell with the cell right after it."""
    cells = nb["cells"]
    return [
        (cell, cells[i + 1])
        for i, cell in enumerate(cells[:-1])
        if cell["cell_type"] == "markdown" and "lang-en" in tags(cell)
    ]


def rule_kernelspec(nb: dict) -> list[str]:
    name = nb.get("metadata", {}).get("kernelspec", {}).get("name")
    return [] if name == "python3" else [f"kernelspec is {name!r}, must be 'python3'"]


def rule_markdown_tagged_and_paired(nb: dict) -> list[str]:
    problems = []
    cells = nb["cells"]
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        langs = tags(cell) & {"lang-en", "lang-zh"}
        if len(langs) != 1:
            problems.append(f"cell {i}: a markdown cell needs exactly one of the tags lang-en, lang-zh")
        elif "lang-en" in langs:
            after = cells[i + 1] if i + 1 < len(cells) else None
            if after is None or after["cell_type"] != "markdown" or "lang-zh" not in tags(after):
                problems.append(f"cell {i}: English cell not followed by its lang-zh twin")
        elif i == 0 or "lang-en" not in tags(cells[i - 1]):
            problems.append(f"cell {i}: Chinese cell without the English cell right before it")
    return problems


def rule_language_matches_tag(nb: dict) -> list[str]:
    problems = []
    for i, cell in enumerate(nb["cells"]):
        text = source(cell)
        if "lang-en" in tags(cell) and CJK.search(text):
            problems.append(f"cell {i}: lang-en cell contains Chinese: {CJK.search(text).group(0)!r}")
        if "lang-zh" in tags(cell) and not CJK.search(prose(text)):
            problems.append(f"cell {i}: lang-zh cell contains no Chinese prose")
    return problems


def rule_title_first(nb: dict) -> list[str]:
    """One level-1 heading per lesson (the English title), so the Lab's table of contents nests sections under it;
    the Chinese title is a bold line that one-language copies turn into the heading."""
    cells = nb["cells"]
    if len(cells) < 2:
        return ["the notebook must open with its title, English then Chinese"]
    english = ENGLISH_TITLE.match(source(cells[0]))
    chinese = CHINESE_TITLE.match(source(cells[1]))
    if not english or not chinese:
        return ["the notebook must open with '# NN · Title' (English) then '**第 NN 课 · 标题**' (Chinese)"]
    if english.group(1) != chinese.group(1):
        return [f"the English title says lesson {english.group(1)}, the Chinese one {chinese.group(1)}"]
    if any(re.search(r"^# ", source(c), re.M) for c in cells[1:] if c["cell_type"] == "markdown"):
        return ["only the English title is a level-1 heading; sections start at '## '"]
    return []


def rule_setup_cell_first(nb: dict) -> list[str]:
    code = code_cells(nb)
    if not code or "setup_notebook(" not in source(code[0]):
        return ["the first code cell must call companion.course.setup_notebook()"]
    if any("setup_notebook(" in source(c) for c in code[1:]):
        return ["setup_notebook() belongs in the first code cell only"]
    return []


def rule_executed_in_order(nb: dict) -> list[str]:
    problems = []
    code = code_cells(nb)
    for i, cell in enumerate(code, start=1):
        if not source(cell).strip():
            problems.append(f"code cell {i} is empty: delete it")
        if cell.get("execution_count") != i:
            problems.append(
                f"code cell {i} has execution_count {cell.get('execution_count')}, expected {i}: "
                "run `make execute` (top to bottom, fresh kernel)"
            )
    if not code:
        problems.append("the notebook has no code cells")
    return problems


def rule_clean_outputs(nb: dict) -> list[str]:
    problems = []
    for i, cell in enumerate(code_cells(nb), start=1):
        raises = "raises-exception" in tags(cell)
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if raises and not errors:
            problems.append(f"code cell {i} is tagged raises-exception but stored no error")
        if errors and not raises:
            problems.append(f"code cell {i} stored an error but is not tagged raises-exception")
        for output in cell.get("outputs", []):
            text = output_text(output) + ANSI.sub("", "".join(output.get("traceback", [])))
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                problems.append(f"code cell {i} wrote to stderr: {text[:80]!r}")
            if WARNING_LINE.search(text):
                problems.append(f"code cell {i} stored a warning: {text[:80]!r}")
            if ADDRESS.search(text):
                problems.append(f"code cell {i} stored a memory address: {ADDRESS.search(text).group(0)}")
            if MACHINE_PATH.search(text):
                problems.append(f"code cell {i} stored a machine path: {MACHINE_PATH.search(text).group(0)}")
    return problems


def rule_unchecked_cells_say_why(nb: dict) -> list[str]:
    problems = []
    for i, cell in enumerate(code_cells(nb), start=1):
        text = source(cell)
        if "NBVAL_" in text:
            problems.append(f"code cell {i}: use cell tags, not NBVAL_ comment markers")
        if tags(cell) & UNCHECKED_TAGS and not text.startswith(UNCHECKED_REASON):
            problems.append(f"code cell {i} is not checked by nbval; its first line must be '{UNCHECKED_REASON} <why>'")
    return problems


def quote_problem(stated: str, stored: str) -> str | None:
    """Why a quoted output does not fit the stored one: its lines must appear there in order (`...` skips lines),
    and a quote of a multi-line output quotes only the lines the prose discusses, never all of them."""
    stored_lines = [line.rstrip() for line in stored.rstrip().splitlines()]
    quoted = [line.rstrip() for line in stated.rstrip().splitlines() if line.strip() not in ("", "...", "…")]
    position = 0
    for line in quoted:
        while position < len(stored_lines) and stored_lines[position] != line:
            position += 1
        if position == len(stored_lines):
            return f"the quoted line {line!r} is not in the stored output (or not in that order)"
        position += 1
    if len(stored_lines) > 1 and len(quoted) >= len(stored_lines):
        return "it repeats the whole output printed just above; quote only the lines the prose discusses"
    return None


def rule_documented_outputs(nb: dict) -> list[str]:
    problems = []
    documented = {}
    for tag in (t for c in code_cells(nb) for t in tags(c) if t.startswith("output:")):
        documented.setdefault(tag.removeprefix("output:"), []).append(tag)
    for name, found in documented.items():
        if len(found) > 1:
            problems.append(f"output:{name} tags {len(found)} code cells; a name tags one cell")
    stored = {
        t.removeprefix("output:"): cell_text(c) for c in code_cells(nb) for t in tags(c) if t.startswith("output:")
    }
    # A lesson stores the English edition's outputs, its Chinese edition (notebooks/zh/) the Chinese ones: each
    # language's quotes are compared with the outputs of its own edition (tools/zh_code.py checks the Chinese).
    language = nb.get("metadata", {}).get("course_language", "en")
    seen = {"lang-zh": set()} if language == "zh" else {"lang-en": set(), "lang-zh": set()}
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        for name, stated in OUTPUT_FENCE.findall(source(cell)):
            for lang in seen.keys() & tags(cell):
                seen[lang].add(name)
            if name not in stored:
                problems.append(f"cell {i} states output:{name}, but no code cell is tagged output:{name}")
            elif f"lang-{'zh' if language == 'zh' else 'en'}" not in tags(cell):
                continue
            elif problem := quote_problem(stated, stored[name]):
                problems.append(f"cell {i}: the quoted output:{name}: {problem}")
    for name in stored:
        for lang, names in seen.items():
            if name not in names:
                problems.append(f"output:{name} is tagged but no {lang} cell quotes it")
    return problems


def rule_short_errors(nb: dict) -> list[str]:
    problems = []
    for i, cell in enumerate(code_cells(nb), start=1):
        for output in cell.get("outputs", []):
            if output.get("output_type") != "error":
                continue
            lines = ANSI.sub("", "\n".join(output.get("traceback", []))).strip().splitlines()
            if len(lines) > MAX_ERROR_LINES:
                problems.append(
                    f"code cell {i} stored a {len(lines)}-line error (at most {MAX_ERROR_LINES}): "
                    "setup_notebook() sets %xmode Minimal; re-run `make execute`"
                )
    return problems


def rule_exercises_have_bilingual_prompts(nb: dict) -> list[str]:
    """A solution cell's metadata says what to write, in both languages: the learner's stub shows it."""
    problems = []
    for i, cell in enumerate(code_cells(nb), start=1):
        if "solution" not in tags(cell):
            continue
        prompt = cell.get("metadata", {}).get("exercise", {})
        if not (prompt.get("en") and prompt.get("zh") and CJK.search(prompt["zh"]) and not CJK.search(prompt["en"])):
            problems.append(f"solution code cell {i} needs metadata.exercise = {{'en': ..., 'zh': ...}}: what to write")
    return problems


WORKSHEET_QUESTIONS = 3  # per lesson from 01 on: part A of the student's worksheet (tools/handout/worksheet.py)
PREDICT_LINES = 12  # an output to predict on paper is short


def rule_worksheet_questions(nb: dict) -> list[str]:
    """Lessons 01-12 mark at least three cells whose output the worksheet asks the learner to predict: metadata
    predict = {'en': ..., 'zh': ...}, a question that says what the code needs from earlier cells; each such cell
    prints a short text every run gives alike (no figure alone, not an exercise)."""
    problems, marked = [], 0
    for i, cell in enumerate(code_cells(nb), start=1):
        question = cell.get("metadata", {}).get("predict")
        if question is None:
            continue
        marked += 1
        if not (isinstance(question, dict) and question.get("en") and CJK.search(question.get("zh", ""))):
            problems.append(f"code cell {i}: metadata.predict must be {{'en': ..., 'zh': ...}}, the question in each")
        elif CJK.search(question["en"]):
            problems.append(f"code cell {i}: the English predict question holds Chinese")
        if tags(cell) & {"solution", "nbval-ignore-output"} or CHECK_CALL.search(source(cell)):
            problems.append(f"code cell {i}: an exercise, its self-check or an unchecked output is not a question")
        printed = cell_text(cell).strip().splitlines()
        if not printed or len(printed) > PREDICT_LINES:
            problems.append(f"code cell {i}: a question's cell prints 1 to {PREDICT_LINES} lines of text")
    title = ENGLISH_TITLE.match(source(nb["cells"][0])) if nb["cells"] else None
    if title and title.group(1) != "00" and marked < WORKSHEET_QUESTIONS:
        problems.append(f"{marked} cells carry a worksheet question (metadata.predict); mark {WORKSHEET_QUESTIONS}")
    return problems


def rule_figures_captioned(nb: dict) -> list[str]:
    """Every figure has a one-line caption in both languages right under it (cells tagged caption)."""
    problems = []
    cells = nb["cells"]
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        if not any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            continue
        after = cells[i + 1 : i + 3]
        if len(after) < 2 or not (
            {"caption", "lang-en"} <= tags(after[0]) and {"caption", "lang-zh"} <= tags(after[1])
        ):
            problems.append(f"cell {i} draws a figure: follow it with a caption pair (tags caption + lang-en/lang-zh)")
        elif any(len(source(c).strip().splitlines()) != 1 for c in after):
            problems.append(f"cell {i}: a figure caption is one line")
    return problems


def rule_no_source_pointers(nb: dict) -> list[str]:
    return [
        f"cell {i}: {SOURCE_POINTER.search(source(c)).group(0)} sends the learner away; print it with show_source()"
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "markdown" and SOURCE_POINTER.search(source(c))
    ]


def rule_no_chinese_italics(nb: dict) -> list[str]:
    return [
        f"cell {i}: italic Chinese {CHINESE_ITALIC.search(prose_keep_emphasis(source(c))).group(0)!r}: use bold"
        for i, c in enumerate(nb["cells"])
        if "lang-zh" in tags(c) and CHINESE_ITALIC.search(prose_keep_emphasis(source(c)))
    ]


# Chinese characters and full-width punctuation (including “”‘’, …… and ——), which a space beside shows as a gap.
WIDE = re.compile(f"[\u00b7\u2014\u2018-\u201f\u2026{CJK_RANGES}]")
# A line that starts a block (list item, quote, heading, table row, HTML, fence, maths, setext underline): the line
# break before it ends the paragraph instead of joining two lines of it.
BLOCK_START = re.compile(r"\s*(?:[-*+]\s|\d+[.)]\s|>|#|\||<|```|~~~|\$\$|[-=]+\s*$)")


def soft_breaks(text: str) -> list[str]:
    """Line breaks inside a paragraph with a Chinese character or full-width punctuation on either side (emphasis
    marks set aside: `**缓冲区**` then `（`), each shown as 'end of line⏎start of next line'. Markdown renders such
    a break as a space: a gap between Chinese characters, or beside full-width punctuation, which carries its own."""
    text = re.sub(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$|\$\$.*?\$\$", "\n\n", text, flags=re.S | re.M)
    lines = text.split("\n")
    found = []
    for before, after in pairwise(lines):
        if not before.strip() or not after.strip() or BLOCK_START.match(after):
            continue
        if before.lstrip().startswith(("#", "|", "<")) or before.endswith(("  ", "\\")):
            continue  # a heading, a table row or HTML ends at its line; two spaces or a backslash: a hard break
        tail, head = before.rstrip().rstrip("*_")[-1:], after.lstrip().lstrip("*_")[:1]
        if WIDE.match(tail) or WIDE.match(head):
            found.append(f"{before.rstrip()[-12:]}⏎{after.lstrip()[:12]}")
    return found


def rule_chinese_paragraphs_on_one_line(nb: dict) -> list[str]:
    """JupyterLab (and the handout's HTML) shows a line break inside a paragraph as a space, which between two
    Chinese characters, or next to full-width punctuation, is a visible gap; Chinese paragraphs are therefore one
    source line each."""
    return [
        f"cell {i}: line break inside a paragraph at {shown!r}: keep a Chinese paragraph on one line"
        for i, c in enumerate(nb["cells"])
        if "lang-zh" in tags(c)
        for shown in soft_breaks(source(c))
    ]


SPACE_AFTER_CHINESE_PUNCTUATION = re.compile(r"[，。；：！？、]\**[ \t]+(?=[^\s|])")


def rule_no_space_after_chinese_punctuation(nb: dict) -> list[str]:
    """Chinese punctuation is full width: a space after it shows as a gap (write "**陷阱**：正文", whose bold
    closes by CommonMark's rules, not "**陷阱：** 正文")."""
    problems = []
    for i, c in enumerate(nb["cells"]):
        if "lang-zh" in tags(c):
            found = SPACE_AFTER_CHINESE_PUNCTUATION.search(re.sub(r"```.*?```", " ", source(c), flags=re.S))
            if found:
                problems.append(f"cell {i}: space after Chinese punctuation in {found.group(0)!r}")
    return problems


def prose_keep_emphasis(text: str) -> str:
    """Markdown without code blocks, inline code and maths (emphasis marks kept)."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    return re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " ", text, flags=re.S)


def rule_exercises_self_checked(nb: dict) -> list[str]:
    code = code_cells(nb)
    solutions = [i for i, c in enumerate(code) if "solution" in tags(c)]
    if not solutions:
        return ["the lesson has no exercise: no code cell is tagged solution"]
    problems = []
    for i in solutions:
        check = code[i + 1] if i + 1 < len(code) else None
        if check is None or "check_" not in source(check) or "solution" in tags(check):
            problems.append(f"solution in code cell {i + 1} is not followed by a self-check cell calling check_...")
        elif not cell_text(check).startswith(tuple(PASS_MARKS.values())):  # a lesson of any edition
            problems.append(f"the self-check in code cell {i + 2} did not store the pass line '{PASS_MARK}'")
    return problems


# The study notes by title (seeds/000, 002, 004): English cells use the English name, Chinese cells the title itself.
NOTE_NAMES = {
    "Understanding PyTorch functions": "pytorch 函数理解",
    "Pytorch Note": "Pytorch Note",
    "PyTorch Basics 1": "Pytorch基础_1",
}


def rule_errata_proven(nb: dict) -> list[str]:
    problems = []
    cells = nb["cells"]
    for english, chinese in markdown_pairs(nb):
        if "Errata" not in source(english).split("\n", 1)[0]:
            continue
        if "勘误" not in source(chinese).split("\n", 1)[0]:
            problems.append("an Errata cell's Chinese twin must open with 勘误")
        named = [name for name in NOTE_NAMES if name.lower() in source(english).lower()]
        if not named:
            problems.append(f"an Errata cell must name the note it corrects: one of {list(NOTE_NAMES)}")
        elif not any(NOTE_NAMES[english_name] in source(chinese) for english_name in named):
            problems.append(f"an Errata cell's Chinese twin must name the note by its title: {NOTE_NAMES[named[0]]}")
        after = cells[cells.index(chinese) + 1 :]
        if not after or after[0]["cell_type"] != "code":
            problems.append("an Errata note must be followed by a code cell that proves the correction")
    return problems


# A note's title in Chinese prose, case and spaces as the lessons vary them ("Pytorch 基础_1").
NOTE_TITLE = re.compile(
    "|".join(
        r"\s*".join(map(re.escape, re.findall(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]+", title)))
        for title in NOTE_NAMES.values()
    ),
    re.I,
)


def rule_note_titles_in_book_brackets(nb: dict) -> list[str]:
    """Chinese prose names a study note by its title in book-title marks, 《Pytorch Note》, the way Chinese writing
    names a book or an article; never in quotation marks 「」 or “” (which quote words), nor bare."""
    problems = []
    for i, cell in enumerate(nb["cells"]):
        texts = [prose(source(cell))] if "lang-zh" in tags(cell) else []
        if "solution" in tags(cell):  # the exercise's Chinese prompt, which the learner's stub shows
            texts.append(prose(cell.get("metadata", {}).get("exercise", {}).get("zh", "")))
        for text in texts:
            for found in NOTE_TITLE.finditer(text):
                before, after = text[found.start() - 1 : found.start()], text[found.end() : found.end() + 1]
                if (before, after) != ("《", "》"):
                    problems.append(
                        f"cell {i}: the note's title {before + found.group(0) + after!r}: write 《{found.group(0)}》"
                    )
    return problems


def load_glossary(path: Path = GLOSSARY) -> dict[str, str]:
    """English term -> Chinese term, from the glossary's markdown table."""
    terms, in_table = {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if in_table and len(cells) >= 2 and CJK.search(cells[1]):
            terms[cells[0]] = cells[1]
        in_table = in_table or line.startswith("| ---")
    return terms


def load_variants(path: Path = GLOSSARY) -> dict[str, str]:
    """Chinese variant -> the glossary term to use instead, from the glossary's last column ("Not / 不用")."""
    variants, in_table = {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if in_table and len(cells) >= 4 and cells[3]:
            variants.update({variant.strip(): cells[1] for variant in cells[3].split("、") if variant.strip()})
        in_table = in_table or line.startswith("| ---")
    return variants


def rule_glossary_variants(nb: dict, variants: dict[str, str] | None = None) -> list[str]:
    variants = load_variants() if variants is None else variants
    return [
        f"cell {i}: Chinese prose says {variant!r}; the glossary term is {term!r}"
        for i, cell in enumerate(nb["cells"])
        if "lang-zh" in tags(cell)
        for variant, term in variants.items()
        if variant in prose(source(cell))
    ]


def rule_glossary_terms(nb: dict, glossary: dict[str, str] | None = None) -> list[str]:
    glossary = load_glossary() if glossary is None else glossary
    problems = []
    for english, chinese in markdown_pairs(nb):
        en_text, zh_text = prose(source(english)).lower(), prose(source(chinese))
        for en_term, zh_term in glossary.items():
            # an identifier written without backticks (track_running_stats in an objective) is code, not the term
            if re.search(rf"\b{re.escape(en_term.lower())}(?!_)", en_text) and zh_term not in zh_text:
                first = source(english).split("\n", 1)[0][:50]
                problems.append(f"'{first}': English says {en_term!r}, Chinese twin lacks the glossary term {zh_term}")
    return problems


# Links between lessons: [text](NN-name.ipynb#Heading-anchor), [text](GLOSSARY.md), [text](../README.md#anchor).
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]*)\)")
LESSON_MENTION = {"lang-en": re.compile(r"\b[Ll]essons?\s+(\d\d)\b"), "lang-zh": re.compile(r"第 ?(\d\d) ?课")}
HEADING = re.compile(r"^#{1,6} +(.+?) *$", re.M)


def anchor(heading: str) -> str:
    """The id JupyterLab and nbconvert give a heading: its rendered text with spaces as hyphens."""
    text = LINK.sub(r"\1", heading)
    return re.sub(r"[`*]", "", text).strip().replace(" ", "-")


def headings(text: str) -> set[str]:
    """The anchors of every markdown heading in a text (code fences skipped)."""
    return {anchor(h) for h in HEADING.findall(re.sub(r"```.*?```", "", text, flags=re.S))}


def notebook_anchors(nb: dict, lang: str) -> set[str]:
    """Anchors of one language's headings: the Chinese-only copy keeps only lang-zh cells, the English lang-en."""
    return {a for cell in nb["cells"] if lang in tags(cell) for a in headings(source(cell))}


def link_problem(target: str, lang: str, here: dict, folder: Path) -> str | None:
    """Why a link does not resolve, or None: the file must exist, the anchor be a heading in the cell's language."""
    if re.match(r"[a-z]+:", target):  # https:, mailto:: outside the course
        return None
    path, _, fragment = target.partition("#")
    if path and not (folder / path).exists():
        return f"links to {path}, which does not exist"
    if not fragment:
        return None
    if not path:
        found = notebook_anchors(here, lang)
    elif path.endswith(".ipynb"):
        found = notebook_anchors(json.loads((folder / path).read_text(encoding="utf-8")), lang)
    else:
        found = headings((folder / path).read_text(encoding="utf-8"))
    return None if fragment in found else f"links to {target}, but no {lang} heading there has the anchor #{fragment}"


def rule_references_resolve(nb: dict, folder: Path = NOTEBOOK_DIR) -> list[str]:
    """Every link resolves (file, and heading in the cell's own language); every "lesson NN" is a link to lesson NN."""
    problems = []
    title = CHINESE_TITLE.pattern.lstrip("^")
    for i, cell in enumerate(nb["cells"]):
        lang = next(iter(tags(cell) & {"lang-en", "lang-zh"}), None)
        if cell["cell_type"] != "markdown" or lang is None:
            continue
        text = re.sub(title, "", re.sub(r"```.*?```|`[^`]*`", "", source(cell), flags=re.S))
        for label, target in LINK.findall(text):
            problem = link_problem(target, lang, nb, folder)
            if problem:
                problems.append(f"cell {i}: [{label}] {problem}")
            for number in LESSON_MENTION[lang].findall(label):
                if not Path(target.partition("#")[0]).name.startswith(f"{number}-"):
                    problems.append(f"cell {i}: [{label}] names lesson {number} but links to {target}")
        for number in LESSON_MENTION[lang].findall(LINK.sub("", text)):
            problems.append(f"cell {i}: lesson {number} is named without a link: write [..]({number}-name.ipynb)")
    return problems


RULES = [
    rule_kernelspec,
    rule_markdown_tagged_and_paired,
    rule_language_matches_tag,
    rule_title_first,
    rule_setup_cell_first,
    rule_executed_in_order,
    rule_clean_outputs,
    rule_unchecked_cells_say_why,
    rule_documented_outputs,
    rule_exercises_self_checked,
    rule_errata_proven,
    rule_note_titles_in_book_brackets,
    rule_glossary_terms,
    rule_glossary_variants,
    rule_short_errors,
    rule_exercises_have_bilingual_prompts,
    rule_figures_captioned,
    rule_worksheet_questions,
    rule_no_source_pointers,
    rule_no_chinese_italics,
    rule_no_space_after_chinese_punctuation,
    rule_chinese_paragraphs_on_one_line,
    rule_references_resolve,
]
