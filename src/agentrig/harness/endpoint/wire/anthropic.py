"""Anthropic Messages (``POST /v1/messages``), plain and streamed."""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from agentrig._model import JsonObject
from agentrig.harness.endpoint.wire._common import (
    BaseFormat,
    arguments_json,
    fail,
    join,
    kind_of,
    message,
    objects,
    optional,
    pieces,
    required,
    settings_of,
    slices,
    sse_event,
    text_of,
    tool_call,
    tool_message,
    tool_schema,
    typed,
)
from agentrig.harness.endpoint.wire.base import ANY_ANSWER, ToolChoice, WireAnswer, WireRequest
from agentrig.messages import Message, Role, ToolCall
from agentrig.state import ToolSchema, Usage
from agentrig.state.status import FinishReason

_KNOWN = frozenset({"model", "messages", "system", "tools", "stream"})
_TEXT_BLOCKS = frozenset({"text"})
_STOP = {
    FinishReason.STOP: "end_turn",
    FinishReason.LENGTH: "max_tokens",
    FinishReason.TOOL_CALLS: "tool_use",
    FinishReason.CONTENT_FILTER: "refusal",
}
# HTTP status -> the error type the Anthropic API sends with it.
_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def stop_reason(answer: WireAnswer) -> str:
    """The ``stop_reason`` of ``answer``: ``refusal`` for a refusal, ``tool_use`` whenever it
    calls tools and ended normally; ``error`` and ``other`` become ``end_turn``."""
    if answer.refusal is not None:
        return "refusal"
    if answer.tool_calls and answer.finish_reason in (FinishReason.STOP, FinishReason.TOOL_CALLS):
        return "tool_use"
    return _STOP.get(answer.finish_reason, "end_turn")


class AnthropicFormat(BaseFormat):
    """Anthropic Messages."""

    name = "anthropic"
    path = "/v1/messages"

    def _read(self, data: dict[str, Any]) -> WireRequest:
        model = required(data, "model", str)
        required(data, "max_tokens", int)
        system = data.get("system")
        messages: list[Message] = []
        calls: dict[str, str] = {}
        for where, turn in objects(required(data, "messages", list), "messages"):
            role = required(turn, "role", str, where)
            if role not in ("user", "assistant"):
                raise fail(join(where, "role"), f"{role!r} is not one of user, assistant")
            content = required(turn, "content", object, where)
            if role == "user" and type(content) is str:  # the usual question: no blocks to walk
                messages.append(message(Role.USER, content))
            elif role == "user":
                messages.extend(_user(content, join(where, "content"), calls))
            else:
                messages.append(_assistant(content, join(where, "content"), calls))
        return WireRequest(
            format=self.name,
            model=model,
            messages=tuple(messages),
            system=None if system is None else text_of(system, "", "system", _TEXT_BLOCKS),
            tools=_tools(data),
            stream=optional(data, "stream", bool, False),
            settings=settings_of(data, _KNOWN),
            seals_reasoning=True,
        )

    def response_body(self, answer: WireAnswer, *, model: str, response_id: str) -> JsonObject:
        """A ``message`` object: a ``thinking`` block (with its signature) if the model reasoned
        (a ``redacted_thinking`` block of opaque ``data`` if it reasoned without text), a text block (the refusal, if any), then a ``tool_use`` block per tool call."""
        return {
            **_message(model, response_id),
            "content": [
                *_thinking_blocks(answer),
                *_text_blocks(answer),
                *(_tool_use(call, call.arguments) for call in answer.tool_calls),
            ],
            "stop_reason": stop_reason(answer),
            "usage": _usage(answer.usage),
        }

    def stream_chunks(
        self, answer: WireAnswer, *, model: str, response_id: str, include_usage: bool
    ) -> list[bytes]:
        """``message_start``, then per block ``content_block_start``, its deltas
        (``thinking_delta`` word by word and one ``signature_delta``, ``text_delta`` word by
        word, ``input_json_delta`` in fragments; none for a ``redacted_thinking`` block, whole in
        its start) and ``content_block_stop``;
        ``message_delta`` with the stop reason and usage, then ``message_stop``. A ``ping``
        follows the first block's start, as the API sends it. Usage is always sent
        (``include_usage`` is an OpenAI option)."""
        usage = _usage(answer.usage)
        start = {**_message(model, response_id), "content": [], "stop_reason": None}
        start["usage"] = {**usage, "output_tokens": min(1, answer.usage.output_tokens)}
        events = [sse_event("message_start", {"type": "message_start", "message": start})]
        index = 0
        for block in _thinking_blocks(answer):
            if block["type"] == "redacted_thinking":  # whole in its start, as the API sends it
                events.extend((_block_start(index, block), _block_stop(index)))
                index += 1
                continue
            events.append(_block_start(index, {**block, "thinking": "", "signature": ""}))
            events.extend(
                _block_delta(index, {"type": "thinking_delta", "thinking": piece})
                for piece in pieces(block["thinking"])
            )
            events.append(
                _block_delta(index, {"type": "signature_delta", "signature": block["signature"]})
            )
            events.append(_block_stop(index))
            index += 1
        for block in _text_blocks(answer):
            events.append(_block_start(index, {"type": "text", "text": ""}))
            events.extend(
                _block_delta(index, {"type": "text_delta", "text": piece})
                for piece in pieces(block["text"])
            )
            events.append(_block_stop(index))
            index += 1
        for call in answer.tool_calls:
            events.append(_block_start(index, _tool_use(call, {})))
            events.extend(
                _block_delta(index, {"type": "input_json_delta", "partial_json": fragment})
                for fragment in slices(arguments_json(call))
            )
            events.append(_block_stop(index))
            index += 1
        events.insert(min(2, len(events)), _PING)  # after the first block's start, if any
        delta = {"stop_reason": stop_reason(answer), "stop_sequence": None}
        events.append(
            sse_event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage})
        )
        events.append(sse_event("message_stop", {"type": "message_stop"}))
        return events

    def tool_choice(self, request: WireRequest) -> ToolChoice:
        """``tool_choice``: ``{"type": "auto" | "any" | "tool" | "none"}``, with the tool's
        ``name`` and ``disable_parallel_tool_use``."""
        choice = request.settings.get("tool_choice")
        if not isinstance(choice, dict):
            return ANY_ANSWER
        kind, name = choice.get("type"), choice.get("name")
        single = choice.get("disable_parallel_tool_use") is True
        modes: dict[Any, Any] = {"none": "none", "any": "required", "tool": "tool"}
        return ToolChoice(
            mode=modes.get(kind, "auto"),
            tool=name if kind == "tool" and isinstance(name, str) else None,
            parallel=not single,
            said=f"tool_choice: {to_json(choice).decode()}",
            parallel_said="disable_parallel_tool_use: true" if single else "",
        )

    def error_body(self, status: int, message: str, *, param: str | None = None) -> JsonObject:
        """``{"type": "error", "error": {"type", "message"}}``; the API has no ``param``, so a
        field at fault is named in the message. Statuses without a type of their own take 400's
        below 500 and 500's from 500 on."""
        kind = _ERRORS.get(status) or _ERRORS[500 if status >= 500 else 400]
        if param and param not in message:
            message = f"{param}: {message}"
        return {"type": "error", "error": {"type": kind, "message": message}}


_PING = sse_event("ping", {"type": "ping"})


def _message(model: str, response_id: str) -> JsonObject:
    return {
        "id": response_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "stop_sequence": None,
    }


def _thinking_blocks(answer: WireAnswer) -> list[JsonObject]:
    if answer.redacted:
        return [{"type": "redacted_thinking", "data": answer.seal}]
    if not answer.reasoning:
        return []
    return [{"type": "thinking", "thinking": answer.reasoning, "signature": answer.seal}]


def _text_blocks(answer: WireAnswer) -> list[JsonObject]:
    text = answer.text if answer.refusal is None else answer.text + answer.refusal
    return [{"type": "text", "text": text}] if text else []


def _tool_use(call: ToolCall, arguments: JsonObject) -> JsonObject:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}


def _block_start(index: int, block: JsonObject) -> bytes:
    data = {"type": "content_block_start", "index": index, "content_block": block}
    return sse_event("content_block_start", data)


def _block_delta(index: int, delta: JsonObject) -> bytes:
    data = {"type": "content_block_delta", "index": index, "delta": delta}
    return sse_event("content_block_delta", data)


def _block_stop(index: int) -> bytes:
    return sse_event("content_block_stop", {"type": "content_block_stop", "index": index})


def _usage(usage: Usage) -> JsonObject:
    """Anthropic's usage: ``input_tokens`` counts only what was neither read from nor written to
    the cache (agentrig's ``input_tokens`` counts all three, as ``AnthropicProvider`` adds them)."""
    cached = usage.cache_read_tokens + usage.cache_write_tokens
    return {
        "input_tokens": max(0, usage.input_tokens - cached),
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
    }


def _blocks(content: object, where: str) -> list[tuple[str, str, dict[str, Any]]]:
    """``(path, type, block)`` of each block of a content given as a string or a block list."""
    if isinstance(content, str):
        return [(where, "text", {"text": content})]  # the type is the tuple's
    if not isinstance(content, list):
        raise fail(where, f"expected a string or an array, got {kind_of(content)}")
    found = []
    for path, block in objects(content, where):
        found.append((path, required(block, "type", str, path), block))
    return found


def _user(content: object, where: str, calls: dict[str, str]) -> list[Message]:
    """A user turn: one TOOL message per ``tool_result`` block, then its text, if any."""
    messages: list[Message] = []
    texts: list[str] = []
    for path, kind, block in _blocks(content, where):
        if kind == "text":
            texts.append(required(block, "text", str, path))
        elif kind == "tool_result":
            call_id = required(block, "tool_use_id", str, path)
            result = text_of(block.get("content"), path, "content", _TEXT_BLOCKS)
            is_error = optional(block, "is_error", bool, False, path)
            messages.append(tool_message(call_id, result, calls, is_error))
    if texts:
        messages.append(message(Role.USER, "".join(texts)))
    return messages


def _assistant(content: object, where: str, calls: dict[str, str]) -> Message:
    """An assistant turn; its tool uses are remembered in ``calls`` (id to name), the signature
    of its first thinking block (the data of a redacted thinking block) is its seal."""
    texts: list[str] = []
    tool_calls: list[ToolCall] = []
    seal, redacted = "", False
    for path, kind, block in _blocks(content, where):
        if kind == "text":
            texts.append(required(block, "text", str, path))
        elif kind == "thinking":
            seal = seal or required(block, "signature", str, path)
        elif kind == "redacted_thinking":
            data = required(block, "data", str, path)
            seal, redacted = (seal, redacted) if seal else (data, True)
        elif kind == "tool_use":
            made = tool_call(
                required(block, "id", str, path),
                required(block, "name", str, path),
                typed(block.get("input", {}), dict, join(path, "input")),
                path,
                id_key="id",
                name_key="name",
            )
            calls[made.id] = made.name
            tool_calls.append(made)
    return message(
        Role.ASSISTANT, "".join(texts), tool_calls=tuple(tool_calls), seal=seal, redacted=redacted
    )


def _tools(data: dict[str, Any]) -> tuple[ToolSchema, ...]:
    """The client tools offered (server tools, which have a versioned type, are not the
    endpoint's to play)."""
    schemas: list[ToolSchema] = []
    for where, tool in objects(data.get("tools") or [], "tools"):
        if optional(tool, "type", str, "custom", where) != "custom":
            continue
        schemas.append(
            tool_schema(
                required(tool, "name", str, where),
                optional(tool, "description", str, "", where),
                required(tool, "input_schema", dict, where),
                where,
            )
        )
    return tuple(schemas)


ANTHROPIC = AnthropicFormat()
"""The Anthropic Messages format."""
