"""Live scenarios in a suite: checked before any trial runs, then run together (each with its
own trials in flight, all under one traffic control and budget), each ending as a
:class:`~agentrig.harness.results.ScenarioResult` that carries its verdict."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from agentrig.errors import ConfigurationError
from agentrig.harness.live.agent import agent_driver, builder_for, resolve_adapter
from agentrig.harness.live.roles import api_key, key_location
from agentrig.harness.live.run import LiveRun, check_reachable, run_live_scenario
from agentrig.harness.live_results import LiveResult
from agentrig.harness.results import Failure, ScenarioResult
from agentrig.harness.scenarios.model import Scenario

__all__ = ["live_scenario_result", "preflight_live", "run_live_suite"]


def preflight_live(scenarios: Sequence[Scenario], run: LiveRun) -> None:
    """Everything that can be refused before a trial runs, for every live scenario: a
    requirement its ``max`` trials cannot show (or no number of trials can decide), a missing
    API key, an agent that cannot be made or has no model of its own. Raises
    :class:`~agentrig.errors.ConfigurationError` listing each problem at its ``file:line``."""
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
                api_key(spec, scenario.nearest_location(key_location(spec, role)) or scenario.name)
            except ConfigurationError as error:
                problems.append(str(error))
        problem = _agent_problem(scenario)
        if problem is not None:
            problems.append(problem)
    if problems:
        raise ConfigurationError("\n".join(dict.fromkeys(problems)))


def _agent_problem(scenario: Scenario) -> str | None:
    """Why ``scenario``'s agent cannot be made for a live trial, at the line of its
    ``agent.builder`` or ``agent.adapter``; None when it can."""
    spec = scenario.agent
    key = "adapter" if spec.adapter is not None else "builder"
    where = scenario.nearest_location(("agent", key)) or scenario.name
    try:
        if spec.adapter is not None:
            resolve_adapter(spec.adapter)
        elif spec.builder is not None:
            agent_driver(builder_for(spec.builder))
    except ConfigurationError as error:
        return f"{where}: {error}"
    return None


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
    *,
    checked: bool = False,
) -> list[ScenarioResult]:
    """Run every live scenario of ``scenarios`` at once; results in the scenarios' order.
    They are checked by :func:`preflight_live` first, unless ``checked`` says the caller did."""
    run = run or LiveRun()
    if not checked:
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
