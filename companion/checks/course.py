"""Self-check for lesson 00: seeding makes random draws repeatable. The checker watches which tensors `torch.randn`
hands out during the learner's call, so a pair that was never drawn, or one draw and a copy of it, cannot pass."""

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode

from companion.exercises import call_learner, passed, require, sandbox

# The exercise is about seeding, so the learner's call may reset PyTorch's global generator (the harness puts it back).
_MAY_CHANGE = frozenset({"torch_rng"})
_OTHER_FACTORIES = {torch.rand: "torch.rand", torch.randint: "torch.randint", torch.randperm: "torch.randperm"}


@dataclass
class _Recorded:
    draws: list[torch.Tensor] = field(default_factory=list)  # the values each torch.randn call returned
    others: set[str] = field(default_factory=set)  # other random factories the call used


class _WatchDraws(TorchFunctionMode):
    """Records every tensor `torch.randn` returns (however the learner spelled the call) and which other random
    factories were called; everything runs unchanged."""

    def __init__(self, recorded: _Recorded) -> None:
        super().__init__()
        self.recorded = recorded

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.randn and isinstance(out, torch.Tensor):
            self.recorded.draws.append(out.detach().clone())
        elif func in _OTHER_FACTORIES:
            self.recorded.others.add(_OTHER_FACTORIES[func])
        return out


def _call(draw_twice: Callable[[], object]) -> tuple[object, _Recorded]:
    recorded = _Recorded()

    def watched() -> object:
        with _WatchDraws(recorded):
            return draw_twice()

    return call_learner(watched, may_change=_MAY_CHANGE), recorded


def _is_draw(t: torch.Tensor, draw: torch.Tensor) -> bool:
    return t.shape == draw.shape and t.dtype == draw.dtype and torch.equal(t.detach().cpu(), draw.cpu())


def _same_pair(a: object, b: tuple[torch.Tensor, torch.Tensor]) -> bool:
    return (
        isinstance(a, tuple)
        and len(a) == 2
        and all(isinstance(t, torch.Tensor) and _is_draw(t, u) for t, u in zip(a, b, strict=True))
    )


def check_repeatable_draws(draw_twice: Callable[[], tuple[torch.Tensor, torch.Tensor]]) -> None:
    """`draw_twice()` returns two tensors, each from its own `torch.randn(3)` draw, exactly equal, and the same pair
    on every call whatever was drawn before it."""
    require(
        callable(draw_twice),
        "Pass the function itself: check_repeatable_draws(draw_twice), without ().",
        "把函数本身传进去：check_repeatable_draws(draw_twice)，不要加 ()。",
    )
    result, recorded = _call(draw_twice)
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
    from_randn = [[i for i, draw in enumerate(recorded.draws) if _is_draw(t, draw)] for t in (first, second)]
    if not all(from_randn) and recorded.others:
        require(
            False,
            f"Your numbers come from {', '.join(sorted(recorded.others))}, not from torch.randn: torch.rand draws "
            "uniformly from [0, 1) and torch.randint whole numbers, while the exercise asks for draws from the "
            "standard normal distribution.",
            f"你的数来自 {', '.join(sorted(recorded.others))}，而不是 torch.randn：torch.rand 在 [0, 1) 上均匀抽样，"
            "torch.randint 抽整数，而练习要的是标准正态分布的抽样。",
        )
    require(
        all(from_randn),
        "These numbers were not drawn by torch.randn(3): each tensor you return must be what a torch.randn(3) "
        "call gave, unchanged (numbers written out, torch.arange or a computed tensor are not random draws).",
        "这些数不是 torch.randn(3) 抽出来的：你返回的每个张量都必须是某次 torch.randn(3) 调用的结果，且未经改动"
        "（手写的数、torch.arange 或算出来的张量都不是随机抽样）。",
    )
    require(
        first is not second and first.data_ptr() != second.data_ptr(),
        "You returned one draw twice: draw a second tensor after seeding again.",
        "你把同一次抽取返回了两遍：重新设种子之后，再抽一个新的张量。",
    )
    require(
        torch.equal(first, second),
        "The two draws differ: call torch.manual_seed(<same number>) before each torch.randn(3).",
        "两次抽取的结果不同：每次调用 torch.randn(3) 之前，都用同一个数调用 torch.manual_seed。",
    )
    with sandbox(_MAY_CHANGE):  # other draws happen before the next call; the generator is put back afterwards
        torch.manual_seed(12345)
        torch.randn(7)
        again, _ = _call(draw_twice)
    require(
        _same_pair(again, (first, second)),
        "A second call of draw_twice(), made after other random draws, gave another pair: the pair must be the "
        "same on every call, whatever was drawn before, so seed inside the function, with a fixed number.",
        "在别的随机抽样之后再调用一次 draw_twice()，得到了另一对数：无论之前抽过什么，每次调用都必须给出同一对数，"
        "所以要在函数内部用一个固定的数设种子。",
    )
    require(
        any(i != j for i in from_randn[0] for j in from_randn[1]),
        "Only one torch.randn(3) draw went into your pair: the second tensor is a copy of the first, not a draw of "
        "its own.",
        "你返回的这一对里只有一次 torch.randn(3) 抽样：第二个张量是第一个的副本，而不是它自己的一次抽样。",
    )
    passed("the same seed gives the same numbers, every time", "同一个种子，每次都给出同样的数。")
