"""OpenAI Responses (``POST /v1/responses``), plain and streamed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentrig._model import JsonObject
from agentrig.harness.endpoint.wire._common import (
    BaseFormat,
    arguments_json,
    arguments_of,
    fail,
    function_tool,
    join,
    kind_of,
    logprob_entries,
    message,
    objects,
    openai_tool_choice,
    optional,
    pieces,
    required,
    settings_of,
    slices,
    sse_event,
    text_of,
    tool_call,
    tool_message,
    top_count,
)
from agentrig.harness.endpoint.wire.base import ANY_ANSWER, ToolChoice, WireAnswer, WireRequest
from agentrig.harness.endpoint.wire.chat import openai_error
from agentrig.messages import Message, Role, ToolCall
from agentrig.state import ToolSchema, Usage
from agentrig.state.status import FinishReason

_KNOWN = frozenset({"model", "input", "instructions", "tools", "stream"})
_ENCRYPTED_REASONING = "reasoning.encrypted_content"
_LOGPROBS = "message.output_text.logprobs"
_ROLES = ("system", "developer", "user", "assistant")
_TEXT_PARTS = frozenset({"input_text", "output_text", "text", "refusal"})
# Why a response is incomplete, by the finish reason that made it so.
_INCOMPLETE = {
    FinishReason.LENGTH: "max_output_tokens",
    FinishReason.CONTENT_FILTER: "content_filter",
}


class ResponsesFormat(BaseFormat):
    """OpenAI Responses. ``created`` is the ``created_at`` time every answer carries (fixed, so
    that an answer's bytes are the same on every run).

    Output item ids are made from the response id: ``rs_<response_id>`` for the reasoning,
    ``msg_<response_id>`` for the message, ``fc_<response_id>_<n>`` for the n-th function call
    (whose ``call_id`` is the tool call's id). A reasoning item carries its text as a summary
    (an empty summary for redacted reasoning), and its seal as ``encrypted_content`` when
    ``include`` asks for ``reasoning.encrypted_content``.
    """

    name = "responses"
    path = "/v1/responses"

    def _read(self, data: dict[str, Any]) -> WireRequest:
        model = required(data, "model", str)
        system: list[str] = []
        instructions = optional(data, "instructions", str, "")
        if instructions:
            system.append(instructions)
        messages: list[Message] = []
        raw = required(data, "input", object)
        if isinstance(raw, str):
            messages.append(message(Role.USER, raw))
        else:
            _conversation(raw, system, messages)
        return WireRequest(
            format=self.name,
            model=model,
            messages=tuple(messages),
            system="\n\n".join(system) if system else None,
            tools=_tools(data),
            stream=optional(data, "stream", bool, False),
            settings=settings_of(data, _KNOWN),
            seals_reasoning=_ENCRYPTED_REASONING in optional(data, "include", list, []),
        )

    def response_body(self, answer: WireAnswer, *, model: str, response_id: str) -> JsonObject:
        """A ``response`` object: a reasoning item if the model reasoned, a message item (text
        or refusal) if there is one, then a ``function_call`` item per tool call;
        ``incomplete`` with its reason for an answer cut by length or filtered content."""
        items = _items(answer, response_id)
        return self._response(answer, model, response_id, status=_status(answer), output=items)

    def stream_chunks(
        self, answer: WireAnswer, *, model: str, response_id: str, include_usage: bool
    ) -> list[bytes]:
        """``response.created``, ``response.in_progress``, then per output item
        ``output_item.added``, its parts and deltas and ``output_item.done``, and last
        ``response.completed`` (``response.incomplete`` for an incomplete answer), each with its
        ``sequence_number``. Usage is always in the last event (``include_usage`` is a Chat
        Completions option)."""
        events = _Events()
        started = self._response(answer, model, response_id, status="in_progress", output=[])
        started["usage"] = None
        events.add("response.created", response=started)
        events.add("response.in_progress", response=started)
        items = _items(answer, response_id)
        for index, item in enumerate(items):
            _stream_item(events, index, item)
        status = _status(answer)
        final = self._response(answer, model, response_id, status=status, output=items)
        events.add(
            "response.completed" if status == "completed" else "response.incomplete", response=final
        )
        return events.chunks

    def error_body(self, status: int, message: str, *, param: str | None = None) -> JsonObject:
        """``{"error": {"message", "type", "param", "code"}}`` with OpenAI's type and code."""
        return openai_error(status, message, param)

    def logprobs_asked(self, request: WireRequest) -> int | None:
        """``top_logprobs`` (0 when not given) when ``include`` asks for
        ``message.output_text.logprobs``."""
        include = request.settings.get("include")
        if not isinstance(include, list) or _LOGPROBS not in include:
            return None
        return top_count(request.settings)

    def tool_choice(self, request: WireRequest) -> ToolChoice:
        """``tool_choice`` (``"none"``, ``"required"``, or ``{"type": "function", "name":
        ...}``) and ``parallel_tool_calls``."""
        settings = request.settings
        if "tool_choice" not in settings and "parallel_tool_calls" not in settings:
            return ANY_ANSWER  # most requests: the model is free
        choice = settings.get("tool_choice")
        named = choice.get("name") if isinstance(choice, dict) else None
        return openai_tool_choice(settings, named if isinstance(named, str) else None)

    def _response(
        self,
        answer: WireAnswer,
        model: str,
        response_id: str,
        *,
        status: str,
        output: list[JsonObject],
    ) -> JsonObject:
        incomplete = _INCOMPLETE.get(answer.finish_reason) if status == "incomplete" else None
        return {
            "id": response_id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": None if incomplete is None else {"reason": incomplete},
            "instructions": None,
            "max_output_tokens": None,
            "model": model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None},
            "store": False,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": _usage(answer.usage),
            "user": None,
            "metadata": {},
        }


def _status(answer: WireAnswer) -> str:
    return (
        "incomplete"
        if answer.finish_reason in _INCOMPLETE and answer.refusal is None
        else "completed"
    )


def _items(answer: WireAnswer, response_id: str) -> list[JsonObject]:
    items: list[JsonObject] = []
    if answer.reasoning or answer.redacted:
        # redacted: reasoning without text, as the API sends it unless reasoning.summary is asked
        summary = [{"type": "summary_text", "text": answer.reasoning}] if answer.reasoning else []
        reasoning: JsonObject = {"id": f"rs_{response_id}", "type": "reasoning", "summary": summary}
        if answer.seal:
            reasoning["encrypted_content"] = answer.seal
        items.append(reasoning)
    parts: list[JsonObject] = []
    if answer.text:
        logprobs = logprob_entries(answer)
        parts.append(
            {"type": "output_text", "annotations": [], "logprobs": logprobs, "text": answer.text}
        )
    if answer.refusal is not None:
        parts.append({"type": "refusal", "refusal": answer.refusal})
    if parts:
        items.append(
            {
                "id": f"msg_{response_id}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": parts,
            }
        )
    items.extend(
        _call_item(index, call, response_id) for index, call in enumerate(answer.tool_calls)
    )
    return items


def _call_item(index: int, call: ToolCall, response_id: str) -> JsonObject:
    return {
        "id": f"fc_{response_id}_{index}",
        "type": "function_call",
        "status": "completed",
        "arguments": arguments_json(call),
        "call_id": call.id,
        "name": call.name,
    }


def _usage(usage: Usage) -> JsonObject:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total(),
    }


class _Events:
    """Named events with their ``sequence_number``, counted from 0."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def add(self, kind: str, **fields: Any) -> None:
        data = {"type": kind, **fields, "sequence_number": len(self.chunks)}
        self.chunks.append(sse_event(kind, data))


def _stream_item(events: _Events, index: int, item: JsonObject) -> None:
    """``output_item.added`` with the item as it opens, the events of its parts, and
    ``output_item.done`` with the whole item."""
    kind = item["type"]
    opened = {**item, **_OPENED[kind]}
    events.add("response.output_item.added", output_index=index, item=opened)
    _PARTS[kind](events, {"item_id": item["id"], "output_index": index}, item)
    events.add("response.output_item.done", output_index=index, item=item)


def _message_parts(events: _Events, where: JsonObject, item: JsonObject) -> None:
    for position, part in enumerate(item["content"]):
        at = {**where, "content_index": position}
        if part["type"] == "output_text":
            opened = {**part, "text": "", "logprobs": []}
            events.add("response.content_part.added", **at, part=opened)
            logprobs = [_streamed(entry) for entry in part["logprobs"]]
            if logprobs:  # a token a delta, each with its log probabilities
                for entry in logprobs:
                    events.add(
                        "response.output_text.delta", **at, delta=entry["token"], logprobs=[entry]
                    )
            else:
                for piece in pieces(part["text"]):
                    events.add("response.output_text.delta", **at, delta=piece, logprobs=[])
            events.add("response.output_text.done", **at, text=part["text"], logprobs=logprobs)
        else:
            events.add("response.content_part.added", **at, part={**part, "refusal": ""})
            for piece in pieces(part["refusal"]):
                events.add("response.refusal.delta", **at, delta=piece)
            events.add("response.refusal.done", **at, refusal=part["refusal"])
        events.add("response.content_part.done", **at, part=part)


def _streamed(entry: JsonObject) -> JsonObject:
    """A token's log probabilities as the stream events carry them: without ``bytes``."""
    return {
        "token": entry["token"],
        "logprob": entry["logprob"],
        "top_logprobs": [
            {"token": top["token"], "logprob": top["logprob"]} for top in entry["top_logprobs"]
        ],
    }


def _summary_parts(events: _Events, where: JsonObject, item: JsonObject) -> None:
    for position, part in enumerate(item["summary"]):
        at = {**where, "summary_index": position}
        events.add("response.reasoning_summary_part.added", **at, part={**part, "text": ""})
        for piece in pieces(part["text"]):
            events.add("response.reasoning_summary_text.delta", **at, delta=piece)
        events.add("response.reasoning_summary_text.done", **at, text=part["text"])
        events.add("response.reasoning_summary_part.done", **at, part=part)


def _arguments(events: _Events, where: JsonObject, item: JsonObject) -> None:
    for fragment in slices(item["arguments"]):
        events.add("response.function_call_arguments.delta", **where, delta=fragment)
    events.add(
        "response.function_call_arguments.done",
        **where,
        name=item["name"],
        arguments=item["arguments"],
    )


_OPENED: dict[str, JsonObject] = {
    "message": {"status": "in_progress", "content": []},
    "reasoning": {"summary": []},
    "function_call": {"status": "in_progress", "arguments": ""},
}
"""What an output item holds when it opens, before its parts stream."""

_PARTS: dict[str, Callable[[_Events, JsonObject, JsonObject], None]] = {
    "message": _message_parts,
    "reasoning": _summary_parts,
    "function_call": _arguments,
}


def _conversation(raw: object, system: list[str], messages: list[Message]) -> None:
    """The ``input`` items as messages: consecutive function calls join the assistant message
    before them, and a reasoning item's ``encrypted_content`` seals the assistant message after
    it; other item types are left out."""
    if not isinstance(raw, list):
        raise fail("input", f"expected a string or an array, got {kind_of(raw)}")
    calls: dict[str, str] = {}
    seal = ""
    for where, item in objects(raw, "input"):
        kind = optional(item, "type", str, "message", where)
        if kind == "reasoning":
            seal = optional(item, "encrypted_content", str, "", where) or seal
        elif kind == "message":
            role = required(item, "role", str, where)
            if role not in _ROLES:
                raise fail(join(where, "role"), f"{role!r} is not one of {', '.join(_ROLES)}")
            content = _item_text(item, "content", where)
            if role in ("system", "developer"):
                system.append(content)
            elif role == "assistant":
                messages.append(message(Role.ASSISTANT, content, seal=seal))
                seal = ""
            else:
                messages.append(message(Role(role), content))
        elif kind == "function_call":
            call = tool_call(
                required(item, "call_id", str, where),
                required(item, "name", str, where),
                arguments_of(required(item, "arguments", str, where)),
                where,
                id_key="call_id",
                name_key="name",
            )
            calls[call.id] = call.name
            last = messages[-1] if messages else None
            if last is not None and last.role is Role.ASSISTANT and not seal:
                messages[-1] = last._replace(tool_calls=(*last.tool_calls, call))
            else:
                messages.append(message(Role.ASSISTANT, tool_calls=(call,), seal=seal))
                seal = ""
        elif kind == "function_call_output":
            call_id = required(item, "call_id", str, where)
            output = _item_text(item, "output", where)
            messages.append(tool_message(call_id, output, calls))


def _item_text(item: dict[str, Any], key: str, where: str) -> str:
    """The text of member ``key`` of the input item at ``where`` (a string or a list of parts)."""
    return text_of(required(item, key, object, where), where, key, _TEXT_PARTS)


def _tools(data: dict[str, Any]) -> tuple[ToolSchema, ...]:
    """The function tools offered, in the flat Responses shape (built-in tools such as web
    search are not the endpoint's to play)."""
    schemas: list[ToolSchema] = []
    for where, tool in objects(data.get("tools") or [], "tools"):
        if required(tool, "type", str, where) != "function":
            continue
        schemas.append(function_tool(tool, where))
    return tuple(schemas)


RESPONSES = ResponsesFormat()
"""The Responses format, with the default ``created_at`` time."""
