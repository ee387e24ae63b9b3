"""A Gemini answer, as a real server sent it, read back into agentrig's terms: what record-through
records of each model call on the Gemini API (agentrig has no provider of its own for it).

The answer is a ``GenerateContentResponse``, or the ``data:`` events of a stream of them, whose
parts are joined: text, thought text (the reasoning), ``functionCall`` parts (the tool calls),
the first ``thoughtSignature`` (kept as the sealed reasoning, so that a conversion knows the
model reasoned even when it showed no thought text), the last ``finishReason`` and usage.
"""

from __future__ import annotations

import json
from typing import Any

from agentrig._model import JsonObject
from agentrig.errors import InvalidInputError, ProviderError
from agentrig.fakes.llm import REASONING_SEAL_KEY
from agentrig.messages import ToolCall
from agentrig.state import InferenceRequest, InferenceResponse, Usage
from agentrig.state.status import FinishReason

_FILTERED = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"})
_RETRYABLE = frozenset({408, 409, 429})


class GeminiAnswer:
    """An ``InferenceProvider`` that answers with one Gemini answer as recorded: HTTP
    ``status`` and ``body`` (server-sent events, or one JSON array, when ``streamed``)."""

    def __init__(self, status: int, body: bytes, *, streamed: bool) -> None:
        self.status = status
        self.body = body
        self.streamed = streamed

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        """The recorded answer; ``ProviderError`` for an error answer or one that cannot be
        read."""
        return gemini_response(self.status, self.body, streamed=self.streamed)


def gemini_response(status: int, body: bytes, *, streamed: bool) -> InferenceResponse:
    """The ``InferenceResponse`` of a Gemini answer (see the module's docstring)."""
    if status >= 400:
        raise ProviderError(
            f"Gemini API error {status}: {_error_message(body)}",
            retryable=status in _RETRYABLE or status >= 500,
            status_code=status,
            provider="gemini",
        )
    try:
        chunks = _events(body) if streamed else [json.loads(body)]
        return _joined([chunk for chunk in chunks if isinstance(chunk, dict)])
    except (ValueError, TypeError, KeyError, AttributeError, InvalidInputError) as error:
        raise ProviderError(
            f"the Gemini answer could not be read: {error}", status_code=status, provider="gemini"
        ) from None


def _error_message(body: bytes) -> str:
    try:
        error = json.loads(body)["error"]
        return f"{error.get('status', '')}: {error['message']}".lstrip(": ")
    except (ValueError, TypeError, KeyError):
        return body.decode(errors="replace")[:200]


def _events(body: bytes) -> list[Any]:
    """The JSON of each ``data:`` event of a server-sent event stream; the elements of a
    stream sent as one JSON array (``streamGenerateContent`` without ``alt=sse``)."""
    if body.lstrip().startswith(b"["):
        elements = json.loads(body)
        return elements if isinstance(elements, list) else []
    found: list[Any] = []
    for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = b"\n".join(
            line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:")
        )
        if data:
            found.append(json.loads(data))
    return found


def _joined(chunks: list[JsonObject]) -> InferenceResponse:
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    seal = ""
    finish: str | None = None
    usage: JsonObject = {}
    response_id = model = ""
    for chunk in chunks:
        response_id = str(chunk.get("responseId") or response_id)
        model = str(chunk.get("modelVersion") or model)
        usage = chunk.get("usageMetadata") or usage
        for candidate in (chunk.get("candidates") or [])[:1]:
            finish = candidate.get("finishReason") or finish
            for part in (candidate.get("content") or {}).get("parts") or []:
                seal = seal or str(part.get("thoughtSignature") or "")
                called = part.get("functionCall")
                if called is not None:
                    call_id = called.get("id") or f"call_{len(calls) + 1}"
                    arguments = called.get("args") or {}
                    calls.append(ToolCall(id=call_id, name=called["name"], arguments=arguments))
                elif part.get("thought"):
                    thoughts.append(str(part.get("text") or ""))
                elif "text" in part:
                    texts.append(str(part["text"]))
    return InferenceResponse(
        content="".join(texts),
        tool_calls=tuple(calls),
        usage=_usage(usage),
        finish_reason=_finish(finish, bool(calls)),
        reasoning_content="".join(thoughts),
        model=model,
        response_id=response_id,
        provider_data={REASONING_SEAL_KEY: seal} if seal else {},
    )


def _finish(reason: str | None, calls: bool) -> FinishReason | None:
    if reason is None:
        return None
    if reason == "STOP":
        return FinishReason.TOOL_CALLS if calls else FinishReason.STOP
    if reason == "MAX_TOKENS":
        return FinishReason.LENGTH
    return FinishReason.CONTENT_FILTER if reason in _FILTERED else FinishReason.OTHER


def _usage(usage: JsonObject) -> Usage:
    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    thoughts = count("thoughtsTokenCount")
    return Usage(
        input_tokens=count("promptTokenCount"),
        output_tokens=count("candidatesTokenCount") + thoughts,
        cache_read_tokens=count("cachedContentTokenCount"),
        reasoning_tokens=thoughts,
    )
