"""The Markdown report, fit for a GitHub Actions job summary (``$GITHUB_STEP_SUMMARY``).

A headline with counts, one table row per scenario, then every failure in detail. Wall times
appear only in the ``Wall time`` line and the ``Wall time (s)`` column.
"""

from __future__ import annotations

import re

from agentrig.harness.reporting.base import (
    ReportWriter,
    compared_values,
    format_json_excerpt,
    format_seconds,
    last_turn_outcome,
    register_writer,
)
from agentrig.harness.results import Failure, ScenarioResult, SuiteResult

__all__ = ["MarkdownWriter", "markdown_code", "markdown_text"]

_TABLE_HEADER = (
    "| Scenario | Tags | Turns | Steps | Last turn (status / stop reason) | Result "
    "| Wall time (s) |\n"
    "| --- | --- | ---: | ---: | --- | :---: | ---: |"
)
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
    if result.passed:
        title = f"## agentrig: ✅ all {result.total} scenarios passed"
    else:
        title = f"## agentrig: ❌ {result.failed_count} of {result.total} scenarios failed"
    counts = f"**{result.passed_count}** passed, **{result.failed_count}** failed"
    return f"{title}\n\n{counts} · Wall time: {format_seconds(result.wall_time_s)} s"


def _table(result: SuiteResult) -> str:
    if not result.scenarios:
        return "_No scenarios ran._"
    return "\n".join([_TABLE_HEADER, *(_row(scenario) for scenario in result.scenarios)])


def _row(scenario: ScenarioResult) -> str:
    cells = [
        markdown_text(scenario.name),
        markdown_text(", ".join(scenario.tags)),
        str(len(scenario.turns)),
        str(scenario.total_steps),
        markdown_text(last_turn_outcome(scenario)),
        "✅" if scenario.passed else "❌",
        format_seconds(scenario.wall_time_s),
    ]
    return "| " + " | ".join(cells) + " |"


def _failure_block(scenario: ScenarioResult) -> str:
    heading = f"#### ❌ {markdown_text(scenario.name)} ({markdown_code(scenario.location)})"
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
