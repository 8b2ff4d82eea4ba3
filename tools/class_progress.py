"""The teacher's class report: every student's exercises judged by the course's own checkers, one table.

    python -m tools.class_progress --roster class/data/roster.txt [--out DIR] [--timeout 300] [--memory-mib 4096]
                                   [--jobs N] [LESSON ...]                        (make class-progress, as root)

For each student on the roster (teachers aside) and each lesson of ~student/workspace/ they answered, a child
process runs *as that student* (setuid), with a time limit (the lesson, killed with its process group) and an
address-space limit (RLIMIT_AS). The child builds the lesson from the course's stubbed copy (class/data/course/, no
answers in it) with only the student's answer cells put in, runs it in an IPython shell in a temporary folder, and
after each answer calls the course's checker itself, freshly imported from companion/checks, on the student's
function. The student's self-check cells never run and nothing they print is read: a check cell replaced by
`print("✓ Correct / 正确")` changes nothing. Verdicts come back on a pipe of their own, one JSON line per exercise.
The report reads student files only inside those children, so it changes no student file and follows no
student's link as root.

Writes class-progress.html and class-progress.csv in --out: student x exercise (passed / wrong with the hint /
not attempted / timed out / out of memory), the pass rate of each exercise and, for each, the hints the class got
most (which mistake the class makes).

Not proof against a student who writes code in an answer cell to subvert the checker inside their own process
(monkeypatching torch): answer cells that touch the checkers, sys.modules or the process are marked "review".
"""

import argparse
import concurrent.futures
import csv
import html
import importlib
import json
import os
import pwd
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent

PASSED, WRONG, NOT_ATTEMPTED, TIMED_OUT, OUT_OF_MEMORY = (
    "passed",
    "wrong",
    "not attempted",
    "timed out",
    "out of memory",
)
LABELS = {
    PASSED: "passed / 通过",
    WRONG: "wrong / 有误",
    NOT_ATTEMPTED: "not attempted / 未作答",
    TIMED_OUT: "timed out / 超时",
    OUT_OF_MEMORY: "out of memory / 内存不足",
}
COLOURS = {
    PASSED: "#c8e6c9",
    WRONG: "#ffcdd2",
    NOT_ATTEMPTED: "#eeeeee",
    TIMED_OUT: "#ffe0b2",
    OUT_OF_MEMORY: "#e1bee7",
}
OOM_WORDS = ("can't allocate memory", "not enough memory", "std::bad_alloc", "DefaultCPUAllocator", "Cannot allocate")
SUSPICIOUS = re.compile(r"\b(companion|sys\.modules|builtins|__builtins__|os\.write|gc\.|inspect\.|ctypes|settrace)\b")


@dataclass
class Verdict:
    student: str
    lesson: str
    exercise: str
    status: str
    hint: str = ""
    review: str = ""


@dataclass
class Exercise:
    lesson: str  # "03-scatter"
    name: str  # "inverse_permutation"
    solution: int  # cell indexes in the course's copy
    check: int

    @property
    def key(self) -> str:
        return f"{self.lesson[:2]}/{self.name}"


@dataclass
class Lesson:
    path: Path
    exercises: list[Exercise] = field(default_factory=list)


# The course's exercises ---------------------------------------------------------------------------------------------


def course_lessons(course: Path, wanted: list[str] | None = None) -> list[Lesson]:
    import nbformat

    from tools.course import lesson_files
    from tools.lesson_copies import check_name, exercises

    lessons = []
    for path in lesson_files(course):
        if wanted and not any(path.name == w or path.name.startswith(f"{w}-") for w in wanted):
            continue
        notebook = nbformat.read(path, as_version=4)
        found = [
            Exercise(path.stem, check_name(notebook.cells[c]).removeprefix("check_") or "exercise", s, c)
            for s, c in exercises(notebook)
        ]
        if found:
            lessons.append(Lesson(path, found))
    return lessons


# The child: one lesson of one student, run as that student --------------------------------------------------------


def oom(text: str) -> bool:
    return any(word in text for word in OOM_WORDS)


def judge_lesson(course_path: Path, student_path: Path, result_fd: int, cell_timeout: float) -> int:
    """Run as the student. Emit one JSON line per exercise on `result_fd`."""
    import importlib

    import nbformat

    from tools.course import ANSI, source
    from tools.lesson_copies import check_name, exercises, is_solution, is_unanswered

    out = os.fdopen(result_fd, "w", buffering=1)

    def emit(exercise: str, status: str, hint: str = "", review: str = "") -> None:
        out.write(json.dumps({"exercise": exercise, "status": status, "hint": hint, "review": review}) + "\n")

    course = nbformat.read(course_path, as_version=4)
    found = exercises(course)
    names = [check_name(course.cells[c]).removeprefix("check_") or "exercise" for _, c in found]
    try:
        mine = nbformat.read(student_path, as_version=4)
        answers = [source(cell) for cell in mine.cells if is_solution(cell)]
    except Exception as error:  # missing, unreadable (a link to someone else's file), broken JSON
        for name in names:
            emit(name, NOT_ATTEMPTED, f"Your copy of the lesson could not be read / 无法读取你的副本: {error}")
        return 0
    answers += [""] * (len(found) - len(answers))
    if all(is_unanswered(a) or not a.strip() for a in answers[: len(found)]):
        for name in names:
            emit(name, NOT_ATTEMPTED)
        return 0

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.showtraceback = lambda *a, **k: None  # errors are read from the result, not printed
    shell.showsyntaxerror = lambda *a, **k: None

    def alarm(signum, frame):
        raise TimeoutError(f"cell ran over {cell_timeout:g} s")

    signal.signal(signal.SIGALRM, alarm)

    def run(source: str):
        signal.alarm(int(cell_timeout))
        try:
            return shell.run_cell(source, store_history=False, silent=False)
        finally:
            signal.alarm(0)

    solution_of = {s: i for i, (s, _) in enumerate(found)}
    check_of = {c: i for i, (_, c) in enumerate(found)}
    last = found[-1][1]
    for index, cell in enumerate(course.cells[: last + 1]):
        if cell.cell_type != "code":
            continue
        if index in solution_of:
            number = solution_of[index]
            answer = answers[number]
            if is_unanswered(answer) or not answer.strip():
                answers[number] = None  # judged "not attempted" at its check
                run(source(cell))  # the stub: later exercises may import from it
                continue
            result = run(answer)
            error = result.error_in_exec or result.error_before_exec
            if error is not None:
                answers[number] = error  # judged at its check: the answer cell raised
            continue
        if index in check_of:
            number = check_of[index]
            name, answer = names[number], answers[number]
            review = ""
            if isinstance(answer, str) and SUSPICIOUS.search(answer):
                review = f"answer cell uses {SUSPICIOUS.search(answer).group(0)}: review by hand / 请人工复核"
            if answer is None:
                emit(name, NOT_ATTEMPTED)
                continue
            if isinstance(answer, BaseException):
                text = f"{type(answer).__name__}: {answer}"
                status = (
                    TIMED_OUT
                    if isinstance(answer, TimeoutError)
                    else OUT_OF_MEMORY
                    if oom(text) or isinstance(answer, MemoryError)
                    else WRONG
                )
                emit(name, status, "Your answer cell raised / 你的答案单元格出错: " + ANSI.sub("", text)[:500], review)
                continue
            # The course's checker, from the course's files, on the student's function: the modules are dropped
            # first, so what the student's cells did to them (a replaced check_...) is gone.
            for module in [m for m in sys.modules if m == "companion" or m.startswith("companion.")]:
                del sys.modules[module]
            importlib.invalidate_caches()
            result = run(source(cell))
            error = result.error_in_exec or result.error_before_exec
            if error is None:
                emit(name, PASSED, "", review)
            elif type(error).__name__ == "WrongAnswer":
                emit(name, WRONG, ANSI.sub("", str(error)).strip(), review)
            elif type(error).__name__ == "NotImplementedError":
                emit(name, NOT_ATTEMPTED, "", review)
            elif isinstance(error, TimeoutError):
                emit(
                    name, TIMED_OUT, f"Stopped after {cell_timeout:g} s: does your answer loop forever? / 超时", review
                )
            elif isinstance(error, MemoryError) or oom(str(error)):
                emit(name, OUT_OF_MEMORY, ANSI.sub("", f"{type(error).__name__}: {error}")[:500], review)
            else:
                emit(
                    name,
                    WRONG,
                    "The self-check stopped with / 自检出错: " + ANSI.sub("", f"{type(error).__name__}: {error}")[:500],
                    review,
                )
            continue
        run(source(cell))
    return 0


# The parent: every student, every lesson ----------------------------------------------------------------------------


def run_as_student(
    student: str, lesson: Lesson, workspace: Path, python: str, timeout: float, memory: int, cell_timeout: float
) -> list[Verdict]:
    account = pwd.getpwnam(student)
    read, write = os.pipe()
    scratch = tempfile.mkdtemp(prefix=f"class-progress-{student}-")
    os.chown(scratch, account.pw_uid, account.pw_gid)
    os.chmod(scratch, 0o700)
    env = {
        "HOME": scratch,  # caches and config the lesson writes go here, not into the student's home
        "USER": student,
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": scratch,
        "PYTHONDONTWRITEBYTECODE": "1",
        "COURSE_HUB_DATA": os.environ.get("COURSE_HUB_DATA", ""),
        "PYTHONPATH": str(ROOT),  # this script imports the tools package; the student's python is not the project's
    }
    command = [
        python,
        str(Path(__file__).resolve()),
        "--judge",
        str(lesson.path),
        str(workspace / lesson.path.name),
        "--result-fd",
        str(write),
        "--cell-timeout",
        str(cell_timeout),
    ]

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    started = time.monotonic()
    process = subprocess.Popen(
        command,
        user=account.pw_uid,
        group=account.pw_gid,
        extra_groups=[],
        cwd=scratch,
        env=env,
        pass_fds=(write,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=limits,
    )
    os.close(write)
    timed_out = False
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(process.pid, signal.SIGKILL)
        _, stderr = process.communicate()
    with os.fdopen(read) as results:
        lines = results.read().splitlines()
    try:
        os.killpg(process.pid, signal.SIGKILL)  # anything the lesson left running (DataLoader workers, ranks)
    except ProcessLookupError:
        pass
    shutil.rmtree(scratch, ignore_errors=True)
    seen: dict[str, Verdict] = {}
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if item.get("exercise") in seen:
            continue  # the first verdict of an exercise stands
        seen[item["exercise"]] = Verdict(
            student, lesson.path.stem, item["exercise"], item["status"], item.get("hint", ""), item.get("review", "")
        )
    verdicts = []
    for exercise in lesson.exercises:
        if exercise.name in seen:
            verdicts.append(seen[exercise.name])
        elif timed_out:
            verdicts.append(
                Verdict(
                    student,
                    lesson.path.stem,
                    exercise.name,
                    TIMED_OUT,
                    f"The lesson ran over {timeout:g} s / 本课运行超过 {timeout:g} 秒",
                )
            )
        else:
            tail = (stderr or b"").decode(errors="replace").strip().splitlines()[-1:] or [""]
            status = OUT_OF_MEMORY if process.returncode < 0 or oom(tail[0]) or "MemoryError" in tail[0] else WRONG
            verdicts.append(
                Verdict(
                    student,
                    lesson.path.stem,
                    exercise.name,
                    status,
                    f"The run stopped (exit {process.returncode}): {tail[0][:300]}",
                )
            )
    elapsed = time.monotonic() - started
    print(f"  {student} {lesson.path.stem}: {', '.join(v.status for v in verdicts)} ({elapsed:.1f} s)", flush=True)
    return verdicts


def class_report(
    students: list[str], lessons: list[Lesson], python: str, timeout: float, memory: int, cell_timeout: float, jobs: int
) -> list[Verdict]:
    tasks = []
    verdicts: list[Verdict] = []
    for student in students:
        try:
            home = Path(pwd.getpwnam(student).pw_dir)
        except KeyError:
            verdicts += [
                Verdict(student, e.lesson, e.name, NOT_ATTEMPTED, "no such system user")
                for ls in lessons
                for e in ls.exercises
            ]
            continue
        for lesson in lessons:
            tasks.append((student, lesson, home / "workspace"))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_as_student, s, ls, w, python, timeout, memory, cell_timeout) for s, ls, w in tasks]
        for future in futures:
            verdicts += future.result()
    return verdicts


# The table ------------------------------------------------------------------------------------------------------


def first_line(hint: str) -> str:
    return hint.strip().splitlines()[0] if hint.strip() else ""


def write_report(verdicts: list[Verdict], lessons: list[Lesson], students: list[str], out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    keys = [e.key for ls in lessons for e in ls.exercises]
    cell = {(v.student, f"{v.lesson[:2]}/{v.exercise}"): v for v in verdicts}
    rates = {}
    for key in keys:
        got = [cell[(s, key)] for s in students if (s, key) in cell]
        rates[key] = (sum(v.status == PASSED for v in got), len(got))

    csv_path = out / "class-progress.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", *keys])
        for student in students:
            row = []
            for key in keys:
                v = cell.get((student, key))
                text = (
                    "" if v is None else v.status + (f": {first_line(v.hint)}" if v.hint and v.status != PASSED else "")
                )
                row.append(text + (f" [review: {v.review}]" if v and v.review else ""))
            writer.writerow([student, *row])
        writer.writerow(["pass rate", *[f"{p}/{n}" for p, n in (rates[k] for k in keys)]])

    head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
    rows = []
    for student in students:
        cells = []
        for key in keys:
            v = cell.get((student, key))
            if v is None:
                cells.append("<td></td>")
                continue
            title = html.escape(v.hint or LABELS[v.status], quote=True)
            mark = " ⚠" if v.review else ""
            cells.append(f'<td style="background:{COLOURS[v.status]}" title="{title}">{LABELS[v.status]}{mark}</td>')
        rows.append(f"<tr><th>{html.escape(student)}</th>{''.join(cells)}</tr>")
    rate_cells = "".join(f"<td>{p}/{n} ({100 * p / n:.0f}%)</td>" if n else "<td>—</td>" for p, n in rates.values())
    mistakes = []
    for key in keys:
        hints = Counter(first_line(v.hint) for (s, k), v in cell.items() if k == key and v.status == WRONG)
        if hints:
            items = "".join(f"<li>{n} × {html.escape(h)}</li>" for h, n in hints.most_common())
            mistakes.append(f"<h3>{html.escape(key)}</h3><ul>{items}</ul>")
    details = "".join(
        f"<li><b>{html.escape(v.student)}</b> {html.escape(v.lesson[:2] + '/' + v.exercise)}: {html.escape(v.status)}"
        f"<pre>{html.escape(v.hint)}</pre>{html.escape(v.review)}</li>"
        for v in verdicts
        if v.hint or v.review
    )
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Class progress / 班级进度</title>
<style>body{{font-family:sans-serif}}table{{border-collapse:collapse}}td,th{{border:1px solid #999;padding:3px 6px;
font-size:90%}}pre{{white-space:pre-wrap;margin:2px 0 8px 1em}}</style></head><body>
<h1>Class progress / 班级进度</h1><p>{time.strftime("%Y-%m-%d %H:%M")} · {len(students)} students / 名学生 ·
judged by the course's checkers, each run as its student / 由课程的检查函数评判，以各学生身份运行</p>
<table><tr><th>student / 学生</th>{head}</tr>{"".join(rows)}<tr><th>pass rate / 通过率</th>{rate_cells}</tr></table>
<h2>The class's mistakes / 全班的常见错误</h2>{"".join(mistakes) or "<p>none / 无</p>"}
<h2>Every hint / 全部提示</h2><ul>{details}</ul></body></html>
"""
    html_path = out / "class-progress.html"
    html_path.write_text(page, encoding="utf-8")
    return html_path, csv_path


def text_table(verdicts: list[Verdict]) -> str:
    lines = []
    for v in verdicts:
        if v.status != NOT_ATTEMPTED or v.hint:
            lines.append(
                f"{v.student:<12} {v.lesson[:2]}/{v.exercise:<28} {v.status}"
                + (f": {first_line(v.hint)}" if v.hint and v.status != PASSED else "")
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lessons", nargs="*", help="lesson numbers or file names (default: every lesson)")
    parser.add_argument("--roster", type=Path, help="class/data/roster.txt (teachers are not judged)")
    parser.add_argument("--students", help="comma-separated logins instead of the roster")
    parser.add_argument("--course", type=Path, help="the stubbed course (default: class/data/course, staged)")
    parser.add_argument("--out", type=Path, default=ROOT / "class" / "data" / "reports")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per student and lesson (default 600)")
    parser.add_argument("--cell-timeout", type=float, default=120, help="seconds per cell (default 120)")
    parser.add_argument("--memory-mib", type=int, default=6144, help="address space per student run (default 6144)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    parser.add_argument(
        "--judge", nargs=2, type=Path, metavar=("COURSE_LESSON", "STUDENT_LESSON"), help=argparse.SUPPRESS
    )
    parser.add_argument("--result-fd", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.judge:
        return judge_lesson(args.judge[0], args.judge[1], args.result_fd, args.cell_timeout)

    hub = importlib.import_module("class.hub")  # class/hub.py ("class" is a keyword, so no import statement)

    if os.geteuid() != 0:
        raise SystemExit("Run as root: each student's exercises run as that student.")
    if args.students:
        students = [s for s in args.students.split(",") if s]
    elif args.roster and args.roster.exists():
        students = [m.name for m in hub.read_roster(args.roster) if not m.teacher]
    else:
        raise SystemExit("Give --roster (class/data/roster.txt, made by class/hub.py add-users) or --students.")
    course = args.course or hub.stage()
    python = str(hub.ensure_student_python())
    lessons = course_lessons(course, args.lessons)
    print(f"Judging {len(students)} students, {sum(len(ls.exercises) for ls in lessons)} exercises ...", flush=True)
    verdicts = class_report(
        students, lessons, python, args.timeout, args.memory_mib * 2**20, args.cell_timeout, args.jobs
    )
    html_path, csv_path = write_report(verdicts, lessons, students, args.out)
    print(text_table(verdicts))
    print(f"Report / 报告: {html_path}\n              {csv_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
