"""Run scenarios in a pool of worker processes, keeping their order.

Workers are forked from the worker server (:mod:`~agentrig.harness.suites.worker_start`): a
fresh interpreter that has imported agentrig's runner and command and nothing of this
process's state, so a worker starts in milliseconds; where there is none (Windows) they are
spawned. Each takes this process's environment as it is when the pool starts, imports the
plugins, and loads each scenario from its file (a scenario built in code cannot be sent). A
worker that dies fails the scenarios it held; Ctrl-C or a usage error stops the pool at once.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path

from agentrig.errors import AgentrigError
from agentrig.harness.errors import PluginError, SuiteError
from agentrig.harness.results import ScenarioResult
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import Scenario
from agentrig.harness.suites.interrupt import (
    ignore_sigint,
    leave_stop_signals_to_parent,
    sigint_held,
)
from agentrig.harness.suites.plugins import load_plugins
from agentrig.harness.suites.worker_start import start_worker_server

__all__ = ["RunOne", "run_in_workers"]

RunOne = Callable[[Scenario], ScenarioResult]
"""What a worker calls for each scenario (a module-level function: it is sent by name)."""
Died = Callable[[Scenario, str], ScenarioResult]
"""The result of a scenario whose worker died, given the reason."""

_WORKER_DIED = (
    "a worker process died abruptly (killed, out of memory, os._exit or a crash in native code) "
    "before this scenario finished; run again with --workers 1 to find the scenario that causes it"
)


def run_in_workers(
    scenarios: Sequence[Scenario],
    workers: int,
    plugins: Sequence[str],
    progress: Callable[[ScenarioResult], None] | None,
    *,
    run: RunOne,
    died: Died,
) -> list[ScenarioResult]:
    """``run`` each scenario in one of ``workers`` processes that import ``plugins`` first."""
    tasks = [(str(s.source.path) if s.source else "", s.name) for s in scenarios]
    if any(not path for path, _ in tasks):
        raise SuiteError("parallel runs need scenarios loaded from files; run them with workers=1")
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=get_context(start_worker_server()),
        initializer=_init_worker,
        initargs=(tuple(plugins), dict(os.environ)),
    )
    size = max(1, len(tasks) // (workers * 8))
    starts = range(0, len(tasks), size)
    results: list[ScenarioResult] = []
    try:
        with sigint_held():  # the workers start here
            futures = [
                pool.submit(_run_chunk, run, tasks[start : start + size]) for start in starts
            ]
        for start, future in zip(starts, futures, strict=True):
            try:
                outcomes = future.result()
            except BrokenProcessPool:
                outcomes = [died(s, _WORKER_DIED) for s in scenarios[start : start + size]]
            for outcome in outcomes:
                if isinstance(outcome, str):  # a worker could not import the plugins
                    raise PluginError(outcome)
                if progress is not None:
                    progress(outcome)
                results.append(outcome)
    except BaseException:  # Ctrl-C or a usage error: stop now, do not finish the queue
        _stop(pool)
        raise
    pool.shutdown()
    return results


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers (they ignore Ctrl-C, SIGTERM and SIGHUP:
    see _init_worker)."""
    processes = list(getattr(pool, "_processes", None) or {})  # no public way before 3.14
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    ending = getattr(signal, "SIGKILL", signal.SIGTERM)  # Windows has no SIGKILL
    for pid in processes:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, ending)
    pool.shutdown(wait=True)
    if manager is not None:
        # shutdown(wait=True) after shutdown(wait=False) no longer waits for the pool's manager
        # thread; one still closing its pipe at exit races the interpreter's own wake-up of it
        # (CPython writes to it unlocked) into an "OSError: Bad file descriptor" traceback.
        manager.join()


_WORKER_PROBLEM: list[str] = []


def _init_worker(plugins: tuple[str, ...], environment: dict[str, str]) -> None:
    # a worker forked from the server has the environment the server started with
    os.environ.clear()
    os.environ.update(environment)
    ignore_sigint()
    leave_stop_signals_to_parent()
    try:
        load_plugins(plugins)
    except AgentrigError as error:  # raising here would only break the pool, without a reason
        _WORKER_PROBLEM.append(f"in a worker process: {error}")
    import agentrig.harness.runner  # noqa: F401  (what every task needs, before the freeze)

    gc.freeze()  # the modules stay for the worker's life: no full collection visits them again


def _run_chunk(run: RunOne, tasks: Sequence[tuple[str, str]]) -> list[ScenarioResult | str]:
    """Run ``(path, name)`` tasks in a worker; a plugin problem comes back as its message."""
    if _WORKER_PROBLEM:
        return [_WORKER_PROBLEM[0]]
    results: list[ScenarioResult | str] = []
    for path, name in tasks:
        # Each task is one file's scenario, run once: it is not kept (a worker's memory stays
        # that of one scenario, not of its share of the suite).
        scenario = load_scenario(Path(path))
        if scenario.name != name:
            raise SuiteError(f"{path} changed while the suite ran: it now holds {scenario.name!r}")
        results.append(run(scenario))
    return results
