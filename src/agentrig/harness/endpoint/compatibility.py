"""Which parts of a scenario the endpoint can honour: it sees only what crosses the wire."""

from __future__ import annotations

from collections.abc import Iterator

from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios.model import AgentSpec, Expectation, Scenario
from agentrig.harness.scenarios.yaml_source import FieldPath

AGENTRIG_ONLY_EXPECTATIONS = (
    "status",
    "stop_reason",
    "steps",
    "messages",
    "sections",
    "usage",
    "cost",
    "errors",
)
"""Expectations on agentrig's own state, which an agent on another framework does not have."""

_AGENTRIG_ONLY_AGENT = (
    "builder",
    "system_prompt_override",
    "budget",
    "hooks",
    "subagents",
    "subagent_policy",
    "max_retries",
)


def check_endpoint_scenario(scenario: Scenario, *, function: bool = False) -> None:
    """Raise ``ScenarioFileError`` naming every part of ``scenario`` the endpoint cannot honour
    (with ``function``, a reply function answers: the turns may script no replies)."""
    found = [*_problems(scenario), *(_scripted(scenario) if function else ())]
    problems = [_error(scenario, path, reason) for path, reason in found]
    if problems:
        raise ScenarioFileError.combine(problems)


def _problems(scenario: Scenario) -> Iterator[tuple[FieldPath, str]]:
    yield from _agent_problems(scenario.agent)
    for index, turn in enumerate(scenario.turns):
        if turn.cancel is not None:
            reason = "cancel drives agentrig's own loop; the endpoint cannot cancel another agent"
            yield ("turns", index, "cancel"), reason
        yield from _expect_problems(turn.expect, ("turns", index, "expect"))


def _scripted(scenario: Scenario) -> Iterator[tuple[FieldPath, str]]:
    """The turns that script replies, which a reply function would leave unplayed."""
    for index, turn in enumerate(scenario.turns):
        for key in ("model", "mixture"):
            if key in turn.model_fields_set and getattr(turn, key):
                reason = (
                    f"a reply function answers every request, so the {key}: replies of this "
                    "turn would never be played; remove them, or serve the scenario without "
                    "the function"
                )
                yield ("turns", index, key), reason


def _agent_problems(agent: AgentSpec) -> Iterator[tuple[FieldPath, str]]:
    for key in _AGENTRIG_ONLY_AGENT:
        if key in agent.model_fields_set:
            reason = f"agent.{key} configures agentrig's own runtime; the endpoint cannot apply it"
            yield ("agent", key), reason


def _expect_problems(expect: Expectation, at: FieldPath) -> Iterator[tuple[FieldPath, str]]:
    for key in AGENTRIG_ONLY_EXPECTATIONS:
        if getattr(expect, key) is not None:
            reason = (
                f"expect.{key} needs agentrig's own state, which the endpoint does not see; "
                "it checks what crosses the wire: final_response, tool_calls, model_calls, "
                "tool_results"
            )
            yield (*at, key), reason


def _error(scenario: Scenario, path: FieldPath, reason: str) -> ScenarioFileError:
    where = scenario.locate(path)
    source = scenario.source
    file = where.path if where else (source.path if source else scenario.name)
    dotted = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    return ScenarioFileError(
        file,
        reason,
        line=where.line if where else None,
        column=where.column if where else None,
        field=dotted,
    )
