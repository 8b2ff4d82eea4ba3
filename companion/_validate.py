"""Argument guards shared by the reference implementations, checkers and file/launch functions.

Deliberately defensive: these functions are where a learner's own values arrive, so each error names the fix. One rule
for the kind of error: a value of the wrong type raises TypeError, a value of the right type outside its range
ValueError.
"""

import numbers

import torch


def require_int(value: object, name: str, smallest: int | None = None, example: object = None) -> int:
    """`value` as an int (not a bool, not a float), at least `smallest`; else TypeError/ValueError naming the fix."""
    example = max(smallest or 0, 1) if example is None else example
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int such as {example}, not {type(value).__name__}")
    if smallest is not None and value < smallest:
        raise ValueError(f"{name} must be at least {smallest} (e.g. {example}), not {value}")
    return int(value)


def require_number(
    value: object, name: str, low: float | None = None, high: float | None = None, example: object = 0.1
) -> float:
    """`value` as a float within [low, high] (a bool is not a number here); else an error naming the range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number such as {example}, not {type(value).__name__}")
    if value != value:
        raise ValueError(f"{name} must be a number such as {example}, not NaN")
    if low is not None and value < low:
        raise ValueError(f"{name} must be at least {low}, not {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be at most {high}, not {value}")
    return float(value)


def require_tensor(value: object, name: str, ndim: int | None = None, floating: bool = False) -> torch.Tensor:
    """`value` as a tensor with `ndim` dimensions (and a floating dtype if asked); else an error naming the fix."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, not {type(value).__name__}: wrap it with torch.tensor(...)")
    if ndim is not None and value.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, not {value.dim()} (shape {tuple(value.shape)})")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name} must hold floating-point numbers, not {value.dtype}: use {name}.float()")
    return value
