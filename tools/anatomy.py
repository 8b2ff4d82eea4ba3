"""What `companion/` is made of: per module, non-blank lines of taught (reference) code, argument validation,
exercise checkers, plots and launch plumbing.

    python -m tools.anatomy            # the working tree
    python -m tools.anatomy --at REV   # any commit, e.g. 0fa5322 (read with `git show`)

How a line is classified (Python's `ast`, non-blank lines only):
- checkers: everything in companion/checks/, `check_*` functions, and private helpers only checkers call;
- plots: `plot_*` functions and private helpers only plots call;
- plumbing: process launching and command-line code (companion/ddp_launch.py, `main`, `parse_args`, `spawn_worker`);
- validation: guard functions (`_check_*`, `require_*`, `_require*`, companion/_validate.py) and, inside any other
  function, each `if ...: raise ...` statement;
- reference: the rest, docstrings and imports included: the code a learner came for.
"""

import argparse
import ast
import subprocess
from collections import Counter

from tools.course import ROOT

KINDS = ("reference", "validation", "checkers", "plots", "plumbing")
PLUMBING = {"main", "parse_args", "spawn_worker", "write_json"}


def sources(rev: str | None) -> dict[str, str]:
    """companion/**.py as {relative path: text}, from the working tree or from a commit."""
    if rev is None:
        return {
            str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted((ROOT / "companion").rglob("*.py"))
        }
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, "companion"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return {
        name: subprocess.run(
            ["git", "show", f"{rev}:{name}"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        for name in names
        if name.endswith(".py")
    }


def callers(tree: ast.Module) -> dict[str, set[str]]:
    """For each top-level function or class name, the top-level definitions that mention it."""
    definitions = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    found: dict[str, set[str]] = {n.name: set() for n in definitions}
    for node in definitions:
        for name in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & found.keys():
            if name != node.name:
                found[name].add(node.name)
    return found


def kind_of(name: str, path: str, used_by: dict[str, set[str]], memo: dict[str, str]) -> str:
    """The kind of one top-level definition (see the module docstring)."""
    if name in memo:
        return memo[name]
    memo[name] = "reference"  # provisional, breaks cycles
    users = used_by.get(name, set())
    user_kinds = {kind_of(user, path, used_by, memo) for user in users} if name.startswith("_") else set()
    if "/checks/" in path or name.startswith("check_"):
        kind = "checkers"
    elif name.startswith("plot_"):
        kind = "plots"
    elif path.endswith("ddp_launch.py") or name in PLUMBING:
        kind = "plumbing"
    elif len(user_kinds) == 1 and user_kinds & {"checkers", "plots", "plumbing"}:
        kind = user_kinds.pop()  # a private helper of checkers (or plots, or plumbing) only
    elif path.endswith("_validate.py") or name.startswith(("_check_", "require_", "_require")):
        kind = "validation"
    else:
        kind = "reference"
    memo[name] = kind
    return kind


def line_span(node: ast.AST) -> set[int]:
    return set(range(node.lineno, node.end_lineno + 1))


def classify(path: str, text: str) -> Counter:
    """Non-blank lines of one module by kind."""
    tree = ast.parse(text)
    lines = text.splitlines()
    kinds: dict[int, str] = {}
    used_by, memo = callers(tree), {}
    module_kind = "checkers" if "/checks/" in path else "plumbing" if path.endswith("ddp_launch.py") else "reference"
    for node in tree.body:
        kind = module_kind
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            kind = kind_of(node.name, path, used_by, memo)
        for line in line_span(node):
            kinds[line] = kind
        if kind == "reference" and isinstance(node, ast.FunctionDef | ast.ClassDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.If) and any(isinstance(s, ast.Raise) for s in inner.body) and not inner.orelse:
                    for line in line_span(inner):
                        kinds[line] = "validation"
    counts = Counter()
    for number, line in enumerate(lines, start=1):
        if line.strip():
            counts[kinds.get(number, module_kind)] += 1
    return counts


def table(rev: str | None) -> str:
    """A markdown table: one row per module and a total."""
    rows = ["| module | lines | " + " | ".join(KINDS) + " |", "| --- " * (len(KINDS) + 2) + "|"]
    total = Counter()
    for path, text in sources(rev).items():
        counts = classify(path, text)
        total += counts
        rows.append(
            f"| {path.removeprefix('companion/')} | {sum(counts.values())} | "
            + " | ".join(str(counts[k]) for k in KINDS)
            + " |"
        )
    whole = sum(total.values())
    rows.append(
        f"| **all** | {whole} | " + " | ".join(f"{total[k]} ({100 * total[k] / whole:.0f}%)" for k in KINDS) + " |"
    )
    return "\n".join(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--at", metavar="REV", help="measure a commit instead of the working tree")
    print(table(parser.parse_args().at))
