"""Human-readable failure reports, shared by the CLI and the pytest plugin."""

from __future__ import annotations

from agentrig.harness.reporting.base import compared_values
from agentrig.harness.results import Failure, ScenarioResult


def format_failure(failure: Failure) -> str:
    """One failure: kind, message, where, and expected vs observed when known."""
    lines = [f"[{failure.kind}] {failure.message}"]
    if failure.invariant:
        lines[0] = f"[{failure.kind}: {failure.invariant}] {failure.message}"
    if failure.location:
        lines.append(f"    at {failure.location}")
    lines += compared_values(failure, "    ")
    return "\n".join(lines)


def format_scenario_failures(result: ScenarioResult) -> str:
    """Every failure of a scenario, headed by its name and location."""
    head = f"scenario {result.name} ({result.location}) failed:"
    return "\n".join([head, *(format_failure(f) for f in result.failures)])
