"""A suite of scripted scenarios on a Dask cluster: one task per scenario, the results back
here in the scenarios' order (the reports equal a local run's but for wall times).

Each task carries its scenario pickled by this process (the scheduler then holds bytes it
need not unpickle and pickle again), and the results of the scenarios that finish close
together are fetched in one round trip (:func:`~agentrig.harness.scale.tasks.finished`).
The cyclic garbage collector is off while the results stream in here, and on a worker while
a scenario runs (docs/performance.md, "On a Dask cluster").

A worker that dies mid-scenario costs nothing: the scheduler runs its scenarios again on
another worker, and each result is taken once. A scenario that kills every worker it lands on
(``distributed.scheduler.allowed-failures`` times) fails alone, saying so. Ctrl-C cancels what
has not finished.
"""

from __future__ import annotations

import pickle
import secrets
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentrig.errors import ConfigurationError
from agentrig.harness.results import ScenarioResult, SuiteResult
from agentrig.harness.runner import failed_result, run_scenario
from agentrig.harness.scale.tasks import finished, map_tasks
from agentrig.harness.scale.workers import ensure_plugins
from agentrig.harness.scenarios.loader import collector_paused
from agentrig.harness.scenarios.model import Scenario
from agentrig.harness.suites.suite import Progress

if TYPE_CHECKING:
    from distributed import Client, Future

    from agentrig import AgentBuilder

__all__ = ["run_scenario_on_dask", "run_suite_on_dask"]

WORKERS_KILLED = (
    "the Dask workers running this scenario died {count} times (killed, out of memory, "
    "os._exit or a crash in native code); run it alone with --executor local to find the cause"
)


def run_suite_on_dask(
    client: Client,
    scenarios: Sequence[Scenario],
    *,
    plugins: Sequence[str] = (),
    progress: Progress | None = None,
    use_async: bool = False,
) -> SuiteResult:
    """Run each of ``scenarios`` as one task of ``client``'s cluster, whose workers import
    ``plugins`` first; ``progress`` hears each result as it comes (in any order), the result
    has them in the scenarios' order."""
    started = time.perf_counter()
    # Off from the first task on (the workers of a cluster of this process's threads find
    # it off and leave it so): each full collection would visit every scenario and result
    # held here, and the engine's objects, for little garbage; reference counting frees it.
    with collector_paused():
        futures = map_tasks(
            client,
            _run_pickled,
            [pickle.dumps(scenario, pickle.HIGHEST_PROTOCOL) for scenario in scenarios],
            name="agentrig-scenario",
            plugins=tuple(plugins),
            use_async=use_async,
        )
        position = {future.key: i for i, future in enumerate(futures)}
        results: dict[int, ScenarioResult] = {}
        try:
            for future, result in finished(client, futures):
                i = position[future.key]
                results[i] = _failed(future, scenarios[i]) if result is None else result
                if progress is not None:
                    progress(results[i])
        except BaseException:  # Ctrl-C, or a worker that cannot import the plugins
            client.cancel(futures)
            raise
    in_order = tuple(results[i] for i in range(len(scenarios)))
    return SuiteResult(scenarios=in_order, wall_time_s=time.perf_counter() - started)


def run_scenario_on_dask(
    client: Client,
    scenario: Scenario,
    *,
    builder: AgentBuilder | None = None,
    plugins: Sequence[str] = (),
) -> ScenarioResult:
    """Run ``scenario`` as one task of ``client``'s cluster (``builder``, when given, is sent
    with it) and wait for its result; a scenario whose workers kept dying fails alone. A
    builder that cannot be sent is a ``ConfigurationError`` saying so."""
    key = f"agentrig-scenario-{secrets.token_hex(4)}"
    try:
        future = client.submit(
            _run_one, scenario, tuple(plugins), False, builder, key=key, pure=False
        )
    except Exception as error:
        if builder is None:
            raise
        raise ConfigurationError(
            f"the agent built in Python for scenario {scenario.name!r} cannot be sent to the "
            f"Dask workers ({error}); name its builder in the file (agent.builder), which the "
            "workers import, or run it here (executor local)"
        ) from error
    from distributed import KilledWorker

    try:
        result: ScenarioResult = future.result()
    except KilledWorker:
        return _workers_killed(scenario)
    return result


def _failed(future: Future[ScenarioResult], scenario: Scenario) -> ScenarioResult:
    """The result of ``future``, a task that raised: a scenario whose workers kept dying fails
    alone, other errors (a worker that cannot import the plugins) are raised here."""
    from distributed import KilledWorker

    error = future.exception()
    if isinstance(error, KilledWorker):
        return _workers_killed(scenario)
    assert error is not None
    raise error.with_traceback(future.traceback())


def _workers_killed(scenario: Scenario) -> ScenarioResult:
    """``scenario`` failed: the workers running it kept dying."""
    from dask import config

    count = config.get("distributed.scheduler.allowed-failures") + 1
    return failed_result(scenario, WORKERS_KILLED.format(count=count))


def _run_pickled(scenario: bytes, plugins: tuple[str, ...], use_async: bool) -> ScenarioResult:
    """On a worker: run the pickled ``scenario`` after importing ``plugins``."""
    return _run_one(pickle.loads(scenario), plugins, use_async)


def _run_one(
    scenario: Scenario,
    plugins: tuple[str, ...],
    use_async: bool,
    builder: AgentBuilder | None = None,
) -> ScenarioResult:
    """On a worker: run ``scenario`` (against ``builder``'s agent when given) after importing
    ``plugins``."""
    ensure_plugins(plugins)
    # A scenario's objects mostly die with it: collected once after it, not visited by the
    # collections its allocations would trigger while it runs (and by the worker's full ones).
    with collector_paused():
        return run_scenario(scenario, builder=builder, use_async=use_async)
