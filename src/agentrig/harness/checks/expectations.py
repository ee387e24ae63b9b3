"""Check a turn's ``expect:`` block against the state the execution ended in."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from difflib import get_close_matches
from typing import Any

from agentrig import AgentState, Message, Messages
from agentrig.harness.checks.trajectory import Call, compare_trajectory
from agentrig.harness.scenarios.model import Expectation, MessageExpect
from agentrig.store import INFERENCE_ORDER

_USAGE_FIELDS = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_tokens",
    "cache_write": "cache_write_tokens",
    "reasoning": "reasoning_tokens",
}


@dataclass(frozen=True)
class Mismatch:
    """One failed expectation: the field path under ``expect`` and what differed."""

    field: str
    message: str
    expected: Any
    observed: Any
    path: tuple[str | int, ...] = dataclasses.field(default=(), compare=False)
    """Where under ``expect`` the failed check is written (keys and indices)."""


def check_expectation(expect: Expectation, final: AgentState) -> list[Mismatch]:
    """Every way ``final`` differs from ``expect``."""
    return [m if m.path else replace(m, path=(m.field,)) for m in _all(expect, final)]


def _all(expect: Expectation, final: AgentState) -> Iterator[Mismatch]:
    yield from _simple(expect, final)
    if expect.final_response is not None:
        text = final.final_response().to_text()
        if not expect.final_response.matches(text):
            wanted = expect.final_response.model_dump(exclude_none=True)
            yield Mismatch("final_response", "final response does not match", wanted, text)
    if expect.tool_calls is not None:
        yield from _tool_calls(expect, final)
    if expect.messages is not None:
        for mismatch in _section(("messages",), expect.messages, final.messages()):
            yield _with_buffer_hint(mismatch, expect.messages, final)
    yield from _sections(expect, final)
    yield from _usage(expect, final)
    yield from _errors(expect, final)


def _simple(expect: Expectation, final: AgentState) -> Iterator[Mismatch]:
    status = final.status()
    observed_status = status.value if status else None
    if expect.status is not None and expect.status != observed_status:
        yield Mismatch("status", f"status is {observed_status}", expect.status, observed_status)
    reason = final.last_stop_reason()
    observed_reason = reason.value if reason else None
    if expect.stop_reason is not None and expect.stop_reason != observed_reason:
        yield Mismatch(
            "stop_reason", f"stop reason is {observed_reason}", expect.stop_reason, observed_reason
        )
    if expect.steps is not None and expect.steps != final.step_count():
        yield Mismatch(
            "steps", f"{final.step_count()} step(s) ran", expect.steps, final.step_count()
        )


def executed_calls(final: AgentState) -> list[Call]:
    """Tool calls the model requested during the execution, in order."""
    return [
        Call(c.name, dict(c.arguments))
        for step in final.steps()
        for c in step.requested_tool_calls()
    ]


def _tool_calls(expect: Expectation, final: AgentState) -> Iterator[Mismatch]:
    assert expect.tool_calls is not None
    wanted = [Call(c.name, dict(c.args)) for c in expect.tool_calls.calls]
    actual = executed_calls(final)
    problem = compare_trajectory(
        wanted, actual, mode=expect.tool_calls.mode, args=expect.tool_calls.args
    )
    if problem is not None:
        yield Mismatch(
            "tool_calls",
            f"tool calls ({expect.tool_calls.mode}, {expect.tool_calls.args} args): {problem}",
            [str(c) for c in wanted],
            [str(c) for c in actual],
        )


def _section(
    path: tuple[str, ...], wanted: Sequence[MessageExpect], messages: Messages
) -> Iterator[Mismatch]:
    field = ".".join(path)
    observed = [_message_summary(m) for m in messages]
    expected = [spec.model_dump(exclude_none=True) for spec in wanted]
    if len(wanted) != len(messages):
        counted = f"{len(messages)} message(s), expected {len(wanted)}"
        yield Mismatch(field, counted, expected, observed, path)
        return
    for index, (spec, message) in enumerate(zip(wanted, messages, strict=True)):
        problem = _message_problem(spec, message)
        if problem is not None:
            item = Mismatch(f"{field}[{index}]", problem, expected[index], observed[index])
            yield replace(item, path=(*path, index))


BUFFER_HINT = (
    "; tool calls and results live in the execution buffer, which the end of the execution "
    "cleared: `messages` keeps user messages and final answers (check calls with `tool_calls:`)"
)


def _with_buffer_hint(
    mismatch: Mismatch, wanted: Sequence[MessageExpect], final: AgentState
) -> Mismatch:
    """A ``messages`` mismatch that looks like tool traces were expected in ``messages``, with
    where they went: the first surprise of a new user (2 messages where 4 were expected)."""
    separated = not any(message.is_trace for message in final.messages())
    traced = any(step.requested_tool_calls() for step in final.steps())
    expects_tool = any(spec.role == "tool" for spec in wanted)
    too_many = mismatch.field == "messages" and len(wanted) > len(final.messages())
    if separated and traced and (expects_tool or too_many):
        return replace(mismatch, message=mismatch.message + BUFFER_HINT)
    return mismatch


def _sections(expect: Expectation, final: AgentState) -> Iterator[Mismatch]:
    for name, section in (expect.sections or {}).items():
        missing = _missing_section(name, final)
        path = ("sections", name)
        if missing is None:
            yield from _section(path, section, final.store().messages_of(name))
        else:
            wanted = [spec.model_dump(exclude_none=True) for spec in section]
            yield Mismatch(f"sections.{name}", missing, wanted, None, path)


def _missing_section(name: str, final: AgentState) -> str | None:
    """Why section ``name`` cannot be checked: a typo must not pass as an empty section."""
    known = [*INFERENCE_ORDER, *final.store().section_names()]
    if name in known:
        return None
    sections = list(dict.fromkeys(known))
    close = get_close_matches(name, sections, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"the state has no section {name!r}{hint}; sections: {', '.join(sections)}"


def _message_problem(spec: MessageExpect, message: Message) -> str | None:
    if message.role.value != spec.role:
        return f"role is {message.role.value}, expected {spec.role}"
    if spec.content is not None and message.content != spec.content:
        return "content differs"
    if spec.contains is not None and spec.contains not in message.content:
        return f"content does not contain {spec.contains!r}"
    return None


def _message_summary(message: Message) -> dict[str, Any]:
    summary: dict[str, Any] = {"role": message.role.value, "content": message.content}
    if message.tool_calls:
        summary["tool_calls"] = [str(c) for c in message.tool_calls]
    return summary


def _usage(expect: Expectation, final: AgentState) -> Iterator[Mismatch]:
    usage = final.usage()
    if expect.usage is not None:
        for key, attribute in (*_USAGE_FIELDS.items(), ("total", None)):
            wanted = getattr(expect.usage, key)
            observed = usage.total() if attribute is None else getattr(usage, attribute)
            if wanted is not None and wanted != observed:
                problem = f"usage {key} is {observed}"
                yield Mismatch(f"usage.{key}", problem, wanted, observed, ("usage", key))
    if expect.cost is not None and not expect.cost.matches(usage.cost):
        wanted_cost = expect.cost.model_dump(exclude_none=True)
        yield Mismatch("cost", f"cost is {usage.cost}", wanted_cost, usage.cost)


def _errors(expect: Expectation, final: AgentState) -> Iterator[Mismatch]:
    recorded = [error.message for error in final.errors()]
    if expect.errors == () and recorded:
        listed = "; ".join(recorded)
        yield Mismatch(
            "errors", f"expected no recorded error, found {len(recorded)}: {listed}", [], recorded
        )
    for index, wanted in enumerate(expect.errors or ()):
        if not any(wanted in message for message in recorded):
            problem = f"no recorded error contains {wanted!r}"
            yield Mismatch(f"errors[{index}]", problem, wanted, recorded, ("errors", index))
