"""Bad inputs: what every test file's `BAD_CALLS` table is made of, and the small objects its rows pass.

Each row is one wrong call of a public `companion` function or class, the exception it must raise and the part of
its message that names the fix. The rows live beside each module's tests (`tests/test_conv.py` holds conv's);
`tests/test_bad_inputs.py` runs them all and checks that every public callable has rows or a stated reason.
"""

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import TensorDataset

from companion import batchnorm, checkpoint, optim


@dataclass(frozen=True)
class BadCall:
    """function(*args, **kwargs) must raise `error` whose message contains `fix`; `case` names the row."""

    function: Callable
    args: tuple
    error: type[BaseException]
    fix: str
    case: str
    kwargs: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        """'module.qualname' of what the row calls, e.g. 'conv.conv2d_reference' or 'checks.data.check_pad_collate'."""
        return f"{self.function.__module__.removeprefix('companion.')}.{self.function.__qualname__}"

    @property
    def id(self) -> str:
        return f"{self.name}-{self.case}"


def bad(function: Callable, args: tuple, error: type[BaseException], fix: str, case: str, **kwargs) -> BadCall:
    """One row: `function(*args, **kwargs)` raises `error`, its message names `fix`."""
    return BadCall(function, args, error, fix, case, kwargs)


class Built:
    """An argument made inside the test from pytest's tmp_path (files, folders), by `build(tmp_path)`."""

    def __init__(self, build, label: str) -> None:
        self.build, self.label = build, label

    def __repr__(self) -> str:
        return f"Built({self.label})"


def in_tmp(*parts: str) -> Built:
    """tmp_path / parts, not created."""
    return Built(lambda tmp_path: tmp_path.joinpath(*parts), "/".join(parts) or "tmp_path")


def file_with(contents, label: str) -> Built:
    """tmp_path / 'last.pt' holding `contents(good_bytes)`, where good_bytes is a complete torch.save file."""

    def build(tmp_path: Path) -> Path:
        buffer = io.BytesIO()
        torch.save({"weight": torch.arange(64.0), "epoch": 3}, buffer)
        path = tmp_path / "last.pt"
        path.write_bytes(contents(buffer.getvalue()))
        return path

    return Built(build, label)


def saved(make, label: str) -> Built:
    """tmp_path / 'last.pt' written by torch.save(make())."""

    def build(tmp_path: Path) -> Path:
        path = tmp_path / "last.pt"
        torch.save(make(), path)
        return path

    return Built(build, label)


GOOD_FILE = file_with(lambda good: good, "a good checkpoint")


def _fixed_objects():
    """Small inputs shared by the rows, built without touching the global random state."""
    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        models = {
            "linear": nn.Linear(4, 3),
            "other": nn.Linear(4, 3),
            "digits": checkpoint.make_model(),
            "mlp": optim.digits_mlp(),
        }
    return generator, models


_GENERATOR, _MODELS = _fixed_objects()
LINEAR, OTHER, DIGITS_MODEL, MLP = _MODELS["linear"], _MODELS["other"], _MODELS["digits"], _MODELS["mlp"]
SGD = torch.optim.SGD(LINEAR.parameters(), lr=0.1)
OTHER_SGD = torch.optim.SGD(OTHER.parameters(), lr=0.1)
BATCHES = [(torch.randn(5, 4, generator=_GENERATOR), torch.tensor([0, 1, 2, 0, 1]))]
ONE_HOT_BATCHES = [(BATCHES[0][0], F.one_hot(BATCHES[0][1], 3).float())]
IMAGES = TensorDataset(torch.rand(8, 1, 8, 8, generator=_GENERATOR), torch.arange(8) % 10)
STATE = LINEAR.state_dict()
PARAMETER = nn.Parameter(torch.ones(2))

ZEROS = torch.zeros(2, 4)  # scatter's self
INDEX = torch.tensor([[2, 3]])  # scatter's index along dim 1
ONES = torch.ones(2, 4)  # scatter's src
SMALL_LOGITS = torch.randn(4, 3, generator=_GENERATOR)
SMALL_TARGET = torch.tensor([0, 1, 2, 0])
IMAGE = torch.randn(1, 4, 5, 5, generator=_GENERATOR)  # conv input
KERNELS = torch.randn(2, 4, 3, 3, generator=_GENERATOR)  # conv weight
FEATURES = torch.randn(2, 3, 4, 4, generator=_GENERATOR)  # batchnorm input
RUNNING_BATCHES = torch.randn(3, 4, 1, 2, 2, generator=_GENERATOR)
BN3 = batchnorm.BatchNorm2dReference(3)


def _a_script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text("print('a rank')\n")
    return path


SCRIPT = Built(_a_script, "a script file")  # launches refuse their other arguments before starting anything


def make_adam(params):
    return torch.optim.Adam(params, lr=1e-3)
