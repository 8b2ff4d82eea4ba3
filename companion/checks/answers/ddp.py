"""Lesson 12's exercises for the teacher: the reference answers, other correct answers and typical mistakes."""

import itertools
import math
import random

import torch
import torch.nn.functional as F
from torch.utils.data import DistributedSampler

from companion.checks.ddp import check_ddp_gradient, check_shard
from companion.exercises import Exercise, Mistake

# Exercise 1: shard ---------------------------------------------------------------------------------------------------


def _shard(n, num_replicas, rank, epoch):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(0 + epoch)).tolist()
    total = math.ceil(n / num_replicas) * num_replicas
    padded = (order * math.ceil(total / n))[:total]
    return padded[rank::num_replicas]


def _right_the_sampler_itself(n, num_replicas, rank, epoch):
    sampler = DistributedSampler(range(n), num_replicas=num_replicas, rank=rank, shuffle=True, seed=0)
    sampler.set_epoch(epoch)
    return list(sampler)


def _right_as_a_tensor(n, num_replicas, rank, epoch):
    g = torch.Generator()
    g.manual_seed(epoch)
    order = torch.randperm(n, generator=g)
    per_rank = -(-n // num_replicas)
    return order.repeat(-(-per_rank * num_replicas // n))[: per_rank * num_replicas][rank::num_replicas]


def _right_cycling(n, num_replicas, rank, epoch):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(epoch))
    size = math.ceil(n / num_replicas) * num_replicas
    return list(itertools.islice(itertools.cycle(order.tolist()), rank, size, num_replicas))


def _pad_and_deal(order, n, num_replicas, rank):
    size = math.ceil(n / num_replicas) * num_replicas
    return [order[i % n] for i in range(rank, size, num_replicas)]


def _shard_unshuffled(n, num_replicas, rank, epoch):
    return _pad_and_deal(list(range(n)), n, num_replicas, rank)


def _shard_same_every_epoch(n, num_replicas, rank, epoch):
    return _pad_and_deal(torch.randperm(n, generator=torch.Generator().manual_seed(0)).tolist(), n, num_replicas, rank)


def _shard_padded_with_range(n, num_replicas, rank, epoch):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(epoch)).tolist()
    total = math.ceil(n / num_replicas) * num_replicas
    return (order + list(range(n)) * num_replicas)[:total][rank::num_replicas]


def _shard_in_blocks(n, num_replicas, rank, epoch):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(epoch)).tolist()
    per_rank = math.ceil(n / num_replicas)
    return (order * num_replicas)[rank * per_rank : (rank + 1) * per_rank]


def _shard_padded_once(n, num_replicas, rank, epoch):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(epoch)).tolist()
    total = math.ceil(n / num_replicas) * num_replicas
    return (order + order[: total - n])[rank:total:num_replicas]


def _shard_on_the_global_generator(n, num_replicas, rank, epoch):
    torch.manual_seed(0 + epoch)  # the right order, but every later random number of the caller changes
    return _pad_and_deal(torch.randperm(n).tolist(), n, num_replicas, rank)


def _shard_with_python_random(n, num_replicas, rank, epoch):
    order = list(range(n))
    random.Random(epoch).shuffle(order)
    return _pad_and_deal(order, n, num_replicas, rank)


def _shard_seeded_with_epoch_plus_one(n, num_replicas, rank, epoch):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(epoch + 1)).tolist()
    return _pad_and_deal(order, n, num_replicas, rank)


def _shard_as_floats(n, num_replicas, rank, epoch):
    return [float(i) for i in _shard(n, num_replicas, rank, epoch)]


# Exercise 2: ddp_gradient --------------------------------------------------------------------------------------------


def _ddp_gradient(model, x, y, world_size):
    gradients = []
    for rank in range(world_size):
        shard = list(DistributedSampler(range(len(x)), num_replicas=world_size, rank=rank, shuffle=False))
        model.zero_grad()
        F.mse_loss(model(x[shard]), y[shard]).backward()
        gradients.append(model.weight.grad.clone())
    return sum(gradients) / world_size


def _right_autograd_grad(model, x, y, world_size):
    per_rank = []
    for r in range(world_size):
        idx = list(DistributedSampler(range(len(x)), world_size, r, shuffle=False))
        (grad,) = torch.autograd.grad(F.mse_loss(model(x[idx]), y[idx]), model.weight)  # .grad left alone
        per_rank.append(grad)
    return torch.stack(per_rank).mean(dim=0)


def _right_one_loss_over_the_padded_shards(model, x, y, world_size):
    # every shard has the same size, so the mean of the shards' means is the mean over all their samples
    idx = [i for r in range(world_size) for i in DistributedSampler(range(len(x)), world_size, r, shuffle=False)]
    model.zero_grad(set_to_none=True)
    F.mse_loss(model(x[idx]), y[idx]).backward()
    return model.weight.grad.detach().clone()


def _right_accumulated_then_divided(model, x, y, world_size):
    model.zero_grad()
    for r in range(world_size):
        idx = torch.tensor(list(DistributedSampler(range(len(x)), world_size, r, shuffle=False)))
        F.mse_loss(model(x[idx]), y[idx]).backward()  # .grad adds the shards' gradients up
    return model.weight.grad / world_size


def _right_by_hand(model, x, y, world_size):
    with torch.no_grad():
        total = torch.zeros_like(model.weight)
        for r in range(world_size):
            idx = list(DistributedSampler(range(len(x)), world_size, r, shuffle=False))
            error = model(x[idx]) - y[idx]  # d/dW of mean((xW^T + b - y)^2) = 2 * mean(error * x)
            total += 2 * (error * x[idx]).mean(dim=0, keepdim=True)
    return total / world_size


def _whole_batch_gradient(model, x, y, world_size):
    model.zero_grad()
    F.mse_loss(model(x), y).backward()
    return model.weight.grad.clone()


def _unpadded_gradient(model, x, y, world_size):
    gradients = []
    for r in range(world_size):
        model.zero_grad()
        F.mse_loss(model(x[r::world_size]), y[r::world_size]).backward()
        gradients.append(model.weight.grad.clone())
    return sum(gradients) / world_size


def _summed_gradient(model, x, y, world_size):
    return _ddp_gradient(model, x, y, world_size) * world_size


def _never_zeroed_gradient(model, x, y, world_size):
    model.zero_grad()
    gradients = []
    for r in range(world_size):
        shard = list(DistributedSampler(range(len(x)), num_replicas=world_size, rank=r, shuffle=False))
        F.mse_loss(model(x[shard]), y[shard]).backward()
        gradients.append(model.weight.grad.clone())
    return sum(gradients) / world_size


def _stepping_gradient(model, x, y, world_size):
    gradient = _ddp_gradient(model, x, y, world_size)
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    return gradient


def _stale_gradient_kept(model, x, y, world_size):
    for r in range(world_size):  # no zero_grad() before the first shard: an earlier backward's .grad stays in
        shard = list(DistributedSampler(range(len(x)), world_size, r, shuffle=False))
        F.mse_loss(model(x[shard]), y[shard]).backward()
    return model.weight.grad / world_size


def _dropped_last_gradient(model, x, y, world_size):
    gradients = []
    for r in range(world_size):
        shard = list(DistributedSampler(range(len(x)), world_size, r, shuffle=False, drop_last=True))
        model.zero_grad()
        F.mse_loss(model(x[shard]), y[shard]).backward()
        gradients.append(model.weight.grad.clone())
    return sum(gradients) / world_size


def _shuffled_gradient(model, x, y, world_size):
    gradients = []
    for r in range(world_size):
        shard = list(DistributedSampler(range(len(x)), world_size, r))  # shuffle=True by default
        model.zero_grad()
        F.mse_loss(model(x[shard]), y[shard]).backward()
        gradients.append(model.weight.grad.clone())
    return sum(gradients) / world_size


def _divided_by_n_gradient(model, x, y, world_size):
    idx = [i for r in range(world_size) for i in DistributedSampler(range(len(x)), world_size, r, shuffle=False)]
    model.zero_grad()
    (F.mse_loss(model(x[idx]), y[idx], reduction="sum") / len(x)).backward()
    return model.weight.grad.clone()


def _float64_gradient(model, x, y, world_size):
    return _right_autograd_grad(model, x, y, world_size).double()


EXERCISES = [
    Exercise(
        check=check_shard,
        reference=_shard,
        mistakes=(
            Mistake(
                "deals range(n) without shuffling",
                _shard_unshuffled,
                "Shuffle first",
                what_zh="不打乱，直接把 range(n) 发给各 rank",
            ),
            Mistake("seeds with 0 in every epoch", _shard_same_every_epoch, "seed + epoch", what_zh="每一轮都用种子 0"),
            Mistake(
                "pads with 0, 1, ... instead of the shuffled start",
                _shard_padded_with_range,
                "repeats 0, 1",
                what_zh="用 0、1……填充，而不是用打乱后列表开头的索引",
            ),
            Mistake(
                "gives each rank a block of neighbours",
                _shard_in_blocks,
                "deals like cards",
                what_zh="给每个 rank 分一段相邻的索引，而不是像发牌一样轮流分",
            ),
            Mistake(
                "pads with one copy only (too short for more ranks than samples)",
                _shard_padded_once,
                "pads",
                what_zh="只补一份来填充（rank 比样本多时长度不够）",
            ),
            Mistake(
                "torch.manual_seed(epoch), then torch.randperm(n)",
                _shard_on_the_global_generator,
                "global random generator",
                what_zh="先用 torch.manual_seed(epoch) 设全局种子，再调用 torch.randperm(n)",
            ),
            Mistake(
                "shuffles with Python's random",
                _shard_with_python_random,
                "Python's random or NumPy",
                what_zh="用 Python 的 random 打乱",
            ),
            Mistake(
                "seeds with epoch + 1",
                _shard_seeded_with_epoch_plus_one,
                "set_epoch adds the epoch",
                what_zh="种子用成了 epoch + 1",
            ),
            Mistake(
                "floats instead of int indices",
                _shard_as_floats,
                "indices are ints",
                what_zh="索引给成浮点数，而不是整数",
            ),
        ),
        why="The sampler shuffles with a generator seeded with seed + epoch, so every rank computes the same order "
        "and set_epoch gives each epoch a new one; padding repeats that order until it divides, then it deals.",
        why_zh="采样器用种子为 seed + epoch 的生成器打乱顺序，所以每个 rank 算出的顺序都一样，"
        "set_epoch 又让每一轮换一个新顺序；然后重复这个顺序直到能整除，再发牌。",
        discuss="Why must every rank compute the same shuffled order, and what would happen if one rank forgot "
        "set_epoch?",
        discuss_zh="为什么每个 rank 必须算出同一个打乱顺序？如果某个 rank 忘了调用 set_epoch，会发生什么？",
        right=(_right_the_sampler_itself, _right_as_a_tensor, _right_cycling),
    ),
    Exercise(
        check=check_ddp_gradient,
        reference=_ddp_gradient,
        mistakes=(
            Mistake(
                "the plain full-batch gradient, no sharding",
                _whole_batch_gradient,
                "whole batch",
                what_zh="不分片，直接求整批数据的梯度",
            ),
            Mistake(
                "shards x[r::world_size] of different sizes, no padding",
                _unpadded_gradient,
                "different sizes",
                what_zh="用 x[r::world_size] 分片，大小不一，也没有填充",
            ),
            Mistake(
                "sums the ranks' gradients",
                _summed_gradient,
                "times too large",
                what_zh="把各 rank 的梯度相加，没有取平均",
            ),
            Mistake(
                "never zeroes .grad between shards",
                _never_zeroed_gradient,
                "backward() adds to .grad",
                what_zh="分片之间没有把 .grad 清零",
            ),
            Mistake(
                "takes an optimizer step", _stepping_gradient, "take no optimizer step", what_zh="让优化器走了一步"
            ),
            Mistake(
                "keeps the .grad the model came with",
                _stale_gradient_kept,
                "the .grad the model came with",
                what_zh="把模型传进来时已有的 .grad 也算了进去",
            ),
            Mistake(
                "shards from drop_last=True",
                _dropped_last_gradient,
                "drop_last=True",
                what_zh="用 drop_last=True 得到的分片",
            ),
            Mistake(
                "shards from the sampler with shuffle left on",
                _shuffled_gradient,
                "shuffle=False",
                what_zh="用采样器分片时没有关闭打乱",
            ),
            Mistake(
                "the padded samples' summed loss divided by n",
                _divided_by_n_gradient,
                "divisor",
                what_zh="把填充后样本的损失之和除以 n",
            ),
            Mistake(
                "returns the gradient in float64",
                _float64_gradient,
                "do not convert it",
                what_zh="把梯度转成 float64 返回",
            ),
        ),
        why="Each rank's loss is the mean over its own padded shard; DDP averages the ranks' gradients with equal "
        "weights, so repeated samples count twice and the result is the whole batch's gradient only when n divides.",
        why_zh="每个 rank 的损失是它自己那个（填充过的）分片上的均值；DDP 以相同的权重平均各 rank 的梯度，"
        "所以重复的样本算了两次，只有样本数能整除时，结果才是整批数据的梯度。",
        discuss="With 10 samples on 3 ranks, which samples weigh more than the others in an epoch, and would "
        "drop_last=True be better?",
        discuss_zh="10 个样本分给 3 个 rank 时，一轮里哪些样本的分量比别的重？设置 drop_last=True 会更好吗？",
        right=(
            _right_autograd_grad,
            _right_one_loss_over_the_padded_shards,
            _right_accumulated_then_divided,
            _right_by_hand,
        ),
    ),
]
