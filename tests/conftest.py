import sys
from pathlib import Path

# Test helpers (notebook_rules) and the course tools (tools/handout.py, ...) import as plain modules.
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tools"))
