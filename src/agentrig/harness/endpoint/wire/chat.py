"""OpenAI Chat Completions (``POST /v1/chat/completions``), plain and streamed."""

from __future__ import annotations

from typing import Any

from agentrig._model import JsonObject
from agentrig.harness.endpoint.wire._common import (
    BaseFormat,
    arguments_json,
    arguments_of,
    fail,
    function_tool,
    join,
    logprob_entries,
    message,
    objects,
    openai_tool_choice,
    optional,
    pieces,
    required,
    settings_of,
    slices,
    sse_data,
    text_of,
    tool_call,
    tool_message,
    top_count,
    typed,
)
from agentrig.harness.endpoint.wire.base import ANY_ANSWER, ToolChoice, WireAnswer, WireRequest
from agentrig.messages import Message, Role, ToolCall
from agentrig.state import ToolSchema, Usage
from agentrig.state.status import FinishReason

_KNOWN = frozenset({"model", "messages", "tools", "stream", "stream_options"})
_ROLES = ("system", "developer", "user", "assistant", "tool")
_TEXT_PARTS = frozenset({"text", "refusal"})
_FINISH = {
    FinishReason.STOP: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.TOOL_CALLS: "tool_calls",
    FinishReason.CONTENT_FILTER: "content_filter",
}
DONE = b"data: [DONE]\n\n"
"""The event that ends a Chat Completions stream."""

# HTTP status -> (error type, error code), as the OpenAI API words them.
_ERRORS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", None),  # an unknown URL; a missing model adds its own code
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}


def openai_error(status: int, message: str, param: str | None) -> JsonObject:
    """The error body both OpenAI APIs send: ``{"error": {message, type, param, code}}``.

    Statuses without an entry of their own take 400's type below 500 and 500's from 500 on.
    """
    kind, code = _ERRORS.get(status) or _ERRORS[500 if status >= 500 else 400]
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def finish_reason(answer: WireAnswer) -> str:
    """The ``finish_reason`` of ``answer``: ``tool_calls`` whenever it calls tools and ended
    normally; ``error`` and ``other``, which the API has no word for, become ``stop``."""
    if answer.tool_calls and answer.finish_reason in (FinishReason.STOP, FinishReason.TOOL_CALLS):
        return "tool_calls"
    return _FINISH.get(answer.finish_reason, "stop")


class ChatFormat(BaseFormat):
    """OpenAI Chat Completions. ``created`` is the time every answer carries (fixed, so that an
    answer's bytes are the same on every run)."""

    name = "chat"
    path = "/v1/chat/completions"

    def _read(self, data: dict[str, Any]) -> WireRequest:
        model = required(data, "model", str)
        system: list[str] = []
        messages: list[Message] = []
        calls: dict[str, str] = {}
        for where, entry in objects(required(data, "messages", list), "messages"):
            role = required(entry, "role", str, where)
            if role not in _ROLES:
                raise fail(join(where, "role"), f"{role!r} is not one of {', '.join(_ROLES)}")
            content = text_of(entry.get("content"), where, "content", _TEXT_PARTS)
            if role in ("system", "developer"):
                system.append(content)
            elif role == "user":
                messages.append(message(Role.USER, content, name=_name(entry, where)))
            elif role == "assistant":
                messages.append(_assistant(entry, where, content, calls))
            else:
                call_id = required(entry, "tool_call_id", str, where)
                messages.append(tool_message(call_id, content, calls))
        stream_options = optional(data, "stream_options", dict, {})
        return WireRequest(
            format=self.name,
            model=model,
            messages=tuple(messages),
            system="\n\n".join(system) if system else None,
            tools=_tools(data),
            stream=optional(data, "stream", bool, False),
            include_usage=optional(stream_options, "include_usage", bool, False, "stream_options"),
            settings=settings_of(data, _KNOWN),
        )

    def response_body(self, answer: WireAnswer, *, model: str, response_id: str) -> JsonObject:
        """A ``chat.completion`` object."""
        reply: dict[str, Any] = {
            "role": "assistant",
            "content": answer.text if answer.text or answer.refusal is None else None,
            "refusal": answer.refusal,
            "annotations": [],
        }
        if answer.tool_calls:
            reply["tool_calls"] = [_call(call) for call in answer.tool_calls]
        if answer.tool_calls and not answer.text:
            reply["content"] = None
        if answer.reasoning:  # as DeepSeek, vLLM and other compatible servers send it
            reply["reasoning_content"] = answer.reasoning
        return {
            "id": response_id,
            "object": "chat.completion",
            "created": self.created,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": reply,
                    "logprobs": _logprobs(logprob_entries(answer)),
                    "finish_reason": finish_reason(answer),
                }
            ],
            "usage": _usage(answer.usage),
            "service_tier": "default",
        }

    def stream_chunks(
        self, answer: WireAnswer, *, model: str, response_id: str, include_usage: bool
    ) -> list[bytes]:
        """``chat.completion.chunk`` events: the role, the reasoning (``reasoning_content``, as
        compatible servers stream it) and the text (or refusal) word by word, each tool call (id
        and name first, then its arguments in fragments), the finish reason, the usage when
        ``include_usage`` (with no choices), then ``[DONE]``. As the API does, an answer of tool
        calls only names the role in the chunk that opens the first call."""
        head = {
            "id": response_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": model,
        }

        def chunk(
            delta: JsonObject, finish: str | None = None, logprobs: JsonObject | None = None
        ) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
            return sse_data({**head, "choices": [choice]})

        first: JsonObject = {"role": "assistant", "content": "", "refusal": None}
        calls_only = not answer.text and answer.refusal is None
        if calls_only:
            first["content"] = None
        opens_with_a_call = calls_only and answer.tool_calls and not answer.reasoning
        events = [] if opens_with_a_call else [chunk(first)]
        events.extend(chunk({"reasoning_content": piece}) for piece in pieces(answer.reasoning))
        entries = logprob_entries(answer)
        if entries:  # a token a chunk, each with its log probabilities, as the API streams them
            events.extend(
                chunk({"content": entry["token"]}, logprobs=_logprobs([entry])) for entry in entries
            )
        else:
            events.extend(chunk({"content": piece}) for piece in pieces(answer.text))
        if answer.refusal is not None:
            events.extend(chunk({"refusal": piece}) for piece in pieces(answer.refusal))
        for index, call in enumerate(answer.tool_calls):
            opening = {
                "index": index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            opens = {"tool_calls": [opening]}
            events.append(chunk({**first, **opens} if not events else opens))
            events.extend(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
                for fragment in slices(arguments_json(call))
            )
        events.append(chunk({}, finish_reason(answer)))
        if include_usage:
            events.append(sse_data({**head, "choices": [], "usage": _usage(answer.usage)}))
        events.append(DONE)
        return events

    def error_body(self, status: int, message: str, *, param: str | None = None) -> JsonObject:
        """``{"error": {"message", "type", "param", "code"}}`` with OpenAI's type and code."""
        return openai_error(status, message, param)

    def logprobs_asked(self, request: WireRequest) -> int | None:
        """``top_logprobs`` (0 when not given) when the request sends ``logprobs: true``."""
        settings = request.settings
        return top_count(settings) if settings.get("logprobs") is True else None

    def tool_choice(self, request: WireRequest) -> ToolChoice:
        """``tool_choice`` (``"none"``, ``"required"``, or ``{"type": "function", "function":
        {"name": ...}}``) and ``parallel_tool_calls``."""
        settings = request.settings
        if "tool_choice" not in settings and "parallel_tool_calls" not in settings:
            return ANY_ANSWER  # most requests: the model is free
        choice = settings.get("tool_choice")
        function = choice.get("function") if isinstance(choice, dict) else None
        named = function.get("name") if isinstance(function, dict) else None
        return openai_tool_choice(settings, named if isinstance(named, str) else None)


def _logprobs(entries: list[JsonObject]) -> JsonObject | None:
    """A choice's ``logprobs``: null when none are sent."""
    return {"content": entries, "refusal": None} if entries else None


def _call(call: ToolCall) -> JsonObject:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments_json(call)},
    }


def _usage(usage: Usage) -> JsonObject:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total(),
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": usage.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _name(entry: dict[str, Any], where: str) -> str:
    return optional(entry, "name", str, "", where)


def _assistant(entry: dict[str, Any], where: str, content: str, calls: dict[str, str]) -> Message:
    """An assistant message; its tool calls are remembered in ``calls`` (id to name)."""
    if not content and entry.get("refusal") is not None:
        content = typed(entry["refusal"], str, join(where, "refusal"))
    tool_calls: list[ToolCall] = []
    for call_where, call in objects(entry.get("tool_calls") or [], join(where, "tool_calls")):
        function = required(call, "function", dict, call_where)
        function_where = join(call_where, "function")
        made = tool_call(
            required(call, "id", str, call_where),
            required(function, "name", str, function_where),
            arguments_of(optional(function, "arguments", str, "", function_where)),
            call_where,
            id_key="id",
            name_key="function.name",
        )
        calls[made.id] = made.name
        tool_calls.append(made)
    return message(Role.ASSISTANT, content, name=_name(entry, where), tool_calls=tuple(tool_calls))


def _tools(data: dict[str, Any]) -> tuple[ToolSchema, ...]:
    """The function tools offered (tools of other types are not the endpoint's to play)."""
    schemas: list[ToolSchema] = []
    for where, tool in objects(data.get("tools") or [], "tools"):
        if optional(tool, "type", str, "function", where) != "function":
            continue
        function = required(tool, "function", dict, where)
        schemas.append(function_tool(function, join(where, "function")))
    return tuple(schemas)


CHAT = ChatFormat()
"""The Chat Completions format, with the default ``created`` time."""
