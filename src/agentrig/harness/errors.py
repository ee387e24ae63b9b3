"""Errors raised by the harness.

They all derive from the package root, :class:`agentrig.errors.AgentrigError`::

    AgentrigError
    └── ScenarioFileError      a scenario file that cannot be read or is invalid
                               (one per problem in ``errors``; ``str()`` lists them all)
"""

from __future__ import annotations

from collections.abc import Sequence

from agentrig.errors import AgentrigError

__all__ = ["ScenarioFileError"]


class ScenarioFileError(AgentrigError):
    """A scenario file could not be read, parsed or validated.

    ``str()`` reads like a compiler message, one problem per line::

        scenarios/weather.scenario.yaml:14:9: turns[0].expect.status: 'complete' is not one
        of: completed, stopped, failed

    Attributes describe the first problem: ``path``, ``line`` and ``column`` (1-based, ``None``
    when unknown), ``field`` (a dotted path such as ``turns[0].expect.status``, ``""`` for the
    whole file), ``reason``, and ``valid`` (the accepted values or keys, when there are few).
    ``errors`` holds every problem found, each a ``ScenarioFileError`` itself, so a file can be
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
        errors: Sequence[ScenarioFileError] = (),
    ) -> None:
        self.path = path
        self.reason = reason
        self.line = line
        self.column = column
        self.field = field
        self.valid = tuple(valid)
        self.errors: tuple[ScenarioFileError, ...] = tuple(errors) or (self,)
        super().__init__(path, reason)

    @classmethod
    def combine(cls, problems: Sequence[ScenarioFileError]) -> ScenarioFileError:
        """One error carrying every problem; its own attributes are those of the first."""
        if not problems:
            raise ValueError("combine() needs at least one problem")
        if len(problems) == 1:
            return problems[0]
        first = problems[0]
        return cls(
            first.path,
            first.reason,
            line=first.line,
            column=first.column,
            field=first.field,
            valid=first.valid,
            errors=problems,
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
