"""tools/course.py, the one entry point `make` calls: paths on Windows and POSIX (the platform faked), settings and
their quoting, make passing them through, `make help` equal to `python tools/course.py help`, and (marked
fresh_clone, not part of `make test`) `python3 tools/course.py test` in a fresh clone with no make on PATH.

Nothing here runs on Windows: the Windows paths, the Windows torch defaults and the commands a Windows learner is told
to type are checked as strings; that the commands work there is not proven."""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest

from tools import course
from tools.course import HELP, ROOT, SETTINGS, TARGETS, Course, Env, course_command, run_env, settings

MAKE = shutil.which("make")
needs_make = pytest.mark.skipif(MAKE is None, reason="make is not installed")


def dry_run(*args: str, env: dict[str, str] | None = None) -> str:
    command = [sys.executable, "tools/course.py", "-n", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True, env=env).stdout


def make_env() -> dict[str, str]:
    """The environment without what an enclosing make (make test) or the learner's shell would add."""
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS and not k.startswith("MAKE")}
    return {**env, "PYTHON": sys.executable}


def test_environment_paths_on_windows_and_posix():
    windows = Env(PureWindowsPath(r"C:\Users\ada\course\.venv"), windows=True)
    assert str(windows.python) == r"C:\Users\ada\course\.venv\Scripts\python.exe"
    assert str(windows.stamp) == r"C:\Users\ada\course\.venv\.installed"
    assert str(windows.constraints) == r"C:\Users\ada\course\.venv\constraints-without-torch.txt"
    posix = Env(PurePosixPath("/home/ada/course/.venv"), windows=False)
    assert str(posix.python) == "/home/ada/course/.venv/bin/python"
    assert str(posix.scripts) == "/home/ada/course/.venv/bin"


def test_every_command_runs_the_environments_python_on_a_faked_windows():
    fake = Course(settings([], {}, "Windows"), root=ROOT, windows=True)
    pythons = {str(ROOT / name / "Scripts" / "python.exe") for name in (".venv", ".venv-matrix")}
    pythons.add(sys.executable)  # the one that creates an environment
    for target in TARGETS:
        for step in fake.steps(target):
            assert not step.argv or step.argv[0] in pythons, (target, step.argv)
    assert fake.s["TORCH_SPEC"] == "torch==2.13.0" and fake.s["TORCH_INDEX"] == "", (
        "PyPI's Windows torch is a CPU build"
    )
    assert run_env({}, windows=True)["PYTHONUTF8"] == "1", "the lessons are UTF-8 (Chinese), not cp1252"
    assert "PYTHONUTF8" not in run_env({}, windows=False)
    assert course_command(True) == r"py tools\course.py" and course_command(False) == "python3 tools/course.py"
    lab = fake.steps("lab")[-1].argv
    assert lab[lab.index("--command") + 1] == r"py tools\course.py lab", "a Windows learner is told the py form"


def test_linux_gets_the_cpu_build_and_macos_pypis():
    linux, mac = settings([], {}, "Linux"), settings([], {}, "Darwin")
    assert linux["TORCH_SPEC"] == "torch==2.13.0+cpu" and linux["MATRIX_TORCH_SPEC"] == "torch==2.14.1+cpu"
    assert linux["TORCH_INDEX"] == "--extra-index-url https://download.pytorch.org/whl/cpu"
    assert mac["TORCH_SPEC"] == "torch==2.13.0" and mac["TORCH_INDEX"] == ""


def test_settings_come_from_arguments_then_the_environment_then_the_defaults():
    environ = {"WORKSPACE": "mine", "COURSE_LANG": "zh", "PATH": "/bin"}
    found = settings(["COURSE_LANG=en", "TORCH_INDEX="], environ, "Linux")
    assert found["COURSE_LANG"] == "en" and found["WORKSPACE"] == "mine" and found["PYTEST_WORKERS"] == "2"
    assert found["TORCH_INDEX"] == "", "an empty value given on purpose (a CUDA machine) stays empty"
    with pytest.raises(SystemExit, match="not a setting"):
        settings(["LAB_ARG=--no-browser"], {}, "Linux")
    with pytest.raises(SystemExit, match="No target"):
        Course(found).steps("labb")


def test_lab_args_reach_jupyter_as_separate_arguments():
    values = settings(["LAB_ARGS=--no-browser --ServerApp.ip=0.0.0.0 --IdentityProvider.token='a b'", "REFRESH=03"], {})
    step = Course(values).steps("lab")[-1]
    assert step.argv[step.argv.index("--") :] == [
        "--",
        "--no-browser",
        "--ServerApp.ip=0.0.0.0",
        "--IdentityProvider.token=a b",
    ]
    assert step.argv[step.argv.index("--refresh") + 1] == "03"
    assert step.env["OMP_NUM_THREADS"] and step.env["PYTHONHASHSEED"] == "0"
    notebook = Course(values, via_make=True).steps("notebook")[-1].argv
    assert notebook[notebook.index("--command") + 1] == "make notebook", "messages name the target they came from"


def test_a_folder_of_wheels_installs_offline(tmp_path):
    offline = Course(settings([f"WHEELS={tmp_path}"], {}, "Linux"), root=ROOT, windows=False)
    offline.env = Env(tmp_path / "venv", windows=False)  # a missing environment: every install step is planned
    pip = [step.argv for step in offline.steps("venv") if "pip" in step.argv]
    assert len(pip) == 3 and all(["--no-index", "--find-links", str(tmp_path)] == a[5:8] for a in pip), pip
    assert not any("--extra-index-url" in a for a in pip), "no index is asked when installing offline"
    download = [step.argv for step in offline.steps("wheels") if "download" in step.argv]
    assert all(a[a.index("--dest") + 1] == str(tmp_path) for a in download) and "torch==2.13.0+cpu" in download[0]


def test_the_makefile_holds_no_logic_and_lists_every_target():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipes = [line for line in makefile.splitlines() if line.startswith("\t@") or line.startswith("\t$")]
    assert recipes == ["\t@$(PYTHON) tools/course.py --from-make $@ $(PASS)"]
    listed = re.search(r"^TARGETS := (.*?)\n(?!\t)", makefile, re.M | re.S).group(1).replace("\\\n\t", " ").split()
    assert sorted(listed) == sorted(TARGETS)
    passed = re.search(r"^SETTINGS := (.*?)\n(?!\t)", makefile, re.M | re.S).group(1).replace("\\\n\t", " ").split()
    assert sorted(passed) == sorted(SETTINGS)
    for target in TARGETS:
        assert re.search(rf"^  {re.escape(target)}\b|\b{re.escape(target)} opens", HELP, re.M), f"help omits {target}"


@needs_make
def test_make_help_prints_what_the_entry_point_prints():
    by_make = subprocess.run(
        [MAKE, "-s", "--no-print-directory", "help"],
        cwd=ROOT,
        env=make_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    direct = subprocess.run(
        [sys.executable, "tools/course.py", "help"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert by_make.stdout == direct.stdout == HELP + "\n"


@needs_make
@pytest.mark.parametrize("target", ["lab", "test", "execute", "matrix"])
def test_make_passes_its_settings_through_quoted(target):
    """make's command line, run by a shell as make runs it, gives tools/course.py the same settings as typing them."""
    values = ['LAB_ARGS=--no-browser --IdentityProvider.token="it\'s"', "NB=notebooks/03-scatter.ipynb", "TORCH_INDEX="]
    line = subprocess.run(
        [MAKE, "-n", "--no-print-directory", target, *values],
        cwd=ROOT,
        env=make_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert line.startswith(f"{sys.executable} tools/course.py --from-make {target} ")
    by_make = subprocess.run(
        ["sh", "-c", line.replace("tools/course.py", "tools/course.py -n", 1)],
        cwd=ROOT,
        env=make_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert by_make == dry_run("--from-make", target, *values, env=make_env())
    if target == "lab":
        assert shlex.split(by_make.splitlines()[-1])[-2:] == ["--no-browser", "--IdentityProvider.token=it's"]
    if target == "execute":
        assert "notebooks/03-scatter.ipynb" in by_make.splitlines()[-1]


@needs_make
def test_settings_in_the_environment_reach_the_entry_point_through_make():
    env = {**make_env(), "LAB_ARGS": "--no-browser --port=8891"}
    line = subprocess.run(
        [MAKE, "-n", "--no-print-directory", "lab"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    shown = subprocess.run(
        ["sh", "-c", line.replace("tools/course.py", "tools/course.py -n", 1)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert shown.rstrip().endswith("-- --no-browser --port=8891")


def test_every_target_has_its_steps_on_every_platform():
    for system, windows in (("Linux", False), ("Darwin", False), ("Windows", True)):
        fake = Course(settings([], {}, system), root=ROOT, windows=windows)
        for target in TARGETS:
            assert fake.steps(target) or target in ("venv",), (system, target)
    assert course.main(["-n", "help"]) == 0


def tools_for_the_course(folder: Path) -> Path:
    """A PATH of one folder: python3 (the interpreter under the course's venv, not the venv's) and git, nothing else."""
    folder.mkdir()
    (folder / "python3").symlink_to(sys._base_executable)
    (folder / "git").symlink_to(shutil.which("git"))
    return folder


@pytest.mark.fresh_clone
def test_a_fresh_clone_builds_its_environment_and_passes_its_tests_without_make(tmp_path):
    """The README's no-make twin of `make test`, as a learner without make runs it. Slow (the environment is built
    from nothing, then the whole suite runs): `pytest -m fresh_clone tests/test_entry.py`, after a commit
    (the clone holds what is committed)."""
    clone = tmp_path / "course"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    path = tools_for_the_course(tmp_path / "bin")
    keep = ("HOME", "LANG", "LC_ALL", "TMPDIR", "TERM", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("PIP_") or k.lower().endswith("_proxy")}
    env["PATH"] = str(path)
    assert shutil.which("make", path=env["PATH"]) is None
    shown = subprocess.run(
        ["python3", "tools/course.py", "-n", "test"], cwd=clone, env=env, capture_output=True, text=True, check=True
    ).stdout
    assert shlex.split(shown.splitlines()[-1])[-2:] == ["tests", "notebooks"]
    result = subprocess.run(
        ["python3", "tools/course.py", "test"], cwd=clone, env=env, capture_output=True, text=True, timeout=3600
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert (clone / ".venv" / "bin" / "python").exists() and " passed" in result.stdout
