"""Errors of the harness as a whole: invalid files, invariants, plugins and suites.

Where they sit in agentrig's one error tree is drawn in :mod:`agentrig.errors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from agentrig.errors import AgentrigError

__all__ = [
    "DataFileError",
    "InvariantError",
    "PluginError",
    "ScenarioFileError",
    "ShardMergeError",
    "SuiteError",
]


class DataFileError(AgentrigError):
    """A file the harness reads (a scenario, a cassette) could not be read, parsed or validated.

    ``str()`` reads like a compiler message, one problem per line::

        scenarios/weather.scenario.yaml:14:9: turns[0].expect.status: 'complete' is not one
        of: completed, stopped, failed

    Attributes describe the first problem: ``path``, ``line`` and ``column`` (1-based, ``None``
    when unknown), ``field`` (a dotted path such as ``turns[0].expect.status``, ``""`` for the
    whole file), ``reason``, and ``valid`` (the accepted values or keys, when there are few).
    ``errors`` holds every problem found, each an error of the same class, so a file can be
    fixed in one pass.
    """

    def __init__(
        self,
        path: str,
        reason: str,
        *,
        line: int | None = None,
        column: int | None = None,
        field: str = "",
        valid: Sequence[str] = (),
        errors: Sequence[Self] = (),
    ) -> None:
        self.path = path
        self.reason = reason
        self.line = line
        self.column = column
        self.field = field
        self.valid = tuple(valid)
        self.errors: tuple[Self, ...] = tuple(errors) or (self,)
        super().__init__(path, reason)

    @classmethod
    def combine(cls, problems: Sequence[Self]) -> Self:
        """One error carrying every problem; its own attributes are those of the first."""
        if not problems:
            raise ValueError("combine() needs at least one problem")
        if len(problems) == 1:
            return problems[0]
        return cls._like(problems[0], problems)

    @classmethod
    def of(cls, error: DataFileError) -> Self:
        """The same problems as ``error``, as this class (a cassette file read as YAML, say)."""
        if len(error.errors) == 1:
            return cls._like(error, ())
        return cls._like(error, [cls.of(problem) for problem in error.errors])

    @classmethod
    def _like(cls, first: DataFileError, errors: Sequence[Self]) -> Self:
        return cls(
            first.path,
            first.reason,
            line=first.line,
            column=first.column,
            field=first.field,
            valid=first.valid,
            errors=errors,
        )

    @property
    def location(self) -> str:
        """``path:line:column``, shortened when the line or column is unknown."""
        parts = [self.path, self.line, self.column if self.line is not None else None]
        return ":".join(str(part) for part in parts if part is not None)

    def describe(self) -> str:
        """This problem alone, as one line."""
        field = f"{self.field}: " if self.field else ""
        return f"{self.location}: {field}{self.reason}"

    def __str__(self) -> str:
        return "\n".join(problem.describe() for problem in self.errors)


class ScenarioFileError(DataFileError):
    """A scenario file (or any YAML the scenario reader reads) could not be read, parsed or
    validated."""


class InvariantError(AgentrigError):
    """An invariant could not be registered (its name is taken) or selected (no invariant has
    that name), or an ``InvariantChecker`` was used out of order."""


class PluginError(AgentrigError):
    """A plugin module could not be imported, in this process or in a worker; the message names
    the module and, when its own code failed, the file and line."""


class SuiteError(AgentrigError):
    """A suite cannot run as asked (parallel runs need scenarios loaded from files)."""


class ShardMergeError(AgentrigError):
    """The report folders given to ``agentrig merge`` are not the shards of one run: a folder
    without a shard's files, shards of different suites or splits, a shard missing or given
    twice. The message names the folders and shards involved."""
