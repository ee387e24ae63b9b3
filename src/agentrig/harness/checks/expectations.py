"""Check a turn's ``expect:`` block against the state the execution ended in."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from difflib import get_close_matches
from typing import Any

from agentrig import AgentState, Message, Messages
from agentrig.harness.checks.trajectory import Call, compare_trajectory
from agentrig.harness.scenarios.model import (
    REGEX_TIMEOUT_S,
    Expectation,
    MessageExpect,
    ToolResultExpect,
)
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


@dataclass(frozen=True)
class ReturnedResult:
    """A tool result as the model received it."""

    tool: str
    content: str
    is_error: bool


@dataclass(frozen=True)
class ObservedTurn:
    """What a turn showed the model's side: the checks that hold for any agent, on agentrig's
    runtime or across the wire of the scenario endpoint."""

    final_response: str
    calls: Sequence[Call]
    model_calls: int
    tool_results: Sequence[ReturnedResult]


def check_expectation(expect: Expectation, final: AgentState) -> list[Mismatch]:
    """Every way ``final`` differs from ``expect``."""
    return _with_paths(_all(expect, final))


def check_observed(expect: Expectation, observed: ObservedTurn) -> list[Mismatch]:
    """Every way ``observed`` differs from the parts of ``expect`` any agent shows."""
    return _with_paths(_observed(expect, observed))


def _with_paths(mismatches: Iterator[Mismatch]) -> list[Mismatch]:
    return [m if m.path else replace(m, path=(m.field,)) for m in mismatches]


def observed_turn(final: AgentState) -> ObservedTurn:
    """The model-side view of an execution of agentrig's runtime."""
    results = [
        ReturnedResult(m.tool_result.tool_name, m.tool_result.content, m.tool_result.is_error)
        for step in final.steps()
        for m in step.output_messages
        if m.tool_result is not None
    ]
    return ObservedTurn(
        final_response=final.final_response().to_text(),
        calls=executed_calls(final),
        model_calls=final.step_count(),
        tool_results=results,
    )


def _all(expect: Expectation, final: AgentState) -> Iterator[Mismatch]:
    yield from _simple(expect, final)
    yield from _observed(expect, observed_turn(final))
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


def _observed(expect: Expectation, observed: ObservedTurn) -> Iterator[Mismatch]:
    if expect.final_response is not None:
        text = observed.final_response
        wanted = expect.final_response.model_dump(exclude_none=True)
        try:
            matched = expect.final_response.matches(text)
        except TimeoutError:
            problem = (
                f"regex {expect.final_response.regex!r} gave up after {REGEX_TIMEOUT_S:g} s on "
                f"the {len(text):,}-character final response: it backtracks too much (nested "
                "repeats such as (a+)+ take exponential time); simplify the pattern"
            )
            yield Mismatch("final_response", problem, wanted, text, ("final_response", "regex"))
        else:
            if not matched:
                yield Mismatch("final_response", "final response does not match", wanted, text)
    if expect.tool_calls is not None:
        yield from _tool_calls(expect, observed.calls)
    if expect.model_calls is not None and expect.model_calls != observed.model_calls:
        message = f"the model was called {observed.model_calls} time(s)"
        yield Mismatch("model_calls", message, expect.model_calls, observed.model_calls)
    if expect.tool_results is not None:
        yield from _tool_results(expect.tool_results, observed.tool_results)


def _tool_results(
    wanted: Sequence[ToolResultExpect], actual: Sequence[ReturnedResult]
) -> Iterator[Mismatch]:
    shown = [{"tool": r.tool, "content": r.content, "is_error": r.is_error} for r in actual]
    expected = [spec.model_dump(exclude_none=True) for spec in wanted]
    if len(wanted) != len(actual):
        message = f"{len(actual)} tool result(s) were returned, {len(wanted)} expected"
        yield Mismatch("tool_results", message, expected, shown)
        return
    # the lengths were compared above: strict never raises
    for index, (spec, result) in enumerate(zip(wanted, actual, strict=True)):  # pragma: no mutate
        problem = _result_problem(spec, result)
        if problem is not None:
            yield Mismatch(
                f"tool_results[{index}]",
                f"tool result {index + 1}: {problem}",
                expected[index],
                shown[index],
                path=("tool_results", index),
            )


def _result_problem(spec: ToolResultExpect, result: ReturnedResult) -> str | None:
    if spec.tool is not None and spec.tool != result.tool:
        return f"answers {result.tool}, not {spec.tool}"
    if spec.content is not None and spec.content != result.content:
        return "content differs"
    if spec.contains is not None and spec.contains not in result.content:
        return f"does not contain {spec.contains!r}"
    if spec.is_error is not None and spec.is_error != result.is_error:
        return "is an error" if result.is_error else "is not an error"
    return None


def _tool_calls(expect: Expectation, actual: Sequence[Call]) -> Iterator[Mismatch]:
    assert expect.tool_calls is not None
    wanted = [Call(c.name, dict(c.args)) for c in expect.tool_calls.calls]
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
