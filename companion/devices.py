"""Lesson 08: choosing a device. CUDA first, then Apple's MPS, then the CPU, unless the learner says otherwise."""

import os

import torch

DEVICE_VARIABLE = "COURSE_DEVICE"


def pick_device(prefer: str | None = None) -> torch.device:
    """The best available device, or `prefer` (or $COURSE_DEVICE) such as "cpu", "cuda:1" or "mps" when given."""
    wanted = prefer if prefer is not None else os.environ.get(DEVICE_VARIABLE) or None
    if wanted is None:
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if not isinstance(wanted, str):
        raise TypeError(f"prefer must be a device name such as 'cpu' or 'cuda:0', not {type(wanted).__name__}")
    try:
        device = torch.device(wanted)
    except RuntimeError as error:
        raise ValueError(f"{wanted!r} is not a device name: use 'cpu', 'cuda', 'cuda:N' or 'mps'") from error
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (device.index or 0) >= count:
            raise ValueError(f"{wanted!r} asked for, but this machine has {count} CUDA device(s): use 'cpu'")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{wanted!r} asked for, but MPS (Apple GPU) is not available here: use 'cpu'")
    elif device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"{wanted!r}: the course runs on 'cpu', 'cuda' or 'mps'")
    return device
