"""``OpenAIProvider``: OpenAI Chat Completions (or any compatible API) through the ``openai`` SDK.

Needs the ``openai`` extra: ``pip install './agentrig[openai]'`` from a checkout. The SDK is imported when a
provider is built, never by ``import agentrig``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Iterable
from typing import Any

from agentrig._model import JsonObject
from agentrig.drivers._sdk import (
    OPENAI_CLIENTS,
    SdkProvider,
    dump_arguments,
    extra_body,
    fallback_finish,
    import_sdk,
    parse_arguments,
    reported_error,
    sdk_options,
    tool_call,
    usage_count,
    usage_of,
    usage_part,
)
from agentrig.drivers.pricing import PriceTable
from agentrig.drivers.provider import Delta
from agentrig.errors import ProviderError
from agentrig.messages import Message, Messages, Role, ToolCall
from agentrig.state import InferenceRequest, InferenceResponse, ToolSchema, Usage
from agentrig.state.status import FinishReason

_FINISH = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
}
_RESPONSE_FORMAT_TYPES = frozenset({"text", "json_object", "json_schema"})
_REASONING_FIELDS = ("reasoning_content", "reasoning")
"""The message fields compatible providers put their reasoning in (DeepSeek, vLLM, Qwen:
``reasoning_content``; OpenRouter, Ollama, Groq: ``reasoning``). The reasoning is kept in the
answer's ``provider_data`` under the field it came in, and sent back in that field with the
assistant message, as providers that keep thinking across a tool loop need."""


class OpenAIProvider(SdkProvider):
    """Answers inference requests with OpenAI Chat Completions.

    Pass a ready ``openai.OpenAI`` client (and ``async_client``, an ``openai.AsyncOpenAI``, for
    ``ainfer``), or ``api_key``/``base_url``/``max_retries``/``timeout`` to build both, each when a call first needs it (``base_url`` reaches any compatible API: OpenRouter, vLLM, Ollama...).
    ``model`` is used when the request's ``LlmConfig`` names none. ``stream=True`` streams the
    answer and assembles it, and ``infer_stream``/``ainfer_stream`` hand its pieces to
    ``AgentLoop.stream`` as they arrive. ``prices`` sets ``Usage.cost``. ``max_tokens_param`` is
    the body field ``LlmConfig.max_output_tokens`` goes to (older compatible servers want
    ``max_tokens``).
    """

    name = "openai"
    key_hint = "OPENAI_API_KEY"
    _sdk_label = "OpenAI"
    _kinds = OPENAI_CLIENTS

    def __init__(
        self,
        *,
        client: Any = None,
        async_client: Any = None,
        model: str = "",
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float | None = None,
        stream: bool = False,
        prices: PriceTable | None = None,
        max_tokens_param: str = "max_completion_tokens",
    ) -> None:
        self._sdk = import_sdk("openai", "openai")
        options = sdk_options(api_key, base_url, max_retries, timeout)
        self._given_or_built(options, client, async_client)
        self.model = model
        self.stream = stream
        self.prices = prices
        self.max_tokens_param = max_tokens_param

    def request_body(self, request: InferenceRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request``."""
        config = request.llm_config
        body: dict[str, Any] = {
            "model": self._model_of(request),
            "messages": _chat_messages(request.messages),
        }
        if request.tools:
            body["tools"] = [_tool(schema) for schema in request.tools]
            if request.tool_choice != "auto":
                body["tool_choice"] = _tool_choice(request.tool_choice)
        if request.response_format:
            body["response_format"] = _response_format(request.response_format)
        if config is not None and config.temperature is not None:
            body["temperature"] = config.temperature
        if config is not None and config.max_output_tokens is not None:
            body[self.max_tokens_param] = config.max_output_tokens
        extra = extra_body(request)
        if extra:
            body["extra_body"] = extra
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def _whole(self, body: dict[str, Any]) -> InferenceResponse:
        return self._from_completion(self.client.chat.completions.create(**body), body)

    async def _awhole(self, body: dict[str, Any]) -> InferenceResponse:
        completion = await self.async_client.chat.completions.create(**body)
        return self._from_completion(completion, body)

    def _from_completion(self, answer: Any, body: dict[str, Any]) -> InferenceResponse:
        completion = self._checked(answer, "a chat completion")
        if not completion.choices:
            # OpenRouter, for one, reports upstream failures as a 200 with an "error" body.
            error = (completion.model_extra or {}).get("error")
            raise reported_error(self.name, error, "the answer has no choices")
        choice = completion.choices[0]
        message = choice.message
        if message is None:
            raise ProviderError(
                f"openai API answered with no message (finish_reason {choice.finish_reason!r}); "
                "retry, or check the model and the request.",
                provider=self.name,
            )
        calls = tuple(
            tool_call(
                self.name,
                index,
                call.id,
                call.function.name,
                parse_arguments(call.function.arguments),
            )
            for index, call in enumerate(message.tool_calls or ())
            if getattr(call, "function", None) is not None
        )
        extra = message.model_extra or {}
        return self._answer(
            content=message.content or message.refusal or "",
            refused=bool(message.refusal),
            calls=calls,
            finish=choice.finish_reason,
            usage=completion.usage,
            model=(completion.model or "", body["model"]),
            response_id=completion.id or "",
            reasoning=_reasoning(extra),
        )

    def _pieces(self, body: dict[str, Any]) -> Generator[Delta, None, InferenceResponse]:
        stream = _StreamAssembler()
        with self.client.chat.completions.create(**body) as chunks:
            for chunk in chunks:
                yield from stream.add(chunk)
        return self._from_stream(stream, body)

    async def _apieces(
        self, body: dict[str, Any]
    ) -> AsyncGenerator[Delta | InferenceResponse, None]:
        stream = _StreamAssembler()
        async with await self.async_client.chat.completions.create(**body) as chunks:
            async for chunk in chunks:
                for piece in stream.add(chunk):
                    yield piece
        yield self._from_stream(stream, body)

    def _from_stream(self, stream: _StreamAssembler, body: dict[str, Any]) -> InferenceResponse:
        if not stream.chunks:
            raise self._empty_stream()
        return self._answer(
            content="".join(stream.content) or "".join(stream.refusal),
            refused=bool(stream.refusal),
            calls=stream.tool_calls(),
            finish=stream.finish,
            usage=stream.usage,
            model=(stream.model, body["model"]),
            response_id=stream.id,
            reasoning=("".join(stream.reasoning), stream.reasoning_field),
        )

    def _answer(
        self,
        *,
        content: str,
        refused: bool,
        calls: tuple[ToolCall, ...],
        finish: str | None,
        usage: Any,
        model: tuple[str, str],
        response_id: str,
        reasoning: tuple[str, str],
    ) -> InferenceResponse:
        """The response; ``model`` is the one that answered and the one requested.

        A refusal that ended naturally finishes with ``content_filter``, as Anthropic's does
        (the API itself says ``stop``).
        """
        mapped = _FINISH.get(finish, FinishReason.OTHER) if finish else None
        if refused and not calls and mapped in (None, FinishReason.STOP):
            mapped = FinishReason.CONTENT_FILTER
        answered, requested = model
        text, field = reasoning
        provider_data: JsonObject = {"finish_reason": finish}
        if text:
            provider_data[field] = text
        return InferenceResponse(
            content=content,
            tool_calls=calls,
            usage=self._priced(_usage(usage), answered, requested),
            finish_reason=fallback_finish(mapped, bool(calls)),
            reasoning_content=text,
            model=answered,
            response_id=response_id,
            provider_data=provider_data,
        )

    def __repr__(self) -> str:
        return f"OpenAIProvider(model={self.model!r}, stream={self.stream})"


class _StreamAssembler:
    """Builds one answer from Chat Completions chunks.

    Tool-call deltas are accumulated by their ``index``; a name is assigned, not appended (some
    compatible servers repeat it in every delta); a stream may end without a finish reason or usage.
    """

    def __init__(self) -> None:
        self.chunks = 0
        self.content: list[str] = []
        self.refusal: list[str] = []
        self.reasoning: list[str] = []
        self.reasoning_field = _REASONING_FIELDS[0]
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: Any = None
        self.model = ""
        self.id = ""

    def add(self, chunk: Any) -> list[Delta]:
        """Take one chunk; returns its pieces (text, refusal text, reasoning, tool-argument pieces)."""
        self.chunks += 1
        self.id = self.id or chunk.id or ""
        self.model = self.model or chunk.model or ""
        if chunk.usage is not None:
            self.usage = chunk.usage
        pieces: list[Delta] = []
        for choice in chunk.choices or ():
            if choice.index == 0:
                self._delta(choice.delta, pieces)
                self.finish = choice.finish_reason or self.finish
        return pieces

    def _delta(self, delta: Any, pieces: list[Delta]) -> None:
        if delta is None:
            return
        if delta.content:
            self.content.append(delta.content)
            pieces.append(Delta(text=delta.content))
        if getattr(delta, "refusal", None):
            self.refusal.append(delta.refusal)
            pieces.append(Delta(text=delta.refusal))
        extra = delta.model_extra or {}
        for field in _REASONING_FIELDS:
            reasoning = extra.get(field)
            if isinstance(reasoning, str) and reasoning:
                self.reasoning.append(reasoning)
                self.reasoning_field = field
                pieces.append(Delta(reasoning=reasoning))
                break
        for part in delta.tool_calls or ():
            index = part.index if part.index is not None else len(self.calls)
            slot = self.calls.get(index)
            if slot is None:  # position: the call's place among the answer's calls
                slot = {"id": "", "name": "", "arguments": [], "position": len(self.calls)}
                self.calls[index] = slot
            # the id and name go out once, when first known (some servers repeat them)
            new_id = part.id if part.id and not slot["id"] else None
            slot["id"] = part.id or slot["id"]
            function = part.function
            new_name, arguments = None, ""
            if function is not None:
                new_name = function.name if function.name and not slot["name"] else None
                slot["name"] = function.name or slot["name"]
                if function.arguments:
                    arguments = function.arguments
                    slot["arguments"].append(arguments)
            if new_id or new_name or arguments:
                pieces.append(
                    Delta(
                        index=slot["position"], call_id=new_id, name=new_name, arguments=arguments
                    )
                )

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(
            tool_call(
                "openai",
                index,
                self.calls[index]["id"],
                self.calls[index]["name"],
                parse_arguments("".join(self.calls[index]["arguments"])),
            )
            for index in sorted(self.calls)
        )


def _chat_messages(messages: Messages | Iterable[Message]) -> list[dict[str, Any]]:
    """agentrig messages as Chat Completions messages."""
    return [_chat_message(message) for message in messages]


def _chat_message(message: Message) -> dict[str, Any]:
    if message.role is Role.TOOL:
        result = message.tool_result
        return {
            "role": "tool",
            "tool_call_id": result.call_id if result is not None else message.name,
            "content": message.content,
        }
    if message.role is Role.ASSISTANT and message.tool_calls:
        entry: dict[str, Any] = {
            "role": "assistant",
            "tool_calls": [_call(c) for c in message.tool_calls],
        }
        if message.content:
            entry["content"] = message.content
        return _with_reasoning(entry, message)
    entry = {"role": message.role.value, "content": message.content}
    if message.role is Role.ASSISTANT:
        _with_reasoning(entry, message)
    if message.name and message.role in (Role.USER, Role.ASSISTANT):
        entry["name"] = message.name
    return entry


def _reasoning(extra: dict[str, Any]) -> tuple[str, str]:
    """The reasoning text of a whole answer's message and the field it came in."""
    for field in _REASONING_FIELDS:
        value = extra.get(field)
        if isinstance(value, str) and value:
            return value, field
    return "", _REASONING_FIELDS[0]


def _with_reasoning(entry: dict[str, Any], message: Message) -> dict[str, Any]:
    """``entry`` with the reasoning the assistant ``message`` was answered with, sent back."""
    for field in _REASONING_FIELDS:
        value = message.provider_data.get(field)
        if isinstance(value, str) and value:
            entry[field] = value
    return entry


def _call(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": dump_arguments(call.arguments)},
    }


def _tool(schema: ToolSchema) -> dict[str, Any]:
    parameters = schema.parameters or {"type": "object", "properties": {}}
    function: dict[str, Any] = {
        "name": schema.name,
        "description": schema.description,
        "parameters": parameters,
    }
    if schema.strict:  # off is the API's default: the body stays as it was
        function["strict"] = True
    return {"type": "function", "function": function}


def _tool_choice(choice: str) -> Any:
    if choice in ("none", "required", "auto"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def _response_format(response_format: JsonObject) -> JsonObject:
    """A Chat Completions ``response_format``; a bare JSON Schema is wrapped as ``json_schema``."""
    if response_format.get("type") in _RESPONSE_FORMAT_TYPES:
        return response_format
    name = response_format.get("title")
    return {
        "type": "json_schema",
        "json_schema": {
            "name": name if isinstance(name, str) else "response",
            "schema": response_format,
        },
    }


def _usage(usage: Any) -> Usage:
    if usage_part("openai", usage, "usage") is None:
        return Usage()
    prompt = usage_part(
        "openai", getattr(usage, "prompt_tokens_details", None), "prompt_tokens_details"
    )
    completion = usage_part(
        "openai", getattr(usage, "completion_tokens_details", None), "completion_tokens_details"
    )
    return usage_of(
        "openai",
        input_tokens=usage_count("openai", usage, "prompt_tokens", required=True),
        output_tokens=usage_count("openai", usage, "completion_tokens", required=True),
        cache_read_tokens=usage_count("openai", prompt, "cached_tokens"),
        reasoning_tokens=usage_count("openai", completion, "reasoning_tokens"),
    )
