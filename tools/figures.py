"""The lesson figures the issues quote, for the working tree or any commit: English words (lang-en cells), fenced
`output:` quotes in English cells, whole-output quotes, the longest stored error (lines), and the absolute claims
(never, always, only ... in both languages; tools/claims.py) with how many a cell proves.

    python -m tools.figures            # the working tree
    python -m tools.figures --at REV   # e.g. 0fa5322
"""

import argparse
import json
import re
import subprocess
from pathlib import Path

from tools.claims import code_cell_ids, lesson_claims
from tools.course import ANSI, ROOT, lesson_files, source, tags
from tools.notebook_rules import OUTPUT_FENCE, cell_text, code_cells


def notebooks(rev: str | None) -> dict[str, dict]:
    """Lesson stem -> notebook JSON."""
    if rev is None:
        paths = lesson_files()
        return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in paths}
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", rev, "notebooks/"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    found = {}
    for name in sorted(n for n in names if re.search(r"/\d\d-.*\.ipynb$", n)):
        text = subprocess.run(["git", "show", f"{rev}:{name}"], cwd=ROOT, capture_output=True, text=True, check=True)
        found[Path(name).stem] = json.loads(text.stdout)
    return found


def figures(stem: str, notebook: dict, provers: set[str]) -> dict[str, int]:
    """The figures of one lesson."""
    english = [c for c in notebook["cells"] if "lang-en" in tags(c)]
    stored = {t[7:]: cell_text(c) for c in code_cells(notebook) for t in tags(c) if t.startswith("output:")}
    quotes = [(name, text) for c in english for name, text in OUTPUT_FENCE.findall(source(c))]
    whole = sum(
        1
        for name, text in quotes
        if name in stored and len(stored[name].strip().splitlines()) > 1 and text.strip() == stored[name].strip()
    )
    errors = [
        len(ANSI.sub("", "\n".join(o.get("traceback", []))).strip().splitlines())
        for c in code_cells(notebook)
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    claims, _ = lesson_claims(stem, notebook, provers)
    return {
        "absolute": len(claims),
        "proven": sum(1 for c in claims if c.proof),
        "words": sum(len(source(c).split()) for c in english),
        "quotes": len(quotes),
        "whole_quotes": whole,
        "longest_error": max(errors, default=0),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--at", metavar="REV")
    lessons = notebooks(parser.parse_args().at)
    provers = code_cell_ids(lessons)
    rows = {stem: figures(stem, nb, provers) for stem, nb in lessons.items()}
    columns = "English words | output quotes | whole-output quotes | longest error (lines) | absolute claims (proven)"
    print(f"| lesson | {columns} |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for stem, f in rows.items():
        print(
            f"| {stem} | {f['words']:,} | {f['quotes']} | {f['whole_quotes']} | {f['longest_error']} "
            f"| {f['absolute']} ({f['proven']}) |"
        )
    total = {k: sum(f[k] for f in rows.values()) for k in ("words", "quotes", "whole_quotes", "absolute", "proven")}
    longest = max(f["longest_error"] for f in rows.values())
    print(
        f"| **all** | {total['words']:,} | {total['quotes']} | {total['whole_quotes']} | {longest} "
        f"| {total['absolute']} ({total['proven']}) |"
    )
