"""Every lesson as a learner lives it, in a real browser: `make walkthrough`.

Makes a fresh learner's workspace (what `make lab` serves, in build/walkthrough/workspace), starts the course's
JupyterLab on 127.0.0.1 on a free port and drives headless Chromium (Playwright with the system's Chromium, no
download) through each lesson, two lessons at a time in browsers of their own: clear the outputs, Run > Run All
Cells, wait until every code cell ran, save, and check that
- every code cell ran, and error outputs appear only in cells tagged raises-exception (the stubbed exercises'
  self-checks are tagged so in the workspace, and must fail with the stub's NotImplementedError);
- no stderr and no warning text appear;
- every plot image loaded (naturalWidth > 0), as many as the saved notebook holds;
- Chinese text is drawn with the course's font (a loaded FontFace "Course Sans SC", first in the computed font of
  a Chinese cell, and glyphs that differ from the browser's fallback);
then Run All a second time in the same kernel and check that no checked output changed (cells tagged
nbval-ignore-output or nbval-skip aside). After the Lab has shut every kernel down, the kernels' temporary
folder (TMPDIR) must be empty: no lesson leaves a file behind. Screenshots of each lesson's title and first plot go to
build/walkthrough/. One lesson is walked again in Notebook 7 (`jupyter notebook`), and lesson 00 is opened in a
Chinese workspace (`make lab COURSE_LANG=zh`), whose Lab menus must be in Chinese. Every process it started is
stopped at the end.

    python -m tools.walkthrough [LESSON ...] [--notebook7 00] [--timeout 900]
"""

import argparse
import json
import os
import queue
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import psutil

from companion.ddp_launch import free_port
from tools.course import ANSI, lesson_files, tags
from tools.workspace import ROOT, Workspace, jupyter_command

OUT = ROOT / "build" / "walkthrough"
CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
FONT_FAMILY = "Course Sans SC"
UNCHECKED = {"nbval-ignore-output", "nbval-skip"}
# A leaked warning ("file.py:12: UserWarning: ..."); a lesson may print a caught warning's category and message.
WARNING_TEXT = re.compile(r":\d+: \w*Warning:")
# Lab settings for the walk only: no news pop-up over the screenshots.
SETTINGS = {"@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"}}


@dataclass
class Walk:
    """What one lesson's walk found."""

    lesson: str
    app: str = "lab"
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    code_cells: int = 0
    images: int = 0
    screenshots: list[str] = field(default_factory=list)


class Server:
    """A Jupyter server started the way `make lab` / `make notebook` start it, stopped with all its kernels."""

    def __init__(self, app: str, folder: Path, log: Path, language: str = "both"):
        self.port, self.token = free_port(), secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        extra = [
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
        ]
        command, env = jupyter_command(app, folder, extra, language)
        state = OUT / "state" / f"{app}-{language}"
        settings = state / "settings"
        for name, value in SETTINGS.items():
            (settings / name).parent.mkdir(parents=True, exist_ok=True)
            (settings / name).write_text(json.dumps(value))
        # Every kernel of this server writes its temporary files here (TMPDIR), so that stop() can tell whether the
        # lessons left any behind once their kernels shut down as the Lab shuts them down.
        self.temporary = state / "tmp"
        self.temporary.mkdir(parents=True, exist_ok=True)
        env.update(
            TMPDIR=str(self.temporary),
            JUPYTERLAB_SETTINGS_DIR=str(settings),
            JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"),
            JUPYTER_RUNTIME_DIR=str(state / "runtime"),
            OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
            PYTHONHASHSEED=env.get("PYTHONHASHSEED", "0"),
        )
        self.log = open(log, "w")
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.started: set[int] = set()
        deadline = time.monotonic() + 180
        while True:
            try:
                self.api("status")
                break
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(f"jupyter {app} exited: " + log.read_text()[-2000:]) from None
                if time.monotonic() > deadline:
                    raise RuntimeError(f"jupyter {app} did not answer within 180 s") from None
                time.sleep(0.5)

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(
            f"{self.base}/api/{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def url(self, path: str) -> str:
        return f"{self.base}/{path}?token={self.token}"

    def remember_children(self) -> None:
        """Note the server's child processes (kernels, their workers) so that stop() can end them all."""
        try:
            self.started |= {p.pid for p in psutil.Process(self.process.pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            pass

    def close_session(self, relative: str) -> None:
        """Shut down the kernel of the notebook at `relative` (another walker's lesson keeps its own)."""
        self.remember_children()
        try:
            for session in self.api("sessions"):
                if session.get("path") == relative:
                    self.api(f"sessions/{session['id']}", method="DELETE")
        except OSError:
            pass

    def stop(self) -> None:
        self.remember_children()
        try:
            for kernel in self.api("kernels"):
                self.api(f"kernels/{kernel['id']}", method="DELETE")
        except OSError:
            pass
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        leftovers = []
        for pid in self.started:
            try:
                leftovers.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                pass
        for process in leftovers:
            process.terminate()
        psutil.wait_procs(leftovers, timeout=10)
        self.log.close()

    def files_left(self) -> list[str]:
        """What the kernels left in their temporary folder, after stop(). PyTorch's own per-user compile cache
        (torchinductor_<user>, made empty by `import torch._dynamo`, kept across runs by design) is no lesson's."""
        return sorted(
            str(path.relative_to(self.temporary))
            for path in self.temporary.rglob("*")
            if not path.relative_to(self.temporary).parts[0].startswith("torchinductor_")
        )


# JavaScript run in the page. Cells are `.jp-Cell` in document order (the Lab's default windowing keeps them all
# attached); a code cell's prompt reads "[*]:" while queued or running, "[ ]:" before it ran, "[n]:" after.
PROMPTS = """() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell')]
    .map(cell => (cell.querySelector('.jp-InputPrompt') || {}).textContent || '')"""
IMAGES = """() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output img')]
    .map(img => ({complete: img.complete, width: img.naturalWidth}))"""
FONTS = """async (family) => {
    await document.fonts.ready;
    const faces = [...document.fonts].filter(f => f.family.replace(/"/g, '') === family);
    const cell = [...document.querySelectorAll('.jp-RenderedMarkdown')]
        .find(e => /[\\u4e00-\\u9fff]/.test(e.textContent));
    const sample = '张量拾级：中文字体';
    const draw = (font) => {
        const canvas = document.createElement('canvas');
        canvas.width = 240; canvas.height = 40;
        const context = canvas.getContext('2d');
        context.font = font; context.fillText(sample, 0, 30);
        return canvas.toDataURL();
    };
    return {
        loaded: faces.some(f => f.status === 'loaded'),
        check: document.fonts.check(`16px "${family}"`, sample),
        computed: cell ? getComputedStyle(cell).fontFamily : '',
        differsFromFallback: draw(`16px "${family}"`) !== draw('16px sans-serif'),
    };
}"""


def menu(page, top: str, item: str) -> None:
    """Click a menu bar entry, then one of its items, as a learner does."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(top)}$")).first.click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).first.click()


def kernel_state(server: "Server", relative: str) -> str:
    """The execution state of the kernel of the notebook at `relative` ('' while it has none)."""
    for session in server.api("sessions"):
        if session.get("path") == relative and session.get("kernel"):
            return session["kernel"].get("execution_state", "")
    return ""


def wait_for_kernel(server: "Server", relative: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while kernel_state(server, relative) != "idle":
        if time.monotonic() > deadline:
            raise TimeoutError(f"the kernel was not ready within {timeout:g} s")
        time.sleep(0.5)


def wait_until_run(page, server: "Server", relative: str, ran_before: int, timeout: float) -> list[str]:
    """Wait until Run All is over: every cell ran (or the run stopped at an error), the kernel idle; the prompts."""
    start, steady, last = time.monotonic(), 0, None
    while time.monotonic() < start + timeout:
        page.wait_for_timeout(250)
        prompts = page.evaluate(PROMPTS)
        busy = any("*" in p for p in prompts) or kernel_state(server, relative) != "idle"
        numbers = [int(n) for p in prompts for n in re.findall(r"\d+", p)]
        started = any(n > ran_before for n in numbers)
        steady = steady + 1 if (prompts == last and not busy) else 0
        last = prompts
        if not busy and len(numbers) == len(prompts) and min(numbers, default=0) > ran_before:
            return prompts
        if started and steady >= 20:  # 5 s without change: an error in a cell not tagged raises-exception stopped it
            return prompts
        if not started and not busy and time.monotonic() > start + 120:
            raise TimeoutError("Run All did not start any cell within 120 s")
    raise TimeoutError(f"Run All did not finish within {timeout:g} s")


def save(page, path: Path) -> nbformat.NotebookNode:
    """Save the notebook from the browser and read what was saved."""
    before = path.stat().st_mtime_ns
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first.click(position={"x": 5, "y": 5})
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 60
    while path.stat().st_mtime_ns == before and time.monotonic() < deadline:
        page.wait_for_timeout(250)
    page.wait_for_timeout(500)
    return nbformat.read(path, as_version=4)


def checked_outputs(cell: dict) -> list[str]:
    """A cell's outputs as nbval compares them: text, HTML and errors; images by their presence only."""
    found = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            found.append(f"{output.get('name')}: {output.get('text', '')}")
        elif kind == "error":
            found.append(f"error: {output.get('ename')}: {ANSI.sub('', output.get('evalue', ''))}")
        else:
            data = output.get("data", {})
            for mime in ("text/plain", "text/html", "text/latex", "text/markdown"):
                if mime in data:
                    found.append(f"{mime}: {data[mime]}")
            found += [f"{mime}" for mime in data if mime.startswith("image/")]
    return found


def after_solution(notebook: nbformat.NotebookNode, index: int) -> bool:
    """Whether code cell `index` is the self-check of an exercise (the code cell after a solution)."""
    before = [c for c in notebook.cells[:index] if c.cell_type == "code"]
    return bool(before) and "solution" in tags(before[-1])


def check_saved(notebook: nbformat.NotebookNode, walk: Walk, run: int) -> None:
    """Problems in a saved notebook after Run All."""
    code = [c for c in notebook.cells if c.cell_type == "code"]
    walk.code_cells = len(code)
    not_run = [i for i, c in enumerate(notebook.cells) if c.cell_type == "code" and c.execution_count is None]
    if not_run:
        walk.problems.append(f"run {run}: {len(not_run)} code cells did not run (first: cell {not_run[0]})")
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            if output.output_type == "error":
                if "raises-exception" not in tags(cell):
                    evalue = ANSI.sub("", output.get("evalue", ""))[:200]
                    walk.problems.append(f"run {run}: cell {index} raised {output.ename}: {evalue}")
                elif after_solution(notebook, index) and output.ename not in ("NotImplementedError", "WrongAnswer"):
                    walk.problems.append(f"run {run}: the self-check of a stub (cell {index}) raised {output.ename}")
            elif output.output_type == "stream" and output.name == "stderr":
                walk.problems.append(f"run {run}: cell {index} wrote to stderr: {output.text[:200]!r}")
            text = output.get("text", "") or output.get("data", {}).get("text/plain", "")
            if output.output_type != "error" and WARNING_TEXT.search(text if isinstance(text, str) else "".join(text)):
                walk.problems.append(f"run {run}: cell {index} shows a warning: {text[:200]!r}")


def compare_runs(first: nbformat.NotebookNode, second: nbformat.NotebookNode, walk: Walk) -> None:
    for index, (a, b) in enumerate(zip(first.cells, second.cells, strict=True)):
        if a.cell_type == "code" and not (UNCHECKED & tags(a)):
            if checked_outputs(a) != checked_outputs(b):
                walk.problems.append(f"second Run All changed the output of cell {index}: {b.source[:60]!r}")


def look(page, walk: Walk, expected_images: int) -> None:
    """Checks made on the page itself: plot images loaded, Chinese drawn with the course font."""
    images = page.evaluate(IMAGES)
    walk.images = len(images)
    broken = [i for i, image in enumerate(images) if not image["complete"] or image["width"] == 0]
    if broken:
        walk.problems.append(f"{len(broken)} of {len(images)} plot images did not load")
    if len(images) < expected_images:
        walk.problems.append(f"{len(images)} images on the page, the notebook holds {expected_images}")
    fonts = page.evaluate(FONTS, FONT_FAMILY)
    if not (fonts["loaded"] and fonts["check"] and fonts["differsFromFallback"]):
        walk.problems.append(f"Chinese text is not drawn with {FONT_FAMILY}: {fonts}")
    if not fonts["computed"].replace('"', "").startswith(FONT_FAMILY):
        walk.problems.append(f"a Chinese cell's font is {fonts['computed']!r}, not {FONT_FAMILY} first")


def screenshots(page, walk: Walk, stem: str, app: str) -> None:
    """The lesson's title (the first cells) and its first plot."""
    OUT.mkdir(parents=True, exist_ok=True)
    suffix = "" if app == "lab" else f"-{app}"
    page.locator(".jp-Cell").first.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    title = OUT / f"{stem}{suffix}.png"
    page.screenshot(path=str(title))
    walk.screenshots.append(title.name)
    plot = page.locator(".jp-OutputArea-output img").first
    if plot.count():
        for _ in range(3):  # cells off screen have an estimated height until drawn: centre, let it settle, again
            plot.evaluate("e => e.scrollIntoView({block: 'center'})")
            page.wait_for_timeout(400)
        path = OUT / f"{stem}{suffix}-plot.png"
        page.screenshot(path=str(path))
        walk.screenshots.append(path.name)


def walk_lesson(context, server: Server, folder: Path, path: Path, app: str, timeout: float) -> Walk:
    walk = Walk(path.stem, app)
    start = time.monotonic()
    page = context.new_page()
    relative = path.relative_to(ROOT).as_posix()
    try:
        # A Lab workspace of its own per lesson: only this notebook open, nothing restored from the last one.
        page.goto(
            server.url(f"lab/workspaces/walk-{path.stem}/tree/{relative}" if app == "lab" else f"notebooks/{relative}")
        )
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
        wait_for_kernel(server, relative)
        menu(page, "Edit", "Clear Outputs of All Cells")
        menu(page, "Run", "Run All Cells")
        wait_until_run(page, server, relative, 0, timeout)
        server.remember_children()
        first = save(page, path)
        check_saved(first, walk, 1)
        expected = sum(1 for c in first.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
        look(page, walk, expected)
        screenshots(page, walk, path.stem, app)
        ran = max((c.execution_count or 0) for c in first.cells if c.cell_type == "code")
        menu(page, "Run", "Run All Cells")
        wait_until_run(page, server, relative, ran, timeout)
        second = save(page, path)
        check_saved(second, walk, 2)
        compare_runs(first, second, walk)
    except Exception as error:  # a lesson that hangs or a page that breaks: report it, walk the next one
        walk.problems.append(f"{type(error).__name__}: {str(error).splitlines()[0][:300]}")
        try:
            page.screenshot(path=str(OUT / f"{path.stem}-{app}-failed.png"))
        except Exception:
            pass
    finally:
        page.close()
        server.close_session(relative)  # shut this lesson's kernel down before the next lesson starts one
        walk.seconds = time.monotonic() - start
    return walk


# The Lab's top menus as the language pack names them (File, Edit, View, Run, Kernel, ...).
CHINESE_MENUS = {"文件", "编辑", "查看", "运行", "内核"}


def look_at_chinese_menus(context, server: Server, path: Path) -> Walk:
    """`make lab COURSE_LANG=zh`: the lesson opens in the Chinese copy, under menus in Chinese; a screenshot."""
    walk = Walk(path.stem, "lab-zh")
    start = time.monotonic()
    page = context.new_page()
    relative = path.relative_to(ROOT).as_posix()
    try:
        page.goto(server.url(f"lab/workspaces/walk-zh/tree/{relative}"))
        page.wait_for_selector(".jp-Notebook .jp-RenderedMarkdown", timeout=120_000)
        wait_for_kernel(server, relative)
        page.wait_for_timeout(1000)  # the status bar catches up with the kernel
        labels = set(page.locator(".lm-MenuBar-itemLabel").all_inner_texts())
        if not CHINESE_MENUS <= labels:
            walk.problems.append(f"menus not in Chinese: {sorted(labels)}")
        shot = OUT / f"{path.stem}-lab-zh.png"
        page.screenshot(path=str(shot))
        walk.screenshots.append(shot.name)
    except Exception as error:
        walk.problems.append(f"{type(error).__name__}: {str(error).splitlines()[0][:300]}")
    finally:
        page.close()
        server.close_session(relative)
        walk.seconds = time.monotonic() - start
    return walk


WALKERS = 2  # lessons walked at once, each in its own browser and kernel: a kernel keeps one core busy


@contextmanager
def browser_context():
    """A headless Chromium page context of its own; Playwright's sync API belongs to the thread that starts it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield browser.new_context(viewport={"width": 1280, "height": 1000}, device_scale_factor=1)
        finally:
            browser.close()


def walk_side_by_side(server: Server, folder: Path, lessons: list[Path], timeout: float, started: float):
    """Walk `lessons` in JupyterLab with WALKERS browsers at once; the walks in lesson order."""
    waiting = queue.SimpleQueue()
    for path in lessons:
        waiting.put(path)
    walks: dict[Path, Walk] = {}
    lock = threading.Lock()

    def walker() -> None:
        with browser_context() as context:
            while True:
                try:
                    path = waiting.get_nowait()
                except queue.Empty:
                    break
                walk = walk_lesson(context, server, folder, path, "lab", timeout)
                with lock:
                    walks[path] = walk
                    print(f"JupyterLab: {path.name}: {walk.seconds:.0f} s, {'ok' if not walk.problems else 'PROBLEMS'}")
                    write_report([walks[p] for p in lessons if p in walks], time.monotonic() - started)

    threads = [threading.Thread(target=walker) for _ in range(WALKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [walks[path] for path in lessons]


def write_report(walks: list[Walk], wall: float) -> None:
    report = {"wall_seconds": round(wall, 1), "walks": [walk.__dict__ for walk in walks]}
    (OUT / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lessons", nargs="*", help="lesson numbers (default: every lesson)")
    parser.add_argument("--notebook7", default="00", help="the lesson also walked in Notebook 7 ('' for none)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for one Run All")
    parser.add_argument("--notebooks", type=Path, default=ROOT / "notebooks", help="the course's source notebooks")
    args = parser.parse_args(argv)

    def terminate(signum, frame):  # CI's timeout: stop the servers and kernels on the way out
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, terminate)
    started = time.monotonic()
    if OUT.exists():
        shutil.rmtree(OUT)
    folder = OUT / "workspace"
    Workspace(folder, args.notebooks).sync("both")  # a fresh learner's workspace, as `make lab` makes it on first run
    lessons = lesson_files(folder)
    if args.lessons:
        lessons = [p for p in lessons if p.name[:2] in args.lessons or p.stem in args.lessons]
    walks: list[Walk] = []
    servers: list[Server] = []
    try:
        servers.append(Server("lab", folder, OUT / "lab.log"))
        walks += walk_side_by_side(servers[-1], folder, lessons, args.timeout, started)
        lab = servers.pop()
        lab.stop()
        left = lab.files_left()
        chosen = [p for p in lesson_files(folder) if args.notebook7 and p.name[:2] == args.notebook7]
        if chosen:
            servers.append(Server("notebook", folder, OUT / "notebook.log"))
            print(f"Notebook 7: {chosen[0].name} ...", flush=True)
            with browser_context() as context:
                walks.append(walk_lesson(context, servers[-1], folder, chosen[0], "notebook", args.timeout))
            servers.pop().stop()
        chinese = OUT / "workspace-zh"
        Workspace(chinese, args.notebooks).sync("zh")  # what `make lab COURSE_LANG=zh` serves on a first run
        servers.append(Server("lab", chinese, OUT / "lab-zh.log", language="zh"))
        print("JupyterLab in Chinese: the menus ...", flush=True)
        with browser_context() as context:
            walks.append(look_at_chinese_menus(context, servers[-1], lesson_files(chinese)[0]))
        servers.pop().stop()
    finally:
        for server in servers:
            server.stop()

    wall = time.monotonic() - started
    write_report(walks, wall)
    failed = [walk for walk in walks if walk.problems]
    for walk in walks:
        status = "ok" if not walk.problems else f"{len(walk.problems)} problem(s)"
        print(
            f"{walk.app:8} {walk.lesson:28} {walk.seconds:6.0f} s  {walk.code_cells:3} code cells  "
            f"{walk.images:2} images  {status}"
        )
        for problem in walk.problems:
            print(f"           {problem}")
    if left:
        print(f"The lessons left {len(left)} file(s) in the kernels' temporary folder: {left[:10]}")
    print(f"Walked {len(walks)} lessons in {wall:.0f} s; screenshots in {OUT.relative_to(ROOT)}/")
    return 1 if failed or left else 0


if __name__ == "__main__":
    sys.exit(main())
