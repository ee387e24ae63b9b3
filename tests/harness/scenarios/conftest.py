"""Scenario-format tests: the live scenario files of ``live_files.py`` beside this file."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = str(Path(__file__).parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
