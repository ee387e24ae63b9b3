"""Turn a recorded session into an editable scenario that replays it under ``agentrig run``.

The agent's system prompt comes from the system message, its tools from the tool schemas (with
``params`` when every parameter has a plain JSON type), and each called tool replies, in
sequence, what the recording shows it returned or raised. A new user message starts a turn;
the turn's model replies are the recorded responses and errors, and its expectations are what
the recording shows: the tool-call trajectory, the final response, the tool errors and, for a
clean turn, ``status: completed``.

A cassette recorded through the scenario endpoint (``agentrig serve --upstream``) holds another
framework's agent, seen only on the wire: its scenario leaves out what the endpoint cannot check
there (``status``, ``errors``, ``max_retries``), so that ``agentrig serve`` plays it back, and
expects each turn's ``tool_results`` to be what the agent's own tools sent back when recorded
(which the tools' ``replies`` also say: the endpoint holds the agent to both).

Limits: one agent per cassette (subagents that share the provider are not separated), and a
tool call whose result the recording never shows (the run ended right after it) becomes a
``stop`` reply, since nothing was asked of the model after it (with several such calls in one
reply, the first: the stop ends the run before the others). A turn executed again after an
error the driver does not retry, without a new user message, cannot be a scenario turn and is
refused, as are tool names that cannot be scenario tool names and errors without a message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agentrig.drivers.anthropic import THINKING_KEY
from agentrig.drivers.openai_responses import REASONING_KEY
from agentrig.fakes import REASONING_SEAL_KEY, CallSpec, Turn
from agentrig.harness.cassettes.errors import CassetteConversionError, CassetteFileError
from agentrig.harness.cassettes.files import load_cassette
from agentrig.harness.cassettes.matching import request_key
from agentrig.harness.cassettes.model import (
    Cassette,
    Interaction,
    RecordedMessage,
    RecordedResponse,
    RecordedTool,
    RecordedToolCall,
)
from agentrig.harness.cassettes.normalize import to_response
from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios.model import (
    IDENTIFIER_PATTERN,
    SCENARIO_NAME_PATTERN,
    ModelReply,
    Scenario,
)
from agentrig.harness.scenarios.writer import reply_from_turn
from agentrig.harness.scenarios.yaml_source import load_yaml_file
from agentrig.state import FinishReason

__all__ = [
    "RECORDED_THROUGH",
    "TOOL_ERROR_PREFIX",
    "UNRECORDED_RESULT",
    "cassette_to_scenario",
    "load_recording",
    "scenario_name",
]

TOOL_ERROR_PREFIX = "Error in tool call: "
"""How the runtime shows a failed tool call to the model; stripped to get the error message."""
RECORDED_THROUGH = "agentrig serve --upstream"
"""The ``metadata.recorded_with`` of a cassette recorded through the scenario endpoint."""
UNRECORDED_RESULT = "the recording ends after this call; its result was not recorded"
_PARAM_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array"})
_NOT_CALLED = "not called in the recording"
_NOT_A_TOOL_NAME = (
    "cannot be a scenario tool name (letters, digits, '_' and '-', starting with a letter or "
    "'_', at most 64 characters)"
)


def scenario_name(text: str) -> str:
    """A valid scenario name made from ``text`` (a file stem, say)."""
    name = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return name or "recorded-session"


def load_recording(path: str | os.PathLike[str]) -> Cassette:
    """``load_cassette(path)``, telling an HTTP-level (vcrpy) cassette apart: it cannot convert."""
    try:
        return load_cassette(path)
    except CassetteFileError:
        _refuse_http_cassette(path)
        raise


_HTTP_KEYS = frozenset({"uri", "method", "body", "parsed_body", "headers"})
_HTTP_CASSETTE = (
    "this is an HTTP cassette (vcrpy): it holds HTTP requests to a provider's API, while "
    "agentrig convert reads a cassette recorded at the inference boundary (by the "
    "agentrig_cassette fixture or cassette_provider); replay this one through the real provider "
    "wrapped in cassette_provider(path, provider) to record such a cassette, then convert that "
    "(docs/record-replay.md)"
)


def _refuse_http_cassette(path: str | os.PathLike[str]) -> None:
    try:
        source = load_yaml_file(path)
    except ScenarioFileError:
        return
    interactions = source.data.get("interactions") if isinstance(source.data, dict) else None
    first = interactions[0] if isinstance(interactions, list) and interactions else None
    request = first.get("request") if isinstance(first, dict) else None
    if isinstance(request, dict) and _HTTP_KEYS & set(request):
        where = source.location(("interactions", 0, "request"))
        line, column = where if where is not None else (None, None)
        field = "interactions[0].request"
        raise CassetteFileError(
            source.path, _HTTP_CASSETTE, line=line, column=column, field=field
        ) from None


def cassette_to_scenario(
    cassette: Cassette, *, name: str, description: str = "", path: str = "<cassette>"
) -> Scenario:
    """A scenario reproducing ``cassette``'s session; ``path`` only names it in errors."""
    if not re.match(SCENARIO_NAME_PATTERN, name):
        reason = f"{name!r} is not a scenario name (lowercase letters, digits, '.', '_', '-')"
        raise CassetteConversionError(path, None, reason)
    interactions = cassette.interactions
    if not interactions:
        raise CassetteConversionError(path, None, "the cassette has no interactions")
    draft = _Draft(path, interactions)
    for number, interaction in enumerate(interactions, start=1):
        draft.add(number, interaction)
    on_the_wire = cassette.metadata.recorded_with == RECORDED_THROUGH
    data: dict[str, Any] = {
        "name": name,
        "description": description
        or f"Converted from a recorded session ({len(interactions)} interaction(s)).",
        "agent": draft.agent(interactions, retries=not on_the_wire),
        "turns": [turn.data(state=not on_the_wire) for turn in draft.turns],
    }
    try:
        return Scenario.model_validate(data)
    except ValidationError as error:
        raise CassetteConversionError(path, None, f"the scenario is invalid: {error}") from None


def _results(interactions: Sequence[Interaction], index: int) -> list[RecordedMessage | None]:
    """The result of each call in interaction ``index``'s response (None: not recorded).

    They are the tool messages right after that reply in the first later request that carries
    it (its last copy there): call ids alone are not enough, as providers may reuse them. A call
    recorded without an id (the API sent none) carries, there, the id the run made up.
    """
    response = interactions[index].response
    if response is None or not response.tool_calls:
        return []
    wanted = response.tool_calls
    for later in interactions[index + 1 :]:
        messages = later.request.messages
        for position in range(len(messages) - 1, -1, -1):
            message = messages[position]
            if message.role == "assistant" and _same_calls(message.tool_calls, wanted):
                answers = _answers(messages[position + 1 :])
                return [answers.get(call.id) for call in message.tool_calls]
    return [None] * len(wanted)


def _same_calls(sent: Sequence[RecordedToolCall], answered: Sequence[RecordedToolCall]) -> bool:
    """Whether the calls a request sends back are the calls of a recorded answer: the same
    names, and the same ids where the answer had them."""
    return len(sent) == len(answered) and all(
        a.name == b.name and (a.id == b.id or not b.id) for a, b in zip(sent, answered, strict=True)
    )


def _answers(messages: Sequence[RecordedMessage]) -> dict[str, RecordedMessage]:
    """The tool messages at the start of ``messages``, by the call id they answer."""
    found: dict[str, RecordedMessage] = {}
    for message in messages:
        if message.role != "tool":
            break
        if message.tool_call_id is not None:
            found.setdefault(message.tool_call_id, message)
    return found


_ANOTHER_CONVERSATION = (
    "it does not continue the conversation of the interaction before it (that one's answer ended "
    "its turn, and this request carries neither that answer nor a new user message): the "
    "cassette holds more than one conversation (sessions recorded together, or a subagent "
    "sharing the provider), and a scenario replays one; record each conversation into a "
    "cassette of its own, or delete the interactions of the others (an agent that sends only "
    "the new messages and leaves the history to the provider, with previous_response_id, "
    "cannot be converted)"
)


def _starts_another_conversation(
    interaction: Interaction, previous: Interaction, users: int, users_seen: int
) -> bool:
    """Whether ``interaction`` begins a conversation other than ``previous``'s: the previous
    answer ended its turn, and this request neither starts a new turn (more user messages) nor
    carries that answer (as a step a hook asked for after a final answer does)."""
    answer = previous.response
    if answer is None or answer.tool_calls or users == 0 or users > users_seen:
        return False
    return not any(
        message.role == "assistant" and message.content == answer.content
        for message in interaction.request.messages
    )


def _run_again(failed_at: int) -> str:
    return (
        f"it runs the turn again after the error of interaction {failed_at}, which the driver "
        "does not retry (the execution failed, and the same conversation was executed again, "
        "as for_next_execution() does, without a new user message); a scenario turn starts "
        "with a user message, so it cannot replay that: delete the interactions of the failed "
        "attempt, or of the one run again"
    )


@dataclass
class _TurnDraft:
    user: str
    replies: list[ModelReply] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    """The tool results the agent sent back, as ``expect.tool_results`` entries."""
    clean: bool = True
    final: str | None = None

    def data(self, *, state: bool) -> dict[str, Any]:
        """The turn; with ``state``, also the expectations on agentrig's own state; without
        (an agent seen on the wire), the tool results it sent back, which its own tools made."""
        expect: dict[str, Any] = {}
        if state and self.clean and not self.errors and self.final is not None:
            expect["status"] = "completed"
        if self.final:
            expect["final_response"] = self.final
        if self.calls:
            expect["tool_calls"] = {"calls": self.calls}
        if not state and self.results:
            expect["tool_results"] = self.results
        if state and self.errors:
            expect["errors"] = self.errors
        turn: dict[str, Any] = {"user": self.user, "model": self.replies}
        return {**turn, "expect": expect} if expect else turn


@dataclass
class _Draft:
    path: str
    interactions: Sequence[Interaction]
    turns: list[_TurnDraft] = field(default_factory=list)
    tool_replies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    bad_arguments: set[str] = field(default_factory=set)
    users_seen: int = 0
    retry_of: str | None = None
    failed_at: int | None = None

    def add(self, number: int, interaction: Interaction) -> None:
        users = [m for m in interaction.request.messages if m.role == "user"]
        if number > 1 and _starts_another_conversation(
            interaction, self.interactions[number - 2], len(users), self.users_seen
        ):
            raise CassetteConversionError(self.path, number, _ANOTHER_CONVERSATION)
        if self.failed_at is not None and len(users) <= self.users_seen:
            raise CassetteConversionError(self.path, number, _run_again(self.failed_at))
        self.failed_at = None
        if len(users) > self.users_seen or not self.turns:
            self.turns.append(_TurnDraft(user=users[-1].content if users else ""))
            self.users_seen = len(users)
        turn = self.turns[-1]
        turn.final = None
        key = request_key(interaction.request)
        if self.retry_of == key and turn.errors:
            turn.errors.pop()  # the driver retried: the error did not reach the state
        self.retry_of = None
        if interaction.error is not None:
            error = interaction.error
            if not error.message:
                problem = (
                    "the recorded error has no message, and a scenario's error reply needs one; "
                    "write one into the cassette's error: message:"
                )
                raise CassetteConversionError(self.path, number, problem)
            failure = Turn(error=error.message, retryable=error.retryable)
            turn.replies.append(reply_from_turn(failure))
            turn.clean = False
            turn.errors.append(error.message)
            self.retry_of = key if error.retryable else None
            self.failed_at = None if error.retryable else number
            return
        assert interaction.response is not None
        turn.replies.append(self._reply(number, interaction.response))
        results = _results(self.interactions, number - 1)
        cut = False
        for call, result in zip(interaction.response.tool_calls, results, strict=True):
            turn.calls.append(_call(call))
            if result is None and cut:
                continue  # the stop scripted for an earlier call ends the run before this one
            self._tool_result(turn, call, result)
            cut = cut or result is None
        if not interaction.response.tool_calls:
            turn.final = interaction.response.content

    def _reply(self, number: int, response: RecordedResponse) -> ModelReply:
        if not response.content and not response.tool_calls:
            problem = "the response is empty (no text, no tool calls); a scenario cannot script it"
            raise CassetteConversionError(self.path, number, problem)
        for call in response.tool_calls:
            if not re.match(IDENTIFIER_PATTERN, call.name):
                problem = f"tool call name {call.name!r} {_NOT_A_TOOL_NAME}"
                raise CassetteConversionError(self.path, number, problem)
        calls = tuple(CallSpec(call.name, call.arguments) for call in response.tool_calls)
        default = "tool_calls" if calls else "stop"
        reason = response.finish_reason if response.finish_reason != default else None
        turn = Turn(
            text=response.content,
            calls=calls,
            usage=to_response(response).usage,
            finish_reason=FinishReason(reason) if reason else None,
            reasoning=response.reasoning_content,
            redacted_reasoning=_reasoned_without_text(response),
        )  # written as the scenario writer writes any scripted turn
        return reply_from_turn(turn)

    def _tool_result(
        self, turn: _TurnDraft, call: RecordedToolCall, result: RecordedMessage | None
    ) -> None:
        replies = self.tool_replies.setdefault(call.name, [])
        if result is None:
            replies.append({"stop": UNRECORDED_RESULT})
            turn.clean = False
            return
        sent: dict[str, Any] = {"tool": call.name, "content": result.content}
        turn.results.append({**sent, "is_error": True} if result.is_error else sent)
        if not result.is_error:
            replies.append({"return": result.content})
            return
        message = result.content.removeprefix(TOOL_ERROR_PREFIX)
        replies.append({"raise": message})
        if message.startswith("invalid arguments"):
            self.bad_arguments.add(call.name)
        if message not in turn.errors:
            turn.errors.append(message)

    def agent(self, interactions: Sequence[Interaction], *, retries: bool) -> dict[str, Any]:
        agent: dict[str, Any] = {}
        first = interactions[0].request.messages
        if first and first[0].role == "system" and first[0].content:
            agent["system_prompt"] = first[0].content
        attempts = _max_attempts(interactions)
        if retries and attempts > 1:
            agent["max_retries"] = attempts
        tools = {name: self._tool(schema) for name, schema in _schemas(interactions).items()}
        if tools:
            agent["tools"] = tools
        return agent

    def _tool(self, schema: RecordedTool) -> dict[str, Any]:
        if not re.match(IDENTIFIER_PATTERN, schema.name):
            reason = f"tool name {schema.name!r} {_NOT_A_TOOL_NAME}"
            raise CassetteConversionError(self.path, None, reason)
        tool: dict[str, Any] = {"description": schema.description} if schema.description else {}
        params = _params(schema.parameters)
        if params and schema.name not in self.bad_arguments:
            tool["params"] = params
        replies = self.tool_replies.pop(schema.name, None)
        if replies:
            tool["mode"] = "sequence"
        tool["replies"] = replies or [{"raise": _NOT_CALLED}]
        return tool


def _reasoned_without_text(response: RecordedResponse) -> bool:
    """Whether the recorded answer reasoned but showed no reasoning text (``think: {redacted:
    true}``): it kept Anthropic thinking blocks (``redacted_thinking``, or ``thinking`` without
    text) or Responses reasoning items (an empty summary, with or without encrypted content), or
    a scripted answer's sealed reasoning, and has no ``reasoning_content``."""
    if response.reasoning_content:
        return False
    kept = response.provider_data
    return bool(kept.get(THINKING_KEY) or kept.get(REASONING_KEY) or kept.get(REASONING_SEAL_KEY))


def _call(call: RecordedToolCall) -> dict[str, Any]:
    return (
        {"name": call.name, "args": dict(call.arguments)} if call.arguments else {"name": call.name}
    )


def _schemas(interactions: Sequence[Interaction]) -> dict[str, RecordedTool]:
    schemas: dict[str, RecordedTool] = {}
    for interaction in interactions:
        for tool in interaction.request.tools:
            schemas.setdefault(tool.name, tool)
    return schemas


def _params(schema: dict[str, Any]) -> dict[str, str] | None:
    """Scenario ``params`` for a JSON Schema, or None when a parameter has no plain type."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return None
    required = schema.get("required")
    needed = (
        {name for name in required if isinstance(name, str)}
        if isinstance(required, list)
        else set()
    )
    params: dict[str, str] = {}
    for name, prop in properties.items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        # A type may also be a list (["string", "null"]): not a plain type.
        if not isinstance(kind, str) or kind not in _PARAM_TYPES:
            return None
        if not re.match(IDENTIFIER_PATTERN, name):
            return None
        params[name] = kind if name in needed else f"{kind}?"
    return params


def _max_attempts(interactions: Sequence[Interaction]) -> int:
    """The longest run of one request asked again after retryable errors (driver retries)."""
    longest, run, previous = 1, 1, None
    for interaction in interactions:
        key = request_key(interaction.request)
        retried = previous is not None and previous[0] == key and previous[1]
        run = run + 1 if retried else 1
        longest = max(longest, run)
        error = interaction.error
        previous = (key, error is not None and error.retryable)
    return longest
