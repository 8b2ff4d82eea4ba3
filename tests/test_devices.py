"""companion.devices: pick_device's order and override, run_python, the lesson's facts and the picture; the
exercise checks of companion.checks.devices, including the stand-in for an accelerator tensor."""

import importlib
from unittest import mock

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from torch import nn

from companion import devices
from companion.checks.devices import _OnAccelerator, _tensor_cases, check_to_device, check_to_numpy
from companion.devices import DEVICE_VARIABLE, pick_device, plot_data_parallel, run_python
from companion.exercises import WrongAnswer
from companion.plotting import COLUMN_WIDTH, use_course_style
from tests.bad_inputs import bad


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


# --- run_python: a fresh process with extra environment variables -------------------------------------------------


def test_run_python_prints_the_output_and_passes_the_environment(capsys):
    run_python("import os\nprint('seen:', repr(os.environ['COURSE_PROBE']))", env={"COURSE_PROBE": ""})
    assert capsys.readouterr().out == "seen: ''\n"


def test_run_python_re_raises_the_error_as_one_stable_line(capsys):
    # Python 3.12+ would print "Did you mean: 'stop'?" after an AttributeError; the line must not depend on that.
    code = "class Box:\n    stop = 1\nprint('before')\nBox().step"
    with pytest.raises(ChildProcessError) as caught:
        run_python(code)
    assert str(caught.value) == "the fresh process stopped with AttributeError: 'Box' object has no attribute 'step'"
    assert capsys.readouterr().out == "before\n"


def test_run_python_treats_a_clean_exit_as_success(capsys):
    run_python("import sys\nprint('done')\nsys.exit(0)")
    assert capsys.readouterr().out == "done\n"
    with pytest.raises(ChildProcessError, match="exit status 3"):
        run_python("import sys\nsys.exit(3)")


@pytest.mark.parametrize(
    ("arguments", "error", "fix"),
    [
        ((b"print(1)",), TypeError, "as a str"),
        (("print(1)", [("CUDA_VISIBLE_DEVICES", "")]), TypeError, "dict of names to values"),
        (("print(1)", {"CUDA_VISIBLE_DEVICES": 0}), TypeError, "'0' not 0"),
        (("print(1)", None, 0), ValueError, "positive number of seconds"),
        (("print(1)", None, True), TypeError, "timeout must be a number such as 120"),
    ],
)
def test_run_python_bad_arguments_name_the_fix(arguments, error, fix):
    with pytest.raises(error, match=fix):
        run_python(*arguments)


# --- the facts the lesson teaches, checked against this PyTorch ---------------------------------------------------


def test_tensor_to_returns_itself_only_when_nothing_changes():
    x = torch.arange(6.0)
    assert x.to("cpu") is x and x.to(torch.float32) is x and x.cpu() is x
    assert x.to(torch.float64) is not x
    assert x.to("cpu", copy=True) is not x
    copy = x.to(torch.device("cpu", 0))  # "cpu:0" is not the "cpu" that tensors report: a real copy
    assert copy is not x and copy.data_ptr() != x.data_ptr() and copy.device == torch.device("cpu")
    assert torch.device("cpu", 0) != x.device


def test_module_to_keeps_parameters_but_replaces_buffers():
    layer = torch.nn.BatchNorm1d(2)
    weight, running_mean = layer.weight, layer.running_mean
    assert layer.to(torch.float64) is layer
    assert layer.weight is weight and weight.dtype == torch.float64
    assert layer.running_mean is not running_mean and running_mean.dtype == torch.float32
    meta_layer = torch.nn.Linear(2, 1)
    old = meta_layer.weight
    meta_layer.to("meta")  # not a dense device: new Parameter objects
    assert meta_layer.weight is not old and old.device.type == "cpu"


def test_optimizer_state_keeps_its_old_data_type_but_load_state_dict_casts_it():
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()
    saved = optimizer.state_dict()
    model.to(torch.float64)
    model(torch.ones(1, 2, dtype=torch.float64)).sum().backward()
    with pytest.raises(RuntimeError, match="expected dtype float"):
        optimizer.step()
    fresh = torch.optim.Adam(model.parameters(), lr=0.1)
    fresh.load_state_dict(saved)
    assert fresh.state[model.weight]["exp_avg"].dtype == torch.float64
    fresh.step()


def test_meta_device_refuses_to_mix_with_cpu_tensors():
    with pytest.raises(RuntimeError, match="is not on the expected device meta"):
        torch.ones(2, device="meta") + torch.ones(2)
    assert (torch.ones(2, device="meta") + torch.tensor(1.0)).device.type == "meta"  # 0-d CPU tensors may mix
    with pytest.raises(TypeError, match="Use Tensor.cpu"):
        torch.ones(2, device="meta").numpy()


def test_manual_seed_calls_the_seeding_function_of_every_device_kind():
    with mock.patch("torch.cuda.manual_seed_all") as cuda_seed_all, mock.patch("torch.mps.manual_seed") as mps_seed:
        torch.manual_seed(1234)
    assert cuda_seed_all.call_args_list == [mock.call(1234)] and mps_seed.call_args_list == [mock.call(1234)]
    torch.manual_seed(0)


def test_autocast_on_the_cpu_computes_products_in_bfloat16_and_losses_in_float32():
    layer = torch.nn.Linear(4, 3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = layer(torch.rand(2, 4))
        loss = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1]))
    assert logits.dtype == torch.bfloat16 and loss.dtype == torch.float32 and layer.weight.dtype == torch.float32


def test_grad_scaler_on_the_cpu_unscales_and_skips_an_inf_step():
    p = torch.nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD([p], lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale((p * float("inf")).sum()).backward()
    scaler.step(optimizer)
    scaler.update()
    assert torch.equal(p.detach(), torch.ones(2)) and scaler.get_scale() == 32768.0
    assert torch.tensor(1e-8).half().item() == 0.0 and torch.tensor(1e-8).bfloat16().item() > 0


def test_run_python_passes_the_environment_it_is_given(capsys):
    run_python("import os\nprint(repr(os.environ['CUDA_VISIBLE_DEVICES']))", env={"CUDA_VISIBLE_DEVICES": ""})
    assert capsys.readouterr().out == "''\n"


def test_data_parallel_without_gpus_just_calls_the_module(monkeypatch):
    # As on a machine without GPUs, whatever this one has.
    module = importlib.import_module("torch.nn.parallel.data_parallel")  # the module, not the function of that name
    monkeypatch.setattr(module, "_get_available_device_type", lambda: None)
    model = nn.Linear(3, 2)
    parallel = nn.DataParallel(model)
    x = torch.randn(4, 3)
    assert parallel.device_ids == [] and torch.equal(parallel(x), model(x))
    assert list(parallel.state_dict()) == ["module.weight", "module.bias"]
    with pytest.raises(RuntimeError, match='Unexpected key.*"module.weight"'):
        nn.Linear(3, 2).load_state_dict(parallel.state_dict())  # the pitfall of old checkpoints


def test_deterministic_algorithms_fill_new_memory_and_refuse_put_with_repeated_indices():
    assert not torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        assert (
            torch.empty(3).isnan().all() and (torch.empty(2, dtype=torch.int64) == torch.iinfo(torch.int64).max).all()
        )
        with pytest.raises(RuntimeError, match="put_ does not have a deterministic implementation"):
            torch.zeros(3).put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]))
        torch.zeros(3).put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]), accumulate=True)  # adding is allowed
    finally:
        torch.use_deterministic_algorithms(False)
    assert not torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark  # the defaults


def test_matmul_precision_high_is_the_allow_tf32_switch():
    assert torch.get_float32_matmul_precision() == "highest" and not torch.backends.cuda.matmul.allow_tf32
    try:
        torch.set_float32_matmul_precision("high")
        assert torch.backends.cuda.matmul.allow_tf32
    finally:
        torch.set_float32_matmul_precision("highest")
    assert not torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32


def amp_steps(enabled: bool, unscale: bool = True) -> tuple[torch.Tensor, list[float]]:
    """The lesson's mixed-precision step, three times; the final weight and the norms clipping saw."""
    torch.manual_seed(0)
    model = nn.Linear(64, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", enabled=enabled)
    images, labels = torch.rand(8, 64), torch.arange(8)
    norms = []
    for _ in range(3):
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(images)
        assert logits.dtype == torch.bfloat16
        scaler.scale(torch.nn.functional.cross_entropy(logits.float(), labels)).backward()
        if unscale:
            scaler.unscale_(optimizer)
        norms.append(nn.utils.clip_grad_norm_(model.parameters(), 1.0).item())
        scaler.step(optimizer)
        scaler.update()
    return model.weight.detach(), norms


def test_a_mixed_precision_step_is_the_same_with_the_scaler_off_and_on():
    off, on = amp_steps(enabled=False), amp_steps(enabled=True)
    assert torch.equal(off[0], on[0]) and off[1] == on[1]  # scaling by 2**16 and back is exact
    forgot = amp_steps(enabled=True, unscale=False)
    assert forgot[1][0] == 65536 * off[1][0] and not torch.equal(forgot[0], off[0])


def test_out_of_memory_error_is_a_runtime_error_a_step_can_raise():
    assert torch.cuda.OutOfMemoryError is torch.OutOfMemoryError and issubclass(torch.OutOfMemoryError, RuntimeError)
    with pytest.raises(torch.OutOfMemoryError, match="do not fit"):
        raise torch.OutOfMemoryError("64 samples do not fit")


# --- the picture ---------------------------------------------------------------------------------------------------


def test_plot_data_parallel_draws_one_box_per_gpu_and_both_languages():
    use_course_style()
    fig = plot_data_parallel(num_gpus=4)
    fig.canvas.draw()  # renders the Chinese text; a missing glyph would warn, and warnings are errors here
    top, bottom = fig.axes
    assert len(top.patches) == 2 + 4 and len(bottom.patches) == 4
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "GPU 3: replica\n1/4 batch\n副本，1/4 批" in texts
    assert any("全归约" in t for t in texts) and "线程" in top.get_title()
    assert fig.get_size_inches()[0] <= COLUMN_WIDTH
    assert min(t.get_fontsize() for ax in fig.axes for t in ax.texts) >= 10
    plt.close(fig)


# --- exercise checks (companion.checks.devices) --------------------------------------------------------------------


def right_to_numpy(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def test_the_stand_in_acts_like_a_gpu_tensor_until_copied():
    t = torch.arange(3.0).as_subclass(_OnAccelerator)
    assert t.device == torch.device("cuda", 0) and (t * 2).device.type == "cuda"
    assert t.is_cuda and not t.is_cpu and t.get_device() == 0  # every question gets a GPU tensor's answer
    assert not t.cpu().is_cuda and t.cpu().is_cpu and t.cpu().get_device() == -1
    with pytest.raises(TypeError, match="Use Tensor.cpu"):
        t.numpy()
    for copied in (t.cpu(), t.to("cpu"), t.to(torch.device("cpu")), t.to(device="cpu")):
        assert type(copied) is torch.Tensor and copied.numpy().tolist() == [0.0, 1.0, 2.0]
    assert type(t.to(torch.float64)) is _OnAccelerator  # a dtype change stays on the "GPU"
    assert t.numpy(force=True).tolist() == [0.0, 1.0, 2.0]


def test_check_to_numpy_passes_right_answers(capsys):
    rights = (
        right_to_numpy,
        lambda t: (t.float() if t.dtype == torch.bfloat16 else t).numpy(force=True),
        lambda t: (t.detach().to("cpu", torch.float32) if t.dtype == torch.bfloat16 else t.detach().to("cpu")).numpy(),
    )
    for right in rights:
        check_to_numpy(right)
        assert capsys.readouterr().out.startswith("✓ Correct / 正确: to_numpy gives the right array for 9 kinds")


def test_check_to_numpy_accepts_an_is_cuda_test_and_refuses_a_change_through_data(capsys):
    def guarded(t):
        t = t.detach()
        if t.is_cuda:
            t = t.cpu()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()

    def through_data(t):
        if t.dtype == torch.bfloat16:
            t.data = t.data.float()
        return t.detach().cpu().numpy()

    check_to_numpy(guarded)
    assert capsys.readouterr().out.startswith("✓ Correct")
    with pytest.raises(WrongAnswer, match="changed the caller's tensor"):
        check_to_numpy(through_data)


def test_check_to_numpy_cases_cover_grad_integers_halves_empty_and_0d():
    cases = dict(_tensor_cases(torch.device("cpu")))
    assert cases["a tensor that requires grad"].requires_grad
    assert cases["a model output (it has a grad_fn)"].grad_fn is not None
    assert cases["a 0-d loss"].dim() == 0 and cases["an empty tensor of shape (0, 4)"].numel() == 0
    assert {t.dtype for t in cases.values()} == {torch.float32, torch.int64, torch.bool, torch.float16, torch.bfloat16}
    assert all(t.device.type == "cuda" for t in cases.values())  # stand-ins on a machine without a GPU


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda t: np.array(t.detach().cpu().float().tolist()), "keep the data type"),
        (lambda t: right_to_numpy(t).tolist(), "not a NumPy array"),
        (lambda t: right_to_numpy(t) + 1, "other values"),
        (lambda t: right_to_numpy(t).reshape(-1), "keep the shape"),
        (right_to_numpy(torch.ones(1)), "without ()"),
    ],
)
def test_check_to_numpy_rejects_other_wrong_answers_with_a_hint(wrong, hint):
    with pytest.raises(WrongAnswer, match=hint):
        check_to_numpy(wrong)


def test_check_to_numpy_reads_no_source():
    namespace = {}
    exec(
        "def to_numpy(t):\n    t = t.detach().cpu()\n"
        "    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()",
        {"torch": torch},
        namespace,
    )
    check_to_numpy(namespace["to_numpy"])  # a function with no source file passes on behaviour alone


def right_to_device(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: right_to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, list | tuple):
        return type(batch)(right_to_device(value, device) for value in batch)
    return batch


def mutating_to_device(batch, device):
    for key, value in batch.items():
        if isinstance(value, torch.Tensor):
            batch[key] = value.to(device)
    return right_to_device(batch, device)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (mutating_to_device, "changed the caller's batch"),
        (lambda batch, device: right_to_device(list(batch.values()), device), "came back as a list"),
        (lambda batch, device: {k: v for k, v in right_to_device(batch, device).items() if k != "extra"}, "keep every"),
        (lambda batch, device: {**right_to_device(batch, device), "scale": torch.tensor(0.5)}, "a tensor, expected"),
    ],
)
def test_check_to_device_rejects_other_wrong_answers_with_a_hint(wrong, hint):
    with pytest.raises(WrongAnswer, match=hint):
        check_to_device(wrong)


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(devices.pick_device, (0,), TypeError, "prefer must be a device name such as 'cpu' or 'cuda:0'", "int"),
    bad(
        devices.pick_device,
        (torch.device("cpu"),),
        TypeError,
        "prefer must be a device name such as 'cpu' or 'cuda:0'",
        "device-object",
    ),
    bad(devices.pick_device, ("gpu",), ValueError, "use 'cpu', 'cuda', 'cuda:N' or 'mps'", "unknown-name"),
    bad(devices.pick_device, ("cuda:63",), ValueError, "use 'cpu'", "missing-gpu"),
    bad(devices.pick_device, ("mps",), ValueError, "is not available here: use 'cpu'", "missing-mps"),
    bad(devices.pick_device, ("meta",), ValueError, "the course runs on 'cpu', 'cuda' or 'mps'", "other-device-type"),
    bad(devices.run_python, (123,), TypeError, "code must be Python source as a str, such as 'print(1)'", "int-code"),
    bad(
        devices.run_python,
        ("print(1)",),
        TypeError,
        "such as {'CUDA_VISIBLE_DEVICES': ''}",
        "list-env",
        env=["CUDA_VISIBLE_DEVICES="],
    ),
    bad(
        devices.run_python,
        ("print(1)",),
        TypeError,
        "names and values must be strings, e.g. '0' not 0",
        "int-env-value",
        env={"CUDA_VISIBLE_DEVICES": 0},
    ),
    bad(
        devices.run_python,
        ("print(1)",),
        ValueError,
        "timeout must be a positive number of seconds, such as 120",
        "zero-timeout",
        timeout=0,
    ),
]
