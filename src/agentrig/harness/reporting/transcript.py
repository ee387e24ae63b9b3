"""Readable transcripts: a run's turns as a flat list of ``TranscriptEntry`` lines."""

from __future__ import annotations

from agentrig import AgentState, Role
from agentrig.harness.results import EntryKind, TranscriptEntry


def turn_transcript(turn: int, user: str, final: AgentState) -> list[TranscriptEntry]:
    """The user message, every step's assistant text, tool calls and results, and the stop."""
    entries = [TranscriptEntry(turn=turn, step=None, kind="user", role="user", text=user)]
    for number, step in enumerate(final.steps(), start=1):
        for message in step.output_messages:
            if message.role is Role.ASSISTANT:
                if message.content:
                    entries.append(_entry(turn, number, "assistant", message.content, "assistant"))
                for call in message.tool_calls:
                    entries.append(TranscriptEntry.of_tool_call(turn, number, call))
            elif message.tool_result is not None:
                entries.append(TranscriptEntry.of_tool_result(turn, number, message.tool_result))
        for error in step.errors:
            entries.append(
                _entry(turn, number, "event", f"step error: {error}", None, is_error=True)
            )
    for error in final.execution.errors if final.execution else ():
        entries.append(_entry(turn, None, "event", f"error: {error}", None, is_error=True))
    signal = final.stop_signal()
    status = final.status()
    text = f"agent status {status.value if status else 'unknown'}"
    text += f", stop reason {signal}" if signal else ""
    entries.append(_entry(turn, None, "stop", text, None))
    return entries


def _entry(
    turn: int,
    step: int | None,
    kind: EntryKind,
    text: str,
    role: str | None,
    *,
    is_error: bool = False,
) -> TranscriptEntry:
    return TranscriptEntry(turn=turn, step=step, kind=kind, role=role, text=text, is_error=is_error)
