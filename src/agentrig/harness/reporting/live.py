"""A live scenario's result in words, shared by every report and the terminal.

Each function renders one part of a :class:`~agentrig.harness.live_results.LiveResult` as
plain text (the writers escape it for their format). Shares (rates, metrics, intervals) have
three decimals; amounts are USD. Dicts are rendered in a fixed order (the roles agent, user,
judge first, then by name), so equal results always read the same.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from agentrig.harness.live_results import LiveCost, LiveResult, MetricRecord, TrialRecord

__all__ = [
    "SHOWN_TRANSCRIPTS",
    "SHOWN_TRANSCRIPT_LINES",
    "by_role",
    "calls_text",
    "cost_text",
    "format_confidence",
    "format_interval",
    "format_share",
    "format_usd",
    "live_lines",
    "metric_text",
    "rate_text",
    "requirement_text",
    "set_aside_text",
    "shown_trials",
    "trial_label",
    "trial_text",
    "verdict_reason",
]

SHOWN_TRANSCRIPTS = 3
"""How many failed or set-aside trials' transcripts a Markdown or JUnit report spells out (the
HTML and JSON reports keep all of them)."""

SHOWN_TRANSCRIPT_LINES = 60
"""How many lines of one transcript a Markdown or JUnit report shows."""

_ROLES = ("agent", "user", "judge")


def format_share(value: float | None) -> str:
    """A rate or metric with three decimals: ``"0.700"``; ``"-"`` when there is none."""
    return "-" if value is None else f"{value:.3f}"


def format_interval(low: float | None, high: float | None) -> str:
    """``"[0.348, 0.933]"``; ``"-"`` when a bound is unknown."""
    if low is None or high is None:
        return "-"
    return f"[{low:.3f}, {high:.3f}]"


def format_usd(amount: float | None) -> str:
    """An amount in USD with three significant digits, at least cents: ``"$0.0123"``,
    ``"$1.50"``, ``"$0"``; ``"-"`` when there is none."""
    if amount is None:
        return "-"
    if amount == 0:
        return "$0"
    decimals = max(2, min(6, 2 - math.floor(math.log10(abs(amount)))))
    return f"${amount:,.{decimals}f}"


def format_confidence(confidence: float) -> str:
    """``0.95`` as ``"95%"``."""
    return f"{confidence * 100:g}%"


def verdict_reason(live: LiveResult) -> str:
    """Why the verdict is what it is, saying ``partial: ...`` when the trials stopped early."""
    if live.partial is None or live.reason.startswith("partial:"):
        return live.reason
    return f"partial: {live.partial}; {live.reason}"


def requirement_text(live: LiveResult) -> str:
    """``"pass^3 >= 0.9 (success rate >= 0.965)"``: the metric and the rate it implies."""
    text = f"{live.metric} >= {live.at_least:g}"
    if live.metric != "rate":
        text += f" (success rate >= {live.threshold:.3f})"
    return text


def rate_text(live: LiveResult) -> str:
    """``"0.700, exact [0.348, 0.933], Wilson [0.397, 0.892] at 95%"``."""
    rate = "no trial counted" if live.rate is None else format_share(live.rate)
    return (
        f"{rate}, exact {format_interval(*live.exact)}, Wilson {format_interval(*live.wilson)} "
        f"at {format_confidence(live.confidence)}"
    )


def metric_text(metric: MetricRecord) -> str:
    """``"pass^3 0.343 [0.042, 0.812]"``; a metric whose k exceeds the trials has no
    estimate: ``"pass^20 - (k > trials) [0.000, 0.850]"``."""
    value = format_share(metric.value) + (" (k > trials)" if metric.value is None else "")
    return f"{metric.metric} {value} {format_interval(metric.low, metric.high)}"


def by_role(values: Mapping[str, float] | Mapping[str, int]) -> list[tuple[str, float]]:
    """``values``' items, the roles agent, user, judge first, then the others by name."""
    order = {role: number for number, role in enumerate(_ROLES)}
    keys = sorted(values, key=lambda key: (order.get(key, len(order)), key))
    return [(key, values[key]) for key in keys]


def cost_text(cost: LiveCost) -> str:
    """``"$0.123 (agent $0.100, user $0.0100, judge $0.0130); per success $0.0176"``."""
    roles = ", ".join(
        f"{role} {format_usd(getattr(cost, role))}" for role in ("agent", "user", "judge")
    )
    return f"{format_usd(cost.total)} ({roles}); per success {format_usd(cost.per_success)}"


def set_aside_text(live: LiveResult) -> str:
    """``"3 (infrastructure 1, user_mistake:empty_message 2)"``, or ``"none"``."""
    total = sum(live.set_aside.values())
    if not total:
        return "none"
    reasons = ", ".join(f"{why} {count}" for why, count in sorted(live.set_aside.items()))
    return f"{total} ({reasons})"


def calls_text(calls: Mapping[str, int]) -> str:
    """``"agent 30, user 20, judge 30"``, or ``"none"``."""
    shown = ", ".join(f"{role} {count:,}" for role, count in by_role(calls))
    return shown or "none"


def shown_trials(live: LiveResult) -> tuple[TrialRecord, ...]:
    """The trials worth reading: those that failed or were set aside, in trial order."""
    return tuple(record for record in live.records if record.status != "success")


def trial_label(record: TrialRecord) -> str:
    """``"trial 3"``, or ``"trial 3, rerun 1"`` for a trial run again after being set aside."""
    return f"trial {record.index}" + (f", rerun {record.attempt}" if record.attempt else "")


def trial_text(record: TrialRecord) -> str:
    """One line a trial: ``"trial 3: failure (counted): wrong refund; $0.0120, replayed"``."""
    status = record.status.replace("_", " ")
    if record.set_aside:
        status += f": {record.set_aside}"
    status += " (counted)" if record.counted else " (not counted)"
    total = sum(record.cost.values())
    tail = format_usd(total) + (", replayed" if record.replayed else "")
    reason = f": {record.reason}" if record.reason else ""
    return f"{trial_label(record)}: {status}{reason}; {tail}"


def live_lines(live: LiveResult) -> list[str]:
    """A live result's statistics, one ``label: value`` line each."""
    lines = [f"verdict: {live.verdict}: {verdict_reason(live)}"]
    lines += [
        f"successes: {live.successes} of {live.trials} counted trial(s), decided by "
        f"{'a sequential test' if live.decided_by == 'sequential' else 'the interval'}",
        f"rate: {rate_text(live)}",
        f"requirement: {requirement_text(live)}",
        "metrics: " + ("; ".join(metric_text(metric) for metric in live.metrics) or "none"),
        f"cost: {cost_text(live.cost)}",
        f"set aside: {set_aside_text(live)}",
        f"discarded: {live.discarded} (finished after the verdict)",
        f"model calls: {calls_text(live.model_calls)}",
        f"replayed trials: {live.replayed_trials}",
    ]
    return lines
