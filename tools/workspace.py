"""The learner's workspace: a personal copy of the course in `workspace/` (git-ignored), opened by `make lab`.

On first run every lesson is copied from notebooks/ in the learner's language, with each exercise's answer replaced
by a stub that says what to write. Later runs never overwrite a lesson the learner changed: lessons added or updated
upstream are copied in when the learner's copy is untouched, and otherwise reported with the command that refreshes
one lesson (the learner's version is kept in workspace/backups/). A manifest (workspace/.course.json) remembers the
language and what was copied.

    python -m tools.workspace lab [--lang en|zh|both] [--refresh NN] [-- jupyter options]   (make lab)
    python -m tools.workspace notebook ...                                               (make notebook)
    python -m tools.workspace teacher [-- jupyter options]   the source notebooks, answers included (make lab-teacher)
    python -m tools.workspace sync [--lang ...]              copy and report, open nothing
    python -m tools.workspace refresh NN                     fresh copy of one lesson, the old one backed up

tools/course.py (which every make target calls) passes `--command "make lab"` or `--command "python3 tools/course.py
notebook"`: the command a message suggests is the one the learner typed, with REFRESH=NN added.

The Jupyter server is rooted at the project, so README.md, companion/ and the glossary are one click away, and it
uses the course's Jupyter configuration (jupyter/): a style sheet that renders Chinese with the bundled font.
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from tools.course import ROOT, lesson_files
from tools.lesson_copies import LANGUAGES, edited_text, edition_file, learner_copy

NOTEBOOK_DIR = ROOT / "notebooks"
CONFIG_DIR = ROOT / "jupyter"
# Default settings of the Lab and Notebook 7 per course language: for zh, the menus in Chinese (the language pack
# jupyterlab-language-pack-zh-CN). Defaults only: a language the learner picks in Settings > Language still wins.
APP_SETTINGS = {"zh": CONFIG_DIR / "lab-zh"}
DEFAULT_WORKSPACE = ROOT / "workspace"
MANIFEST = ".course.json"
BACKUPS = "backups"
DOCUMENTS = ("GLOSSARY.md",)  # copied beside the lessons: the lessons link to it by its bare name
LANGUAGE_NAMES = {"en": "English", "zh": "中文", "both": "English + 中文"}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def source_files(notebook_dir: Path = NOTEBOOK_DIR) -> list[Path]:
    """The course's lessons and the documents copied beside them."""
    lessons = lesson_files(notebook_dir)
    return lessons + [notebook_dir / name for name in DOCUMENTS if (notebook_dir / name).exists()]


def copy_text(source: Path, language: str) -> str:
    """The text the workspace holds for `source` in `language`."""
    if source.suffix != ".ipynb":
        return source.read_text(encoding="utf-8")
    notebook = nbformat.read(edition_file(source, language), as_version=4)
    return nbformat.writes(learner_copy(notebook, language)) + "\n"


def content_key(name: str, text: str) -> str:
    """What counts as the learner's change: a lesson's cell types and sources (not outputs or metadata), a
    document's whole text."""
    if name.endswith(".ipynb"):
        try:
            text = edited_text(json.loads(text))
        except ValueError:
            pass  # a broken notebook file: hash its bytes, so it counts as changed
    return digest(text)


def lesson_command(name: str, workspace: Path, command: str | None = None) -> str:
    """The command that refreshes one lesson, as the learner types it: `command` is how they started this run
    (`make notebook`, `python3 tools/course.py lab`), which takes NAME=value settings; None: this script itself."""
    number = name.split("-", 1)[0] if name[:2].isdigit() else name
    default = workspace.resolve() == DEFAULT_WORKSPACE.resolve()
    if command is None:
        return f"python -m tools.workspace refresh {number}" + (
            "" if default else f" --workspace {relative(workspace)}"
        )
    return f"{command} REFRESH={number}" + ("" if default else f" WORKSPACE={relative(workspace)}")


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


@dataclass
class Report:
    """What a sync did and what the learner should know."""

    copied: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # changed by the learner and updated upstream: not touched
    kept_language: list[str] = field(default_factory=list)  # changed by the learner, copied in another language
    removed: list[str] = field(default_factory=list)
    orphaned: list[str] = field(default_factory=list)  # changed by the learner, no longer in the course

    def lines(self, workspace: Path, command: str | None = None) -> list[str]:
        """What to tell the learner; `command` is how they started this run (see lesson_command)."""
        out = []
        if self.copied:
            out.append(f"Copied / 已复制: {', '.join(self.copied)}")
        if self.updated:
            out.append(f"Updated from the course / 已按课程更新: {', '.join(self.updated)}")
        if self.removed:
            out.append(f"No longer in the course, removed / 课程已删除（未改动）: {', '.join(self.removed)}")
        for name in self.kept:
            out += [
                f"{name}: updated in the course, but you changed your copy, so it was kept.",
                f"  {name}：课程里这一课有更新，但你改过自己的副本，所以保留了你的版本。",
                f"  New version, yours backed up in {relative(workspace / BACKUPS)}/ / 换成新版本（你的版本备份到"
                f" {relative(workspace / BACKUPS)}/）: {lesson_command(name, workspace, command)}",
            ]
        for name in self.kept_language:
            out += [
                f"{name}: you changed your copy, so it stays in the language it was copied in.",
                f"  {name}：你改过自己的副本，所以它保留复制时的语言。",
                f"  This language, yours backed up in {relative(workspace / BACKUPS)}/ / 换成当前语言（你的版本备份到"
                f" {relative(workspace / BACKUPS)}/）: {lesson_command(name, workspace, command)}",
            ]
        for name in self.orphaned:
            out.append(f"{name}: no longer in the course; your copy is kept / 课程里已没有这一课，保留了你的副本")
        return out


class Workspace:
    """A learner's folder of lesson copies and its manifest."""

    def __init__(self, path: Path = DEFAULT_WORKSPACE, notebook_dir: Path = NOTEBOOK_DIR):
        self.path, self.notebook_dir = Path(path), Path(notebook_dir)
        self.manifest_path = self.path / MANIFEST
        if self.manifest_path.exists():
            self.manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        else:
            self.manifest = {"language": "both", "files": {}}

    @property
    def language(self) -> str:
        return self.manifest["language"]

    def save_manifest(self) -> None:
        text = json.dumps(self.manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        self.manifest_path.write_text(text, encoding="utf-8")

    def write(self, name: str, text: str) -> None:
        (self.path / name).write_text(text, encoding="utf-8")
        self.record(name, text)

    def record(self, name: str, text: str) -> None:
        self.manifest["files"][name] = {"copied": content_key(name, text), "language": self.language}

    def untouched(self, name: str) -> bool:
        """Whether the learner's copy of `name` is as it was copied (outputs and metadata aside)."""
        entry, target = self.manifest["files"].get(name), self.path / name
        if entry is None or not target.exists():
            return False
        return content_key(name, target.read_text(encoding="utf-8")) == entry["copied"]

    def sync(self, language: str | None = None) -> Report:
        """Copy in what is new or updated upstream, never overwriting a lesson the learner changed."""
        if language is not None:
            if language not in LANGUAGES:
                raise ValueError(f"COURSE_LANG must be one of {', '.join(LANGUAGES)}, not {language!r}")
            self.manifest["language"] = language
        self.path.mkdir(parents=True, exist_ok=True)
        report, sources = Report(), source_files(self.notebook_dir)
        for source in sources:
            name, text = source.name, copy_text(source, self.language)
            target, entry = self.path / name, self.manifest["files"].get(name)
            if not target.exists():
                self.write(name, text)
                report.copied.append(name)
            elif content_key(name, target.read_text(encoding="utf-8")) == content_key(name, text):
                self.record(name, text)  # the same lesson (outputs aside): leave the file as it is
            elif entry is not None and self.untouched(name):
                self.write(name, text)
                report.updated.append(name)
            elif entry is not None and entry["language"] != self.language:
                report.kept_language.append(name)
            elif entry is None or entry["copied"] != content_key(name, text):
                report.kept.append(name)  # upstream changed since the copy: the learner should know
            # else: the learner changed it and upstream did not: nothing to say
        names = {source.name for source in sources}
        for name in sorted(set(self.manifest["files"]) - names):
            if self.untouched(name):
                (self.path / name).unlink()
                report.removed.append(name)
            elif (self.path / name).exists():
                report.orphaned.append(name)
                continue
            del self.manifest["files"][name]
        self.save_manifest()
        return report

    def find(self, lesson: str) -> Path:
        """The source of a lesson given by its number ('03') or file name."""
        matches = [p for p in source_files(self.notebook_dir) if p.name == lesson or p.name.startswith(f"{lesson}-")]
        if len(matches) != 1:
            names = ", ".join(p.name for p in source_files(self.notebook_dir))
            raise SystemExit(f"No single lesson matches {lesson!r}; give its number or file name: {names}")
        return matches[0]

    def refresh(self, lesson: str) -> Path | None:
        """A fresh copy of one lesson; the learner's version is moved to backups/ first. Returns the backup."""
        source = self.find(lesson)
        target, backup = self.path / source.name, None
        if target.exists():
            backups = self.path / BACKUPS
            backups.mkdir(parents=True, exist_ok=True)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            backup = backups / f"{target.stem}.{stamp}{target.suffix}"
            shutil.copy2(target, backup)
        self.path.mkdir(parents=True, exist_ok=True)
        self.write(source.name, copy_text(source, self.language))
        self.save_manifest()
        return backup


def jupyter_command(
    app: str, folder: Path, extra: list[str], language: str = "both"
) -> tuple[list[str], dict[str, str]]:
    """The command and environment that open `folder` (inside the project) in JupyterLab or Notebook 7, with the
    menus in `language` where a language pack gives them (zh); English otherwise."""
    url_folder = folder.resolve().relative_to(ROOT).as_posix()
    # jupyter-lab itself, not `jupyter lab`, which would start one more Python only to start it
    name = "jupyter-lab" if app == "lab" else "jupyter-notebook"
    installed = Path(sys.executable).parent / (f"{name}.exe" if os.name == "nt" else name)  # Scripts\ on Windows
    command = [str(installed) if installed.exists() else name]
    command.append(f"--ServerApp.root_dir={ROOT}")
    if app == "lab":
        server, url = "LabApp", f"/lab/tree/{url_folder}"
    else:
        server, url = "JupyterNotebookApp", f"/tree/{url_folder}"
    command += [f"--{server}.custom_css=True", f"--{server}.default_url={url}"]
    if language in APP_SETTINGS:
        command.append(f"--{server}.app_settings_dir={APP_SETTINGS[language]}")
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:
        command.append("--allow-root")  # containers and CI often run as root
    # COURSE_LANG tells companion, in every kernel, which language to print and draw in (companion/language.py)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(CONFIG_DIR), "COURSE_LANG": language}
    return command + extra, env


def start(command: list[str], env: dict[str, str]) -> int:
    """Become the Jupyter server on POSIX; on Windows, where os.exec* starts a new process and hands the console
    back to the shell at once, run it as a child and wait, Ctrl-C going to Jupyter alone."""
    if os.name != "nt":
        os.execvpe(command[0], command, env)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return subprocess.call(command, env=env)
    finally:
        signal.signal(signal.SIGINT, previous)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["lab", "notebook", "teacher", "sync", "refresh"])
    parser.add_argument("lesson", nargs="?", help="for refresh: the lesson's number (03) or file name")
    parser.add_argument("--lang", choices=LANGUAGES, help="en, zh or both; remembered for later runs")
    parser.add_argument("--refresh", metavar="NN", help="first replace this lesson with a fresh copy (backed up)")
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE, help="default: workspace/")
    parser.add_argument("--command", help="how the learner started this run, for the commands messages suggest")
    args = parser.parse_args(argv)
    workspace = Workspace(args.workspace if args.workspace.is_absolute() else ROOT / args.workspace)

    if args.action == "teacher":
        command, env = jupyter_command("lab", NOTEBOOK_DIR, extra)
        print("Opening the source notebooks, answers included (for teachers and authors).")
        print("打开源笔记本（含答案，供教师和作者使用）。", flush=True)
        return start(command, env)

    if args.action == "refresh" or args.refresh:
        lesson = args.lesson if args.action == "refresh" else args.refresh
        if lesson is None:
            parser.error("refresh needs a lesson, e.g. `python -m tools.workspace refresh 03`")
        backup = workspace.refresh(lesson)
        if backup is not None:
            print(f"Your previous version is in {relative(backup)} / 你之前的版本保存在 {relative(backup)}")
        print(f"Fresh copy of {workspace.find(lesson).name} / 已换成新副本", flush=True)
        if args.action == "refresh":
            return 0

    first_run = not workspace.manifest_path.exists()
    report = workspace.sync(args.lang)
    if first_run:
        print(f"Your workspace / 你的学习目录: {relative(workspace.path)}/ ({LANGUAGE_NAMES[workspace.language]})")
        print("Exercises are stubbed there; notebooks/ keeps the answers. / 练习的答案已换成待填写的桩代码；")
        print("  带答案的原版在 notebooks/ 里。")
    elif args.lang:
        print(f"Language / 语言: {LANGUAGE_NAMES[workspace.language]}")
    for line in report.lines(workspace.path, args.command):
        print(line)
    sys.stdout.flush()
    if args.action == "sync":
        return 0
    command, env = jupyter_command(args.action, workspace.path, extra, workspace.language)
    return start(command, env)


if __name__ == "__main__":
    sys.exit(main())
