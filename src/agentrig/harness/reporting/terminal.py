"""Human-readable failure reports, shared by the CLI and the pytest plugin."""

from __future__ import annotations

from agentrig.harness.live_results import LiveResult
from agentrig.harness.reporting.base import compared_values, outcome_counts
from agentrig.harness.reporting.live import (
    format_interval,
    format_share,
    format_usd,
    live_lines,
    requirement_text,
    set_aside_text,
    shown_trials,
    trial_text,
)
from agentrig.harness.results import Failure, ScenarioResult, SuiteResult

__all__ = [
    "SHOWN_TRIALS",
    "format_counts",
    "format_failure",
    "format_live_line",
    "format_scenario_failures",
]

SHOWN_TRIALS = 5
"""How many failed or set-aside trials a terminal lists, one line each."""


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
    """Every failure of a scenario, headed by its name and location; for a live scenario, its
    statistics and its first failed or set-aside trials too."""
    verb = "is inconclusive" if result.inconclusive else "failed"
    head = f"scenario {result.title} ({result.location}) {verb}:"
    lines = [head, *(format_failure(f) for f in result.failures)]
    if result.live is not None:
        lines += _live_details(result.live)
    return "\n".join(lines)


def _live_details(live: LiveResult) -> list[str]:
    lines = [f"    {line}" for line in live_lines(live)[1:]]  # the verdict is the failure's
    shown = shown_trials(live)
    if shown:
        lines.append(f"    {len(shown)} trial(s) failed or set aside:")
        lines += [f"      {trial_text(record)}" for record in shown[:SHOWN_TRIALS]]
        if len(shown) > SHOWN_TRIALS:
            lines.append(f"      and {len(shown) - SHOWN_TRIALS} more")
        lines.append("    their transcripts are in the HTML, Markdown and JSON reports")
    return lines


def format_live_line(result: ScenarioResult) -> str:
    """A live scenario in one line: ``"PASS refund: 19/20 successes, rate 0.950 [0.751, 0.999],
    requires rate >= 0.8; cost $0.412, $0.0217 a success"`` (``"no success"`` without one);
    ``""`` for a scripted scenario."""
    live = result.live
    if live is None:
        return ""
    line = (
        f"{live.verdict} {result.name}: {live.successes}/{live.trials} successes, rate "
        f"{format_share(live.rate)} {format_interval(*live.exact)}, requires "
        f"{requirement_text(live)}; cost {format_usd(live.cost.total)}"
    )
    per_success = live.cost.per_success
    line += ", no success" if per_success is None else f", {format_usd(per_success)} a success"
    if live.set_aside:
        line += f"; set aside {set_aside_text(live)}"
    return line


def format_counts(result: SuiteResult) -> str:
    """``"3 passed, 1 failed"``, with ``", 1 inconclusive"`` when live verdicts are (they are
    then not counted as failed)."""
    return ", ".join(f"{count} {label}" for count, label in outcome_counts(result))
