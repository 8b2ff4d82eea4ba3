import sys
from pathlib import Path

import pytest
import torch

# Test helpers (notebook_rules) and the course tools (tools/handout.py, ...) import as plain modules.
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tools"))


@pytest.fixture(autouse=True, scope="session")
def one_thread():
    """Tests run on one CPU thread, as the notebooks and CI do: small models train fastest so, and sums repeat."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
