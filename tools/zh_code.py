"""The Chinese edition's code: comments and printed text in Chinese, everything else the English source's.

One source: the lessons' code is written once, in English. For each lesson `notebooks/zh/NN-name.toml` says, entry
by entry, what a comment or a string literal reads in Chinese (the key is the exact English source, so a changed
comment shows up as untranslated). `make execute` builds the Chinese edition from the two and runs it with
COURSE_LANG=zh into `notebooks/zh/NN-name.ipynb`; the Chinese workspace and handout are made from that file.

    python -m tools.zh_code extract notebooks/06-batchnorm.ipynb   # add new comments and strings to the catalog
    python -m tools.zh_code build notebooks/06-batchnorm.ipynb     # write and run the Chinese edition
    python -m tools.zh_code check notebooks/06-batchnorm.ipynb     # language, numbers, up to date

The check proves three things: the Chinese edition holds no English prose, comment or label except what the
catalog's `keep` list names (PyTorch's own messages, code values); the English one no Chinese; and the Chinese
edition's outputs carry the same numbers as the English edition's, cell by cell, once the labels are set aside.
"""

import argparse
import ast
import io
import json
import re
import subprocess
import sys
import tempfile
import tokenize
from collections import Counter
from pathlib import Path

import nbformat

from tools.course import CHINESE_CHARACTERS, CJK_RANGES, EXECUTE, NOTEBOOK_DIR, lesson_files, run_env, source
from tools.lesson_copies import one_language
from tools.notebook_rules import output_text as rule_output_text
from tools.notebook_rules import rule_documented_outputs

EDITION_DIR = NOTEBOOK_DIR / "zh"
# Three English words in a row, outside code: prose or a label, not an identifier or a value.
ENGLISH_RUN = re.compile(r"(?<![\w.`'])[A-Za-z][a-z]+(?:[ ,;:'-]+[A-Za-z][a-z]+){2,}(?![\w`(])")
CJK = re.compile(f"[{CJK_RANGES}]")
# Chinese characters, not full-width punctuation: lesson 00 shows the English reader what "，" or "（" does in code.
CHINESE = re.compile(f"[{CHINESE_CHARACTERS}]")
CODE_SPAN = re.compile(r"`[^`\n]*`|\$[^$\n]+\$|\]\([^)]*\)|https?://\S+|<[^>\n]+>")
# An IPython magic or shell line (`%%writefile f`, `%timeit`, `!ls`), not an operator continuing a line (`!= b`, `% 2`).
MAGIC = re.compile(r"%%?[A-Za-z]|![^=]")
# A single word as a value ("yes", "inside", "buffer:"): shown when a condition or a table picks it.
WORD = re.compile(r"[A-Za-z][A-Za-z]+[:,]? *")
# A call written out, `pad_collate(samples, lengths)`: its argument names are code, not English words.
CALL = re.compile(r"[A-Za-z_][\w.]*\([^()\n]*\)|\((?:[A-Za-z_]\w*, *)+[A-Za-z_]\w*\)")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
# Calls whose string arguments are read by people (printed or drawn), whichever words they hold.
SHOWN = {
    "print",
    "set_title",
    "suptitle",
    "set_xlabel",
    "set_ylabel",
    "text",
    "annotate",
    "legend",
    "title",
    "xlabel",
    "ylabel",
    "set_label",
}


def catalog_path(notebook_path: Path) -> Path:
    """Where a lesson's Chinese code lives: notebooks/zh/NN-name.toml."""
    return EDITION_DIR / f"{Path(notebook_path).stem}.toml"


def edition_path(notebook_path: Path) -> Path:
    """The executed Chinese edition of a lesson: notebooks/zh/NN-name.ipynb."""
    return EDITION_DIR / Path(notebook_path).name


def load_catalog(notebook_path: Path) -> dict:
    """{"comment": {en: zh}, "string": {en: zh}, "keep": [English allowed in the Chinese edition]}."""
    import tomllib

    path = catalog_path(notebook_path)
    data = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return {
        "comment": {entry["en"]: entry.get("zh", "") for entry in data.get("comment", [])},
        "string": {entry["en"]: entry.get("zh", "") for entry in data.get("string", [])},
        "keep": list(data.get("keep", [])),
    }


# --- what a code cell holds that a reader reads --------------------------------------------------------------


def parsable(code: str) -> str:
    """`code` with IPython's magics (`%%writefile f.py`, `%timeit`, `!ls`) blanked, line for line, so that Python's
    parser reads the rest: the script a `%%writefile` cell writes is translated like any cell."""
    lines = code.split("\n")
    for index, line in enumerate(lines):
        stripped = line.lstrip()
        if MAGIC.match(stripped):
            lines[index] = "" if stripped.startswith("%%") else line[: len(line) - len(stripped)] + "pass"
    return "\n".join(lines)


def comment_units(code: str) -> list[tuple[int, int, int, str]]:
    """(first line, last line, column, text) of each comment: a run of whole-line comments at one column is one
    unit (a sentence may span lines); a comment after code is a unit of its own. Lines count from 0."""
    units: list[list] = []
    lines = code.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(parsable(code)).readline):
        if token.type != tokenize.COMMENT or token.string.startswith("#!"):
            continue
        row, column = token.start[0] - 1, token.start[1]
        whole_line = not lines[row][:column].strip()
        last = units[-1] if units else None
        if whole_line and last and last[4] and last[1] == row - 1 and last[2] == column:
            last[1], last[3] = row, f"{last[3]}\n{token.string}"
        else:
            units.append([row, row, column, token.string, whole_line])
    return [(first, last, column, text) for first, last, column, text, _ in units]


def _called_name(node: ast.AST) -> str:
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def string_units(code: str) -> list[tuple[ast.AST, str]]:
    """(node, exact source) of each string literal a reader reads: any printed or drawn, any with a space between
    words, any with a word before a colon or a space (a label: "plain    ", "start:"). Strings inside an f-string's
    fields belong to it."""
    tree = ast.parse(parsable(code))
    shown: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node) in SHOWN:
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                shown.add(id(argument))
        if isinstance(node, ast.keyword) and node.arg in ("label", "title"):
            shown.add(id(node.value))
        # a word chosen by a condition or looked up in a table is often printed: "yes" if ... else "no"
        choices = [node.body, node.orelse] if isinstance(node, ast.IfExp) else []
        choices += node.values if isinstance(node, ast.Dict) else []
        for choice in choices:
            if isinstance(choice, ast.Constant) and isinstance(choice.value, str) and WORD.fullmatch(choice.value):
                shown.add(id(choice))
    inner = {
        id(n) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for n in ast.walk(node) if n is not node
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in inner or not isinstance(node, ast.Constant | ast.JoinedStr):
            continue
        if isinstance(node, ast.Constant) and not isinstance(node.value, str):
            continue
        text = literal_text(node)
        if re.search(r"[A-Za-z]{2}", text) and (
            id(node) in shown or re.search(r"[A-Za-z]{2,}[ ,:][ ]*[A-Za-z]{2}|[A-Za-z]{3,}[:\s]", text)
        ):
            found.append((node, ast.get_source_segment(code, node)))
    return sorted(found, key=lambda item: (item[0].lineno, item[0].col_offset))


def literal_text(node: ast.AST) -> str:
    """The words of a string literal, an f-string's {fields} left out."""
    if isinstance(node, ast.Constant):
        return node.value
    return "".join(part.value for part in node.values if isinstance(part, ast.Constant))


def translate(code: str, catalog: dict) -> str:
    """`code` with every comment and string the catalog translates replaced, everything else as it was."""
    try:
        strings = string_units(code)
    except SyntaxError:
        return code  # a cell that shows a SyntaxError on purpose stays as written
    lines = code.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    edits = []  # (start, end, new text) in characters of `code`
    for first, last, column, text in comment_units(code):
        chinese = catalog["comment"].get(text)
        if chinese:
            start = offsets[first] + column
            end = offsets[last] + len(lines[last].rstrip("\r\n"))
            edits.append((start, end, ("\n" + " " * column).join(chinese.splitlines())))
    for node, text in strings:
        chinese = catalog["string"].get(text)
        if chinese and chinese != text:
            start = offsets[node.lineno - 1] + _char_column(lines[node.lineno - 1], node.col_offset)
            end = offsets[node.end_lineno - 1] + _char_column(lines[node.end_lineno - 1], node.end_col_offset)
            edits.append((start, end, chinese))
    for start, end, new in sorted(edits, reverse=True):
        code = code[:start] + new + code[end:]
    return code


def _char_column(line: str, byte_offset: int) -> int:
    """ast counts columns in UTF-8 bytes; strings count characters."""
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8"))


def units_of(notebook: nbformat.NotebookNode) -> tuple[list[str], list[str]]:
    """Every comment and shown string in a lesson's code cells, in order, each once."""
    comments, strings = {}, {}
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        code = source(cell)
        try:
            strings.update((text, None) for _, text in string_units(code))
        except SyntaxError:
            continue
        comments.update((text, None) for *_, text in comment_units(code))
    return list(comments), list(strings)


# --- the Chinese edition ---------------------------------------------------------------------------------------


def chinese_edition(notebook: nbformat.NotebookNode, catalog: dict) -> nbformat.NotebookNode:
    """The Chinese copy of a lesson: its Chinese prose, its code with Chinese comments and labels, no outputs."""
    edition = one_language(notebook, "zh")
    for cell in edition.cells:
        if cell.cell_type == "code":
            cell.source = translate(source(cell), catalog)
            cell.outputs, cell.execution_count = [], None
    return edition


def build(notebook_path: Path, execute: bool = True) -> Path:
    """Write the Chinese edition of a lesson beside the catalogs and run it with COURSE_LANG=zh."""
    notebook = nbformat.read(notebook_path, as_version=4)
    edition = chinese_edition(notebook, load_catalog(notebook_path))
    target = edition_path(notebook_path)
    target.parent.mkdir(exist_ok=True)
    nbformat.write(edition, target)
    if execute:
        run_notebook(target, "zh")
    return target


# --- the checks ----------------------------------------------------------------------------------------------


def output_text(output: dict) -> str:
    """What an output shows as text (the notebook rules' reading), a figure's "<Figure ...>" repr aside."""
    return "" if "image/png" in output.get("data", {}) else rule_output_text(output)


def readable_parts(cell: dict) -> list[tuple[str, str]]:
    """(where, text) of what a reader of a cell reads in words: prose, comments, shown strings, outputs."""
    if cell.get("cell_type") == "markdown":
        return [("prose", CODE_SPAN.sub(" ", source(cell)))]
    if cell.get("cell_type") != "code":
        return []
    code = source(cell)
    parts = [("comment", CODE_SPAN.sub(" ", text)) for *_, text in _safe(comment_units, code)]
    parts += [("string", literal_text(node)) for node, _ in _safe(string_units, code)]
    if "show_source(" not in code:  # a listing of companion's code is code, in English like the lessons' own
        parts += [("output", output_text(o)) for o in cell.get("outputs", [])]
    return parts


def _safe(find, code: str) -> list:
    try:
        return find(code)
    except (SyntaxError, tokenize.TokenError):
        return []


def kept_english(catalog: dict) -> list[str]:
    """The English a catalog lets stay: its `keep` list, and the words of each string whose Chinese is its English
    (a code value the catalog keeps on purpose: "mean", a legend's loc)."""
    kept = list(catalog["keep"])
    for en, zh in catalog["string"].items():
        if en == zh:
            try:
                kept.append(str(ast.literal_eval(en)))
            except (ValueError, SyntaxError):  # an f-string: its source, quotes and prefix aside
                kept.append(en.lstrip("fFrRbB").strip("\"'"))
    return kept


def english_left(notebook: dict, keep: list[str]) -> list[str]:
    """Where the Chinese edition still reads English: runs of three words that no `keep` entry holds."""
    found = []
    # A kept message may hold a call, which CALL would cut: lines of kept text are set aside whole first.
    kept_lines = sorted({line.strip() for kept in keep for line in kept.splitlines() if len(line.strip()) > 12})
    for index, cell in enumerate(notebook["cells"]):
        for where, text in readable_parts(cell):
            for line in text.splitlines():
                for kept in kept_lines:
                    line = line.replace(kept, " ")
                for run in ENGLISH_RUN.findall(CALL.sub(" ", line)):
                    if not any(run in kept for kept in keep):
                        found.append(f"cell {index} {where}: {run!r} in {line.strip()[:120]!r}")
    return found


def chinese_left(notebook: dict) -> list[str]:
    """Where the English edition reads Chinese characters (prose, comments, strings, outputs)."""
    found = []
    for index, cell in enumerate(notebook["cells"]):
        for where, text in readable_parts(cell):
            for line in text.splitlines():
                if CHINESE.search(line):
                    found.append(f"cell {index} {where}: {line.strip()[:120]!r}")
    return found


def numbers(cell: dict) -> tuple[Counter, int]:
    """The numbers a code cell's outputs show (labels set aside, order within a line free) and its image count."""
    counted: Counter = Counter()
    images = 0
    for output in cell.get("outputs", []):
        images += "image/png" in output.get("data", {})
        counted.update(NUMBER.findall(CJK.sub(" ", output_text(output))))
    return counted, images


def different_numbers(english: dict, chinese: dict) -> list[str]:
    """Code cells whose outputs carry other numbers (or another count of images) in the two editions."""
    english_code = [c for c in english["cells"] if c["cell_type"] == "code"]
    chinese_code = [c for c in chinese["cells"] if c["cell_type"] == "code"]
    if len(english_code) != len(chinese_code):
        return [f"{len(english_code)} code cells in English, {len(chinese_code)} in Chinese"]
    found = []
    for index, (en, zh) in enumerate(zip(english_code, chinese_code, strict=True)):
        if "nbval-ignore-output" in en.get("metadata", {}).get("tags", []):
            continue  # timings and this machine's devices: other numbers on every run, said in the cell
        (en_numbers, en_images), (zh_numbers, zh_images) = numbers(en), numbers(zh)
        if en_numbers != zh_numbers or en_images != zh_images:
            only_en, only_zh = en_numbers - zh_numbers, zh_numbers - en_numbers
            found.append(
                f"code cell {index + 1}: English only {dict(only_en)}, Chinese only {dict(only_zh)}, "
                f"images {en_images} vs {zh_images}"
            )
    return found


def stale(notebook_path: Path) -> list[str]:
    """Cells of the stored Chinese edition whose source differs from what the lesson and catalog make now."""
    notebook = nbformat.read(notebook_path, as_version=4)
    wanted = chinese_edition(notebook, load_catalog(notebook_path))
    path = edition_path(notebook_path)
    if not path.exists():
        return [f"{path} is missing"]
    stored = nbformat.read(path, as_version=4)
    if len(stored.cells) != len(wanted.cells):
        return [f"{path.name}: {len(stored.cells)} cells stored, {len(wanted.cells)} wanted"]
    return [
        f"{path.name} cell {i}"
        for i, (a, b) in enumerate(zip(stored.cells, wanted.cells, strict=True))
        if source(a) != source(b)
    ]


def untranslated(notebook_path: Path) -> list[str]:
    """Comments and shown strings of a lesson that its catalog does not list (or lists with no Chinese)."""
    notebook = nbformat.read(notebook_path, as_version=4)
    catalog = load_catalog(notebook_path)
    comments, strings = units_of(notebook)
    missing = [f"comment {c!r}" for c in comments if not catalog["comment"].get(c)]
    return missing + [f"string {s}" for s in strings if not catalog["string"].get(s)]


def run_notebook(path: Path, language: str, output: Path | None = None) -> None:
    """Run a notebook top to bottom with COURSE_LANG=`language`, in its own folder, in place or into `output`."""
    command = [sys.executable, *EXECUTE, str(path)]
    command += ["--output", str(output.resolve())] if output else ["--inplace"]
    subprocess.run(command, check=True, env=run_env(COURSE_LANG=language), cwd=NOTEBOOK_DIR.parent)
    subprocess.run(
        [sys.executable, "-m", "tools.tidy_errors", str(output or path)], check=True, cwd=NOTEBOOK_DIR.parent
    )


def problems(notebook_path: Path, english_path: Path | None = None) -> list[str]:
    """Everything the check finds for one lesson (its outputs read from `english_path` when given)."""
    english = nbformat.read(english_path or notebook_path, as_version=4)
    found = [f"untranslated: {u}" for u in untranslated(notebook_path)]
    found += [f"out of date (make execute NB={notebook_path}): {s}" for s in stale(notebook_path)]
    found += [f"Chinese in the English edition: {c}" for c in chinese_left(one_language(english, "en"))]
    path = edition_path(notebook_path)
    if path.exists():
        chinese = nbformat.read(path, as_version=4)
        catalog = load_catalog(notebook_path)
        # A string whose Chinese is its English is a code value the catalog keeps on purpose ("mean", a loc name).
        keep = kept_english(catalog)
        found += [f"English in the Chinese edition: {e}" for e in english_left(chinese, keep)]
        found += [f"numbers differ: {d}" for d in different_numbers(english, chinese)]
        found += [f"Chinese prose: {q}" for q in rule_documented_outputs(chinese)]
    return found


# --- the catalog file ----------------------------------------------------------------------------------------


def catalog_text(notebook_path: Path) -> str:
    """The catalog file with every comment and shown string of the lesson, translated ones kept, new ones empty."""
    notebook = nbformat.read(notebook_path, as_version=4)
    old = load_catalog(notebook_path)
    comments, strings = units_of(notebook)
    lines = [
        f"# The Chinese for the code of {Path(notebook_path).name}: `en` is the exact English source, `zh` what the",
        "# Chinese edition shows instead (empty: not yet translated). `keep` lists English that may stay in the",
        "# Chinese edition: PyTorch's own messages, code values, quoted titles. Written by `python -m tools.zh_code",
        "# extract`, which keeps every translation and adds what is new.",
        "",
        "keep = [",
        *(f"  {json.dumps(k, ensure_ascii=False)}," for k in old["keep"]),
        "]",
    ]
    for kind, units in (("comment", comments), ("string", strings)):
        for text in units:
            chinese = old[kind].get(text, "")
            lines += [
                "",
                f"[[{kind}]]",
                f"en = {json.dumps(text, ensure_ascii=False)}",
                f"zh = {json.dumps(chinese, ensure_ascii=False)}",
            ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("extract", "build", "check"))
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--no-execute", action="store_true", help="build: write the edition without running it")
    parser.add_argument(
        "--fresh-english", action="store_true", help="check: run the English lesson first, into a temporary file"
    )
    args = parser.parse_intermixed_args(argv)
    paths = args.notebooks or lesson_files()
    failed = 0
    for path in paths:
        if args.action == "extract":
            EDITION_DIR.mkdir(exist_ok=True)
            catalog_path(path).write_text(catalog_text(path), encoding="utf-8")
            print(f"{catalog_path(path)}: {len(untranslated(path))} entries without Chinese")
        elif args.action == "build":
            print(build(path, execute=not args.no_execute))
        else:
            english = None
            if args.fresh_english:
                english = Path(tempfile.mkdtemp()) / path.name
                run_notebook(path, "en", english)
            found = problems(path, english)
            failed += bool(found)
            print(f"{path.name}: {'ok' if not found else f'{len(found)} problems'}")
            for problem in found:
                print(f"  {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
