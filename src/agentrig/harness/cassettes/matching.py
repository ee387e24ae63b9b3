"""Matching live requests against recorded ones, and explaining a miss."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence

from agentrig.harness.cassettes.model import Interaction, RecordedRequest, to_data
from agentrig.harness.scenarios.yaml_source import dump_yaml

__all__ = ["nearest", "request_diff", "request_key", "request_yaml", "summarize"]


def request_key(request: RecordedRequest) -> str:
    """A canonical text of ``request``: equal keys mean equal requests (``1`` and ``1.0`` and
    ``true`` differ; mapping order does not matter)."""
    return json.dumps(to_data(request), sort_keys=True, ensure_ascii=False)


def request_yaml(request: RecordedRequest) -> str:
    """``request`` as YAML, the form diffs show."""
    return dump_yaml(to_data(request), blocks=True)


def nearest(
    live: RecordedRequest, interactions: Sequence[Interaction], candidates: Sequence[int]
) -> int | None:
    """The 0-based index among ``candidates`` whose request is most like ``live`` (the first of
    equally similar ones), or None when there are no candidates."""
    if not candidates:
        return None
    text = request_yaml(live)
    best, best_score = candidates[0], (-1.0, -1.0)
    for index in candidates:
        recorded = request_yaml(interactions[index].request)
        score = (_ratio(recorded.splitlines(), text.splitlines()), _ratio(recorded, text))
        if score > best_score:
            best, best_score = index, score
    return best


def _ratio(left: Sequence[str], right: Sequence[str]) -> float:
    """Similarity by lines, then (to break ties) by characters."""
    return difflib.SequenceMatcher(None, left, right, autojunk=False).ratio()


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
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
