"""Self-checks for lesson 12: dealing a shuffled epoch like DistributedSampler, and the gradient DDP applies when the
data does not divide evenly among the ranks. What is expected comes from PyTorch itself (DistributedSampler,
F.mse_loss and autograd); the learner's code runs inside the harness's sandbox, so a function that reseeds PyTorch's
global generator, or changes the model or the data it was given, is named for it."""

import itertools
import random
from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DistributedSampler

from companion.exercises import call_learner, passed, require, sandbox
from companion.language import in_language

# (samples, ranks, epoch): every rank of each is checked. Padding once, several times (more ranks than samples), none.
SHARD_CASES = (
    (10, 3, 1),
    (8, 2, 2),
    (9, 4, 0),
    (3, 4, 1),
    (2, 5, 3),
    (7, 7, 6),
    (5, 1, 2),
    (12, 5, 13),
)
# (samples, world size, a .grad left over from an earlier backward): even, then padded, then more ranks than samples.
GRADIENT_CASES = ((12, 4, False), (10, 3, True), (7, 2, False), (5, 4, True), (9, 1, False), (3, 4, True))


def check_shard(shard: Callable[[int, int, int, int], Sequence[int]]) -> None:
    """`shard(n, num_replicas, rank, epoch)` must list DistributedSampler's indices (shuffle=True, seed=0)."""
    require(
        callable(shard),
        "Pass the function itself: check_shard(shard), without ().",
        "把函数本身传进去：check_shard(shard)，不要加 ()。",
    )
    for n, num_replicas, epoch in SHARD_CASES:
        for rank in range(num_replicas):
            where = f"shard({n}, {num_replicas}, {rank}, epoch={epoch})"
            got = _as_indices(call_learner(shard, n, num_replicas, rank, epoch), where)
            want = _sampler_indices(n, num_replicas, rank, epoch)
            if got == want:
                continue
            per_rank = len(want)
            require(
                len(got) == per_rank,
                f"{where} gives {len(got)} indices; every rank gets ceil(n / num_replicas) = {per_rank}: the sampler "
                "pads the shuffled list by repeating it from its start, as often as needed (more ranks than samples "
                "too).",
                f"{where} 给出了 {len(got)} 个索引；每个 rank 都该拿到 ceil(n / num_replicas) = {per_rank} 个："
                "采样器会从打乱后列表的开头起重复取样来填充，需要几遍就重复几遍（rank 比样本还多时也一样）。",
            )
            _diagnose_shard(got, n, num_replicas, rank, epoch, where)
    passed(
        f"shard agrees with DistributedSampler after set_epoch on {len(SHARD_CASES)} cases, padding included",
        f"在 {len(SHARD_CASES)} 组数据上，shard 与调用过 set_epoch 的 DistributedSampler 一致，填充部分也一样",
    )


def check_ddp_gradient(ddp_gradient: Callable[[nn.Linear, torch.Tensor, torch.Tensor, int], torch.Tensor]) -> None:
    """`ddp_gradient(model, x, y, world_size)` must give the weight gradient DDP applies with DistributedSampler's
    shards (shuffle=False, padding included). It may use the model's .grad (the exercise is about it), but must
    change neither the parameters nor x and y."""
    require(
        callable(ddp_gradient),
        "Pass the function itself: check_ddp_gradient(ddp_gradient), without ().",
        "把函数本身传进去：check_ddp_gradient(ddp_gradient)，不要加 ()。",
    )
    for n, world_size, stale in GRADIENT_CASES:
        model, x, y = _gradient_case(n, world_size, stale)
        before = {name: p.detach().clone() for name, p in model.named_parameters()}
        data = (x.clone(), y.clone())
        where = f"ddp_gradient(model, x, y, world_size={world_size}) with {n} samples"
        # The English one in the bilingual hint too, as it always was; the Chinese edition's own in Chinese.
        where_zh = in_language(where, f"ddp_gradient(model, x, y, world_size={world_size})（{n} 个样本）")
        with sandbox():
            got = ddp_gradient(model, x, y, world_size)
        require(
            all(torch.equal(before[name], p.detach()) for name, p in model.named_parameters()),
            f"{where} changed the model: compute gradients, take no optimizer step.",
            f"{where_zh} 改动了模型的参数：只计算梯度，不要让优化器走一步。",
        )
        require(
            all(torch.equal(a, b) for a, b in zip(data, (x, y), strict=True)),
            f"{where} changed x or y in place: the caller's data must stay as it was.",
            f"{where_zh} 原地改动了 x 或 y：调用者的数据必须保持原样。",
        )
        require(
            isinstance(got, torch.Tensor),
            f"{where} should return a tensor, not {type(got).__name__}.",
            f"{where_zh} 应该返回一个张量，而不是 {type(got).__name__}。",
        )
        weight = model.weight
        require(
            got.shape == weight.shape,
            f"{where} has shape {tuple(got.shape)}; return a gradient shaped like model.weight, (1, 3).",
            f"{where_zh} 的形状是 {tuple(got.shape)}；返回的梯度应该和 model.weight 形状相同，即 (1, 3)。",
        )
        require(
            got.dtype == weight.dtype and got.device == weight.device,
            f"{where} is {got.dtype} on {got.device}; the weight's gradient is {weight.dtype} on {weight.device}, "
            "like the weight: do not convert it.",
            f"{where_zh} 是 {got.device} 上的 {got.dtype}；权重的梯度和权重一样，是 {weight.device} 上的 "
            f"{weight.dtype}：不要转换它。",
        )
        got = got.detach()
        candidates = _gradient_candidates(n, world_size, stale)
        if _close(got, candidates["right"]):
            continue
        _diagnose_gradient(got, candidates, (where, where_zh), n, world_size)
    passed(
        "the averaged shard gradients, with padding, for 1 to 4 ranks; not the whole batch's when n does not divide",
        "各分片梯度的平均（含填充），1 到 4 个 rank 都对；样本数不能整除时，它不等于整批数据的梯度",
    )


# ----------------------------------------------------------------------------------------------------------------
# Private: what PyTorch gives, and what each typical mistake would give.


def _as_indices(got: object, where: str) -> list[int]:
    """The learner's indices as Python ints: a list, tuple or 1-d tensor of integers (0-d integer tensors too)."""
    require(
        isinstance(got, Sequence | torch.Tensor) and not isinstance(got, str),
        f"{where} should return a list of ints, not {type(got).__name__}.",
        f"{where} 应该返回一个整数列表，而不是 {type(got).__name__}。",
    )
    if isinstance(got, torch.Tensor):
        require(
            got.dim() == 1 and not got.is_floating_point() and got.dtype != torch.bool,
            f"{where} returned a {got.dim()}-d {got.dtype} tensor: indices are one list of integers.",
            f"{where} 返回了一个 {got.dim()} 维的 {got.dtype} 张量：索引应当是一列整数。",
        )
        return [int(i) for i in got.tolist()]

    def whole(i: object) -> bool:
        if isinstance(i, torch.Tensor):
            return i.dim() == 0 and not i.is_floating_point() and i.dtype != torch.bool
        return isinstance(i, int | np.integer) and not isinstance(i, bool | np.bool_)

    bad = next((i for i in got if not whole(i)), None)
    require(
        bad is None,
        f"{where} holds {bad!r} ({type(bad).__name__}): indices are ints, as the sampler yields.",
        f"{where} 里有 {bad!r}（{type(bad).__name__}）：索引应当是整数，和采样器给出的一样。",
    )
    return [int(i) for i in got]


def _sampler_indices(n: int, num_replicas: int, rank: int, epoch: int) -> list[int]:
    sampler = DistributedSampler(range(n), num_replicas=num_replicas, rank=rank, shuffle=True, seed=0)
    sampler.set_epoch(epoch)
    return list(sampler)


def _dealt(order: list[int], n: int, num_replicas: int, rank: int, pad_once: bool = False) -> list[int]:
    """Pad `order` to a multiple of num_replicas by cycling through it (or, with pad_once, by one copy of its start),
    then take every num_replicas-th from `rank` on."""
    per_rank = -(-n // num_replicas)
    size = per_rank * num_replicas
    longer = order + order[: size - n] if pad_once else list(itertools.islice(itertools.cycle(order), size))
    return [longer[rank + k * num_replicas] for k in range(per_rank) if rank + k * num_replicas < len(longer)]


def _shuffled(n: int, seed: int) -> list[int]:
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()


def _other_shuffles(n: int, epoch: int) -> list[list[int]]:
    """The orders Python's random and NumPy give for the seed epoch: other permutations than torch's."""
    python = list(range(n))
    random.Random(epoch).shuffle(python)
    return [
        python,
        np.random.default_rng(epoch).permutation(n).tolist(),
        np.random.RandomState(epoch).permutation(n).tolist(),
    ]


def _diagnose_shard(got: list[int], n: int, num_replicas: int, rank: int, epoch: int, where: str) -> None:
    order = _shuffled(n, epoch)
    per_rank = -(-n // num_replicas)
    require(
        got != _dealt(list(range(n)), n, num_replicas, rank),
        f"{where} gives {got}: the indices in their original order. Shuffle first: torch.randperm(n, generator=g) "
        "with g = torch.Generator().manual_seed(seed + epoch).",
        f"{where} 得到 {got}：索引还是原来的顺序。要先打乱：torch.randperm(n, generator=g)，"
        "其中 g = torch.Generator().manual_seed(seed + epoch)。",
    )
    require(
        epoch == 0 or got != _dealt(_shuffled(n, 0), n, num_replicas, rank),
        f"{where} gives epoch 0's order: seed the generator with seed + epoch. That sum is what set_epoch changes, "
        "so that every epoch is shuffled anew.",
        f"{where} 得到的是第 0 轮的顺序：生成器的种子应该是 seed + epoch。set_epoch 改变的正是这个和，"
        "所以每一轮都会重新打乱。",
    )
    require(
        not any(got == _dealt(other, n, num_replicas, rank) for other in _other_shuffles(n, epoch)),
        f"{where} gives {got}: a shuffle from Python's random or NumPy. For the same seed they give other "
        "orders than torch.randperm with a torch.Generator, which is what DistributedSampler uses.",
        f"{where} 得到 {got}：这是 Python 的 random 或 NumPy 打乱的顺序。同一个种子，它们给出的顺序和 "
        "torch.randperm 配合 torch.Generator 的不同，而 DistributedSampler 用的是后者。",
    )
    seeds = [s for s in range(epoch + 20) if s != epoch and got == _dealt(_shuffled(n, s), n, num_replicas, rank)]
    require(
        not seeds,
        f"{where} gives {got}: torch's order for the seed {seeds[0] if seeds else ''}, not for seed + epoch = "
        f"0 + {epoch} = {epoch}. The sampler's seed is 0; set_epoch adds the epoch to it, nothing else.",
        f"{where} 得到 {got}：这是种子为 {seeds[0] if seeds else ''} 时 torch 的顺序，而不是 seed + epoch = "
        f"0 + {epoch} = {epoch} 时的。采样器的种子是 0；set_epoch 只是把轮数加上去，别的都不变。",
    )
    from_range = list(itertools.islice(itertools.chain(order, itertools.cycle(range(n))), per_rank * num_replicas))
    require(
        got != from_range[rank::num_replicas],
        f"{where} gives {got}: the padding repeats 0, 1, ... The sampler pads with the first indices of the "
        "shuffled list, not of range(n).",
        f"{where} 得到 {got}：填充部分重复的是 0、1……。采样器填充时重复的是打乱后列表开头的索引，而不是 range(n) 的。",
    )
    cycled = list(itertools.islice(itertools.cycle(order), per_rank * num_replicas))
    require(
        got != cycled[rank * per_rank : (rank + 1) * per_rank],
        f"{where} gives {got}: a block of neighbours in the shuffled list. DistributedSampler deals like cards: "
        "rank r takes positions r, r + num_replicas, r + 2 * num_replicas, ...",
        f"{where} 得到 {got}：这是打乱后列表里相邻的一段。DistributedSampler 像发牌一样分发："
        "rank r 拿第 r、r + num_replicas、r + 2 * num_replicas……个位置。",
    )
    require(
        False,
        f"{where} gives {got}; expected {_sampler_indices(n, num_replicas, rank, epoch)}. Shuffle range(n) with a "
        "generator seeded with seed + epoch, pad by repeating the shuffled list, then deal.",
        f"{where} 得到 {got}，应为 {_sampler_indices(n, num_replicas, rank, epoch)}。用种子为 seed + epoch 的生成器"
        "打乱 range(n)，重复打乱后的列表来填充，再发牌。",
    )


def _gradient_case(n: int, world_size: int, stale: bool) -> tuple[nn.Linear, torch.Tensor, torch.Tensor]:
    """A seeded nn.Linear(3, 1) and n samples, the same on every call (the global random state is left alone); with
    `stale`, the model still holds the .grad of an earlier backward, as it does in a training loop."""
    generator = torch.Generator().manual_seed(100 * n + world_size)
    model = nn.Linear(3, 1)
    with torch.no_grad():
        model.weight.copy_(torch.randn(1, 3, generator=generator))
        model.bias.copy_(torch.randn(1, generator=generator))
    x, y = torch.randn(n, 3, generator=generator), torch.randn(n, 1, generator=generator)
    if stale:  # drawn last, so x and y are the same with or without it
        model.weight.grad = torch.randn(1, 3, generator=generator)
        model.bias.grad = torch.randn(1, generator=generator)
    return model, x, y


def _weight_gradient(n: int, world_size: int, indices: list[int]) -> torch.Tensor:
    """The gradient of the mean squared error over `indices` with respect to the case's weight, by autograd."""
    model, x, y = _gradient_case(n, world_size, stale=False)
    loss = F.mse_loss(model(x[indices]), y[indices])
    return torch.autograd.grad(loss, model.weight)[0]


def _gradient_candidates(n: int, world_size: int, stale: bool) -> dict[str, torch.Tensor]:
    def shards(**options) -> list[list[int]]:
        return [list(DistributedSampler(range(n), world_size, r, **options)) for r in range(world_size)]

    def mean_of(indices: list[list[int]]) -> torch.Tensor:
        return torch.stack([_weight_gradient(n, world_size, i) for i in indices]).mean(0)

    padded = shards(shuffle=False)
    each = [_weight_gradient(n, world_size, i) for i in padded]
    right = torch.stack(each).mean(0)
    running = torch.stack(each).cumsum(0)  # .grad never zeroed: each shard's adds to the last
    total = len(padded[0]) * world_size
    old = _gradient_case(n, world_size, stale)[0].weight.grad
    return {
        "right": right,
        "summed": right * world_size,
        "whole": _weight_gradient(n, world_size, list(range(n))),
        "unpadded": mean_of([list(range(r, n, world_size)) for r in range(world_size)]),
        "accumulated": running.mean(0),
        "last_rank": running[-1] / world_size,
        "dropped": mean_of(shards(shuffle=False, drop_last=True)),
        "shuffled": mean_of(shards()),
        "over_n": right * total / n,
        "stale": right + old if stale else right + float("nan"),
        "stale_averaged": right + old / world_size if stale else right + float("nan"),
    }


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """assert_close's tolerances for the dtype (float32: rtol 1.3e-6, atol 1e-5)."""
    try:
        torch.testing.assert_close(a, b)
    except AssertionError:
        return False
    return True


def _diagnose_gradient(got: torch.Tensor, candidates: dict, where: tuple[str, str], n: int, world_size: int) -> None:
    where, where_zh = where

    def near(name: str) -> bool:
        return _close(got, candidates[name])

    require(
        not (near("stale") or near("stale_averaged")),
        f"{where} includes the .grad the model came with, left by an earlier backward: backward() adds to .grad, "
        "so zero it (model.zero_grad()) before the first shard too.",
        f"{where_zh} 把模型传进来时已有的 .grad（之前某次反向传播留下的）也算进去了：backward() 会累加到 .grad 上，"
        "所以在第一个分片之前也要清零（model.zero_grad()）。",
    )
    require(
        not near("whole"),
        f"{where} is the gradient of the whole batch. With {n} samples on {world_size} ranks, DistributedSampler pads "
        "each rank's shard to the same size by repeating samples, and those repeats count twice in DDP's gradient: "
        "compute each rank's gradient on its own shard.",
        f"{where_zh} 是整批数据的梯度。{n} 个样本分给 {world_size} 个 rank 时，DistributedSampler 会重复取样，"
        "把每个 rank 的分片填充到一样大，这些重复的样本在 DDP 的梯度里算了两次：请在每个 rank 自己的分片上分别求梯度。",
    )
    require(
        not near("dropped"),
        f"{where} uses shards of floor({n} / {world_size}) samples, as drop_last=True gives: the exercise asks for "
        "the sampler's default, which pads instead of dropping.",
        f"{where_zh} 用的分片只有 floor({n} / {world_size}) 个样本，这是 drop_last=True 的结果：练习要的是采样器的"
        "默认做法，即填充而不是丢弃。",
    )
    require(
        not near("shuffled"),
        f"{where} uses shuffled shards: DistributedSampler shuffles unless told otherwise, and the exercise deals "
        "the samples in order (shuffle=False).",
        f"{where_zh} 用的是打乱后的分片：DistributedSampler 默认会打乱，而练习要按原顺序分发（shuffle=False）。",
    )
    require(
        not near("unpadded"),
        f"{where} uses shards of different sizes (x[r::world_size]). DistributedSampler gives every rank "
        f"ceil({n} / {world_size}) samples, padding with the first ones again: take its indices.",
        f"{where_zh} 用的分片大小不一（x[r::world_size]）。DistributedSampler 给每个 rank ceil({n} / {world_size}) "
        "个样本，不够时从头重复取样来填充：请用它给出的索引。",
    )
    require(
        not (world_size > 1 and near("summed")),
        f"{where} is {world_size} times too large: all-reduce adds the ranks' gradients, and DDP then divides by the "
        "world size. Average them.",
        f"{where_zh} 大了 {world_size} 倍：all-reduce 把各 rank 的梯度相加，DDP 随后再除以 world size。请取平均。",
    )
    require(
        not near("over_n"),
        f"{where} divides the padded samples' summed loss by n = {n}: each rank's loss is a mean over its padded "
        "shard, so the repeated samples count in the divisor as well.",
        f"{where_zh} 把填充后样本的损失之和除以了 n = {n}：每个 rank 的损失是它填充后分片上的均值，"
        "所以重复的样本也要算进除数里。",
    )
    require(
        not (near("accumulated") or near("last_rank")),
        f"{where} adds up earlier shards' gradients: backward() adds to .grad, so zero it (model.zero_grad()) "
        "before each shard's backward and keep a copy (.clone()) of each result.",
        f"{where_zh} 把前面分片的梯度也加了进来：backward() 会累加到 .grad 上，所以每个分片反向传播之前都要清零"
        "（model.zero_grad()），并用 .clone() 保存每次的结果。",
    )
    want = candidates["right"]
    require(
        False,
        f"{where} is {got.flatten().tolist()}, not the average of the shards' gradients "
        f"({[float(f'{v:.9g}') for v in want.flatten().tolist()]}). For each rank r, take the indices "
        "DistributedSampler(range(n), num_replicas=world_size, rank=r, shuffle=False) gives it, compute the mean "
        "loss and its gradient on a zeroed .grad, then average over the ranks.",
        f"{where_zh} 是 {got.flatten().tolist()}，不是各分片梯度的平均"
        f"（{[float(f'{v:.9g}') for v in want.flatten().tolist()]}）。对每个 rank r，取 "
        "DistributedSampler(range(n), num_replicas=world_size, rank=r, shuffle=False) 给它的索引，"
        "在清零的 .grad 上计算均值损失及其梯度，再对各 rank 取平均。",
    )
