"""companion.ddp and companion.ddp_launch: real DDP launches on the CPU against one process, and every helper.

The launches start real processes (torchrun, two "nodes", torch.multiprocessing.spawn); each costs a few seconds,
mostly for importing torch in every process, so the file launches as few times as its claims allow.
"""

import json
import math
import os
import re
import subprocess
import sys
import threading
import time

import matplotlib.pyplot as plt
import psutil
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.utils.data import DistributedSampler

from companion import ddp_launch
from companion.ddp import (
    check_ddp_gradient,
    check_shard,
    device_and_backend,
    epoch_means,
    flat_parameters,
    local_rank_from,
    make_model,
    parse_args,
    plot_sampler,
    regression_data,
    sampler_table,
    train,
    write_json,
)
from companion.ddp_launch import (
    NOTES_SCRIPT,
    LaunchError,
    ScriptRun,
    describe,
    free_port,
    launch,
    launch_nodes,
    node_command,
    run_script,
    shown,
    soak,
    spawn,
    still_running,
    stop_process_tree,
    torchrun_command,
    worker_environment,
)
from companion.exercises import WrongAnswer
from companion.plotting import use_course_style

TOLERANCE = 1e-6  # the lesson's claim: DDP's parameters equal one process's to within this


def single_process(epochs: int = 3) -> tuple[nn.Linear, dict]:
    """The reference: one process, batches of 16 (two ranks' batches of 8), the same seed and sampler."""
    model = make_model()
    return model, train(model, regression_data(), batch_size=16, epochs=epochs)


def largest_difference(a, b) -> float:
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


# ----------------------------------------------------------------------------------------------------------------
# The real launches.


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One DDP training run of 2 ranks on the CPU, with a checkpoint, shared by the tests that read it."""
    workdir = tmp_path_factory.mktemp("ddp-train")
    return launch(2, "--task", "train", "--checkpoint", workdir=workdir, device="cpu"), workdir


def test_ddp_on_two_ranks_equals_one_process_on_the_whole_batch(trained):
    results, _ = trained
    model, history = single_process()
    assert [r["rank"] for r in results] == [0, 1]
    assert all(r["backend"] == "gloo" and r["device"] == "cpu" and r["world_size"] == 2 for r in results)
    assert results[0]["parameters"] == results[1]["parameters"]  # DDP keeps the replicas bit-identical
    difference = largest_difference(results[0]["parameters"], flat_parameters(model))
    print(f"largest parameter difference, DDP vs one process: {difference:.2e}")
    assert difference < TOLERANCE
    # The all-reduced step losses are the whole batch's losses.
    assert largest_difference(results[0]["losses"], history["losses"]) < 1e-5
    assert results[0]["losses"] == results[1]["losses"]


def test_each_rank_sees_its_own_half_of_every_epoch(trained):
    results, _ = trained
    _, history = single_process()
    seen0, seen1 = results[0]["seen"], results[1]["seen"]
    for epoch, (a, b) in enumerate(zip(seen0, seen1, strict=True)):
        assert sorted(a + b) == list(range(64))
        # Batch k of the two ranks together is batch k of the single process.
        one = history["seen"][epoch]
        for k in range(4):
            assert sorted(a[8 * k : 8 * k + 8] + b[8 * k : 8 * k + 8]) == sorted(one[16 * k : 16 * k + 16])
    assert seen0[0] != seen0[1] != seen0[2]  # set_epoch reshuffles


def test_only_rank_0_prints_the_all_reduced_epoch_losses(trained):
    results, _ = trained
    _, history = single_process()
    expected = [f"epoch {e}: mean loss {loss:.4f}" for e, loss in enumerate(epoch_means(history["losses"], 3))]
    assert results.stdout.splitlines() == expected


def test_checkpoint_saved_by_rank_0_loads_on_every_rank(trained):
    results, workdir = trained
    assert [r["checkpoint_loaded"] for r in results] == [True, True]
    assert results[0]["wrapper_keys"] == ["module.weight", "module.bias"]
    state = torch.load(workdir / "checkpoint.pt", weights_only=True)["model"]
    model = make_model()
    model.load_state_dict(state)  # the plain model's keys: saved from model.module
    assert flat_parameters(model) == results[0]["parameters"]
    assert not list(workdir.glob("*.partial"))


def test_three_consecutive_launches_succeed():
    seconds, failures = soak(3)
    print(f"3 launches: {', '.join(f'{s:.1f} s' for s in seconds)}")
    assert failures == [] and len(seconds) == 3


def test_two_launches_at_once_do_not_collide():
    outcomes = []

    def one_launch():
        try:
            outcomes.append(launch(2, "--task", "hello", device="cpu"))
        except LaunchError as error:
            outcomes.append(error)

    threads = [threading.Thread(target=one_launch) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(isinstance(o, list) for o in outcomes), outcomes
    assert [o.stdout for o in outcomes] == ["all-reduce of rank + 1 over 2 ranks: 3\n"] * 2


def test_spawn_runs_the_same_script_without_torchrun():
    results = spawn(2, "--task", "hello", device="cpu")
    assert describe(results).splitlines() == [
        "rank 0: local rank 0, node 0, world size 2, gloo on cpu",
        "rank 1: local rank 1, node 0, world size 2, gloo on cpu",
    ]
    assert [r["all_reduce_sum"] for r in results] == [3.0, 3.0]
    assert results.stdout == "all-reduce of rank + 1 over 2 ranks: 3\n"


@pytest.mark.parametrize("rendezvous", ["static", "c10d"])
def test_two_nodes_on_loopback_train_like_one_process(rendezvous):
    results = launch_nodes(2, 1, "--task", "train", rendezvous=rendezvous, device="cpu")
    assert [r["rank"] for r in results] == [0, 1]
    assert {(r["node_rank"], r["local_rank"]) for r in results} == {(0, 0), (1, 0)}
    if rendezvous == "static":  # --node-rank decides the order; c10d numbers the nodes itself
        assert [r["node_rank"] for r in results] == [0, 1]
    model, _ = single_process()
    assert all(largest_difference(r["parameters"], flat_parameters(model)) < TOLERANCE for r in results)


def test_a_failing_rank_fails_the_launch_fast_with_its_message_and_no_orphans(tmp_path):
    start = time.monotonic()
    with pytest.raises(LaunchError) as caught:
        launch(2, "--task", "train", "--fail-rank", "1", workdir=tmp_path, device="cpu")
    elapsed = time.monotonic() - start
    print(f"the failing launch took {elapsed:.1f} s")
    error = caught.value
    assert str(error) == (
        "rank 1 failed with RuntimeError: rank 1 stopped on purpose before its first step (--fail-rank 1)"
    )
    assert error.rank == 1 and error.returncodes and error.returncodes[0] != 0
    assert elapsed < 45  # seconds, not the collective's 60 s timeout (the import of torch is most of it)
    assert len(error.pids) == 2 and not any(psutil.pid_exists(pid) for pid in error.pids)
    assert still_running(tmp_path) == []
    assert "rank 1 stopped on purpose" in error.stderr  # torchrun's own report names it too


def test_the_notes_arguments_fail_under_the_old_launcher_and_default_under_torchrun():
    old = run_script(NOTES_SCRIPT, 2, old_launcher=True)
    assert old.returncode == 1
    assert old.stdout == [
        "rank 0: arguments ['--local-rank=0'], LOCAL_RANK=0",
        "rank 1: arguments ['--local-rank=1'], LOCAL_RANK=1",
    ]
    assert old.find("FutureWarning") == ["FutureWarning: The module torch.distributed.launch is deprecated"]
    assert old.find("error:") == [f"error: unrecognized arguments: --local-rank={r}" for r in range(2)]
    new = run_script(NOTES_SCRIPT, 2)
    assert new.returncode == 0 and new.stderr == []
    assert new.stdout == [
        "rank 0: arguments [], LOCAL_RANK=0",
        "rank 0: args.local_rank = -1",
        "rank 1: arguments [], LOCAL_RANK=1",
        "rank 1: args.local_rank = -1",
    ]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_gpus_the_same_script_uses_nccl_and_one_device_per_rank():
    nproc = min(2, torch.cuda.device_count())
    results = launch(nproc, "--task", "train", device="cuda")
    assert [(r["backend"], r["device"]) for r in results] == [("nccl", "cuda")] * nproc
    model, _ = single_process()
    if nproc == 2:
        assert largest_difference(results[0]["parameters"], flat_parameters(model)) < 1e-5


# ----------------------------------------------------------------------------------------------------------------
# The training code, in this process.


def test_training_with_one_rank_is_plain_minibatch_sgd():
    model, history = single_process(epochs=2)
    data = regression_data()
    reference = make_model()
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    losses = []
    for epoch in range(2):
        order = torch.randperm(64, generator=torch.Generator().manual_seed(epoch)).tolist()  # seed 0 + epoch
        assert history["seen"][epoch] == order
        for k in range(4):
            x, y = data[order[16 * k : 16 * k + 16]]
            optimizer.zero_grad()
            loss = F.mse_loss(reference(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    assert history["losses"] == losses
    assert flat_parameters(model) == flat_parameters(reference)


def test_data_and_model_are_the_same_for_the_same_seed_and_leave_the_global_seed_alone():
    assert torch.equal(regression_data(8, seed=1).tensors[0], regression_data(8, seed=1).tensors[0])
    assert not torch.equal(regression_data(8, seed=1).tensors[0], regression_data(8, seed=2).tensors[0])
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    assert flat_parameters(make_model(0)) == flat_parameters(make_model(0)) != flat_parameters(make_model(1))
    assert torch.equal(torch.rand(3), expected)


def test_flat_parameters_lists_weights_then_bias():
    model = make_model()
    assert flat_parameters(model) == [*model.weight.flatten().tolist(), model.bias.item()]


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        ({"batch_size": 0, "epochs": 1}, "batch_size must be a positive int"),
        ({"batch_size": 8, "epochs": 1.0}, "epochs must be a positive int"),
        ({"batch_size": 8, "epochs": 1, "world_size": 2, "rank": 2}, r"rank must be in 0\.\.1"),
    ],
)
def test_train_refuses_bad_arguments(kwargs, fix):
    with pytest.raises(ValueError, match=fix):
        train(make_model(), regression_data(), **kwargs)


def test_regression_data_and_epoch_means_refuse_bad_arguments():
    with pytest.raises(ValueError, match="positive int such as 64"):
        regression_data(0)
    assert epoch_means([1.0, 3.0, 5.0, 7.0], 2) == [2.0, 6.0]
    with pytest.raises(ValueError, match="do not split into 2 equal epochs"):
        epoch_means([1.0, 2.0, 3.0], 2)


# ----------------------------------------------------------------------------------------------------------------
# Ranks, devices, arguments.


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
    assert local_rank_from(None, {"LOCAL_RANK": "1"}) == 1
    with pytest.raises(ValueError, match="start the script with torchrun"):
        local_rank_from(None, {})


def test_the_script_accepts_both_spellings_of_the_old_launchers_argument(monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert parse_args(["--out", "x", "--local-rank=1"]).local_rank == 1
    assert parse_args(["--out", "x", "--local_rank=1"]).local_rank == 1
    args = parse_args(["--out", "x"])
    assert (args.local_rank, args.task, args.epochs, args.batch_size) == (None, "hello", 3, 8)


def test_the_script_started_without_a_launcher_says_how_to_start_it(monkeypatch, capsys):
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(SystemExit):
        parse_args(["--out", "x"])
    assert "torch.distributed.run --standalone --nproc-per-node=2" in capsys.readouterr().err


def test_write_json_leaves_a_whole_file_and_no_partial(tmp_path):
    write_json(tmp_path / "rank0.json", {"rank": 0})
    assert json.loads((tmp_path / "rank0.json").read_text()) == {"rank": 0}
    assert [p.name for p in tmp_path.iterdir()] == ["rank0.json"]


# ----------------------------------------------------------------------------------------------------------------
# DistributedSampler and its picture.


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(1, 6), st.integers(0, 3), st.booleans())
def test_sampler_table_deals_every_sample_and_pads_equally(n, replicas, seed, set_epoch):
    table = sampler_table(n, replicas, epochs=2, set_epoch=set_epoch, seed=seed)
    per_rank = math.ceil(n / replicas)
    for row in table:
        assert all(len(indices) == per_rank for indices in row)
        dealt = [i for indices in row for i in indices]
        assert set(dealt) == set(range(n))  # nothing lost; only padding repeats
        assert len(dealt) - n == per_rank * replicas - n
    if not set_epoch:
        assert table[0] == table[1]
    for epoch, row in enumerate(table):
        for rank, indices in enumerate(row):
            sampler = DistributedSampler(range(n), num_replicas=replicas, rank=rank, seed=seed)
            sampler.set_epoch(epoch if set_epoch else 0)
            assert indices == list(sampler)


def test_set_epoch_changes_the_order():
    with_epochs = sampler_table(64, 2, epochs=3, set_epoch=True)
    assert with_epochs[0] != with_epochs[1] != with_epochs[2]


def test_plot_sampler_hatches_exactly_the_padding():
    use_course_style()
    fig = plot_sampler(n=10, num_replicas=3, epochs=3)
    try:
        assert len(fig.axes) == 2
        for ax in fig.axes:
            cells = ax.patches
            assert len(cells) == 3 * 12
            assert sum(cell.get_hatch() == "//" for cell in cells) == 3 * 2  # 2 padded places per epoch
            assert [t.get_text() for t in ax.texts[:4]] == [str(i) for i in sampler_table(10, 3, 1, True)[0][0]]
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="small cases"):
        plot_sampler(n=100)


# ----------------------------------------------------------------------------------------------------------------
# The launcher's helpers, without launching.


def test_commands_use_torchrun_and_no_fixed_port():
    command = torchrun_command(2, "--task", "train")
    assert command[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert shown(command) == "torchrun --standalone --nproc-per-node=2 -m companion.ddp --task train"
    static = node_command(2, 1, 1, 41234, "--out", "/somewhere")
    assert shown(static) == (
        "torchrun --nnodes=2 --node-rank=1 --nproc-per-node=1 --master-addr=127.0.0.1 --master-port=PORT "
        "-m companion.ddp --out OUT"
    )
    c10d = node_command(2, 0, 2, 41234, rendezvous="c10d")
    assert "--rdzv-endpoint=127.0.0.1:41234" in c10d and "--rdzv-conf=is_host=1" in c10d
    assert "--rdzv-conf=is_host=0" in node_command(2, 1, 2, 41234, rendezvous="c10d")


def test_free_port_can_be_bound():
    import socket

    port = free_port()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


def test_worker_environment_makes_companion_importable_and_pins_the_device():
    env = worker_environment("cpu")
    assert env["COURSE_DEVICE"] == "cpu"
    assert str(ddp_launch.PACKAGE_ROOT) in env["PYTHONPATH"].split(os.pathsep)
    assert env["OMP_NUM_THREADS"]
    with pytest.raises(TypeError, match="'cpu' or 'cuda'"):
        worker_environment(0)


@pytest.mark.parametrize(
    ("call", "error", "fix"),
    [
        (lambda: launch(0), ValueError, "between 1 and 64"),
        (lambda: launch(True), TypeError, "an int such as 2"),
        (lambda: launch(2, "--epochs", 2), TypeError, "as strings"),
        (lambda: launch(2, "--out", "x"), ValueError, "workdir="),
        (lambda: spawn(2, "--out", "x"), ValueError, "workdir="),
        (lambda: launch_nodes(2, 0), ValueError, "between 1 and 64"),
        (lambda: node_command(2, 2, 1, 1234), ValueError, r"node_rank must be in 0\.\.1"),
        (lambda: node_command(2, 0, 1, 1234, rendezvous="etcd"), ValueError, "'static' or 'c10d'"),
        (lambda: soak(0), ValueError, "between 1 and 64"),
    ],
)
def test_bad_launch_arguments_are_refused_before_anything_starts(call, error, fix):
    with pytest.raises(error, match=fix):
        call()


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


def test_the_first_error_written_names_the_failure(tmp_path):
    write_json(tmp_path / "rank0.error.json", {"rank": 0, "type": "RuntimeError", "message": "peer gone", "time": 2.0})
    write_json(tmp_path / "rank1.error.json", {"rank": 1, "type": "ValueError", "message": "bad", "time": 1.0})
    (tmp_path / "rank0.pid").write_text("11")
    error = ddp_launch._failure(tmp_path, [1], "")
    assert str(error) == "rank 1 failed with ValueError: bad" and error.rank == 1 and error.pids == [11]


def test_without_error_files_the_launchers_own_error_line_is_reported(tmp_path):
    error = ddp_launch._failure(tmp_path, [2], "usage: ...\ncompanion.ddp: error: RANK and WORLD_SIZE are not set\n")
    assert "exit codes [2]" in str(error) and "RANK and WORLD_SIZE are not set" in str(error)
    with pytest.raises(LaunchError, match="rank 1 wrote no result"):
        write_json(tmp_path / "rank0.json", {"rank": 0})
        ddp_launch._collect(tmp_path, 2, "", 0.0)


def test_script_run_finds_lines_from_a_word_on():
    run = ScriptRun(1, [], ["/a/b/launch.py:207: FutureWarning: deprecated", "x.py: error: no", "y.py: error: no"])
    assert run.find("FutureWarning") == ["FutureWarning: deprecated"]
    assert run.find("error:") == ["error: no"]


def test_the_soak_command_prints_the_count_and_seconds(monkeypatch, capsys):
    monkeypatch.setattr(ddp_launch, "soak", lambda launches, nproc: ([3.0, 4.0], ["rank 1 failed"]))
    assert ddp_launch.main(["--launches", "3"]) == 1
    out = capsys.readouterr().out
    assert "3 launches of 2 ranks: 2 good, 1 failed" in out and "median 3.50" in out and "rank 1 failed" in out


# ----------------------------------------------------------------------------------------------------------------
# Exercise checks.


def right_shard(n, num_replicas, rank):
    total = math.ceil(n / num_replicas) * num_replicas
    return [i % n for i in range(total)][rank::num_replicas]


def test_check_shard_accepts_the_right_answer(capsys):
    check_shard(right_shard)
    assert capsys.readouterr().out.startswith("✓ Correct / 正确")
    check_shard(lambda n, k, r: torch.tensor(right_shard(n, k, r)))  # a tensor of indices is fine too


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda n, k, r: list(range(r * math.ceil(n / k), min(n, (r + 1) * math.ceil(n / k)))), "like cards"),
        (lambda n, k, r: list(range(n))[r::k], "pads the list"),
        (lambda n, k, r: [i % n for i in range(math.ceil(n / k) * k)][r::k][::-1], "expected"),
        (lambda n, k, r: "0, 3, 6", "list of ints"),
        ("not a function", "without ()"),
    ],
)
def test_check_shard_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(WrongAnswer, match=re.escape(hint)):
        check_shard(wrong)


def right_gradient(model, x, y, world_size):
    gradients = []
    for rank in range(world_size):
        model.zero_grad()
        F.mse_loss(model(x[rank::world_size]), y[rank::world_size]).backward()
        gradients.append(model.weight.grad.clone())
    return sum(gradients) / world_size


def summed_gradient(model, x, y, world_size):
    return right_gradient(model, x, y, world_size) * world_size


def accumulated_gradient(model, x, y, world_size):
    model.zero_grad()
    gradients = []
    for rank in range(world_size):
        F.mse_loss(model(x[rank::world_size]), y[rank::world_size]).backward()  # never zeroed
        gradients.append(model.weight.grad.clone())
    return sum(gradients) / world_size


def stepping_gradient(model, x, y, world_size):
    gradient = right_gradient(model, x, y, world_size)
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    return gradient


def test_check_ddp_gradient_accepts_the_right_answer(capsys):
    check_ddp_gradient(right_gradient)
    assert capsys.readouterr().out.startswith("✓ Correct / 正确")


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (summed_gradient, "times too large"),
        (accumulated_gradient, "zeroed .grad"),
        (stepping_gradient, "take no step"),
        (lambda model, x, y, world_size: right_gradient(model, x, y, world_size).flatten(), "shaped like weight"),
        (lambda model, x, y, world_size: [0.0], "should return a tensor"),
        (right_gradient(make_model(), torch.zeros(2, 3), torch.zeros(2, 1), 1), "without ()"),
    ],
)
def test_check_ddp_gradient_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(WrongAnswer, match=re.escape(hint)):
        check_ddp_gradient(wrong)
