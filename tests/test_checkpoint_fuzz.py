"""Fuzzing load_checkpoint as a failing disk or a bad copy would: 150 seeded mutations of a real model + optimizer
checkpoint (bit flips, truncations, zeroed runs, swapped archive entries).

The loads run in a child process, so that a crash inside torch.load (a segfault, an abort) fails the test instead of
killing pytest. Each load must either return exactly the original values or raise CheckpointError, nothing else;
for the file save_checkpoint wrote (with its SHA-256 digest), no load may return different values.
"""

import json
import os
import subprocess
import sys

import pytest

from tools.course import ROOT

# Per kind of damage: mutations of the file save_checkpoint wrote (digest inside), and of a plain torch.save file.
COUNTS = {"bit flip": 60, "truncation": 15, "zeroed run": 15, "swapped entries": 8}
PLAIN_COUNTS = {"bit flip": 30, "truncation": 8, "zeroed run": 8, "swapped entries": 8}

CHILD = r"""
import io, json, random, sys, zipfile
from pathlib import Path

import torch
from companion.checkpoint import CheckpointError, _equal, load_checkpoint, make_model, save_checkpoint, states_equal

folder, counts_of = Path(sys.argv[1]), json.loads(sys.argv[2])
torch.manual_seed(0)
model = make_model()
# What Adam's state_dict holds after a step, built by hand: creating a torch.optim optimizer imports torch._dynamo,
# which alone would take seconds of this test's budget.
parameters = list(model.parameters())
optimizer = {
    "state": {
        i: {"step": torch.tensor(1.0), "exp_avg": torch.randn_like(p), "exp_avg_sq": torch.rand_like(p)}
        for i, p in enumerate(parameters)
    },
    "param_groups": [{"lr": 0.01, "betas": (0.9, 0.999), "eps": 1e-08, "params": list(range(len(parameters)))}],
}
original = {"model": model.state_dict(), "optimizer": optimizer, "epoch": 3}
save_checkpoint(original, folder / "digest.pt")
torch.save(original, folder / "plain.pt")


def same(loaded):
    return (
        isinstance(loaded, dict)
        and loaded.keys() == original.keys()
        and states_equal(loaded["model"], original["model"])
        and _equal(loaded["optimizer"], original["optimizer"])
        and loaded["epoch"] == original["epoch"]
    )


def swapped(data, rng, same_size):
    # Two tensor records of the archive trade places (contents swapped, names kept); the comment stays. Records of
    # different sizes make torch.load fail on its own; two of the same size are the swap it cannot notice.
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        infos = source.infolist()
        members = {info.filename: source.read(info) for info in infos}
        comment = source.comment
    records = [name for name in members if "/data/" in name]
    first, second = rng.sample(records, 2)
    while same_size and len(members[first]) != len(members[second]):
        first, second = rng.sample(records, 2)
    members[first], members[second] = members[second], members[first]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in infos:
            target.writestr(info.filename, members[info.filename])
        target.comment = comment
    return out.getvalue()


def mutations(data, rng, counts):
    for _ in range(counts["bit flip"]):
        changed = bytearray(data)
        bit = rng.randrange(8 * len(data))
        changed[bit // 8] ^= 1 << (bit % 8)
        yield "bit flip", bytes(changed)
    for _ in range(counts["truncation"]):
        yield "truncation", data[: rng.randrange(1, len(data))]
    for _ in range(counts["zeroed run"]):
        start, length = rng.randrange(len(data)), rng.randrange(1, 64)
        yield "zeroed run", data[:start] + bytes(len(data[start : start + length])) + data[start + length :]
    for i in range(counts["swapped entries"]):
        yield "swapped entries", swapped(data, rng, same_size=i % 2 == 1)


report = {}
for kind in ["digest", "plain"]:
    data = (folder / f"{kind}.pt").read_bytes()
    rng = random.Random(0)
    for mutation, mutated in mutations(data, rng, counts_of[kind]):
        path = folder / "mutated.pt"
        path.write_bytes(mutated)
        row = report.setdefault(f"{kind}: {mutation}", {"same": 0, "different": 0, "CheckpointError": 0, "other": []})
        try:
            loaded = load_checkpoint(path)
        except CheckpointError:
            row["CheckpointError"] += 1
            continue
        except Exception as error:
            row["other"].append(f"{type(error).__name__}: {str(error)[:200]}")
            continue
        row["same" if same(loaded) else "different"] += 1
print(json.dumps(report))
"""


# Every test reads the report of one child process that imports torch: CI runs them with make test-integration.
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("fuzz")
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), json.dumps({"digest": COUNTS, "plain": PLAIN_COUNTS})],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"},
    )
    assert child.returncode == 0, f"the loading process crashed ({child.returncode}): {child.stderr[-2000:]}"
    return json.loads(child.stdout)


def test_every_mutation_either_loads_the_same_values_or_raises_checkpoint_error(report):
    for kind, row in report.items():
        assert row["other"] == [], f"{kind}: exceptions other than CheckpointError: {row['other'][:3]}"
    for kind, counts in [("digest", COUNTS), ("plain", PLAIN_COUNTS)]:
        for mutation, count in counts.items():
            row = report[f"{kind}: {mutation}"]
            assert row["same"] + row["different"] + row["CheckpointError"] == count


def test_with_the_digest_no_mutation_loads_different_values(report):
    for mutation in COUNTS:
        assert report[f"digest: {mutation}"]["different"] == 0, mutation


def test_without_the_digest_some_damage_loads_silently(report):
    """The reason for the digest: plain torch.save files accept some damage and return other numbers."""
    assert report["plain: bit flip"]["different"] > 0
    assert report["plain: swapped entries"]["different"] > 0
