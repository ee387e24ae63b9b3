"""What the wire formats share: their base class, reading a JSON body field by field
(every error names the field), tool-call arguments, and server-sent events."""

from __future__ import annotations

import base64
import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_core import to_json

from agentrig._model import JsonObject, problems_of
from agentrig.drivers._sdk import RAW_ARGUMENTS_KEY, dump_arguments
from agentrig.fakes.llm import REASONING_SEAL_KEY
from agentrig.harness.endpoint.wire.base import (
    ANY_ANSWER,
    FormatName,
    ToolChoice,
    WireAnswer,
    WireError,
    WireRequest,
)
from agentrig.messages import Message, Role, ToolCall, ToolResult
from agentrig.state import ToolSchema

CREATED = 1_767_225_600
"""The ``created`` time (2026-01-01T00:00:00Z) the OpenAI formats put in every answer by default,
so the bytes an answer is encoded to never depend on the clock."""

WIRE_TIME = datetime(2026, 1, 1, tzinfo=UTC)
"""The ``created_at`` of every message read off the wire. Such a message has no id and no time
of its own: the endpoint may run in-process beside an agentrig agent, and must not draw ids or
times from the clock that agent runs under (that would shift the agent's own seeded ids)."""

T = TypeVar("T")

_TYPE_NAMES: dict[type, str] = {
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    dict: "an object",
    list: "an array",
}


def load_object(body: bytes) -> dict[str, Any]:
    """The request body as a JSON object; ``WireError`` when it is not one."""
    try:
        data = _DECODER.decode(body.decode())
    except (ValueError, RecursionError) as error:
        raise WireError(f"body: not valid JSON ({_reason(error)})", param=None) from None
    if not isinstance(data, dict):
        raise WireError(f"body: expected a JSON object, got {kind_of(data)}")
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:20]} is too large")
    return value


# Built once: ``json.loads`` with hooks builds a decoder on every call.
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)


class BaseFormat(ABC):
    """What every wire format's class shares: its ``name``, the ``path`` its requests are posted
    to, the ``created`` time its answers carry where the format has one (fixed, so that an
    answer's bytes are the same on every run), and reading a request body."""

    name: FormatName
    path: str

    def __init__(self, *, created: int = CREATED) -> None:
        self.created = created

    def parse_request(self, body: bytes) -> WireRequest:
        """Read a request body; ``WireError`` names the field at fault. The errors a body can
        still cause past the field checks (a value agentrig's models reject, nesting too deep
        to walk) are ``WireError`` too."""
        try:
            return self._read(load_object(body))
        except ValidationError as error:
            where, reason = problems_of(error)[0]
            raise WireError(f"body: {where}: {reason}" if where else f"body: {reason}") from None
        except RecursionError:
            raise WireError("body: nested too deeply") from None

    @abstractmethod
    def _read(self, data: dict[str, Any]) -> WireRequest:
        """The request in the body's JSON object ``data``, read field by field."""

    def matches(self, path: str) -> bool:
        """Whether requests to ``path`` are this format's: its own path, behind a prefix
        (``/openai/v1/responses``) or without its ``/v1`` (``/chat/completions``)."""
        trimmed = path.rstrip("/")
        return trimmed.endswith(self.path) or trimmed == self.path.removeprefix("/v1")

    def read(self, target: str, body: bytes) -> WireRequest:
        """Read a request posted to ``target``: the body says it all (``parse_request``)."""
        return self.parse_request(body)

    def logprobs_asked(self, request: WireRequest) -> int | None:
        """How many likeliest tokens ``request`` asks to see beside each token's log
        probability; None when it asks for no log probabilities (the default: the API has
        none). Read only for an answer that scripts them."""
        return None

    def tool_choice(self, request: WireRequest) -> ToolChoice:
        """What ``request`` lets the model answer with: anything (the default: the format
        has no ``tool_choice``). Read only for an answer that scripts tool calls or text."""
        return ANY_ANSWER


def openai_tool_choice(settings: Mapping[str, Any], named: str | None) -> ToolChoice:
    """An OpenAI request's ``tool_choice`` and ``parallel_tool_calls``: ``"none"``,
    ``"required"``, ``"auto"``, or a named function (``named``: its name, which Chat nests in
    ``function`` and Responses does not)."""
    choice, parallel = settings.get("tool_choice"), settings.get("parallel_tool_calls")
    if choice is None and parallel is None:
        return ANY_ANSWER
    said = f"tool_choice: {to_json(choice).decode()}" if choice is not None else ""
    mode: Any = choice if choice in ("none", "required") else "auto"
    tool = named if named else None
    if tool is not None:
        mode = "tool"
    return ToolChoice(
        mode=mode,
        tool=tool,
        parallel=parallel is not False,
        said=said,
        parallel_said="parallel_tool_calls: false" if parallel is False else "",
    )


def top_count(settings: Mapping[str, Any]) -> int:
    """The request's ``top_logprobs`` (0 when absent or not a count: the endpoint plays the
    scripted log probabilities; it does not hold the agent to the API's limits)."""
    top = settings.get("top_logprobs")
    return top if isinstance(top, int) and not isinstance(top, bool) and top > 0 else 0


def logprob_entries(answer: WireAnswer) -> list[JsonObject]:
    """The log probabilities ``answer`` sends, in the OpenAI APIs' shape: per token its
    ``token``, ``logprob``, ``bytes`` (its UTF-8 bytes; the Responses API's stream events leave
    them out) and ``top_logprobs`` (cut to ``answer.logprobs_top``)."""
    top = answer.logprobs_top or 0
    return [
        {
            **_logprob(entry.token, entry.logprob),
            "top_logprobs": [_logprob(token, value) for token, value in entry.top[:top]],
        }
        for entry in answer.sent_logprobs()
    ]


def _logprob(token: str, logprob: float) -> JsonObject:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode())}


def _reason(error: Exception) -> str:
    if isinstance(error, RecursionError):
        return "nested too deeply"
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def kind_of(value: object) -> str:
    """A JSON value's type in words: ``a string``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a number"
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def join(path: str, key: str | int) -> str:
    """The path of a member: ``messages[2].content``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def fail(path: str, reason: str) -> WireError:
    """The error for the field at ``path``; ``param`` is the path too."""
    return WireError(f"{path}: {reason}", param=path)


def typed(value: object, expected: type[T], path: str) -> T:
    """``value`` if it is an ``expected`` (a bool is never an int here), else ``WireError``."""
    if type(value) is expected or (
        isinstance(value, expected) and not (expected is int and isinstance(value, bool))
    ):
        return value
    wanted = _TYPE_NAMES.get(expected, expected.__name__)
    raise fail(path, f"expected {wanted}, got {kind_of(value)}")


def required(data: Mapping[str, Any], key: str, expected: type[T], path: str = "") -> T:
    """Member ``key`` of ``data``, which must be there and be an ``expected``."""
    try:
        value = data[key]
    except KeyError:
        raise fail(join(path, key), "missing") from None
    if type(value) is expected:  # the usual case, without building the member's path
        return value
    return typed(value, expected, join(path, key))


def optional(data: Mapping[str, Any], key: str, expected: type[T], default: T, path: str = "") -> T:
    """Member ``key`` of ``data``, or ``default`` when absent or null."""
    value = data.get(key)
    if value is None:
        return default
    if type(value) is expected:
        return value
    return typed(value, expected, join(path, key))


def objects(value: object, path: str) -> list[tuple[str, dict[str, Any]]]:
    """The members of a JSON array that must hold objects, each with its path."""
    items = typed(value, list, path)
    found: list[tuple[str, dict[str, Any]]] = []
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        found.append((where, item if type(item) is dict else typed(item, dict, where)))
    return found


def text_of(
    content: object,
    parent: str,
    key: str,
    text_types: frozenset[str],
) -> str:
    """The text of member ``key`` of the object at ``parent``, a string, null, or a list of parts:
    parts whose type is in ``text_types`` give their ``text`` (a ``refusal`` part its
    ``refusal``), joined without separator; other parts are skipped."""
    if content is None:
        return ""
    if type(content) is str:
        return content
    path = join(parent, key)
    if not isinstance(content, list):
        raise fail(path, f"expected a string or an array, got {kind_of(content)}")
    parts: list[str] = []
    for where, part in objects(content, path):
        kind = required(part, "type", str, where)
        if kind in text_types:
            parts.append(required(part, "refusal" if kind == "refusal" else "text", str, where))
    return "".join(parts)


def arguments_of(raw: str) -> JsonObject:
    """Tool-call arguments sent as JSON text, as the dict agentrig keeps (text that is not a JSON
    object, NaN and infinities included, is kept whole, as agentrig's own providers keep it)."""
    if not raw.strip():
        return {}
    try:
        value = _DECODER.decode(raw)
    except (ValueError, RecursionError):
        return {RAW_ARGUMENTS_KEY: raw}
    return value if isinstance(value, dict) else {RAW_ARGUMENTS_KEY: raw}


def arguments_json(call: ToolCall) -> str:
    """A tool call's arguments as the compact JSON text the APIs send."""
    arguments = call.arguments
    if len(arguments) == 1 and RAW_ARGUMENTS_KEY in arguments:
        return dump_arguments(arguments)
    return to_json(arguments).decode()


def tool_call(
    call_id: str, name: str, arguments: JsonObject, path: str, *, id_key: str, name_key: str
) -> ToolCall:
    """A ``ToolCall``; an empty id or name is an error of its member (``id_key``, ``name_key``:
    dotted paths below ``path``)."""
    if not call_id:
        raise fail(join(path, id_key), "empty")
    if not name:
        raise fail(join(path, name_key), "empty")
    return ToolCall._trusted(id=call_id, name=name, arguments=arguments)


def tool_schema(
    name: str, description: str, parameters: dict[str, Any], path: str, *, strict: bool = False
) -> ToolSchema:
    """A ``ToolSchema``; an empty name is an error of the field at ``path``."""
    if not name:
        raise fail(join(path, "name"), "empty")
    return ToolSchema._trusted(
        name=name, description=description, parameters=parameters, strict=strict
    )


def function_tool(tool: Mapping[str, Any], path: str) -> ToolSchema:
    """The tool an OpenAI function object at ``path`` describes (Chat's ``function`` member, a
    Responses tool): its name, and its description, parameters and strict flag if sent."""
    return tool_schema(
        required(tool, "name", str, path),
        optional(tool, "description", str, "", path),
        optional(tool, "parameters", dict, {}, path),
        path,
        strict=optional(tool, "strict", bool, False, path),
    )


def tool_message(
    call_id: str, content: str, calls: Mapping[str, str], is_error: bool = False
) -> Message:
    """The TOOL message answering call ``call_id`` (its tool named from the ``calls`` seen so far:
    id to name, empty when no call had that id)."""
    result = ToolResult._trusted(
        content=content, call_id=call_id, tool_name=calls.get(call_id, ""), is_error=is_error
    )
    return Message._trusted(
        role=Role.TOOL, content=content, tool_result=result, id="", created_at=WIRE_TIME
    )


def message(
    role: Role,
    content: str = "",
    *,
    name: str = "",
    tool_calls: tuple[ToolCall, ...] = (),
    seal: str = "",
    redacted: bool = False,
) -> Message:
    """A message of values this module has checked already (built without a second validation:
    the endpoint reads a whole conversation on every model call), without id or time of its own
    (``WIRE_TIME``); ``seal`` is the sealed reasoning an assistant message carries, kept under
    ``SEAL_KEY`` of its ``provider_data``, and ``redacted`` whether that reasoning came without
    text (kept under ``REDACTED_KEY``)."""
    data: JsonObject = {}
    if seal:
        data[SEAL_KEY] = seal
        if redacted:
            data[REDACTED_KEY] = True
    return Message._trusted(
        role=role,
        content=content,
        name=name,
        tool_calls=tool_calls,
        id="",
        created_at=WIRE_TIME,
        provider_data=data,
    )


ANONYMOUS_CALL = "(sent without an id) #"
"""What the placeholder id of a tool call sent back without its id starts with."""


def adopt_call_ids(request: WireRequest, history: tuple[Message, ...]) -> WireRequest:
    """``request`` with the placeholder ids of its calls sent without ids (``ANONYMOUS_CALL``)
    replaced by the ids of the calls they repeat: those of the assistant turn at the same place
    in ``history`` that calls the same tools in the same order. Tool results follow their calls;
    a call that repeats none keeps its placeholder."""
    renamed: dict[str, str] = {}
    messages = list(request.messages)
    for index, sent in enumerate(messages):
        if not any(call.id.startswith(ANONYMOUS_CALL) for call in sent.tool_calls):
            continue
        before = history[index] if index < len(history) else None
        if before is None or [c.name for c in before.tool_calls] != [
            c.name for c in sent.tool_calls
        ]:
            continue
        calls = []
        for call, known in zip(sent.tool_calls, before.tool_calls, strict=True):
            if call.id.startswith(ANONYMOUS_CALL):
                renamed[call.id] = known.id
                call = ToolCall._trusted(id=known.id, name=call.name, arguments=call.arguments)
            calls.append(call)
        messages[index] = sent.evolve(tool_calls=tuple(calls))
    if not renamed:
        return request
    for index, sent in enumerate(messages):
        result = sent.tool_result
        if result is not None and result.call_id in renamed:
            new = result.evolve(call_id=renamed[result.call_id])
            messages[index] = sent.evolve(tool_result=new)
    return replace(request, messages=tuple(messages))


SEAL_KEY = REASONING_SEAL_KEY
"""The ``provider_data`` key of the token an assistant message's reasoning was sealed with (the
key agentrig's scripted model keeps a redacted reasoning's token under, too)."""

REDACTED_KEY = "reasoning_redacted"
"""The ``provider_data`` key that marks sealed reasoning without text (an Anthropic
``redacted_thinking`` block rather than a signed ``thinking`` block)."""


def seal_of(number: str) -> str:
    """The opaque, deterministic token that seals the reasoning of answer ``number``."""
    return base64.b64encode(f"agentrig reasoning {number}".encode()).decode()


def pieces(text: str) -> list[str]:
    """``text`` cut into word-sized deltas (each word with the spaces before it), as models stream
    text; joined, they give ``text`` back."""
    return [piece for piece in _WORD_START.split(text) if piece]


_WORD_START = re.compile(r"(?<=\S)(?=\s)")


def slices(text: str, size: int = 8) -> list[str]:
    """``text`` cut into pieces of ``size`` characters (tool-call arguments, which the APIs stream
    in fragments that ignore JSON structure)."""
    return [text[start : start + size] for start in range(0, len(text), size)]


def json_bytes(data: object) -> bytes:
    """Compact UTF-8 JSON (``pydantic_core.to_json``: several times faster than ``json.dumps``)."""
    return to_json(data)


def sse_data(data: object) -> bytes:
    """One ``data:`` server-sent event."""
    return b"data: " + to_json(data) + b"\n\n"


def sse_event(name: str, data: object) -> bytes:
    """One named server-sent event."""
    return b"event: " + name.encode() + b"\ndata: " + to_json(data) + b"\n\n"


def settings_of(data: Mapping[str, Any], known: frozenset[str]) -> JsonObject:
    """The body fields the request keeps as settings: all but the ``known`` ones."""
    return {key: value for key, value in data.items() if key not in known}
