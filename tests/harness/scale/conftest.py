"""Scale-out tests: a Dask cluster of this process's threads (quick to start), shared by the
tests of a module; the agents and models live in ``scale_app.py`` beside this file and in
``../live/refund_app.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from multiprocessing import forkserver
from pathlib import Path

import pytest

for folder in (Path(__file__).parent, Path(__file__).parents[1] / "live"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from distributed import Client  # noqa: E402

from agentrig.harness.scale.cluster import (  # noqa: E402
    DaskExecutor,
    dask_client,
    start_worker_server,
)


@pytest.fixture(scope="session", autouse=True)
def worker_server() -> None:
    """The process the local clusters' workers are forked from, started (once a process, before
    the first test here) as a live run starts it: the live tests' workers, the heaviest here,
    then have the model SDK imported before they start. One that a test of the local pool
    started earlier in this process imports only what the pool needs: it is stopped first (no
    pool is open between tests), as only one can run at a time."""
    forkserver._forkserver._stop()
    start_worker_server(live=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Client]:
    """Two workers without processes, eight task slots each, for the tests of one module:
    closed after them, so that its event loop thread does not run on beside later tests."""
    with dask_client(DaskExecutor(), workers=2, threads_per_worker=8, processes=False) as client:
        yield client
