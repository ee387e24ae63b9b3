"""The agents of examples/fuzz/ import by module name, as in the project a user fuzzes (the
folder is put on ``sys.path`` before the tests here are collected)."""

from __future__ import annotations

import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "fuzz"

if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))
