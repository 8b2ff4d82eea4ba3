"""Absolute claims in lesson prose (never, always, cannot, only, every, no ...; 从不、总是、不能、只有、所有 ...)
and the cell that proves each one.

A sentence that generalises ("X can never Y") is true only if a cell tests the general case. Each such sentence is
either reworded or proven: its markdown cell's metadata maps a fragment of the sentence to the id of the code cell
that proves it, e.g. `"claims": {"can be used in a recorded computation": "a02-058"}`. A fragment covers every
flagged sentence of that cell containing it.

    python -m tools.claims                # per lesson: absolute sentences, proven, open
    python -m tools.claims --open [NN]    # the open ones: lesson, cell id, sentence
    python -m tools.claims --all NN       # every absolute sentence of lesson NN with its proof
"""

import argparse
import json
import re
import sys
from pathlib import Path
from typing import NamedTuple

from tools.course import NOTEBOOK_DIR, lesson_files, source, tags
from tools.notebook_rules import prose

ABSOLUTE = {
    "lang-en": re.compile(
        # "almost always" and "not only" hedge or do not generalise.
        r"(?<!almost )(?<!not )\b(never|always|cannot|can't|only|every|everything|all|none|nothing|no|impossible)\b",
        re.IGNORECASE,
    ),
    "lang-zh": re.compile(
        r"(?<!几乎)(?<!不)(?:从不|从来|永远|永不|总是|始终|不能|不可能|无法|只有|只能|仅|一定|所有|每一|全部|一律|绝不)"
    ),
}
SENTENCE_END = {
    "lang-en": re.compile(r"(?<=[.!?])\s+|\n\s*\n|\n(?=\s*[-*] )"),
    "lang-zh": re.compile(r"(?<=[。！？])|\n"),
}


class Claim(NamedTuple):
    lesson: str
    cell: str  # the markdown cell's id
    sentence: str
    words: tuple[str, ...]  # the absolute words it uses
    proof: str | None  # the id of the code cell that proves it


def sentences(text: str, lang: str) -> list[str]:
    """The sentences of a markdown text's prose (code, maths and link targets removed), whitespace collapsed."""
    parts = SENTENCE_END[lang].split(prose(text))
    return [" ".join(part.split()) for part in parts if part.strip()]


def code_cell_ids(notebooks: dict[str, dict]) -> set[str]:
    """The ids of every code cell of the course, the only cells that can prove a claim."""
    return {c["id"] for nb in notebooks.values() for c in nb["cells"] if c["cell_type"] == "code"}


def lesson_claims(stem: str, nb: dict, provers: set[str]) -> tuple[list[Claim], list[str]]:
    """The absolute sentences of one lesson, and the problems of its `claims` metadata (stale fragments, bad ids)."""
    found, problems = [], []
    for cell in nb["cells"]:
        lang = next(iter(tags(cell) & set(ABSOLUTE)), None)
        if cell["cell_type"] != "markdown" or lang is None or "objectives" in tags(cell):
            continue  # the objectives box states goals, generated from course.toml, not claims
        proofs = cell.get("metadata", {}).get("claims", {})
        flagged = [(s, tuple(w.lower() for w in ABSOLUTE[lang].findall(s))) for s in sentences(source(cell), lang)]
        flagged = [(s, words) for s, words in flagged if words]
        for fragment, proof in proofs.items():
            if not any(fragment in s for s, _ in flagged):
                problems.append(f"{stem} cell {cell['id']}: claim fragment {fragment!r} is in no absolute sentence")
            if proof not in provers:
                problems.append(f"{stem} cell {cell['id']}: proof {proof!r} is not the id of a code cell")
        for s, words in flagged:
            proof = next((p for fragment, p in proofs.items() if fragment in s), None)
            found.append(Claim(stem[:2], cell["id"], s, words, proof))
    return found, problems


def course_claims(folder: Path = NOTEBOOK_DIR) -> tuple[list[Claim], list[str]]:
    """Every absolute sentence of the course, and every problem of the proofs."""
    notebooks = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in lesson_files(folder)}
    provers = code_cell_ids(notebooks)
    claims, problems = [], []
    for stem, nb in notebooks.items():
        found, wrong = lesson_claims(stem, nb, provers)
        claims += found
        problems += wrong
    return claims, problems


def counts(claims: list[Claim]) -> dict[str, dict[str, int]]:
    """Lesson -> absolute sentences, proven ones, open ones."""
    table: dict[str, dict[str, int]] = {}
    for claim in claims:
        row = table.setdefault(claim.lesson, {"absolute": 0, "proven": 0, "open": 0})
        row["absolute"] += 1
        row["proven" if claim.proof else "open"] += 1
    return table


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--open", nargs="?", const="", metavar="NN", help="list the open claims (of one lesson)")
    parser.add_argument("--all", metavar="NN", help="list every absolute sentence of one lesson with its proof")
    args = parser.parse_args()
    claims, problems = course_claims()
    if args.open is not None or args.all:
        lesson = args.all or args.open
        for c in claims:
            if (not lesson or c.lesson == lesson) and (args.all or not c.proof):
                print(f"{c.lesson} {c.cell} [{', '.join(c.words)}] -> {c.proof or 'OPEN'}\n    {c.sentence}")
    else:
        print("| lesson | absolute sentences | proven by a cell | open |")
        print("| --- | ---: | ---: | ---: |")
        for lesson, row in counts(claims).items():
            print(f"| {lesson} | {row['absolute']} | {row['proven']} | {row['open']} |")
    for problem in problems:
        print(problem, file=sys.stderr)
    sys.exit(1 if problems else 0)
