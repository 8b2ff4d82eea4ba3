"""What every exercise self-check shares: one error type, hints and pass lines in the edition's language(s) (see
companion/language.py), the harness every call of the learner's code goes through (global state left as found,
arguments not changed behind the caller's back), and the table format of the typical wrong answers each checker
must reject and the other correct answers it must accept (tests/test_checks.py runs every table; the teacher's
answer key prints them)."""

import copy
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from companion.language import by_language, in_language, language, say

PASS_SIGN = "✓"  # every pass line starts with it, in every edition: what code that looks for a pass searches
PASS_MARK = "✓ Correct / 正确"  # the bilingual edition's pass mark; pass_mark() gives this edition's
PASS_MARKS = {"en": "✓ Correct", "zh": "✓ 正确", "both": PASS_MARK}
HINT_SEP = "\n提示："  # between the English and the Chinese hint, in the bilingual edition


class WrongAnswer(AssertionError):
    """Raised by a self-check when the learner's answer is wrong; the message is a hint, not the solution."""


def pass_mark() -> str:
    """The pass mark of this edition: "✓ Correct", "✓ 正确", or both."""
    return PASS_MARKS[language()]


def shows_pass(text: str) -> bool:
    """Whether a self-check's output `text` holds a pass line of any edition."""
    return any(mark in text for mark in PASS_MARKS.values())


def passed(what: str, what_zh: str) -> None:
    """Print the pass line a self-check shows when every case agrees, in this edition's language(s)."""
    print(by_language(f"✓ Correct: {what}", f"✓ 正确：{what_zh}", f"{PASS_MARK}: {what}\n  {what_zh}"))


def hint_text(hint: str, hint_zh: str) -> str:
    """A WrongAnswer's message: the English hint, the Chinese one, or both (the Chinese after "提示：")."""
    return say(hint, hint_zh, HINT_SEP)


def require(condition: bool, hint: str, hint_zh: str) -> None:
    """Raise WrongAnswer with the hint in this edition's language(s) unless `condition` holds."""
    if hasattr(condition, "numel") and condition.numel() != 1:  # a tensor of several truth values is ambiguous
        count = condition.numel()
        raise TypeError(
            in_language(
                f"condition is a tensor of {count} values: reduce it to one bool with .all() or .any(), "
                "or use torch.equal(a, b)",
                f"condition 是含 {count} 个值的张量：请用 .all() 或 .any() 把它归约成一个布尔值，"
                "或者用 torch.equal(a, b)",
            )
        )
    if not condition:
        raise WrongAnswer(hint_text(hint, hint_zh))


@dataclass(frozen=True)
class Mistake:
    """A typical wrong answer: what the learner did, the answer itself, and a phrase the hint must contain."""

    what: str  # e.g. "sums over dim=0 instead of dim=1"
    answer: object  # exactly what the notebook would pass to the checker
    hint: str  # a phrase of the English hint: proves the checker names *this* mistake
    what_zh: str = ""  # `what` in Chinese, for the Chinese teacher's lesson plan


@dataclass(frozen=True)
class Exercise:
    """One exercise: its checker, the reference answer (must pass), typical mistakes (each must be rejected)."""

    check: Callable[[object], None]
    reference: object
    mistakes: tuple[Mistake, ...]
    why: str = ""  # for the teacher's answer key: why the reference answer works
    why_zh: str = ""
    discuss: str = ""  # a question for class discussion
    discuss_zh: str = ""
    right: tuple = ()  # other correct answers (another idiom, another dtype): each must pass


# The global state a function may change without saying so, and the hint that names each change.
GLOBAL_STATE: dict[str, tuple[Callable[[], object], Callable[[object], None], str, str]] = {
    "torch_rng": (
        torch.random.get_rng_state,
        torch.random.set_rng_state,
        "Your function reseeded or drew from PyTorch's global random generator, which changes every later random "
        "number of the caller: draw from a torch.Generator of your own (torch.randperm(n, generator=g)).",
        "你的函数重设了 PyTorch 的全局随机数生成器，或者从它抽取了随机数，这会改变调用者之后的每一个随机数："
        "请用你自己的 torch.Generator 抽取（torch.randperm(n, generator=g)）。",
    ),
    "python_rng": (
        random.getstate,
        random.setstate,
        "Your function reseeded or drew from Python's global `random` module: use random.Random(seed) of your own.",
        "你的函数重设了 Python 全局的 `random` 模块，或者从中抽取了随机数：请用你自己的 random.Random(seed)。",
    ),
    "numpy_rng": (
        np.random.get_state,
        np.random.set_state,
        "Your function reseeded or drew from NumPy's global generator: use np.random.default_rng(seed) of your own.",
        "你的函数重设了 NumPy 的全局随机数生成器，或者从中抽取了随机数：请用你自己的 np.random.default_rng(seed)。",
    ),
    "grad_enabled": (
        torch.is_grad_enabled,
        torch.set_grad_enabled,
        "Autograd was still switched off after your function returned: use `with torch.no_grad():` around the "
        "lines that need it, not torch.set_grad_enabled(False).",
        "你的函数返回后，自动求导仍然是关闭的：请只在需要的几行外面写 `with torch.no_grad():`，"
        "不要用 torch.set_grad_enabled(False)。",
    ),
    "default_dtype": (
        torch.get_default_dtype,
        torch.set_default_dtype,
        "Your function changed torch's default dtype for everything that runs after it: pass dtype= to the "
        "tensors you create instead of torch.set_default_dtype.",
        "你的函数改变了 torch 的默认数据类型，之后运行的所有代码都会受影响：请在创建张量时传入 dtype=，"
        "不要调用 torch.set_default_dtype。",
    ),
    "threads": (
        torch.get_num_threads,
        torch.set_num_threads,
        "Your function changed how many threads PyTorch uses for the rest of the session: leave "
        "torch.set_num_threads to the caller.",
        "你的函数改变了 PyTorch 在整个会话中使用的线程数：torch.set_num_threads 应该留给调用者决定。",
    ),
}


_PLAIN = (int, float, str, bool, type(None))  # compared with == at once (Python's random state: 625 ints)


def _same(a: object, b: object) -> bool:
    """Whether two snapshots of global state or two arguments are equal (tensors: dtype, shape, values, grad)."""
    if type(a) in _PLAIN and type(b) in _PLAIN:
        return a == b
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and a.device == b.device
            and a.requires_grad == b.requires_grad
            and torch.equal(a.detach(), b.detach())
            and _same(a.grad, b.grad)
        )
    if isinstance(a, nn.Module) and isinstance(b, nn.Module):
        modes = [m.training for m in a.modules()] == [m.training for m in b.modules()]
        return modes and _same(a.state_dict(), b.state_dict()) and _same(_grads(a), _grads(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if type(a) is not type(b) or len(a) != len(b):
            return False
        if all(type(x) in _PLAIN for x in a) and all(type(y) in _PLAIN for y in b):
            return a == b  # one comparison in C instead of a call per element
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    return a == b


def _grads(module: nn.Module) -> list[torch.Tensor | None]:
    return [p.grad for p in module.parameters()]


def _snapshot(value: object) -> object:
    """A deep copy that keeps what copy.deepcopy leaves out: the .grad of every nn.Parameter (a module's included)."""
    copied = copy.deepcopy(value)
    _copy_grads(value, copied)
    return copied


def _copy_grads(original: object, copied: object) -> None:
    if isinstance(original, dict):
        for key in original:
            _copy_grads(original[key], copied[key])
    elif isinstance(original, list | tuple):
        for a, b in zip(original, copied, strict=True):
            _copy_grads(a, b)
    elif isinstance(original, nn.Module | nn.Parameter):
        parameters = original.parameters() if isinstance(original, nn.Module) else [original]
        twins = copied.parameters() if isinstance(copied, nn.Module) else [copied]
        for parameter, twin in zip(parameters, twins, strict=True):
            if parameter.grad is not None:
                twin.grad = parameter.grad.detach().clone()


@contextmanager
def sandbox(may_change: frozenset[str] = frozenset()) -> Iterator[None]:
    """Around one call of the learner's code: it must leave PyTorch's, Python's and NumPy's global state as it found
    it (random generators, grad mode, default dtype, threads), except what the exercise is about (`may_change`).
    The state is restored either way, so one wrong answer cannot spoil the next check."""
    before = {name: get() for name, (get, _, _, _) in GLOBAL_STATE.items()}
    try:
        yield
    finally:
        changed = [name for name, (get, _, _, _) in GLOBAL_STATE.items() if not _same(before[name], get())]
        for name, (_, put, _, _) in GLOBAL_STATE.items():
            put(before[name])
    for name in changed:
        if name not in may_change:
            _, _, hint, hint_zh = GLOBAL_STATE[name]
            raise WrongAnswer(hint_text(hint, hint_zh))


def call_learner(fn: Callable, *args: object, may_change: frozenset[str] = frozenset()) -> object:
    """Call the learner's `fn` inside `sandbox`, then require that it changed none of its arguments: a function
    that returns the right answer by writing into the caller's tensors breaks the caller's next step."""
    originals = _snapshot(args)
    with sandbox(may_change):
        result = fn(*args)
    for position, (original, passed_in) in enumerate(zip(originals, args, strict=True), start=1):
        require(
            _same(original, passed_in),
            f"Your function changed its argument number {position} in place (its values, dtype, shape, .grad or "
            "a module's mode); the caller still needs it as it was: work on a copy (.clone()) or out of place.",
            f"你的函数原地改动了它的第 {position} 个参数（数值、数据类型、形状、.grad 或模块的模式）；"
            "调用者之后还要用原来的它：请在副本（.clone()）上操作，或者用非原地的写法。",
        )
    return result
