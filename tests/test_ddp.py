"""Lesson 12: the DDP script the notebook writes, launched for real on the CPU against one process; companion.ddp,
companion.ddp_launch, the exercise checks and tools/soak.py.

Each launch starts real processes, and each process spends seconds importing torch (and, at `DDP(...)`,
torch._dynamo). The lesson's own launches (torchrun on one machine with a checkpoint, torch.multiprocessing.spawn
without and with BatchNorm, a failing rank, the old launcher) run under nbval in the notebook, which compares every
number they print; this file launches only what the lesson does not run: two "nodes" on loopback, with both
rendezvous, at the same moment (which also proves that two launches do not collide), and the note's script under
torchrun.
"""

import json
import os
import re
import subprocess
import sys
import threading
import time
import warnings

import matplotlib.pyplot as plt
import psutil
import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.text import Text
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

from companion import ddp, ddp_launch
from companion.checkpoint import flat_parameters, load_checkpoint
from companion.ddp import (
    allreduce_gradients,
    device_and_backend,
    local_rank_from,
    plot_allreduce,
    plot_sampler,
    regression_data,
    sampler_table,
    spawn_worker,
)
from companion.ddp_launch import (
    NOTES_SCRIPT,
    LaunchError,
    ScriptRun,
    free_port,
    launch,
    launch_nodes,
    node_command,
    run_script,
    shown,
    spawn,
    still_running,
    stop_process_tree,
    torchrun_command,
    worker_environment,
)
from companion.exercises import WrongAnswer
from companion.plotting import COLUMN_WIDTH, use_course_style
from companion.training import train_one_epoch
from tests.bad_inputs import SCRIPT, bad, in_tmp
from tools import soak
from tools.course import CJK

TOLERANCE = 1e-6  # the lesson's claim: DDP's parameters equal one process's to within this


def one_process(model: nn.Module, epochs: int = 3) -> list[float]:
    """The lesson's reference: `model` trained in place on batches of 16 (two ranks x 8), the same sampler seed."""
    dataset = regression_data()
    sampler = DistributedSampler(dataset, num_replicas=1, rank=0, seed=0)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        losses.append(train_one_epoch(model, loader, optimizer, F.mse_loss))
    return losses


def seeded(build, seed: int = 0) -> nn.Module:
    """What rank `seed` of the script builds: torch.manual_seed(rank), then the model (global state left alone)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def largest_difference(a, b) -> float:
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


# ----------------------------------------------------------------------------------------------------------------
# The real launches of the notebook's script.


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    """The lesson's ddp/train.py, taken from the notebook's %%writefile cell."""
    return soak.write_script(tmp_path_factory.mktemp("lesson"))


@pytest.fixture(scope="module")
def node_runs(script, tmp_path_factory):
    """Two "nodes" of one rank each, once with torchrun's static rendezvous (rank 0 saving a checkpoint) and once
    with c10d, started at the same moment, which also proves that two launches do not collide."""
    workdir = tmp_path_factory.mktemp("ddp-train")
    calls = {
        "static": lambda: launch_nodes(script, "--checkpoint", nnodes=2, workdir=workdir, device="cpu"),
        "c10d": lambda: launch_nodes(script, nnodes=2, rendezvous="c10d", device="cpu"),
    }
    outcomes = {}

    def start(name, call):
        try:
            outcomes[name] = call()
        except LaunchError as error:
            outcomes[name] = error

    threads = [threading.Thread(target=start, args=item) for item in calls.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(isinstance(o, list) for o in outcomes.values()), outcomes  # no launch disturbed another
    return outcomes, workdir


@pytest.mark.integration
@pytest.mark.parametrize("rendezvous", ["static", "c10d"])
def test_ddp_on_two_nodes_equals_one_process_on_the_whole_batch(node_runs, rendezvous):
    results = node_runs[0][rendezvous]
    single = seeded(lambda: nn.Linear(3, 1))
    losses = one_process(single)
    assert results[0]["parameters"] == results[1]["parameters"]  # the replicas stay bit-identical
    assert largest_difference(results[0]["parameters"], flat_parameters(single).tolist()) < TOLERANCE
    assert largest_difference(results[0]["epoch_losses"], losses) < 1e-5  # all-reduced: the whole batch's
    assert results[0]["epoch_losses"] == results[1]["epoch_losses"]


@pytest.mark.integration
@pytest.mark.parametrize("rendezvous", ["static", "c10d"])
def test_two_nodes_on_loopback_number_their_ranks_by_node(node_runs, rendezvous):
    nodes = node_runs[0][rendezvous]
    assert [(r["rank"], r["world_size"], r["backend"], r["device"]) for r in nodes] == [
        (0, 2, "gloo", "cpu"),
        (1, 2, "gloo", "cpu"),
    ]
    assert {(r["node_rank"], r["local_rank"]) for r in nodes} == {(0, 0), (1, 0)}
    if rendezvous == "static":  # --node-rank decides the order; c10d numbers the nodes itself
        assert [r["node_rank"] for r in nodes] == [0, 1]


@pytest.mark.integration
def test_ddp_starts_every_rank_from_rank_0s_parameters(node_runs):
    built = [r["built"] for r in node_runs[0]["static"]]
    assert built[0] == flat_parameters(seeded(lambda: nn.Linear(3, 1), 0)).tolist()
    assert built[1] == flat_parameters(seeded(lambda: nn.Linear(3, 1), 1)).tolist() != built[0]  # seeded apart...
    assert [r["started"] for r in node_runs[0]["static"]] == [built[0], built[0]]  # ...made equal by DDP(model)


@pytest.mark.integration
def test_checkpoint_saved_by_rank_0_loads_on_every_rank(node_runs):
    outcomes, workdir = node_runs
    results = outcomes["static"]
    assert [r["checkpoint_equal"] for r in results] == [True, True]
    assert results[0]["keys"] == ["module.weight", "module.bias"]
    state = load_checkpoint(workdir / "checkpoint.pt")["model"]
    model = nn.Linear(3, 1)
    model.load_state_dict(state)  # the plain model's keys: saved from model.module
    assert flat_parameters(model).tolist() == results[0]["parameters"]
    assert not [p.name for p in workdir.iterdir() if p.name.endswith(".tmp")]  # save_checkpoint left no partial


@pytest.mark.integration
def test_under_torchrun_the_notes_parser_gets_no_local_rank_argument():
    # The lesson shows the old launcher failing on the note's script; here torchrun runs it for real.
    run = run_script(NOTES_SCRIPT, 2)
    assert run.returncode == 0 and run.stderr == []
    assert run.stdout == [
        "rank 0: arguments [], LOCAL_RANK=0",
        "rank 0: args.local_rank = -1",
        "rank 1: arguments [], LOCAL_RANK=1",
        "rank 1: args.local_rank = -1",
    ]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_gpus_the_same_script_uses_nccl_and_one_device_per_rank(script):
    nproc = min(2, torch.cuda.device_count())
    results = launch(script, nproc=nproc, device="cuda")
    assert [(r["backend"], r["device"]) for r in results] == [("nccl", "cuda")] * nproc


# ----------------------------------------------------------------------------------------------------------------
# The script's text: the notebook's cell, importable pieces, no fixed port.


def test_the_soak_tool_finds_the_notebooks_script():
    source = soak.notebook_script()
    assert source.startswith("# One rank of data-parallel training.")
    assert "DDP(model.to(device)" in source and "save_checkpoint(" in source and "timeout=timedelta(" in source
    # The CUDA branch that lesson 11 promises: one GPU per rank, bound to the process group and to DDP.
    assert "torch.cuda.set_device(device)" in source and "device_id=device if cuda else None" in source
    assert "device_ids=[local_rank] if cuda else None" in source
    # The clean exit: flush what os._exit would drop, after barrier and destroy_process_group.
    tail = source[source.index("dist.barrier()  # leave together") :]
    assert "dist.destroy_process_group()" in tail
    assert tail.rstrip().endswith("sys.stdout.flush()\n    sys.stderr.flush()\n    os._exit(0)")
    compile(source, "ddp/train.py", "exec")
    assert "29500" not in source


def test_the_soak_command_prints_the_count_and_seconds(monkeypatch, capsys):
    with pytest.raises(ValueError, match="positive int such as 20"):
        soak.soak(0)
    monkeypatch.setattr(soak, "soak", lambda launches, nproc: ([3.0, 4.0], ["rank 1 failed"]))
    assert soak.main(["--launches", "3"]) == 1
    out = capsys.readouterr().out
    assert "3 launches of 2 ranks: 2 good, 1 failed" in out and "median 3.50" in out and "rank 1 failed" in out


# ----------------------------------------------------------------------------------------------------------------
# companion.ddp in this process.


def test_data_is_the_same_for_the_same_seed_and_leaves_the_global_seed_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    assert torch.equal(regression_data(8, seed=1).tensors[0], regression_data(8, seed=1).tensors[0])
    assert not torch.equal(regression_data(8, seed=1).tensors[0], regression_data(8, seed=2).tensors[0])
    assert torch.equal(torch.rand(3), expected)
    x, y = regression_data(5).tensors
    assert x.shape == (5, 3) and y.shape == (5, 1)


def test_flat_parameters_lists_weights_then_bias_and_looks_inside_a_ddp_wrapper():
    model = nn.Linear(3, 1)
    assert flat_parameters(model).tolist() == [*model.weight.flatten().tolist(), model.bias.item()]
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)  # a group of one, this process
    try:
        assert torch.equal(flat_parameters(DDP(model)), flat_parameters(model))
    finally:
        dist.destroy_process_group()


@pytest.fixture
def no_device_override(monkeypatch):
    monkeypatch.delenv("COURSE_DEVICE", raising=False)


def test_device_and_backend_per_rank(monkeypatch, no_device_override):
    assert device_and_backend(1, prefer="cpu") == (torch.device("cpu"), "gloo")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert device_and_backend(1) == (torch.device("cuda", 1), "nccl")
    assert device_and_backend(0) == (torch.device("cuda", 0), "nccl")
    with pytest.raises(ValueError, match=re.escape("--nproc-per-node=2")):
        device_and_backend(2)
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    assert device_and_backend(1) == (torch.device("cpu"), "gloo")


def test_an_apple_gpu_rank_computes_on_the_cpu_with_gloo(monkeypatch, no_device_override):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert device_and_backend(0) == (torch.device("cpu"), "gloo")


@pytest.mark.parametrize(
    ("local_rank", "error", "fix"),
    [("0", TypeError, "LOCAL_RANK"), (True, TypeError, "an int"), (-1, ValueError, "read it from")],
)
def test_device_and_backend_refuses_bad_ranks(local_rank, error, fix):
    with pytest.raises(error, match=fix):
        device_and_backend(local_rank)


def test_local_rank_comes_from_the_argument_or_the_environment():
    assert local_rank_from(3, {"LOCAL_RANK": "1"}) == 3
    assert local_rank_from(None, {"LOCAL_RANK": "1"}) == 1  # without either: a BAD_CALLS row below


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(1, 6), st.integers(0, 3), st.booleans())
def test_sampler_table_deals_every_sample_and_pads_equally(n, replicas, seed, set_epoch):
    table = sampler_table(n, replicas, epochs=2, set_epoch=set_epoch, seed=seed)
    per_rank = -(-n // replicas)
    for row in table:
        assert all(len(indices) == per_rank for indices in row)
        dealt = [i for indices in row for i in indices]
        assert set(dealt) == set(range(n))  # nothing lost; only padding repeats
    if not set_epoch:
        assert table[0] == table[1]
    for epoch, row in enumerate(table):
        for rank, indices in enumerate(row):
            sampler = DistributedSampler(range(n), num_replicas=replicas, rank=rank, seed=seed)
            sampler.set_epoch(epoch if set_epoch else 0)
            assert indices == list(sampler)


def test_plot_sampler_hatches_exactly_the_padding_within_the_column():
    use_course_style()
    fig = plot_sampler(n=10, num_replicas=3, epochs=3)
    try:
        assert fig.get_figwidth() <= 7.0
        assert len(fig.axes) == 2
        for ax in fig.axes:
            cells = ax.patches
            assert len(cells) == 3 * 12
            assert sum(cell.get_hatch() == "//" for cell in cells) == 3 * 2  # 2 padded places per epoch
            assert [t.get_text() for t in ax.texts[:4]] == [str(i) for i in sampler_table(10, 3, 1, True)[0][0]]
            assert min(t.get_fontsize() for t in ax.texts) >= 10
    finally:
        plt.close(fig)


def gradient_by_backward(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The gradient of F.mse_loss on (x, y), all parameters flattened, by .backward() as a training step takes it."""
    model.zero_grad()
    F.mse_loss(model(x), y).backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()])


@pytest.mark.parametrize(("samples", "world_size"), [(16, 2), (12, 3), (5, 1)])
def test_allreduce_gives_every_rank_the_mean_of_the_shares_gradients(samples, world_size):
    x, y = regression_data().tensors
    x, y = x[:samples], y[:samples]
    model = seeded(lambda: nn.Linear(3, 1))
    shares, reduced, whole = allreduce_gradients(model, x, y, world_size)
    assert all(p.grad is None for p in model.parameters())  # the model's .grad is left alone
    for rank in range(world_size):
        assert torch.equal(shares[rank], gradient_by_backward(model, x[rank::world_size], y[rank::world_size]))
        assert torch.equal(reduced[rank], reduced[0])  # the replicas get the same bits
    assert torch.allclose(reduced[0], torch.stack(shares).mean(dim=0), atol=1e-6)
    assert torch.equal(whole, gradient_by_backward(model, x, y))
    assert torch.allclose(reduced[0], whole, atol=1e-5)  # equal shares: the whole batch's gradient
    if world_size == 2:  # two addends: the all-reduce's sum is exactly the mean of the two
        assert torch.equal(reduced[0], (shares[0] + shares[1]) / 2)


def test_plot_allreduce_draws_the_gradients_pytorch_computes():
    use_course_style()
    x, y = regression_data().tensors
    model = seeded(lambda: nn.Linear(3, 1))
    fig = plot_allreduce(model, x[:16], y[:16])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a missing Chinese glyph would warn
            fig.canvas.draw()
        assert fig.get_figwidth() <= COLUMN_WIDTH and fig.get_layout_engine() is not None
        top, bottom = fig.subfigs
        whole = gradient_by_backward(model, x[:16], y[:16]).tolist()
        for rank, ax in enumerate(top.axes):
            heights = [bar.get_height() for bar in ax.patches]
            share = gradient_by_backward(model, x[rank:16:2], y[rank:16:2])
            assert torch.equal(torch.tensor(heights), share)
            assert [t.get_text() for t in ax.texts] == [f"{v:.3f}" for v in heights]
            assert [t.get_text() for t in ax.get_xticklabels()] == ["w1", "w2", "w3", "b"]
        shares = [gradient_by_backward(model, x[r:16:2], y[r:16:2]) for r in range(2)]
        for ax in bottom.axes:
            heights = [bar.get_height() for bar in ax.patches]
            assert torch.equal(torch.tensor(heights), (shares[0] + shares[1]) / 2)  # all-reduced mean
            (marks,) = ax.get_lines()[1:]  # after the zero line: the whole batch's gradient
            assert list(marks.get_ydata()) == whole
            assert max(abs(a - b) for a, b in zip(heights, whole, strict=True)) < 1e-5
        titles = [top.get_suptitle(), bottom.get_suptitle()] + [ax.get_title() for ax in fig.axes]
        assert all(re.search("[a-z]", t) and CJK.search(t) for t in titles)  # both languages
        (legend,) = fig.legends
        assert [t.get_text() for t in legend.get_texts()] == ["whole batch / 整批"]
        assert min(t.get_fontsize() for t in fig.findobj(Text) if t.get_text()) >= 10  # tick labels too
    finally:
        plt.close(fig)


@pytest.mark.integration
def test_spawn_worker_sets_what_torchrun_sets_and_runs_the_script_as_main(tmp_path):
    script = tmp_path / "show.py"
    script.write_text(
        "import json, os, sys\n"
        "import companion.checkpoint\n"  # what the lesson's script imports besides companion.ddp
        "keys = ['RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT', 'COURSE_DEVICE']\n"
        "modules = [m in sys.modules for m in ('companion.devices', 'matplotlib')]\n"
        "print(json.dumps([__name__, sys.argv[1:], {k: os.environ[k] for k in keys}, modules]))\n"
    )
    code = (
        "from companion.ddp import spawn_worker\n"
        f"spawn_worker(1, 2, 4321, {str(script)!r}, ['--out', {str(tmp_path)!r}, '--x'], 'cpu')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=worker_environment())
    name, argv, env, (devices, matplotlib) = json.loads((tmp_path / "rank1.out").read_text())
    # Every rank imports these (companion.ddp imports companion.devices); matplotlib would add its import time.
    assert devices and not matplotlib
    assert name == "__main__" and argv == ["--out", str(tmp_path), "--x"]
    assert env == {
        "RANK": "1",
        "LOCAL_RANK": "1",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "4321",
        "COURSE_DEVICE": "cpu",
    }
    assert callable(spawn_worker)


# ----------------------------------------------------------------------------------------------------------------
# The launcher's helpers, without launching.


def test_commands_use_torchrun_and_no_fixed_port():
    command = torchrun_command(2, "ddp/train.py", "--checkpoint")
    assert command[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert shown(command) == "torchrun --standalone --nproc-per-node=2 ddp/train.py --checkpoint"
    static = node_command(2, 1, 1, 41234, "ddp/train.py", "--out", "/somewhere")
    assert shown(static) == (
        "torchrun --nnodes=2 --node-rank=1 --nproc-per-node=1 --master-addr=127.0.0.1 --master-port=PORT "
        "ddp/train.py --out OUT"
    )
    c10d = node_command(2, 0, 2, 41234, "train.py", rendezvous="c10d")
    assert "--rdzv-endpoint=127.0.0.1:41234" in c10d and "--rdzv-conf=is_host=1" in c10d
    assert "--rdzv-conf=is_host=0" in node_command(2, 1, 2, 41234, "train.py", rendezvous="c10d")


def test_free_port_can_be_bound():
    import socket

    port = free_port()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


def test_on_windows_the_ranks_get_use_libuv_0_unless_the_learner_set_it(monkeypatch):
    monkeypatch.delenv("USE_LIBUV", raising=False)
    assert "USE_LIBUV" not in worker_environment()  # Linux and macOS: torchrun's default, libuv
    monkeypatch.setattr(sys, "platform", "win32")
    assert worker_environment()["USE_LIBUV"] == "0"
    monkeypatch.setenv("USE_LIBUV", "1")
    assert worker_environment()["USE_LIBUV"] == "1"


def test_worker_environment_makes_companion_importable_and_pins_the_device(tmp_path):
    env = worker_environment("cpu", tmp_path)
    assert env["COURSE_DEVICE"] == "cpu" and env["PET_LOG_DIR"] == str(tmp_path)
    assert str(ddp_launch.PACKAGE_ROOT) in env["PYTHONPATH"].split(os.pathsep)
    assert env["OMP_NUM_THREADS"]
    with pytest.raises(TypeError, match="'cpu' or 'cuda'"):
        worker_environment(0)


@pytest.mark.parametrize(
    ("call", "error", "fix"),
    [
        (lambda script: launch(script, nproc=0), ValueError, "between 1 and 64"),
        (lambda script: launch(script, nproc=True), TypeError, "an int such as"),
        (lambda script: launch(script, "--epochs", 2), TypeError, "as strings"),
        (lambda script: launch(script, "--out", "x"), ValueError, "workdir="),
        (lambda script: launch("no/such/train.py"), FileNotFoundError, "%%writefile no/such/train.py"),
        (lambda script: launch(3), TypeError, "the path of a Python file"),
        (lambda script: spawn(script, "--out", "x"), ValueError, "workdir="),
        (lambda script: launch_nodes(script, nnodes=0), ValueError, "between 1 and 64"),
        (lambda script: node_command(2, 2, 1, 1234, "train.py"), ValueError, r"node_rank must be in 0\.\.1"),
        (lambda script: node_command(2, 0, 1, 1234, "t.py", rendezvous="etcd"), ValueError, "'static' or 'c10d'"),
    ],
)
def test_bad_launch_arguments_are_refused_before_anything_starts(script, call, error, fix):
    with pytest.raises(error, match=fix):
        call(script)


def test_stop_process_tree_stops_children_in_their_own_session():
    # A parent whose child sits in a session of its own, as torchrun's workers do.
    code = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 20
    while not psutil.Process(parent.pid).children() and time.monotonic() < deadline:
        time.sleep(0.05)
    family = [psutil.Process(parent.pid), *psutil.Process(parent.pid).children(recursive=True)]
    assert len(family) == 2
    stop_process_tree(parent.pid, grace=2.0)
    parent.wait(timeout=5)
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in family)


def test_still_running_finds_processes_by_their_command_line(tmp_path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(tmp_path)])
    try:
        assert still_running(tmp_path) == [sleeper.pid]
    finally:
        sleeper.kill()
        sleeper.wait()
    assert still_running(tmp_path) == []


def error_file(folder, local_rank: int, message: str) -> None:
    """An error.json where torchrun puts it (PET_LOG_DIR/<run>/attempt_0/<local rank>/), as @record writes it."""
    path = folder / "logs" / "run" / "attempt_0" / str(local_rank) / "error.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"message": {"message": message, "extraInfo": {"timestamp": "0"}}}))


def test_the_first_error_written_names_the_failure(tmp_path):
    error_file(tmp_path, 1, "ValueError: bad")
    time.sleep(0.02)
    error_file(tmp_path, 0, "RuntimeError: peer gone")
    error = ddp_launch._failure(tmp_path, [1], "", [11, 12], one_node=True)
    assert str(error) == "rank 1 failed with ValueError: bad" and error.rank == 1 and error.pids == [11, 12]
    across_nodes = ddp_launch._failure(tmp_path, [1, 0], "", [], one_node=False)
    assert str(across_nodes) == "a rank failed with ValueError: bad" and across_nodes.rank is None


def test_without_error_files_the_launchers_own_error_line_is_reported(tmp_path):
    stderr = "usage: ...\ntrain.py: error: the following arguments are required: --out\n"
    error = ddp_launch._failure(tmp_path, [2], stderr, [], one_node=True)
    assert "exit codes [2]" in str(error) and "required: --out" in str(error)
    (tmp_path / "rank0.json").write_text("{}")
    with pytest.raises(LaunchError, match="rank 1 wrote no result"):
        ddp_launch._collect(tmp_path, 2, "", 0.0)


def test_a_spawn_failure_names_the_rank_and_its_last_line():
    error = ddp_launch._spawn_failure(
        RuntimeError("\n\n-- Process 1 terminated with the following error:\nTraceback ...\nValueError: bad\n")
    )
    assert str(error) == "rank 1 failed with ValueError: bad" and error.rank == 1


def test_script_run_finds_lines_from_a_word_on():
    run = ScriptRun(1, [], ["/a/b/launch.py:207: FutureWarning: deprecated", "x.py: error: no", "y.py: error: no"])
    assert run.find("FutureWarning") == ["FutureWarning: deprecated"]
    assert run.find("error:") == ["error: no"]


# ----------------------------------------------------------------------------------------------------------------
# Exercise checks: the reference passes, every typical mistake is refused with the hint aimed at it.


def test_check_ddp_gradient_refuses_the_plain_full_batch_gradient():
    """The hole issue 11 found: with an even split the full-batch gradient equals DDP's, so the cases must not all
    divide evenly."""
    from companion.checks.ddp import check_ddp_gradient

    def whole_batch(model, x, y, world_size):
        model.zero_grad()
        F.mse_loss(model(x), y).backward()
        return model.weight.grad.clone()

    with pytest.raises(WrongAnswer, match="whole batch"):
        check_ddp_gradient(whole_batch)
    with pytest.raises(WrongAnswer, match="without"):
        check_ddp_gradient(whole_batch(nn.Linear(3, 1), torch.zeros(2, 3), torch.zeros(2, 1), 1))


def test_check_shard_refuses_the_global_generator_and_accepts_the_sampler_itself(capsys):
    from companion.checks.ddp import check_shard

    def on_the_global_generator(n, num_replicas, rank, epoch):
        torch.manual_seed(epoch)
        order = torch.randperm(n).tolist()
        size = -(-n // num_replicas) * num_replicas
        return [order[i % n] for i in range(rank, size, num_replicas)]

    def the_sampler(n, num_replicas, rank, epoch):
        sampler = DistributedSampler(range(n), num_replicas=num_replicas, rank=rank, seed=0)
        sampler.set_epoch(epoch)
        return list(sampler)

    state = torch.random.get_rng_state()
    with pytest.raises(WrongAnswer, match="global random generator"):
        check_shard(on_the_global_generator)
    assert torch.equal(torch.random.get_rng_state(), state)  # the harness put the caller's generator back
    check_shard(the_sampler)
    assert capsys.readouterr().out.startswith("✓ Correct")


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(
        ddp.device_and_backend,
        ("0",),
        TypeError,
        "local_rank must be an int such as int(os.environ['LOCAL_RANK'])",
        "str",
    ),
    bad(ddp.device_and_backend, (-1,), ValueError, "read it from $LOCAL_RANK", "negative"),
    bad(
        ddp.device_and_backend, (0,), ValueError, "use 'cpu', 'cuda', 'cuda:N' or 'mps'", "unknown-device", prefer="gpu"
    ),
    bad(
        ddp.local_rank_from,
        (None, {}),
        ValueError,
        "start the script with torchrun (python -m torch.distributed.run --nproc-per-node=2 ...)",
        "nothing-set",
    ),
    bad(
        ddp.local_rank_from,
        (None, {"LOCAL_RANK": "zero"}),
        ValueError,
        "start the script with torchrun",
        "not-a-number",
    ),
    bad(ddp_launch.torchrun_command, (0, "train.py"), ValueError, "nproc must be between 1 and 64", "zero"),
    bad(ddp_launch.torchrun_command, ("2", "train.py"), TypeError, "nproc must be an int such as 1", "str"),
    bad(
        ddp_launch.torchrun_command,
        (2, "train.py", "--epochs", 2),
        TypeError,
        "pass the script's arguments as strings, e.g. '--epochs', '2'",
        "int-argument",
    ),
    bad(
        ddp_launch.node_command,
        (2, 2, 1, 29500, "train.py"),
        ValueError,
        "node_rank must be in 0..1 for nnodes=2",
        "node-rank",
    ),
    bad(
        ddp_launch.node_command, (0, 0, 1, 29500, "train.py"), ValueError, "nnodes must be between 1 and 64", "no-nodes"
    ),
    bad(
        ddp_launch.node_command,
        (2, 0, 1, 29500, "train.py"),
        ValueError,
        "rendezvous must be 'static' or 'c10d'",
        "rendezvous",
        rendezvous="etcd",
    ),
    bad(ddp_launch.node_command, (1, 0, 1, -1, "train.py"), ValueError, "e.g. free_port()", "negative-port"),
    bad(
        ddp_launch.shown,
        ("torchrun --standalone --nproc-per-node=2",),
        TypeError,
        "pass the command as a list of words",
        "str",
    ),
    bad(
        ddp_launch.worker_environment,
        (),
        TypeError,
        "device must be a name such as 'cpu' or 'cuda'",
        "int-device",
        device=0,
    ),
    bad(
        ddp_launch.launch,
        (SCRIPT,),
        ValueError,
        "nproc must be between 1 and 64",
        "zero",
        nproc=0,
        workdir=in_tmp("launch"),
    ),
    bad(
        ddp_launch.launch,
        (SCRIPT, "--out", "results"),
        ValueError,
        "do not pass --out: the launcher gives the ranks their folder (use workdir= to keep it)",
        "out",
    ),
    bad(ddp_launch.launch, (SCRIPT, "--epochs", 2), TypeError, "e.g. '--epochs', '2'", "int-argument"),
    bad(
        ddp_launch.launch,
        (in_tmp("ddp", "train.py"),),
        FileNotFoundError,
        "run the cell that writes it (%%writefile",
        "no-script",
    ),
    bad(
        ddp_launch.launch,
        (2,),
        TypeError,
        "script must be the path of a Python file such as 'ddp/train.py'",
        "count-for-script",
    ),
    bad(
        ddp_launch.launch_nodes,
        (SCRIPT,),
        ValueError,
        "nnodes must be between 1 and 64",
        "zero",
        nnodes=0,
        workdir=in_tmp("launch"),
    ),
    bad(
        ddp_launch.launch_nodes,
        (SCRIPT,),
        ValueError,
        "rendezvous must be 'static' or 'c10d'",
        "rendezvous",
        rendezvous="etcd",
        workdir=in_tmp("launch"),
    ),
    bad(ddp_launch.launch_nodes, (SCRIPT, "--out", "results"), ValueError, "(use workdir= to keep it)", "out"),
    bad(ddp_launch.spawn, (SCRIPT,), ValueError, "nproc must be between 1 and 64", "zero", nproc=0),
    bad(ddp_launch.spawn, (SCRIPT, "--out", "results"), ValueError, "(use workdir= to keep it)", "out"),
    bad(ddp_launch.run_script, ("print('hello')",), ValueError, "nproc must be between 1 and 64", "zero", nproc=0),
    bad(ddp_launch.still_running, ("",), ValueError, "pass a marker such as the launch's work folder", "empty-marker"),
    bad(
        ddp_launch.stop_process_tree,
        ("ddp-workdir",),
        TypeError,
        "pid must be an int such as one from still_running(marker)",
        "str",
    ),
    bad(ddp_launch.describe, ([{"rank": 0}],), ValueError, "pass the results of launch()", "partial-result"),
]
