"""Command line: `python -m tools.handout [--out DIR] [--no-pdf]` builds the handouts and prints what was made."""

import argparse
import json
import sys
from pathlib import Path

from tools import handout
from tools.course import ROOT
from tools.handout.book import build
from tools.handout.printing import find_chromium


def main(argv: list[str] | None = None) -> int:
    """Build the handouts (PDFs when a Chromium is found) and print a summary."""
    parser = argparse.ArgumentParser(prog="python -m tools.handout", description=handout.__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "handout", help="output folder (replaced)")
    parser.add_argument("--no-pdf", action="store_true", help="build HTML only")
    args = parser.parse_args(argv)
    chromium = None if args.no_pdf else find_chromium()
    summary = build(args.out, chromium=chromium)
    size_mb = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file()) / 1e6
    print(json.dumps({**summary, "size_mb": round(size_mb, 1), "out": str(args.out)}))
    if chromium is None and not args.no_pdf:
        print(
            "No Chromium found, so only HTML was built. For PDFs install Chromium "
            "(Debian/Ubuntu: apt-get install chromium) and run `make handout` again.",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
