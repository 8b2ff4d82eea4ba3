"""Keep each Chinese cell in step with the English cell it renders.

Every `lang-zh` cell records, in its metadata, `en_sha`: a hash of its `lang-en` twin's source when the Chinese was
last written. When the English changes, the hash goes stale and tests/test_zh_sync.py names the pair.

    python -m tools.zh_sync                          # list stale pairs, each with the diff of its English text
    python -m tools.zh_sync --accept NOTEBOOK CELL   # after revising the Chinese: record the English it now renders
    python -m tools.zh_sync --accept-all NOTEBOOK    # record every pair of a notebook (new lessons only)

CELL is the index of the English or the Chinese cell of a pair. The diff comes from git history: the last committed
version of the notebook whose English cell had the recorded hash.
"""

import argparse
import difflib
import hashlib
import subprocess
import sys
from pathlib import Path

import nbformat

from tools.course import NOTEBOOK_DIR, ROOT, lesson_files


def english_hash(text: str | list[str]) -> str:
    """The short hash a Chinese cell records of its English twin's source."""
    text = "".join(text) if isinstance(text, list) else text
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:12]


def pairs(notebook) -> list[tuple[int, int]]:
    """(English index, Chinese index) of each prose pair."""
    cells = notebook.cells
    return [
        (i, i + 1)
        for i, cell in enumerate(cells[:-1])
        if "lang-en" in cell.metadata.get("tags", []) and "lang-zh" in cells[i + 1].metadata.get("tags", [])
    ]


def stale_pairs(notebook) -> list[tuple[int, int]]:
    """Pairs whose Chinese cell records no hash, or the hash of other English text."""
    return [
        (en, zh)
        for en, zh in pairs(notebook)
        if notebook.cells[zh].metadata.get("en_sha") != english_hash(notebook.cells[en].source)
    ]


def accept(path: Path, index: int) -> None:
    """Record that the Chinese cell of the pair at `index` renders the English cell as it is now."""
    notebook = nbformat.read(path, as_version=4)
    for en, zh in pairs(notebook):
        if index in (en, zh):
            notebook.cells[zh].metadata["en_sha"] = english_hash(notebook.cells[en].source)
            nbformat.write(notebook, path)
            return
    raise SystemExit(f"cell {index} of {path.name} is not part of an English/Chinese pair")


def accept_all(path: Path) -> int:
    """Record every pair of a notebook; return how many changed."""
    notebook = nbformat.read(path, as_version=4)
    changed = 0
    for en, zh in pairs(notebook):
        digest = english_hash(notebook.cells[en].source)
        changed += notebook.cells[zh].metadata.get("en_sha") != digest
        notebook.cells[zh].metadata["en_sha"] = digest
    nbformat.write(notebook, path)
    return changed


def english_at(path: Path, digest: str) -> str | None:
    """The English text with this hash in the notebook's git history (following renames), if any."""
    log = subprocess.run(
        ["git", "log", "--follow", "--name-only", "--format=%H", "--", str(path.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    for commit, name in zip(log[::2], log[1::2], strict=False):
        shown = subprocess.run(["git", "show", f"{commit}:{name}"], cwd=ROOT, capture_output=True, text=True)
        if shown.returncode:
            continue
        for cell in nbformat.reads(shown.stdout, as_version=4).cells:
            if "lang-en" in cell.metadata.get("tags", []) and english_hash(cell.source) == digest:
                return cell.source
    return None


def report(paths: list[Path]) -> int:
    """Print every stale pair with the diff of its English text; return how many there are."""
    count = 0
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        for en, zh in stale_pairs(notebook):
            count += 1
            recorded = notebook.cells[zh].metadata.get("en_sha")
            print(f"{path.name}: English cell {en} changed; revise Chinese cell {zh}, then")
            print(f"    python -m tools.zh_sync --accept {path.relative_to(ROOT)} {zh}")
            before = english_at(path, recorded) if recorded else None
            if before is None:
                print("    (no earlier English text found: the pair was never recorded)")
                continue
            diff = difflib.unified_diff(before.splitlines(), notebook.cells[en].source.splitlines(), lineterm="", n=1)
            print("\n".join("    " + line for line in list(diff)[2:]))
    return count


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--accept", nargs=2, metavar=("NOTEBOOK", "CELL"))
    parser.add_argument("--accept-all", metavar="NOTEBOOK")
    args = parser.parse_args()
    if args.accept:
        accept(Path(args.accept[0]).resolve(), int(args.accept[1]))
    elif args.accept_all:
        print(f"{accept_all(Path(args.accept_all).resolve())} pair(s) recorded")
    else:
        stale = report(lesson_files(NOTEBOOK_DIR))
        print(f"{stale} stale pair(s)")
        sys.exit(1 if stale else 0)
