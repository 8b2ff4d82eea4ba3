"""tools/tidy_errors.py: stored tracebacks name files relative to site-packages or the project, on any machine."""

import nbformat

from tools.tidy_errors import tidy_frame, tidy_notebook


def test_site_packages_and_project_prefixes_are_removed():
    venv = "File \x1b[0;32m/home/ada/course/.venv/lib/python3.11/site-packages/torch/nn/functional.py:3555\x1b[0m"
    assert tidy_frame(venv) == "File \x1b[0;32mtorch/nn/functional.py:3555\x1b[0m"
    conda = "File /opt/conda/envs/tbt/lib/python3.12/site-packages/IPython/core/interactiveshell.py:3823 in run_code"
    assert tidy_frame(conda) == "File IPython/core/interactiveshell.py:3823 in run_code"
    windows = r"File C:\Users\ada\venv\Lib\site-packages\torch\serialization.py:1609, in load(f)"
    assert tidy_frame(windows) == r"File torch\serialization.py:1609, in load(f)"
    project = "File /srv/course/companion/conv.py:91, in conv2d_reference(input)"
    assert tidy_frame(project, root="/srv/course") == "File companion/conv.py:91, in conv2d_reference(input)"
    assert tidy_frame("Cell In[4], line 1") == "Cell In[4], line 1"


def test_tidy_notebook_rewrites_only_tracebacks(tmp_path):
    frame = "File /x/lib/python3.11/site-packages/torch/__init__.py:2963, in __getattr__(name)"
    error = nbformat.v4.new_output("error", ename="AttributeError", evalue="no", traceback=["Cell In[1]", frame])
    stream = nbformat.v4.new_output("stream", name="stdout", text="/x/lib/python3.11/site-packages/ stays\n")
    cell = nbformat.v4.new_code_cell("torch.scatter_()", outputs=[error, stream])
    path = tmp_path / "lesson.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    assert tidy_notebook(path) == 1
    outputs = nbformat.read(path, as_version=4).cells[0].outputs
    assert outputs[0].traceback == ["Cell In[1]", "File torch/__init__.py:2963, in __getattr__(name)"]
    assert outputs[1].text == stream.text
    assert tidy_notebook(path) == 0


def test_anatomy_sorts_lines_into_kinds():
    from tools import anatomy

    module = """import torch


def taught(x):
    if x < 0:
        raise ValueError("x must be at least 0")
    return x * 2


def _hint_case():
    return 3


def check_taught(f):
    return f(_hint_case())


def plot_taught():
    return None
"""
    counts = anatomy.classify("companion/example.py", module)
    assert counts == {"reference": 3, "validation": 2, "checkers": 4, "plots": 2}  # import, def, return
    assert anatomy.classify("companion/checks/example.py", module) == {"checkers": 11}  # every non-blank line
