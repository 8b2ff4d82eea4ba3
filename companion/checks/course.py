"""Self-check for lesson 00: seeding makes random draws repeatable."""

from collections.abc import Callable

import torch

from companion.exercises import Exercise, Mistake, passed, require


def check_repeatable_draws(draw_twice: Callable[[], tuple[torch.Tensor, torch.Tensor]]) -> None:
    """`draw_twice()` must reseed before each of two `torch.randn(3)` draws and return both."""
    require(
        callable(draw_twice),
        "Pass the function itself: check_repeatable_draws(draw_twice), without ().",
        "把函数本身传进去：check_repeatable_draws(draw_twice)，不要加 ()。",
    )
    result = draw_twice()
    require(
        isinstance(result, tuple) and len(result) == 2,
        "draw_twice() should return a pair: `return first, second`.",
        "draw_twice() 应该返回一对结果：`return first, second`。",
    )
    first, second = result
    require(
        all(isinstance(t, torch.Tensor) and t.shape == (3,) for t in (first, second)),
        "Each draw should be torch.randn(3): a tensor of shape (3,).",
        "每次抽取都应该是 torch.randn(3)：形状为 (3,) 的张量。",
    )
    require(
        first.unique().numel() == 3,
        "All three numbers are the same: draw them with torch.randn(3), not torch.zeros or torch.ones.",
        "三个数都一样：请用 torch.randn(3) 抽取，而不是 torch.zeros 或 torch.ones。",
    )
    require(
        first.data_ptr() != second.data_ptr(),
        "You returned one draw twice: draw a second tensor after seeding again.",
        "你把同一次抽取返回了两遍：重新设种子之后，再抽一个新的张量。",
    )
    require(
        torch.equal(first, second),
        "The two draws differ: call torch.manual_seed(<same number>) before each torch.randn(3).",
        "两次抽取的结果不同：每次调用 torch.randn(3) 之前，都用同一个数调用 torch.manual_seed。",
    )
    torch.manual_seed(12345)  # whatever state the learner's function finds, it must give the same numbers
    again = draw_twice()[0]
    require(
        torch.equal(again, first),
        "A second call of draw_twice() gave other numbers: seed inside the function, not once outside it.",
        "再调用一次 draw_twice() 得到了别的数：要在函数内部设种子，而不是在函数外面只设一次。",
    )
    passed("the same seed gives the same numbers, every time", "同一个种子，每次都给出同样的数。")


def _reference() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    first = torch.randn(3)
    torch.manual_seed(0)
    return first, torch.randn(3)


def _one_draw_returned_twice() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    x = torch.randn(3)
    return x, x


def _no_reseed() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return torch.randn(3), torch.randn(3)


def _constants() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.ones(3), torch.ones(3)


def _seeded_outside() -> tuple[torch.Tensor, torch.Tensor]:
    first = torch.randn(3)
    return first, first.clone()


EXERCISES = [
    Exercise(
        check=check_repeatable_draws,
        reference=_reference,
        mistakes=(
            Mistake("returns one draw twice", _one_draw_returned_twice, "returned one draw twice"),
            Mistake("seeds once, draws twice", _no_reseed, "The two draws differ"),
            Mistake("two constant tensors", _constants, "All three numbers are the same"),
            Mistake("no seed inside the function", _seeded_outside, "seed inside the function"),
        ),
        why="Seeding resets the generator, so the draw after each seed is the same sequence of numbers.",
        why_zh="设种子会把随机数生成器重置到同一个状态，所以每次设种子之后抽到的都是同一串数。",
        discuss="Why would a test of a training loop seed before it builds the model, not only before the data?",
        discuss_zh="测试训练循环时，为什么要在构建模型之前就设种子，而不只是在生成数据之前？",
    )
]
