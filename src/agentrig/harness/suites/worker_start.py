"""How worker processes start: forked from one *worker server*, shared by the local pool
(``--workers``) and a local Dask cluster (``--executor dask``).

The worker server is a fresh interpreter (``multiprocessing``'s fork server), started once per
process, that imports what the workers run and nothing of this process's state; a worker
forked from it starts in milliseconds, imports nothing, and exits without tearing an
interpreter down. Only one fork server can run in a process, and whoever starts it first fixes
what it imports: so it always imports what the pool needs (:data:`POOL_MODULES`, cheap), plus
what its first starter names (Dask's engine only when a Dask cluster asks). Where there is no
fork server (Windows), workers are spawned.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Iterator, Sequence

from agentrig.harness.suites.interrupt import sigint_held
from agentrig.harness.suites.worker_server import SERVER_VARIABLE

__all__ = ["POOL_MODULES", "SERVER_MODULE", "start_worker_server"]

POOL_MODULES = (
    "agentrig.harness.cli",
    "agentrig.harness.runner",
    "agentrig.harness.scenarios.loader",
    "agentrig.harness.suites.plugins",
    "agentrig.harness.suites.pool",
)
"""What every worker server imports: a pool worker's runner, loader and plugin machinery, and
``agentrig``'s command (the main module of ``agentrig run``, which each worker runs again as
``__mp_main__``: with the command imported, that is a few lines)."""

SERVER_MODULE = "agentrig.harness.suites.worker_server"
"""What the worker server imports last (Ctrl-C, SIGTERM and SIGHUP ignored, the imports
frozen): see :mod:`~agentrig.harness.suites.worker_server`."""


def start_worker_server(modules: Sequence[str] = ()) -> str:
    """Start, in the background, the process that worker processes are forked from (it imports
    :data:`POOL_MODULES` and ``modules``, those that are installed, while this process goes
    on; :data:`SERVER_MODULE` last), unless it runs already (then nothing changes), and name
    the ``multiprocessing`` start method workers use: ``forkserver``, or ``spawn`` where there
    is none (Windows)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return "spawn"
    from multiprocessing import forkserver

    forkserver.set_forkserver_preload([*POOL_MODULES, *modules, SERVER_MODULE])
    with sigint_held(), _server_environment():
        forkserver.ensure_running()
    return "forkserver"


@contextlib.contextmanager
def _server_environment() -> Iterator[None]:
    """While inside, the environment a worker server started here inherits names it as one
    (:data:`~agentrig.harness.suites.worker_server.SERVER_VARIABLE`); this process's own
    environment is as before on leaving."""
    before = os.environ.get(SERVER_VARIABLE)
    os.environ[SERVER_VARIABLE] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ[SERVER_VARIABLE]
        else:
            os.environ[SERVER_VARIABLE] = before
