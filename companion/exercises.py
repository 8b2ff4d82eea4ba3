"""What every exercise self-check shares: one error type, bilingual hints and pass lines, and the table format of
the typical wrong answers each checker must reject (tests/test_checks.py runs every table; the teacher's answer key
prints them)."""

from collections.abc import Callable
from dataclasses import dataclass, field

PASS_MARK = "✓ Correct / 正确"


class WrongAnswer(AssertionError):
    """Raised by a self-check when the learner's answer is wrong; the message is a hint, not the solution."""


def passed(what: str, what_zh: str) -> None:
    """Print the pass line a self-check shows when every case agrees, in English and Chinese."""
    print(f"{PASS_MARK}: {what}\n  {what_zh}")


def require(condition: bool, hint: str, hint_zh: str) -> None:
    """Raise WrongAnswer with the hint in both languages unless `condition` holds."""
    if hasattr(condition, "numel") and condition.numel() != 1:  # a tensor of several truth values is ambiguous
        raise TypeError(
            f"condition is a tensor of {condition.numel()} values: reduce it to one bool with .all() or .any(), "
            "or use torch.equal(a, b)"
        )
    if not condition:
        raise WrongAnswer(f"{hint}\n提示：{hint_zh}")


@dataclass(frozen=True)
class Mistake:
    """A typical wrong answer: what the learner did, the answer itself, and a phrase the hint must contain."""

    what: str  # e.g. "sums over dim=0 instead of dim=1"
    answer: object  # exactly what the notebook would pass to the checker
    hint: str  # a phrase of the English hint: proves the checker names *this* mistake


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
    extra: dict = field(default_factory=dict)  # anything a checks module's own tests want to keep beside the row
