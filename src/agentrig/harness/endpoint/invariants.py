"""The over-the-wire invariants: what must hold of every request an agent sends.

Each check reads the request, the conversation the endpoint expects it to carry (everything it
was sent before plus every answer it got) and the scripted answer about to be played, and
returns its problems. The names are documented in ``docs/endpoint.md``; a scenario's
``invariants: {only | exclude}`` selects among them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentrig.errors import MissingDependencyError

try:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError, ValidationError
except ImportError:  # imported by everything of the endpoint: the message names the extra
    raise MissingDependencyError("jsonschema", "endpoint") from None

from agentrig.harness.endpoint.history import repeated_prefix as repeated_prefix
from agentrig.harness.endpoint.invariant_names import ENDPOINT_INVARIANT_NAMES
from agentrig.harness.endpoint.memo import remembered
from agentrig.harness.endpoint.wire import FORMATS
from agentrig.harness.endpoint.wire._common import REDACTED_KEY, SEAL_KEY
from agentrig.harness.endpoint.wire.base import ANY_ANSWER, WireAnswer, WireRequest
from agentrig.harness.scenarios.drift import param_problems
from agentrig.harness.scenarios.model import TextMatch, ToolSpec
from agentrig.harness.scenarios.yaml_source import FieldPath
from agentrig.messages import Message, Role
from agentrig.state import ToolSchema


@dataclass(slots=True)
class WireView:
    """What one check sees: the request, what came before it, and the answer to be played."""

    request: WireRequest
    expected_history: tuple[Message, ...] | None
    """The previous request's conversation plus the answer it got (a new user turn carries it
    too); ``None`` for a first request."""
    repeated: int
    """How many leading items of ``expected_history`` the request repeats unchanged
    (``repeated_prefix``)."""
    answer: WireAnswer | None
    expected_model: str | None
    expected_system: str | TextMatch | None
    """``agent.system_prompt``: the text, or a rule, the request's system prompt must pass."""
    expected_user: str | None
    declared_tools: Mapping[str, ToolSpec] = field(default_factory=dict)
    user_message: Message | None = None
    """The user message that began the request's turn (past any retries of it); None: the
    newest user message."""
    declared_as: str = "agent.tools"
    """Where ``declared_tools`` were declared, for messages (``agent.agents.NAME.tools`` for
    the tools of one of several agents)."""
    declared_path: FieldPath = ("agent", "tools")
    """The scenario field that declares ``declared_tools``."""
    declared_complete: bool = True
    """Whether the request must offer every tool of ``declared_tools`` (not when they are all
    the agents' tools, for a request that is none of ``agent.agents``)."""
    """The scenario's ``agent.tools``: what it says the agent's own tools take."""
    _offered: dict[str, ToolSchema] | None = None
    _schema_texts: dict[str, str] = field(default_factory=dict)

    def offered(self) -> dict[str, ToolSchema]:
        """The tools the request offers, by name (worked out once for all the checks)."""
        if self._offered is None:
            self._offered = {tool.name: tool for tool in self.request.tools}
        return self._offered

    def schema_text(self, tool: ToolSchema) -> str:
        """``repr`` of an offered tool's parameters: the key its remembered verdicts are kept
        under (which tells lists from tuples, 1 from 1.0 from True, and keeps key order);
        worked out once for all the checks."""
        text = self._schema_texts.get(tool.name)  # pragma: no mutate (a cache: a miss is alike)
        if text is None:
            text = self._schema_texts[tool.name] = repr(tool.parameters)
        return text


@dataclass(frozen=True)
class Violation:
    """One broken invariant: its name, what is wrong, and the two sides when there are two."""

    invariant: str
    message: str
    expected: Any = None
    observed: Any = None
    path: FieldPath | None = None
    """The scenario field at fault, when the check knows it better than the session does."""


WireCheck = Callable[[WireView], list[Violation]]
"""A check: the problems it found (``NONE`` when there are none; a caller never changes it)."""

NONE: list[Violation] = []
"""What a check returns when it finds nothing: one shared list, not a new one per request."""


def item(message: Message) -> dict[str, Any]:
    """A conversation item reduced to what an agent must send back unchanged."""
    entry: dict[str, Any] = {"role": message.role.value}
    if message.content:
        entry["content"] = message.content
    if message.tool_calls:
        entry["tool_calls"] = [
            {"id": call.id, "name": call.name, "arguments": call.arguments}
            for call in message.tool_calls
        ]
    if message.tool_result is not None:
        entry["tool_result"] = {
            "call_id": message.tool_result.call_id,
            "content": message.tool_result.content,
        }
    return entry


def history_grows(view: WireView) -> list[Violation]:
    """The conversation only grows: nothing sent or answered before is dropped, edited or
    reordered."""
    history = view.expected_history
    if history is None or view.repeated == len(history):
        return NONE
    index, sent = view.repeated, view.request.messages
    if index >= len(sent):
        return [
            Violation(
                "history_grows",
                f"conversation item {index + 1} of {len(history)} was dropped",
                [item(m) for m in history[index:]],
                [],
            )
        ]
    return [
        Violation(
            "history_grows",
            f"conversation item {index + 1} differs from what was sent or answered before",
            item(history[index]),
            item(sent[index]),
        )
    ]


def tool_results_answer_calls(view: WireView) -> list[Violation]:
    """Every tool result answers a call of the assistant turn before it (by id), and every call
    is answered before the next model turn."""
    found: list[Violation] = []
    pending: dict[str, str] = {}
    for index, message in enumerate(view.request.messages, start=1):
        if message.tool_result is not None:  # a TOOL message: the only kind that has one
            call_id = message.tool_result.call_id
            if call_id not in pending:
                found.append(
                    Violation(
                        "tool_results_answer_calls",
                        f"conversation item {index}: tool result for call id {call_id!r}, "
                        "which the assistant turn before it did not make",
                        sorted(pending),
                        call_id,
                    )
                )
            pending.pop(call_id, None)
            continue
        if pending:
            where = f"before conversation item {index} ({message.role.value})"
            found.append(_unanswered(pending, where))
        pending = {call.id: call.name for call in message.tool_calls}  # an assistant's, if any
    if pending:
        found.append(_unanswered(pending, "before this model call"))
    return found


def _unanswered(pending: dict[str, str], where: str) -> Violation:
    calls = [f"{name} (id {call_id!r})" for call_id, name in pending.items()]
    return Violation(
        "tool_results_answer_calls",
        f"tool call(s) not answered {where}: {', '.join(calls)}",
        sorted(pending),
        [],
    )


_SEALED_AS = {
    "anthropic": "its thinking block (with its signature)",
    "responses": "its reasoning item (with its encrypted content)",
}
_REDACTED_AS = {**_SEALED_AS, "anthropic": "its redacted_thinking block (with its data)"}


def reasoning_sent_back(view: WireView) -> list[Violation]:
    """An answer that reasoned before calling tools is sent back with its sealed reasoning:
    Anthropic's thinking block with its signature (its redacted thinking block with its data),
    a Responses reasoning item with its encrypted content (when the agent asked for it),
    unchanged, as those APIs require to go on with the tool calls of a reasoning model."""
    history = view.expected_history
    if not history:
        return NONE
    index = len(history) - 1
    answered = history[index]
    seal = answered.provider_data.get(SEAL_KEY)
    if not seal or not answered.tool_calls or index >= len(view.request.messages):
        return NONE  # nothing sealed to send back, or history_grows reports the dropped answer
    returned = view.request.messages[index].provider_data
    sent = returned.get(SEAL_KEY)
    redacted = answered.provider_data.get(REDACTED_KEY, False)
    # Anthropic tells the two kinds of block apart: redacted data sent as a signature is refused
    same_kind = view.request.format != "anthropic" or returned.get(REDACTED_KEY, False) == redacted
    if sent == seal and same_kind:
        return NONE
    names = ", ".join(call.name for call in answered.tool_calls)
    what = (_REDACTED_AS if redacted else _SEALED_AS).get(
        view.request.format, "its sealed reasoning"
    )
    problem = "was not sent back" if sent is None else "came back changed"
    return [
        Violation(
            "reasoning_sent_back",
            f"the answer that called {names} reasoned first, and {what} {problem} with the "
            "calls: the real API refuses to go on with a reasoning model's tool calls without it",
            seal,
            sent,
        )
    ]


def tools_offered(view: WireView) -> list[Violation]:
    """Each tool the scripted answer calls was offered, with a schema that accepts the scripted
    arguments."""
    if view.answer is None or not view.answer.tool_calls:
        return NONE
    found: list[Violation] = []
    offered = view.offered()
    for call in view.answer.tool_calls:
        tool = offered.get(call.name)
        if tool is None:
            found.append(
                Violation(
                    "tools_offered",
                    f"the script calls {call.name}, which the request does not offer",
                    call.name,
                    sorted(offered),
                )
            )
            continue
        problem = _schema_problem(tool.parameters, view.schema_text(tool), call.arguments)
        if problem is not None:
            found.append(
                Violation(
                    "tools_offered",
                    f"the scripted arguments of {call.name} do not fit the offered schema: "
                    f"{problem}",
                    tool.parameters,
                    call.arguments,
                )
            )
    return found


def answer_allowed(view: WireView) -> list[Violation]:
    """The scripted answer is one the request allows: no tool call under ``tool_choice: none``,
    at least one under ``required`` (Anthropic's ``any``, Gemini's ``ANY``), only the named
    tool's under a named choice (Gemini: only ``allowedFunctionNames``), and one call at most when the request turns parallel calls off
    (``parallel_tool_calls: false``, ``disable_parallel_tool_use: true``). A real API never
    answers otherwise: an agent tested on such an answer is tested on something it never meets."""
    answer = view.answer
    if answer is None:
        return NONE
    choice = FORMATS[view.request.format].tool_choice(view.request)
    if choice is ANY_ANSWER:
        return NONE
    calls = answer.tool_calls
    names = [call.name for call in calls]
    problem = None
    if choice.mode == "none" and calls:
        problem = (
            f"the request sends {choice.said}, but the scripted reply calls {', '.join(names)}"
        )
    elif choice.mode in ("required", "tool") and not calls:
        problem = f"the request sends {choice.said}, but the scripted reply calls no tool"
    elif choice.mode == "tool" and any(name != choice.tool for name in names):
        problem = (
            f"the request sends {choice.said}, but the scripted reply calls "
            f"{', '.join(n for n in names if n != choice.tool)}"
        )
    elif choice.allowed is not None and any(name not in choice.allowed for name in names):
        problem = (
            f"the request sends {choice.said}, but the scripted reply calls "
            f"{', '.join(n for n in names if n not in choice.allowed)}"
        )
    elif not choice.parallel and len(calls) > 1:
        problem = (
            f"the request sends {choice.parallel_said}, but the scripted reply makes "
            f"{len(calls)} tool calls ({', '.join(names)})"
        )
    if problem is None:
        return NONE
    return [
        Violation(
            "answer_allowed",
            f"{problem}: a real API never answers so; change the reply, or check why the agent "
            "asks for that",
            choice.said or choice.parallel_said,
            names,
        )
    ]


def tools_as_declared(view: WireView) -> list[Violation]:
    """Each tool of ``agent.tools`` is offered (when the request offers tools at all), takes
    the ``params`` the scenario declares (names, JSON types, required or optional) and, when the
    scenario declares a ``description``, says it; and the request offers no tool the scenario
    does not declare. A tool marked ``scripted: true`` is not looked for. The scenario describes the agent under test; a tool renamed
    or changed in the agent but not in the scenario fails here, not silently."""
    if not view.declared_tools:
        return NONE
    found: list[Violation] = []
    offered = view.offered()
    for name, spec in view.declared_tools.items():
        if spec.scripted:
            continue
        path: FieldPath = ("agent", "tools", name)
        tool = offered.get(name)
        if tool is None:
            if offered and view.declared_complete:
                found.append(
                    Violation(
                        "tools_as_declared",
                        f"{view.declared_as} declares {name}, which the request does not offer "
                        f"(it offers: {', '.join(sorted(offered))}); fix the name, or mark the "
                        "tool scripted: true if the agent really has no such tool",
                        name,
                        sorted(offered),
                        path,
                    )
                )
            continue
        problems = _declared_problems(spec, tool.parameters, view.schema_text(tool))
        if "description" in spec.model_fields_set and (
            tool.description.strip() != spec.description.strip()
        ):
            problems = [
                *problems,
                f"its description is {tool.description.strip()!r}, not the declared "
                f"{spec.description.strip()!r}",
            ]
        if problems:
            found.append(
                Violation(
                    "tools_as_declared",
                    f"the agent's {name} differs from agent.tools: {'; '.join(problems)}",
                    spec.parameters_schema(),
                    tool.parameters,
                    path,
                )
            )
    undeclared = [name for name in offered if name not in view.declared_tools]
    if undeclared:
        found.append(
            Violation(
                "tools_as_declared",
                f"the request offers {', '.join(undeclared)}, which {view.declared_as} does "
                "not declare: the scenario describes another agent than the one under test; "
                "declare the tool (its params, and its description to check that too)",
                sorted(view.declared_tools),
                sorted(offered),
                view.declared_path,
            )
        )
    return found


# Every session of a scenario offers the same schemas, for the same scripted arguments: the
# checks that read them remember their verdicts, keyed by repr (``WireView.schema_text``).
# Validating cost a third of a request's handling.


def _declared_problems(spec: ToolSpec, schema: dict[str, Any], schema_text: str) -> list[str]:
    kind = "declared"  # pragma: no mutate (any name no other kind of work has will do)
    problems: list[str] = remembered(
        (kind, id(spec), schema_text),
        spec,  # pragma: no mutate (held so that its id is not reused: no test can force that)
        lambda: param_problems(spec, schema),
    )
    return problems


def _schema_problem(
    schema: dict[str, Any], schema_text: str, arguments: dict[str, Any]
) -> str | None:
    if not schema:
        return None
    kind = "arguments"  # pragma: no mutate (any name no other kind of work has will do)
    key = (kind, schema_text, repr(arguments))
    problem: str | None = remembered(key, None, lambda: _validate(schema, arguments))
    return problem


def _validate(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    # The schema is checked first: validated against, an invalid one raises (an unknown type, a
    # pattern that is no regex) or is read as something else (a "required" that is a string).
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:  # never about the whole schema: it is an object, as it must be
        return f"it is invalid: {_path(exc)}: {exc.message}"
    error = min(Draft202012Validator(schema).iter_errors(arguments), key=str, default=None)
    if error is None:
        return None
    return f"{_path(error) or 'arguments'}: {error.message}"


def _path(error: ValidationError | SchemaError) -> str:
    return "/".join(str(part) for part in error.absolute_path)


def model_named(view: WireView) -> list[Violation]:
    """The request names the model the scenario expects (``agent.model``)."""
    if view.expected_model is None or view.request.model == view.expected_model:
        return NONE
    return [
        Violation(
            "model_named",
            f"the request asks for model {view.request.model!r}",
            view.expected_model,
            view.request.model,
        )
    ]


def system_prompt_sent(view: WireView) -> list[Violation]:
    """The request carries the scenario's ``agent.system_prompt`` (when it gives one)."""
    expected = view.expected_system
    if isinstance(expected, TextMatch):
        if prompt_passes(expected, view.request.system):
            return NONE
        rule = expected.model_dump(exclude_none=True)
        return [
            Violation(
                "system_prompt_sent",
                f"the system prompt sent does not pass agent.system_prompt's rule {rule}",
                rule,
                view.request.system,
            )
        ]
    if not expected or (view.request.system or "").strip() == expected.strip():
        return NONE
    return [
        Violation(
            "system_prompt_sent",
            "the system prompt sent differs from agent.system_prompt",
            expected,
            view.request.system,
        )
    ]


def prompt_passes(expected: str | TextMatch, sent: str | None) -> bool:
    """Whether the system prompt ``sent`` is the ``expected`` text (without surrounding
    whitespace) or passes the ``expected`` rule (a regex that searches too long fails)."""
    if isinstance(expected, str):
        return (sent or "").strip() == expected.strip()
    try:
        return expected.matches(sent or "")
    except TimeoutError:
        return False


def user_turn_sent(view: WireView) -> list[Violation]:
    """The user message that began the turn (the newest one, past any retry of the turn) is
    the scenario turn's ``user:`` text."""
    expected = view.expected_user
    if expected is None:
        return NONE
    newest = view.user_message or next(
        (m for m in reversed(view.request.messages) if m.role is Role.USER), None
    )
    if newest is None or newest.content.strip() == expected.strip():
        return NONE
    return [
        Violation(
            "user_turn_sent",
            "the newest user message differs from the turn's user text",
            expected,
            newest.content,
        )
    ]


WIRE_INVARIANTS: dict[str, WireCheck] = {
    "tool_results_answer_calls": tool_results_answer_calls,
    "history_grows": history_grows,
    "tools_offered": tools_offered,
    "answer_allowed": answer_allowed,
    "reasoning_sent_back": reasoning_sent_back,
    "tools_as_declared": tools_as_declared,
    "model_named": model_named,
    "system_prompt_sent": system_prompt_sent,
    "user_turn_sent": user_turn_sent,
}
"""Every per-request check by name. ``script_not_exceeded`` (no request after the script is used
up) is checked by the session itself, since it decides what is answered."""

ALL_INVARIANT_NAMES = ENDPOINT_INVARIANT_NAMES


def selected(only: Sequence[str] | None, exclude: Sequence[str] | None) -> tuple[str, ...]:
    """The names to check, given a scenario's ``invariants:`` selection."""
    if only is not None:
        return tuple(name for name in ALL_INVARIANT_NAMES if name in only)
    return tuple(name for name in ALL_INVARIANT_NAMES if name not in (exclude or ()))
