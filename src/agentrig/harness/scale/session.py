"""A run on a Dask cluster from start to end: the cluster opened (or reached), every worker
checked, the live trials sent to it, and all of it closed at the end."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from agentrig.harness.scale.cluster import (
    LIVE_TRIALS_PER_WORKER,
    DaskExecutor,
    dask_client,
    start_worker_server,
)
from agentrig.harness.scale.control import ClusterLimits
from agentrig.harness.scale.trials import DaskTrials
from agentrig.harness.scale.workers import check_workers, needs_of
from agentrig.harness.scenarios.model import Scenario

if TYPE_CHECKING:
    from distributed import Client

    from agentrig.harness.live.run import LiveRun

__all__ = ["dask_session"]


@contextlib.contextmanager
def dask_session(
    executor: DaskExecutor,
    scenarios: Sequence[Scenario],
    *,
    plugins: Sequence[str] = (),
    live: LiveRun | None = None,
    limits: ClusterLimits | None = None,
    workers: int | None = None,
    processes: bool = True,
) -> Iterator[Client]:
    """A client of ``executor``'s cluster, every worker checked for what ``scenarios`` need
    (see :func:`~agentrig.harness.scale.workers.check_workers`); with ``live``, its trials go to
    the cluster (``live.launcher``) under ``limits`` until leaving. A local cluster has
    ``workers`` processes (default: one per CPU), each running one scenario, or
    :data:`~agentrig.harness.scale.cluster.LIVE_TRIALS_PER_WORKER` trials, at once."""
    has_live = live is not None and any(scenario.is_live for scenario in scenarios)
    threads = LIVE_TRIALS_PER_WORKER if has_live else 1
    if processes and executor.address is None:
        start_worker_server(live=has_live)  # unless started already (the command starts it)
    with dask_client(
        executor,
        workers=workers,
        threads_per_worker=threads,
        processes=processes,
        short_tasks=not has_live,
    ) as client:
        check_workers(client, needs_of(scenarios, plugins, live))
        if processes or executor.address is not None:  # not this process's threads
            # What the check imported stays for the worker's life: kept out of the
            # collector's full passes, which a worker's heap makes slow at every scenario.
            client.run(gc.freeze)
        if live is None:
            yield client
            return
        trials = DaskTrials(client, limits, plugins)
        live.launcher = trials
        try:
            yield client
        finally:
            live.launcher = None
            trials.close()
