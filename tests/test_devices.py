"""companion.devices.pick_device: the order CUDA, MPS, CPU, the override, and errors that name the fix."""

import pytest
import torch

from companion.devices import DEVICE_VARIABLE, pick_device


@pytest.fixture(autouse=True)
def no_override(monkeypatch):
    monkeypatch.delenv(DEVICE_VARIABLE, raising=False)


def test_picks_cuda_then_mps_then_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pick_device() == torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert pick_device() == torch.device("mps")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert pick_device() == torch.device("cpu")


def test_matches_what_this_machine_has():
    expected = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    assert pick_device().type == expected


def test_override_by_argument_and_by_environment(monkeypatch):
    assert pick_device("cpu") == torch.device("cpu")
    monkeypatch.setenv(DEVICE_VARIABLE, "cpu")
    assert pick_device() == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert pick_device("cuda:1") == torch.device("cuda", 1)
    monkeypatch.setenv(DEVICE_VARIABLE, "")
    assert pick_device() == torch.device("cuda")


@pytest.mark.parametrize(
    ("prefer", "error", "fix"),
    [
        ("gpu", ValueError, "use 'cpu', 'cuda', 'cuda:N' or 'mps'"),
        (0, TypeError, "a device name"),
        ("meta", ValueError, "runs on 'cpu', 'cuda' or 'mps'"),
    ],
)
def test_bad_names_are_refused_with_the_fix(prefer, error, fix):
    with pytest.raises(error, match=fix):
        pick_device(prefer)


def test_missing_accelerators_are_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(ValueError, match="0 CUDA device"):
        pick_device("cuda")
    with pytest.raises(ValueError, match="MPS .* not available"):
        pick_device("mps")
