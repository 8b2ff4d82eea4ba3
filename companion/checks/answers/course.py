"""Lesson 00's exercise for the teacher: the reference answer, other correct answers and typical mistakes."""

import torch

from companion.checks.course import check_repeatable_draws
from companion.exercises import Exercise, Mistake


def _reference() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    first = torch.randn(3)
    torch.manual_seed(0)
    return first, torch.randn(3)


def _right_forked() -> tuple[torch.Tensor, torch.Tensor]:
    pair = []
    for _ in range(2):
        with torch.random.fork_rng():  # the global generator is left where it was
            torch.manual_seed(7)
            pair.append(torch.randn(3))
    return pair[0], pair[1]


def _right_own_generator() -> tuple[torch.Tensor, torch.Tensor]:
    return (
        torch.randn(3, generator=torch.Generator().manual_seed(7)),
        torch.randn(3, generator=torch.Generator().manual_seed(7)),
    )


def _right_random_module_float64() -> tuple[torch.Tensor, torch.Tensor]:
    torch.random.manual_seed(2024)
    a = torch.randn((3,), dtype=torch.float64)
    torch.random.manual_seed(2024)
    return a, torch.randn((3,), dtype=torch.float64)


def _one_draw_returned_twice() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    x = torch.randn(3)
    return x, x


def _one_draw_and_a_copy() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    x = torch.randn(3)
    return x, x.clone()


def _no_reseed() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return torch.randn(3), torch.randn(3)


def _two_seeds() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    first = torch.randn(3)
    torch.manual_seed(2)
    return first, torch.randn(3)


def _constants() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.ones(3), torch.ones(3)


def _written_out() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor([0.3, -1.2, 0.8]), torch.tensor([0.3, -1.2, 0.8])


def _arange_pair() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.arange(3.0), torch.arange(3.0)


def _uniform() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    first = torch.rand(3)
    torch.manual_seed(0)
    return first, torch.rand(3)


def _seeded_outside() -> tuple[torch.Tensor, torch.Tensor]:
    first = torch.randn(3)
    return first, first.clone()


def _state_restored_between() -> tuple[torch.Tensor, torch.Tensor]:
    state = torch.get_rng_state()  # repeats within one call, but each call starts where the caller's generator is
    first = torch.randn(3)
    torch.set_rng_state(state)
    return first, torch.randn(3)


EXERCISES = [
    Exercise(
        check=check_repeatable_draws,
        reference=_reference,
        mistakes=(
            Mistake(
                "returns one draw twice",
                _one_draw_returned_twice,
                "returned one draw twice",
                what_zh="把同一次抽样返回两次",
            ),
            Mistake(
                "one draw and a clone of it",
                _one_draw_and_a_copy,
                "a copy of the first",
                what_zh="只抽一次，再返回它的克隆",
            ),
            Mistake(
                "seeds once, draws twice", _no_reseed, "The two draws differ", what_zh="只设一次随机种子，却抽样两次"
            ),
            Mistake(
                "seeds with two different numbers", _two_seeds, "The two draws differ", what_zh="两次设了不同的随机种子"
            ),
            Mistake("two tensors of ones", _constants, "All three numbers are the same", what_zh="两个全 1 张量"),
            Mistake(
                "two constant tensors written out",
                _written_out,
                "not drawn by torch.randn(3)",
                what_zh="直接写出两个常数张量",
            ),
            Mistake(
                "a torch.arange pair", _arange_pair, "not drawn by torch.randn(3)", what_zh="一对 torch.arange 张量"
            ),
            Mistake(
                "torch.rand instead of torch.randn",
                _uniform,
                "torch.rand draws uniformly",
                what_zh="用了 torch.rand 而不是 torch.randn",
            ),
            Mistake(
                "no seed inside the function",
                _seeded_outside,
                "seed inside the function",
                what_zh="函数内部没有设随机种子",
            ),
            Mistake(
                "saves and restores the generator's state",
                _state_restored_between,
                "seed inside the function",
                what_zh="保存再恢复随机数生成器的状态",
            ),
        ),
        why="Seeding resets the generator, so the draw after each seed is the same sequence of numbers.",
        why_zh="设种子会把随机数生成器重置到同一个状态，所以每次设种子之后抽到的都是同一串数。",
        discuss="Why would a test of a training loop seed before it builds the model, not only before the data?",
        discuss_zh="测试训练循环时，为什么要在构建模型之前就设种子，而不只是在生成数据之前？",
        right=(_right_forked, _right_own_generator, _right_random_module_float64),
    )
]
