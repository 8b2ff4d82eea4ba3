"""`make lab` really opens the course: start it headless on 127.0.0.1, list the notebooks over its API, stop it."""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

from notebook_rules import NOTEBOOK_DIR, ROOT


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read()


def test_make_lab_serves_the_notebooks(tmp_path):
    port, token = free_port(), "course-test-token"
    args = (
        f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} --ServerApp.port_retries=0 "
        f"--IdentityProvider.token={token}"
    )
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path), "JUPYTER_PLATFORM_DIRS": "1"}
    log = open(tmp_path / "lab.log", "w")
    lab = subprocess.Popen(
        ["make", "-s", "lab", f"LAB_ARGS={args}"],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                listing = json.loads(fetch(f"{base}/api/contents?token={token}"))
                break
            except OSError:
                assert lab.poll() is None, "make lab exited: " + (tmp_path / "lab.log").read_text()[-2000:]
                assert time.monotonic() < deadline, "make lab did not answer within 90 s"
                time.sleep(0.5)
        names = {item["name"] for item in listing["content"]}
        assert {p.name for p in NOTEBOOK_DIR.glob("[0-9][0-9]-*.ipynb")} <= names
        assert "GLOSSARY.md" in names
        assert b"JupyterLab" in fetch(f"{base}/lab?token={token}")
    finally:
        if lab.poll() is None:
            os.killpg(lab.pid, signal.SIGTERM)
        lab.wait(timeout=30)
        log.close()
