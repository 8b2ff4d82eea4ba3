"""Argument guards shared by the reference implementations, checkers and file/launch functions.

Deliberately defensive: these functions are where a learner's own values arrive, so each error names the fix. One rule
for the kind of error: a value of the wrong type raises TypeError, a value of the right type outside its range
ValueError.
"""

import numbers

import torch

from companion.language import in_language


def require_int(value: object, name: str, smallest: int | None = None, example: object = None) -> int:
    """`value` as an int (not a bool, not a float), at least `smallest`; else TypeError/ValueError naming the fix."""
    example = max(smallest or 0, 1) if example is None else example
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        kind = type(value).__name__
        raise TypeError(
            in_language(
                f"{name} must be an int such as {example}, not {kind}",
                f"{name} 必须是整数，例如 {example}，而不是 {kind}",
            )
        )
    if smallest is not None and value < smallest:
        raise ValueError(
            in_language(
                f"{name} must be at least {smallest} (e.g. {example}), not {value}",
                f"{name} 至少为 {smallest}（例如 {example}），而不是 {value}",
            )
        )
    return int(value)


def require_number(
    value: object, name: str, low: float | None = None, high: float | None = None, example: object = 0.1
) -> float:
    """`value` as a float within [low, high] (a bool is not a number here); else an error naming the range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        kind = type(value).__name__
        raise TypeError(
            in_language(
                f"{name} must be a number such as {example}, not {kind}",
                f"{name} 必须是一个数，例如 {example}，而不是 {kind}",
            )
        )
    if value != value:
        raise ValueError(
            in_language(
                f"{name} must be a number such as {example}, not NaN",
                f"{name} 必须是一个数，例如 {example}，而不是 NaN",
            )
        )
    if low is not None and value < low:
        raise ValueError(
            in_language(f"{name} must be at least {low}, not {value}", f"{name} 至少为 {low}，而不是 {value}")
        )
    if high is not None and value > high:
        raise ValueError(
            in_language(f"{name} must be at most {high}, not {value}", f"{name} 至多为 {high}，而不是 {value}")
        )
    return float(value)


def require_tensor(value: object, name: str, ndim: int | None = None, floating: bool = False) -> torch.Tensor:
    """`value` as a tensor with `ndim` dimensions (and a floating dtype if asked); else an error naming the fix."""
    if not isinstance(value, torch.Tensor):
        kind = type(value).__name__
        raise TypeError(
            in_language(
                f"{name} must be a torch.Tensor, not {kind}: wrap it with torch.tensor(...)",
                f"{name} 必须是 torch.Tensor，而不是 {kind}：请用 torch.tensor(...) 包起来",
            )
        )
    if ndim is not None and value.dim() != ndim:
        shape = tuple(value.shape)
        raise ValueError(
            in_language(
                f"{name} must have {ndim} dimensions, not {value.dim()} (shape {shape})",
                f"{name} 必须有 {ndim} 个维度，而不是 {value.dim()} 个（形状 {shape}）",
            )
        )
    if floating and not value.is_floating_point():
        raise TypeError(
            in_language(
                f"{name} must hold floating-point numbers, not {value.dtype}: use {name}.float()",
                f"{name} 必须是浮点数，而不是 {value.dtype}：请用 {name}.float()",
            )
        )
    return value
