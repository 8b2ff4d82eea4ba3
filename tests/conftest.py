import sys
from pathlib import Path

# Test helpers (notebook_rules) import as plain modules.
sys.path.insert(0, str(Path(__file__).parent))
