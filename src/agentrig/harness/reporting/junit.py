"""JUnit XML for CI systems: one ``<testsuite>``, one ``<testcase>`` per scenario.

Wall times appear only in ``time`` attributes. Every failure of a scenario is listed in the
text of its single ``<failure>`` element, whose ``type`` is the first failure's kind; a scenario
whose first failure is an ``error`` (the agent could not be built, the loop raised) gets an
``<error>`` element instead, as CI systems count crashes apart from failed checks.

A live scenario is one ``<testcase>`` too. A FAIL verdict is a ``<failure>``, and so is an
INCONCLUSIVE one (its message starts with ``INCONCLUSIVE``): a ``<skipped>`` would let CI
dashboards show an undecided requirement as green, and ``<error>`` stays for crashes. Its
statistics are the testcase's ``<properties>`` (``live.verdict``, ``live.rate``,
``live.exact.low``, ``live.cost.total``, ... as pytest writes ``record_property``; a value that
is unknown, such as the cost per success without a success, is left out), its failure text
adds them in words, and ``<system-out>`` lists every trial, then the transcripts of the first
failed or set-aside ones.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from agentrig.harness.live_results import LiveResult
from agentrig.harness.reporting.base import (
    ReportWriter,
    compared_values,
    format_json,
    format_seconds,
    register_writer,
)
from agentrig.harness.reporting.live import (
    SHOWN_TRANSCRIPT_LINES,
    SHOWN_TRANSCRIPTS,
    by_role,
    live_lines,
    shown_trials,
    trial_label,
    trial_text,
)
from agentrig.harness.results import Failure, ScenarioResult, SuiteResult

__all__ = ["JUnitWriter", "classname_for"]

_SCENARIO_SUFFIXES = (".scenario.yaml", ".scenario.yml")
# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@register_writer
class JUnitWriter(ReportWriter):
    """Writes ``junit.xml``."""

    name = "junit"
    filename = "junit.xml"

    def render(self, result: SuiteResult) -> str:
        """The JUnit XML document."""
        suite = ET.Element("testsuite", _suite_attributes(result))
        suite.extend(_testcase(scenario) for scenario in result.scenarios)
        ET.indent(suite)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, "unicode") + "\n"


def classname_for(file: str) -> str:
    """``scenarios/weather.scenario.yaml`` -> ``scenarios.weather``; a leading ``/``, ``.`` and
    ``..`` parts are dropped (CI systems split the class name on dots)."""
    path = file.replace("\\", "/")
    for suffix in _SCENARIO_SUFFIXES:
        path = path.removesuffix(suffix)
    return ".".join(part for part in path.split("/") if part not in ("", ".", ".."))


def _xml_text(text: str) -> str:
    """``text`` with characters XML cannot hold shown as ``\\xNN`` escapes."""
    return _NOT_XML.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def _suite_attributes(result: SuiteResult) -> dict[str, str]:
    return {
        "name": "agentrig",
        "tests": str(result.total),
        "failures": str(sum(_outcome(s) == "failure" for s in result.scenarios)),
        "errors": str(sum(_outcome(s) == "error" for s in result.scenarios)),
        "skipped": "0",
        "time": format_seconds(result.wall_time_s),
    }


def _testcase(scenario: ScenarioResult) -> ET.Element:
    attributes = {
        "classname": _xml_text(classname_for(scenario.file)),
        "name": _xml_text(scenario.title),
    }
    attributes["file"] = _xml_text(scenario.file)
    if scenario.line is not None:
        attributes["line"] = str(scenario.line)
    attributes["time"] = format_seconds(scenario.wall_time_s)
    case = ET.Element("testcase", attributes)
    if scenario.live is not None:
        case.append(_properties(scenario.live))
    outcome = _outcome(scenario)
    if outcome is not None:
        first = scenario.failures[0]
        failure = ET.SubElement(
            case, outcome, {"message": _xml_text(first.message), "type": first.kind}
        )
        failure.text = _xml_text(_failure_text(scenario))
    if scenario.live is not None:
        ET.SubElement(case, "system-out").text = _xml_text(_trials_text(scenario.live))
    return case


def _outcome(scenario: ScenarioResult) -> str | None:
    """The element a failed scenario gets: ``error`` for a crash, else ``failure``."""
    if not scenario.failures:
        return None
    return "error" if scenario.failures[0].kind == "error" else "failure"


def _failure_text(scenario: ScenarioResult) -> str:
    header = f"{scenario.title} ({scenario.location}): {len(scenario.failures)} failure(s)"
    lines = [header, *(_describe(n, f) for n, f in enumerate(scenario.failures, 1))]
    if scenario.live is not None:
        lines += ["", *live_lines(scenario.live)[1:]]  # the verdict is the failure's message
    return "\n".join(lines)


def _describe(number: int, failure: Failure) -> str:
    where = failure.where()
    lines = [f"{number}. [{failure.kind}]{' ' + where if where else ''}: {failure.message}"]
    if failure.invariant:
        lines.append(f"   invariant: {failure.invariant}")
    if failure.field:
        lines.append(f"   field: {failure.field}")
    lines += compared_values(failure, "   ", format_json)  # whole values
    return "\n".join(lines)


def _properties(live: LiveResult) -> ET.Element:
    properties = ET.Element("properties")
    for name, value in _live_properties(live):
        if value is not None:
            ET.SubElement(properties, "property", {"name": name, "value": _xml_text(str(value))})
    return properties


def _live_properties(live: LiveResult) -> Iterator[tuple[str, object]]:
    """Every statistic of ``live`` as ``(name, value)``; None for what is unknown. Numbers are
    written in full (``repr``), for the tools that read them."""
    yield from [
        ("live.verdict", live.verdict),
        ("live.reason", live.reason),
        ("live.partial", live.partial),
        ("live.requirement.metric", live.metric),
        ("live.requirement.at_least", live.at_least),
        ("live.requirement.confidence", live.confidence),
        ("live.requirement.threshold", live.threshold),
        ("live.decided_by", live.decided_by),
        ("live.trials", live.trials),
        ("live.successes", live.successes),
        ("live.rate", live.rate),
        ("live.wilson.low", live.wilson[0]),
        ("live.wilson.high", live.wilson[1]),
        ("live.exact.low", live.exact[0]),
        ("live.exact.high", live.exact[1]),
    ]
    for metric in live.metrics:
        yield f"live.metrics.{metric.metric}.value", metric.value
        yield f"live.metrics.{metric.metric}.low", metric.low
        yield f"live.metrics.{metric.metric}.high", metric.high
    for role in ("agent", "user", "judge", "total", "per_success"):
        yield f"live.cost.{role}", getattr(live.cost, role)
    yield "live.set_aside", sum(live.set_aside.values())
    for why, count in sorted(live.set_aside.items()):
        yield f"live.set_aside.{why}", count
    yield "live.discarded", live.discarded
    for role, calls in by_role(live.model_calls):
        yield f"live.model_calls.{role}", calls
    yield "live.replayed_trials", live.replayed_trials


def _trials_text(live: LiveResult) -> str:
    """Every trial in one line, then the transcripts of the first failed or set-aside ones."""
    lines = [f"{len(live.records)} trial(s) run:", *(trial_text(r) for r in live.records)]
    shown = [record for record in shown_trials(live) if record.transcript]
    for record in shown[:SHOWN_TRANSCRIPTS]:
        lines += ["", f"--- {trial_label(record)}: {record.status.replace('_', ' ')} ---"]
        lines += record.transcript[:SHOWN_TRANSCRIPT_LINES]
        hidden = len(record.transcript) - SHOWN_TRANSCRIPT_LINES
        if hidden > 0:
            lines.append(f"... ({hidden} more lines in the JSON and HTML reports)")
    if len(shown) > SHOWN_TRANSCRIPTS:
        lines += [
            "",
            f"{len(shown) - SHOWN_TRANSCRIPTS} more transcript(s) in the JSON and HTML reports",
        ]
    return "\n".join(lines)
