"""Which executor a run's work goes to (``--executor``), and the Dask client that reaches it:
a local cluster sized to the machine, or a scheduler already running at ``dask://HOST:PORT``."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentrig.errors import ConfigurationError, InvalidInputError, MissingDependencyError
from agentrig.harness.suites import worker_start
from agentrig.harness.suites.interrupt import sigint_held

if TYPE_CHECKING:
    from distributed import Client, LocalCluster

__all__ = [
    "CONNECT_TIMEOUT",
    "LIVE_TRIALS_PER_WORKER",
    "LIVE_WORKER_MODULES",
    "STOP_TIMEOUT",
    "TICK_INTERVAL",
    "WORKER_MODULES",
    "DaskExecutor",
    "dask_client",
    "parse_executor",
    "require_dask",
    "start_worker_server",
]

CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a scheduler at ``dask://HOST:PORT`` to answer."""
STOP_TIMEOUT = 0.5
"""Seconds a local worker process has to stop when a run is interrupted, before it is killed."""

TICK_INTERVAL = "1s"
"""How often a local cluster's event loops check their own health (Dask's default: 20 ms)."""

LIVE_TRIALS_PER_WORKER = 8
"""Trials a local worker runs at once in a live run: a trial mostly waits for its models, so a
process holds several (each is one of the worker's task slots)."""

WORKER_MODULES = (
    "distributed",
    "agentrig.harness.scale.suite",
    "agentrig.harness.scale.trials",
)
"""What a local cluster's worker processes import before they are forked, besides what every
worker server imports (:data:`~agentrig.harness.suites.worker_start.POOL_MODULES`: the runner
and ``agentrig``'s command, the main module each worker imports again): the engine and the
modules its tasks run."""

LIVE_WORKER_MODULES = ("openai",)
"""What the worker server of a live run also imports: the SDK of the role models' default
provider (an OpenAI-compatible API), which a worker would otherwise import at its first trial
(0.3-0.9 s of CPU each); left out where it is not installed."""

_ADDRESS = re.compile(r"dask://(?P<host>[^\s/:]+|\[[0-9A-Fa-f:.]+\]):(?P<port>[0-9]{1,5})")


@dataclass(frozen=True, slots=True)
class DaskExecutor:
    """A Dask cluster to run on: ``address`` is a running scheduler's (``tcp://HOST:PORT``), or
    None for a local cluster started for the run and closed after it."""

    address: str | None = None

    def __str__(self) -> str:
        return "dask" if self.address is None else self.address.replace("tcp://", "dask://", 1)


def parse_executor(text: str) -> DaskExecutor | None:
    """``--executor``: ``local`` (None: this machine, ``--workers`` processes), ``dask`` (a local
    Dask cluster) or ``dask://HOST:PORT`` (a running scheduler). Anything else is an
    ``InvalidInputError`` naming ``--executor``."""
    if text == "local":
        return None
    if text == "dask":
        return DaskExecutor()
    match = _ADDRESS.fullmatch(text)
    if match is None or not 0 < int(match["port"]) < 65536:
        raise InvalidInputError(
            "option",
            [("--executor", f"{text!r}: write local, dask, or dask://HOST:PORT (a scheduler)")],
        )
    return DaskExecutor(f"tcp://{match['host']}:{int(match['port'])}")


def require_dask() -> None:
    """Raise ``MissingDependencyError`` naming the ``dask`` extra when ``distributed`` is not
    installed."""
    try:
        importlib.import_module("distributed")
    except ImportError:
        raise MissingDependencyError("distributed", "dask") from None


@contextlib.contextmanager
def dask_client(
    executor: DaskExecutor,
    *,
    workers: int | None = None,
    threads_per_worker: int = 1,
    processes: bool = True,
    short_tasks: bool = False,
) -> Iterator[Client]:
    """A client of ``executor``'s cluster while inside. A local cluster has ``workers``
    processes (default: one per CPU this process may use; ``processes=False``: threads of this
    process), each running ``threads_per_worker`` tasks at once, and is closed on leaving; with
    ``short_tasks`` (many tasks of milliseconds: scripted scenarios) its scheduler sends every
    task to a worker at once instead of queueing them. A scheduler that cannot be reached is a
    ``ConfigurationError`` naming its address."""
    require_dask()
    from dask import config
    from distributed import Client, LocalCluster

    if executor.address is not None:
        try:
            client = Client(executor.address, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except OSError as error:
            raise ConfigurationError(
                f"--executor {executor}: no Dask scheduler answered at {executor.address} "
                f"({error}); start one with `dask scheduler` and its workers with `dask worker "
                f"{executor.address}`"
            ) from error
        with client:
            yield client
        return
    method = start_worker_server() if processes else None
    forked: dict[str, object] = {}
    if method == "forkserver":
        # a forked worker has the environment of the process it is forked from, which started
        # earlier: its nanny gives it this process's, as it is now
        forked["env"] = dict(os.environ)
    with contextlib.ExitStack() as stack:
        # for the cluster's life: the workers a nanny starts again read it too
        stack.enter_context(config.set(_local_config(method, short_tasks)))
        # Ctrl-C is this process's: a spawned worker inherits it blocked (one forked from the
        # worker server ignores it, as the server does)
        with sigint_held():
            cluster = LocalCluster(
                n_workers=workers or _cpu_count(),
                threads_per_worker=threads_per_worker,
                processes=processes,
                dashboard_address=None,
                # no dashboard; its HTTP server (health, metrics) on a free port, not 8787
                scheduler_kwargs={"dashboard_address": ":0"},
                # a worker's own failures come back with its tasks, said once by agentrig;
                # Dask's logs of them (and of heartbeats cut by closing) would say them again
                silence_logs=logging.CRITICAL,
                **forked,
            )
        # results fetched from the workers themselves, not relayed by the scheduler
        with cluster, Client(cluster, set_as_default=False, direct_to_workers=True) as client:
            try:
                yield client
            except BaseException:  # Ctrl-C or an error: what the workers still run is not wanted
                if processes:
                    _stop_workers(cluster)
                raise


def _stop_workers(cluster: LocalCluster) -> None:
    """Stop ``cluster``'s worker processes now: each closes without waiting for the tasks its
    threads still run (a scripted scenario cannot be stopped midway: its process ends under
    it), and one not gone after :data:`STOP_TIMEOUT` is killed (a nanny waits for the tasks,
    then gives it 5 s)."""

    async def stop() -> None:
        processes = []
        for nanny in cluster.workers.values():
            nanny.close_gracefully(reason="interrupted")  # not to start the worker again
            if nanny.process is not None:
                processes.append(nanny.process)
        await asyncio.gather(
            *(
                process.kill(timeout=STOP_TIMEOUT, executor_wait=False, reason="interrupted")
                for process in processes
            ),
            return_exceptions=True,
        )

    with contextlib.suppress(Exception):  # the cluster's own close still follows
        cluster.sync(stop)


def _local_config(method: str | None, short_tasks: bool) -> dict[str, object]:
    """The Dask settings of a local cluster whose workers start by ``method``."""
    settings: dict[str, object] = {
        # every message stays on this machine: compressing it costs more than it saves
        "distributed.comm.compression": None,
        # Two timers that cost CPU whether tasks run or not (on an idle 2-worker cluster, 0.06
        # CPU s a second of 0.09, docs/performance.md): the event loops' health check, 50
        # times a second in the scheduler, each nanny and each worker, for a warning this
        # cluster's silenced logs never show (a loop blocked 3 s is still caught); and each
        # worker's statistical profiler, 100 samples a second for the dashboard's profile
        # pages, which a local cluster does not serve.
        "distributed.admin.tick.interval": TICK_INTERVAL,
        "distributed.worker.profile.enabled": False,
    }
    if method is not None:
        settings["distributed.worker.multiprocessing-method"] = method
    if short_tasks:
        # the scheduler's queue costs it a round of decisions for each task as a slot frees;
        # tasks of milliseconds are better sent all at once (each worker keeps its own queue,
        # and one that dies has its tasks run again elsewhere all the same)
        settings["distributed.scheduler.worker-saturation"] = float("inf")
    return settings


def start_worker_server(*, live: bool = False) -> str:
    """Start, in the background, the process that a local cluster's workers are forked from,
    importing :data:`WORKER_MODULES` too (with ``live`` :data:`LIVE_WORKER_MODULES` also) while
    this process goes on, and name the ``multiprocessing`` start method the workers use:
    ``forkserver``, or ``spawn`` where there is none (Windows). It is the local pool's too, one
    per process, started by the first call (a later one changes nothing): see
    :func:`agentrig.harness.suites.worker_start.start_worker_server`. A forked worker starts in
    a fraction of a spawned one's time (it imports nothing) and exits at once, without tearing
    an interpreter down."""
    # Dask names modules of its own for the server to import, when it first starts a worker
    # and unless the server runs already: these are the ones a worker needs
    return worker_start.start_worker_server(
        (*WORKER_MODULES, *(LIVE_WORKER_MODULES if live else ()))
    )


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1
