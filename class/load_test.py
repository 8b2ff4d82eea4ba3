"""Capacity: N throw-away students log in and run lesson 03's code at the same time through their own kernels;
prints seconds and peak MiB (kernel) per student, and the server's MiB, first for one student alone.

    python3 class/load_test.py [--students 4] [--lesson 03-scatter.ipynb]     (root, Node.js; ~2 minutes)
"""

import argparse
import concurrent.futures
import csv
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the tools package and tests/test_hub.py: this file runs as a script
from tests.test_hub import HUB, PYTHON, Student, enterable_ancestors, free_port, hub  # noqa: E402
from tools.course import source  # noqa: E402


def lesson_cells(name: str) -> list[str]:
    """The lesson's code cells with the reference answers; a cell that shows an error on purpose catches it."""
    cells = []
    for cell in nbformat.read(ROOT / "notebooks" / name, 4).cells:
        if cell.cell_type == "code" and "raises-exception" in cell.metadata.get("tags", []):
            body = "".join(f"    {line}\n" for line in source(cell).splitlines())
            cells.append(f"try:\n{body}except Exception as error:\n    print(type(error).__name__)\n")
        elif cell.cell_type == "code":
            cells.append(source(cell))
    return cells


def server_mib(uid: int) -> float:
    done = subprocess.run(["ps", "-e", "-o", "uid=,rss=,args="], capture_output=True, text=True)
    rows = [line.split(None, 2) for line in done.stdout.splitlines()]
    return sum(int(r[1]) for r in rows if int(r[0]) == uid and "ipykernel" not in r[2]) / 1024


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument("--lesson", default="03-scatter.ipynb")
    args = parser.parse_args()
    code = lesson_cells(args.lesson) + [
        "import resource\nprint('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    ]
    tag = secrets.token_hex(2)
    names = [f"zzload{tag}{i}" for i in range(args.students)]
    data = Path(tempfile.mkdtemp(prefix="course-hub-load-", dir="/tmp"))
    env = {**os.environ, "COURSE_HUB_DATA": str(data)}
    roster = data / "load-roster.txt"
    roster.write_text("".join(f"{n} en\n" for n in names))
    port = free_port()
    with enterable_ancestors():
        try:
            hub(env, "add-users", str(roster), "--passwords", str(data / "pw.csv"))
            secret = dict(list(csv.reader((data / "pw.csv").read_text().splitlines()))[1:])
            hub(env, "start", "--port", str(port))
            students = [Student(f"http://127.0.0.1:{port}", n, secret[n]) for n in names]
            for s in students:
                s.login()

            def run(student):
                started = time.monotonic()
                result = student.run_code(code)
                assert result["error"] is None, result["error"]
                peak = float(result["out"].split("PEAK")[-1].split()[0])
                return time.monotonic() - started, peak, server_mib(pwd.getpwnam(student.name).pw_uid)

            alone = run(students[0])
            print(f"1 student alone: {alone[0]:.1f} s, kernel peak {alone[1]:.0f} MiB, server {alone[2]:.0f} MiB")
            with concurrent.futures.ThreadPoolExecutor(len(students)) as pool:
                together = list(pool.map(run, students))
            for name, (seconds, peak, server) in zip(names, together, strict=True):
                at_once = f"{len(students)} at once, {name}"
                print(f"{at_once}: {seconds:.1f} s, kernel peak {peak:.0f} MiB, server {server:.0f} MiB")
            for s in students:
                s.session.close()
        finally:
            subprocess.run([str(PYTHON), str(HUB), "stop"], env=env, capture_output=True)
            subprocess.run([str(PYTHON), str(HUB), "remove-users", str(roster)], env=env, capture_output=True)
            subprocess.run([str(PYTHON), str(HUB), "unlock"], env=env, capture_output=True)
            shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
