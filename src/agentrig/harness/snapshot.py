"""Snapshots of transcripts and states in a readable, diffable, versioned text form.

:func:`to_snapshot_text` renders an ``AgentState``, a ``ScenarioResult`` (its transcript and
outcome), a ``SuiteResult`` or a sequence of ``TranscriptEntry`` as text: a header line naming
the format and its version, then one line per message, step, tool call or transcript entry, in
a stable order. Under the harness the clock is fake and ids are seeded, so the text is the same
on every run and machine; nothing needs masking.

:class:`AgentrigSnapshotExtension` is a syrupy extension storing that text, one file per
snapshot; the pytest plugin's ``agentrig_snapshot`` fixture uses it::

    def test_weather(agentrig_harness, agentrig_snapshot):
        result = agentrig_harness.run("scenarios/tools/weather-two-cities.scenario.yaml")
        assert result == agentrig_snapshot
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from itertools import groupby
from typing import Any

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.types import PropertyFilter, PropertyMatcher, SerializableData, SerializedData

from agentrig import AgentState, AgentStep, Message, Role, ToolExecution
from agentrig.errors import InvalidInputError
from agentrig.harness.results import ScenarioResult, SuiteResult, TranscriptEntry, TurnResult

__all__ = [
    "SNAPSHOT_FORMAT_VERSION",
    "AgentrigSnapshotExtension",
    "state_to_text",
    "to_snapshot_text",
    "transcript_to_text",
]

SNAPSHOT_FORMAT_VERSION = 2
"""Version of the text form; bumped when the rendering changes (snapshots must be updated).
Version 2 tells the scenario's verdict (``verdict PASS``) from the agent's end state
(``agent status failed``)."""

_ID_LENGTH = 8


def to_snapshot_text(data: object) -> str:
    """``data`` (a state, a scenario or suite result, transcript entries, or text) as snapshot text."""
    if isinstance(data, str):
        return data if data.endswith("\n") else data + "\n"
    if isinstance(data, AgentState):
        return state_to_text(data)
    if isinstance(data, ScenarioResult | SuiteResult):
        return transcript_to_text(data)
    if isinstance(data, Sequence) and all(isinstance(item, TranscriptEntry) for item in data):
        return transcript_to_text(data)
    kinds = "AgentState, ScenarioResult, SuiteResult, a sequence of TranscriptEntry, or str"
    raise InvalidInputError("snapshot data", [("", f"expected {kinds}, got {type(data).__name__}")])


# --- transcripts ------------------------------------------------------------------------------


def transcript_to_text(source: ScenarioResult | SuiteResult | Sequence[TranscriptEntry]) -> str:
    """A transcript: one line per entry, each turn closed by its outcome, then the failures."""
    lines = [f"# agentrig transcript v{SNAPSHOT_FORMAT_VERSION}"]
    if isinstance(source, SuiteResult):
        for scenario in source.scenarios:
            lines.extend(_scenario_lines(scenario))
    elif isinstance(source, ScenarioResult):
        lines.extend(_scenario_lines(source))
    else:
        lines.extend(_entry_line(entry) for entry in source)
    return "\n".join(lines) + "\n"


def _scenario_lines(result: ScenarioResult) -> list[str]:
    lines = [f"scenario {result.name} | verdict {result.verdict}"]
    outcomes = {turn.index: turn for turn in result.turns}
    for number, entries in groupby(result.transcript, key=lambda entry: entry.turn):
        lines.extend(_entry_line(entry) for entry in entries)
        if number in outcomes:
            lines.append(_outcome_line(outcomes.pop(number)))
    lines.extend(_outcome_line(turn) for turn in outcomes.values())
    for failure in result.failures:
        where = f" | {failure.where()}" if failure.where() else ""
        lines.append(f"failure | {failure.kind}{where} | {_quote(failure.message)}")
    return lines


def _outcome_line(turn: TurnResult) -> str:
    return (
        f"turn {turn.index} | agent ended | status {turn.status} | stop {turn.stop_reason} | "
        f"steps {turn.steps} | tokens {turn.usage.get('total', 0)} | cost {turn.cost!r}"
    )


def _entry_line(entry: TranscriptEntry) -> str:
    parts = [f"turn {entry.turn}" + (f" step {entry.step}" if entry.step is not None else "")]
    parts.append(entry.kind)
    if entry.kind == "tool_call":
        parts.append(f"{entry.name} {_json(entry.args or {})}")
    else:
        if entry.name:
            parts.append(entry.name)
        parts.append(_quote(entry.text))
    if entry.is_error:
        parts.append("error")
    if entry.section:
        parts.append(f"in {entry.section}")
    return " | ".join(parts)


# --- states -----------------------------------------------------------------------------------


def state_to_text(state: AgentState) -> str:
    """An agent state: identity, execution, every section's messages, steps and tool calls, and
    the stop signals. Times are seconds since the execution (or the state) started."""
    if not isinstance(state, AgentState):
        raise InvalidInputError(
            "state", [("", f"expected an AgentState, got {type(state).__name__}")]
        )
    origin = state.execution.started_at if state.execution is not None else state.created_at
    steps = _steps(state)
    numbers = {step.id: number for number, step in enumerate(steps, start=1)}
    lines = [f"# agentrig state v{SNAPSHOT_FORMAT_VERSION}", _agent_line(state)]
    lines.extend(_execution_lines(state, origin))
    for section in state.store().sections:
        lines.append(f"section {section.name} | {len(section.messages)} message(s)")
        lines.extend(_message_line(m, numbers, origin) for m in section.messages)
    for number, step in enumerate(steps, start=1):
        lines.append(_step_line(state, number, step, origin))
        lines.extend(
            _call_line(number, index, e, origin) for index, e in enumerate(step.tool_executions, 1)
        )
    lines.extend(_signal_lines(state))
    return "\n".join(lines) + "\n"


def _steps(state: AgentState) -> tuple[AgentStep, ...]:
    current = state.current_step()
    return state.steps() + ((current,) if current is not None else ())


def _agent_line(state: AgentState) -> str:
    parent = f" | parent {_short(state.parent_agent_id)}" if state.parent_agent_id else ""
    prompt = f" | system {_quote(state.system_prompt())}" if state.system_prompt() else ""
    return f"agent {_short(state.agent_id)} | executions {state.execution_count}{parent}{prompt}"


def _execution_lines(state: AgentState, origin: datetime) -> list[str]:
    execution = state.execution
    if execution is None:
        return ["execution none"]
    usage = state.usage()
    signal = state.stop_signal()
    stop = f"stop {signal.reason.value}" if signal is not None else "no stop"
    ended = f" | ended {_at(execution.completed_at, origin)}" if execution.completed_at else ""
    return [
        f"execution {_short(execution.execution_id)} | {state.status()} | {stop} | "
        f"steps {state.step_count()} | tokens {usage.total()} | cost {usage.cost!r}{ended}",
        *(f"error | {_quote(str(error))}" for error in execution.errors),
    ]


def _message_line(message: Message, steps: dict[str, int], origin: datetime) -> str:
    parts = [f"  {message.role.value}"]
    step_id = message.metadata.get("step_id")
    if isinstance(step_id, str):
        parts.append(f"step {steps.get(step_id, '?')}")
    if message.is_trace:
        parts.append("trace")
    if message.tool_result is not None:
        result = message.tool_result
        flag = " error" if result.is_error else ""
        parts.append(f"result of {result.tool_name} #{_short(result.call_id)}{flag}")
    for call in message.tool_calls:
        parts.append(f"call {call.name} #{_short(call.id)} {_json(call.arguments)}")
    if message.content or message.role is not Role.TOOL:
        parts.append(_quote(message.content))
    return " | ".join(parts)


def _step_line(state: AgentState, number: int, step: AgentStep, origin: datetime) -> str:
    usage = step.usage()
    record = next((r for r in state.step_executions() if r.id == step.id), None)
    timing = (
        f" | {_at(record.started_at, origin)}..{_at(record.completed_at, origin)}"
        if record is not None
        else " | in progress"
    )
    finish = step.finish_reason()
    errors = "".join(f" | error {_quote(str(error))}" for error in step.errors)
    return (
        f"step {number} | {step.step_type().value}{timing} | tokens {usage.input_tokens}+"
        f"{usage.output_tokens} | cost {usage.cost!r} | finish {finish.value if finish else None}"
        f"{errors}"
    )


def _call_line(step: int, index: int, execution: ToolExecution, origin: datetime) -> str:
    call = execution.tool_call
    if execution.blocked:
        outcome = "blocked"
    elif execution.stopped:
        outcome = "stopped"
    else:
        outcome = "error" if execution.has_error else "ok"
    timing = f"{_at(execution.started_at, origin)}..{_at(execution.completed_at, origin)}"
    return (
        f"  call {step}.{index} | {call.name} #{_short(call.id)} {_json(call.arguments)} | "
        f"{outcome} | {timing} | {_quote(execution.content)}"
    )


def _signal_lines(state: AgentState) -> list[str]:
    continuation = state.continuation()
    lines = [
        f"signal | {s.reason.value} | {s.source or '-'} | {_quote(s.message)}"
        for s in continuation.stop_signals
    ]
    if continuation.is_continuation_requested:
        lines.append("continuation requested")
    return lines


# --- formatting -------------------------------------------------------------------------------


def _quote(text: str) -> str:
    """Text on one line: JSON string syntax, non-ASCII kept."""
    return _one_line(json.dumps(text, ensure_ascii=False))


def _json(value: Any) -> str:
    return _one_line(json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": ")))


_LINE_BREAKS_AND_SURROGATES = re.compile("[\x85\u2028\u2029\ud800-\udfff]")


def _one_line(text: str) -> str:
    """JSON text with what JSON leaves raw but a line split (``str.splitlines``) or UTF-8 would
    not take (NEL, the Unicode line and paragraph separators, lone surrogates) as ``\\u`` escapes."""
    return _LINE_BREAKS_AND_SURROGATES.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _short(identifier: str) -> str:
    return identifier[:_ID_LENGTH]


def _at(moment: datetime, origin: datetime) -> str:
    # every microsecond (timedelta's resolution), trailing zeros dropped: 1.5 -> "+1.5s"
    seconds = f"{(moment - origin).total_seconds():.6f}".rstrip("0").rstrip(".")
    return f"+{seconds}s"


# --- the syrupy extension ---------------------------------------------------------------------


class AgentrigSnapshotExtension(SingleFileSnapshotExtension):
    """Stores :func:`to_snapshot_text` output, one ``.agentrig.txt`` file per snapshot."""

    _write_mode = WriteMode.TEXT
    file_extension = "agentrig.txt"

    def serialize(
        self,
        data: SerializableData,
        *,
        exclude: PropertyFilter | None = None,
        include: PropertyFilter | None = None,
        matcher: PropertyMatcher | None = None,
    ) -> SerializedData:
        """The snapshot text of ``data``. Property filters and matchers are refused: under the
        harness ids and times are deterministic, so nothing needs excluding or replacing."""
        if exclude is not None or include is not None:
            raise InvalidInputError(
                "snapshot options",
                [("", "exclude/include filters do not apply to agentrig text snapshots")],
            )
        if _given_matcher(matcher):
            reason = (
                "matchers do not apply to agentrig text snapshots: run the agent on a FakeClock "
                "with SeededIds so that nothing varies between runs"
            )
            raise InvalidInputError("snapshot options", [("matcher", reason)])
        return to_snapshot_text(data)


def _given_matcher(matcher: PropertyMatcher | None) -> bool:
    """Whether the user gave a matcher. syrupy 7 always passes its own wrapper, which closes
    over the assertion and calls the assertion's ``_matcher`` when one was given."""
    if matcher is None:
        return False
    if getattr(matcher, "__module__", None) != "syrupy.assertion":
        return True
    owners = (cell.cell_contents for cell in getattr(matcher, "__closure__", None) or ())
    return any(getattr(owner, "_matcher", None) is not None for owner in owners)
