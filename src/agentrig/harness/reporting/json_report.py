"""The JSON report: ``SuiteResult.to_dict()`` with sorted keys, readable by ``from_dict``.

Wall times appear only under ``wall_time_s`` keys (the suite's and each scenario's).
"""

from __future__ import annotations

from agentrig.harness.reporting.base import ReportWriter, format_json, register_writer
from agentrig.harness.results import SuiteResult

__all__ = ["JsonWriter"]


@register_writer
class JsonWriter(ReportWriter):
    """Writes ``report.json``; ``SuiteResult.from_dict(json.loads(text))`` restores the result."""

    name = "json"
    filename = "report.json"

    def render(self, result: SuiteResult) -> str:
        """The indented JSON document."""
        return format_json(result.to_dict(), indent=2) + "\n"
