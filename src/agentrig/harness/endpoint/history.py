"""Whether a request repeats the conversation before it: the items of a history compared as a
provider round-trips them (whitespace around content, tool calls by id, name and arguments)."""

from __future__ import annotations

from typing import Any

from agentrig._model import json_equal
from agentrig.messages import Message

__all__ = ["repeated_prefix", "same_item"]


def same_item(expected: Message, sent: Message) -> bool:
    """Whether ``sent`` carries ``expected`` unchanged (as ``history_grows`` compares them: the
    content without surrounding whitespace, tool calls by id, name and arguments, tool results by
    call id and content)."""
    if expected.role is not sent.role or expected.content.strip() != sent.content.strip():
        return False
    if _result(expected) != _result(sent):
        return False
    # Most items call no tool: the JSON walk only when there are calls to compare.
    return not (expected.tool_calls or sent.tool_calls) or json_equal(
        _calls(expected), _calls(sent)
    )


def _calls(message: Message) -> tuple[tuple[str, str, dict[str, Any]], ...]:
    return tuple((call.id, call.name, call.arguments) for call in message.tool_calls)


def _result(message: Message) -> tuple[str, str] | None:
    result = message.tool_result
    return None if result is None else (result.call_id, result.content)


def repeated_prefix(history: tuple[Message, ...], sent: tuple[Message, ...]) -> int:
    """How many leading items of ``history`` ``sent`` repeats unchanged (``same_item``)."""
    count = 0
    for expected, given in zip(history, sent, strict=False):  # pragma: no mutate (the default)
        if expected is not given and not same_item(expected, given):
            break
        count += 1
    return count
