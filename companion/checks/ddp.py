"""Self-checks for lesson 12: dealing a shuffled epoch like DistributedSampler, and the gradient DDP applies when the
data does not divide evenly among the ranks."""

import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DistributedSampler

from companion.exercises import Exercise, Mistake, passed, require

SHARD_CASES = [
    (10, 3, 1, 0),
    (10, 3, 2, 1),
    (8, 2, 1, 2),
    (9, 4, 3, 0),
    (3, 4, 3, 1),
    (2, 5, 4, 0),
    (7, 7, 6, 3),
    (5, 1, 0, 2),
]
GRADIENT_CASES = [(12, 4), (10, 3), (7, 2), (5, 4), (9, 1)]  # (samples, world size): even, then padded


def check_shard(shard: Callable[[int, int, int, int], Sequence[int]]) -> None:
    """`shard(n, num_replicas, rank, epoch)` must list DistributedSampler's indices (shuffle=True, seed=0)."""
    require(
        callable(shard),
        "Pass the function itself: check_shard(shard), without ().",
        "把函数本身传进去：check_shard(shard)，不要加 ()。",
    )
    for n, num_replicas, rank, epoch in SHARD_CASES:
        where = f"shard({n}, {num_replicas}, {rank}, epoch={epoch})"
        got = shard(n, num_replicas, rank, epoch)
        require(
            isinstance(got, Sequence | torch.Tensor) and not isinstance(got, str),
            f"{where} should return a list of ints, not {type(got).__name__}.",
            f"{where} 应该返回一个整数列表，而不是 {type(got).__name__}。",
        )
        got = [int(i) for i in got]
        want = _sampler_indices(n, num_replicas, rank, epoch)
        if got == want:
            continue
        per_rank = math.ceil(n / num_replicas)
        require(
            len(got) == per_rank,
            f"{where} gives {len(got)} indices; every rank gets ceil(n / num_replicas) = {per_rank}: the sampler pads "
            "the shuffled list by repeating it from its start, as often as needed (more ranks than samples too).",
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
    shards (shuffle=False, padding included)."""
    require(
        callable(ddp_gradient),
        "Pass the function itself: check_ddp_gradient(ddp_gradient), without ().",
        "把函数本身传进去：check_ddp_gradient(ddp_gradient)，不要加 ()。",
    )
    for n, world_size in GRADIENT_CASES:
        model, x, y = _gradient_case(n, world_size)
        before = [p.detach().clone() for p in model.parameters()]
        got = ddp_gradient(model, x, y, world_size)
        where = f"ddp_gradient(model, x, y, world_size={world_size}) with {n} samples"
        require(
            isinstance(got, torch.Tensor),
            f"{where} should return a tensor, not {type(got).__name__}.",
            f"{where} 应该返回一个张量，而不是 {type(got).__name__}。",
        )
        require(
            all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True)),
            f"{where} changed the model: compute gradients, take no optimizer step.",
            f"{where} 改动了模型的参数：只计算梯度，不要让优化器走一步。",
        )
        candidates = _gradient_candidates(n, world_size)
        require(
            got.shape == candidates["right"].shape,
            f"{where} has shape {tuple(got.shape)}; return a gradient shaped like model.weight, (1, 3).",
            f"{where} 的形状是 {tuple(got.shape)}；返回的梯度应该和 model.weight 形状相同，即 (1, 3)。",
        )
        got = got.detach()
        if torch.allclose(got, candidates["right"], atol=1e-6):
            continue
        _diagnose_gradient(got, candidates, where, n, world_size)
    passed(
        "the averaged shard gradients, with padding, for 1 to 4 ranks; not the whole batch's when n does not divide",
        "各分片梯度的平均（含填充），1 到 4 个 rank 都对；样本数不能整除时，它不等于整批数据的梯度",
    )


# ----------------------------------------------------------------------------------------------------------------
# Private: reference answers and what each typical mistake would give.


def _sampler_indices(n: int, num_replicas: int, rank: int, epoch: int) -> list[int]:
    sampler = DistributedSampler(range(n), num_replicas=num_replicas, rank=rank, shuffle=True, seed=0)
    sampler.set_epoch(epoch)
    return list(sampler)


def _dealt(order: list[int], n: int, num_replicas: int, rank: int, pad_once: bool = False) -> list[int]:
    """Pad `order` to a multiple of num_replicas by repeating it (or, with pad_once, by one copy of its start)."""
    total = math.ceil(n / num_replicas) * num_replicas
    padded = (order + order[: total - n]) if pad_once else (order * math.ceil(total / n))[:total]
    return padded[rank:total:num_replicas]


def _shuffled(n: int, epoch: int) -> list[int]:
    return torch.randperm(n, generator=torch.Generator().manual_seed(epoch)).tolist()


def _diagnose_shard(got: list[int], n: int, num_replicas: int, rank: int, epoch: int, where: str) -> None:
    order = _shuffled(n, epoch)
    per_rank = math.ceil(n / num_replicas)
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
    unshuffled_padding = order + list(range(n)) * num_replicas
    require(
        got != _dealt(unshuffled_padding[: per_rank * num_replicas], n, num_replicas, rank),
        f"{where} gives {got}: the padding repeats 0, 1, ... The sampler pads with the first indices of the "
        "shuffled list, not of range(n).",
        f"{where} 得到 {got}：填充部分重复的是 0、1……。采样器填充时重复的是打乱后列表开头的索引，而不是 range(n) 的。",
    )
    block = order * math.ceil(per_rank * num_replicas / n)
    require(
        got != block[rank * per_rank : (rank + 1) * per_rank],
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


def _gradient_case(n: int, world_size: int) -> tuple[nn.Linear, torch.Tensor, torch.Tensor]:
    """A seeded nn.Linear(3, 1) and n samples, the same on every call (the global random state is left alone)."""
    generator = torch.Generator().manual_seed(100 * n + world_size)
    model = nn.Linear(3, 1)
    with torch.no_grad():
        model.weight.copy_(torch.randn(1, 3, generator=generator))
        model.bias.copy_(torch.randn(1, generator=generator))
    return model, torch.randn(n, 3, generator=generator), torch.randn(n, 1, generator=generator)


def _shard_gradients(n: int, world_size: int, shards: list[list[int]]) -> list[torch.Tensor]:
    model, x, y = _gradient_case(n, world_size)
    gradients = []
    for shard in shards:
        model.zero_grad()
        F.mse_loss(model(x[shard]), y[shard]).backward()
        gradients.append(model.weight.grad.clone())
    return gradients


def _gradient_candidates(n: int, world_size: int) -> dict[str, torch.Tensor]:
    padded = [
        list(DistributedSampler(range(n), num_replicas=world_size, rank=r, shuffle=False)) for r in range(world_size)
    ]
    right = _shard_gradients(n, world_size, padded)
    unpadded = _shard_gradients(n, world_size, [list(range(n))[r::world_size] for r in range(world_size)])
    running = [sum(right[: r + 1]) for r in range(world_size)]  # .grad never zeroed: each adds to the last
    return {
        "right": sum(right) / world_size,
        "summed": sum(right),
        "whole": _shard_gradients(n, world_size, [list(range(n))])[0],
        "unpadded": sum(unpadded) / world_size,
        "accumulated": sum(running) / world_size,
        "last_rank": running[-1] / world_size,
    }


def _diagnose_gradient(got: torch.Tensor, candidates: dict, where: str, n: int, world_size: int) -> None:
    def near(name: str) -> bool:
        return torch.allclose(got, candidates[name], atol=1e-6)

    require(
        not near("whole"),
        f"{where} is the gradient of the whole batch. With {n} samples on {world_size} ranks, DistributedSampler pads "
        "each rank's shard to the same size by repeating samples, and those repeats count twice in DDP's gradient: "
        "compute each rank's gradient on its own shard.",
        f"{where} 是整批数据的梯度。{n} 个样本分给 {world_size} 个 rank 时，DistributedSampler 会重复取样，"
        "把每个 rank 的分片填充到一样大，这些重复的样本在 DDP 的梯度里算了两次：请在每个 rank 自己的分片上分别求梯度。",
    )
    require(
        not near("unpadded"),
        f"{where} uses shards of different sizes (x[r::world_size]). DistributedSampler gives every rank "
        f"ceil({n} / {world_size}) samples, padding with the first ones again: take its indices.",
        f"{where} 用的分片大小不一（x[r::world_size]）。DistributedSampler 给每个 rank ceil({n} / {world_size}) "
        "个样本，不够时从头重复取样来填充：请用它给出的索引。",
    )
    require(
        not (world_size > 1 and near("summed")),
        f"{where} is {world_size} times too large: all-reduce adds the ranks' gradients, and DDP then divides by the "
        "world size. Average them.",
        f"{where} 大了 {world_size} 倍：all-reduce 把各 rank 的梯度相加，DDP 随后再除以 world size。请取平均。",
    )
    require(
        not (near("accumulated") or near("last_rank")),
        f"{where} adds up earlier shards' gradients: backward() adds to .grad, so zero it (model.zero_grad()) "
        "before each shard's backward and keep a copy (.clone()) of each result.",
        f"{where} 把前面分片的梯度也加了进来：backward() 会累加到 .grad 上，所以每个分片反向传播之前都要清零"
        "（model.zero_grad()），并用 .clone() 保存每次的结果。",
    )
    require(
        False,
        f"{where} is not the average of the shards' gradients. For each rank r, take the indices "
        "DistributedSampler(range(n), num_replicas=world_size, rank=r, shuffle=False) gives it, compute the mean "
        "loss and its gradient on a zeroed .grad, then average over the ranks.",
        f"{where} 不是各分片梯度的平均。对每个 rank r，取 DistributedSampler(range(n), num_replicas=world_size, "
        "rank=r, shuffle=False) 给它的索引，在清零的 .grad 上计算均值损失及其梯度，再对各 rank 取平均。",
    )


# ----------------------------------------------------------------------------------------------------------------
# The answers and the typical mistakes, for tests/test_checks.py and the teacher's answer key.


def _shard(n, num_replicas, rank, epoch):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(0 + epoch)).tolist()
    total = math.ceil(n / num_replicas) * num_replicas
    padded = (order * math.ceil(total / n))[:total]
    return padded[rank::num_replicas]


def _shard_unshuffled(n, num_replicas, rank, epoch):
    return _dealt(list(range(n)), n, num_replicas, rank)


def _shard_same_every_epoch(n, num_replicas, rank, epoch):
    return _dealt(_shuffled(n, 0), n, num_replicas, rank)


def _shard_padded_with_range(n, num_replicas, rank, epoch):
    total = math.ceil(n / num_replicas) * num_replicas
    return (_shuffled(n, epoch) + list(range(n)) * num_replicas)[:total][rank::num_replicas]


def _shard_in_blocks(n, num_replicas, rank, epoch):
    per_rank = math.ceil(n / num_replicas)
    return (_shuffled(n, epoch) * num_replicas)[rank * per_rank : (rank + 1) * per_rank]


def _shard_padded_once(n, num_replicas, rank, epoch):
    return _dealt(_shuffled(n, epoch), n, num_replicas, rank, pad_once=True)


def _ddp_gradient(model, x, y, world_size):
    gradients = []
    for rank in range(world_size):
        shard = list(DistributedSampler(range(len(x)), num_replicas=world_size, rank=rank, shuffle=False))
        model.zero_grad()
        F.mse_loss(model(x[shard]), y[shard]).backward()
        gradients.append(model.weight.grad.clone())
    return sum(gradients) / world_size


def _whole_batch_gradient(model, x, y, world_size):
    model.zero_grad()
    F.mse_loss(model(x), y).backward()
    return model.weight.grad.clone()


def _unpadded_gradient(model, x, y, world_size):
    gradients = []
    for rank in range(world_size):
        model.zero_grad()
        F.mse_loss(model(x[rank::world_size]), y[rank::world_size]).backward()
        gradients.append(model.weight.grad.clone())
    return sum(gradients) / world_size


def _summed_gradient(model, x, y, world_size):
    return _ddp_gradient(model, x, y, world_size) * world_size


def _never_zeroed_gradient(model, x, y, world_size):
    model.zero_grad()
    gradients = []
    for rank in range(world_size):
        shard = list(DistributedSampler(range(len(x)), num_replicas=world_size, rank=rank, shuffle=False))
        F.mse_loss(model(x[shard]), y[shard]).backward()
        gradients.append(model.weight.grad.clone())
    return sum(gradients) / world_size


def _stepping_gradient(model, x, y, world_size):
    gradient = _ddp_gradient(model, x, y, world_size)
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    return gradient


EXERCISES = [
    Exercise(
        check=check_shard,
        reference=_shard,
        mistakes=(
            Mistake("deals range(n) without shuffling", _shard_unshuffled, "Shuffle first"),
            Mistake("seeds with 0 in every epoch", _shard_same_every_epoch, "seed + epoch"),
            Mistake("pads with 0, 1, ... instead of the shuffled start", _shard_padded_with_range, "repeats 0, 1"),
            Mistake("gives each rank a block of neighbours", _shard_in_blocks, "deals like cards"),
            Mistake("pads with one copy only (too short for more ranks than samples)", _shard_padded_once, "pads"),
        ),
        why="The sampler shuffles with a generator seeded with seed + epoch, so every rank computes the same order "
        "and set_epoch gives each epoch a new one; padding repeats that order until it divides, then it deals.",
        why_zh="采样器用种子为 seed + epoch 的生成器打乱顺序，所以每个 rank 算出的顺序都一样，"
        "set_epoch 又让每一轮换一个新顺序；然后重复这个顺序直到能整除，再发牌。",
        discuss="Why must every rank compute the same shuffled order, and what would happen if one rank forgot "
        "set_epoch?",
        discuss_zh="为什么每个 rank 必须算出同一个打乱顺序？如果某个 rank 忘了调用 set_epoch，会发生什么？",
    ),
    Exercise(
        check=check_ddp_gradient,
        reference=_ddp_gradient,
        mistakes=(
            Mistake("the plain full-batch gradient, no sharding", _whole_batch_gradient, "whole batch"),
            Mistake("shards x[r::world_size] of different sizes, no padding", _unpadded_gradient, "different sizes"),
            Mistake("sums the ranks' gradients", _summed_gradient, "times too large"),
            Mistake("never zeroes .grad between shards", _never_zeroed_gradient, "backward() adds to .grad"),
            Mistake("takes an optimizer step", _stepping_gradient, "take no optimizer step"),
        ),
        why="Each rank's loss is the mean over its own padded shard; DDP averages the ranks' gradients with equal "
        "weights, so repeated samples count twice and the result is the whole batch's gradient only when n divides.",
        why_zh="每个 rank 的损失是它自己那个（填充过的）分片上的均值；DDP 以相同的权重平均各 rank 的梯度，"
        "所以重复的样本算了两次，只有样本数能整除时，结果才是整批数据的梯度。",
        discuss="With 10 samples on 3 ranks, which samples weigh more than the others in an epoch, and would "
        "drop_last=True be better?",
        discuss_zh="10 个样本分给 3 个 rank 时，一轮里哪些样本的分量比别的重？设置 drop_last=True 会更好吗？",
    ),
]
