"""Lesson 09: the script every DDP rank runs, on the CPU with gloo or on GPUs with nccl, and the lesson's checks.

A launcher starts this module once per rank and tells each copy who it is through environment variables:

    python -m torch.distributed.run --standalone --nproc-per-node=2 -m companion.ddp --out DIR --task train

(`torchrun` is the same program). Each rank writes what it did to DIR/rank<N>.json and prints only from rank 0;
companion.ddp_launch starts the launcher from a notebook and reads the files back in rank order.
"""

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from companion.devices import pick_device
from companion.exercises import passed, require

if TYPE_CHECKING:
    from matplotlib.figure import Figure

TRUE_WEIGHT = (2.0, -1.0, 0.5)
TRUE_BIAS = 1.0
TASKS = ("hello", "train")
# A collective that waits longer than this raises instead of hanging for the default 10 minutes.
COLLECTIVE_TIMEOUT = timedelta(seconds=60)


# ----------------------------------------------------------------------------------------------------------------
# Data, model and the training loop: the same code for one process and for every rank.


def regression_data(n: int = 64, seed: int = 0) -> TensorDataset:
    """`n` samples of y = x @ (2, -1, 0.5) + 1 + noise; every rank builds the same set from the same seed."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int such as 64, not {n!r}")
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, len(TRUE_WEIGHT), generator=generator)
    y = x @ torch.tensor(TRUE_WEIGHT) + TRUE_BIAS + 0.1 * torch.randn(n, generator=generator)
    return TensorDataset(x, y.unsqueeze(1))


def make_model(seed: int = 0) -> nn.Linear:
    """The model every rank starts from: a seeded `nn.Linear(3, 1)`, four parameters in all."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int such as 0, not {seed!r}")
    with torch.random.fork_rng(devices=[]):  # seed a private copy: the caller's random state is left alone
        torch.manual_seed(seed)
        return nn.Linear(len(TRUE_WEIGHT), 1)


def flat_parameters(model: nn.Module) -> list[float]:
    """All parameters of `model` (or of the module inside a DDP wrapper) as one list of floats, in order."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module such as make_model(), not {type(model).__name__}")
    model = model.module if isinstance(model, DistributedDataParallel) else model
    return torch.nn.utils.parameters_to_vector(model.parameters()).detach().cpu().tolist()


def train(
    model: nn.Module,
    dataset: TensorDataset,
    *,
    batch_size: int,
    epochs: int,
    lr: float = 0.1,
    rank: int = 0,
    world_size: int = 1,
    seed: int = 0,
    set_epoch: bool = True,
    device: torch.device | str = "cpu",
) -> dict[str, list]:
    """Train `model` in place with SGD on this rank's share of `dataset`; return its step losses and the indices seen.

    With world_size=1 this is ordinary single-process training. With a DDP model and world_size=N, each rank runs
    it on the 1/N of every epoch that DistributedSampler deals to `rank`, and DDP averages the gradients.
    """
    for name, value in (("batch_size", batch_size), ("epochs", epochs), ("world_size", world_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, not {value!r}")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in 0..{world_size - 1} for world_size={world_size}, not {rank}")
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses, seen = [], []
    for epoch in range(epochs):
        if set_epoch:
            sampler.set_epoch(epoch)  # a new shuffle each epoch, the same one on every rank
        seen.append(list(sampler))
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.mse_loss(model(x.to(device)), y.to(device))  # a mean over this rank's batch
            loss.backward()  # under DDP, the gradients are averaged over all ranks here
            optimizer.step()
            losses.append(loss.item())
    return {"losses": losses, "seen": seen}


def epoch_means(losses: Sequence[float], epochs: int) -> list[float]:
    """The mean of the step losses of each epoch (every epoch has the same number of steps)."""
    if epochs < 1 or len(losses) % epochs:
        raise ValueError(
            f"{len(losses)} step losses do not split into {epochs} equal epochs: "
            "pass the number of epochs that produced them"
        )
    steps = len(losses) // epochs
    return [sum(losses[e * steps : (e + 1) * steps]) / steps for e in range(epochs)]


# ----------------------------------------------------------------------------------------------------------------
# Who am I? Rank, device and backend, from what the launcher set.


def device_and_backend(local_rank: int, prefer: str | None = None) -> tuple[torch.device, str]:
    """The device and backend of one rank: cuda:LOCAL_RANK with nccl where CUDA is chosen, else cpu with gloo.

    The choice follows companion.devices.pick_device (`prefer`, then $COURSE_DEVICE, then CUDA if present). On an
    Apple GPU (MPS) the ranks compute on the CPU: gloo, the backend for the CPU, does not take MPS tensors.
    """
    if isinstance(local_rank, bool) or not isinstance(local_rank, int):
        raise TypeError(f"local_rank must be an int such as int(os.environ['LOCAL_RANK']), not {local_rank!r}")
    if local_rank < 0:
        raise ValueError(f"local_rank must be 0 or more, not {local_rank}: read it from $LOCAL_RANK")
    if pick_device(prefer).type != "cuda":
        return torch.device("cpu"), "gloo"
    count = torch.cuda.device_count()
    if local_rank >= count:
        raise ValueError(
            f"local rank {local_rank} needs cuda:{local_rank}, but this machine has {count} CUDA device(s): start "
            f"at most {count} processes per node (--nproc-per-node={count}), or run on the CPU with COURSE_DEVICE=cpu"
        )
    return torch.device("cuda", local_rank), "nccl"


def local_rank_from(argument: int | None, environ: Mapping[str, str] = os.environ) -> int:
    """This process's local rank: the deprecated launcher's `--local-rank` if given, else torchrun's $LOCAL_RANK."""
    if argument is not None:
        return int(argument)
    if "LOCAL_RANK" not in environ:
        raise ValueError(
            "no --local-rank argument and no LOCAL_RANK variable: start the script with torchrun "
            "(python -m torch.distributed.run --nproc-per-node=2 ...), which sets LOCAL_RANK for every rank"
        )
    try:
        return int(environ["LOCAL_RANK"])
    except ValueError:
        raise ValueError(
            f"LOCAL_RANK is {environ['LOCAL_RANK']!r}, not a number: start the script with torchrun, which sets "
            "LOCAL_RANK to 0, 1, ... for the ranks of each node"
        ) from None


# ----------------------------------------------------------------------------------------------------------------
# The rank's work.


def all_reduce_mean(values: Sequence[float], device: torch.device) -> list[float]:
    """The element-wise mean of `values` over all ranks (all-reduce sums, then divide by the world size)."""
    tensor = torch.tensor(list(values), dtype=torch.float64, device=device)
    dist.all_reduce(tensor)  # the default operation is a sum
    return (tensor / dist.get_world_size()).tolist()


def save_then_load_everywhere(model: nn.Module, path: Path, device: torch.device) -> bool:
    """Rank 0 saves the model's checkpoint, all ranks wait, then every rank loads it: True if it equals its own."""
    state = model.module.state_dict() if isinstance(model, DistributedDataParallel) else model.state_dict()
    if dist.get_rank() == 0:  # one writer: N ranks writing one file at once can leave it half-written
        torch.save({"model": state}, path)
    dist.barrier()  # nobody reads before rank 0 has finished writing
    loaded = torch.load(path, map_location=device, weights_only=True)["model"]  # onto this rank's own device
    return state.keys() == loaded.keys() and all(torch.equal(state[k], loaded[k]) for k in state)


def run_rank(args: argparse.Namespace, init_method: str = "env://") -> dict:
    """Join the process group, do `args.task` as this rank, leave the group cleanly; return what happened."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        raise ValueError(
            "RANK and WORLD_SIZE are not set: start the script with torchrun "
            "(python -m torch.distributed.run --nproc-per-node=2 ...), which sets them for every rank"
        )
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = local_rank_from(args.local_rank)
    device, backend = device_and_backend(local_rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(
        backend,
        init_method=init_method,
        rank=rank,
        world_size=world_size,
        timeout=COLLECTIVE_TIMEOUT,
        device_id=device if device.type == "cuda" else None,  # binds each nccl rank to its own GPU
    )
    summed = torch.tensor([rank + 1.0], device=device)
    dist.all_reduce(summed)  # every rank contributes rank + 1; every rank receives the sum
    result = {
        "rank": dist.get_rank(),
        "local_rank": local_rank,
        "node_rank": int(os.environ.get("GROUP_RANK", 0)),
        "world_size": dist.get_world_size(),
        "backend": dist.get_backend(),
        "device": device.type,
        "local_rank_argument": args.local_rank,
        "all_reduce_sum": summed.item(),
    }
    if args.task == "hello" and rank == 0:  # one rank prints: N ranks would print N copies, in any order
        print(f"all-reduce of rank + 1 over {world_size} ranks: {summed.item():g}", flush=True)
    if args.task == "train":
        result.update(train_rank(args, device, rank, world_size))
    dist.barrier()  # leave together: a rank that exits early can abort the others' shutdown
    dist.destroy_process_group()
    return result


def train_rank(args: argparse.Namespace, device: torch.device, rank: int, world_size: int) -> dict:
    """The DDP half of the lesson's experiment: train the shared model on this rank's share, report the result."""
    model = make_model(args.seed).to(device)
    ddp_model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    if args.fail_rank == rank:
        raise RuntimeError(f"rank {rank} stopped on purpose before its first step (--fail-rank {rank})")
    history = train(
        ddp_model,
        regression_data(args.samples, args.seed),
        batch_size=args.batch_size,
        epochs=args.epochs,
        lr=args.lr,
        rank=rank,
        world_size=world_size,
        seed=args.seed,
        device=device,
    )
    losses = all_reduce_mean(history["losses"], device)  # this rank's loss is the loss of its half only
    if rank == 0:
        for epoch, loss in enumerate(epoch_means(losses, args.epochs)):
            print(f"epoch {epoch}: mean loss {loss:.4f}", flush=True)
    result = {
        "parameters": flat_parameters(ddp_model),
        "losses": losses,
        "seen": history["seen"],
        "wrapper_keys": list(ddp_model.state_dict()),  # the wrapper's keys start with "module."
    }
    if args.checkpoint:
        result["checkpoint_loaded"] = save_then_load_everywhere(ddp_model, Path(args.out) / "checkpoint.pt", device)
    return result


# ----------------------------------------------------------------------------------------------------------------
# The command line: `python -m torch.distributed.run ... -m companion.ddp --out DIR [options]`.


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The script's options; `--local-rank` (either spelling) is accepted for the deprecated launcher."""
    parser = argparse.ArgumentParser(prog="companion.ddp", description="One rank of the lesson 09 DDP script.")
    parser.add_argument("--out", required=True, help="folder where each rank writes rank<N>.json")
    parser.add_argument("--task", choices=TASKS, default="hello")
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=8, help="per rank")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", action="store_true", help="save from rank 0, load on every rank")
    parser.add_argument("--fail-rank", type=int, default=None, help="this rank raises before training")
    # torch.distributed.launch (deprecated) passes --local-rank=N; torchrun passes nothing and sets $LOCAL_RANK.
    parser.add_argument("--local-rank", "--local_rank", type=int, default=None)
    args = parser.parse_args(argv)
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        parser.error(
            "RANK and WORLD_SIZE are not set: a launcher starts this script once per rank, e.g. "
            "python -m torch.distributed.run --standalone --nproc-per-node=2 -m companion.ddp --out DIR"
        )
    return args


def write_json(path: Path, data: dict) -> None:
    """Write `data` as JSON in one step (to a temporary name, then renamed), so a reader never sees half a file."""
    path = Path(path)  # a str path works too
    try:
        text = json.dumps(data)
    except TypeError as error:
        raise TypeError(f"{error}: pass plain Python values, e.g. tensor.tolist() or tensor.item()") from None
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


@record  # under torchrun, an exception is also written to torchrun's error file and shown in its summary
def main(argv: Sequence[str] | None = None, init_method: str = "env://") -> None:
    """One rank: record the process id, run the task, write rank<N>.json (or rank<N>.error.json), then exit."""
    args = parse_args(argv)
    torch.set_num_threads(1)  # N ranks on N cores: one thread each
    rank, out = int(os.environ["RANK"]), Path(args.out)
    (out / f"rank{rank}.pid").write_text(str(os.getpid()))
    try:
        result = run_rank(args, init_method)
    except Exception as error:
        failure = {"rank": rank, "type": type(error).__name__, "message": str(error), "time": time.time()}
        write_json(out / f"rank{rank}.error.json", failure)
        raise
    write_json(out / f"rank{rank}.json", result)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip the interpreter's shutdown: after destroy_process_group() it aborts now and then
    # ("terminate called without an active exception"), which would turn a good run into a crash.
    os._exit(0)


def spawn_worker(index: int, world_size: int, init_method: str, argv: list[str], device: str | None) -> None:
    """The function torch.multiprocessing.spawn calls in each child: set the rank variables, then run main()."""
    out = Path(argv[argv.index("--out") + 1])
    # Children share the notebook's output streams; keep theirs in files so nothing stray reaches the notebook.
    for stream, name in ((sys.stdout, "out"), (sys.stderr, "err")):
        stream.flush()
        with open(out / f"rank{index}.{name}", "w") as file:
            os.dup2(file.fileno(), stream.fileno())
    os.environ.update(RANK=str(index), LOCAL_RANK=str(index), WORLD_SIZE=str(world_size), GROUP_RANK="0")
    if device is not None:
        os.environ["COURSE_DEVICE"] = device
    main(argv, init_method)


# ----------------------------------------------------------------------------------------------------------------
# DistributedSampler in a picture.


def sampler_table(n: int, num_replicas: int, epochs: int, set_epoch: bool, seed: int = 0) -> list[list[list[int]]]:
    """table[epoch][rank]: the indices DistributedSampler (shuffle=True) gives each rank in each epoch."""
    if isinstance(num_replicas, bool) or not isinstance(num_replicas, int):
        raise TypeError(f"num_replicas must be a positive int such as 2 (one per rank), not {num_replicas!r}")
    if num_replicas < 1:
        raise ValueError(f"num_replicas must be a positive int such as 2 (one per rank), not {num_replicas}")
    table = []
    for epoch in range(epochs):
        row = []
        for rank in range(num_replicas):
            sampler = DistributedSampler(range(n), num_replicas=num_replicas, rank=rank, shuffle=True, seed=seed)
            if set_epoch:
                sampler.set_epoch(epoch)
            row.append(list(sampler))
        table.append(row)
    return table


def plot_sampler(n: int = 10, num_replicas: int = 3, epochs: int = 3, seed: int = 0) -> "Figure":
    """Draw the indices each rank gets per epoch, without and with set_epoch; padded repeats are hatched."""
    import matplotlib.pyplot as plt  # imported here: the ranks never draw, and pyplot would slow every start

    if not 1 <= num_replicas <= 6 or not 1 <= n <= 24 or not 1 <= epochs <= 6:
        raise ValueError("plot_sampler draws small cases: n in 1..24, num_replicas in 1..6, epochs in 1..6")
    per_rank = math.ceil(n / num_replicas)
    colours = plt.get_cmap("tab10").colors
    fig, axes = plt.subplots(2, 1, figsize=(0.55 * per_rank * num_replicas + 1.6, 1.1 * epochs + 1.4))
    for ax, set_epoch in zip(axes, (False, True), strict=True):
        table = sampler_table(n, num_replicas, epochs, set_epoch, seed)
        for epoch, row in enumerate(table):
            for rank, indices in enumerate(row):
                for j, index in enumerate(indices):
                    padded = rank + j * num_replicas >= n  # position past the end of the shuffled order
                    column = rank * per_rank + j
                    ax.add_patch(
                        plt.Rectangle(
                            (column, epoch),
                            1,
                            1,
                            facecolor=colours[rank % len(colours)],
                            alpha=0.35 if padded else 0.75,
                            hatch="//" if padded else None,
                            edgecolor="0.3",
                        )
                    )
                    ax.text(column + 0.5, epoch + 0.5, str(index), ha="center", va="center", fontsize=10)
        ax.set_xlim(0, per_rank * num_replicas)
        ax.set_ylim(epochs, 0)
        ax.set_xticks([(r + 0.5) * per_rank for r in range(num_replicas)], [f"rank {r}" for r in range(num_replicas)])
        ax.set_yticks([e + 0.5 for e in range(epochs)], [f"epoch {e}" for e in range(epochs)])
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
        title = "with set_epoch(epoch) / 每轮调用 set_epoch" if set_epoch else "without set_epoch / 不调用 set_epoch"
        ax.set_title(title, fontsize=11)
    axes[-1].set_xlabel("hatched: padding, repeated from the start / 斜线格：从头重复取的填充样本")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------------------------------
# Exercise checks.


def check_shard(shard: Callable[[int, int, int], Sequence[int]]) -> None:
    """Self-check: `shard(n, num_replicas, rank)` must list DistributedSampler's indices (shuffle=False) for `rank`."""
    require(callable(shard), "Pass the function itself: check_shard(shard), without ().")
    cases = [(10, 3, 1), (10, 3, 0), (10, 3, 2), (8, 2, 1), (9, 4, 3), (3, 4, 3), (5, 1, 0), (7, 7, 6)]
    for n, num_replicas, rank in cases:
        want = list(DistributedSampler(range(n), num_replicas=num_replicas, rank=rank, shuffle=False))
        got = shard(n, num_replicas, rank)
        where = f"shard({n}, {num_replicas}, {rank})"
        require(
            isinstance(got, Sequence | torch.Tensor) and not isinstance(got, str),
            f"{where} should return a list of ints, not {type(got).__name__}.",
        )
        got = [int(i) for i in got]
        per_rank = math.ceil(n / num_replicas)
        if got == want:
            continue
        consecutive = len(got) > 1 and got == list(range(got[0], got[0] + len(got)))
        require(
            not consecutive,
            f"{where} gives {got}: a block of neighbours. DistributedSampler deals indices out like cards: rank r "
            "takes positions r, r + num_replicas, r + 2 * num_replicas, ...",
        )
        require(
            len(got) == per_rank,
            f"{where} gives {len(got)} indices; every rank gets the same number, ceil(n / num_replicas) = "
            f"{per_rank}. The sampler pads the list by starting again from index 0.",
        )
        require(False, f"{where} gives {got}; expected {want}. Deal out range(n) padded to {per_rank * num_replicas}.")
    passed(f"shard agrees with DistributedSampler on {len(cases)} cases, padding included")


def check_ddp_gradient(ddp_gradient: Callable[[nn.Linear, torch.Tensor, torch.Tensor, int], torch.Tensor]) -> None:
    """Self-check: `ddp_gradient(model, x, y, world_size)` must give the weight gradient that DDP applies."""
    require(callable(ddp_gradient), "Pass the function itself: check_ddp_gradient(ddp_gradient), without ().")
    generator = torch.Generator().manual_seed(3)
    x, y = torch.randn(12, 3, generator=generator), torch.randn(12, 1, generator=generator)
    for world_size in (1, 2, 3, 4):
        model = make_model(seed=world_size)
        before = flat_parameters(model)
        full = nn.Linear(3, 1)
        full.load_state_dict(model.state_dict())
        F.mse_loss(full(x), y).backward()
        want = full.weight.grad
        got = ddp_gradient(model, x, y, world_size)
        where = f"ddp_gradient(model, x, y, world_size={world_size})"
        require(isinstance(got, torch.Tensor), f"{where} should return a tensor, not {type(got).__name__}.")
        require(flat_parameters(model) == before, f"{where} changed the model: compute gradients, take no step.")
        require(got.shape == want.shape, f"{where} has shape {tuple(got.shape)}; return a gradient shaped like weight.")
        got = got.detach()
        require(
            not (world_size > 1 and torch.allclose(got, want * world_size, atol=1e-6)),
            f"{where} is {world_size} times too large: all-reduce adds the ranks' gradients, and DDP then divides "
            "by the world size. Average them.",
        )
        require(
            torch.allclose(got, want, atol=1e-6),
            f"{where} is not the average of the shards' gradients. For each rank r, take x[r::world_size], compute "
            "the mean loss and its gradient on a zeroed .grad (backward() adds to it), then average.",
        )
    passed("the averaged gradient equals the full-batch gradient for 1, 2, 3 and 4 ranks")


if __name__ == "__main__":
    main()
