import pytest


@pytest.fixture(autouse=True, scope="session")
def one_thread():
    """Tests run on one CPU thread, as the notebooks and CI do: small models train fastest so, and sums repeat.

    torch is imported here, not at the top: under `make test` the controlling process loads this file too and then
    only hands out files, so it need not spend seconds importing torch before the workers can start."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def bilingual(monkeypatch):
    """Unit tests expect companion's bilingual text: a COURSE_LANG exported in the shell must not change them. A test
    that wants one language sets COURSE_LANG itself (monkeypatch.setenv), after this."""
    monkeypatch.setenv("COURSE_LANG", "both")
