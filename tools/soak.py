"""Launch lesson 12's DDP script many times in a row: a soak test of the launcher and of the script's clean exit.

    python -m tools.soak --launches 20        (what `make soak` runs)

The script is the one notebooks/12-ddp.ipynb writes with %%writefile, taken from the notebook itself, so the soak
tests what learners run. Each launch trains on 2 ranks on the CPU; a launch counts as good when it exits cleanly
and every rank ends with the same parameters. Prints the count and the seconds per launch; exit status 1 if any
launch failed.
"""

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tools.course import ROOT

NOTEBOOK = ROOT / "notebooks" / "12-ddp.ipynb"
SCRIPT = "ddp/train.py"  # where the lesson writes it, relative to the notebook


def notebook_script(notebook: Path = NOTEBOOK, name: str = SCRIPT) -> str:
    """The source of the lesson's `%%writefile NAME` cell, without the magic line."""
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        first, _, body = source.partition("\n")
        if cell["cell_type"] == "code" and first.split() == ["%%writefile", name]:
            return body + "\n"
    raise LookupError(f"{notebook.name} has no cell that starts with `%%writefile {name}`")


def write_script(folder: Path, notebook: Path = NOTEBOOK) -> Path:
    """Write the lesson's script into `folder` (as the lesson does beside the notebook); return its path."""
    path = Path(folder) / Path(SCRIPT).name
    path.write_text(notebook_script(notebook), encoding="utf-8")
    return path


def soak(launches: int = 20, nproc: int = 2) -> tuple[list[float], list[str]]:
    """Launch the script `launches` times in a row: the seconds of each good launch, and each failure."""
    from companion.ddp_launch import LaunchError, launch  # imports torch: only when a soak runs

    if isinstance(launches, bool) or not isinstance(launches, int) or launches < 1:
        raise ValueError(f"launches must be a positive int such as 20, not {launches!r}")
    seconds, failures = [], []
    with tempfile.TemporaryDirectory(prefix="soak-") as folder:
        script = write_script(Path(folder))
        for _ in range(launches):
            try:
                results = launch(script, nproc=nproc, device="cpu")
            except LaunchError as error:
                failures.append(str(error))
                continue
            if any(r["parameters"] != results[0]["parameters"] for r in results):
                failures.append("the ranks ended with different parameters")
            else:
                seconds.append(results.seconds)
    return seconds, failures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=20)
    parser.add_argument("--nproc", type=int, default=2)
    args = parser.parse_args(argv)
    seconds, failures = soak(args.launches, args.nproc)
    print(f"{args.launches} launches of {args.nproc} ranks: {len(seconds)} good, {len(failures)} failed")
    if seconds:
        print(
            f"seconds per launch: min {min(seconds):.2f}, median {statistics.median(seconds):.2f}, "
            f"max {max(seconds):.2f}"
        )
    for failure in failures:
        print("failure:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
