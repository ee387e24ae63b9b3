"""Live scenarios in a suite: checked before any trial runs, then run together (each with its
own trials in flight, all under one traffic control and budget), each ending as a
:class:`~agentrig.harness.results.ScenarioResult` that carries its verdict."""

from __future__ import annotations

import asyncio
import difflib
import time
from collections.abc import Callable, Sequence

from agentrig.errors import ConfigurationError
from agentrig.harness.live.agent import agent_driver, builder_for, resolve_adapter
from agentrig.harness.live.gateway import limit_name, provider_name_of
from agentrig.harness.live.limits import Traffic
from agentrig.harness.live.roles import api_key, key_location
from agentrig.harness.live.run import LiveRun, check_reachable, run_live_scenario
from agentrig.harness.live_results import LiveResult
from agentrig.harness.results import Failure, ScenarioResult
from agentrig.harness.scenarios.model import Scenario

__all__ = ["live_scenario_result", "preflight_live", "run_live_suite"]


def preflight_live(scenarios: Sequence[Scenario], run: LiveRun) -> None:
    """Everything that can be refused before a trial runs, for every live scenario: a
    requirement its ``max`` trials cannot show (or no number of trials can decide), a missing
    API key, an agent that cannot be made or has no model of its own, a ``--limit`` for a
    provider no scenario calls. Raises :class:`~agentrig.errors.ConfigurationError` listing
    each problem at its ``file:line``."""
    problems: list[str] = []
    called: set[str] = set()
    for scenario in scenarios:
        try:
            check_reachable(scenario, run.max_trials)
        except ConfigurationError as error:
            problems.append(str(error))
        for role, given in (("user", run.models.user), ("judge", run.models.judge)):
            owner = scenario.user if role == "user" else scenario.judge
            spec = None if owner is None else owner.model  # pragma: no mutate (live: never None)
            if spec is None:
                continue
            called.add(limit_name(spec.provider))
            if given is not None:
                continue
            try:
                api_key(spec, scenario.nearest_location(key_location(spec, role)) or scenario.name)
            except ConfigurationError as error:
                problems.append(str(error))
        try:
            called |= _agent_providers(scenario)
        except ConfigurationError as error:
            problems.append(str(error))
    problems += _unknown_limits(run, called)
    if problems:
        raise ConfigurationError("\n".join(dict.fromkeys(problems)))


def _agent_providers(scenario: Scenario) -> set[str]:
    """The providers (by ``--limit`` name) ``scenario``'s agent calls; an adapter's calls are
    its own, so any provider may be capped for it. ``ConfigurationError`` at the line of
    ``agent.builder`` or ``agent.adapter`` when the agent cannot be made for a live trial."""
    spec = scenario.agent
    key = "adapter" if spec.adapter is not None else "builder"
    where = scenario.nearest_location(("agent", key)) or scenario.name
    try:
        if spec.adapter is not None:
            resolve_adapter(spec.adapter)
            return {"openai", "anthropic"}
        if spec.builder is not None:
            return {limit_name(provider_name_of(agent_driver(builder_for(spec.builder)).provider))}
    except ConfigurationError as error:
        raise ConfigurationError(f"{where}: {error}") from None
    return set()


def _unknown_limits(run: LiveRun, called: set[str]) -> list[str]:
    """A ``--limit`` for a provider no live scenario calls: a misspelt name would leave the
    real provider at the default cap."""
    control = run.control
    if not isinstance(control, Traffic):
        return []
    problems = []
    for name in sorted(control.limits.named - called):
        close = difflib.get_close_matches(name, sorted(called))  # the best first
        hint = f"did you mean {close[0]!r}? " if close else ""
        problems.append(
            f"--limit {name}: no live scenario of this run calls {name!r}; {hint}the providers "
            f"called are: {', '.join(sorted(called)) or 'none'}"
        )
    return problems


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
