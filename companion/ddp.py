"""Lesson 12: what the lesson's DDP script imports (each rank's device and backend, the shared data), the pictures of
DDP's all-reduce and of DistributedSampler, and the function torch.multiprocessing.spawn runs in each child.

The script every rank runs is written by the lesson itself (notebooks/12-ddp.ipynb writes it to ddp/train.py with
%%writefile), so the learner reads it, edits it and launches it again; companion.ddp_launch starts it.
"""

import os
import runpy
import sys
import threading
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DistributedSampler, TensorDataset

from companion._validate import require_int
from companion.devices import pick_device
from companion.language import by_language, in_language, say

if TYPE_CHECKING:  # matplotlib is imported only when a picture is drawn: every rank imports this module
    from matplotlib.figure import Figure

TRUE_WEIGHT = (2.0, -1.0, 0.5)
TRUE_BIAS = 1.0


def device_and_backend(local_rank: int, prefer: str | None = None) -> tuple[torch.device, str]:
    """The device and backend of one rank: cuda:LOCAL_RANK with nccl where CUDA is chosen, else the CPU with gloo.

    The choice follows companion.devices.pick_device (`prefer`, then $COURSE_DEVICE, then CUDA if present). On an
    Apple GPU (MPS) the ranks compute on the CPU: gloo, the backend for the CPU, does not take MPS tensors. The
    index of a chosen CUDA device is ignored (COURSE_DEVICE=cuda:1 still gives cuda:LOCAL_RANK): each rank takes
    the GPU of its local rank.
    """
    _check_local_rank(local_rank)
    if pick_device(prefer).type != "cuda":
        return torch.device("cpu"), "gloo"
    _check_gpu_count(local_rank, torch.cuda.device_count())
    return torch.device("cuda", local_rank), "nccl"


def regression_data(n: int = 64, seed: int = 0) -> TensorDataset:
    """`n` samples of y = x @ (2, -1, 0.5) + 1 + noise; every rank builds the same set from the same seed."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, len(TRUE_WEIGHT), generator=generator)  # (n, 3)
    y = x @ torch.tensor(TRUE_WEIGHT) + TRUE_BIAS + 0.1 * torch.randn(n, generator=generator)  # (n,)
    return TensorDataset(x, y.unsqueeze(1))  # targets (n, 1), like the model's output


def local_rank_from(argument: int | None, environ: Mapping[str, str] = os.environ) -> int:
    """This process's local rank: the deprecated launcher's `--local-rank` if given, else torchrun's $LOCAL_RANK."""
    if argument is not None:
        return int(argument)
    if "LOCAL_RANK" not in environ:
        raise ValueError(
            in_language(
                "no --local-rank argument and no LOCAL_RANK variable: start the script with torchrun "
                "(python -m torch.distributed.run --nproc-per-node=2 ...), which sets LOCAL_RANK for every rank",
                "既没有 --local-rank 参数，也没有 LOCAL_RANK 变量：请用 torchrun 启动脚本"
                "（python -m torch.distributed.run --nproc-per-node=2 ...），它会为每个 rank 设置 LOCAL_RANK",
            )
        )
    try:
        return int(environ["LOCAL_RANK"])
    except ValueError:
        value = environ["LOCAL_RANK"]
        raise ValueError(
            in_language(
                f"LOCAL_RANK is {value!r}, not a number: start the script with torchrun, which sets "
                "LOCAL_RANK to 0, 1, ... for the ranks of each node",
                f"LOCAL_RANK 是 {value!r}，不是数字：请用 torchrun 启动脚本，它会把每个节点上各 rank 的 "
                "LOCAL_RANK 设为 0, 1, ...",
            )
        ) from None


# ----------------------------------------------------------------------------------------------------------------
# DDP's all-reduce in a picture.


def allreduce_gradients(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, world_size: int = 2
) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """Each rank's gradient (all parameters, flattened) on its share x[rank::world_size], what each rank holds after
    DDP's all-reduce (divided by world_size, then summed by a real gloo group whose ranks are threads of this
    process), and the whole batch's gradient. The model's .grad is left alone."""
    parameters = list(model.parameters())

    def gradient(xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:  # (number of parameters,)
        grads = torch.autograd.grad(F.mse_loss(model(xs), ys), parameters)
        return torch.cat([g.flatten() for g in grads])

    shares = [gradient(x[rank::world_size], y[rank::world_size]) for rank in range(world_size)]
    reduced = [share / world_size for share in shares]  # what DDP's default hook does before the all-reduce
    store, errors = dist.HashStore(), []

    def rank_thread(rank: int) -> None:
        try:
            # A ProcessGroupGloo built directly, not the public init_process_group: that sets up one default group
            # per process, and here both ranks live in one process. A training script uses init_process_group.
            group = dist.ProcessGroupGloo(store, rank, world_size, timedelta(seconds=30))
            group.allreduce([reduced[rank]]).wait()  # in place: each rank's tensor becomes the sum of all
        except RuntimeError as error:
            errors.append(error)

    threads = [threading.Thread(target=rank_thread, args=(rank,)) for rank in range(world_size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return shares, reduced, gradient(x, y)


def plot_allreduce(model: nn.Module, x: torch.Tensor, y: torch.Tensor, world_size: int = 2) -> "Figure":
    """Draw each rank's gradient on its share, then what every rank holds after the all-reduce, against the whole
    batch's gradient: the step that keeps DDP's replicas equal."""
    import matplotlib.pyplot as plt

    from companion.plotting import COLUMN_WIDTH

    shares, reduced, whole = allreduce_gradients(model, x, y, world_size)
    names = [  # w1, w2, w3, b for nn.Linear(3, 1)
        f"{name[0]}{i + 1}" if p.numel() > 1 else name[0]
        for name, p in model.named_parameters()
        for i in range(p.numel())
    ]
    colours = plt.get_cmap("tab10").colors
    fig = plt.figure(figsize=(COLUMN_WIDTH, 5.2), layout="constrained")
    rows = fig.subfigures(2, 1)
    rows[0].suptitle(
        say("each rank: the gradient of its share of the batch", "每个 rank：自己那份数据的梯度", "\n"), fontsize=10
    )
    rows[1].suptitle(
        say(
            f"each rank divides by {world_size}, the all-reduce sums: every rank holds the same gradient",
            f"每个 rank 先除以 {world_size}，all-reduce 再求和：每个 rank 拿到同一个梯度",
            "\n",
        ),
        fontsize=10,
    )
    top, bottom = (row.subplots(1, world_size, sharey=True, squeeze=False)[0] for row in rows)
    values = torch.cat([*shares, whole])
    low, high = min(0.0, values.min().item()), max(0.0, values.max().item())
    margin = 0.25 * (high - low)
    for rank in range(world_size):
        count = len(x[rank::world_size])
        for ax, heights, colour, title in (
            (
                top[rank],
                shares[rank],
                colours[rank],
                by_language(
                    f"rank {rank}: {count} samples",
                    f"rank {rank}：{count} 个样本",
                    f"rank {rank}: {count} samples / {count} 个样本",
                ),
            ),
            (bottom[rank], reduced[rank], "0.55", f"rank {rank} {say('after all-reduce', 'all-reduce 之后')}"),
        ):
            bars = ax.bar(range(len(names)), heights.tolist(), color=colour)
            ax.bar_label(bars, fmt="%.3f", fontsize=10, padding=2)
            ax.axhline(0, color="0.3", linewidth=0.8)
            ax.set_xticks(range(len(names)), names)
            ax.set_ylim(low - margin, high + margin)
            ax.set_title(title, fontsize=10)
        bottom[rank].plot(
            range(len(names)),
            whole.tolist(),
            "_",
            color="black",
            markersize=30,
            markeredgewidth=2,
            label=say("whole batch", "整批"),
        )
    top[0].set_ylabel(say("gradient", "梯度"))
    bottom[0].set_ylabel(say("gradient", "梯度"))
    fig.legend(*bottom[0].get_legend_handles_labels(), loc="outside lower center", fontsize=10)
    return fig


# ----------------------------------------------------------------------------------------------------------------
# DistributedSampler in a picture.


def sampler_table(n: int, num_replicas: int, epochs: int, set_epoch: bool, seed: int = 0) -> list[list[list[int]]]:
    """table[epoch][rank]: the indices DistributedSampler (shuffle=True) gives each rank in each epoch."""
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
    import matplotlib.pyplot as plt

    from companion.plotting import COLUMN_WIDTH

    per_rank = -(-n // num_replicas)  # ceil(n / num_replicas): every rank gets as many
    colours = plt.get_cmap("tab10").colors
    fig, axes = plt.subplots(2, 1, figsize=(COLUMN_WIDTH, 0.42 * epochs + 1.5), layout="constrained")
    for ax, set_epoch in zip(axes, (False, True), strict=True):
        table = sampler_table(n, num_replicas, epochs, set_epoch, seed)
        for epoch, row in enumerate(table):
            for rank, indices in enumerate(row):
                for j, index in enumerate(indices):
                    padded = rank + j * num_replicas >= n  # a position past the end of the shuffled order
                    column = rank * per_rank + j
                    colour = colours[rank % len(colours)]
                    style = {"alpha": 0.35, "hatch": "//"} if padded else {"alpha": 0.75}
                    ax.add_patch(plt.Rectangle((column, epoch), 1, 1, facecolor=colour, edgecolor="0.3", **style))
                    ax.text(column + 0.5, epoch + 0.5, str(index), ha="center", va="center", fontsize=10)
        ax.set_xlim(0, per_rank * num_replicas)
        ax.set_ylim(epochs, 0)
        ax.set_xticks([(r + 0.5) * per_rank for r in range(num_replicas)], [f"rank {r}" for r in range(num_replicas)])
        ax.set_yticks(
            [e + 0.5 for e in range(epochs)], [in_language(f"epoch {e}", f"第 {e} 轮") for e in range(epochs)]
        )
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
        title = (
            say("with set_epoch(epoch)", "每轮调用 set_epoch")
            if set_epoch
            else say("without set_epoch", "不调用 set_epoch")
        )
        ax.set_title(title, fontsize=10)
    axes[-1].set_xlabel(say("hatched: padding, repeated from the start", "斜线格：从头重复取的填充样本"))
    return fig


# ----------------------------------------------------------------------------------------------------------------
# torch.multiprocessing.spawn needs the function each child runs in an importable module: this one.


def spawn_worker(
    index: int,
    world_size: int,
    port: int,
    script: str,
    argv: Sequence[str],
    device: str | None,
) -> None:
    """One child of torch.multiprocessing.spawn: set what torchrun would set, run `script`."""
    out = Path(argv[list(argv).index("--out") + 1])
    # The children share the notebook's output streams: send theirs to files instead.
    for stream, name in ((sys.stdout, "out"), (sys.stderr, "err")):
        stream.flush()
        with open(out / f"rank{index}.{name}", "w") as file:
            os.dup2(file.fileno(), stream.fileno())
    os.environ.update(
        RANK=str(index),
        LOCAL_RANK=str(index),
        WORLD_SIZE=str(world_size),
        GROUP_RANK="0",
        MASTER_ADDR="127.0.0.1",  # where rank 0 waits for the others
        MASTER_PORT=str(port),
    )
    if device is not None:
        os.environ["COURSE_DEVICE"] = device
    sys.argv = [script, *argv]
    runpy.run_path(script, run_name="__main__")  # as `python script ...` would run it


# ----------------------------------------------------------------------------------------------------------------
# Guards: a local rank comes from the environment, so a wrong one gets a message that names the fix.


def _check_local_rank(local_rank: object) -> None:
    if isinstance(local_rank, str):
        raise TypeError(
            in_language(
                f"local_rank must be an int such as int(os.environ['LOCAL_RANK']), not {local_rank!r}",
                f"local_rank 必须是整数，例如 int(os.environ['LOCAL_RANK'])，而不是 {local_rank!r}",
            )
        )
    require_int(local_rank, "local_rank")
    if local_rank < 0:
        raise ValueError(
            in_language(
                f"local_rank must be 0 or more, not {local_rank}: read it from $LOCAL_RANK",
                f"local_rank 必须大于等于 0，而不是 {local_rank}：请从 $LOCAL_RANK 读取",
            )
        )


def _check_gpu_count(local_rank: int, count: int) -> None:
    if local_rank >= count:
        raise ValueError(
            in_language(
                f"local rank {local_rank} needs cuda:{local_rank}, but this machine has {count} CUDA device(s): "
                f"start at most {count} processes per node (--nproc-per-node={count}), or run on the CPU with "
                "COURSE_DEVICE=cpu",
                f"local rank {local_rank} 需要 cuda:{local_rank}，但这台机器只有 {count} 个 CUDA 设备："
                f"每个节点最多启动 {count} 个进程（--nproc-per-node={count}），或者用 COURSE_DEVICE=cpu 在 CPU 上运行",
            )
        )
