"""The result of a harness run: what the runner fills in and the report writers render.

Everything here is immutable data. Turns and steps are numbered from 1. Wall times
(``wall_time_s``) are the only values that differ between two runs of the same suite;
``normalized`` zeroes them so two runs can be compared byte for byte.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from agentrig._model import problems_of
from agentrig.errors import InvalidInputError
from agentrig.harness.live_results import LiveResult
from agentrig.messages import ToolCall, ToolResult

__all__ = [
    "REPORT_FORMAT",
    "REPORT_VERSION",
    "Failure",
    "InvariantOutcome",
    "ScenarioResult",
    "SuiteResult",
    "TranscriptEntry",
    "TurnResult",
    "normalized",
]

REPORT_FORMAT = "agentrig-report"
"""Value of the top-level ``format`` key written by ``SuiteResult.to_dict``."""

REPORT_VERSION = 1
"""Version of the serialized form; bumped on incompatible changes."""

Ordinal = Annotated[int, Field(ge=1)]
Count = Annotated[int, Field(ge=0)]
Seconds = Annotated[float, Field(ge=0)]

EntryKind = Literal["user", "assistant", "tool_call", "tool_result", "system", "event", "stop"]
FailureKind = Literal["expectation", "invariant", "script", "error", "verdict"]


class _Result(BaseModel):
    # Plain pydantic (no custom __init__) so nested errors keep their full path when parsing.
    model_config = ConfigDict(frozen=True, extra="forbid")


class TranscriptEntry(_Result):
    """One line of a readable transcript; entries before the first user message use turn 1."""

    turn: Ordinal
    step: Ordinal | None
    kind: EntryKind
    role: str | None
    text: str
    name: str | None = None
    args: dict[str, JsonValue] | None = None
    is_error: bool = False
    section: str | None = None

    @classmethod
    def of_tool_call(cls, turn: int, step: int, call: ToolCall) -> TranscriptEntry:
        """The entry of a tool call the model asked for in step ``step``."""
        return cls(
            turn=turn,
            step=step,
            kind="tool_call",
            role="assistant",
            text=str(call),
            name=call.name,
            args=dict(call.arguments),
        )

    @classmethod
    def of_branch(
        cls, turn: int, name: str, number: int, shares: tuple[float, ...]
    ) -> TranscriptEntry:
        """The event naming the ``mixture`` branch turn ``turn`` played: ``name`` (its label,
        or ``branch N``), its 1-based ``number`` among the branches, whose ``shares`` are
        given. The entry's ``name`` is the branch's name."""
        share = shares[number - 1]
        text = f"mixture: plays {name} (branch {number} of {len(shares)}, share {share:.4g})"
        return cls(turn=turn, step=None, kind="event", role=None, text=text, name=name)

    @classmethod
    def of_tool_result(cls, turn: int, step: int, result: ToolResult) -> TranscriptEntry:
        """The entry of a tool's result in step ``step`` (a result with no tool name has none)."""
        return cls(
            turn=turn,
            step=step,
            kind="tool_result",
            role="tool",
            text=result.content,
            name=result.tool_name or None,
            is_error=result.is_error,
        )


class Failure(_Result):
    """Why a scenario failed; ``location`` is ``"file:line"`` of the scenario text involved."""

    kind: FailureKind
    message: str
    turn: Ordinal | None = None
    step: Ordinal | None = None
    field: str | None = None
    expected: JsonValue = None
    observed: JsonValue = None
    invariant: str | None = None
    location: str | None = None

    def where(self) -> str:
        """Where it happened, e.g. ``"turn 1, step 2, at a.scenario.yaml:14"`` (may be empty)."""
        parts = [f"turn {self.turn}" if self.turn else "", f"step {self.step}" if self.step else ""]
        parts.append(f"at {self.location}" if self.location else "")
        return ", ".join(part for part in parts if part)


class InvariantOutcome(_Result):
    """How often a named invariant was checked during a scenario and how often it failed."""

    name: str
    checks: Count
    failures: Count


class TurnResult(_Result):
    """The outcome of one user turn."""

    index: Ordinal
    user: str
    status: str | None
    stop_reason: str | None
    steps: Count
    final_response: str
    usage: dict[str, int]
    cost: float
    branch: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The ``mixture`` branch the turn played: its label, or ``branch N`` (1-based); None (and
    left out of a report) for a turn without a mixture."""


class ScenarioResult(_Result):
    """The outcome of one scenario file entry; ``passed`` is true exactly when nothing failed."""

    name: str
    file: str
    line: Ordinal | None
    tags: tuple[str, ...]
    description: str
    passed: bool
    turns: tuple[TurnResult, ...]
    failures: tuple[Failure, ...]
    invariants: tuple[InvariantOutcome, ...]
    transcript: tuple[TranscriptEntry, ...]
    wall_time_s: Seconds
    live: LiveResult | None = None
    """A live scenario's verdict, its statistics, costs and trials (None for a scenario with
    scripted turns)."""
    session: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The scenario endpoint's session this result is of (one agent among those one server
    served): the name its client sent in ``x-agentrig-trial``, else its API key (a key that
    looks like a real provider's shown in part); None (and left out of the JSON) otherwise."""

    @model_validator(mode="after")
    def _passed_matches_failures(self) -> Self:
        if self.passed == bool(self.failures):
            state = "passed=True with failures" if self.passed else "passed=False without failures"
            raise ValueError(f"{state}: passed must be true exactly when failures is empty")
        return self

    @property
    def status(self) -> Literal["passed", "failed"]:
        """``"passed"`` or ``"failed"``."""
        return "passed" if self.passed else "failed"

    @property
    def inconclusive(self) -> bool:
        """Whether this is a live scenario whose trials did not decide its verdict."""
        return self.live is not None and self.live.verdict == "INCONCLUSIVE"

    @property
    def title(self) -> str:
        """What reports call it: the name, and the endpoint session in brackets when there is
        one (``order-refund [alice]``), so that sessions of one scenario are told apart."""
        return f"{self.name} [{self.session}]" if self.session is not None else self.name

    @property
    def location(self) -> str:
        """``"file:line"``, or just the file when the line is unknown."""
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    @property
    def total_steps(self) -> int:
        """Steps taken over all turns."""
        return sum(turn.steps for turn in self.turns)


class SuiteResult(_Result):
    """The outcome of a run over one or more scenario files."""

    scenarios: tuple[ScenarioResult, ...]
    wall_time_s: Seconds

    @property
    def passed(self) -> bool:
        """True when every scenario passed (also for an empty suite)."""
        return all(scenario.passed for scenario in self.scenarios)

    @property
    def total(self) -> int:
        """Number of scenarios."""
        return len(self.scenarios)

    @property
    def failed_count(self) -> int:
        """Number of scenarios that failed."""
        return sum(not scenario.passed for scenario in self.scenarios)

    @property
    def inconclusive_count(self) -> int:
        """Number of live scenarios whose verdict is INCONCLUSIVE (counted as failed too)."""
        return sum(scenario.inconclusive for scenario in self.scenarios)

    @property
    def passed_count(self) -> int:
        """Number of scenarios that passed."""
        return self.total - self.failed_count

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict with ``format`` and ``version``; ``from_dict`` restores it."""
        data: dict[str, Any] = {"format": REPORT_FORMAT, "version": REPORT_VERSION}
        data.update(self.model_dump(mode="json"))
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Restore a result written by ``to_dict``, validating strictly.

        Raises ``InvalidInputError`` naming every bad field path (``scenarios[0].passed``).
        """
        body = _check_header(data)
        try:
            text = json.dumps(body, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise InvalidInputError("report", [("", f"not JSON-compatible: {error}")]) from None
        try:
            return cls.model_validate_json(text, strict=True)
        except ValidationError as error:
            raise InvalidInputError("report", problems_of(error)) from None


def _check_header(data: Any) -> dict[str, Any]:
    """``data`` without its ``format`` and ``version`` keys, once both are checked."""
    if not isinstance(data, dict):
        raise InvalidInputError("report", [("", f"expected a dict, got {type(data).__name__}")])
    body = dict(data)
    found_format, version = body.pop("format", None), body.pop("version", None)
    if found_format != REPORT_FORMAT:
        reason = f"expected {REPORT_FORMAT!r}, got {found_format!r} (is this an agentrig report?)"
        raise InvalidInputError("report", [("format", reason)])
    if version != REPORT_VERSION or isinstance(version, bool):
        reason = f"unsupported version {version!r}; this agentrig reads version {REPORT_VERSION}"
        raise InvalidInputError("report", [("version", reason)])
    return body


def normalized(result: SuiteResult) -> SuiteResult:
    """``result`` with every wall time set to 0, the only run-dependent data in a report."""
    scenarios = tuple(s.model_copy(update={"wall_time_s": 0.0}) for s in result.scenarios)
    return result.model_copy(update={"wall_time_s": 0.0, "scenarios": scenarios})
