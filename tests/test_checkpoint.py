"""companion.checkpoint against PyTorch: exact resume, atomic saves under SIGKILL, the SHA-256 digest, safe loads
that name a hostile file for what it is, the patterns on PyTorch's error text, partial loads, freezing."""

import hashlib
import io
import os
import pickle
import random
import signal
import subprocess
import sys
import time
import types
import zipfile
from collections import OrderedDict
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present
from torch.utils.data import DataLoader, TensorDataset

from companion import _torch_errors, checkpoint
from companion.checkpoint import (
    DIGEST_MARK,
    PAYLOAD_LOG,
    RECORD_LENGTH,
    CheckpointError,
    PartialLoadReport,
    _check_comment_length,
    _recorded_digest,
    accuracy,
    eval_frozen_batchnorm,
    flat_parameters,
    harmless_payload,
    load_checkpoint,
    load_partial_state_dict,
    make_loader,
    make_model,
    new_run,
    plot_resume,
    save_checkpoint,
    states_equal,
    strip_prefix,
    train_epochs,
    verify_digest,
)
from companion.checks.checkpoint import check_resume
from companion.data import digits_datasets
from companion.exercises import WrongAnswer
from companion.plotting import COLUMN_WIDTH, use_course_style
from tests.bad_inputs import DIGITS_MODEL, GOOD_FILE, IMAGES, LINEAR, OTHER, SGD, STATE, bad, file_with, in_tmp, saved


@pytest.fixture(scope="module")
def small_set() -> TensorDataset:
    images, labels = digits_datasets()[0].tensors
    return TensorDataset(images[:320], labels[:320])


# ---------------------------------------------------------------------------------------------------------------
# Resume equals uninterrupted training.


def full_checkpoint(model, optimizer, loader, epoch) -> dict:
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "epoch": epoch,
        "best_accuracy": 0.5,
        "torch_rng": torch.get_rng_state(),
        "loader_rng": loader.generator.get_state(),
    }


@pytest.mark.parametrize("optimizer_name", ["adam", "sgd-momentum"])
def test_resume_equals_uninterrupted_training_exactly(small_set, tmp_path, optimizer_name):
    def start(seed):
        model, optimizer, loader = new_run(small_set, seed=seed, batch_size=32)
        if optimizer_name == "sgd-momentum":
            optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        return model, optimizer, loader

    model, optimizer, loader = start(seed=0)
    train_epochs(model, optimizer, loader, 4)
    straight = model.state_dict()

    model, optimizer, loader = start(seed=0)
    train_epochs(model, optimizer, loader, 2)
    save_checkpoint(full_checkpoint(model, optimizer, loader, 2), tmp_path / "resume.pt")

    def resume(restore_rng: bool):
        model, optimizer, loader = start(seed=7)  # another seed: everything must come from the file
        saved = load_checkpoint(tmp_path / "resume.pt")
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        if restore_rng:
            torch.set_rng_state(saved["torch_rng"])
            loader.generator.set_state(saved["loader_rng"])
        train_epochs(model, optimizer, loader, 4 - saved["epoch"])
        return model

    resumed = resume(restore_rng=True)
    assert list(resumed.state_dict()) == list(straight)
    for name, tensor in resumed.state_dict().items():
        assert torch.equal(tensor, straight[name]), name
    for name, parameter in resumed.named_parameters():
        assert torch.equal(parameter, straight[name])
    # The test can fail: without the random states, dropout and the batch order differ.
    assert not states_equal(resume(restore_rng=False).state_dict(), straight)


def test_the_loader_order_comes_from_its_own_generator(small_set):
    loader = make_loader(small_set, batch_size=64, seed=3)
    state = loader.generator.get_state()
    global_state = torch.get_rng_state()
    first = [labels for _, labels in loader]
    assert torch.equal(torch.get_rng_state(), global_state)  # shuffling left the global generator alone
    loader.generator.set_state(state)
    again = [labels for _, labels in loader]
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(torch.cat(first), small_set.tensors[1])  # it really shuffles


# ---------------------------------------------------------------------------------------------------------------
# Atomic saves.

# One child process imports torch once (seconds) and forks a copy of itself for every save; the test kills that copy
# mid-save. Each line on its stdin asks for one save, "atomic <path>" or "plain <path>"; it answers with the copy's
# process id, then with its exit code (-9 when SIGKILL ended it).
SAVER = """
import os, sys, torch
from companion.checkpoint import save_checkpoint
big = {f"layer{i}": torch.full((1_000_000,), float(i)) for i in range(24)}  # about 96 MB
print("ready", flush=True)
while line := sys.stdin.readline():  # until the test kills it
    mode, target = line.rstrip("\\n").split(" ", 1)
    pid = os.fork()
    if pid == 0:
        (save_checkpoint if mode == "atomic" else torch.save)(big, target)
        os._exit(0)
    print(pid, flush=True)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


CHILD_BYTES = 24 * 1_000_000 * 4  # the tensor bytes alone: a file smaller than this is surely incomplete


@pytest.fixture(scope="module")
def saver():
    child = subprocess.Popen(
        [sys.executable, "-c", SAVER],
        cwd=Path(__file__).resolve().parent.parent,  # the repository root, so that `companion` imports
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        yield child
    finally:
        child.kill()  # idle between saves: nothing of it is left to wait for
        child.wait()
        child.stdin.close()
        child.stdout.close()


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0 only asks whether the process exists
    except ProcessLookupError:
        return False
    return True


def kill_mid_save(saver, target, mode, saving) -> int:
    """Have `saver` save a large checkpoint to `target`; SIGKILL the saving process once `saving()` sees bytes being
    written. Returns its exit code."""
    saver.stdin.write(f"{mode} {target}\n")
    saver.stdin.flush()
    pid = int(saver.stdout.readline())
    deadline = time.monotonic() + 20
    while running(pid) and time.monotonic() < deadline:
        if saving():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # it finished first
                pass
            break
        time.sleep(0.0002)
    return int(saver.stdout.readline())


def temporary_files(folder):
    return [p for p in folder.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="SIGKILL is POSIX only")
@pytest.mark.integration  # a child process that imports torch: CI runs it with make test-integration
def test_a_killed_save_checkpoint_leaves_the_previous_file_intact(saver, tmp_path):
    target = tmp_path / "last.pt"
    old = {"epoch": 1, "weight": torch.arange(10.0)}
    for _ in range(5):  # a retry only if the child finished before the kill landed
        save_checkpoint(old, target)
        for stray in temporary_files(tmp_path):
            stray.unlink()
        code = kill_mid_save(
            saver, target, "atomic", lambda: any(p.stat().st_size > 0 for p in temporary_files(tmp_path))
        )
        if code == -signal.SIGKILL and temporary_files(tmp_path):
            break
    assert code == -signal.SIGKILL, "the child was never caught mid-save"
    loaded = load_checkpoint(target)
    assert loaded["epoch"] == 1 and torch.equal(loaded["weight"], old["weight"])
    # What is left: the target and one partial temporary file, hidden and named after the target.
    (stray,) = temporary_files(tmp_path)
    assert stray.name.startswith(".last.pt.") and sorted(p.name for p in tmp_path.iterdir()) == [stray.name, "last.pt"]
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_checkpoint(stray)
    # The stray file does not get in the way of the next save.
    save_checkpoint({"epoch": 2}, target)
    assert load_checkpoint(target) == {"epoch": 2}


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="SIGKILL is POSIX only")
@pytest.mark.integration  # a child process that imports torch: CI runs it with make test-integration
def test_a_killed_plain_torch_save_destroys_the_previous_file(saver, tmp_path):
    target = tmp_path / "last.pt"
    for _ in range(5):  # a retry only if the child wrote its last byte before the kill landed
        torch.save({"epoch": 1}, target)
        old = target.stat().st_size
        code = kill_mid_save(saver, target, "plain", lambda old=old: old != target.stat().st_size < CHILD_BYTES)
        if code == -signal.SIGKILL and old != target.stat().st_size < CHILD_BYTES:
            break
    assert code == -signal.SIGKILL and old != target.stat().st_size < CHILD_BYTES
    with pytest.raises(CheckpointError, match="truncated or corrupt|empty"):  # emptied first, then partly written
        load_checkpoint(target)


class CrashWhileSaving:
    def __reduce__(self):
        raise RuntimeError("simulated crash")


def test_an_exception_mid_save_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "last.pt"
    save_checkpoint({"epoch": 1}, target)
    with pytest.raises(RuntimeError, match="simulated crash"):
        save_checkpoint({"epoch": 2, "oops": CrashWhileSaving()}, target)
    assert load_checkpoint(target) == {"epoch": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]
    with pytest.raises(RuntimeError, match="simulated crash"):  # the plain way loses the old file
        torch.save({"epoch": 2, "oops": CrashWhileSaving()}, target)
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_checkpoint(target)


def test_save_checkpoint_writes_what_torch_save_writes(tmp_path):
    state = make_model().state_dict()
    save_checkpoint(state, tmp_path / "atomic.pt")
    torch.save(state, tmp_path / "plain.pt")
    assert states_equal(torch.load(tmp_path / "atomic.pt"), torch.load(tmp_path / "plain.pt"))
    assert (tmp_path / "atomic.pt").stat().st_mode == (tmp_path / "plain.pt").stat().st_mode  # umask respected
    save_checkpoint({"epoch": 3}, tmp_path / "atomic.pt")  # overwriting works
    assert load_checkpoint(tmp_path / "atomic.pt") == {"epoch": 3}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["atomic.pt", "plain.pt"]
    save_checkpoint({"epoch": 4}, str(tmp_path / "as-str.pt"))
    assert load_checkpoint(str(tmp_path / "as-str.pt")) == {"epoch": 4}


# ---------------------------------------------------------------------------------------------------------------
# The SHA-256 digest inside the file.


def test_the_digest_covers_what_torch_save_wrote_and_the_file_stays_a_plain_zip(tmp_path):
    state = {"weight": torch.arange(64.0), "epoch": 3}
    path = tmp_path / "last.pt"
    save_checkpoint(state, path)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    written, raw = buffer.getvalue(), path.read_bytes()
    assert raw[: -RECORD_LENGTH - 2] + b"\x00\x00" == written  # torch.save's bytes, then the comment
    assert _recorded_digest(path) == hashlib.sha256(written[:-2]).hexdigest()
    with zipfile.ZipFile(path) as archive:  # any zip tool reads it, and sees the digest as the archive's comment
        assert archive.comment == DIGEST_MARK + _recorded_digest(path).encode()
        assert archive.testzip() is None
    assert states_equal(torch.load(path), state) and states_equal(load_checkpoint(path), state)


def flip(data: bytes, bit: int) -> bytes:
    changed = bytearray(data)
    changed[bit // 8] ^= 1 << (bit % 8)
    return bytes(changed)


def test_a_flipped_bit_that_torch_load_accepts_is_caught_by_the_digest(tmp_path):
    weight = torch.arange(64.0)
    path = tmp_path / "last.pt"
    save_checkpoint({"weight": weight}, path)
    raw = path.read_bytes()
    at = raw.index(weight.numpy().tobytes())  # the tensor's bytes are stored as they are
    (tmp_path / "flipped.pt").write_bytes(flip(raw, 8 * (at + 4 * 10) + 30))  # an exponent bit of weight[10]
    silently = torch.load(tmp_path / "flipped.pt")["weight"]
    assert silently[10] != weight[10] and torch.equal(silently[:10], weight[:10])  # no error, another number
    expected = _recorded_digest(path)
    actual = hashlib.sha256(flip(raw, 8 * (at + 40) + 30)[: -RECORD_LENGTH - 2]).hexdigest()
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(tmp_path / "flipped.pt")
    message = str(caught.value)
    assert message.startswith("'flipped.pt' is damaged: its bytes no longer match the SHA-256 digest")
    assert f"expected {expected[:12]}..., found {actual[:12]}..." in message
    assert "load an earlier checkpoint, or copy the file again" in message
    assert str(tmp_path) not in message and caught.value.__cause__ is None


def test_plain_torch_save_files_have_no_digest_and_still_load(tmp_path):
    torch.save({"epoch": 1}, tmp_path / "plain.pt")
    assert _recorded_digest(tmp_path / "plain.pt") is None
    verify_digest(tmp_path / "plain.pt")  # nothing to check, nothing raised
    assert load_checkpoint(tmp_path / "plain.pt") == {"epoch": 1}


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda raw: raw[:-1] + b"g", "the digest record .* is garbled"),  # not a hex digit
        (lambda raw: raw[:-70] + b"X" + raw[-69:], "the digest record .* is garbled"),  # a byte of the mark
        (  # the comment's length
            lambda raw: raw[: -RECORD_LENGTH - 2] + b"\x00\x00" + raw[-RECORD_LENGTH:],
            "announces a comment of 0 bytes, but 88 follow",
        ),
        (lambda raw: raw[:-5], "announces a comment of 88 bytes, but 83 follow"),  # the end of the digest cut off
    ],
)
def test_a_garbled_digest_record_is_reported_as_damage(tmp_path, damage, why):
    save_checkpoint({"epoch": 1}, tmp_path / "last.pt")
    (tmp_path / "bad.pt").write_bytes(damage((tmp_path / "last.pt").read_bytes()))
    with pytest.raises(CheckpointError, match=f"'bad.pt' is damaged: {why}|'bad.pt' is damaged: the zip .*{why}"):
        load_checkpoint(tmp_path / "bad.pt")


def test_a_flip_in_any_byte_of_the_digest_record_is_refused_never_loaded_unchecked(tmp_path):
    weight = torch.arange(64.0)
    save_checkpoint({"weight": weight}, tmp_path / "last.pt")
    raw = (tmp_path / "last.pt").read_bytes()
    record = 22 + RECORD_LENGTH  # the archive's last record, then the comment save_checkpoint wrote
    at = raw.index(weight.numpy().tobytes())
    # One bit in every byte of the record (bit 0 of the first byte, bit 1 of the next, ...): each field and every
    # byte of the digest gets hit, at a ninth of the cost of all 880 bits (each flip is two loads).
    for byte in range(len(raw) - record, len(raw)):
        bit = 8 * byte + byte % 8
        (tmp_path / "bad.pt").write_bytes(flip(raw, bit))
        with pytest.raises(CheckpointError, match="'bad.pt' is damaged"):
            load_checkpoint(tmp_path / "bad.pt")
        # the same flip together with a changed weight: refused too, not loaded with the other number
        (tmp_path / "bad.pt").write_bytes(flip(flip(raw, bit), 8 * (at + 40) + 30))
        with pytest.raises(CheckpointError, match="'bad.pt' is damaged"):
            load_checkpoint(tmp_path / "bad.pt")


def test_a_digest_record_cut_short_is_refused_never_loaded_unchecked(tmp_path):
    weight = torch.arange(64.0)
    save_checkpoint({"weight": weight}, tmp_path / "last.pt")
    raw = (tmp_path / "last.pt").read_bytes()
    at = raw.index(weight.numpy().tobytes())
    for cut in range(1, 22 + RECORD_LENGTH + 1):  # every length of the last record and the comment, cut off
        # Up to 88 bytes the last record is whole and announces more comment than is left; cut deeper, the record
        # itself is cut short and torch.load finds no archive end.
        why = "the zip archive's last record" if cut <= RECORD_LENGTH else "truncated or corrupt"
        for damaged in [raw, flip(raw, 8 * (at + 40) + 30)]:  # alone, and together with a changed weight
            (tmp_path / "bad.pt").write_bytes(damaged[:-cut])
            with pytest.raises(CheckpointError, match=f"'bad.pt' .*{why}"):
                load_checkpoint(tmp_path / "bad.pt")


def test_a_zip_whose_comment_length_does_not_match_what_follows_is_refused(tmp_path):
    weight = torch.arange(64.0)
    save_checkpoint({"weight": weight}, tmp_path / "last.pt")
    raw = (tmp_path / "last.pt").read_bytes()
    tail = raw[-22 - RECORD_LENGTH :]
    # Values of the 2-byte length field other than RECORD_LENGTH, with the mark after it zeroed as well (so nothing
    # else shows that the file had a digest): refused. The ends of the range, RECORD_LENGTH's neighbours, each byte
    # alone, and 300 seeded others (all 65,536 take a minute; the check is one comparison).
    edges = {0, 1, RECORD_LENGTH - 1, RECORD_LENGTH, RECORD_LENGTH + 1, 255, 256, 2**8 * RECORD_LENGTH, 2**16 - 1}
    for length in sorted(edges | set(random.Random(0).sample(range(2**16), 300))):
        damaged = tail[:20] + length.to_bytes(2, "little") + bytes(len(DIGEST_MARK)) + tail[22 + len(DIGEST_MARK) :]
        if length == RECORD_LENGTH:
            _check_comment_length(damaged, tmp_path / "bad.pt")
        else:
            with pytest.raises(CheckpointError, match=f"announces a comment of {length} bytes, but 88 follow"):
                _check_comment_length(damaged, tmp_path / "bad.pt")
    # The third review's case through load_checkpoint: 12 zero bytes over the length field and 10 bytes of the
    # mark, alone and with a changed weight (torch.load itself loads both, ignoring the 88 bytes at the end).
    at = raw.index(weight.numpy().tobytes())
    start = len(raw) - 22 - RECORD_LENGTH + 20
    for damaged in [raw, flip(raw, 8 * (at + 40) + 30)]:
        (tmp_path / "bad.pt").write_bytes(damaged[:start] + bytes(12) + damaged[start + 12 :])
        torch.load(tmp_path / "bad.pt")
        with pytest.raises(CheckpointError, match="announces a comment of 0 bytes, but 88 follow"):
            load_checkpoint(tmp_path / "bad.pt")
    # A plain torch.save file announces 0 bytes and has 0; with bytes appended it is refused too.
    torch.save({"weight": weight}, tmp_path / "plain.pt")
    assert load_checkpoint(tmp_path / "plain.pt")["weight"].equal(weight)
    for extra in [5, 100, 2**16 - 1]:  # up to the longest comment a zip record can announce
        (tmp_path / "bad.pt").write_bytes((tmp_path / "plain.pt").read_bytes() + b"x" * extra)
        with pytest.raises(CheckpointError, match=f"announces a comment of 0 bytes, but {extra} follow"):
            load_checkpoint(tmp_path / "bad.pt")


def test_a_plain_file_ending_in_other_bytes_is_still_unsigned(tmp_path):
    for obj in [{"epoch": 1}, {"w": torch.zeros(300, dtype=torch.uint8)}, {"mark": DIGEST_MARK[:12].decode()}]:
        torch.save(obj, tmp_path / "plain.pt")
        assert _recorded_digest(tmp_path / "plain.pt") is None
        torch.save(obj, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
        assert _recorded_digest(tmp_path / "legacy.pt") is None


# ---------------------------------------------------------------------------------------------------------------
# The patterns on PyTorch's error text (companion/_torch_errors.py): each against the real error it is meant for.


def torch_load_error(path, **kwargs) -> BaseException:
    with pytest.raises(Exception) as caught:
        torch.load(path, **kwargs)
    return caught.value


def test_blocked_global_matches_pytorchs_error(tmp_path):
    torch.save({"payload": System()}, tmp_path / "evil.pt")
    found = _torch_errors.BLOCKED_GLOBAL.search(str(torch_load_error(tmp_path / "evil.pt")))
    assert found and found.group(1).endswith(".system") and found.group(2) in ("posix", "nt")


def test_refused_global_matches_pytorchs_error(tmp_path):
    torch.save({"config": Config(0.1)}, tmp_path / "config.pt")
    error = torch_load_error(tmp_path / "config.pt")
    found = _torch_errors.REFUSED_GLOBAL.search(str(error))
    assert found and found.group(1).endswith("test_checkpoint.Config")
    assert _torch_errors.UNPICKLER_REASON in str(error)  # the reason follows PyTorch's advice, after this mark
    assert _torch_errors.first_sentence(error).startswith("UnpicklingError: Unsupported global: GLOBAL ")


def as_if_saved_on(path, location: bytes) -> None:
    """Rewrite a CPU checkpoint so that its tensors say they were saved on `location` (no such device needed)."""
    with zipfile.ZipFile(path) as source:
        members = {info.filename: source.read(info.filename) for info in source.infolist()}
    (pickled,) = [name for name in members if name.endswith("/data.pkl")]
    assert members[pickled].count(b"X\x03\x00\x00\x00cpu") >= 1
    tag = b"X" + len(location).to_bytes(4, "little") + location
    members[pickled] = members[pickled].replace(b"X\x03\x00\x00\x00cpu", tag)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as target:
        for name, data in members.items():
            target.writestr(name, data)


@pytest.mark.parametrize(
    ("location", "wording"),
    [
        pytest.param(
            b"cuda:0",
            "deserialize object on a",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA"),
        ),
        pytest.param(
            b"mps",
            "device not recognized",
            marks=pytest.mark.skipif(torch.backends.mps.is_available(), reason="this machine has MPS"),
        ),
        (b"elsewhere", "restore data location"),
        (b"hpu", "device module is not registered"),
    ],
)
def test_missing_device_matches_each_of_pytorchs_errors(tmp_path, location, wording):
    path = tmp_path / "moved.pt"
    torch.save({"weight": torch.ones(2)}, path)
    as_if_saved_on(path, location)
    error = torch_load_error(path, map_location=None)
    found = _torch_errors.MISSING_DEVICE.search(str(error))
    assert found and found.group(0) == wording
    with pytest.raises(CheckpointError, match="pass map_location='cpu'"):
        load_checkpoint(path, map_location=None)
    assert torch.equal(load_checkpoint(path)["weight"], torch.ones(2))  # the default map_location="cpu" fixes it


@pytest.mark.parametrize(
    ("name", "runs"),
    [
        ("posix.system", True),
        ("eval", True),
        ("commands.call", True),
        ("shutil.rmtree", True),
        ("print", True),  # a builtin function: a checkpoint never needs to call it
        ("companion.checkpoint.harmless_payload", True),  # imported here: a function
        ("list", False),
        ("collections.OrderedDict", False),
        ("numpy.core.multiarray._reconstruct", False),  # how numpy arrays are rebuilt
        ("torch.nn.modules.container.Sequential", False),
        ("never_imported_package.RunSettings", False),  # not imported (and never will be): CapWords, a class
        ("never_imported_package.do_something", True),
    ],
)
def test_runs_code_tells_a_call_from_a_class_without_importing(name, runs):
    assert _torch_errors.runs_code(name) is runs
    assert "never_imported_package" not in sys.modules


# ---------------------------------------------------------------------------------------------------------------
# Safe loading.


class Trap:
    def __reduce__(self):
        return (harmless_payload, ("the payload ran",))


class PrintTrap:
    def __reduce__(self):
        return (print, ("the payload printed this",))


def test_a_crafted_pickle_is_refused_named_as_possibly_malicious_and_its_payload_does_not_run(tmp_path, capsys):
    PAYLOAD_LOG.clear()
    path = tmp_path / "crafted.pt"
    torch.save({"weight": torch.ones(2), "extra": Trap(), "noise": PrintTrap()}, path)
    assert sorted(torch.serialization.get_unsafe_globals_in_checkpoint(path)) == [
        "builtins.print",
        "companion.checkpoint.harmless_payload",
    ]
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        torch.load(path)  # PyTorch's own default refuses it
    with pytest.raises(CheckpointError, match="may be malicious: do not load it with weights_only=False") as caught:
        load_checkpoint(path)
    assert "asks to run companion.checkpoint.harmless_payload while it is loaded" in str(caught.value)
    assert "safe_globals" not in str(caught.value)  # no advice to let it in
    assert caught.value.__cause__ is None and caught.value.__suppress_context__  # no raw unpickling traceback
    assert PAYLOAD_LOG == [] and capsys.readouterr().out == ""  # nothing ran
    # The file is a real threat: trusting it runs both payloads.
    loaded = load_checkpoint(path, weights_only=False)
    assert PAYLOAD_LOG == ["the payload ran"] and loaded["extra"] == "the payload ran"
    assert capsys.readouterr().out == "the payload printed this\n"
    PAYLOAD_LOG.clear()


class System:
    def __reduce__(self):
        return (os.system, ("echo this must never run",))


class Eval:
    def __reduce__(self):
        return (eval, ("1 + 1",))


class Popen:
    def __reduce__(self):
        return (subprocess.call, (["true"],))


@pytest.mark.parametrize(
    ("payload", "named", "why"),
    [
        (System(), f"{os.name == 'nt' and 'nt' or 'posix'}.system", "its module"),
        (Eval(), "eval", "a file of weights and plain data never calls"),
        (Popen(), "commands.call", "a file of weights and plain data never calls"),  # subprocess under its pickle name
    ],
)
def test_a_hostile_file_is_named_so_whether_pytorch_blocks_its_module_or_not(tmp_path, payload, named, why):
    path = tmp_path / "evil.pt"
    save_checkpoint({"weight": torch.ones(2), "payload": payload}, path)  # a valid digest: the bytes are intact
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(path)
    message = str(caught.value)
    assert message.startswith(f"'evil.pt' asks to run {named} while it is loaded ({why}")
    assert "may be malicious: do not load it with weights_only=False" in message
    assert "truncated" not in message and "earlier checkpoint" not in message


def test_the_three_kinds_of_refusal_read_differently(tmp_path):
    """Hostile, unknown class, corrupt: each with a real file, each with its own advice."""
    save_checkpoint({"payload": System()}, tmp_path / "evil.pt")
    save_checkpoint({"config": Config(0.5)}, tmp_path / "config.pt")
    good = tmp_path / "good.pt"
    save_checkpoint(make_model().state_dict(), good)
    (tmp_path / "cut.pt").write_bytes(good.read_bytes()[:4000])
    messages = {}
    for name in ["evil", "config", "cut"]:
        with pytest.raises(CheckpointError) as caught:
            load_checkpoint(tmp_path / f"{name}.pt")
        messages[name] = str(caught.value)
    assert "may be malicious" in messages["evil"] and "safe_globals" not in messages["evil"]
    assert "If you trust this class, pass safe_globals=[TheClass]" in messages["config"]
    assert "malicious" not in messages["config"] and "truncated" not in messages["config"]
    assert "truncated or corrupt" in messages["cut"] and "Load an earlier checkpoint" in messages["cut"]
    assert "malicious" not in messages["cut"]


def test_harmless_payload_only_records_its_note():
    PAYLOAD_LOG.clear()
    assert harmless_payload("hello") == "hello" and PAYLOAD_LOG == ["hello"]
    PAYLOAD_LOG.clear()


class Config:
    def __init__(self, lr):
        self.lr = lr


def test_safe_globals_allows_a_trusted_class_only_for_that_call(tmp_path):
    path = tmp_path / "config.pt"
    save_checkpoint({"config": Config(0.5), "weight": torch.ones(1)}, path)
    with pytest.raises(CheckpointError, match=r"test_checkpoint\.Config"):
        load_checkpoint(path)
    assert load_checkpoint(path, safe_globals=[Config])["config"].lr == 0.5
    with pytest.raises(CheckpointError, match="safe_globals"):  # the permission did not outlive the call
        load_checkpoint(path)


def test_a_whole_pickled_model_points_to_its_state_dict(tmp_path):
    torch.save(make_model(), tmp_path / "whole.pt")
    with pytest.raises(CheckpointError, match="load its state_dict instead"):
        load_checkpoint(tmp_path / "whole.pt")
    assert isinstance(load_checkpoint(tmp_path / "whole.pt", weights_only=False), nn.Sequential)


def test_a_pickled_class_that_moved_is_reported_as_such(tmp_path, monkeypatch):
    module = types.ModuleType("vanishing_module")
    exec("class Settings:\n    lr = 0.1\n", module.__dict__)
    module.Settings.__module__ = "vanishing_module"
    monkeypatch.setitem(sys.modules, "vanishing_module", module)
    save_checkpoint({"settings": module.Settings()}, tmp_path / "moved.pt")
    monkeypatch.delitem(sys.modules, "vanishing_module")  # the module was renamed or deleted
    with pytest.raises(CheckpointError, match="cannot be found") as caught:
        load_checkpoint(tmp_path / "moved.pt", weights_only=False)
    assert "vanishing_module" in str(caught.value) and "save state_dicts instead" in str(caught.value)


def corrupt_cases(good: bytes) -> dict[str, bytes]:
    middle = len(good) // 2
    return {
        "empty": b"",
        "first half": good[:middle],
        "first 100 bytes": good[:100],
        "last 10 bytes cut": good[:-10],
        "zeros inside": good[:300] + bytes(50) + good[350:],
        "random bytes": bytes(range(256)) * 3,
        "a text file": b"epoch 3, loss 0.25\n",
    }


@pytest.mark.parametrize("case", list(corrupt_cases(b"x" * 1000)))
def test_truncated_and_corrupt_files_give_one_clear_error(tmp_path, case):
    good = tmp_path / "good.pt"
    torch.save(make_model().state_dict(), good)
    bad = tmp_path / "bad.pt"
    bad.write_bytes(corrupt_cases(good.read_bytes())[case])
    with pytest.raises(Exception) as raw:  # PyTorch's errors vary: EOFError, RuntimeError, OSError, KeyError, ...
        torch.load(bad)
    assert not isinstance(raw.value, CheckpointError)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(bad)
    message = str(caught.value)
    assert message.startswith("'bad.pt'") and str(tmp_path) not in message
    assert ("empty (0 bytes)" if case == "empty" else "truncated or corrupt") in message
    assert "Load an earlier checkpoint" in message or "load an earlier checkpoint" in message
    assert caught.value.__cause__ is None  # no raw traceback from inside torch.load is chained on
    assert caught.value.__suppress_context__ or caught.value.__context__ is None
    assert isinstance(caught.value, RuntimeError)


def test_missing_files_and_folders_name_the_fix(tmp_path):
    with pytest.raises(CheckpointError, match=r"no checkpoint file 'nope.pt' \(its folder exists\)"):
        load_checkpoint(tmp_path / "nope.pt")
    with pytest.raises(CheckpointError, match="does not exist either"):
        load_checkpoint(tmp_path / "no-folder" / "nope.pt")
    with pytest.raises(CheckpointError, match="is a folder"):
        load_checkpoint(tmp_path)


def test_map_location_decides_the_device(tmp_path):
    path = tmp_path / "state.pt"
    save_checkpoint({"weight": torch.randn(3, 2), "nested": [torch.ones(1)]}, path)
    assert load_checkpoint(path)["weight"].device.type == "cpu"
    for where in ["meta", torch.device("meta"), {"cpu": "meta"}]:
        loaded = load_checkpoint(path, map_location=where)
        assert loaded["weight"].device.type == "meta" and loaded["weight"].shape == (3, 2)
        assert loaded["nested"][0].device.type == "meta"
    kept = load_checkpoint(path, map_location=lambda storage, location: storage)
    assert torch.equal(kept["weight"], torch.load(path)["weight"])


def as_if_saved_on_cuda(path) -> None:
    """Rewrite a CPU checkpoint so that its tensors say they were saved on cuda:0 (no GPU needed to make one)."""
    with zipfile.ZipFile(path) as source:
        members = {info.filename: source.read(info.filename) for info in source.infolist()}
    (pickled,) = [name for name in members if name.endswith("/data.pkl")]
    assert members[pickled].count(b"X\x03\x00\x00\x00cpu") >= 1
    members[pickled] = members[pickled].replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as target:
        for name, data in members.items():
            target.writestr(name, data)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_gpu_checkpoint_loads_on_a_cpu_only_machine(tmp_path):
    path = tmp_path / "from-gpu.pt"
    model = make_model()
    torch.save(model.state_dict(), path)
    as_if_saved_on_cuda(path)
    with pytest.raises(RuntimeError, match="CUDA device"):
        torch.load(path)  # PyTorch puts tensors back on the device they were saved from
    fresh = make_model()
    fresh.load_state_dict(load_checkpoint(path))  # map_location="cpu" by default
    assert states_equal(fresh.state_dict(), model.state_dict())
    with pytest.raises(CheckpointError, match="pass map_location='cpu'"):
        load_checkpoint(path, map_location=None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_cuda_checkpoint_loads_on_the_cpu_by_default(tmp_path):
    path = tmp_path / "cuda.pt"
    model = make_model().cuda()
    save_checkpoint(model.state_dict(), path)
    on_cpu = load_checkpoint(path)
    assert all(t.device.type == "cpu" for t in on_cpu.values())
    assert all(t.device.type == "cuda" for t in load_checkpoint(path, map_location=None).values())
    fresh = make_model()
    fresh.load_state_dict(on_cpu)
    assert states_equal(fresh.state_dict(), {k: v.cpu() for k, v in model.state_dict().items()})


@pytest.mark.parametrize(
    ("call", "error", "fix"),
    [
        (lambda p: save_checkpoint({}, 3), TypeError, "file path"),
        (lambda p: save_checkpoint({}, p / "missing" / "x.pt"), FileNotFoundError, "mkdir"),
        (lambda p: save_checkpoint({}, p), IsADirectoryError, "file path inside it"),
        (lambda p: load_checkpoint(None), TypeError, "file path"),
        (lambda p: load_checkpoint(p / "x.pt", map_location=5), TypeError, "a device such as 'cpu'"),
        (lambda p: load_checkpoint(p / "x.pt", weights_only="yes"), TypeError, "True or False"),
        (lambda p: load_checkpoint(p / "x.pt", map_location="gpu"), ValueError, "'cpu', 'cuda', 'cuda:0'"),
        (lambda p: load_checkpoint(p / "x.pt", safe_globals=Config), TypeError, r"safe_globals=\[RunConfig\]"),
    ],
)
def test_bad_save_and_load_arguments_name_the_fix(tmp_path, call, error, fix):
    save_checkpoint({"epoch": 1}, tmp_path / "x.pt")
    with pytest.raises(error, match=fix):
        call(tmp_path)


# ---------------------------------------------------------------------------------------------------------------
# Partial loads.


def changed_model() -> nn.Sequential:
    changed = make_model()
    changed.conv1 = nn.Conv2d(1, 8, kernel_size=5, padding=2)
    changed.bn2 = nn.Identity()
    changed.head = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 2))
    return changed


def test_partial_load_report_on_a_changed_model():
    torch.manual_seed(0)
    pretrained = make_model().state_dict()
    model = changed_model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    report = load_partial_state_dict(model, pretrained)
    assert report.loaded == [
        "conv1.bias",
        "bn1.weight",
        "bn1.bias",
        "bn1.running_mean",
        "bn1.running_var",
        "bn1.num_batches_tracked",
        "conv2.weight",
        "conv2.bias",
    ]
    assert report.skipped == {"conv1.weight": ((8, 1, 3, 3), (8, 1, 5, 5))}
    assert report.missing == ["head.0.weight", "head.0.bias", "head.2.weight", "head.2.bias"]
    assert report.unexpected == [
        "bn2.weight",
        "bn2.bias",
        "bn2.running_mean",
        "bn2.running_var",
        "bn2.num_batches_tracked",
        "head.weight",
        "head.bias",
    ]
    after = model.state_dict()
    for key in report.loaded:
        assert torch.equal(after[key], pretrained[key])
    for key in [*report.skipped, *report.missing]:
        assert torch.equal(after[key], before[key])
    text = str(report)
    assert text.startswith("loaded (8):") and "conv1.weight: file [8, 1, 3, 3], model [8, 1, 5, 5]" in text
    assert "unexpected, not in the model; ignored (7):" in text and "hint" not in text
    # The notes' filter, by name only, crashes on the same pair.
    model_dict = changed_model().state_dict()
    model_dict.update({k: v for k, v in pretrained.items() if k in model_dict})
    with pytest.raises(RuntimeError, match="size mismatch for conv1.weight"):
        changed_model().load_state_dict(model_dict)


def test_partial_load_of_a_matching_state_dict_equals_load_state_dict():
    source, target = make_model(), make_model()
    report = load_partial_state_dict(target, source.state_dict())
    assert report == PartialLoadReport(loaded=list(source.state_dict()))
    assert states_equal(target.state_dict(), source.state_dict())


def test_partial_load_report_hints_at_a_module_prefix():
    wrapped = nn.DataParallel(make_model())
    report = load_partial_state_dict(make_model(), wrapped.state_dict())
    assert report.loaded == [] and len(report.unexpected) == 16
    assert "strip_prefix" in str(report) and "'module.'" in str(report)


def stack(widths: list[int]) -> nn.Sequential:
    return nn.Sequential(*(nn.Linear(a, b) for a, b in zip(widths, widths[1:], strict=False)))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_partial_load_partitions_every_key(data):
    widths = data.draw(st.lists(st.integers(1, 4), min_size=2, max_size=5))
    torch.manual_seed(data.draw(st.integers(0, 1000)))
    source = stack(widths).state_dict()
    keys = list(source)
    fate = {k: data.draw(st.sampled_from(["keep", "drop", "rename", "reshape"]), label=k) for k in keys}
    checkpoint = OrderedDict()
    for key, value in source.items():
        if fate[key] == "keep":
            checkpoint[key] = value
        elif fate[key] == "rename":
            checkpoint["old." + key] = value
        elif fate[key] == "reshape":
            checkpoint[key] = torch.zeros(*value.shape, 2)
    model = stack(widths)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    report = load_partial_state_dict(model, checkpoint)
    assert report.loaded == [k for k in keys if fate[k] == "keep"]
    assert list(report.skipped) == [k for k in keys if fate[k] == "reshape"]
    assert report.missing == [k for k in keys if fate[k] in ("drop", "rename")]
    assert report.unexpected == ["old." + k for k in keys if fate[k] == "rename"]
    for key, value in model.state_dict().items():
        assert torch.equal(value, source[key] if fate[key] == "keep" else before[key])


@pytest.mark.parametrize(
    ("model", "state_dict", "error", "fix"),
    [
        ("not a model", {}, TypeError, "nn.Module"),
        (nn.Linear(1, 1), nn.Linear(1, 1), TypeError, r"state_dict\(\)"),
        (nn.Linear(1, 1), [("weight", torch.ones(1, 1))], TypeError, "mapping of names"),
        (nn.Linear(1, 1), {"model": {"weight": torch.ones(1, 1)}, "epoch": 1}, ValueError, "checkpoint\\['model'\\]"),
        (nn.Linear(1, 1), {"weight": 1.0}, TypeError, "not a tensor"),
        (nn.Linear(1, 1), {0: torch.ones(1)}, TypeError, "str names"),
    ],
)
def test_partial_load_bad_arguments_name_the_fix(model, state_dict, error, fix):
    with pytest.raises(error, match=fix):
        load_partial_state_dict(model, state_dict)


# ---------------------------------------------------------------------------------------------------------------
# strip_prefix.


def test_strip_prefix_matches_pytorch_on_a_data_parallel_state_dict():
    wrapped = nn.DataParallel(make_model())
    original = wrapped.state_dict()
    stripped = strip_prefix(original, "module.")
    reference = wrapped.state_dict()
    consume_prefix_in_state_dict_if_present(reference, "module.")
    assert list(stripped) == list(wrapped.module.state_dict())
    assert all(stripped[k] is original["module." + k] for k in stripped)  # a new dict, the same tensors
    assert dict(stripped._metadata) == dict(reference._metadata)
    assert list(original)[0] == "module.conv1.weight"  # the input is left alone
    bare = make_model()
    assert not bare.load_state_dict(stripped).missing_keys
    assert states_equal(bare.state_dict(), wrapped.module.state_dict())


NAMES = ["w", "b", "conv.weight", "bn.running_mean", "layer.0.weight", "module", "head.bias", "mod.x"]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.sampled_from(NAMES)), unique_by=lambda pair: pair[1], max_size=8),
    st.sampled_from(["module.", "_orig_mod.", "model.encoder."]),
)
def test_strip_prefix_equals_consume_prefix_on_random_keys(entries, prefix):
    state_dict = OrderedDict(
        (prefix + key if prefixed else key, torch.tensor(float(i))) for i, (prefixed, key) in enumerate(entries)
    )
    stripped_keys = [key.removeprefix(prefix) for key in state_dict]
    if len(set(stripped_keys)) < len(stripped_keys):
        with pytest.raises(ValueError, match="merge"):
            strip_prefix(state_dict, prefix)
        return
    reference = OrderedDict(state_dict)
    consume_prefix_in_state_dict_if_present(reference, prefix)
    stripped = strip_prefix(state_dict, prefix)
    assert list(stripped) == stripped_keys
    assert stripped.keys() == reference.keys() and all(stripped[k] is reference[k] for k in stripped)


@pytest.mark.parametrize(
    ("state_dict", "prefix", "error", "fix"),
    [
        ({"module.w": torch.ones(1)}, "", TypeError, "'module.'"),
        ({"module.w": torch.ones(1)}, 3, TypeError, "non-empty str"),
        (nn.Linear(1, 1), "module.", TypeError, r"state_dict\(\)"),
        ({"model": {"module.w": torch.ones(1)}}, "module.", ValueError, "checkpoint"),
        ({"module.w": torch.ones(1), "w": torch.ones(1)}, "module.", ValueError, "merge"),
    ],
)
def test_strip_prefix_bad_arguments_name_the_fix(state_dict, prefix, error, fix):
    with pytest.raises(error, match=fix):
        strip_prefix(state_dict, prefix)


# ---------------------------------------------------------------------------------------------------------------
# Freezing.


def test_frozen_batchnorm_still_updates_in_training_mode_until_put_in_eval_mode():
    model = make_model()
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(name.startswith("head."))
    images = torch.rand(16, 1, 8, 8)
    model.train()
    before = model.bn1.running_mean.clone()
    with torch.no_grad():  # no gradients, frozen parameters, and still:
        model(images)
    assert not torch.equal(model.bn1.running_mean, before)
    assert eval_frozen_batchnorm(model) == ["bn1", "bn2"]
    assert not model.bn1.training and model.dropout.training and model.training
    frozen_stats = model.bn1.running_mean.clone()
    with torch.no_grad():
        model(images)
    assert torch.equal(model.bn1.running_mean, frozen_stats)


def test_eval_frozen_batchnorm_picks_only_fully_frozen_layers_with_parameters():
    model = nn.Sequential(
        OrderedDict(
            a=nn.BatchNorm1d(3),
            b=nn.BatchNorm1d(3),
            c=nn.BatchNorm1d(3, affine=False),
            d=nn.BatchNorm2d(3),
            e=nn.LayerNorm(3),
        )
    )
    model.a.requires_grad_(False)
    model.b.weight.requires_grad_(False)  # half frozen: its bias still trains
    model.d.requires_grad_(False)
    model.e.requires_grad_(False)
    model.train()
    assert eval_frozen_batchnorm(model) == ["a", "d"]
    assert [m.training for m in model] == [False, True, True, False, True]
    with pytest.raises(TypeError, match="nn.Module"):
        eval_frozen_batchnorm(model.state_dict())


def test_train_epochs_can_keep_frozen_batchnorm_fixed(small_set):
    model, _, loader = new_run(small_set, batch_size=64)
    model.bn1.requires_grad_(False)
    model.conv1.requires_grad_(False)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    train_epochs(model, optimizer, loader, 1, keep_frozen_batchnorm=True)
    after = model.state_dict()
    for key in ["conv1.weight", "bn1.weight", "bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked"]:
        assert torch.equal(after[key], before[key]), key
    for key in ["bn2.running_mean", "conv2.weight", "head.weight"]:
        assert not torch.equal(after[key], before[key]), key
    train_epochs(model, optimizer, loader, 1)  # without the flag, the frozen layer's statistics move
    assert not torch.equal(model.bn1.running_mean, before["bn1.running_mean"])


def test_freezing_by_index_misaligns_once_buffers_appear():
    model = make_model()
    state_names, parameter_names = list(model.state_dict()), [n for n, _ in model.named_parameters()]
    cut = state_names.index("conv2.weight")
    frozen = [name for i, name in enumerate(parameter_names) if i < cut]
    assert frozen == [
        "conv1.weight",
        "conv1.bias",
        "bn1.weight",
        "bn1.bias",
        "conv2.weight",
        "conv2.bias",
        "bn2.weight",
    ]
    assert all(i < state_names.index("head.weight") for i in range(len(parameter_names)))


# ---------------------------------------------------------------------------------------------------------------
# The small helpers.


def test_make_model_new_run_train_and_accuracy(small_set):
    model = make_model(num_classes=3)
    assert model(torch.rand(5, 1, 8, 8)).shape == (5, 3)
    model, optimizer, loader = new_run(small_set, seed=2, batch_size=64)
    same_model, _, _ = new_run(small_set, seed=2, batch_size=64)
    assert states_equal(model.state_dict(), same_model.state_dict())
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    model.eval()
    losses = train_epochs(model, optimizer, loader, 2, scheduler=scheduler)
    assert len(losses) == 2 * len(loader) and all(isinstance(x, float) for x in losses)
    assert model.training and scheduler.last_epoch == 2
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.01 * 0.25)
    model.eval()
    images, labels = small_set.tensors
    expected = (model(images).argmax(1) == labels).float().mean().item()
    model.train()
    assert accuracy(model, small_set) == pytest.approx(expected) and model.training
    part = torch.utils.data.random_split(small_set, [0.5, 0.5], generator=torch.Generator().manual_seed(0))[1]
    picked = torch.tensor(part.indices)
    model.eval()
    expected = (model(images[picked]).argmax(1) == labels[picked]).float().mean().item()
    model.train()
    assert accuracy(model, part) == pytest.approx(expected) and model.training
    assert train_epochs(model, optimizer, loader, 0) == []


def test_plot_resume_draws_each_runs_loss_and_its_parameter_distance():
    use_course_style()
    straight = [3.0, 2.0, 1.0, 0.5, 0.25]
    losses = {"full / 完整": [1.0, 0.5, 0.25], "partial": [1.5, 0.5, 0.0]}
    fig = plot_resume(straight, losses, {"full / 完整": [0.0, 0.0, 0.0], "partial": [0.1, 0.2, 0.3]})
    fig.canvas.draw()  # renders the Chinese labels; a missing glyph would warn, and warnings are errors here
    left, right = fig.axes
    assert fig.get_figwidth() <= COLUMN_WIDTH
    assert [list(line.get_ydata()) for line in left.lines[:3]] == [straight, [1.0, 0.5, 0.25], [1.5, 0.5, 0.0]]
    assert list(left.lines[1].get_xdata()) == [3, 4, 5]
    assert [list(line.get_ydata()) for line in right.lines[:2]] == [[0.0, 0.0, 0.0], [0.1, 0.2, 0.3]]
    assert right.get_yscale() == "symlog"  # the exact run's 0 and distances far apart, on one axis
    (legend,) = fig.legends  # one legend, below both panels
    assert [t.get_text() for t in legend.get_texts()] == ["unbroken / 不中断", "full / 完整", "partial"]
    plt.close(fig)


def test_flat_parameters_is_a_detached_copy_of_every_parameter_in_order():
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    flat = flat_parameters(model)
    assert flat.shape == (2 * 3 + 3 + 3 + 3,) and not flat.requires_grad
    assert torch.equal(flat[:6], model[0].weight.flatten()) and torch.equal(flat[-3:], model[1].bias)


def test_states_equal_is_exact():
    a = make_model().state_dict()
    b = OrderedDict((k, v.clone()) for k, v in a.items())
    assert states_equal(a, b)
    b["head.bias"] = b["head.bias"] + 1e-7
    assert not states_equal(a, b)
    assert not states_equal(a, OrderedDict(reversed(list(a.items()))))
    assert not states_equal(a, OrderedDict(list(a.items())[:-1]))


# ---------------------------------------------------------------------------------------------------------------
# Exercise checks (tests/test_checks.py runs their tables of wrong answers).


def test_check_resume_leaves_the_random_state_alone_and_takes_the_pair_either_way(capsys):
    from companion.checks.answers.checkpoint import EXERCISES

    capture, restore = EXERCISES[1].reference
    state = torch.get_rng_state()
    check_resume(capture, restore)
    assert capsys.readouterr().out.startswith("✓ Correct / 正确: the resumed run ends with exactly")
    assert torch.equal(torch.get_rng_state(), state)


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(
        check_resume,
        (lambda *args: {}, {"epoch": 2}),
        WrongAnswer,
        "Pass the two functions themselves: check_resume(capture, restore), without ().",
        "dict-restore",
    ),
    bad(
        checkpoint.train_epochs,
        (DIGITS_MODEL, SGD, DataLoader(IMAGES), -1),
        ValueError,
        "epochs must be at least 0 (e.g. 3)",
        "negative",
    ),
    bad(
        checkpoint.train_epochs,
        (DIGITS_MODEL, SGD, DataLoader(IMAGES), 1.5),
        TypeError,
        "epochs must be an int such as 3",
        "float",
    ),
    bad(
        checkpoint.accuracy, (DIGITS_MODEL, DataLoader(IMAGES)), TypeError, "a TensorDataset(images, labels)", "loader"
    ),
    bad(checkpoint.states_equal, (LINEAR, OTHER), TypeError, "pass model.state_dict()", "models"),
    bad(
        checkpoint.save_checkpoint,
        (STATE, 123),
        TypeError,
        "path must be a file path (str or pathlib.Path) like 'last.pt'",
        "int-path",
    ),
    bad(
        checkpoint.save_checkpoint,
        (STATE, in_tmp()),
        IsADirectoryError,
        "pass a file path inside it, such as folder / 'last.pt'",
        "folder",
    ),
    bad(
        checkpoint.save_checkpoint,
        (STATE, in_tmp("runs", "last.pt")),
        FileNotFoundError,
        "create it first with path.parent.mkdir(parents=True)",
        "missing-folder",
    ),
    bad(
        checkpoint.load_checkpoint,
        (STATE,),
        TypeError,
        "path must be a file path (str or pathlib.Path) like 'last.pt'",
        "state-instead-of-path",
    ),
    bad(
        checkpoint.load_checkpoint,
        (GOOD_FILE,),
        TypeError,
        "weights_only must be True or False",
        "str-weights-only",
        weights_only="yes",
    ),
    bad(
        checkpoint.load_checkpoint,
        (GOOD_FILE,),
        TypeError,
        "map_location must be a device such as 'cpu' or torch.device('cuda:0')",
        "int-map-location",
        map_location=0,
    ),
    bad(
        checkpoint.load_checkpoint,
        (GOOD_FILE,),
        ValueError,
        "pass 'cpu', 'cuda', 'cuda:0' or 'mps'",
        "unknown-device",
        map_location="gpu",
    ),
    bad(
        checkpoint.load_checkpoint,
        (GOOD_FILE,),
        TypeError,
        "e.g. safe_globals=[RunConfig]",
        "one-class-not-a-list",
        safe_globals=nn.Linear,
    ),
    bad(
        checkpoint.load_checkpoint,
        (in_tmp("nope.pt"),),
        CheckpointError,
        "check the path, or start training from scratch",
        "missing-file",
    ),
    bad(checkpoint.load_checkpoint, (in_tmp(),), CheckpointError, "pass the file inside it", "folder"),
    bad(
        checkpoint.load_checkpoint,
        (file_with(lambda good: b"", "empty"),),
        CheckpointError,
        "load an earlier checkpoint, and save with save_checkpoint, which never leaves a partial file",
        "empty-file",
    ),
    bad(
        checkpoint.load_checkpoint,
        (file_with(lambda good: good[: len(good) // 2], "first half"),),
        CheckpointError,
        "Load an earlier checkpoint, and save with save_checkpoint, which never leaves a partial file",
        "truncated-half",
    ),
    bad(
        checkpoint.load_checkpoint,
        (file_with(lambda good: good[:-10], "last 10 bytes cut"),),
        CheckpointError,
        "Load an earlier checkpoint, and save with save_checkpoint",
        "truncated-end",
    ),
    bad(
        checkpoint.load_checkpoint,
        (file_with(lambda good: good[:300] + bytes(50) + good[350:], "zeros inside"),),
        CheckpointError,
        "Load an earlier checkpoint, and save with save_checkpoint",
        "corrupt-zeros",
    ),
    bad(
        checkpoint.load_checkpoint,
        (file_with(lambda good: bytes(range(256)) * 3, "random bytes"),),
        CheckpointError,
        "Load an earlier checkpoint, and save with save_checkpoint",
        "corrupt-random-bytes",
    ),
    bad(
        checkpoint.load_checkpoint,
        (file_with(lambda good: b"epoch 3, loss 0.25\n", "a text file"),),
        CheckpointError,
        "Load an earlier checkpoint, and save with save_checkpoint",
        "text-file",
    ),
    bad(
        checkpoint.load_checkpoint,
        (saved(lambda: nn.Linear(2, 1), "a pickled model"),),
        CheckpointError,
        "If the file holds a whole pickled model, load its state_dict instead",
        "pickled-model",
    ),
    bad(checkpoint.load_partial_state_dict, ("model", STATE), TypeError, "model must be an nn.Module", "str-model"),
    bad(
        checkpoint.load_partial_state_dict,
        (LINEAR, OTHER),
        TypeError,
        "pass the model's state_dict(), not the model itself: other_model.state_dict()",
        "model",
    ),
    bad(
        checkpoint.load_partial_state_dict,
        (LINEAR, {"weights": STATE, "epoch": 3}),
        ValueError,
        "pass the model's part, e.g. checkpoint['weights']",
        "whole-checkpoint",
    ),
    bad(
        checkpoint.load_partial_state_dict,
        (LINEAR, list(STATE.items())),
        TypeError,
        "state_dict must be a mapping of names to tensors",
        "list",
    ),
    bad(
        checkpoint.load_partial_state_dict,
        (LINEAR, {0: STATE["weight"]}),
        TypeError,
        "state_dict keys must be str names such as 'head.weight'",
        "int-key",
    ),
    bad(
        checkpoint.load_partial_state_dict,
        (LINEAR, {"weight": STATE["weight"].tolist()}),
        TypeError,
        "not a tensor: pass model.state_dict()",
        "list-value",
    ),
    bad(checkpoint.strip_prefix, (STATE,), ValueError, "pass 'module.'", "no-dot", prefix="module"),
    bad(
        checkpoint.strip_prefix,
        (STATE,),
        TypeError,
        "prefix must be a non-empty str such as 'module.'",
        "empty",
        prefix="",
    ),
    bad(
        checkpoint.strip_prefix,
        ({"module.weight": STATE["weight"], "weight": STATE["weight"]},),
        ValueError,
        "pass a state_dict from one model",
        "collision",
    ),
    bad(checkpoint.strip_prefix, (LINEAR,), TypeError, "pass the model's state_dict(), not the model itself", "model"),
    bad(
        checkpoint.eval_frozen_batchnorm,
        (DIGITS_MODEL.state_dict(),),
        TypeError,
        "model must be an nn.Module",
        "state-dict",
    ),
    bad(
        checkpoint.verify_digest,
        (in_tmp("nope.pt"),),
        CheckpointError,
        "check the path, or start training from scratch",
        "missing-file",
    ),
    bad(
        checkpoint.verify_digest,
        (STATE,),
        TypeError,
        "path must be a file path (str or pathlib.Path) like 'last.pt'",
        "state-instead-of-path",
    ),
]
