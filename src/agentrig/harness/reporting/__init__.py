"""Report writers for harness results: JUnit XML, JSON, Markdown and self-contained HTML.

Writers are small ``ReportWriter`` subclasses kept in a name registry; ``write_reports``
writes every registered report into a directory::

    from agentrig.harness.reporting import write_reports
    write_reports(result, "reports/")  # junit.xml, report.json, report.md, report.html

Rendering is deterministic; wall times are the only run-dependent values, and
``normalized(result)`` sets them all to zero.
"""

from agentrig.harness.reporting.base import (
    ReportWriter,
    UnknownWriterError,
    get_writer,
    register_writer,
    unregister_writer,
    write_reports,
    writer_names,
)
from agentrig.harness.reporting.html import HtmlWriter
from agentrig.harness.reporting.json_report import JsonWriter
from agentrig.harness.reporting.junit import JUnitWriter
from agentrig.harness.reporting.markdown import MarkdownWriter
from agentrig.harness.results import normalized

__all__ = [
    "HtmlWriter",
    "JUnitWriter",
    "JsonWriter",
    "MarkdownWriter",
    "ReportWriter",
    "UnknownWriterError",
    "get_writer",
    "normalized",
    "register_writer",
    "unregister_writer",
    "write_reports",
    "writer_names",
]
