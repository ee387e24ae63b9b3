"""The ``ReportWriter`` role, the name registry, and helpers shared by the built-in writers.

A writer turns a ``SuiteResult`` into the text of one file. Rendering is deterministic: the
same result always gives the same text, and only wall times (``wall_time_s``) may differ
between two runs of the same suite.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import ClassVar, TypeVar

from pydantic import JsonValue

from agentrig.errors import AgentrigError, ConfigurationError
from agentrig.harness.reporting.indented_json import dumps_indented
from agentrig.harness.results import Failure, ScenarioResult, SuiteResult, TurnResult

__all__ = [
    "ReportWriter",
    "UnknownWriterError",
    "compared_values",
    "format_json",
    "format_seconds",
    "get_writer",
    "last_turn_outcome",
    "outcome_counts",
    "register_writer",
    "status_explained",
    "unregister_writer",
    "write_reports",
    "writer_names",
]

W = TypeVar("W", bound="ReportWriter")


class UnknownWriterError(AgentrigError, LookupError):
    """No report writer is registered under ``name``; ``valid`` lists the names that are."""

    def __init__(self, name: str, valid: tuple[str, ...]) -> None:
        self.name = name
        self.valid = valid
        names = ", ".join(valid) or "(none)"
        super().__init__(f"unknown report writer {name!r}; valid names: {names}")


class ReportWriter(ABC):
    """Renders a suite result as the text of one report file.

    Subclasses set ``name`` (the registry key) and ``filename`` (a bare file name) and
    implement ``render``; register them with ``register_writer``.
    """

    name: ClassVar[str]
    filename: ClassVar[str]

    @abstractmethod
    def render(self, result: SuiteResult) -> str:
        """The report text; byte-identical for equal results."""

    def write(self, result: SuiteResult, directory: Path) -> Path:
        """Write ``render(result)`` as UTF-8 to ``directory / filename`` and return the path."""
        path = directory / self.filename
        # A lone surrogate (YAML reads "\\ud800" as one) is written as that escape, not a crash.
        path.write_bytes(self.render(result).encode("utf-8", "backslashreplace"))
        return path


_REGISTRY: dict[str, type[ReportWriter]] = {}


def register_writer(writer: type[W], *, replace: bool = False) -> type[W]:
    """Register a writer class under its ``name``; usable as a class decorator."""
    name = _check_writer_class(writer)
    existing = _REGISTRY.get(name)
    if existing is not None and existing is not writer and not replace:
        raise ConfigurationError(
            f"report writer {name!r} is already registered by {existing.__name__}; "
            "choose another name or pass replace=True"
        )
    _REGISTRY[name] = writer
    return writer


def _check_writer_class(writer: type[ReportWriter]) -> str:
    name, filename = getattr(writer, "name", ""), getattr(writer, "filename", "")
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(f"{writer.__name__} needs a non-empty class attribute 'name'")
    if not isinstance(filename, str) or not filename or Path(filename).name != filename:
        raise ConfigurationError(
            f"{writer.__name__}.filename must be a bare file name like 'report.txt', "
            f"got {filename!r}"
        )
    return name


def unregister_writer(name: str) -> None:
    """Remove the writer registered under ``name``."""
    if name not in _REGISTRY:
        raise UnknownWriterError(name, writer_names())
    del _REGISTRY[name]


def writer_names() -> tuple[str, ...]:
    """Names of the registered writers, sorted."""
    return tuple(sorted(_REGISTRY))


def get_writer(name: str) -> ReportWriter:
    """A new instance of the writer registered under ``name``."""
    writer = _REGISTRY.get(name)
    if writer is None:
        raise UnknownWriterError(name, writer_names())
    return writer()


def write_reports(
    result: SuiteResult, directory: str | Path, names: Iterable[str] | None = None
) -> list[Path]:
    """Write the named reports (default: every registered writer) into ``directory``.

    The directory is created if needed. Every name is checked before anything is written.
    """
    writers = [
        get_writer(name) for name in dict.fromkeys(writer_names() if names is None else names)
    ]
    _check_unique_filenames(writers)
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    return [writer.write(result, target) for writer in writers]


def _check_unique_filenames(writers: list[ReportWriter]) -> None:
    seen: dict[str, str] = {}
    for writer in writers:
        if writer.filename in seen:
            raise ConfigurationError(
                f"report writers {seen[writer.filename]!r} and {writer.name!r} both write "
                f"{writer.filename!r}; select only one of them"
            )
        seen[writer.filename] = writer.name


def format_json(value: JsonValue, *, indent: int | None = None) -> str:
    """``value`` as JSON with sorted keys, so equal values always render the same."""
    if indent is None:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return dumps_indented(value, indent)


SHOWN_CHARACTERS = 2000
"""How much of an expected or observed value a terminal or a Markdown summary shows."""


def format_json_excerpt(value: JsonValue, *, limit: int = SHOWN_CHARACTERS) -> str:
    """``format_json(value)``, cut after ``limit`` characters with a note of how much is left
    out (the JSON report keeps every value whole)."""
    text = format_json(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def compared_values(
    failure: Failure, prefix: str, render: Callable[[JsonValue], str] = format_json_excerpt
) -> list[str]:
    """The ``expected:`` and ``observed:`` lines of a failure that compared two values, each
    value rendered by ``render`` after ``prefix``; none for a failure that compared nothing."""
    if failure.expected is None and failure.observed is None:
        return []
    return [
        f"{prefix}expected: {render(failure.expected)}",
        f"{prefix}observed: {render(failure.observed)}",
    ]


def outcome_counts(result: SuiteResult) -> list[tuple[int, str]]:
    """``[(passed, "passed"), (failed, "failed")]``, then ``(n, "inconclusive")`` when some live
    verdicts are INCONCLUSIVE, which are then not counted as failed."""
    inconclusive = result.inconclusive_count
    counts = [(result.passed_count, "passed"), (result.failed_count - inconclusive, "failed")]
    return counts + ([(inconclusive, "inconclusive")] if inconclusive else [])


def format_seconds(seconds: float) -> str:
    """A wall time with millisecond precision: ``"1.234"``."""
    return f"{seconds:.3f}"


def last_turn_outcome(scenario: ScenarioResult) -> str:
    """``"status / stop_reason"`` of the agent's last turn (``"-"`` for what is unknown), a
    failed status with why: ``"failed (1 tool error) / completed"``."""
    if not scenario.turns:
        return "-"
    last = scenario.turns[-1]
    return f"{status_explained(scenario, last)} / {last.stop_reason or '-'}"


def status_explained(scenario: ScenarioResult, turn: TurnResult) -> str:
    """The status the agent ended a turn in, with why when it failed: ``"failed (1 tool
    error)"``. It is the agent's end state, not the scenario's verdict: a scenario that expects
    a failed agent passes (reports label the two apart: ``PASS ... agent status: failed``).

    The status rule stays the runtime's (any recorded error fails the execution, even one the
    model recovered from); this says which errors the turn's transcript shows.
    """
    status = turn.status or "-"
    if status != "failed":
        return status
    entries = [entry for entry in scenario.transcript if entry.turn == turn.index]
    tool_errors = sum(1 for e in entries if e.is_error and e.kind == "tool_result")
    other_errors = sum(1 for e in entries if e.is_error and e.kind != "tool_result")
    reasons = [
        _counted(tool_errors, "tool error"),
        _counted(other_errors, "error"),
    ]
    shown = [reason for reason in reasons if reason]
    return f"failed ({', '.join(shown)})" if shown else status


def _counted(count: int, noun: str) -> str:
    return "" if count == 0 else f"{count} {noun}" + ("" if count == 1 else "s")
