"""companion.training against PyTorch: counting, resizing, the loop functions, the bar, the plot, the checks."""

import io
import re
import time

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from companion import training
from companion.checks.answers.training import EXERCISES
from companion.checks.training import check_accumulated_step, check_predict
from companion.data import digits_datasets
from companion.exercises import WrongAnswer
from companion.plotting import COLUMN_WIDTH, use_course_style
from companion.training import (
    count_parameters,
    evaluate,
    fit,
    plot_history,
    progress_bar,
    resize_images,
    train_one_epoch,
)
from tests.bad_inputs import BATCHES, IMAGES, LINEAR, ONE_HOT_BATCHES, OTHER_SGD, SGD, bad


@pytest.fixture(scope="module")
def digits32():
    train, test = digits_datasets()
    return resize_images(train, 32), resize_images(test, 32)


def small_classifier(seed: int = 0, hidden: int = 8, classes: int = 3) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(5, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(0.3), nn.Linear(hidden, classes)
    )


def random_data(n: int, classes: int = 3, seed: int = 0) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, 5, generator=generator), torch.randint(0, classes, (n,), generator=generator))


# count_parameters


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=2, max_size=4), st.booleans())
def test_count_parameters_equals_a_sum_over_parameters(widths, freeze_first):
    model = nn.Sequential(*(nn.Linear(a, b) for a, b in zip(widths, widths[1:], strict=False)))
    if freeze_first:
        model[0].requires_grad_(False)
    every = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert count_parameters(model) == every
    assert count_parameters(model, trainable_only=True) == trainable


def test_count_parameters_counts_a_shared_parameter_once_and_buffers_never():
    shared = nn.Linear(4, 4)
    model = nn.Sequential(shared, nn.ReLU(), shared, nn.BatchNorm1d(4))
    assert count_parameters(model) == 20 + 8  # the shared Linear once, BatchNorm's weight and bias, no buffers
    assert count_parameters(nn.ReLU()) == 0


def test_count_parameters_rejects_a_non_module():
    with pytest.raises(TypeError, match="nn.Module"):
        count_parameters([torch.zeros(3)])


# resize_images


def test_resize_repeats_every_pixel_in_a_block():
    train, _ = digits_datasets()
    small = TensorDataset(train.tensors[0][:5], train.tensors[1][:5])
    images, labels = resize_images(small, 32).tensors
    want = small.tensors[0].repeat_interleave(4, dim=2).repeat_interleave(4, dim=3)
    assert images.shape == (5, 1, 32, 32) and torch.equal(images, want)
    assert torch.equal(labels, small.tensors[1])
    assert resize_images(small, 8).tensors[0].equal(small.tensors[0])


@pytest.mark.parametrize(
    ("dataset", "size", "error", "fix"),
    [
        ((torch.zeros(2, 1, 8, 8), torch.zeros(2)), 32, TypeError, "TensorDataset"),
        (TensorDataset(torch.zeros(2, 1, 8, 8)), 32, TypeError, "TensorDataset"),
        (TensorDataset(torch.zeros(2, 1, 8, 8), torch.zeros(2)), 32.0, TypeError, "size must be an int such as 32"),
        (TensorDataset(torch.zeros(2, 8, 8), torch.zeros(2)), 32, ValueError, "channels, height, width"),
    ],
)
def test_resize_names_the_fix(dataset, size, error, fix):
    with pytest.raises(error, match=fix):
        resize_images(dataset, size)


# train_one_epoch


def test_train_one_epoch_lowers_the_loss_on_the_digits(digits32):
    train, test = digits32
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(6 * 14 * 14, 10))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loader = DataLoader(train, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(0))
    before, _ = evaluate(net, DataLoader(test, batch_size=256))
    losses = [train_one_epoch(net, loader, optimizer, nn.CrossEntropyLoss()) for _ in range(4)]
    after, accuracy = evaluate(net, DataLoader(test, batch_size=256))
    assert losses[-1] < losses[0] / 2 and after < before / 2 and accuracy > 0.8


@pytest.mark.parametrize("optimizer_class", [torch.optim.SGD, torch.optim.Adam])
def test_train_one_epoch_equals_a_hand_written_loop_step_for_step(optimizer_class):
    data = random_data(50)

    def start():
        model = small_classifier(seed=1)
        optimizer = optimizer_class(model.parameters(), lr=0.05)
        loader = DataLoader(data, batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(2))
        return model, optimizer, loader

    model, optimizer, loader = start()
    torch.manual_seed(3)  # Dropout draws from the global generator
    got = train_one_epoch(model, loader, optimizer, F.cross_entropy)
    hand, hand_optimizer, hand_loader = start()
    torch.manual_seed(3)
    hand.train()
    total = 0.0
    for inputs, targets in hand_loader:
        hand_optimizer.zero_grad()
        loss = F.cross_entropy(hand(inputs), targets)
        loss.backward()
        hand_optimizer.step()
        total += loss.item() * len(targets)
    assert got == pytest.approx(total / len(data), rel=1e-12)
    for a, b in zip(model.parameters(), hand.parameters(), strict=True):
        assert torch.equal(a, b)
    for a, b in zip(model.buffers(), hand.buffers(), strict=True):
        assert torch.equal(a, b)


def test_train_one_epoch_returns_the_mean_per_sample_with_an_uneven_last_batch():
    data = random_data(10)
    model = small_classifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: the parameters stay, the losses can be checked
    model.eval()  # the loop must switch to training mode itself
    batches = [(data.tensors[0][i : i + 4], data.tensors[1][i : i + 4]) for i in (0, 4, 8)]
    torch.manual_seed(4)  # the same Dropout masks in both passes
    got = train_one_epoch(model, batches, optimizer, F.cross_entropy)
    torch.manual_seed(4)
    model.train()
    want = sum(F.cross_entropy(model(x), y, reduction="sum").item() for x, y in batches) / 10
    assert got == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("start_in_training_mode", [True, False])
def test_train_one_epoch_trains_in_training_mode_and_restores_the_mode(start_in_training_mode):
    model = small_classifier()
    modes = []
    model.register_forward_hook(lambda module, args, output: modes.append((module.training, torch.is_grad_enabled())))
    model.train(start_in_training_mode)
    train_one_epoch(
        model, DataLoader(random_data(8), batch_size=4), torch.optim.SGD(model.parameters()), F.cross_entropy
    )
    assert modes == [(True, True), (True, True)]
    assert all(m.training == start_in_training_mode for m in model.modules())


def test_train_one_epoch_moves_batches_to_the_model_device():
    model = small_classifier()
    seen = []
    model.register_forward_pre_hook(lambda module, args: seen.append(args[0].device))
    train_one_epoch(
        model, DataLoader(random_data(4), batch_size=4), torch.optim.SGD(model.parameters()), F.cross_entropy
    )
    assert seen == [next(model.parameters()).device]


def bad_training_arguments():
    model = small_classifier()
    other = small_classifier(seed=2)
    loader = DataLoader(random_data(8), batch_size=4)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    return [
        ("not a module", lambda o, t: 0, loader, sgd, F.cross_entropy, TypeError, "nn.Module"),
        ("optimizer class", model, loader, torch.optim.SGD, F.cross_entropy, TypeError, r"SGD\(model.parameters\(\)"),
        (
            "optimizer is not one",
            model,
            loader,
            model.parameters(),
            F.cross_entropy,
            TypeError,
            "torch.optim.Optimizer",
        ),
        ("loss rebound", model, loader, sgd, torch.tensor(2.3), TypeError, "loss = criterion"),
        ("loss not callable", model, loader, sgd, "cross_entropy", TypeError, "nn.CrossEntropyLoss()"),
        (
            "other optimizer",
            model,
            loader,
            torch.optim.SGD(other.parameters()),
            F.cross_entropy,
            ValueError,
            "this model",
        ),
        ("empty loader", model, [], sgd, F.cross_entropy, ValueError, "no batches"),
        (
            "no reduction",
            model,
            loader,
            sgd,
            lambda o, t: F.cross_entropy(o, t, reduction="none"),
            ValueError,
            "reduction='mean'",
        ),
    ]


BAD_TRAINING_ARGUMENTS = bad_training_arguments()


@pytest.mark.parametrize(
    ("case", "model", "loader", "optimizer", "loss_fn", "error", "fix"),
    BAD_TRAINING_ARGUMENTS,
    ids=[case[0] for case in BAD_TRAINING_ARGUMENTS],
)
def test_train_one_epoch_names_the_fix(case, model, loader, optimizer, loss_fn, error, fix):
    with pytest.raises(error, match=fix):
        train_one_epoch(model, loader, optimizer, loss_fn)


def test_train_one_epoch_restores_the_mode_even_when_it_fails():
    model = small_classifier().eval()
    with pytest.raises(ValueError, match="reduction='mean'"):
        train_one_epoch(
            model,
            DataLoader(random_data(4), batch_size=4),
            torch.optim.SGD(model.parameters()),
            lambda o, t: F.cross_entropy(o, t, reduction="none"),
        )
    assert not model.training


# evaluate


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40), st.integers(1, 16), st.integers(2, 6), st.integers(0, 1000))
def test_evaluate_matches_a_manual_computation(n, batch_size, classes, seed):
    data = random_data(n, classes=classes, seed=seed)
    model = small_classifier(seed=seed, classes=classes)
    loss, accuracy = evaluate(model, DataLoader(data, batch_size=batch_size))
    model.eval()
    with torch.no_grad():
        outputs = model(data.tensors[0])
    assert loss == pytest.approx(F.cross_entropy(outputs, data.tensors[1]).item(), rel=1e-5, abs=1e-6)
    assert accuracy == (outputs.argmax(1) == data.tensors[1]).sum().item() / n


def test_evaluate_with_another_loss_function_and_a_perfect_model():
    inputs = torch.eye(4)
    labels = torch.arange(4)
    model = nn.Linear(4, 4)
    with torch.no_grad():
        model.weight.copy_(torch.eye(4) * 10)
        model.bias.zero_()
    loss, accuracy = evaluate(model, [(inputs[:3], labels[:3]), (inputs[3:], labels[3:])], nn.MultiMarginLoss())
    assert accuracy == 1.0
    assert loss == pytest.approx(nn.MultiMarginLoss()(model(inputs), labels).item())


@pytest.mark.parametrize("start_in_training_mode", [True, False])
def test_evaluate_uses_evaluation_mode_without_autograd_and_changes_nothing(start_in_training_mode):
    model = small_classifier().train(start_in_training_mode)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    modes = []
    model.register_forward_hook(lambda module, args, output: modes.append((module.training, torch.is_grad_enabled())))
    evaluate(model, DataLoader(random_data(12), batch_size=5))
    assert modes == [(False, False)] * 3
    assert model.training == start_in_training_mode
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())


@pytest.mark.parametrize(
    ("model", "loader", "loss_fn", "error", "fix"),
    [
        ("model", [(torch.zeros(2, 5), torch.zeros(2, dtype=torch.long))], F.cross_entropy, TypeError, "nn.Module"),
        (nn.Linear(5, 3), [], F.cross_entropy, ValueError, "no batches"),
        (nn.Linear(5, 3), [(torch.zeros(2, 5), torch.zeros(2, 3))], F.cross_entropy, ValueError, r"argmax\(1\)"),
        (nn.Linear(5, 3), [(torch.zeros(2, 5), torch.zeros(2, dtype=torch.long))], 1.0, TypeError, "callable"),
    ],
)
def test_evaluate_names_the_fix(model, loader, loss_fn, error, fix):
    with pytest.raises(error, match=fix):
        evaluate(model, loader, loss_fn)


# fit and progress_bar


def test_fit_is_train_one_epoch_then_evaluate_on_the_validation_loader_each_epoch(capsys):
    data, validation = random_data(30), random_data(10, seed=1)

    def start():
        model = small_classifier(seed=5)
        loader = DataLoader(data, batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(0))
        return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), loader

    model, optimizer, loader = start()
    torch.manual_seed(0)
    history = fit(model, loader, DataLoader(validation, batch_size=4), optimizer, F.cross_entropy, epochs=3)
    hand, hand_optimizer, hand_loader = start()
    torch.manual_seed(0)
    want = {"train_loss": [], "val_loss": [], "val_accuracy": []}
    for _ in range(3):
        want["train_loss"].append(train_one_epoch(hand, hand_loader, hand_optimizer, F.cross_entropy))
        val_loss, val_accuracy = evaluate(hand, DataLoader(validation, batch_size=4), F.cross_entropy)
        want["val_loss"].append(val_loss)
        want["val_accuracy"].append(val_accuracy)
    assert history == want
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.replace("\r", "\n").strip().splitlines()[-1].endswith("| 3/3")


def test_fit_without_progress_prints_nothing(capsys):
    model = small_classifier()
    loader = DataLoader(random_data(8), batch_size=4)
    fit(model, loader, loader, torch.optim.SGD(model.parameters()), F.cross_entropy, epochs=1, progress=False)
    assert capsys.readouterr() == ("", "")


def run_bar(monkeypatch, pause: float) -> str:
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    for _ in progress_bar(range(5), "epochs"):
        time.sleep(pause)
    return out.getvalue()


def test_progress_bar_text_is_the_same_on_a_fast_and_a_slow_run(monkeypatch, capsys):
    fast, slow = run_bar(monkeypatch, 0.0), run_bar(monkeypatch, 0.03)
    assert fast == slow
    frames = fast.split("\r")[1:]
    assert len(frames) == 7  # the empty bar, one redraw per item, the final redraw on close
    assert frames[0].startswith("epochs:   0%|") and frames[-1].rstrip("\n").endswith("| 5/5")
    assert len(frames[-1].rstrip("\n")) == 60
    assert not re.search(r"it/s|s/it|\d\d:\d\d|\?", fast)
    assert capsys.readouterr().err == ""


def test_progress_bar_needs_a_total_for_an_iterable_without_length():
    with pytest.raises(ValueError, match="total="):
        progress_bar(iter(range(3)), "items")
    out = io.StringIO()
    bar = progress_bar(iter(range(3)), "items", total=3)
    bar.fp = out
    assert list(bar) == [0, 1, 2]


# plot_history


def test_plot_history_draws_the_history():
    history = {"train_loss": [2.0, 1.0, 0.5], "val_loss": [1.8, 1.1, 0.7], "val_accuracy": [0.3, 0.6, 0.9]}
    use_course_style()
    fig = plot_history(history)
    fig.canvas.draw()  # renders the Chinese labels; a missing glyph would warn, and warnings are errors here
    ax_loss, ax_accuracy = fig.axes
    train_line, val_line = ax_loss.get_lines()  # no marker line without best_epoch
    assert list(train_line.get_xdata()) == [1, 2, 3] and list(train_line.get_ydata()) == history["train_loss"]
    assert list(val_line.get_ydata()) == history["val_loss"]
    assert len(ax_accuracy.get_lines()) == 1
    assert list(ax_accuracy.get_lines()[0].get_ydata()) == pytest.approx([30, 60, 90])
    assert "validation" in val_line.get_label() and "准确率" in ax_accuracy.get_ylabel()
    assert ax_accuracy.get_lines()[0].get_color() == val_line.get_color()  # the accuracy is the validation set's
    assert "损失" in ax_loss.get_ylabel() and "轮" in ax_accuracy.get_xlabel()
    assert fig.get_figwidth() <= COLUMN_WIDTH
    plt.close(fig)


def test_plot_history_marks_the_kept_epoch_of_a_run_that_overfits():
    # A real run, as in the lesson: 20 digits, a network wide enough to learn them by heart, 270 to validate on.
    train, _ = digits_datasets()
    images, labels = train.tensors
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    history = fit(
        model,
        [(images[:20], labels[:20])],
        [(images[-270:], labels[-270:])],
        torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
        F.cross_entropy,
        epochs=30,
        progress=False,
    )
    best_epoch = 1 + min(range(30), key=history["val_loss"].__getitem__)
    assert 1 < best_epoch < 30 and history["train_loss"][-1] < history["train_loss"][best_epoch - 1]
    use_course_style()
    fig = plot_history(history, best_epoch=best_epoch)
    fig.canvas.draw()
    ax_loss, ax_accuracy = fig.axes
    *curves, loss_marker = ax_loss.get_lines()
    assert [list(line.get_ydata()) for line in curves] == [history["train_loss"], history["val_loss"]]
    (accuracy_marker,) = ax_accuracy.get_lines()[1:]
    for marker in (loss_marker, accuracy_marker):
        assert list(marker.get_xdata()) == [best_epoch, best_epoch] and marker.get_linestyle() == "--"
    assert "保留" in loss_marker.get_label()
    assert [text.get_text() for text in fig.legends[0].get_texts()][-1] == loss_marker.get_label()
    ticks = [t for t in ax_loss.get_xticks() if 1 <= t <= 30]
    assert ticks == [round(t) for t in ticks] and len(ticks) <= 12  # whole epochs, not one tick per epoch
    plt.close(fig)


# Exercise checks: right answers written another way and wrong answers beyond the EXERCISES tables


def accumulated_step(model, optimizer, loss_fn, micro_batches):
    """A right answer written another way: each micro-batch's loss with reduction="sum", one division by the total."""
    total = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    summed = 0.0
    for x, y in micro_batches:
        loss = F.cross_entropy(model(x), y, reduction="sum") / total
        loss.backward()
        summed += loss.item()
    optimizer.step()
    return summed


def test_check_accumulated_step_accepts_the_sum_reduction_divided_by_the_total(capsys):
    check_accumulated_step(accumulated_step)
    assert "✓ Correct" in capsys.readouterr().out


def test_check_accumulated_step_rejects_one_step_on_the_concatenated_batch():
    def concatenated(model, optimizer, loss_fn, micro_batches):  # the same numbers, without accumulating
        inputs, targets = torch.cat([x for x, _ in micro_batches]), torch.cat([y for _, y in micro_batches])
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss.item()

    with pytest.raises(WrongAnswer, match="A forward pass saw 20 samples"):
        check_accumulated_step(concatenated)


def test_check_accumulated_step_rejects_micro_batches_changed_in_place():
    def drops_a_sample(model, optimizer, loss_fn, micro_batches):
        micro_batches.append(micro_batches.pop())  # the same list back: fine
        loss = accumulated_step(model, optimizer, loss_fn, micro_batches)
        micro_batches[-1][1].zero_()  # the targets of the caller's last micro-batch are lost
        return loss

    with pytest.raises(WrongAnswer, match="changed its argument number 1"):
        check_accumulated_step(drops_a_sample)


def test_check_accumulated_step_rejects_a_call_with_parentheses():
    with pytest.raises(WrongAnswer, match=re.escape("without ()")):
        check_accumulated_step(0.5)


def test_check_accumulated_step_rejects_an_unknown_wrong_step_with_the_recipe():
    def too_big_a_step(model, optimizer, loss_fn, micro_batches):
        loss = accumulated_step(model, optimizer, loss_fn, micro_batches)
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1.01)
        return loss

    with pytest.raises(WrongAnswer, match="differ from one step on the whole batch"):
        check_accumulated_step(too_big_a_step)


def test_the_checks_leave_the_global_random_state_alone():
    (accumulation, prediction) = EXERCISES
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    check_accumulated_step(accumulation.reference)
    check_predict(prediction.reference)
    for mistake in prediction.mistakes:  # wrong answers that keep Dropout on draw random numbers
        with pytest.raises(WrongAnswer):
            check_predict(mistake.answer)
    assert torch.equal(torch.rand(3), expected)


def test_check_predict_calls_predict_on_a_model_in_evaluation_mode_too():
    modes = []

    def recording_predict(model, inputs):
        modes.append(model.training)
        return EXERCISES[1].reference(model, inputs)

    check_predict(recording_predict)
    assert modes == [True, False]


def test_check_predict_rejects_a_list_and_a_call_with_parentheses():
    with pytest.raises(WrongAnswer, match="should return a tensor"):
        check_predict(lambda model, inputs: EXERCISES[1].reference(model, inputs).tolist())
    with pytest.raises(WrongAnswer, match=re.escape("without ()")):
        check_predict("predict")


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(
        training.count_parameters, ("model",), TypeError, "model must be an nn.Module such as nn.Linear(64, 10)", "str"
    ),
    bad(
        training.count_parameters,
        (nn.Linear,),
        TypeError,
        "model must be an nn.Module such as nn.Linear(64, 10)",
        "class",
    ),
    bad(
        training.resize_images,
        (IMAGES.tensors, 32),
        TypeError,
        "dataset must be a TensorDataset(images, labels), e.g. from companion.data.digits_datasets()",
        "tuple",
    ),
    bad(training.resize_images, (IMAGES, 0), ValueError, "size must be at least 1 (e.g. 32)", "zero"),
    bad(
        training.resize_images,
        (TensorDataset(torch.rand(4, 8, 8), torch.arange(4)), 16),
        ValueError,
        "images must have shape (N, channels, height, width)",
        "3d-images",
    ),
    bad(
        training.train_one_epoch,
        (LINEAR, BATCHES, torch.optim.SGD, F.cross_entropy),
        TypeError,
        "pass an instance, e.g. torch.optim.SGD(model.parameters(), lr=0.01)",
        "optimizer-class",
    ),
    bad(
        training.train_one_epoch,
        (LINEAR, BATCHES, "sgd", F.cross_entropy),
        TypeError,
        "optimizer must be a torch.optim.Optimizer such as SGD",
        "str-optimizer",
    ),
    bad(
        training.train_one_epoch,
        (LINEAR, BATCHES, OTHER_SGD, F.cross_entropy),
        ValueError,
        "build it from this model, torch.optim.SGD(model.parameters(), lr=0.01)",
        "other-models-optimizer",
    ),
    bad(
        training.train_one_epoch,
        (LINEAR, BATCHES, SGD, torch.tensor(0.5)),
        TypeError,
        "give them two names, e.g. `loss = criterion(output, target)`",
        "loss-value",
    ),
    bad(
        training.train_one_epoch,
        (LINEAR, BATCHES, SGD, "cross_entropy"),
        TypeError,
        "loss_fn must be callable, e.g. nn.CrossEntropyLoss()",
        "str-loss",
    ),
    bad(
        training.train_one_epoch,
        (LINEAR, BATCHES, SGD, nn.CrossEntropyLoss(reduction="none")),
        ValueError,
        "loss_fn must return one number per batch (reduction='mean')",
        "unreduced-loss",
    ),
    bad(
        training.train_one_epoch,
        (LINEAR, [], SGD, F.cross_entropy),
        ValueError,
        "check that the dataset is not empty",
        "empty-loader",
    ),
    bad(
        training.train_one_epoch,
        (LINEAR.state_dict(), BATCHES, SGD, F.cross_entropy),
        TypeError,
        "model must be an nn.Module such as nn.Linear(64, 10)",
        "state-dict",
    ),
    bad(
        training.evaluate,
        ("model", BATCHES),
        TypeError,
        "model must be an nn.Module such as nn.Linear(64, 10)",
        "str-model",
    ),
    bad(
        training.evaluate, (LINEAR, BATCHES), TypeError, "give them two names", "loss-value", loss_fn=torch.tensor(0.5)
    ),
    bad(
        training.evaluate,
        (LINEAR, ONE_HOT_BATCHES),
        ValueError,
        "(one-hot targets: targets.argmax(1))",
        "one-hot-targets",
    ),
    bad(training.evaluate, (LINEAR, []), ValueError, "check that the dataset is not empty", "empty-loader"),
    bad(training.progress_bar, (iter([1, 2]), "epochs"), ValueError, "pass total=<number of items>", "no-len"),
    bad(
        training.fit,
        (LINEAR, BATCHES, BATCHES, SGD, F.cross_entropy, 0),
        ValueError,
        "epochs must be at least 1 (e.g. 10)",
        "zero-epochs",
    ),
    bad(
        training.fit,
        (LINEAR, BATCHES, BATCHES, SGD, F.cross_entropy, 2.0),
        TypeError,
        "epochs must be an int such as 10",
        "float-epochs",
    ),
    bad(
        training.fit, (LINEAR, BATCHES, BATCHES, SGD, F.cross_entropy, -1), ValueError, "at least 1", "negative-epochs"
    ),
    bad(training.fit, (LINEAR, BATCHES, BATCHES, SGD, F.cross_entropy, True), TypeError, "an int such", "bool-epochs"),
    bad(
        training.fit,
        (LINEAR, BATCHES, BATCHES, torch.optim.SGD, F.cross_entropy, 1),
        TypeError,
        "pass an instance, e.g. torch.optim.SGD(model.parameters(), lr=0.01)",
        "optimizer-class",
        progress=False,
    ),
]
