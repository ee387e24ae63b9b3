"""A pytest plugin of ``bench/loading.py``: when collection has ended, it writes the wall clock
and this process's CPU seconds to the file ``AGENTRIG_BENCH_CLOCK`` names (what follows, up to
the process's end, is pytest's report and the interpreter's exit)."""

from __future__ import annotations

import os
import time

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    """Write when collection ended."""
    clock = os.environ.get("AGENTRIG_BENCH_CLOCK")
    if clock:
        with open(clock, "w", encoding="utf-8") as file:
            file.write(f"{time.time()!r} {time.process_time()!r}")
