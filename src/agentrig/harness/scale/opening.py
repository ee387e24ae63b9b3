"""A Dask cluster opened in the background: ``agentrig run`` starts opening its local cluster
before it loads the scenarios, so that the workers start and join the scheduler while this
process reads the files, instead of after (docs/scale-out.md, "What it costs")."""

from __future__ import annotations

import contextlib
import threading
from types import TracebackType
from typing import TYPE_CHECKING

from agentrig.harness.scale.cluster import DaskExecutor, dask_client
from agentrig.harness.suites.interrupt import sigint_held

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["ClusterOpening"]


class ClusterOpening:
    """``dask_client(executor, ...)`` entered at once in a thread of its own, while this
    process goes on. :meth:`client` waits for it and gives its client, or raises what opening
    the cluster raised (a scheduler that does not answer, a worker that does not start).
    Leaving (``with``, or :meth:`close`) waits for the opening to end and closes the cluster,
    passing on the exception that ended the block (Ctrl-C stops the workers at once, as
    ``dask_client`` does); closing again does nothing."""

    def __init__(
        self,
        executor: DaskExecutor,
        *,
        workers: int | None = None,
        threads_per_worker: int = 1,
        processes: bool = True,
        short_tasks: bool = False,
    ) -> None:
        self.executor = executor
        self.threads_per_worker = threads_per_worker
        self.processes = processes
        self.short_tasks = short_tasks
        self._opened = contextlib.ExitStack()
        self._client: Client | None = None
        self._error: BaseException | None = None
        self._closed = False

        def open_cluster() -> None:
            context = dask_client(
                executor,
                workers=workers,
                threads_per_worker=threads_per_worker,
                processes=processes,
                short_tasks=short_tasks,
            )
            try:
                self._client = self._opened.enter_context(context)
            except BaseException as error:  # raised where the client is asked for
                self._error = error

        self._thread = threading.Thread(target=open_cluster, name="agentrig-cluster-opening")
        self._thread.start()

    def client(self) -> Client:
        """The cluster's client, once open (waiting for it); what opening it raised, if it
        failed."""
        self._wait()
        if self._error is not None:
            raise self._error
        assert self._client is not None
        return self._client

    def close(self, error: BaseException | None = None) -> None:
        """Wait for the opening, then close the cluster (``error``: what ended its use)."""
        if self._closed:
            return
        self._closed = True
        with sigint_held():  # Ctrl-C meanwhile comes after: no cluster left half-closed
            self._wait()
            self._opened.__exit__(type(error) if error else None, error, None)

    def _wait(self) -> None:
        with sigint_held():  # a Ctrl-C while waiting is raised once the thread has ended
            self._thread.join()

    def __enter__(self) -> ClusterOpening:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close(error)
