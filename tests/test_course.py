"""companion.course: the notebook setup really fixes what it promises, and the lesson-00 check judges fairly."""

import re

import matplotlib as mpl
import numpy as np
import pytest
import torch

from companion.checks.course import check_repeatable_draws
from companion.course import environment_report, setup_notebook, show_source
from companion.exercises import WrongAnswer


@pytest.fixture(autouse=True)
def restore_torch_state():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)
    torch.set_printoptions(profile="default")


def test_setup_seeds_every_generator_and_uses_one_thread(capsys):
    torch.set_num_threads(2)
    setup_notebook(7)
    draws = (torch.rand(3), np.random.rand(3))
    torch.manual_seed(7)
    np.random.seed(7)
    assert torch.equal(draws[0], torch.rand(3))
    assert np.array_equal(draws[1], np.random.rand(3))
    assert torch.get_num_threads() == 1
    assert (
        capsys.readouterr().out == "Ready / 准备就绪: seed 7, 1 CPU thread, default print options, course plot style\n"
    )


def test_setup_resets_print_options_and_plot_style():
    torch.set_printoptions(precision=1)
    mpl.rcParams["figure.dpi"] = 33
    setup_notebook()
    assert str(torch.tensor([1 / 3])) == "tensor([0.3333])"
    assert mpl.rcParams["figure.dpi"] == 100
    assert mpl.rcParams["font.family"] == ["DejaVu Sans", "Course Sans SC"]


@pytest.mark.parametrize(
    ("seed", "error", "fix"),
    [
        (1.5, TypeError, "an int"),
        (True, TypeError, "an int"),
        (-1, ValueError, "between 0 and"),
        (2**32, ValueError, "between"),
    ],
)
def test_setup_rejects_bad_seeds(seed, error, fix):
    with pytest.raises(error, match=fix):
        setup_notebook(seed)


def test_environment_report_names_versions_and_devices():
    report = environment_report()
    assert re.search(rf"^PyTorch +{re.escape(torch.__version__)}$", report, re.M)
    assert re.search(rf"^NumPy +{re.escape(np.__version__)}$", report, re.M)
    assert re.search(rf"^CUDA +{torch.cuda.is_available()} \({torch.cuda.device_count()} device\(s\)\)$", report, re.M)
    assert re.search(r"^MPS +(True|False)$", report, re.M)


def seeded_pair():
    torch.manual_seed(3)
    first = torch.randn(3)
    torch.manual_seed(3)
    return first, torch.randn(3)


def test_check_repeatable_draws_passes_a_right_answer(capsys):
    check_repeatable_draws(seeded_pair)
    assert capsys.readouterr().out.startswith("✓ Correct / 正确")


def seeded_once_outside():
    return (first := torch.randn(3)), first.clone()


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda: (torch.randn(3), torch.randn(3)), "call torch.manual_seed"),
        (lambda: torch.randn(3), "should return a pair"),
        (lambda: (torch.ones(3), torch.ones(3)), "All three numbers are the same"),
        (lambda: (torch.randn(4), torch.randn(4)), "shape \\(3,\\)"),
        (seeded_once_outside, "seed inside the function"),
        (seeded_pair(), "without \\(\\)"),
    ],
)
def test_check_repeatable_draws_rejects_wrong_answers_with_a_hint(wrong, hint):
    with pytest.raises(WrongAnswer, match=hint):
        check_repeatable_draws(wrong)


def test_show_source_prints_the_code_itself(capsys):
    show_source(seeded_pair)
    assert capsys.readouterr().out.startswith("def seeded_pair():\n    torch.manual_seed(3)")
    with pytest.raises(TypeError, match="takes a function, method or class"):
        show_source("seeded_pair")
