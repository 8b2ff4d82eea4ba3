"""The class hub end to end, on loopback: three throw-away system users log in through the hub's login page, each
gets their own stubbed workspace, one solves an exercise, one answers wrong, one answers wrong and fakes the
self-check; one cannot read another's work (their own server's contents API, their own kernel); the class report
judges them; then everything is stopped and the users removed. Needs root, useradd and Node.js: `pytest -m hub`
(not part of `make test`)."""

import contextlib
import csv
import json
import os
import pwd
import re
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import nbformat
import pytest

from companion.ddp_launch import free_port
from tools.course import ROOT, source
from tools.lesson_copies import ANSWER_MARKS, exercises, is_solution

pytestmark = pytest.mark.hub
PYTHON = ROOT / ".venv" / "bin" / "python"
HUB = ROOT / "class" / "hub.py"
LESSON = "03-scatter.ipynb"
FAKE_PASS = 'print("✓ Correct / 正确")'


def log(line: str) -> None:
    print(f"hub-test: {line}", flush=True)


def port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def hub(env: dict, *args: str, timeout: float = 600) -> str:
    done = subprocess.run([str(PYTHON), str(HUB), *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"hub.py {' '.join(args)}: {done.stdout}\n{done.stderr}"
    return done.stdout


@contextlib.contextmanager
def enterable_ancestors():
    """Let other users pass through the folders above the checkout while the hub runs (a fresh clone may sit in a
    private temporary folder, which `hub.py start` refuses), then give the old modes back."""
    closed = {p: p.stat().st_mode for p in ROOT.parents if not p.stat().st_mode & 0o001}
    for path, mode in closed.items():
        path.chmod(stat.S_IMODE(mode) | 0o001)
    try:
        yield
    finally:
        for path, mode in closed.items():
            path.chmod(stat.S_IMODE(mode))


@pytest.fixture
def hub_reachable():
    with enterable_ancestors():
        yield


def processes_of(uids: set[int]) -> list[str]:
    done = subprocess.run(["ps", "-e", "-o", "uid=,pid=,args="], capture_output=True, text=True)
    return [line for line in done.stdout.splitlines() if line.split() and int(line.split()[0]) in uids]


class Student:
    """A browser, as far as the hub and the student's server can tell."""

    def __init__(self, base: str, name: str, password: str):
        import requests

        self.base, self.name, self.password = base, name, password
        self.session = requests.Session()

    def login(self) -> None:
        page = self.session.get(f"{self.base}/hub/login", timeout=60)
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text).group(1)
        form = {"username": self.name, "password": self.password, "_xsrf": xsrf}
        answer = self.session.post(f"{self.base}/hub/login", data=form, timeout=300)
        assert answer.ok and "/hub/login" not in answer.url, f"login of {self.name} failed: {answer.url}"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:  # the spawn, then the OAuth round trip to the student's server
            page = self.session.get(f"{self.base}/user/{self.name}/lab", timeout=120)
            if page.ok and page.url.endswith(f"/user/{self.name}/lab"):
                return
            time.sleep(2)
        raise AssertionError(f"the server of {self.name} did not start: {page.status_code} {page.url}")

    @property
    def api(self) -> str:
        return f"{self.base}/user/{self.name}/api"

    def xsrf(self) -> dict:
        token = next(c.value for c in self.session.cookies if c.name == "_xsrf" and c.path == f"/user/{self.name}/")
        return {"X-XSRFToken": token}

    def get(self, path: str):
        return self.session.get(f"{self.api}/contents/{path}", params={"content": 1}, timeout=60)

    def put_notebook(self, path: str, notebook: dict) -> None:
        body = {"type": "notebook", "format": "json", "content": notebook}
        answer = self.session.put(f"{self.api}/contents/{path}", json=body, headers=self.xsrf(), timeout=60)
        assert answer.ok, answer.text

    def run_code(self, code: str | list[str]) -> dict:
        """Run `code` (one cell, or cells in order until one fails) in a fresh kernel of this student's server."""
        import websocket

        kernel = self.session.post(f"{self.api}/kernels", json={"name": "python3"}, headers=self.xsrf(), timeout=120)
        assert kernel.ok, kernel.text
        kernel_id = kernel.json()["id"]
        cookies = "; ".join(
            f"{c.name}={c.value}" for c in self.session.cookies if c.path in ("/", f"/user/{self.name}/")
        )
        url = self.api.replace("http://", "ws://") + f"/kernels/{kernel_id}/channels"
        ws = websocket.create_connection(
            url, cookie=cookies, header=[f"X-XSRFToken: {self.xsrf()['X-XSRFToken']}"], timeout=600
        )
        out, error, session = "", None, uuid.uuid4().hex
        for cell in [code] if isinstance(code, str) else code:
            msg_id = uuid.uuid4().hex
            header = {"msg_id": msg_id, "username": self.name, "session": session}
            content = {"code": cell, "silent": False, "store_history": False, "user_expressions": {}}
            content |= {"allow_stdin": False, "stop_on_error": True}
            ws.send(
                json.dumps(
                    {
                        "header": header | {"msg_type": "execute_request", "version": "5.3"},
                        "parent_header": {},
                        "metadata": {},
                        "channel": "shell",
                        "buffers": [],
                        "content": content,
                    }
                )
            )
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                message = json.loads(ws.recv())
                if message.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind = message["msg_type"]
                if kind == "stream":
                    out += message["content"]["text"]
                elif kind == "error":
                    error = f"{message['content']['ename']}: {message['content']['evalue']}"
                elif kind == "status" and message["content"]["execution_state"] == "idle":
                    break
            if error is not None:
                break
        ws.close()
        self.session.delete(f"{self.api}/kernels/{kernel_id}", headers=self.xsrf(), timeout=60)
        return {"out": out, "error": error}


def answered(notebook: dict, answer: str | None, check: str | None = None) -> dict:
    """The notebook with its first exercise's answer cell (and, if given, its self-check cell) replaced."""
    notebook = json.loads(json.dumps(notebook))
    solution, check_index = exercises(notebook)[0]
    if answer is not None:
        notebook["cells"][solution]["source"] = answer
    if check is not None:
        notebook["cells"][check_index]["source"] = check
    return notebook


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="makes system users: run as root")
@pytest.mark.skipif(shutil.which("useradd") is None, reason="needs useradd")
@pytest.mark.skipif(shutil.which("npm") is None and not (ROOT / "class/node_modules").exists(), reason="needs Node.js")
def test_hub_end_to_end(hub_reachable):
    tag, uids, modes_before = secrets.token_hex(2), set(), modes()
    names = {"a": f"zzhub{tag}a", "b": f"zzhub{tag}b", "c": f"zzhub{tag}c"}
    languages = {"a": "en", "b": "zh", "c": "both"}
    data = Path(tempfile.mkdtemp(prefix="course-hub-test-", dir="/tmp"))
    env = {**os.environ, "COURSE_HUB_DATA": str(data)}
    roster = data / "test-roster.txt"
    roster.write_text("".join(f"{names[k]} {languages[k]}\n" for k in names))
    passwords = data / "test-passwords.csv"
    port = free_port()
    base, students = f"http://127.0.0.1:{port}", {}
    reference = source([c for c in nbformat.read(ROOT / "notebooks" / LESSON, 4).cells if is_solution(c)][0])
    wrong = "def inverse_permutation(perm):\n    return perm.clone()\n"
    try:
        log(hub(env, "add-users", str(roster), "--passwords", str(passwords)).strip().replace("\n", " | "))
        secret = dict(list(csv.reader(passwords.read_text().splitlines()))[1:])
        uids = {pwd.getpwnam(n).pw_uid for n in names.values()}
        log(hub(env, "start", "--port", str(port)).strip().splitlines()[-1])
        students = {k: Student(base, names[k], secret[names[k]]) for k in names}

        # Logins through the hub's form, each server serving its own stubbed workspace in its language
        for key, student in students.items():
            started = time.monotonic()
            student.login()
            listing = student.get("").json()
            files = sorted(item["name"] for item in listing["content"])
            lesson = student.get(LESSON).json()["content"]
            solution, _ = exercises(lesson)[0]
            stub = source(lesson["cells"][solution])
            assert ANSWER_MARKS[languages[key]] in stub and "scatter_(" not in stub, stub  # in the student's language
            dropped = {"en": "lang-zh", "zh": "lang-en", "both": None}[languages[key]]
            cell_tags = {t for cell in lesson["cells"] for t in cell.get("metadata", {}).get("tags", [])}
            assert dropped is None or dropped not in cell_tags
            home = Path(pwd.getpwnam(student.name).pw_dir)
            owner = pwd.getpwuid((home / "workspace" / LESSON).stat().st_uid).pw_name
            assert owner == student.name and (home.stat().st_mode & 0o077) == 0
            log(
                f"login {student.name} ({languages[key]}): server up in {time.monotonic() - started:.1f} s, "
                f"{len(files)} files in ~/workspace owned by {owner}, {LESSON} answer cell stubbed "
                f"({stub.splitlines()[0][:60]}...)"
            )

        # A solves the first exercise, B answers wrong, C answers wrong and fakes the self-check's pass line
        a, b, c = students["a"], students["b"], students["c"]
        a.put_notebook(LESSON, answered(a.get(LESSON).json()["content"], reference))
        b.put_notebook(LESSON, answered(b.get(LESSON).json()["content"], wrong))
        c.put_notebook(LESSON, answered(c.get(LESSON).json()["content"], wrong, FAKE_PASS))
        log(
            f"{a.name} saved the reference answer, {b.name} a wrong one, {c.name} a wrong one and {FAKE_PASS!r} "
            "as its self-check (contents API)"
        )

        # A cannot read B's work: A's own kernel, and A's own server's contents API through a link
        b_file = Path(pwd.getpwnam(b.name).pw_dir) / "workspace" / LESSON
        a_folder = Path(pwd.getpwnam(a.name).pw_dir) / "workspace"
        assert "perm.clone()" in b_file.read_text()  # it is there (root can read it)
        probe = a.run_code(
            "import os\n"
            f"print('own', len(open({str(a_folder / LESSON)!r}).read()) > 0)\n"
            f"for path in [{str(b_file)!r}, {str(b_file.parent.parent)!r}, {str(ROOT / 'notebooks' / LESSON)!r}, "
            f"{str(ROOT / 'companion/checks/answers/scatter.py')!r}]:\n"
            "    try:\n"
            "        open(path).read() if os.path.isfile(path) or not os.path.isdir(path) else os.listdir(path)\n"
            "        print('READ', path)\n"
            "    except OSError as error:\n"
            "        print('refused', type(error).__name__, path)\n"
            f"os.symlink({str(b_file)!r}, {str(a_folder / 'peek.ipynb')!r})\n"
        )
        assert probe["error"] is None, probe
        assert "own True" in probe["out"] and "READ" not in probe["out"] and probe["out"].count("refused") == 4, probe
        for line in probe["out"].strip().splitlines():
            log(f"{a.name}'s kernel: {line}")
        peek = a.get("peek.ipynb")
        assert not peek.ok and "perm.clone()" not in peek.text, peek.text
        log(f"{a.name}'s contents API on a link to {b.name}'s {LESSON}: HTTP {peek.status_code}")
        outside = a.get(f"../{b.name}/workspace/{LESSON}")
        assert not outside.ok
        log(f"{a.name}'s contents API on ../{b.name}/workspace/{LESSON}: HTTP {outside.status_code}")

        # The class report: the course's checker on each student's function, run as that student
        report = data / "report"
        done = subprocess.run(
            [str(PYTHON), str(HUB), "progress", "--out", str(report), "03"],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        table = list(csv.reader((report / "class-progress.csv").read_text(encoding="utf-8").splitlines()))
        rows = {row[0]: row for row in table}
        header = rows["student"]
        column = header.index("03/inverse_permutation")
        assert rows[a.name][column] == "passed"
        assert rows[b.name][column].startswith("wrong: ")
        assert rows[c.name][column].startswith("wrong: "), "a faked pass line must not pass"
        assert all(rows[n][header.index("03/class_means")] == "not attempted" for n in names.values())
        assert rows["pass rate"][column] == "1/3"
        assert (report / "class-progress.html").exists()
        c_file = Path(pwd.getpwnam(c.name).pw_dir) / "workspace" / LESSON
        c_sources = [source(cell) for cell in nbformat.read(c_file, 4).cells]
        assert "perm.clone()" in b_file.read_text() and FAKE_PASS in c_sources  # the report changed nothing
        for row in table:
            log("table: " + " | ".join(cell[:90] for cell in row))
    except BaseException:
        hub_log = data / "hub.log"  # why the hub failed, before the folder goes
        print(hub_log.read_text(errors="replace")[-6000:] if hub_log.exists() else "no hub log")
        raise
    finally:
        for student in students.values():
            student.session.close()
        subprocess.run([str(PYTHON), str(HUB), "stop"], env=env, capture_output=True, timeout=120)
        subprocess.run([str(PYTHON), str(HUB), "remove-users", str(roster)], env=env, capture_output=True, timeout=300)
        subprocess.run([str(PYTHON), str(HUB), "unlock"], env=env, capture_output=True, timeout=60)
        left = [n for n in names.values() if _exists(n)]
        shutil.rmtree(data, ignore_errors=True)
    assert not left, f"users left behind: {left}"
    assert not port_open(port), f"port {port} still open"
    assert not processes_of(uids), processes_of(uids)
    assert modes() == modes_before, "the checkout's modes were not given back"
    log(f"stopped; users {', '.join(names.values())} removed, port {port} closed, no process left")


def modes() -> dict[str, int]:
    paths = [ROOT, ROOT / "notebooks", ROOT / "companion" / "checks" / "answers", *ROOT.iterdir()]
    return {str(p): p.lstat().st_mode for p in paths}


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
