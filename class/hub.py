"""The course on one server for a class: JupyterHub (class/jupyterhub_config.py), students as system users.

    python3 class/hub.py start [--ip 127.0.0.1] [--port 8000]   install what is missing, lock the teacher's files,
                                                                start the hub in the background (make hub)
    python3 class/hub.py stop                                   stop the hub, its proxy and every student's server
    python3 class/hub.py add-users ROSTER                       create the roster's system users, give them the hub
    python3 class/hub.py remove-users ROSTER                    take them off the hub, archive their homes, delete them
    python3 class/hub.py progress [class_progress options]      the class report (make class-progress)
    python3 class/hub.py status                                 running or not, where, who

Run as root (the hub starts each student's server as that student). A roster line is `login [en|zh|both]
[teacher]`; see class/roster.example.txt. Everything the hub writes lives in class/data/ (or $COURSE_HUB_DATA).
Internal commands: `stage` (the stubbed course the workspaces are copied from), `sync-workspace` (run as a student
by the hub's pre-spawn hook), `lock` and `unlock` (the permission model, see class/README.md).
"""

import argparse
import csv
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

CLASS_DIR = Path(__file__).resolve().parent
ROOT = CLASS_DIR.parent
TOOLS = ROOT / "tools"
sys.path.insert(0, str(ROOT))  # the tools package: this file runs as a script, and class/ cannot be a package
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"
NOTEBOOKS = ROOT / "notebooks"
CONFIG = CLASS_DIR / "jupyterhub_config.py"
PROXY = CLASS_DIR / "node_modules" / ".bin" / "configurable-http-proxy"
# The Python students' servers, kernels and report runs use: the course environment's own, unless its interpreter
# lives where other users cannot go (a pyenv in /root): then a small venv of the system's Python of the same
# version, whose one .pth file adds the course environment's packages (read-only, nothing installed twice).
BRIDGE = CLASS_DIR / "student-python"
WORKSPACE_NAME = "workspace"  # each student's copy of the course: ~/workspace, as `make lab` makes it
LANGUAGES = ("en", "zh", "both")
LOGIN = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
# What students may read in the checkout: the environment, the self-checks, the Jupyter style sheet, the tools the
# workspace and the report run, and this folder (its data/ is the hub's own). Everything else (the source notebooks
# with their answers, tests, handouts, .git) is closed to them, and so are the reference answers inside companion/.
STUDENT_READABLE = {".venv", "companion", "jupyter", "tools", "class"}
TEACHER_ONLY_INSIDE = ("companion/checks/answers",)


def data_dir() -> Path:
    return Path(os.environ.get("COURSE_HUB_DATA") or CLASS_DIR / "data").resolve()


def stage_dir() -> Path:
    """The stubbed lessons (both languages, no answers) the workspaces are copied from: readable by students."""
    return data_dir() / "course"


def ensure_data_dir() -> Path:
    data = data_dir()
    data.mkdir(parents=True, exist_ok=True)
    data.chmod(0o711)  # students reach data/course/ by name, list nothing, read nothing else
    return data


# The roster --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    name: str
    language: str = "both"
    teacher: bool = False

    def line(self) -> str:
        return f"{self.name} {self.language}" + (" teacher" if self.teacher else "")


def read_roster(path: Path) -> list[Member]:
    """`login [en|zh|both] [teacher]` a line; `#` starts a comment."""
    members = {}
    for number, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        name, rest = words[0], words[1:]
        language = next((w for w in rest if w in LANGUAGES), "both")
        unknown = [w for w in rest if w not in LANGUAGES and w != "teacher"]
        if not LOGIN.match(name) or unknown:
            raise SystemExit(f"{path}:{number}: expected `login [en|zh|both] [teacher]`, got {raw.strip()!r}")
        members[name] = Member(name, language, "teacher" in rest)
    return list(members.values())


def class_roster() -> Path:
    return data_dir() / "roster.txt"


def current_roster() -> list[Member]:
    return read_roster(class_roster()) if class_roster().exists() else []


def write_roster(members: list[Member]) -> None:
    ensure_data_dir()
    text = "# The class on this hub (class/hub.py add-users / remove-users keep it)\n"
    class_roster().write_text(text + "".join(m.line() + "\n" for m in members), encoding="utf-8")
    class_roster().chmod(0o600)


def member(name: str) -> Member | None:
    return next((m for m in current_roster() if m.name == name), None)


# The course the workspaces are copied from ----------------------------------------------------------------------


def stage() -> Path:
    """Write data/course/: every lesson stubbed (both languages) and the documents beside them, world-readable.
    Students' syncs read this, never notebooks/ (closed to them: it holds the answers)."""
    from tools.workspace import copy_text, source_files

    target = stage_dir()
    ensure_data_dir()
    target.mkdir(exist_ok=True)
    target.chmod(0o755)
    wanted = set()
    for source in source_files(NOTEBOOKS):
        wanted.add(source.name)
        text = copy_text(source, "both")
        path = target / source.name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            temporary = path.with_suffix(path.suffix + ".new")
            temporary.write_text(text, encoding="utf-8")
            temporary.chmod(0o644)
            temporary.replace(path)
    for old in target.iterdir():
        if old.name not in wanted:
            old.unlink()
    return target


def sync_workspace(language: str | None) -> int:
    """Run as the student (by the hub's pre-spawn hook): make or update ~/workspace with the workspace rules."""
    from tools.workspace import Workspace

    os.umask(0o077)
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    folder = home / WORKSPACE_NAME
    workspace = Workspace(folder, notebook_dir=stage_dir())
    first = not workspace.manifest_path.exists()
    report = workspace.sync(language if first else None)  # the roster's language on first login, then theirs
    print(f"{folder}: {'created' if first else 'synced'} ({workspace.language})")
    for line in report.lines(folder, "ask your teacher to refresh"):
        print(line)
    return 0


# The students' Python -------------------------------------------------------------------------------------------


def runs_as_student(python: Path) -> bool:
    """Whether a user with no rights of its own (nobody) can run `python` and import the course."""
    try:
        done = subprocess.run(
            [str(python), "-c", "import torch, companion, jupyterhub.singleuser"],
            user="nobody",
            group="nogroup",
            extra_groups=[],
            cwd="/",
            capture_output=True,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def student_python() -> Path:
    """The interpreter students' processes run (see BRIDGE)."""
    bridge = BRIDGE / "bin" / "python"
    return bridge if bridge.exists() else PYTHON


def ask_course_python(code: str) -> str:
    """What the course environment's Python prints for `code` (its version, its site-packages)."""
    return subprocess.run([str(PYTHON), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def ensure_student_python() -> Path:
    if runs_as_student(student_python()):
        return student_python()
    version = ask_course_python("import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')")
    system = next(
        (Path(p) for p in (f"/usr/bin/python{version}", f"/usr/local/bin/python{version}") if Path(p).exists()), None
    )
    if system is None:
        raise SystemExit(
            f"Students cannot run the course environment's Python ({PYTHON.resolve()}), and there is no system "
            f"python{version} to run it with: build .venv from a Python every user can run (`make venv PYTHON=...`)."
        )
    shutil.rmtree(BRIDGE, ignore_errors=True)
    subprocess.run([str(system), "-m", "venv", "--without-pip", str(BRIDGE)], check=True)
    site = ask_course_python("import sysconfig; print(sysconfig.get_paths()['purelib'])")
    (BRIDGE / "lib" / f"python{version}" / "site-packages" / "course-env.pth").write_text(
        f"import site; site.addsitedir({site!r})\n"
    )
    for shared in ("etc", "share"):  # Jupyter's config (server extensions) and data (Lab, kernels) under sys.prefix
        if (VENV / shared).exists():
            (BRIDGE / shared).symlink_to(VENV / shared)
    for path in [BRIDGE, *BRIDGE.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    if not runs_as_student(student_python()):
        raise SystemExit(f"Students cannot run {student_python()} either: see class/README.md")
    print(f"students run the course environment with {system} ({BRIDGE})")
    return student_python()


# The permission model ---------------------------------------------------------------------------------------------


def modes_file() -> Path:
    return data_dir() / "unlocked-modes.json"


def lock() -> None:
    """Close the checkout to other users except what students need (STUDENT_READABLE); remember the old modes."""
    ensure_data_dir()
    paths = [ROOT] + [p for p in ROOT.iterdir() if p.name not in STUDENT_READABLE]
    paths += [ROOT / p for p in TEACHER_ONLY_INSIDE if (ROOT / p).exists()]
    old = json.loads(modes_file().read_text()) if modes_file().exists() else {}
    for path in paths:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if path.is_symlink():
            continue
        old.setdefault(str(path), mode)
        # The root stays listable (755): Python imports the tools package from it only if it can list it, and its
        # entries' names are no secret. Every other entry closed here gives other users nothing.
        path.chmod((mode & ~0o007) | (0o005 if path == ROOT else 0))
    modes_file().write_text(json.dumps(old, indent=1) + "\n")
    modes_file().chmod(0o600)


def closed_ancestors() -> list[Path]:
    """The folders above the checkout that other users may not enter: students could reach nothing inside."""
    return [p for p in ROOT.parents if not stat.S_IMODE(p.stat().st_mode) & 0o001]


def unlock() -> None:
    """Give back the modes lock() changed."""
    if not modes_file().exists():
        return
    for path, mode in json.loads(modes_file().read_text()).items():
        if Path(path).exists():
            Path(path).chmod(mode)
    modes_file().unlink()


# Users ----------------------------------------------------------------------------------------------------------


def created_file() -> Path:
    return data_dir() / "created-users.txt"


def created_users() -> set[str]:
    return set(created_file().read_text().split()) if created_file().exists() else set()


def system_user(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def add_users(roster: Path, passwords: Path | None = None) -> int:
    members = read_roster(roster)
    ensure_data_dir()
    passwords = passwords or data_dir() / "passwords.csv"
    new_passwords = []
    for m in members:
        if system_user(m.name) is None:
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--user-group", m.name], check=True)
            password = secrets.token_urlsafe(9)
            subprocess.run(["chpasswd"], input=f"{m.name}:{password}\n", text=True, check=True)
            with created_file().open("a") as f:
                f.write(m.name + "\n")
            created_file().chmod(0o600)
            new_passwords.append((m.name, password))
            print(f"created system user {m.name}")
        else:
            print(f"system user {m.name} exists: kept, with its password")
        Path(system_user(m.name).pw_dir).chmod(0o700)  # a home no other student can enter
    merged = {m.name: m for m in current_roster()}
    merged.update({m.name: m for m in members})
    write_roster(list(merged.values()))
    if new_passwords:
        new_file = not passwords.exists()
        with passwords.open("a", newline="") as f:
            writer = csv.writer(f)
            if new_file:
                writer.writerow(["login", "password"])
            writer.writerows(new_passwords)
        passwords.chmod(0o600)
        print(f"first passwords of {len(new_passwords)} new users: {passwords} (root only; hand them out, then delete)")
    print(f"class roster: {class_roster()} ({len(merged)} people); the hub reads it at each login")
    return 0


def admin_token() -> str:
    """The token of the hub's `course-admin` service (class/jupyterhub_config.py), made on first use."""
    path = ensure_data_dir() / "admin-token"
    if not path.exists():
        path.write_text(secrets.token_hex(32))
        path.chmod(0o600)
    return path.read_text().strip()


def hub_api(method: str, path: str) -> int:
    settings = hub_settings()
    url = f"http://{settings['ip']}:{settings['port']}/hub/api{path}"
    request = urllib.request.Request(url, method=method, headers={"Authorization": f"token {admin_token()}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def remove_users(roster: Path, keep_system_users: bool = False) -> int:
    names = [m.name for m in read_roster(roster)]
    running = hub_pid() is not None
    archive = data_dir() / "archive"
    for name in names:
        if running:
            status = hub_api("DELETE", f"/users/{name}")  # stops the server, forgets the user
            print(f"{name}: taken off the hub (HTTP {status})")
        user = system_user(name)
        if user is None or keep_system_users:
            continue
        if name not in created_users():
            print(f"{name}: a system user class/hub.py did not create: left alone (delete it yourself)")
            continue
        subprocess.run(["pkill", "-KILL", "-u", name], check=False)  # anything of theirs still running
        home = Path(user.pw_dir)
        if home.exists():
            archive.mkdir(mode=0o700, exist_ok=True)
            target = archive / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.tar.gz"
            with tarfile.open(target, "w:gz") as tar:
                tar.add(home, arcname=name)
            target.chmod(0o600)
            print(f"{name}: home archived in {target}")
        subprocess.run(["userdel", "--remove", name], check=False, stderr=subprocess.DEVNULL)
        left = created_users() - {name}
        created_file().write_text("".join(n + "\n" for n in sorted(left)))
        print(f"{name}: system user deleted")
    write_roster([m for m in current_roster() if m.name not in names])
    return 0


# The hub process ------------------------------------------------------------------------------------------------


def settings_file() -> Path:
    return data_dir() / "hub.json"


def hub_settings() -> dict:
    return json.loads(settings_file().read_text()) if settings_file().exists() else {}


def hub_pid() -> int | None:
    pid = hub_settings().get("pid")
    if not pid:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    return pid


def install() -> None:
    """What the hub needs beyond `make venv`: the `class` extra in .venv, the proxy from npm in class/."""
    if not PYTHON.exists():
        subprocess.run([sys.executable, str(TOOLS / "course.py"), "venv"], check=True, cwd=ROOT)
    have = subprocess.run([str(PYTHON), "-c", "import jupyterhub, jupyterhub_idle_culler"], capture_output=True)
    if have.returncode != 0:
        constraints = VENV / "constraints-without-torch.txt"
        pin = ["-c", str(constraints)] if constraints.exists() else []
        subprocess.run(
            [str(PYTHON), "-m", "pip", "install", "--quiet", *pin, "-e", ".[course,class]"], cwd=ROOT, check=True
        )
    if not PROXY.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit(
                "The hub's proxy comes from npm: install Node.js 20+ (Debian: apt-get install nodejs npm)."
            )
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--prefix", str(CLASS_DIR)], check=True)


def start(ip: str, port: int, api_port: int | None, proxy_port: int | None, timeout: float = 120) -> int:
    if os.geteuid() != 0:
        raise SystemExit("Run the hub as root: it starts each student's server as that student.")
    if hub_pid() is not None:
        print(f"The hub is already running: http://{hub_settings()['ip']}:{hub_settings()['port']}/")
        return 0
    if closed := closed_ancestors():
        folders = " ".join(str(p) for p in closed)
        raise SystemExit(
            f"Students cannot reach the course: other users may not enter {folders}. Let them pass through "
            f"(`chmod o+x {folders}`: enter, not list), or put the checkout somewhere they can (e.g. /srv)."
        )
    install()
    data = ensure_data_dir()
    if not class_roster().exists():
        print("No class roster yet: add people with `class/hub.py add-users ROSTER` (class/roster.example.txt).")
    lock()
    ensure_student_python()
    stage()
    admin_token()
    from companion._ports import free_port  # standard library only: no torch in the hub's process

    settings = {
        "ip": ip,
        "port": port,
        "api_port": api_port or free_port(),
        "proxy_port": proxy_port or free_port(),
    }
    settings_file().write_text(json.dumps(settings))
    env = {
        **os.environ,
        "COURSE_HUB_DATA": str(data),
        "COURSE_HUB_IP": ip,
        "COURSE_HUB_PORT": str(port),
        "COURSE_HUB_API_PORT": str(settings["api_port"]),
        "COURSE_PROXY_API_PORT": str(settings["proxy_port"]),
    }
    log = (data / "hub.log").open("ab")
    process = subprocess.Popen(
        [str(VENV / "bin" / "jupyterhub"), "-f", str(CONFIG)],
        cwd=data,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    settings["pid"] = process.pid
    settings_file().write_text(json.dumps(settings))
    url = f"http://{ip}:{port}/hub/health"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            print(f"The hub stopped at once (exit {process.returncode}); its log: {data / 'hub.log'}")
            return 1
        try:
            with urllib.request.urlopen(url, timeout=5):
                print(f"The hub is running: http://{ip}:{port}/ (pid {process.pid}, log {data / 'hub.log'})")
                return 0
        except OSError:
            time.sleep(0.5)
    print(f"The hub did not answer within {timeout:g} s; its log: {data / 'hub.log'}")
    stop()
    return 1


def stop(timeout: float = 60) -> int:
    pid = hub_pid()
    if pid is None:
        print("The hub is not running.")
        settings_file().unlink(missing_ok=True)
        return 0
    os.kill(pid, signal.SIGTERM)  # the hub stops every student's server and its proxy on the way out
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and hub_pid() is not None:
        time.sleep(0.3)
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    if hub_pid() is not None:
        os.killpg(pid, signal.SIGKILL)
        print(f"The hub did not stop within {timeout:g} s: killed")
    proxy_pid = data_dir() / "jupyterhub-proxy.pid"
    if proxy_pid.exists():  # a proxy the hub could not stop (killed hub)
        try:
            os.kill(int(proxy_pid.read_text().strip()), signal.SIGTERM)
        except (ValueError, ProcessLookupError):
            pass
        proxy_pid.unlink(missing_ok=True)
    settings_file().unlink(missing_ok=True)
    print("The hub is stopped.")
    return 0


def status() -> int:
    pid = hub_pid()
    roster = current_roster()
    where = f"http://{hub_settings()['ip']}:{hub_settings()['port']}/ (pid {pid})" if pid else "not running"
    print(
        f"hub: {where}\ndata: {data_dir()}\nroster: {len(roster)} people, teachers: "
        f"{', '.join(m.name for m in roster if m.teacher) or 'none'}"
    )
    return 0


def progress(extra: list[str]) -> int:
    command = [str(PYTHON), "-m", "tools.class_progress", "--roster", str(class_roster())]
    if not any(a.startswith("--out") for a in extra):
        command += ["--out", str(data_dir() / "reports")]
    return subprocess.call(command + extra, cwd=ROOT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    start_parser = commands.add_parser("start")
    start_parser.add_argument("--ip", default=os.environ.get("HUB_IP", "127.0.0.1"))
    start_parser.add_argument("--port", type=int, default=int(os.environ.get("HUB_PORT", "8000")))
    start_parser.add_argument("--api-port", type=int, help="the hub's internal API (default: a free port)")
    start_parser.add_argument("--proxy-api-port", type=int, help="the proxy's API (default: a free port)")
    commands.add_parser("stop")
    commands.add_parser("status")
    add = commands.add_parser("add-users")
    add.add_argument("roster", type=Path)
    add.add_argument("--passwords", type=Path, help="where the new users' first passwords go (data/passwords.csv)")
    remove = commands.add_parser("remove-users")
    remove.add_argument("roster", type=Path)
    remove.add_argument("--keep-system-users", action="store_true", help="only take them off the hub")
    commands.add_parser("progress", add_help=False)
    commands.add_parser("stage")
    commands.add_parser("lock")
    commands.add_parser("unlock")
    sync = commands.add_parser("sync-workspace")
    sync.add_argument("--lang", choices=LANGUAGES)
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "progress":
        parser.error(f"unrecognised arguments: {' '.join(extra)}")
    if args.command == "start":
        return start(args.ip, args.port, args.api_port, args.proxy_api_port)
    if args.command == "stop":
        return stop()
    if args.command == "status":
        return status()
    if args.command == "add-users":
        return add_users(args.roster, args.passwords)
    if args.command == "remove-users":
        return remove_users(args.roster, args.keep_system_users)
    if args.command == "progress":
        return progress(extra)
    if args.command == "stage":
        print(stage())
        return 0
    if args.command == "lock":
        lock()
        return 0
    if args.command == "unlock":
        unlock()
        return 0
    if args.command == "sync-workspace":
        return sync_workspace(args.lang)
    return 2


if __name__ == "__main__":
    sys.exit(main())
