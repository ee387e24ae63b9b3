"""Live scenarios in a suite: checked before any trial runs, then run together (each with its
own trials in flight, all under one traffic control and budget), each ending as a
:class:`~agentrig.harness.results.ScenarioResult` that carries its verdict."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from agentrig.errors import ConfigurationError
from agentrig.harness.live.agent import resolve_adapter
from agentrig.harness.live.roles import provider_for
from agentrig.harness.live.run import LiveRun, check_reachable, run_live_scenario
from agentrig.harness.live_results import LiveResult
from agentrig.harness.results import Failure, ScenarioResult
from agentrig.harness.scenarios.model import Scenario
from agentrig.harness.scenarios.user_agent import resolve_builder

__all__ = ["live_scenario_result", "preflight_live", "run_live_suite"]


def preflight_live(scenarios: Sequence[Scenario], run: LiveRun) -> None:
    """Everything that can be refused before a trial runs, for every live scenario: a
    requirement its ``max`` trials cannot show, a missing API key, an agent that cannot be
    made. Raises :class:`~agentrig.errors.ConfigurationError` listing each problem."""
    problems: list[str] = []
    for scenario in scenarios:
        try:
            check_reachable(scenario, run.max_trials)
        except ConfigurationError as error:
            problems.append(str(error))
        for role, given in (("user", run.models.user), ("judge", run.models.judge)):
            owner = scenario.user if role == "user" else scenario.judge
            spec = None if owner is None else owner.model
            if spec is None or given is not None:
                continue
            try:
                provider_for(spec, scenario.nearest_location((role, "model")) or scenario.name)
            except ConfigurationError as error:
                problems.append(str(error))
        where = scenario.nearest_location(("agent",)) or scenario.name
        try:
            if scenario.agent.adapter is not None:
                resolve_adapter(scenario.agent.adapter)
            elif scenario.agent.builder is not None:
                resolve_builder(scenario.agent.builder)
        except ConfigurationError as error:
            problems.append(f"{where}: {error}")
    if problems:
        raise ConfigurationError("\n".join(dict.fromkeys(problems)))


def live_scenario_result(
    scenario: Scenario, live: LiveResult, wall_time_s: float
) -> ScenarioResult:
    """``scenario``'s result: passed exactly when the verdict is PASS."""
    failures: tuple[Failure, ...] = ()
    if live.verdict != "PASS":
        where = scenario.nearest_location(("trials", "require"))
        failures = (
            Failure(
                kind="verdict",
                message=f"{live.verdict}: {live.reason}",
                field="trials.require",
                expected=f"{live.metric} >= {live.at_least}",
                observed=f"{live.successes}/{live.trials} successes",
                location=where,
            ),
        )
    source = scenario.source
    return ScenarioResult(
        name=scenario.name,
        file=source.path if source is not None else "<memory>",
        line=source.line if source is not None else None,
        tags=scenario.tags,
        description=scenario.description,
        passed=not failures,
        turns=(),
        failures=failures,
        invariants=(),
        transcript=(),
        wall_time_s=wall_time_s,
        live=live,
    )


async def _one(scenario: Scenario, run: LiveRun) -> ScenarioResult:
    started = time.perf_counter()
    live = await run_live_scenario(scenario, run)
    return live_scenario_result(scenario, live, time.perf_counter() - started)


async def run_live_suite(
    scenarios: Sequence[Scenario],
    run: LiveRun | None = None,
    progress: Callable[[ScenarioResult], None] | None = None,
) -> list[ScenarioResult]:
    """Run every live scenario of ``scenarios`` at once; results in the scenarios' order."""
    run = run or LiveRun()
    preflight_live(scenarios, run)

    async def reported(scenario: Scenario) -> ScenarioResult:
        result = await _one(scenario, run)
        if progress is not None:
            progress(result)
        return result

    tasks = [asyncio.ensure_future(reported(scenario)) for scenario in scenarios]
    try:
        return list(await asyncio.gather(*tasks))
    except asyncio.CancelledError:
        # Each scenario ends its trials with a partial verdict when cancelled: collect them.
        for task in tasks:
            task.cancel()
        finished = await asyncio.gather(*tasks, return_exceptions=True)
        return [result for result in finished if isinstance(result, ScenarioResult)]
