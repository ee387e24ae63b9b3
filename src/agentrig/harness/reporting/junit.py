"""JUnit XML for CI systems: one ``<testsuite>``, one ``<testcase>`` per scenario.

Wall times appear only in ``time`` attributes. Every failure of a scenario is listed in the
text of its single ``<failure>`` element, whose ``type`` is the first failure's kind; a scenario
whose first failure is an ``error`` (the agent could not be built, the loop raised) gets an
``<error>`` element instead, as CI systems count crashes apart from failed checks.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from agentrig.harness.reporting.base import (
    ReportWriter,
    compared_values,
    format_json,
    format_seconds,
    register_writer,
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
        "name": _xml_text(scenario.name),
    }
    attributes["file"] = _xml_text(scenario.file)
    if scenario.line is not None:
        attributes["line"] = str(scenario.line)
    attributes["time"] = format_seconds(scenario.wall_time_s)
    case = ET.Element("testcase", attributes)
    outcome = _outcome(scenario)
    if outcome is not None:
        first = scenario.failures[0]
        failure = ET.SubElement(
            case, outcome, {"message": _xml_text(first.message), "type": first.kind}
        )
        failure.text = _xml_text(_failure_text(scenario))
    return case


def _outcome(scenario: ScenarioResult) -> str | None:
    """The element a failed scenario gets: ``error`` for a crash, else ``failure``."""
    if not scenario.failures:
        return None
    return "error" if scenario.failures[0].kind == "error" else "failure"


def _failure_text(scenario: ScenarioResult) -> str:
    header = f"{scenario.name} ({scenario.location}): {len(scenario.failures)} failure(s)"
    return "\n".join([header, *(_describe(n, f) for n, f in enumerate(scenario.failures, 1))])


def _describe(number: int, failure: Failure) -> str:
    where = failure.where()
    lines = [f"{number}. [{failure.kind}]{' ' + where if where else ''}: {failure.message}"]
    if failure.invariant:
        lines.append(f"   invariant: {failure.invariant}")
    if failure.field:
        lines.append(f"   field: {failure.field}")
    lines += compared_values(failure, "   ", format_json)  # whole values
    return "\n".join(lines)
