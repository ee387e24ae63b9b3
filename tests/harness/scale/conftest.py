"""Scale-out tests: a Dask cluster of this process's threads (quick to start), shared by the
tests of a module; the agents and models live in ``scale_app.py`` beside this file and in
``../live/refund_app.py``."""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

for folder in (Path(__file__).parent, Path(__file__).parents[1] / "live"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import psutil  # noqa: E402
from distributed import Client  # noqa: E402

from agentrig.harness.scale.cluster import (  # noqa: E402
    DaskExecutor,
    dask_client,
    start_worker_server,
)

HELPERS = ("forkserver", "resource_tracker")
"""The long-lived helper processes of ``multiprocessing`` (the worker server that local workers
are forked from, the resource tracker): started once, they stay for the process's life."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Client]:
    """Two workers without processes, eight task slots each, for the tests of one module:
    closed after them, so that its event loop thread does not run on beside later tests."""
    with dask_client(DaskExecutor(), workers=2, threads_per_worker=8, processes=False) as client:
        yield client


@pytest.fixture
def threads_left() -> Callable[[], list[str]]:
    """The names of the threads started since the test began that are still running, once
    they had time to end (Dask's idle offload thread aside)."""
    before = set(threading.enumerate())

    def left() -> list[str]:
        # Dask's offload pool may start its one thread: idle, it runs no loop nor callback
        started = [
            thread
            for thread in threading.enumerate()
            if thread not in before and not thread.name.startswith("Dask-Offload")
        ]
        # A worker process's watcher thread ends when Dask lets go of the process (a finalizer,
        # so after a collection), not at the close itself: on a busy machine it may be ending
        gc.collect()
        deadline = time.monotonic() + 30.0  # far beyond a busy machine's delay, not a speed check
        for thread in started:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        return [thread.name for thread in started if thread.is_alive()]

    return left


@pytest.fixture
def processes_left() -> Callable[[], set[int]]:
    """The processes started below this one since the test began (the worker server, started
    first, and the resource tracker aside) that are still running once they had time to end."""
    start_worker_server()
    before = _descendants()

    def left() -> set[int]:
        deadline = time.monotonic() + 30.0  # far beyond a busy machine's delay
        while (running := _descendants() - before) and time.monotonic() < deadline:
            time.sleep(0.05)
        return running

    return left


def _descendants() -> set[int]:
    helpers = set()
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.NoSuchProcess):
            command = " ".join(child.cmdline())
            if any(f"from multiprocessing.{name} import" in command for name in HELPERS):
                helpers.add(child.pid)
    return {process.pid for process in psutil.Process().children(recursive=True)} - helpers
