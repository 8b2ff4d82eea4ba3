"""What every exercise self-check shares: one error type for a wrong answer and one pass message."""


class WrongAnswer(AssertionError):
    """Raised by a self-check when the learner's answer is wrong; the message is a hint, not the solution."""


def passed(what: str) -> None:
    """Print the pass line a self-check shows when every case agrees."""
    print(f"✓ Correct / 正确: {what}")


def require(condition: bool, hint: str) -> None:
    """Raise WrongAnswer with `hint` unless `condition` holds."""
    if hasattr(condition, "numel") and condition.numel() != 1:  # a tensor of several truth values is ambiguous
        raise TypeError(
            f"condition is a tensor of {condition.numel()} values: reduce it to one bool with .all() or .any(), "
            "or use torch.equal(a, b)"
        )
    if not condition:
        raise WrongAnswer(hint)
