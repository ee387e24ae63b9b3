"""Google's Gemini API (``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse``), plain and streamed.

The model and whether to stream are in the URL, not the body. Fields are read in either of the
names the API accepts (``functionCall`` or ``function_call``), as its JSON mapping does. Tool
parameters come as the API's schema (upper-case ``STRING``, ``nullable``), which is read as the
JSON Schema it stands for, or as ``parametersJsonSchema``.

Every ``functionCall`` of an answer carries the tool call's ``id`` (as Gemini 3 models send
them); a client may send a call back without it, as the API allows: such a call is read with a
placeholder id (``ANONYMOUS_CALL``) that the session replaces with the id of the call it
repeats, and a ``functionResponse`` without one answers the first unanswered call of its name.
Reasoning is sealed by a ``thoughtSignature`` on the first part of a ``functionCall`` (on the
first text part when the answer calls no tool), which the API needs back with the calls; its
text goes as thought parts only to a request that asks for them (``includeThoughts``: see
``WireRequest.reasoning_shown``).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs

from agentrig._model import JsonObject
from agentrig.harness.endpoint.wire._common import (
    ANONYMOUS_CALL,
    BaseFormat,
    fail,
    join,
    message,
    objects,
    optional,
    pieces,
    required,
    settings_of,
    tool_message,
    tool_schema,
    top_count,
    typed,
)
from agentrig.harness.endpoint.wire._common import json_bytes as _json
from agentrig.harness.endpoint.wire.base import (
    ANY_ANSWER,
    TokenLogprobs,
    ToolChoice,
    WireAnswer,
    WireError,
    WireRequest,
)
from agentrig.messages import Message, Role, ToolCall
from agentrig.state import ToolSchema, Usage
from agentrig.state.status import FinishReason

ROUTE = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$")
"""A Gemini model call's path: the model, then the method (on any base path: ``/v1beta``,
``/v1``, a Vertex AI ``.../publishers/google``, a prefix of the user's own)."""

_KNOWN = frozenset(
    {"contents", "systemInstruction", "system_instruction", "tools"},
)
_FINISH = {
    FinishReason.STOP: "STOP",
    FinishReason.TOOL_CALLS: "STOP",
    FinishReason.LENGTH: "MAX_TOKENS",
    FinishReason.CONTENT_FILTER: "SAFETY",
    FinishReason.ERROR: "OTHER",
    FinishReason.OTHER: "OTHER",
}
# HTTP status -> the canonical status name Google's APIs send with it.
_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
# A result the client wrapped in an object of one member (as the SDKs and frameworks do:
# google-genai's users ``result``, LangChain ``output``, pydantic-ai ``return_value``) is read
# as that member's text; ``error`` marks a failed call (pydantic-ai, Google's docs).
_RESULT_KEYS = frozenset({"output", "result", "return_value", "content", "error"})


def _member(data: dict[str, Any], camel: str, snake: str) -> Any:
    """A member under its lowerCamel name or its proto name (the API accepts both)."""
    value = data.get(camel)
    return data.get(snake) if value is None else value


def finish_reason(answer: WireAnswer) -> str:
    """The ``finishReason`` of ``answer``: ``SAFETY`` for a refusal; a tool-calling answer stops
    with ``STOP`` (the API has no word of its own for it)."""
    if answer.refusal is not None:
        return "SAFETY"
    return _FINISH.get(answer.finish_reason, "STOP")


def standard_base64(text: str) -> str:
    """A base64 text in the standard alphabet, padded: the SDK sends a ``thoughtSignature``
    back URL-safe and unpadded; text that is not base64 is kept as it is."""
    normal = text.replace("-", "+").replace("_", "/")
    normal += "=" * (-len(normal) % 4)
    try:
        return base64.b64encode(base64.b64decode(normal, validate=True)).decode()
    except (binascii.Error, ValueError):
        return text


class GeminiFormat(BaseFormat):
    """Google's Gemini API (the Gemini Developer API's ``generateContent`` and
    ``streamGenerateContent``; Vertex AI's paths end alike)."""

    name = "gemini"
    path = "/v1beta/models/{model}:generateContent"

    def matches(self, path: str) -> bool:
        """Whether ``path`` (without its query) is a ``generateContent`` or
        ``streamGenerateContent`` call."""
        return ROUTE.search(path) is not None

    def read(self, target: str, body: bytes) -> WireRequest:
        """Read a request posted to ``target`` (path and query): the model and streaming from
        the path, the rest from the body. A stream is server-sent events with ``alt=sse`` (as
        the SDKs ask), else one JSON array sent element by element (the API's default)."""
        path, _, query = target.partition("?")
        found = ROUTE.search(path)
        if found is None:
            raise WireError(f"path: {path!r} is not a generateContent call", param="path")
        request = self.parse_request(body)
        request.model = found["model"]
        if found["method"] == "streamGenerateContent":
            alt = parse_qs(query).get("alt", [""])[-1]
            if alt not in ("sse", "json", ""):
                raise WireError(
                    f"alt: {alt!r} is not a stream the agentrig endpoint sends; use alt=sse "
                    "(server-sent events, as the SDKs ask) or leave alt out (one JSON array)",
                    param="alt",
                )
            request.stream, request.json_array = True, alt != "sse"
        return request

    def json_array(self, events: Sequence[bytes], *, closed: bool) -> list[bytes]:
        """The ``data:`` events of a stream as the API sends a stream without ``alt=sse``: one
        JSON array, ``[`` before the first element, ``,`` between them, each sent as it comes;
        ``]`` ends it when ``closed`` (not for a stream cut midway)."""
        elements = [event.removeprefix(b"data: ").rstrip(b"\r\n") for event in events]
        chunks = [(b"[" if index == 0 else b"\n,\r\n") + e for index, e in enumerate(elements)]
        if closed:
            chunks.append(b"\n]" if chunks else b"[]")
        return chunks

    def _read(self, data: dict[str, Any]) -> WireRequest:
        messages: list[Message] = []
        pending: list[tuple[str, str]] = []  # the calls of the model turn before: (id, name)
        anonymous = 0
        for where, content in objects(required(data, "contents", list), "contents"):
            role = optional(content, "role", str, "user", where)
            if role not in ("user", "model", "function"):
                raise fail(join(where, "role"), f"{role!r} is not one of user, model")
            parts = objects(required(content, "parts", list, where), join(where, "parts"))
            if role == "model":
                made, anonymous = _model_turn(parts, anonymous)
                messages.append(made)
                pending = [(call.id, call.name) for call in made.tool_calls]
            else:
                found, anonymous = _user_turn(parts, pending, anonymous)
                messages.extend(found)
        system_key = "systemInstruction" if "systemInstruction" in data else "system_instruction"
        system = data.get(system_key)
        return WireRequest(
            format=self.name,
            model="",
            messages=tuple(messages),
            system=None if system is None else _system(system, system_key),
            tools=_tools(data),
            settings=settings_of(data, _KNOWN),
            seals_reasoning=True,
            reasoning_shown=_thoughts_asked(data),
            anonymous_calls=anonymous > 0,
        )

    def tool_choice(self, request: WireRequest) -> ToolChoice:
        """``toolConfig.functionCallingConfig``: ``mode`` ``NONE`` (no call), ``ANY`` (at least
        one call), ``AUTO`` or ``VALIDATED`` (text or calls); with ``ANY`` or ``VALIDATED``,
        ``allowedFunctionNames`` limits the tools a call may name. The API has no parallel
        setting."""
        config = _member(request.settings, "toolConfig", "tool_config")
        calling = (
            _member(config, "functionCallingConfig", "function_calling_config")
            if isinstance(config, dict)
            else None
        )
        if not isinstance(calling, dict):
            return ANY_ANSWER
        mode = calling.get("mode")
        mode = mode.upper() if isinstance(mode, str) else "AUTO"
        names = _member(calling, "allowedFunctionNames", "allowed_function_names")
        allowed = None
        if mode in ("ANY", "VALIDATED") and isinstance(names, list) and names:
            allowed = tuple(name for name in names if isinstance(name, str))
        modes: dict[str, Any] = {"NONE": "none", "ANY": "required"}
        key = (
            "toolConfig" if isinstance(request.settings.get("toolConfig"), dict) else "tool_config"
        )
        return ToolChoice(
            mode=modes.get(mode, "auto"),
            allowed=allowed,
            said=f"{key}: {_json(config).decode()}",
        )

    def logprobs_asked(self, request: WireRequest) -> int | None:
        """``generationConfig.logprobs`` (0 when not given) when the request sends
        ``responseLogprobs: true``."""
        generation = _member(request.settings, "generationConfig", "generation_config")
        if not isinstance(generation, dict):
            return None
        if _member(generation, "responseLogprobs", "response_logprobs") is not True:
            return None
        return top_count({"top_logprobs": generation.get("logprobs")})

    def response_body(self, answer: WireAnswer, *, model: str, response_id: str) -> JsonObject:
        """A ``GenerateContentResponse``: one candidate whose parts are the thoughts (when the
        model reasoned with text the client may see), the text (or refusal), then a
        ``functionCall`` per tool call; its ``finishReason``, ``logprobsResult`` and
        ``avgLogprobs`` (when the request asked for log probabilities), and
        ``usageMetadata``."""
        return _response(
            _parts(answer),
            finish_reason(answer),
            _usage(answer.usage),
            model,
            response_id,
            _logprobs(answer, answer.sent_logprobs(), average=True),
        )

    def stream_chunks(
        self, answer: WireAnswer, *, model: str, response_id: str, include_usage: bool
    ) -> list[bytes]:
        """``GenerateContentResponse`` chunks as ``data:`` events: the thoughts, then the text,
        word by word, then the tool calls together in one chunk, as the API streams them (whole,
        never in fragments). Each chunk carries the usage so far (the prompt's); the last one
        the ``finishReason`` and the whole usage. ``include_usage`` is an OpenAI option."""
        prompt = _prompt_usage(answer.usage)
        chunks: list[list[JsonObject]] = []
        seal = answer.seal
        if answer.reasoning and not answer.redacted:
            chunks.extend([{"text": piece, "thought": True}] for piece in pieces(answer.reasoning))
        text = _text(answer)
        tokens = answer.sent_logprobs()
        if "".join(entry.token for entry in tokens) != text:  # a refusal beside them
            tokens = ()
        # With log probabilities, the text goes a token a chunk, each with its own.
        first_text = len(chunks)
        texts = [entry.token for entry in tokens] if tokens else pieces(text)
        for piece in texts:
            part: JsonObject = {"text": piece}
            if seal and not answer.tool_calls:
                part["thoughtSignature"], seal = seal, ""
            chunks.append([part])
        calls = _calls(answer, seal if answer.tool_calls else "")
        if calls:
            chunks.append(calls)
        elif seal:  # reasoned, said nothing: the signature alone
            chunks.append([{"text": "", "thoughtSignature": seal}])
        if not chunks:
            chunks.append([{"text": ""}])
        last = len(chunks) - 1

        def scores(index: int) -> JsonObject:
            at = index - first_text
            found = _logprobs(answer, tokens[at : at + 1] if 0 <= at < len(tokens) else ())
            if index == last and tokens:
                found["avgLogprobs"] = _average(tokens)
            return found

        return [
            _event(
                _response(
                    parts,
                    finish_reason(answer) if index == last else None,
                    _usage(answer.usage) if index == last else prompt,
                    model,
                    response_id,
                    scores(index),
                )
            )
            for index, parts in enumerate(chunks)
        ]

    def error_body(self, status: int, message: str, *, param: str | None = None) -> JsonObject:
        """``{"error": {"code", "message", "status"}}`` with Google's status name; a field at
        fault also as a ``BadRequest`` field violation in ``details``."""
        name = _STATUSES.get(status) or _STATUSES[500 if status >= 500 else 400]
        error: JsonObject = {"code": status, "message": message, "status": name}
        if param:
            error["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [{"field": param, "description": message}],
                }
            ]
        return {"error": error}

    def models_body(self, names: list[str]) -> JsonObject:
        """The answer to ``GET .../models``: each model with the methods it serves."""
        return {
            "models": [
                {
                    "name": f"models/{name}",
                    "displayName": name,
                    "supportedGenerationMethods": ["generateContent", "streamGenerateContent"],
                }
                for name in names
            ]
        }


def _event(data: JsonObject) -> bytes:
    # The API ends each event with CRLF CRLF.
    return b"data: " + _json(data) + b"\r\n\r\n"


def _response(
    parts: list[JsonObject],
    finish: str | None,
    usage: JsonObject,
    model: str,
    response_id: str,
    scores: JsonObject | None = None,
) -> JsonObject:
    candidate: JsonObject = {"content": {"parts": parts, "role": "model"}}
    if finish is not None:
        candidate["finishReason"] = finish
    if scores:
        candidate.update(scores)
    candidate["index"] = 0
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": response_id,
    }


def _logprobs(
    answer: WireAnswer, tokens: Sequence[TokenLogprobs], *, average: bool = False
) -> JsonObject:
    """A candidate's ``logprobsResult`` for ``tokens`` (each chosen token, and its likeliest
    alternatives cut to ``answer.logprobs_top``), with ``avgLogprobs`` over them when
    ``average``; nothing without tokens."""
    if not tokens:
        return {}
    top = answer.logprobs_top or 0
    result: JsonObject = {
        "logprobsResult": {
            "topCandidates": [
                {"candidates": [_candidate(token, value) for token, value in entry.top[:top]]}
                for entry in tokens
            ],
            "chosenCandidates": [_candidate(entry.token, entry.logprob) for entry in tokens],
        }
    }
    if average:
        result["avgLogprobs"] = _average(tokens)
    return result


def _candidate(token: str, logprob: float) -> JsonObject:
    return {"token": token, "logProbability": logprob}


def _average(tokens: Sequence[TokenLogprobs]) -> float:
    return math.fsum(entry.logprob for entry in tokens) / len(tokens)


def _text(answer: WireAnswer) -> str:
    return answer.text if answer.refusal is None else answer.text + answer.refusal


def _parts(answer: WireAnswer) -> list[JsonObject]:
    parts: list[JsonObject] = []
    if answer.reasoning and not answer.redacted:
        parts.append({"text": answer.reasoning, "thought": True})
    text = _text(answer)
    seal = answer.seal
    if text:
        part: JsonObject = {"text": text}
        if seal and not answer.tool_calls:
            part["thoughtSignature"], seal = seal, ""
        parts.append(part)
    calls = _calls(answer, seal if answer.tool_calls else "")
    parts.extend(calls)
    if seal and not calls and not text:
        parts.append({"text": "", "thoughtSignature": seal})
    return parts or [{"text": ""}]


def _calls(answer: WireAnswer, seal: str) -> list[JsonObject]:
    parts: list[JsonObject] = []
    for call in answer.tool_calls:
        part: JsonObject = {
            "functionCall": {"id": call.id, "name": call.name, "args": call.arguments}
        }
        if seal:
            part["thoughtSignature"], seal = seal, ""
        parts.append(part)
    return parts


def _prompt_usage(usage: Usage) -> JsonObject:
    """The usage a stream's chunks carry before the last: the prompt only."""
    found: JsonObject = {
        "promptTokenCount": usage.input_tokens,
        "totalTokenCount": usage.input_tokens,
    }
    if usage.cache_read_tokens:
        found["cachedContentTokenCount"] = usage.cache_read_tokens
    return found


def _usage(usage: Usage) -> JsonObject:
    """Gemini's usage: ``candidatesTokenCount`` without the thoughts, which
    ``thoughtsTokenCount`` counts (agentrig's ``output_tokens`` counts both)."""
    thoughts = min(usage.reasoning_tokens, usage.output_tokens)
    found = _prompt_usage(usage)
    found["candidatesTokenCount"] = usage.output_tokens - thoughts
    found["totalTokenCount"] = usage.input_tokens + usage.output_tokens
    if thoughts:
        found["thoughtsTokenCount"] = thoughts
    return found


def _thoughts_asked(data: dict[str, Any]) -> bool:
    """Whether the request asks to see the model's thoughts (``generationConfig.thinkingConfig
    .includeThoughts``; the google-genai SDK sends ``include_thoughts`` there)."""
    generation = _member(data, "generationConfig", "generation_config")
    thinking = (
        _member(generation, "thinkingConfig", "thinking_config")
        if isinstance(generation, dict)
        else None
    )
    if not isinstance(thinking, dict):
        return False
    return _member(thinking, "includeThoughts", "include_thoughts") is True


def _system(value: object, key: str) -> str:
    """The system instruction's text: a ``Content`` (its text parts, joined) or a string."""
    if isinstance(value, str):
        return value
    content = typed(value, dict, key)
    texts = []
    for where, part in objects(required(content, "parts", list, key), join(key, "parts")):
        if not part.get("thought"):
            texts.append(optional(part, "text", str, "", where))
    return "".join(texts)


def _model_turn(parts: list[tuple[str, dict[str, Any]]], anonymous: int) -> tuple[Message, int]:
    """A model turn: its text (thoughts left out), its calls, and its first
    ``thoughtSignature`` as the seal of its reasoning."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    seal = ""
    for where, part in parts:
        signature = _member(part, "thoughtSignature", "thought_signature")
        if signature is not None and not seal:
            seal = standard_base64(typed(signature, str, join(where, "thoughtSignature")))
        called = _member(part, "functionCall", "function_call")
        if called is not None:
            call_where = join(where, "functionCall")
            called = typed(called, dict, call_where)
            name = required(called, "name", str, call_where)
            if not name:
                raise fail(join(call_where, "name"), "empty")
            call_id = optional(called, "id", str, "", call_where)
            if not call_id:
                anonymous += 1
                call_id = f"{ANONYMOUS_CALL}{anonymous}"
            arguments = optional(called, "args", dict, {}, call_where)
            calls.append(ToolCall._trusted(id=call_id, name=name, arguments=arguments))
        elif "text" in part and not part.get("thought"):
            texts.append(required(part, "text", str, where))
    return message(Role.ASSISTANT, "".join(texts), tool_calls=tuple(calls), seal=seal), anonymous


def _user_turn(
    parts: list[tuple[str, dict[str, Any]]], pending: list[tuple[str, str]], anonymous: int
) -> tuple[list[Message], int]:
    """A user turn: one TOOL message per ``functionResponse`` (in order), then its text; the
    calls it answers are taken off ``pending``."""
    found: list[Message] = []
    texts: list[str] = []
    calls = dict(pending)
    for where, part in parts:
        responded = _member(part, "functionResponse", "function_response")
        if responded is not None:
            response_where = join(where, "functionResponse")
            responded = typed(responded, dict, response_where)
            name = required(responded, "name", str, response_where)
            call_id = optional(responded, "id", str, "", response_where)
            if not call_id:  # the first unanswered call of that name, as the API pairs them
                match = next((i for i, (_, called) in enumerate(pending) if called == name), None)
                if match is None:
                    anonymous += 1
                    call_id = f"{ANONYMOUS_CALL}{anonymous}"
                else:
                    call_id = pending.pop(match)[0]
            else:
                pending[:] = [entry for entry in pending if entry[0] != call_id]
            result = responded.get("response")
            content, is_error = _result(result, join(response_where, "response"))
            found.append(tool_message(call_id, content, {**calls, call_id: name}, is_error))
        elif "text" in part and not part.get("thought"):
            texts.append(required(part, "text", str, where))
    if texts:
        found.append(message(Role.USER, "".join(texts)))
    return found, anonymous


def _result(response: object, where: str) -> tuple[str, bool]:
    """A function response's text and whether it reports an error: the member of a one-member
    wrapper (``{"output": ...}``, ``{"result": ...}``, ``{"error": ...}``...) as text, anything
    else as compact JSON."""
    if response is None:
        return "", False
    value = typed(response, dict, where)
    if len(value) == 1:
        (key, inner), *_ = value.items()
        if key in _RESULT_KEYS:
            text = inner if isinstance(inner, str) else _json(inner).decode()
            return text, key == "error"
    return _json(value).decode(), False


def _tools(data: dict[str, Any]) -> tuple[ToolSchema, ...]:
    """The function declarations offered (built-in tools, as ``googleSearch``, are not the
    endpoint's to play)."""
    schemas: list[ToolSchema] = []
    for where, tool in objects(data.get("tools") or [], "tools"):
        key = "functionDeclarations" if "functionDeclarations" in tool else "function_declarations"
        for declared_at, declared in objects(tool.get(key) or [], join(where, key)):
            schemas.append(_declaration(declared, declared_at))
    return tuple(schemas)


def _declaration(declared: dict[str, Any], where: str) -> ToolSchema:
    json_schema = _member(declared, "parametersJsonSchema", "parameters_json_schema")
    if json_schema is not None:
        parameters = typed(json_schema, dict, join(where, "parametersJsonSchema"))
    else:
        schema = optional(declared, "parameters", dict, {}, where)
        parameters = json_schema_of(schema) if schema else {"type": "object", "properties": {}}
    return tool_schema(
        required(declared, "name", str, where),
        optional(declared, "description", str, "", where),
        parameters,
        where,
    )


def json_schema_of(schema: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema a Gemini ``Schema`` stands for: its types in lower case (``STRING`` is
    ``string``), ``nullable: true`` as a type that also allows ``null``, throughout
    ``properties``, ``items`` and ``anyOf``."""
    found: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            found[key] = value.lower()
        elif key == "properties" and isinstance(value, dict):
            found[key] = {
                name: json_schema_of(inner) if isinstance(inner, dict) else inner
                for name, inner in value.items()
            }
        elif key == "items" and isinstance(value, dict):
            found[key] = json_schema_of(value)
        elif key in ("anyOf", "any_of") and isinstance(value, list):
            found["anyOf"] = [json_schema_of(v) if isinstance(v, dict) else v for v in value]
        elif key != "nullable":
            found[key] = value
    if schema.get("nullable") is True and isinstance(found.get("type"), str):
        found["type"] = [found["type"], "null"]
    return found


GEMINI = GeminiFormat()
"""The Gemini API format."""
