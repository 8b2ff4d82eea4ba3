"""Every course command, with or without make: `python3 tools/course.py TARGET [NAME=value ...]` (Windows:
`py tools\\course.py TARGET ...`) does what `make TARGET [NAME=value ...]` does; the Makefile only calls this file.

Standard library only, so it runs before the course's environment exists: every target first builds `.venv/` if it
is missing or older than pyproject.toml / constraints.txt (PyTorch's CPU build on Linux, everything else pinned by
constraints.txt), then runs its commands with the course's settings (one thread, a fixed hash seed). Settings come
from NAME=value arguments, else from the environment, else from the defaults `help` lists.

    python3 tools/course.py help            what `make help` prints
    python3 tools/course.py lab COURSE_LANG=zh LAB_ARGS="--no-browser --port 8890"
    python3 tools/course.py -n test         print the commands instead of running them
"""

from __future__ import annotations  # the version check below must run on an old Python, not fail to parse

import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePath

ROOT = Path(__file__).resolve().parent.parent
TORCH_VERSION = "2.13.0"  # the stored outputs come from this release; constraints.txt pins it
MATRIX_TORCH_VERSION = "2.14.1"  # the newest release pyproject.toml allows (make matrix)
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
VENV, MATRIX_VENV = ".venv", ".venv-matrix"
IS_WINDOWS = os.name == "nt"
SYSTEM = platform.system()  # "Linux", "Darwin", "Windows"

# --- The course model: what every tool and test means by a lesson, a cell's text and tags --------------------------
# The lessons never import it; the tools and the tests do (PASS_MARK, the self-check's pass line, and free_port live
# in companion, which the lessons use).
NOTEBOOK_DIR = ROOT / "notebooks"
COURSE_MAP = NOTEBOOK_DIR / "course.toml"
CHINESE_CHARACTERS = "\u3400-\u9fff\uf900-\ufaff"
CJK = re.compile(f"[{CHINESE_CHARACTERS}]")  # text holds Chinese (full-width punctuation alone may be quoted code)
CJK_PUNCTUATION = "\u3000-\u303f\uff00-\uffef"  # the full-width punctuation of Chinese text
CJK_RANGES = CHINESE_CHARACTERS + CJK_PUNCTUATION
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # a terminal colour code, as stored tracebacks hold them
CHECK_CALL = re.compile(r"\b(check_\w+)\s*\(")  # a self-check cell calls its checker: exercise -> checker


def lesson_files(folder: Path = NOTEBOOK_DIR) -> list[Path]:
    """The lesson notebooks in `folder` (the course's, a learner's workspace, a test's copy), in the course's order."""
    return sorted(folder.glob("[0-9][0-9]-*.ipynb"))


def course_map() -> list[dict]:
    """notebooks/course.toml's lessons: number, file, title, title_zh, requires, introduces, objectives."""
    import tomllib  # here, not at the top: this file must start (and say which Python it needs) on an old Python

    return tomllib.loads(COURSE_MAP.read_text(encoding="utf-8"))["lesson"]


def source(cell: dict) -> str:
    """A cell's source as one string (nbformat allows a list of lines)."""
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def exercise_tables() -> dict:
    """Every exercise of the EXERCISES tables (companion/checks/answers/, or beside a checker), by its checker's name:
    the one link from an exercise to its checker. It imports companion, and so torch, only when called: this module
    must run on a bare Python."""
    import importlib
    import pkgutil

    names = [
        f"companion.checks.{package}{info.name}"
        for package in ("", "answers.")
        for info in pkgutil.iter_modules(importlib.import_module(f"companion.checks.{package}".rstrip(".")).__path__)
        if info.name != "answers"
    ]
    return {
        exercise.check.__name__: exercise
        for name in names
        for exercise in getattr(importlib.import_module(name), "EXERCISES", [])
    }


def tags(cell: dict) -> set[str]:
    """A cell's tags."""
    return set(cell.get("metadata", {}).get("tags", []))


@dataclass(frozen=True)
class Env:
    """A virtual environment's folder and the paths inside it: Scripts\\python.exe on Windows, bin/python elsewhere."""

    folder: PurePath
    windows: bool = IS_WINDOWS

    @property
    def scripts(self) -> PurePath:
        return self.folder / ("Scripts" if self.windows else "bin")

    @property
    def python(self) -> PurePath:
        return self.scripts / ("python.exe" if self.windows else "python")

    @property
    def stamp(self) -> PurePath:
        """Written once the course is installed; older than pyproject.toml or constraints.txt means reinstall."""
        return self.folder / ".installed"

    @property
    def handout_stamp(self) -> PurePath:
        return self.folder / ".handout-installed"

    @property
    def constraints(self) -> PurePath:
        """constraints.txt without its torch line, so the TORCH_SPEC asked for stays installed."""
        return self.folder / "constraints-without-torch.txt"


def torch_defaults(system: str = SYSTEM) -> dict[str, str]:
    """On Linux, PyPI's torch is a multi-GB CUDA build; the CPU wheel from PyTorch's own index is what a laptop
    needs. macOS and Windows wheels on PyPI are already CPU (and MPS) builds."""
    if system == "Linux":
        return {
            "TORCH_SPEC": f"torch=={TORCH_VERSION}+cpu",
            "TORCH_INDEX": f"--extra-index-url {CPU_INDEX}",
            "MATRIX_TORCH_SPEC": f"torch=={MATRIX_TORCH_VERSION}+cpu",
        }
    return {
        "TORCH_SPEC": f"torch=={TORCH_VERSION}",
        "TORCH_INDEX": "",
        "MATRIX_TORCH_SPEC": f"torch=={MATRIX_TORCH_VERSION}",
    }


# Every setting a target reads, with what `help` says about it. Defaults that depend on the platform come from
# torch_defaults(); the others are here.
SETTINGS = {
    "COURSE_LANG": ("", "en, zh or both: the language of your workspace copies (remembered)"),
    "REFRESH": ("", "NN: replace lesson NN in your workspace with a fresh copy (yours backed up first)"),
    "WORKSPACE": ("workspace", "the folder of your copies"),
    "LAB_ARGS": ("", "options for Jupyter, e.g. a server or remote machine (see README)"),
    "PROGRESS_ARGS": ("", "options for progress, e.g. --strict (non-zero exit unless all passed)"),
    "WALKTHROUGH_ARGS": ("", "options for tools/walkthrough.py"),
    "MUTANTS_ARGS": ("", "more options for tools/mutants.py --full, e.g. --verbose"),
    "NB": ("", "one or more notebooks for execute and rerun (default: all)"),
    "PYTEST_WORKERS": ("2", "test processes for test, test-integration, handout, rerun, test-gpu, matrix"),
    "TORCH_SPEC": (None, "the torch to install (on a CUDA machine: torch==2.13.0 with TORCH_INDEX=)"),
    "TORCH_INDEX": (None, "pip options that find TORCH_SPEC (a mirror of PyTorch's index goes here)"),
    "MATRIX_TORCH_SPEC": (None, "the torch of make matrix"),
    "WHEELS": ("", "a folder of wheels: install offline from it (pip --no-index --find-links)"),
}

HELP = """\
Usage: make TARGET [NAME=value ...]   or, without make:   python3 tools/course.py TARGET [NAME=value ...]
       (Windows: py tools\\course.py TARGET ...). The first target you run builds .venv/ (about 1.5 GB).

For learners
  lab          open your copy of the course (workspace/, exercises to solve) in JupyterLab
               COURSE_LANG=en|zh|both (remembered); REFRESH=NN replaces one lesson, backing yours up
               LAB_ARGS="--no-browser --ServerApp.ip=0.0.0.0 --ServerApp.port=8890" on a server (see README)
  notebook     the same in Notebook 7; lab-teacher opens notebooks/ with the answers
  progress     your exercises: passed / wrong (with a hint) / not attempted; PROGRESS_ARGS=--strict
  test         the companion unit tests, the notebook conventions and nbval on every notebook
  test-integration  the tests that start JupyterLab, torchrun on two nodes and a progress run (CI runs both)
  venv         only build .venv/; WHEELS=folder installs offline from a folder of wheels
  wheels       download every wheel the course needs into WHEELS (default wheels/), for an offline machine

For authors
  rerun        every notebook (or NB=...) run twice in one kernel, both passes against the stored outputs
  test-gpu     the same as test on a CUDA machine, lessons computing on the GPU
  execute      re-execute every notebook (or NB=...) top to bottom (the only way stored outputs change), then
               build and run its Chinese edition (notebooks/zh/)
  lint         ruff over companion/, tests/, tools/ and notebooks/
  walkthrough  every lesson in JupyterLab in headless Chromium, Run All twice, screenshots in build/
  handout      HTML and PDF handouts (English, Chinese, bilingual; student and teacher) in handout/
  bench        time and memory of every notebook against the course targets
  matrix       the whole suite with the newest torch allowed, in .venv-matrix
  determinism  nbval with 1 and 2 threads, and with the plain (unvectorised) CPU kernels
  soak         20 DDP launches in a row
  hub          a class on this machine: JupyterHub, a private workspace per student (class/README.md)
  hub-stop     stop the class's hub
  class-progress  every student's exercises, judged as that student: HTML and CSV in class/data/
  test-hub     the hub end to end with three throw-away system users (root and Node.js; 1-2 minutes)
  mutants      every small rewrite of each exercise answer: does its self-check reject it? (under 95%: fails)
  browser      install Chromium and poppler for the handout where possible (apt-get as root)
  clean        remove .venv/, .venv-matrix/, build/, handout/
  help         this list

Settings (NAME=value, or the environment):
  COURSE_LANG, REFRESH, WORKSPACE (workspace), LAB_ARGS, PROGRESS_ARGS, WALKTHROUGH_ARGS, MUTANTS_ARGS,
  NB, PYTEST_WORKERS (2), TORCH_SPEC, TORCH_INDEX, MATRIX_TORCH_SPEC, WHEELS
  pip itself reads PIP_INDEX_URL (a mirror of PyPI) and pip.conf / pip.ini."""


def settings(assignments: list[str], environ: dict[str, str] | None = None, system: str = SYSTEM) -> dict[str, str]:
    """NAME=value arguments over the environment over the defaults, as make resolves `NAME ?= default`."""
    environ = os.environ if environ is None else environ
    defaults = torch_defaults(system)
    found = {
        name: environ.get(name, defaults.get(name) if default is None else default)
        for name, (default, _) in SETTINGS.items()
    }
    for assignment in assignments:
        name, sep, value = assignment.partition("=")
        if not sep or name not in SETTINGS:
            known = ", ".join(SETTINGS)
            raise SystemExit(f"{assignment!r} is not a setting; give NAME=value with NAME one of {known}")
        found[name] = value
    return found


# How stored outputs are made: each notebook run top to bottom in a fresh kernel, no timings kept (tools/zh_code.py
# runs the Chinese editions the same way).
EXECUTE = [
    "-m",
    "jupyter",
    "nbconvert",
    "--to",
    "notebook",
    "--execute",
    "--ExecutePreprocessor.kernel_name=python3",
    "--ExecutePreprocessor.record_timing=False",
    "--ExecutePreprocessor.timeout=300",
]


def run_env(environ: dict[str, str] | None = None, windows: bool = IS_WINDOWS, **extra: str) -> dict[str, str]:
    """One thread and a fixed hash seed: the stored outputs must come out the same on every machine."""
    env = dict(os.environ if environ is None else environ)
    env["OMP_NUM_THREADS"] = env.get("OMP_NUM_THREADS") or "1"
    env["PYTHONHASHSEED"] = "0"
    # Let Python keep the compiled companion, tests and tools (some images say otherwise): without it every kernel,
    # rank and test worker compiles companion again, about a second each.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if windows:
        env["PYTHONUTF8"] = "1"  # the lessons are UTF-8 (Chinese); Windows would otherwise read them as cp1252
    env.update(extra)
    return env


def course_command(windows: bool = IS_WINDOWS) -> str:
    """How a learner without make types this script."""
    return r"py tools\course.py" if windows else "python3 tools/course.py"


@dataclass
class Step:
    """One command (argv with its environment) or one action done in this process (`action`, described)."""

    argv: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    action: Callable[[], int | None] | None = None
    describe: str = ""

    def __str__(self) -> str:
        if self.action is not None:
            return self.describe
        shown = {k: v for k, v in (self.env or {}).items() if os.environ.get(k) != v and k != "PYTHONUTF8"}
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in shown.items())
        return (prefix + " " if prefix else "") + shlex.join(str(a) for a in self.argv)


class Course:
    """The steps of every target, for one set of settings on one platform."""

    def __init__(self, values: dict[str, str], root: Path = ROOT, windows: bool = IS_WINDOWS, via_make=False):
        self.s, self.root, self.windows, self.via_make = values, root, windows, via_make
        self.env = Env(root / VENV, windows)
        self.python = str(self.env.python)

    # --- helpers -------------------------------------------------------------------------------------------------
    def split(self, name: str) -> list[str]:
        return shlex.split(self.s[name])

    def pip_source(self) -> list[str]:
        """Offline from a folder of wheels, or pip's own index (PIP_INDEX_URL, pip.conf) plus TORCH_INDEX for torch."""
        if self.s["WHEELS"]:
            return ["--no-index", "--find-links", str(Path(self.s["WHEELS"]).expanduser().resolve())]
        return []

    def torch_index(self) -> list[str]:
        return [] if self.s["WHEELS"] else self.split("TORCH_INDEX")

    def stale(self, stamp: PurePath, *sources: PurePath) -> bool:
        stamp = Path(stamp)
        return not stamp.exists() or any(Path(s).stat().st_mtime > stamp.stat().st_mtime for s in sources)

    def touch(self, path: PurePath) -> Step:
        return Step(action=lambda: Path(path).touch(), describe=f"touch {path}")

    def write_constraints(self, target: PurePath) -> Step:
        def write() -> None:
            lines = (self.root / "constraints.txt").read_text(encoding="utf-8").splitlines(keepends=True)
            Path(target).write_text("".join(x for x in lines if not x.startswith("torch==")), encoding="utf-8")

        return Step(action=write, describe=f"constraints.txt without its torch line > {target}")

    def install(self, env: Env, torch_spec: str) -> list[Step]:
        """A fresh environment: venv, pip, torch alone (no deps, so only this lookup goes to TORCH_INDEX), the rest
        pinned by constraints.txt without its torch line, so the torch asked for stays."""
        py, source = str(env.python), self.pip_source()
        steps = [] if Path(env.python).exists() else [Step([sys.executable, "-m", "venv", str(env.folder)])]
        steps += [
            Step([py, "-m", "pip", "install", "--quiet", *source, "--upgrade", "pip"]),
            Step([py, "-m", "pip", "install", "--quiet", *source, "--no-deps", *self.torch_index(), torch_spec]),
        ]
        if env.folder == self.env.folder:
            steps.append(self.write_constraints(self.env.constraints))
        steps += [
            Step([py, "-m", "pip", "install", "--quiet", *source, "-c", str(self.env.constraints), "-e", ".[course]"]),
            Step([py, "-c", f"import torch; print('torch', torch.__version__, 'in {env.folder.name}')"], run_env()),
        ]
        return steps

    def venv(self) -> list[Step]:
        sources = (self.root / "pyproject.toml", self.root / "constraints.txt")
        if not self.stale(self.env.stamp, *sources):
            return []
        return [*self.install(self.env, self.s["TORCH_SPEC"]), self.touch(self.env.stamp)]

    def handout_extras(self) -> list[Step]:
        steps = self.venv()
        if steps or self.stale(self.env.handout_stamp, self.env.stamp):
            steps += [
                Step(
                    [
                        self.python,
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        *self.pip_source(),
                        "-c",
                        str(self.env.constraints),
                        "-e",
                        ".[course,handout]",
                    ]
                ),
                self.touch(self.env.handout_stamp),
            ]
        return steps

    def run(self, *args: str, **extra: str) -> Step:
        """A command in the course's environment with the course's settings."""
        return Step([self.python, *args], run_env(windows=self.windows, **extra))

    def nbval_args(self) -> list[str]:
        """Two workers, one file each (--dist loadfile): a notebook's cells must run in one kernel, in order; files
        in the order conftest.py gives them (longest first), not xdist's."""
        workers = ["-n", self.s["PYTEST_WORKERS"], "--dist", "loadfile", "--no-loadscope-reorder"]
        return ["-m", "pytest", *workers, "--nbval", "--nbval-current-env"]

    def suite(self, python: str | None = None, **extra: str) -> Step:
        """The whole `test` suite: the tests and nbval on every notebook."""
        args = [*self.nbval_args(), "tests", "notebooks"]
        return Step([python or self.python, *args], run_env(windows=self.windows, **extra))

    def workspace_args(self, target: str) -> list[str]:
        args = ["--workspace", self.s["WORKSPACE"]]
        if self.s["COURSE_LANG"]:
            args += ["--lang", self.s["COURSE_LANG"]]
        if self.s["REFRESH"]:
            args += ["--refresh", self.s["REFRESH"]]
        invoked = f"make {target}" if self.via_make else f"{course_command(self.windows)} {target}"
        return args + ["--command", invoked]

    def notebooks(self) -> list[str]:
        return self.split("NB") or [p.relative_to(self.root).as_posix() for p in lesson_files(self.root / "notebooks")]

    # --- targets -------------------------------------------------------------------------------------------------
    def target_venv(self) -> list[Step]:
        return self.venv()

    def target_lab(self) -> list[Step]:
        return self.venv() + [
            self.run("-m", "tools.workspace", "lab", *self.workspace_args("lab"), "--", *self.split("LAB_ARGS"))
        ]

    def target_notebook(self) -> list[Step]:
        return self.venv() + [
            self.run(
                "-m", "tools.workspace", "notebook", *self.workspace_args("notebook"), "--", *self.split("LAB_ARGS")
            )
        ]

    def target_lab_teacher(self) -> list[Step]:
        return self.venv() + [self.run("-m", "tools.workspace", "teacher", "--", *self.split("LAB_ARGS"))]

    def target_progress(self) -> list[Step]:
        """Runs each workspace lesson's exercises in a fresh kernel (never writing the learner's files)."""
        args = ["-m", "tools.progress", "--workspace", self.s["WORKSPACE"], *self.split("PROGRESS_ARGS")]
        return self.venv() + [self.run(*args)]

    def target_walkthrough(self) -> list[Step]:
        return (
            self.handout_extras()
            + self.target_browser()
            + [self.run("-m", "tools.walkthrough", *self.split("WALKTHROUGH_ARGS"))]
        )

    def target_test(self) -> list[Step]:
        return self.venv() + [self.suite()]

    def target_test_integration(self) -> list[Step]:
        """The tests that start real processes beyond a notebook's kernel (JupyterLab, torchrun on two nodes, a
        workspace's progress run); left out of `test` to keep it under two minutes, run by CI."""
        args = ["-m", "pytest", "-n", self.s["PYTEST_WORKERS"], "--dist", "loadfile", "-m", "integration", "tests"]
        return self.venv() + [self.run(*args)]

    def target_rerun(self) -> list[Step]:
        """Every notebook (or NB=...) run twice in one kernel, both passes compared with the stored outputs.
        Not part of `test` (it doubles the notebooks' time); CI's walkthrough runs every lesson twice in the Lab."""
        args = [*self.nbval_args(), "--rerun-notebooks", *(self.split("NB") or ["notebooks"])]
        return self.venv() + [self.run(*args)]

    def target_test_gpu(self) -> list[Step]:
        """On a CUDA machine, after `clean`: test-gpu TORCH_SPEC=torch==2.13.0 TORCH_INDEX= (PyPI's CUDA build).
        Lessons that call companion.devices.pick_device() then compute on the GPU; the outputs must not change."""
        hint = (
            f"No CUDA device visible to PyTorch. On a CUDA machine: make clean; make test-gpu "
            f"TORCH_SPEC=torch=={TORCH_VERSION} TORCH_INDEX="
        )
        check = f"import sys, torch; sys.exit(0 if torch.cuda.is_available() else {hint!r})"
        return self.venv() + [Step([self.python, "-c", check]), self.suite(COURSE_DEVICE="cuda")]

    def target_execute(self) -> list[Step]:
        notebooks = self.notebooks()
        return self.venv() + [
            self.run(*EXECUTE, "--inplace", *notebooks, COURSE_LANG="en"),  # the stored outputs: the English edition's
            Step([self.python, "-m", "tools.tidy_errors", *notebooks]),
            self.run("-m", "tools.zh_code", "build", *notebooks),  # and the Chinese edition, run in Chinese
        ]

    def target_lint(self) -> list[Step]:
        paths = ["companion", "tests", "tools", "notebooks", "class", "conftest.py"]
        return self.venv() + [
            Step([self.python, "-m", "ruff", "check", *paths]),
            Step([self.python, "-m", "ruff", "format", "--check", *paths]),
        ]

    def target_matrix(self) -> list[Step]:
        """The whole suite again in a second environment with the newest torch the course allows."""
        matrix = Env(self.root / MATRIX_VENV, self.windows)
        steps = self.venv() + self.install(matrix, self.s["MATRIX_TORCH_SPEC"])
        return steps + [self.suite(str(matrix.python))]

    def target_bench(self) -> list[Step]:
        return self.venv() + [self.run("-m", "tools.bench")]

    def target_determinism(self) -> list[Step]:
        """Outputs identical across thread counts and with PyTorch's plain CPU kernels: ATEN_CPU_CAPABILITY=default
        changes the last bits of seeded weights and sums as a CPU with another instruction set would."""
        nbval = ["-m", "pytest", "-q", "--nbval", "--nbval-current-env", "notebooks"]
        return self.venv() + [
            self.run(*nbval, OMP_NUM_THREADS="1"),
            self.run(*nbval, OMP_NUM_THREADS="2"),
            self.run(*nbval, OMP_NUM_THREADS="1", ATEN_CPU_CAPABILITY="default"),
        ]

    def target_soak(self) -> list[Step]:
        return self.venv() + [self.run("-m", "tools.soak", "--launches", "20")]

    def target_mutants(self) -> list[Step]:
        """Every mutant of every checker (--full, which exits 1 under 95% rejected); MUTANTS_ARGS adds options."""
        return self.venv() + [self.run("-m", "tools.mutants", "--full", *self.split("MUTANTS_ARGS"))]

    def target_hub(self) -> list[Step]:
        """A class on this machine: JupyterHub serving each student a private workspace (class/README.md)."""
        return self.venv() + [self.run("class/hub.py", "start")]

    def target_hub_stop(self) -> list[Step]:
        return self.venv() + [self.run("class/hub.py", "stop")]

    def target_class_progress(self) -> list[Step]:
        """Every student's exercises judged as that student, with time and memory limits: HTML and CSV."""
        return self.venv() + [self.run("class/hub.py", "progress", *self.split("PROGRESS_ARGS"))]

    def target_test_hub(self) -> list[Step]:
        """The hub end to end with three throw-away system users (root and Node.js needed; 1-2 minutes)."""
        # -s: the test's log (logins, workspaces, the isolation proof, the class table) goes into CI's output
        return self.venv() + [self.run("-m", "pytest", "-s", "-m", "hub", "tests/test_hub.py")]

    def target_browser(self) -> list[Step]:
        return [Step(action=browser, describe="Chromium and poppler-utils for the handout, installed where we can")]

    def target_handout(self) -> list[Step]:
        return (
            self.handout_extras()
            + self.target_browser()
            + [
                self.run("-m", "tools.handout", "--out", "handout"),
                self.run("-m", "pytest", "-n", self.s["PYTEST_WORKERS"], "-m", "handout", "tests/test_handout.py"),
            ]
        )

    def target_wheels(self) -> list[Step]:
        """Every wheel the course installs, into WHEELS (default wheels/), for `venv WHEELS=...` on a machine
        without a network. Run it on the same operating system with the same Python version."""
        folder = str(Path(self.s["WHEELS"] or "wheels").expanduser().resolve())
        constraints = Path(tempfile.gettempdir()) / "course-constraints-without-torch.txt"
        download = [sys.executable, "-m", "pip", "download", "--dest", folder]
        return [
            Step([*download, "--no-deps", *self.split("TORCH_INDEX"), self.s["TORCH_SPEC"]]),
            self.write_constraints(constraints),
            Step([*download, "-c", str(constraints), ".[course]", "pip", "setuptools>=77", "wheel"]),
        ]

    def target_clean(self) -> list[Step]:
        def clean() -> None:
            for name in [VENV, MATRIX_VENV, "build", "handout", *(p.name for p in self.root.glob("*.egg-info"))]:
                shutil.rmtree(self.root / name, ignore_errors=True)

        return [Step(action=clean, describe="remove .venv .venv-matrix build handout *.egg-info")]

    def target_help(self) -> list[Step]:
        return [Step(action=lambda: print(HELP), describe="print the help")]

    def steps(self, target: str) -> list[Step]:
        method = getattr(self, "target_" + target.replace("-", "_"), None)
        if method is None or target not in TARGETS:
            raise SystemExit(f"No target {target!r}. Targets: {', '.join(TARGETS)}")
        return method()


TARGETS = (
    "help",
    "venv",
    "wheels",
    "lab",
    "notebook",
    "lab-teacher",
    "progress",
    "test",
    "test-integration",
    "rerun",
    "test-gpu",
    "execute",
    "lint",
    "walkthrough",
    "handout",
    "bench",
    "matrix",
    "determinism",
    "soak",
    "mutants",
    "hub",
    "hub-stop",
    "class-progress",
    "test-hub",
    "browser",
    "clean",
)


def browser() -> None:
    """PDFs need Chromium; the handout checks need poppler's pdfinfo, pdftotext and pdftoppm."""
    if shutil.which("chromium") and shutil.which("pdftotext"):
        return
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        print("Installing Chromium and poppler-utils with apt-get ...", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        packages = ["chromium", "poppler-utils", "fonts-dejavu-core"]
        subprocess.run(["apt-get", "install", "-y", "-qq", *packages], env=env, check=True, stdout=subprocess.DEVNULL)
        return
    print("No Chromium/poppler found: the handout will be HTML only. For PDFs install them, e.g.")
    print("  sudo apt-get install chromium poppler-utils   (Debian/Ubuntu)")
    print("  brew install --cask chromium && brew install poppler   (macOS)")


def call(step: Step, root: Path = ROOT) -> int:
    """Run one command; Ctrl-C goes to it (Jupyter asks before it stops), not to this waiting process."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return subprocess.call(step.argv, cwd=root, env=step.env)
    finally:
        signal.signal(signal.SIGINT, previous)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    dry_run = via_make = False
    while argv and argv[0].startswith("-"):
        option = argv.pop(0)
        if option in ("-n", "--dry-run"):
            dry_run = True
        elif option == "--from-make":  # the Makefile's call: messages then name `make TARGET`
            via_make = True
        elif option in ("-h", "--help"):
            argv = ["help"]
        else:
            raise SystemExit(f"Unknown option {option!r}; `python3 tools/course.py help` lists the targets")
    target, assignments = (argv[0], argv[1:]) if argv else ("help", [])
    if IS_WINDOWS:
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")  # help and messages hold Chinese
    course = Course(settings(assignments), via_make=via_make)
    for step in course.steps(target):
        if dry_run:
            print(step)
            continue
        if target != "help":
            print(step, flush=True)
        code = step.action() if step.action is not None else call(step)
        if code:
            return code
    return 0


if __name__ == "__main__":
    if sys.version_info < (3, 11):  # noqa: UP036 (this file must say so on an old Python, not fail)
        sys.exit(
            f"Python 3.11+ is needed; this is {platform.python_version()}. Run this file with python3.11 or newer."
        )
    sys.exit(main())
