"""pytest plugins for the whole project (here, not in tests/, so that a run over notebooks/ alone has them)."""

import os

# The Chinese editions run in Chinese, so nbval cannot compare them with a kernel that speaks English:
# tests/test_zh_code.py checks them against the lessons instead.
collect_ignore = ["notebooks/zh"]


def pytest_addoption(parser):
    parser.addoption(
        "--rerun-notebooks",
        action="store_true",
        help="after nbval runs a notebook, run every cell again in the same kernel and compare with the stored outputs",
    )


def pytest_configure(config):
    """The lessons' stored outputs are the English edition's: every kernel nbval starts speaks English."""
    if config.getoption("--nbval", default=False) or config.getoption("--nbval-lax", default=False):
        os.environ["COURSE_LANG"] = "en"


def pytest_collection_modifyitems(config, items):
    """Add the second Run All of each notebook, then put the longest files first."""
    _add_second_pass(config, items)
    _longest_files_first(items)


def _longest_files_first(items):
    """Order the files so that `make test`'s two workers finish together (with xdist's --no-loadscope-reorder).

    Workers take whole files in this order as they become free; a long file taken last keeps one worker busy while
    the other idles. Notebooks take longest, later lessons longer than earlier ones, so they come first, last
    lesson first; test files follow in name order. Items inside a file keep their order.
    """

    def rank(item):
        path = item.path
        if path.suffix == ".ipynb":
            return (0, -int(path.name[:2]) if path.name[:2].isdigit() else 0)
        return (1, 0)

    items.sort(key=rank)  # stable: each file's items stay in order


def _add_second_pass(config, items):
    """A learner presses Run All twice without restarting the kernel: the second pass must print the same.

    For each notebook nbval collected, append a copy of its cell items after its last one. They share the notebook's
    collector, so they run in the same kernel (pytest tears a collector down only after its last item), and nbval
    compares their outputs with the stored ones exactly as it does for the first pass.
    """
    if not config.getoption("--rerun-notebooks"):
        return
    import copy

    from nbval.plugin import IPyNbCell

    reordered, pending = [], {}
    for item in items:
        if isinstance(item, IPyNbCell):
            pending.setdefault(item.parent, []).append(item)
        reordered.append(item)
    for notebook, cells in pending.items():
        last = reordered.index(cells[-1])
        again = [
            IPyNbCell.from_parent(
                notebook,
                name=f"{cell.name} (re-run)",
                cell_num=cell.cell_num,
                cell=copy.deepcopy(cell.cell),  # nbval merges the stored stream outputs in place on the first pass
                options=cell.options,
            )
            for cell in cells
        ]
        reordered[last + 1 : last + 1] = again
    items[:] = reordered
