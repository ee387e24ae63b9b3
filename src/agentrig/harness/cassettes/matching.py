"""Matching live requests against recorded ones, and explaining a miss."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence

from agentrig._text import clipped
from agentrig.harness.cassettes.model import (
    Interaction,
    RecordedMessage,
    RecordedRequest,
    to_data,
)
from agentrig.harness.scenarios.yaml_source import dump_yaml

__all__ = [
    "fitted",
    "nearest",
    "numbered_ids",
    "request_diff",
    "request_key",
    "request_yaml",
    "summarize",
]


def request_key(request: RecordedRequest) -> str:
    """A canonical text of ``request``: equal keys mean equal requests (``1`` and ``1.0`` and
    ``true`` differ; mapping order does not matter; tool-call ids count only by their order of
    first appearance, see :func:`numbered_ids`)."""
    return json.dumps(to_data(numbered_ids(request)), sort_keys=True)


def request_yaml(request: RecordedRequest) -> str:
    """``request`` as YAML with numbered tool-call ids, the form diffs show."""
    return dump_yaml(to_data(numbered_ids(request)), blocks=True)


def fitted(live: RecordedRequest, recorded: RecordedRequest) -> RecordedRequest:
    """``live`` without the tool descriptions and parameter schemas ``recorded`` leaves out: a
    hand-written cassette need not copy every tool's schema, and what it does not have is not
    compared. A tool recorded without parameters is such a stub: its ``strict`` is compared
    only when written."""
    kept = {tool.name: tool for tool in recorded.tools}
    tools = []
    for tool in live.tools:
        mine = kept.get(tool.name)
        update: dict[str, object] = {}
        if mine is not None and not mine.description:
            update["description"] = ""
        if mine is not None and not mine.parameters:
            update["parameters"] = {}
            if "strict" not in mine.model_fields_set:
                update["strict"] = False
        tools.append(tool.model_copy(update=update))
    return live.model_copy(update={"tools": tuple(tools)})


def numbered_ids(request: RecordedRequest) -> RecordedRequest:
    """``request`` with each tool-call id replaced by its order of first appearance (``#1``,
    ``#2``...). Ids are made up by whoever ran the session (agentrig makes one up when a provider
    sends none), so only which result answers which call is compared."""
    numbers: dict[str, str] = {}

    def number(call_id: str) -> str:
        return numbers.setdefault(call_id, f"#{len(numbers) + 1}")

    def renumbered(message: RecordedMessage) -> RecordedMessage:
        update: dict[str, object] = {}
        if message.tool_calls:
            update["tool_calls"] = tuple(
                call.model_copy(update={"id": number(call.id)}) for call in message.tool_calls
            )
        if message.tool_call_id is not None:
            update["tool_call_id"] = number(message.tool_call_id)
        return message.model_copy(update=update)

    messages = tuple(renumbered(message) for message in request.messages)
    return request.model_copy(update={"messages": messages})


def nearest(
    live: RecordedRequest, interactions: Sequence[Interaction], candidates: Sequence[int]
) -> int | None:
    """The 0-based index among ``candidates`` whose request is most like ``live`` (the first of
    equally similar ones), or None when there are no candidates."""
    if not candidates:
        return None
    text = request_yaml(live)
    lines = text.splitlines()

    def similarity(index: int) -> tuple[float, float]:
        recorded = request_yaml(interactions[index].request)
        return _ratio(recorded.splitlines(), lines), _ratio(recorded, text)

    return max(candidates, key=similarity)  # max keeps the first of equal ones


def _ratio(left: Sequence[str], right: Sequence[str]) -> float:
    """Similarity by lines, then (to break ties) by characters."""
    # autojunk=None is False to difflib; True is pinned by a test all the same
    return difflib.SequenceMatcher(None, left, right, autojunk=False).ratio()  # pragma: no mutate


def request_diff(recorded: RecordedRequest, live: RecordedRequest, number: int) -> str:
    """A unified diff from recorded interaction ``number`` to the live request."""
    lines = difflib.unified_diff(
        request_yaml(recorded).splitlines(keepends=True),
        request_yaml(live).splitlines(keepends=True),
        fromfile=f"recorded interaction {number}",
        tofile="live request",
    )
    return "".join(lines)


def summarize(interaction: Interaction) -> str:
    """One line: the last message of the request and what came back."""
    messages = interaction.request.messages
    asked = f"{messages[-1].role}: {_short(messages[-1].content)}" if messages else "(no messages)"
    if interaction.error is not None:
        answer = f"error {interaction.error.type}: {_short(interaction.error.message)}"
    else:
        assert interaction.response is not None
        calls = [
            f"{call.name}({_args(call.arguments)})" for call in interaction.response.tool_calls
        ]
        answer = ", ".join(calls) or _short(interaction.response.content)
    return f"{asked} -> {answer}"


def _args(arguments: Mapping[str, object]) -> str:
    return _clip(", ".join(f"{key}={value!r}" for key, value in arguments.items()), 40)


def _short(text: str) -> str:
    return repr(_clip(text, 60))


def _clip(text: str, limit: int) -> str:
    return clipped(" ".join(text.split()), limit)  # on one line
