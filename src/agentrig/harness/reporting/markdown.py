"""The Markdown report, fit for a GitHub Actions job summary (``$GITHUB_STEP_SUMMARY``).

A headline with counts, one table row per scenario, then every failure in detail. Wall times
appear only in the ``Wall time`` line and the ``Wall time (s)`` column.

With live scenarios, a "Live scenarios" section follows the table: one row a scenario (verdict,
successes of the counted trials, the rate with its exact interval, the requirement, the cost,
the cost per success, the trials set aside), then each scenario's statistics, its metrics with
their intervals, and the transcripts of its first failed or set-aside trials, each folded in a
``<details>``. An INCONCLUSIVE verdict is counted apart from the failures and marked ⚠️.
"""

from __future__ import annotations

import re
from html import escape

from agentrig.harness.live_results import LiveResult, TrialRecord
from agentrig.harness.reporting.base import (
    ReportWriter,
    compared_values,
    format_json_excerpt,
    format_seconds,
    last_turn_outcome,
    outcome_counts,
    register_writer,
)
from agentrig.harness.reporting.live import (
    SHOWN_TRANSCRIPT_LINES,
    SHOWN_TRANSCRIPTS,
    calls_text,
    cost_text,
    format_confidence,
    format_interval,
    format_share,
    format_usd,
    rate_text,
    requirement_text,
    set_aside_text,
    shown_trials,
    trial_text,
    verdict_reason,
)
from agentrig.harness.results import Failure, ScenarioResult, SuiteResult

__all__ = ["MarkdownWriter", "markdown_code", "markdown_text"]

_TABLE_HEADER = (
    "| Scenario | Tags | Turns | Steps | Last turn (status / stop reason) | Result "
    "| Wall time (s) |\n"
    "| --- | --- | ---: | ---: | --- | :---: | ---: |"
)
_LIVE_HEADER = (
    "| Scenario | Verdict | Successes / n | Rate [exact interval] | Requirement | Cost "
    "| Cost / success | Set aside |\n"
    "| --- | :---: | ---: | --- | --- | ---: | ---: | --- |"
)
_VERDICT_MARKS = {"PASS": "✅", "FAIL": "❌", "INCONCLUSIVE": "⚠️"}
_MARKUP = re.compile(r"([\\`*_\[\]|~])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


@register_writer
class MarkdownWriter(ReportWriter):
    """Writes ``report.md``."""

    name = "markdown"
    filename = "report.md"

    def render(self, result: SuiteResult) -> str:
        """The Markdown document."""
        blocks = [_headline(result), _table(result)]
        live = [scenario for scenario in result.scenarios if scenario.live is not None]
        if live:
            blocks += ["### Live scenarios", _live_table(live)]
            blocks.extend(_live_block(scenario) for scenario in live)
        failing = [scenario for scenario in result.scenarios if not scenario.passed]
        if failing:
            blocks.append("### Failures")
            blocks.extend(_failure_block(scenario) for scenario in failing)
        return "\n\n".join(blocks) + "\n"


def markdown_text(text: str) -> str:
    """``text`` as literal inline Markdown, safe in a table cell (``|`` and newlines escaped)."""
    text = _MARKUP.sub(r"\\\1", text)
    text = "".join(_ENTITIES.get(char, char) for char in text)
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


def markdown_code(text: str) -> str:
    """``text`` as a one-line code span, fenced with enough backticks (not for table cells)."""
    text = " ".join(text.splitlines())
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    padding = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) or not text else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def _headline(result: SuiteResult) -> str:
    failed, inconclusive = result.failed_count, result.inconclusive_count
    if result.passed:
        title = f"## agentrig: ✅ all {result.total} scenarios passed"
    elif failed == inconclusive:
        title = f"## agentrig: ⚠️ {inconclusive} of {result.total} scenarios inconclusive"
    else:
        title = f"## agentrig: ❌ {failed - inconclusive} of {result.total} scenarios failed"
        title += f", {inconclusive} inconclusive" if inconclusive else ""
    counts = ", ".join(f"**{count}** {label}" for count, label in outcome_counts(result))
    return f"{title}\n\n{counts} · Wall time: {format_seconds(result.wall_time_s)} s"


def _table(result: SuiteResult) -> str:
    if not result.scenarios:
        return "_No scenarios ran._"
    return "\n".join([_TABLE_HEADER, *(_row(scenario) for scenario in result.scenarios)])


def _row(scenario: ScenarioResult) -> str:
    live = scenario.live is not None
    cells = [
        markdown_text(scenario.title),
        markdown_text(", ".join(scenario.tags)),
        "-" if live else str(len(scenario.turns)),
        "-" if live else str(scenario.total_steps),
        markdown_text(last_turn_outcome(scenario)),
        _mark(scenario),
        format_seconds(scenario.wall_time_s),
    ]
    return "| " + " | ".join(cells) + " |"


def _mark(scenario: ScenarioResult) -> str:
    if scenario.live is not None:
        return _VERDICT_MARKS[scenario.live.verdict]
    return "✅" if scenario.passed else "❌"


def _live_table(scenarios: list[ScenarioResult]) -> str:
    return "\n".join([_LIVE_HEADER, *(_live_row(scenario) for scenario in scenarios)])


def _live_text(text: str) -> str:
    """``markdown_text(text)`` with ``$`` escaped too: GitHub reads ``$...$`` as math."""
    return markdown_text(text).replace("$", "\\$")


def _live_row(scenario: ScenarioResult) -> str:
    live = scenario.live
    assert live is not None
    cells = [
        _live_text(scenario.name),
        f"{_VERDICT_MARKS[live.verdict]} {live.verdict}",
        f"{live.successes}/{live.trials}",
        f"{format_share(live.rate)} {format_interval(*live.exact)}",
        _live_text(requirement_text(live)),
        _live_text(format_usd(live.cost.total)),
        _live_text(format_usd(live.cost.per_success)),
        _live_text(set_aside_text(live)),
    ]
    return "| " + " | ".join(cells) + " |"


def _live_block(scenario: ScenarioResult) -> str:
    """A live scenario's statistics, metrics and first failed or set-aside transcripts."""
    live = scenario.live
    assert live is not None
    heading = (
        f"#### {_VERDICT_MARKS[live.verdict]} {_live_text(scenario.name)}: {live.verdict} "
        f"({markdown_code(scenario.location)})"
    )
    decided = "a sequential test" if live.decided_by == "sequential" else "the interval"
    facts = [
        ("Why", verdict_reason(live)),
        ("Successes", f"{live.successes} of {live.trials} counted trial(s), decided by {decided}"),
        ("Rate", rate_text(live)),
        ("Requirement", requirement_text(live)),
        ("Cost", cost_text(live.cost)),
        ("Set aside", set_aside_text(live)),
        ("Discarded", f"{live.discarded} (finished after the verdict)"),
        ("Model calls", calls_text(live.model_calls)),
        ("Replayed trials", str(live.replayed_trials)),
    ]
    items = "\n".join(f"- **{label}:** {_live_text(text)}" for label, text in facts)
    blocks = [heading, items]
    if live.metrics:
        blocks.append(_metrics_table(live))
    blocks.extend(_trials(live))
    return "\n\n".join(blocks)


def _metrics_table(live: LiveResult) -> str:
    header = (
        f"| Metric | Estimate | Interval ({format_confidence(live.confidence)}) |\n"
        "| --- | ---: | --- |"
    )
    rows = [
        f"| {_live_text(m.metric)} | "
        f"{format_share(m.value) + (' (k > trials)' if m.value is None else '')} | "
        f"{format_interval(m.low, m.high)} |"
        for m in live.metrics
    ]
    return "\n".join([header, *rows])


def _trials(live: LiveResult) -> list[str]:
    """The first failed or set-aside trials, each folded with its transcript."""
    shown = shown_trials(live)
    blocks = [_trial(record) for record in shown[:SHOWN_TRANSCRIPTS]]
    if len(shown) > SHOWN_TRANSCRIPTS:
        more = len(shown) - SHOWN_TRANSCRIPTS
        blocks.append(f"_{more} more failed or set-aside trial(s) in the HTML and JSON reports._")
    return blocks


def _trial(record: TrialRecord) -> str:
    line = " ".join(trial_text(record).splitlines())  # a blank line would end the HTML block
    summary = f"<details><summary>{escape(line).replace('$', '&#36;')}</summary>"
    lines = list(record.transcript[:SHOWN_TRANSCRIPT_LINES])
    hidden = len(record.transcript) - len(lines)
    if hidden > 0:
        lines.append(f"... ({hidden} more lines in the HTML and JSON reports)")
    body = _fenced("\n".join(lines)) if lines else "_No transcript was recorded._"
    return f"{summary}\n\n{body}\n\n</details>"


def _fenced(text: str) -> str:
    """``text`` in a fenced code block, its fence longer than any run of backticks in it."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def _failure_block(scenario: ScenarioResult) -> str:
    heading = f"#### {_mark(scenario)} {markdown_text(scenario.title)} ({markdown_code(scenario.location)})"
    items = [_failure_item(number, failure) for number, failure in enumerate(scenario.failures, 1)]
    return "\n\n".join([heading, "\n".join(items)])


def _failure_item(number: int, failure: Failure) -> str:
    where = _where(failure)
    head = f"{number}. **{failure.kind}**" + (f" ({where})" if where else "")
    lines = [f"{head}: {markdown_text(failure.message)}"]
    lines += compared_values(
        failure, "   - ", lambda value: markdown_code(format_json_excerpt(value))
    )
    return "\n".join(lines)


def _where(failure: Failure) -> str:
    parts = [f"at {markdown_code(failure.location)}"] if failure.location else []
    parts += [f"turn {failure.turn}"] if failure.turn else []
    parts += [f"step {failure.step}"] if failure.step else []
    parts += [f"field {markdown_code(failure.field)}"] if failure.field else []
    parts += [f"invariant {markdown_code(failure.invariant)}"] if failure.invariant else []
    return ", ".join(parts)
