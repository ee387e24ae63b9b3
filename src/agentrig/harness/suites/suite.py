"""Run a suite: every scenario, in this process or in worker processes, in order."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence

from agentrig.harness.results import ScenarioResult, SuiteResult
from agentrig.harness.runner import failed_result, run_scenario
from agentrig.harness.scenarios.model import Scenario
from agentrig.harness.suites.pool import run_in_workers

__all__ = ["Progress", "run_suite"]

Progress = Callable[[ScenarioResult], None]
"""Called with each scenario's result as soon as it is known."""


def run_suite(
    scenarios: Sequence[Scenario],
    *,
    workers: int = 1,
    plugins: Sequence[str] = (),
    progress: Progress | None = None,
    use_async: bool = False,
) -> SuiteResult:
    """Run ``scenarios`` (in worker processes when ``workers > 1``), keeping their order.

    Workers import ``plugins`` first and load each scenario from its file, so parallel runs need
    scenarios loaded from files (else :class:`~agentrig.harness.errors.SuiteError`); a plugin
    that does not import raises :class:`~agentrig.harness.errors.PluginError`. With
    ``use_async``, every scenario runs through the async path.
    """
    run = functools.partial(run_scenario, use_async=True) if use_async else run_scenario
    started = time.perf_counter()
    if workers <= 1 or len(scenarios) < 2:
        results = []
        for scenario in scenarios:
            result = run(scenario)
            if progress is not None:
                progress(result)
            results.append(result)
    else:
        results = run_in_workers(scenarios, workers, plugins, progress, run=run, died=failed_result)
    return SuiteResult(scenarios=tuple(results), wall_time_s=time.perf_counter() - started)
