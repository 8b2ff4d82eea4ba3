"""companion.course: the notebook setup really fixes what it promises, and the lesson-00 check judges fairly."""

import re

import matplotlib as mpl
import numpy as np
import pytest
import torch

from companion import course
from companion.checks.course import check_repeatable_draws
from companion.course import _show_raising_line, environment_report, setup_notebook, show_source
from companion.exercises import WrongAnswer
from tests.bad_inputs import bad
from tools.course import ANSI


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


@pytest.mark.parametrize("avx2", [True, False])
def test_setup_pins_the_avx2_kernels_where_the_cpu_has_them(monkeypatch, avx2):
    for name in course.AVX2_PINS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")  # a value the learner set is kept
    monkeypatch.setattr(torch.cpu, "_is_avx2_supported", lambda: avx2)
    setup_notebook()
    pinned = {name: course.os.environ.get(name) for name in course.AVX2_PINS}
    if avx2:
        assert pinned == {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"}
    else:
        assert pinned == {"ATEN_CPU_CAPABILITY": None, "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": None}


@pytest.mark.integration
@pytest.mark.skipif(not torch.cpu._is_avx2_supported(), reason="an x86 CPU with AVX2")
def test_setup_makes_pytorch_run_its_avx2_kernels():
    import subprocess
    import sys

    code = "from companion.course import setup_notebook; import torch; setup_notebook(); "
    code += "print(torch.backends.cpu.get_cpu_capability())"
    env = {k: v for k, v in course.os.environ.items() if k not in course.AVX2_PINS}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.splitlines()[-1] == "AVX2"


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


@pytest.fixture
def shell():
    """An IPython shell as a notebook kernel has it after setup_notebook(): %xmode Minimal and the raising line."""
    import sys

    from IPython.core.interactiveshell import InteractiveShell

    saved = sys.excepthook, sys.displayhook, sys.modules.get("__main__")
    shell = InteractiveShell.instance()
    shell.InteractiveTB.set_mode(mode="Minimal")
    _show_raising_line(shell)
    _show_raising_line(shell)  # setup_notebook() runs again on a second Run All: wrapped once
    shell.shown = []
    shell._showtraceback = lambda etype, evalue, stb: shell.shown.append(ANSI.sub("", "\n".join(stb)).strip())
    yield shell
    InteractiveShell.clear_instance()
    sys.excepthook, sys.displayhook = saved[:2]
    sys.modules["__main__"] = saved[2]


def test_an_error_shows_the_cell_line_that_raised_not_the_libraries(shell):
    shell.run_cell("import torch\n\n\ndef one_hot(x):\n    y = x + 1\n    return y.view(2, 2)", store_history=True)
    shell.run_cell(
        "from companion.exercises import call_learner\n\ncall_learner(one_hot, torch.zeros(3))", store_history=True
    )
    shown = shell.shown.pop().splitlines()
    assert shown[0] == "Cell In[1], line 6, in one_hot" and shown[1] == "    return y.view(2, 2)"
    assert shown[-1] == "RuntimeError: shape '[2, 2]' is invalid for input of size 3" and len(shown) == 3
    shell.run_cell("x = torch.zeros(3)\nx.view(2, 2)", store_history=True)
    assert shell.shown.pop().splitlines()[:2] == ["Cell In[3], line 2", "    x.view(2, 2)"]


def test_a_one_line_cell_and_a_wrong_answer_stay_one_message(shell):
    shell.run_cell("import torch\n\nx = torch.zeros(3)", store_history=True)
    shell.run_cell("x.view(2, 2)", store_history=True)
    assert shell.shown.pop() == "RuntimeError: shape '[2, 2]' is invalid for input of size 3"
    shell.run_cell("from companion.exercises import require\n\nrequire(False, 'a hint', '提示')", store_history=True)
    assert shell.shown.pop() == "WrongAnswer: a hint\n提示：提示"


def test_xmode_verbose_gives_the_full_traceback_back(shell):
    shell.run_cell("import torch\n\nx = torch.zeros(3)", store_history=True)
    shell.run_line_magic("xmode", "Verbose")
    shell.run_cell("y = 1\nx.view(2, 2)", store_history=True)
    verbose = shell.shown.pop()
    assert "Traceback (most recent call last)" in verbose and "----> 2 x.view(2, 2)" in verbose
    shell.run_line_magic("xmode", "Minimal")
    shell.run_cell("y = 1\nx.view(2, 2)", store_history=True)
    assert shell.shown.pop().splitlines()[0] == "Cell In[3], line 2"


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(course.setup_notebook, ("0",), TypeError, "seed must be an int such as 0", "str"),
    bad(course.setup_notebook, (True,), TypeError, "seed must be an int such as 0", "bool"),
    bad(course.setup_notebook, (2**32,), ValueError, "seed must be between 0 and 2**32 - 1", "too-large"),
    bad(course.show_source, (3,), TypeError, "takes a function, method or class", "not-code"),
]


def test_a_figure_output_keeps_an_svg_copy_without_a_date_and_the_same_png(monkeypatch):
    from IPython.core import pylabtools
    from matplotlib.figure import Figure

    monkeypatch.setattr(pylabtools, "retina_figure", pylabtools.retina_figure)  # undone after the test
    monkeypatch.setitem(mpl.rcParams, "svg.hashsalt", "tensor-by-tensor")  # as use_course_style sets it
    plain = pylabtools.retina_figure
    course._keep_a_vector_copy()
    course._keep_a_vector_copy()  # a second Run All wraps it once, not twice
    wrapped = pylabtools.retina_figure
    assert wrapped is not plain and wrapped.keeps_vector_copy

    def figure():
        drawn = Figure(figsize=(2, 1))
        drawn.add_subplot().plot([0, 1], [1, 0])
        return drawn

    expected = plain(figure(), base64=True, bbox_inches="tight")  # what a figure's first draw gives without a copy
    png, metadata = wrapped(figure(), base64=True, bbox_inches="tight")
    assert (png, {k: v for k, v in metadata.items() if k != "vector_copy"}) == expected
    svg = metadata["vector_copy"]
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "<path" in svg
    assert "<dc:date>" not in svg and svg == wrapped(figure(), base64=True, bbox_inches="tight")[1]["vector_copy"]
    assert wrapped(Figure(), base64=True) is None  # an empty figure still shows nothing
