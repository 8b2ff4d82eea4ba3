"""One language per edition: with COURSE_LANG=en companion prints, raises and draws no Chinese; with zh, Chinese
without English sentences; with both (or unset), exactly the bilingual text the lessons have always stored."""

import contextlib
import io
import json
import os
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.text import Text
from torch import nn

from companion import (
    autograd,
    batchnorm,
    checkpoint,
    conv,
    course,
    data,
    ddp,
    ddp_launch,
    devices,
    losses,
    optim,
    scatter,
    tensors,
    training,
)
from companion.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from companion.ddp_launch import LaunchError
from companion.exercises import (
    GLOBAL_STATE,
    HINT_SEP,
    PASS_MARK,
    PASS_MARKS,
    PASS_SIGN,
    WrongAnswer,
    call_learner,
    pass_mark,
    passed,
    require,
    sandbox,
    shows_pass,
)
from companion.language import by_language, in_language, language, say, speaking
from companion.plotting import use_course_style

CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
# What may stay English in the Chinese edition: code in backticks or quotes, a quoted `Type: message` of Python or
# PyTorch, and identifiers, calls, paths and numbers (a run of ASCII with . _ = ( [ < / @ $ in it).
CODE = re.compile(r"`[^`]*`|'[^']*'|\"[^\"]*\"|[（(]?\b\w+(?:Error|Exception): [^）)\n]*|[!-~]*[._=()\[\]<>@/$][!-~]*")
# An English sentence: two or more words of three or more letters in a row.
ENGLISH_RUN = re.compile(r"\b[A-Za-z]{3,}(?:\s+[A-Za-z]{3,})+\b")
SETUP_LINE = "Ready / 准备就绪: seed 0, 1 CPU thread, default print options, course plot style"


def english_runs(text: str) -> list[str]:
    """The English sentences (runs of words) in `text`, code left out."""
    return ENGLISH_RUN.findall(CODE.sub(" ", text))


def is_english(text: str) -> bool:
    return not CJK.search(text)


def is_chinese(text: str) -> bool:
    return bool(CJK.search(text)) and not english_runs(text)


def printed(function, *args) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        function(*args)
    return out.getvalue()


def message(function, *args, error=Exception, **kwargs) -> str:
    """The message of the error `function(*args, **kwargs)` raises."""
    with contextlib.redirect_stdout(io.StringIO()), pytest.raises(error) as caught:
        function(*args, **kwargs)
    return str(caught.value)


# ----------------------------------------------------------------------------------------------------------------
# The helpers.


def test_the_detector_finds_english_sentences_and_lets_code_pass():
    assert english_runs("请用 save_checkpoint 保存 the whole model") == ["the whole model"]
    assert english_runs("'evil.pt' 要求在加载时运行 posix.system (RuntimeError: failed reading zip archive)") == []
    assert english_runs("Python 对象：companion.checkpoint.Report。整个 pickle 序列化的模型") == []
    assert is_chinese("损失") and not is_chinese("training step / 训练步") and not is_chinese("loss")


@pytest.mark.parametrize(("chosen", "expected"), [("en", "en"), ("zh", "zh"), ("both", "both"), (" ZH ", "zh")])
def test_course_lang_names_the_language(monkeypatch, chosen, expected):
    monkeypatch.setenv("COURSE_LANG", chosen)
    assert language() == expected


@pytest.mark.parametrize("chosen", [None, "", "fr"])
def test_anything_else_is_both(monkeypatch, chosen):
    if chosen is None:
        monkeypatch.delenv("COURSE_LANG")
    else:
        monkeypatch.setenv("COURSE_LANG", chosen)
    assert language() == "both"
    assert say("loss", "损失") == "loss / 损失"


@pytest.mark.parametrize(
    ("chosen", "said", "kept", "own"),
    [
        ("en", "loss", "loss", "en"),
        ("zh", "损失", "损失", "zh"),
        ("both", "loss\n损失", "loss", "both"),
    ],
)
def test_say_in_language_and_by_language(monkeypatch, chosen, said, kept, own):
    monkeypatch.setenv("COURSE_LANG", chosen)
    assert say("loss", "损失", "\n") == said
    assert in_language("loss", "损失") == kept  # English stays English in the bilingual edition
    assert by_language("en", "zh", "both") == own


def test_speaking_switches_for_a_block_and_puts_the_language_back(monkeypatch):
    monkeypatch.setenv("COURSE_LANG", "en")
    with speaking("both"):
        assert language() == "both"
    assert os.environ["COURSE_LANG"] == "en"
    monkeypatch.delenv("COURSE_LANG")
    with speaking("zh"):
        assert language() == "zh"
    assert "COURSE_LANG" not in os.environ
    with pytest.raises(ValueError, match="en, zh, both"), speaking("fr"):
        pass


def test_a_language_exported_in_the_shell_does_not_reach_the_unit_tests():
    assert os.environ["COURSE_LANG"] == "both"  # tests/conftest.py


# ----------------------------------------------------------------------------------------------------------------
# Setup line, pass line, hints.


def test_setup_line_in_each_language(monkeypatch):
    assert printed(course.setup_notebook, 0) == SETUP_LINE + "\n"
    monkeypatch.setenv("COURSE_LANG", "en")
    assert (
        printed(course.setup_notebook, 0) == "Ready: seed 0, 1 CPU thread, default print options, course plot style\n"
    )
    monkeypatch.setenv("COURSE_LANG", "zh")
    chinese = printed(course.setup_notebook, 0)
    assert is_chinese(chinese)
    assert re.findall(r"\d+", chinese) == re.findall(r"\d+", SETUP_LINE)  # the same numbers, in the same order


def test_pass_line_in_each_language(monkeypatch):
    assert printed(passed, "it works", "它能用") == f"{PASS_MARK}: it works\n  它能用\n"
    assert pass_mark() == PASS_MARK == "✓ Correct / 正确"
    monkeypatch.setenv("COURSE_LANG", "en")
    line = printed(passed, "it works", "它能用")
    assert line == "✓ Correct: it works\n" and is_english(line) and line.startswith(pass_mark())
    monkeypatch.setenv("COURSE_LANG", "zh")
    line = printed(passed, "it works", "它能用")
    assert line == "✓ 正确：它能用\n" and is_chinese(line) and line.startswith(pass_mark())


def test_a_pass_line_of_every_edition_is_recognised():
    for mark in PASS_MARKS.values():
        assert mark.startswith(PASS_SIGN)
        assert shows_pass(f"{mark}: it works")
    assert not shows_pass("✗ wrong")


def test_a_failing_require_gives_the_hint_in_each_language(monkeypatch):
    assert message(require, False, "a hint", "一个提示", error=WrongAnswer) == f"a hint{HINT_SEP}一个提示"
    assert HINT_SEP == "\n提示："
    monkeypatch.setenv("COURSE_LANG", "en")
    assert message(require, False, "a hint", "一个提示", error=WrongAnswer) == "a hint"
    monkeypatch.setenv("COURSE_LANG", "zh")
    assert message(require, False, "a hint", "一个提示", error=WrongAnswer) == "一个提示"


def change_everything(state: str):
    """A learner function that changes one piece of global state and returns."""

    def learner() -> None:
        if state == "torch_rng":
            torch.rand(1)
        elif state == "python_rng":
            import random

            random.random()
        elif state == "numpy_rng":
            import numpy as np

            np.random.rand()
        elif state == "grad_enabled":
            torch.set_grad_enabled(False)
        elif state == "default_dtype":
            torch.set_default_dtype(torch.float64)
        elif state == "threads":
            torch.set_num_threads(torch.get_num_threads() + 1)

    return learner


def sandbox_hint(state: str) -> str:
    def run() -> None:
        with sandbox():
            change_everything(state)()

    return message(run, error=WrongAnswer)


def argument_hint() -> str:
    def in_place(x: torch.Tensor) -> None:
        x.add_(1)

    return message(call_learner, in_place, torch.zeros(2), error=WrongAnswer)


@pytest.mark.parametrize("state", list(GLOBAL_STATE))
def test_the_sandbox_guards_speak_each_language(monkeypatch, state):
    _, _, hint, hint_zh = GLOBAL_STATE[state]
    assert sandbox_hint(state) == f"{hint}\n提示：{hint_zh}"
    monkeypatch.setenv("COURSE_LANG", "en")
    assert sandbox_hint(state) == hint and is_english(hint)
    monkeypatch.setenv("COURSE_LANG", "zh")
    assert sandbox_hint(state) == hint_zh and is_chinese(hint_zh)


def test_the_changed_argument_hint_speaks_each_language(monkeypatch):
    both = argument_hint()
    english, chinese = both.split(HINT_SEP)
    monkeypatch.setenv("COURSE_LANG", "en")
    assert argument_hint() == english and is_english(english)
    monkeypatch.setenv("COURSE_LANG", "zh")
    assert argument_hint() == chinese and is_chinese(chinese)


def test_the_answer_key_gets_both_languages_whatever_the_shell_says(monkeypatch):
    from tools.handout import key

    key.hints.cache_clear()
    monkeypatch.setenv("COURSE_LANG", "en")
    try:
        found = [hint for hint in key.hints().values() if hint]
        assert found and all(HINT_SEP in hint for hint in found)
        assert os.environ["COURSE_LANG"] == "en"
    finally:
        key.hints.cache_clear()


# ----------------------------------------------------------------------------------------------------------------
# The errors the lessons show, and the lines companion prints.


def conv_groups() -> str:  # lesson 05
    return message(conv.conv2d_reference, torch.randn(1, 4, 5, 5), torch.randn(6, 1, 3, 3), groups=3, error=ValueError)


def bad_device() -> str:  # lesson 11
    return message(devices.pick_device, "gpu", error=ValueError)


def norm_input() -> str:  # lesson 06
    return message(batchnorm.BatchNorm2dReference(3), torch.randn(2, 4, 2, 2), error=ValueError)


def too_few_values() -> str:  # lesson 06
    return message(batchnorm.BatchNorm2dReference(3), torch.randn(1, 3, 1, 1), error=ValueError)


def target_class() -> str:  # lesson 04
    return message(losses.cross_entropy_reference, torch.randn(2, 3), torch.tensor([0, 5]), error=ValueError)


def scatter_bounds() -> str:  # lesson 03
    index = torch.tensor([[4]])
    return message(scatter.scatter_reference, torch.zeros(2, 4), 1, index, 1.0, error=ValueError)


def loss_not_one_number() -> str:  # lesson 08
    model = nn.Linear(2, 2)
    batches = [(torch.randn(3, 2), torch.randn(3, 2))]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    return message(training.train_one_epoch, model, batches, optimizer, nn.MSELoss(reduction="none"), error=ValueError)


def split_fraction() -> str:  # lesson 07
    return message(data.digits_datasets, 1.5, error=ValueError)


def rank_failed() -> str:  # lesson 12: what torchrun's error.json says for the rank that raised
    return str(
        ddp_launch._spawn_failure(
            RuntimeError(
                "process 1 terminated with exit code 1\nRuntimeError: rank 1 stopped on purpose (--fail-rank 1)"
            )
        )
    )


def launch_failed(tmp_path: Path) -> str:  # lesson 12, through torchrun's report
    folder = tmp_path / "logs" / "run" / "attempt_0" / "1"
    folder.mkdir(parents=True)
    said = {"message": {"message": "RuntimeError: rank 1 stopped on purpose (--fail-rank 1)"}}
    (folder / "error.json").write_text(json.dumps(said), encoding="utf-8")
    return str(ddp_launch._failure(tmp_path, [1], "", [], one_node=True))


def no_result(tmp_path: Path) -> str:
    return message(ddp_launch._collect, tmp_path, 1, "", 0.0, error=LaunchError)


class Hostile:
    """Unpickling this calls os.system: what load_checkpoint must refuse."""

    def __reduce__(self):
        return (os.system, ("true",))


def checkpoint_errors(folder: Path) -> dict[str, str]:
    """Lesson 10's refusals: a class, a command, a cut file, a flipped bit; also a missing and an empty file."""
    folder.mkdir(exist_ok=True)
    torch.save({"config": checkpoint.PartialLoadReport()}, folder / "with-config.pt")
    torch.save({"oops": Hostile()}, folder / "evil.pt")
    save_checkpoint({"w": torch.ones(100)}, folder / "good.pt")
    good = (folder / "good.pt").read_bytes()
    (folder / "cut.pt").write_bytes(good[: len(good) // 2])
    flipped = bytearray(good)
    flipped[200] ^= 1
    (folder / "flipped.pt").write_bytes(bytes(flipped))
    (folder / "empty.pt").write_bytes(b"")
    names = ("with-config", "evil", "cut", "flipped", "empty", "missing")
    return {name: message(load_checkpoint, folder / f"{name}.pt", error=CheckpointError) for name in names}


def errors(tmp_path: Path) -> dict[str, str]:
    found = {
        "conv": conv_groups(),
        "device": bad_device(),
        "batchnorm channels": norm_input(),
        "batchnorm values": too_few_values(),
        "cross-entropy": target_class(),
        "scatter": scatter_bounds(),
        "training": loss_not_one_number(),
        "data": split_fraction(),
        "spawn": rank_failed(),
        "launch": launch_failed(tmp_path / language()),
        "no result": no_result(tmp_path),
    }
    found |= checkpoint_errors(tmp_path / f"checkpoints-{language()}")
    return found


def test_the_errors_the_lessons_show_read_as_they_always_did_in_the_bilingual_edition(tmp_path):
    said = errors(tmp_path)
    assert said["conv"] == (
        "in_channels (4) must be divisible by groups (3): choose groups among the divisors [1, 2, 4]"
    )
    assert said["device"] == "'gpu' is not a device name: use 'cpu', 'cuda', 'cuda:N' or 'mps'"
    assert (
        said["launch"] == said["spawn"] == "rank 1 failed with RuntimeError: rank 1 stopped on purpose (--fail-rank 1)"
    )
    assert said["evil"].startswith(
        f"'evil.pt' asks to run {os.system.__module__}.system while it is loaded (its module"
    )
    assert "holds a Python object that weights_only=True refuses to rebuild" in said["with-config"]
    assert (
        said["cut"].startswith("'cut.pt' (")
        and "is truncated or corrupt, not a complete torch.save file" in said["cut"]
    )
    assert said["flipped"].startswith("'flipped.pt' is damaged: its bytes no longer match the SHA-256 digest")
    assert all(is_english(text) for text in said.values())


def test_the_errors_the_lessons_show_speak_english_in_the_english_edition(monkeypatch, tmp_path):
    bilingual = errors(tmp_path)
    monkeypatch.setenv("COURSE_LANG", "en")
    english = errors(tmp_path)
    assert english == bilingual  # the bilingual edition's errors are the English ones
    assert all(is_english(text) for text in english.values())


def test_the_errors_the_lessons_show_speak_chinese_in_the_chinese_edition(monkeypatch, tmp_path):
    english = errors(tmp_path)
    monkeypatch.setenv("COURSE_LANG", "zh")
    chinese = errors(tmp_path)
    for name, text in chinese.items():
        assert is_chinese(text), f"{name}: {text}"
        # The same numbers in the same order (the file sizes and digests differ between the two sets of files).
        if name not in ("cut", "flipped"):
            assert re.findall(r"\d+", text) == re.findall(r"\d+", english[name]), name
    assert chinese["conv"] == "in_channels（4）必须能被 groups（3）整除：请从它的约数 [1, 2, 4] 中选 groups"
    # Lesson 10 shows the part of this message before " (": it must still be a sentence of its own.
    assert chinese["evil"].split(" (")[0] == f"'evil.pt' 要求在加载时运行 {os.system.__module__}.system"


@pytest.fixture
def launched():
    """What describe() gets from a launch of two ranks."""
    keys = {"local_rank": 0, "node_rank": 0, "world_size": 2, "backend": "gloo", "device": "cpu"}
    return [{"rank": rank, **keys, "local_rank": rank} for rank in range(2)]


def printed_lines(launched) -> dict[str, str]:
    """What companion prints in the lessons: a launch's ranks, a partial load, fit's progress bar, the notes' script."""
    report = checkpoint.load_partial_state_dict(nn.Linear(2, 2), {"weight": torch.ones(3, 3), "extra": torch.ones(1)})
    model = nn.Linear(2, 2)
    batch = [(torch.randn(4, 2), torch.tensor([0, 1, 0, 1]))]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    bar = printed(training.fit, model, batch, batch, optimizer, nn.CrossEntropyLoss(), 1)
    return {
        "describe": ddp_launch.describe(launched),
        "report": str(report),
        "bar": bar.strip().split(":")[0],
        "notes": "\n".join(line for line in ddp_launch.NOTES_SCRIPT.splitlines() if line.startswith("print")),
    }


def test_printed_lines_in_each_language(monkeypatch, launched):
    bilingual = printed_lines(launched)
    assert bilingual["describe"].splitlines()[1] == "rank 1: local rank 1, node 0, world size 2, gloo on cpu"
    assert bilingual["report"].splitlines()[0] == "loaded (0):"
    assert bilingual["bar"] == "epochs"
    monkeypatch.setenv("COURSE_LANG", "en")
    assert printed_lines(launched) == bilingual
    monkeypatch.setenv("COURSE_LANG", "zh")
    chinese = printed_lines(launched)
    for name, text in chinese.items():
        assert CJK.search(text), name
        assert not english_runs(text.replace("print(f", "")), f"{name}: {text}"
        assert re.findall(r"\d+", text) == re.findall(r"\d+", bilingual[name]), name


# ----------------------------------------------------------------------------------------------------------------
# Every plot companion draws.


def figures() -> dict[str, object]:
    """Each plotting function of companion, called as its lesson calls it."""
    torch.manual_seed(0)
    x = torch.arange(6).reshape(2, 3)
    w = torch.tensor(2.0, requires_grad=True)
    leaves = torch.ones(2, 3, requires_grad=True)
    y = (w * leaves).sum()
    norms = {
        "BatchNorm2d": nn.BatchNorm2d(3),
        "LayerNorm": nn.GroupNorm(1, 3),
        "InstanceNorm2d": nn.InstanceNorm2d(3),
        "GroupNorm": nn.GroupNorm(3, 3),
    }
    history = {"train_loss": [1.0, 0.5], "val_loss": [1.1, 0.6], "val_accuracy": [0.5, 0.8]}
    path = torch.tensor([[-1.5, 2.0], [0.0, 0.0], [1.0, 1.0]])
    return {
        "tensors.plot_views": lambda: tensors.plot_views({"x": x, "x.t()": x.t(), "x[:, 1:]": x[:, 1:]}),
        "tensors.plot_broadcast": lambda: tensors.plot_broadcast(torch.arange(3).reshape(3, 1), torch.arange(4)),
        "autograd.plot_backward": lambda: autograd.plot_backward(y, {"w": w, "x": leaves, "y": y}),
        "scatter.plot_scatter": lambda: scatter.plot_scatter(
            torch.zeros(2, 4), 1, torch.tensor([[2, 3], [0, 1]]), torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        ),
        "losses.plot_loss_vs_true_logit": losses.plot_loss_vs_true_logit,
        "losses.plot_regression_losses": losses.plot_regression_losses,
        "conv.plot_dilation": conv.plot_dilation,
        "conv.plot_edge_responses": lambda: conv.plot_edge_responses(
            torch.rand(1, 8, 8), torch.randn(2, 1, 3, 3), row=3
        ),
        "batchnorm.plot_running_means": lambda: batchnorm.plot_running_means({"momentum=0.1": [0.0, 0.1]}, 0.5),
        "batchnorm.plot_norm_groups": lambda: batchnorm.plot_norm_groups(norms, (2, 3, 2, 2)),
        "data.plot_batches": data.plot_batches,
        "training.plot_history": lambda: training.plot_history(history, best_epoch=2),
        "optim.plot_trajectories": lambda: optim.plot_trajectories({"SGD": path}),
        "checkpoint.plot_resume": lambda: checkpoint.plot_resume(
            [1.0, 0.9, 0.8, 0.7], {"resumed": [0.8, 0.7]}, {"resumed": [0.0, 0.0]}
        ),
        "ddp.plot_allreduce": lambda: ddp.plot_allreduce(nn.Linear(3, 1), torch.randn(8, 3), torch.randn(8, 1)),
        "ddp.plot_sampler": ddp.plot_sampler,
        "devices.plot_data_parallel": devices.plot_data_parallel,
    }


@pytest.fixture(autouse=True)
def course_style():
    """The course's plot style, whose font has the Chinese glyphs, as setup_notebook sets it in every lesson."""
    use_course_style()


def texts_of(draw) -> list[str]:
    """Every text the figure shows (titles, labels, legends, ticks, notes), once it is drawn."""
    fig = draw()
    try:
        fig.canvas.draw()
        return [t.get_text() for t in fig.findobj(Text) if t.get_text().strip()]
    finally:
        plt.close(fig)


def test_every_plotting_function_of_companion_is_covered():
    import companion

    drawn = {name for name in figures()}
    defined = {
        f"{module.__name__.removeprefix('companion.')}.{name}"
        for module in vars(companion).values()
        if getattr(module, "__name__", "").startswith("companion.")
        for name in vars(module)
        if name.startswith("plot_")
    }
    assert defined <= drawn, f"add a call to figures() for {sorted(defined - drawn)}"


# Labels that were bilingual before editions existed, as each figure still shows them in the bilingual edition.
BILINGUAL_LABELS = {
    "tensors.plot_views": ["storage / 存储: position @0, @1, ..."],
    "tensors.plot_broadcast": [
        "light cells: stride 0 reads an element again; @p: its storage position\n"
        "浅色格：步幅为 0，重复读取同一元素；@p：读取的存储位置"
    ],
    "scatter.plot_scatter": ["src（源）", "self after scatter_（结果）", "row / 行"],
    "losses.plot_regression_losses": ["error = prediction − target / 误差", "gradient d loss / d prediction / 梯度"],
    "conv.plot_dilation": ["dilation=2: span 5×5\n空洞率 2：覆盖 5×5", "3×3 kernel, 9 weights / 3×3 卷积核，9 个权重"],
    "conv.plot_edge_responses": ["vertical edges / 竖直边缘", "response / 响应"],
    "batchnorm.plot_norm_groups": ["C channels / 通道", "BatchNorm2d\n8 values share a mean / 8 个值共用一个均值"],
    "training.plot_history": ["epoch / 轮", "accuracy (%) / 准确率", "kept / 保留"],
    "checkpoint.plot_resume": ["distance from unbroken / 与不中断训练的距离", "unbroken / 不中断"],
    "ddp.plot_allreduce": ["rank 0: 4 samples / 4 个样本", "rank 1 after all-reduce / all-reduce 之后"],
    "ddp.plot_sampler": ["epoch 0", "without set_epoch / 不调用 set_epoch"],
    "devices.plot_data_parallel": [
        "GPU 1: replica\n1/3 batch\n副本，1/3 批",
        "DataParallel: 1 process, 1 thread per GPU / 1 个进程，每块 GPU 一个线程",
    ],
}


@pytest.mark.parametrize("name", list(BILINGUAL_LABELS))
def test_the_bilingual_edition_draws_what_it_always_drew(name):
    shown = texts_of(figures()[name])
    assert set(BILINGUAL_LABELS[name]) <= set(shown)


@pytest.mark.parametrize("name", list(figures()))
def test_the_english_edition_draws_no_chinese(monkeypatch, name):
    monkeypatch.setenv("COURSE_LANG", "en")
    shown = texts_of(figures()[name])
    assert [text for text in shown if CJK.search(text)] == []


@pytest.mark.parametrize("name", list(figures()))
def test_the_chinese_edition_draws_chinese_labels_and_no_english_sentence(monkeypatch, name):
    monkeypatch.setenv("COURSE_LANG", "zh")
    shown = texts_of(figures()[name])
    assert any(CJK.search(text) for text in shown)
    assert [text for text in shown if english_runs(text)] == []
