"""Lesson 12: start the lesson's DDP script from a notebook or a test, wait for it, read every rank's result in rank
order, and turn a failed launch into one error that names the rank that failed first.

The script is any file that, on each rank, writes OUT/rank<N>.json (OUT comes from `--out OUT`, which the launcher
adds). No fixed port anywhere: torchrun's --standalone rendezvous takes a free port of its own, the "two nodes" run
and torch.multiprocessing.spawn ask the system for a free port when they start. So two launches at once never collide.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil
import torch.multiprocessing

from companion._ports import free_port
from companion._torch_errors import SPAWN_RANK_TERMINATED
from companion._validate import require_int
from companion.ddp import spawn_worker
from companion.language import in_language

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]  # `torchrun` itself may not be on the kernel's PATH
OLD_LAUNCHER = [sys.executable, "-m", "torch.distributed.launch"]
# The argument handling of the notes' ddp.py, plus two prints that show what each rank receives. The lesson prints
# the script, so the Chinese edition's prints are in Chinese; `NOTES_SCRIPT` (a module attribute, see __getattr__)
# is this edition's.
_NOTES_SCRIPT = """\
import argparse
import os
import sys

rank = os.environ["RANK"]
print(f"rank {rank}: arguments {sys.argv[1:]}, LOCAL_RANK={os.environ['LOCAL_RANK']}", flush=True)
parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", default=-1, type=int)
args = parser.parse_args()
print(f"rank {rank}: args.local_rank = {args.local_rank}", flush=True)
"""
_NOTES_SCRIPT_ZH = _NOTES_SCRIPT.replace(
    "rank {rank}: arguments {sys.argv[1:]}, ", "rank {rank}：参数 {sys.argv[1:]}，"
)
_NOTES_SCRIPT_ZH = _NOTES_SCRIPT_ZH.replace("rank {rank}: args", "rank {rank}：args")
# After one agent of a multi-node run fails, how long the others get to notice before they are stopped.
FAILURE_GRACE_S = 15.0
RESULT_KEYS = ("rank", "local_rank", "node_rank", "world_size", "backend", "device")  # what describe() shows


def __getattr__(name: str) -> str:
    """NOTES_SCRIPT in the edition's language, chosen when it is looked up (the kernel's COURSE_LANG)."""
    if name == "NOTES_SCRIPT":
        return in_language(_NOTES_SCRIPT, _NOTES_SCRIPT_ZH)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class LaunchError(RuntimeError):
    """A launch that failed: the first failing rank's error, plus exit codes, worker process ids and stderr."""

    def __init__(self, message: str, rank: int | None = None, returncodes=(), pids=(), stderr: str = "") -> None:
        super().__init__(message)
        self.rank, self.returncodes, self.pids, self.stderr = rank, list(returncodes), list(pids), stderr


class RankResults(list):
    """What each rank wrote (dicts, ordered by rank), with the launch's stdout (printed by rank 0) and duration."""

    def __init__(self, results: list[dict], stdout: str = "", seconds: float = 0.0) -> None:
        super().__init__(results)
        self.stdout, self.seconds = stdout, seconds


@dataclass
class ScriptRun:
    """A plain script started on several ranks: exit code, stdout lines in rank order, stderr lines."""

    returncode: int
    stdout: list[str]
    stderr: list[str]

    def find(self, word: str) -> list[str]:
        """Each distinct stderr line containing `word`, from `word` on (so no machine path), sorted."""
        return sorted({line[line.index(word) :].rstrip() for line in self.stderr if word in line})


# ----------------------------------------------------------------------------------------------------------------
# Launching and collecting.


def launch(
    script: str | Path,
    *args: str,
    nproc: int = 2,
    workdir: str | Path | None = None,
    device: str | None = None,
    timeout: float = 120.0,
) -> RankResults:
    """Run `script` on `nproc` ranks with torchrun --standalone; return each rank's result, ordered by rank.

    `args` go to the script (e.g. "--epochs", "2"); `device` sets COURSE_DEVICE for the ranks ("cpu" pins them to
    the CPU); `workdir` keeps the files the ranks write (a temporary folder otherwise). A failing rank raises
    LaunchError with that rank's exception message.
    """
    script, args = _check_script(script), _script_args(args)
    _check_count(nproc, "nproc")
    with _folder(workdir) as out:
        command = torchrun_command(nproc, str(script), "--out", str(out), *args)
        return _launch([command], out, nproc, worker_environment(device, out / "logs"), timeout)


def launch_nodes(
    script: str | Path,
    *args: str,
    nnodes: int = 2,
    nproc_per_node: int = 1,
    rendezvous: str = "static",
    workdir: str | Path | None = None,
    device: str | None = None,
    timeout: float = 120.0,
) -> RankResults:
    """Run `script` as if on `nnodes` machines: one torchrun per "node", meeting on 127.0.0.1 at a free port."""
    script, args = _check_script(script), _script_args(args)
    _check_count(nnodes, "nnodes")
    _check_count(nproc_per_node, "nproc_per_node")
    with _folder(workdir) as out:
        port = free_port()
        commands = [
            node_command(
                nnodes, node, nproc_per_node, port, str(script), "--out", str(out), *args, rendezvous=rendezvous
            )
            for node in range(nnodes)
        ]
        env = worker_environment(device, out / "logs")
        return _launch(commands, out, nnodes * nproc_per_node, env, timeout)


def spawn(
    script: str | Path, *args: str, nproc: int = 2, workdir: str | Path | None = None, device: str | None = None
) -> RankResults:
    """Run `script` on `nproc` ranks with torch.multiprocessing.spawn from this process (no torchrun).

    Each child sets the variables torchrun would set (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and
    runs the script as __main__; see companion.ddp.spawn_worker.
    """
    script, args = _check_script(script), _script_args(args)
    _check_count(nproc, "nproc")
    with _folder(workdir) as out:
        start = time.monotonic()
        argv = ["--out", str(out), *args]
        try:
            # A fresh interpreter per rank ("spawn"). Not a fork server: it would import torch once for all ranks,
            # but a Jupyter kernel that has started one no longer shuts down cleanly (it is killed, and leaves the
            # server's socket folder in the temporary folder).
            torch.multiprocessing.spawn(
                spawn_worker, args=(nproc, free_port(), str(script), argv, device), nprocs=nproc
            )
        except Exception as error:  # ProcessRaisedException, ProcessExitedException
            raise _spawn_failure(error) from None
        stdout = (out / "rank0.out").read_text(encoding="utf-8")
        return _collect(out, nproc, stdout, time.monotonic() - start)


def run_script(
    source: str, nproc: int = 2, *, old_launcher: bool = False, name: str = "ddp.py", timeout: float = 60.0
) -> ScriptRun:
    """Save `source` as `name` and start it on `nproc` ranks with torchrun, or with the deprecated launcher.

    Each rank's output goes to files of its own (`--redirects=3`), read back in rank order: lines that ranks print
    at the same moment cannot interleave. Torchrun stops the other ranks as soon as one fails;
    `--monitor-interval=2` gives every rank two seconds to print its own error first, so the output is complete.
    """
    _check_count(nproc, "nproc")
    with tempfile.TemporaryDirectory() as folder:
        script, logs = Path(folder) / name, Path(folder) / "logs"
        script.write_text(source, encoding="utf-8")
        size = ["--nproc_per_node", str(nproc)] if old_launcher else [f"--nproc-per-node={nproc}"]
        launcher = OLD_LAUNCHER if old_launcher else TORCHRUN
        options = ["--standalone", *size, "--monitor-interval=2", f"--log-dir={logs}", "--redirects=3"]
        codes, _, stderr, _ = _run([[*launcher, *options, str(script)]], Path(folder), worker_environment(), timeout)
        streams = {"stdout": [], "stderr": stderr.splitlines()}  # the launcher's own stderr, then each rank's
        for rank in range(nproc):
            for stream, lines in streams.items():  # logs/<run id>/attempt_0/<local rank>/stdout.log
                for log in sorted(logs.glob(f"*/attempt_*/{rank}/{stream}.log")):
                    lines += log.read_text(encoding="utf-8").splitlines()
    return ScriptRun(codes[0], streams["stdout"], streams["stderr"])


def describe(results: Sequence[dict]) -> str:
    """One line per rank: who it is (rank, local rank, node, world size) and where it computes."""
    for r in results:
        missing = [key for key in RESULT_KEYS if key not in r]
        if missing:
            raise ValueError(
                in_language(
                    f"a result lacks {missing}: pass the results of launch() (or launch_nodes(), spawn())",
                    f"结果里缺少 {missing}：请传入 launch()（或 launch_nodes()、spawn()）的结果",
                )
            )
    return "\n".join(
        in_language(
            f"rank {r['rank']}: local rank {r['local_rank']}, node {r['node_rank']}, world size {r['world_size']}, "
            f"{r['backend']} on {r['device']}",
            f"rank {r['rank']}：local_rank {r['local_rank']}，节点 {r['node_rank']}，world_size {r['world_size']}，"
            f"{r['backend']}，在 {r['device']} 上",
        )
        for r in results
    )


# ----------------------------------------------------------------------------------------------------------------
# Commands.


def torchrun_command(nproc: int, script: str, *args: str) -> list[str]:
    """The command that starts `script` on `nproc` ranks of this machine: torchrun --standalone (a free port)."""
    _check_count(nproc, "nproc")
    return [*TORCHRUN, "--standalone", f"--nproc-per-node={nproc}", *_check_args([script, *args])]


def node_command(
    nnodes: int, node_rank: int, nproc_per_node: int, port: int, script: str, *args: str, rendezvous: str = "static"
) -> list[str]:
    """The torchrun command for machine `node_rank` of `nnodes`; node 0 hosts the rendezvous on 127.0.0.1:`port`.

    rendezvous="static" (torchrun's default) orders the nodes by --node-rank. With "c10d", the rendezvous hands out
    node ranks itself in the order it likes, and --node-rank is ignored.
    """
    _check_count(nnodes, "nnodes")
    _check_count(nproc_per_node, "nproc_per_node")
    if not 0 <= node_rank < nnodes:
        raise ValueError(
            in_language(
                f"node_rank must be in 0..{nnodes - 1} for nnodes={nnodes}, not {node_rank}",
                f"node_rank 必须在 0..{nnodes - 1} 内（nnodes={nnodes}），而不是 {node_rank}",
            )
        )
    require_int(port, "port", example="free_port()")
    if not 1 <= port <= 65535:
        raise ValueError(
            in_language(
                f"port must be a TCP port in 1..65535, e.g. free_port(), not {port}",
                f"port 必须是 1..65535 内的 TCP 端口，例如 free_port()，而不是 {port}",
            )
        )
    sizes = [f"--nnodes={nnodes}", f"--node-rank={node_rank}", f"--nproc-per-node={nproc_per_node}"]
    if rendezvous == "static":
        meeting = ["--master-addr=127.0.0.1", f"--master-port={port}"]
    elif rendezvous == "c10d":
        meeting = [
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{port}",
            f"--rdzv-id=lesson12-{port}",
            f"--rdzv-conf=is_host={int(node_rank == 0)}",  # say who hosts: both "nodes" have the same address
            "--local-addr=127.0.0.1",
        ]
    else:
        raise ValueError(
            in_language(
                f"rendezvous must be 'static' or 'c10d', not {rendezvous!r}",
                f"rendezvous 必须是 'static' 或 'c10d'，而不是 {rendezvous!r}",
            )
        )
    return [*TORCHRUN, *sizes, *meeting, *_check_args([script, *args])]


def shown(command: Sequence[str]) -> str:
    """A command as you would type it: `torchrun` for the launcher module, OUT for the folder, PORT for the port."""
    if isinstance(command, str):
        raise TypeError(
            in_language(
                "shown takes the words of a command: pass the command as a list of words, e.g. "
                "torchrun_command(2, script)",
                "shown 接受的是命令的各个词：请把命令作为词的列表传入，例如 torchrun_command(2, script)",
            )
        )
    words = list(command)
    for prefix, name in ((TORCHRUN, "torchrun"), (OLD_LAUNCHER, "python -m torch.distributed.launch")):
        if words[: len(prefix)] == prefix:
            words = [name, *words[len(prefix) :]]
    words = ["OUT" if i > 0 and words[i - 1] == "--out" else w for i, w in enumerate(words)]
    return re.sub(r"(--master-port=|127\.0\.0\.1:|lesson12-)\d+", r"\1PORT", " ".join(words))


def worker_environment(device: str | None = None, log_dir: str | Path | None = None) -> dict[str, str]:
    """This process's environment, plus: companion importable, one thread per rank, COURSE_DEVICE if given,
    torchrun's log folder (PET_LOG_DIR, the same as --log-dir), where it keeps each failed rank's error.json, and on
    Windows USE_LIBUV=0, without which torchrun stops at its first step there."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("OMP_NUM_THREADS", "1")  # torchrun would set it too, with a banner on stderr
    if sys.platform == "win32":  # Windows builds lack libuv, which torchrun's store asks for (pytorch/pytorch#148283)
        env.setdefault("USE_LIBUV", "0")
    if device is not None:
        if not isinstance(device, str):
            kind = type(device).__name__
            raise TypeError(
                in_language(
                    f"device must be a name such as 'cpu' or 'cuda', not {kind}",
                    f"device 必须是设备名，例如 'cpu' 或 'cuda'，而不是 {kind}",
                )
            )
        env["COURSE_DEVICE"] = device
    if log_dir is not None:
        env["PET_LOG_DIR"] = str(log_dir)
    return env


# ----------------------------------------------------------------------------------------------------------------
# Processes: find and stop what a launch left behind.


def still_running(marker: str | Path) -> list[int]:
    """Process ids of every process whose command line contains `marker` (e.g. a launch's work folder)."""
    if not str(marker).strip():
        raise ValueError(
            in_language(
                "an empty marker matches every process: pass a marker such as the launch's work folder",
                "空的 marker 会匹配所有进程：请传入一个标记，例如这次启动的工作文件夹",
            )
        )
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if str(marker) in " ".join(process.info["cmdline"] or []):
                found.append(process.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def stop_process_tree(pid: int, grace: float = 5.0) -> None:
    """Stop process `pid` and all its descendants: SIGTERM first, SIGKILL for whatever is left after `grace` s."""
    require_int(pid, "pid", example=in_language("one from still_running(marker)", "still_running(marker) 给出的一个"))
    try:
        root = psutil.Process(pid)
        family = [*root.children(recursive=True), root]  # the list first: orphans could no longer be found
    except psutil.NoSuchProcess:
        return
    for process in family:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(family, timeout=grace)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=grace)


# ----------------------------------------------------------------------------------------------------------------
# Inside.


def _check_count(value: int, name: str) -> None:
    require_int(value, name)
    if not 1 <= value <= 64:
        raise ValueError(
            in_language(f"{name} must be between 1 and 64, not {value}", f"{name} 必须在 1 和 64 之间，而不是 {value}")
        )


def _check_args(args: Sequence[str]) -> list[str]:
    if not all(isinstance(a, str) for a in args):
        raise TypeError(
            in_language(
                f"pass the script's arguments as strings, e.g. '--epochs', '2', not {list(args)!r}",
                f"脚本的参数请用字符串传入，例如 '--epochs', '2'，而不是 {list(args)!r}",
            )
        )
    return list(args)


def _check_script(script: str | Path) -> Path:
    """The script as an absolute path (the ranks start in their work folder), or an error that says what to pass."""
    if not isinstance(script, str | os.PathLike):
        kind = type(script).__name__
        raise TypeError(
            in_language(
                f"script must be the path of a Python file such as 'ddp/train.py', not {kind}",
                f"script 必须是 Python 文件的路径，例如 'ddp/train.py'，而不是 {kind}",
            )
        )
    path = Path(script)
    if not path.is_file():
        raise FileNotFoundError(
            in_language(
                f"no script '{script}' here: run the cell that writes it (%%writefile {script}) first, "
                "or pass the path of a Python file",
                f"这里没有脚本 '{script}'：请先运行写出它的单元格（%%writefile {script}），"
                "或者传入一个 Python 文件的路径",
            )
        )
    return path.resolve()


def _script_args(args: Sequence[str]) -> list[str]:
    """The learner's arguments for the script: strings, and no --out (the launcher chooses the folder)."""
    if "--out" in _check_args(args):
        raise ValueError(
            in_language(
                "do not pass --out: the launcher gives the ranks their folder (use workdir= to keep it)",
                "不要传 --out：启动器会给各个 rank 分配文件夹（要保留它请用 workdir=）",
            )
        )
    return list(args)


@contextmanager
def _folder(workdir: str | Path | None) -> Iterator[Path]:
    """`workdir` cleared of an earlier launch's rank files, or a temporary folder removed afterwards."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="ddp-") as folder:
            yield Path(folder)
        return
    folder = Path(workdir).resolve()  # the ranks run in it: a relative path would point inside itself
    folder.mkdir(parents=True, exist_ok=True)
    for old in [*folder.glob("rank*"), *folder.glob("logs/*/attempt_*/*/error.json")]:
        old.unlink()
    yield folder


def _run(
    commands: list[list[str]], out: Path, env: dict[str, str], timeout: float
) -> tuple[list[int], str, str, list[int]]:
    """Start every command at once (output to files), wait for all; stop them all on a timeout or a failure.

    Returns the exit codes, stdout, stderr and the process ids of every worker seen while waiting.
    """
    logs, processes, seen = [], [], set()
    try:
        for i, command in enumerate(commands):
            stdout, stderr = open(out / f"agent{i}.out", "w+"), open(out / f"agent{i}.err", "w+")
            logs += [stdout, stderr]
            processes.append(
                subprocess.Popen(command, env=env, cwd=out, stdout=stdout, stderr=stderr, start_new_session=True)
            )
        deadline, failed_at, scanned = time.monotonic() + timeout, None, 0.0
        while any(p.poll() is None for p in processes):
            now = time.monotonic()
            if now > scanned + 0.25:  # a scan of the process table costs more than a poll
                seen |= _descendants(processes)
                scanned = now
            if failed_at is None and any(p.returncode not in (None, 0) for p in processes):
                failed_at = now
            if now > deadline or (failed_at is not None and now > failed_at + FAILURE_GRACE_S):
                break
            time.sleep(0.05)
    finally:
        timed_out = any(p.poll() is None for p in processes)
        for process in processes:
            if process.poll() is None:
                stop_process_tree(process.pid)
            process.wait()
        texts = []
        for log in logs:
            log.seek(0)
            texts.append(log.read())
            log.close()
    if timed_out:
        said = in_language(
            f"no result within {timeout:g} s: the launch was stopped", f"{timeout:g} 秒内没有结果：启动已被停止"
        )
        raise LaunchError(said, stderr="".join(texts[1::2]))
    return [p.returncode for p in processes], "".join(texts[0::2]), "".join(texts[1::2]), sorted(seen)


def _descendants(processes: list[subprocess.Popen]) -> set[int]:
    """Process ids of everything the launchers have started so far (their workers)."""
    found = set()
    for process in processes:
        try:
            found |= {child.pid for child in psutil.Process(process.pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            continue
    return found


def _launch(commands: list[list[str]], out: Path, world_size: int, env: dict[str, str], timeout: float):
    start = time.monotonic()
    codes, stdout, stderr, pids = _run(commands, out, env, timeout)
    if any(codes):
        raise _failure(out, codes, stderr, pids, one_node=len(commands) == 1)
    return _collect(out, world_size, stdout, time.monotonic() - start)


def _failure(out: Path, codes: list[int], stderr: str, pids: list[int], one_node: bool) -> LaunchError:
    """The error of the rank that failed first, from the error.json that @record wrote for it through torchrun
    (logs/<run>/attempt_0/<local rank>/error.json); without one, the launcher's last words."""
    errors = []
    for path in out.glob("logs/*/attempt_*/*/error.json"):
        message = json.loads(path.read_text(encoding="utf-8"))["message"]
        text = message["message"] if isinstance(message, dict) else str(message)
        errors.append((path.stat().st_mtime_ns, int(path.parent.name), text))
    if errors:
        _, local_rank, text = min(errors)
        rank = local_rank if one_node else None  # on one node the local rank is the rank
        return LaunchError(_failed(rank, text), rank, codes, pids, stderr)
    lines = [line for line in stderr.splitlines() if line.strip()]
    said = next((line for line in reversed(lines) if "error:" in line.lower()), lines[-1] if lines else "")
    message = in_language(
        f"the launch failed (exit codes {codes}) before any rank reported: {said}",
        f"启动失败（退出码 {codes}），还没有任何 rank 报告：{said}",
    )
    return LaunchError(message, None, codes, pids, stderr)


def _failed(rank: int | None, text: str) -> str:
    """`rank N failed with Type: message` (`a rank` when the rank is unknown), in the edition's language."""
    if rank is None:
        return in_language(f"a rank failed with {text}", f"某个 rank 出错：{text}")
    return in_language(f"rank {rank} failed with {text}", f"rank {rank} 出错：{text}")


def _spawn_failure(error: Exception) -> LaunchError:
    """torch.multiprocessing.spawn's error as a LaunchError: `rank N failed with Type: message`."""
    text = str(error)
    index = SPAWN_RANK_TERMINATED.search(text)
    lines = [line for line in text.strip().splitlines() if line.strip()]
    last = lines[-1].strip() if lines else text
    rank = int(index.group(1)) if index else None
    return LaunchError(_failed(rank, last), rank, [], [], text)


def _collect(out: Path, world_size: int, stdout: str, seconds: float) -> RankResults:
    results = []
    for rank in range(world_size):
        path = out / f"rank{rank}.json"
        if not path.exists():
            raise LaunchError(
                in_language(
                    f"rank {rank} wrote no result: expected {world_size} ranks",
                    f"rank {rank} 没有写出结果：应有 {world_size} 个 rank",
                ),
                rank,
            )
        results.append(json.loads(path.read_text(encoding="utf-8")))
    return RankResults(results, stdout, seconds)
