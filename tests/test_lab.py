"""`make lab` really opens the learner's workspace: started headless on 127.0.0.1 twice, with an edit in between.

The server is started by `tools/course.py lab`, what `make lab` calls (tests/test_entry.py checks that), so the test
also runs where make is absent."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest

from companion.ddp_launch import free_port
from tools.course import NOTEBOOK_DIR, ROOT, lesson_files
from tools.lesson_copies import ANSWER_MARK, answer_lines, is_solution

TOKEN = "course-test-token"


def request(url: str, data: dict | None = None) -> dict:
    body = None if data is None else json.dumps(data).encode()
    method = "GET" if data is None else "PUT"
    req = urllib.request.Request(url, data=body, method=method, headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req, timeout=10) as response:
        payload = response.read()
    return json.loads(payload) if payload.startswith((b"{", b"[")) else {"raw": payload}


@contextmanager
def make_lab(tmp_path: Path, target: str, workspace: str, language: str | None = None):
    """Run `python tools/course.py <target>` (what `make <target>` runs) headless on a free port; yield the base URL
    and the log path; stop it."""
    port = free_port()
    args = (
        f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} --ServerApp.port_retries=0 "
        f"--IdentityProvider.token={TOKEN}"
    )
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTER_PLATFORM_DIRS": "1"}
    env.pop("COURSE_LANG", None)
    log_path = tmp_path / f"{target}-{port}.log"
    with open(log_path, "w") as log:
        lab = subprocess.Popen(
            [sys.executable, "tools/course.py", target, f"WORKSPACE={workspace}", f"LAB_ARGS={args}"]
            + ([f"COURSE_LANG={language}"] if language else []),
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 120
            while True:
                try:
                    request(f"{base}/api/status")
                    break
                except OSError:
                    assert lab.poll() is None, f"make {target} exited: " + log_path.read_text()[-2000:]
                    assert time.monotonic() < deadline, f"make {target} did not answer within 120 s"
                    time.sleep(0.5)
            yield base, log_path
        finally:
            if lab.poll() is None:
                os.killpg(lab.pid, signal.SIGTERM)
            lab.wait(timeout=30)


@pytest.mark.integration
def test_make_lab_serves_stubbed_copies_and_keeps_the_learners_edit(tmp_path):
    workspace = f"build/test-lab-{os.getpid()}"
    lessons = [p.name for p in lesson_files()]
    with_exercise = next(
        name for name in lessons if any(is_solution(c) for c in nbformat.read(NOTEBOOK_DIR / name, 4).cells)
    )
    edit = "# my own answer, kept across runs\n"
    try:
        with make_lab(tmp_path, "lab", workspace) as (base, log_path):
            listing = request(f"{base}/api/contents/{workspace}")
            names = {item["name"] for item in listing["content"]}
            assert set(lessons) <= names and "GLOSSARY.md" in names
            root_names = {item["name"] for item in request(f"{base}/api/contents")["content"]}
            assert {"README.md", "companion", "notebooks"} <= root_names, "the README and companion/ are reachable"
            page = request(f"{base}/lab?token={TOKEN}")["raw"]
            assert b"JupyterLab" in page and b"custom/custom.css" in page, "the course style sheet (CJK font) is on"

            for name in lessons:  # the served copies hold stubs, not the answers the source notebooks hold
                served = request(f"{base}/api/contents/{workspace}/{name}")["content"]
                source = nbformat.read(NOTEBOOK_DIR / name, 4)
                answers = [c.source for c in source.cells if is_solution(c)]
                stubs = [c["source"] for c in served["cells"] if "solution" in c["metadata"].get("tags", [])]
                assert len(stubs) == len(answers), name
                for answer, stub in zip(answers, stubs, strict=True):
                    assert ANSWER_MARK in stub and "练习" in stub and "Exercise" in stub, name
                    body = answer_lines(answer)
                    assert not any(line in stub.splitlines() for line in body), f"{name}: answer text in the stub"
            teacher = request(f"{base}/api/contents/notebooks/{with_exercise}")["content"]
            assert not any(ANSWER_MARK in c["source"] for c in teacher["cells"]), "notebooks/ keeps the answers"

            model = request(f"{base}/api/contents/{workspace}/{with_exercise}")
            cell = next(c for c in model["content"]["cells"] if "solution" in c["metadata"].get("tags", []))
            cell["source"] = edit + cell["source"]
            request(
                f"{base}/api/contents/{workspace}/{with_exercise}",
                {"type": "notebook", "format": "json", "content": model["content"]},
            )
        assert "Copied" in log_path.read_text()

        with make_lab(tmp_path, "lab", workspace) as (base, log_path):
            served = request(f"{base}/api/contents/{workspace}/{with_exercise}")["content"]
            assert any(c["source"].startswith(edit) for c in served["cells"]), "the learner's edit was overwritten"
        assert "Copied" not in log_path.read_text()
    finally:
        shutil.rmtree(ROOT / workspace, ignore_errors=True)


def locale_default(url: str) -> str:
    """The Lab's default interface language (overrides.json sets it; a learner's own choice would still win)."""
    return request(url)["schema"]["properties"]["locale"]["default"]


@pytest.mark.integration
def test_make_lab_in_chinese_serves_chinese_copies_and_chinese_menus(tmp_path):
    workspace = f"build/test-lab-zh-{os.getpid()}"
    language = "@jupyterlab/translation-extension:plugin"
    try:
        with make_lab(tmp_path, "lab", workspace, "zh") as (base, _):
            assert locale_default(f"{base}/lab/api/settings/{language}") == "zh_CN"
            menus = request(f"{base}/lab/api/translations/zh_CN")["data"]["jupyterlab"]
            assert menus["Edit"] == ["编辑"] and menus["Restart Kernel…"] == ["重启内核…"]
            lesson = request(f"{base}/api/contents/{workspace}/01-tensors.ipynb")["content"]
            tags = [set(c["metadata"].get("tags", [])) for c in lesson["cells"]]
            assert not any("lang-en" in t for t in tags) and any("lang-zh" in t for t in tags)
        with make_lab(tmp_path, "lab", f"{workspace}-en") as (base, _):  # a workspace in English: English menus
            assert locale_default(f"{base}/lab/api/settings/{language}") == "default"
    finally:
        for folder in (workspace, f"{workspace}-en"):
            shutil.rmtree(ROOT / folder, ignore_errors=True)


def test_lab_teacher_and_notebook_open_the_right_folders():
    dry = {
        target: subprocess.run(
            [sys.executable, "tools/course.py", "-n", target], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        for target in ("lab", "lab-teacher", "notebook")
    }
    assert "-m tools.workspace lab --workspace workspace" in dry["lab"]
    assert "-m tools.workspace teacher" in dry["lab-teacher"]
    assert "-m tools.workspace notebook --workspace workspace" in dry["notebook"]
