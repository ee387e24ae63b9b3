"""``tool_results_as_scripted``: the tool results an agent sends are those its scenario's
``agent.tools`` script. On the endpoint the agent's own tools run, and a tool's ``replies:`` say
what it must return there: a lookup that now answers "cancelled" where the recording (or the
scenario's author) says "shipped" is drift, and fails."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from agentrig._model import json_equal
from agentrig.harness.endpoint.invariant_names import TOOL_RESULTS_AS_SCRIPTED
from agentrig.harness.endpoint.invariants import Violation
from agentrig.harness.scenarios.model import ToolReplySpec, ToolSpec


@dataclass(frozen=True, slots=True)
class SentResult:
    """A tool result the agent sent, with the call it answers."""

    request: int
    turn: int
    tool: str
    arguments: Mapping[str, Any]
    content: str
    is_error: bool


def scripted_result_problems(
    tools: Mapping[str, ToolSpec], results: list[SentResult]
) -> Iterator[tuple[SentResult, Violation]]:
    """Each result (of a tool ``tools`` declares) that differs from what its replies script,
    with the violation saying how. Results of a ``sequence`` tool are matched to its replies in
    order; a ``match`` tool's result to the first reply whose ``when`` the call's arguments
    match. A result no reply answers (a ``sequence`` run out, no ``when`` matching) and a
    ``stop`` reply (the run ends at the call) are left alone."""
    seen: dict[str, int] = {}
    for result in results:
        spec = tools.get(result.tool)
        if spec is None:
            continue
        index = _reply_index(spec, result, seen)
        if index is None:
            continue
        problem = _problem(spec.replies[index], result)
        if problem is not None:
            message, expected = problem
            path = ("agent", "tools", result.tool, "replies", index)
            violation = Violation(
                TOOL_RESULTS_AS_SCRIPTED,
                f"the agent's {result.tool} {message} (agent.tools.{result.tool}.replies[{index}])",
                expected=expected,
                observed=result.content,
                path=path,
            )
            yield result, violation


def checked_results(tools: Mapping[str, ToolSpec], results: list[SentResult]) -> int:
    """How many of ``results`` a tool of ``tools`` answers (each is checked)."""
    return sum(1 for result in results if result.tool in tools)


def _reply_index(spec: ToolSpec, result: SentResult, seen: dict[str, int]) -> int | None:
    if spec.mode == "sequence":
        index = seen.get(result.tool, 0)
        seen[result.tool] = index + 1
        return index if index < len(spec.replies) else None
    for index, reply in enumerate(spec.replies):
        if reply.matches(result.arguments):
            return index
    return None


def _problem(reply: ToolReplySpec, result: SentResult) -> tuple[str, Any] | None:
    """How ``result`` differs from ``reply`` (the message and the expected side), or None."""
    if reply.outcome == "stop":
        return None
    if reply.outcome == "raise":
        assert reply.raise_ is not None
        if reply.raise_ in result.content:
            return None
        return f"returned {_short(result.content)}, not the error {reply.raise_!r}", reply.raise_
    if _returns(reply.return_, result.content):
        return None
    said = "failed with" if result.is_error else "returned"
    return f"{said} {_short(result.content)}, not {_short(reply.return_)}", reply.return_


def _returns(value: Any, content: str) -> bool:
    """Whether ``content`` (a tool result's text) is ``value``: the text itself, or the same
    JSON (a dict, a number... as each framework serialises it)."""
    if isinstance(value, str):
        return content == value or content.strip() == value.strip()
    try:
        return json_equal(value, json.loads(content))
    except ValueError:
        return content.strip() == str(value)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
