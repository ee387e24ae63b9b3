"""``AnthropicProvider``: the Anthropic Messages API through the ``anthropic`` SDK.

Needs the ``anthropic`` extra: ``pip install './agentrig[anthropic]'`` from a checkout. The SDK is imported when a
provider is built, never by ``import agentrig``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Iterable
from typing import Any, NoReturn

from agentrig._model import JsonObject
from agentrig._text import clipped
from agentrig.drivers._sdk import (
    ANTHROPIC_CLIENTS,
    SdkProvider,
    extra_body,
    fallback_finish,
    import_sdk,
    malformed_usage,
    parse_arguments,
    sdk_options,
    tool_call,
    usage_of,
    usage_part,
)
from agentrig.drivers.pricing import PriceTable
from agentrig.drivers.provider import Delta
from agentrig.errors import InvalidInputError
from agentrig.messages import Message, Role, ToolCall
from agentrig.state import InferenceRequest, InferenceResponse, ToolSchema, Usage
from agentrig.state.status import FinishReason

_STOP = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "refusal": FinishReason.CONTENT_FILTER,
}
_SYSTEM_ROLES = (Role.SYSTEM, Role.DEVELOPER)
THINKING_KEY = "anthropic_thinking"
"""The ``provider_data`` key of an answer's thinking and redacted thinking blocks, in order, as
plain JSON dicts: the API needs them back, unchanged, in the assistant turn of a tool use."""
# The fields each kind of thinking block must carry (all strings).
_THINKING_FIELDS = {"thinking": ("thinking", "signature"), "redacted_thinking": ("data",)}


class AnthropicProvider(SdkProvider):
    """Answers inference requests with the Anthropic Messages API.

    Pass a ready ``anthropic.Anthropic`` client (and ``async_client``, an
    ``anthropic.AsyncAnthropic``, for ``ainfer``), or ``api_key``/``base_url``/``max_retries``/
    ``timeout`` to build both, each when a call first needs it. ``model`` is used when the request's ``LlmConfig`` names none;
    ``max_tokens`` (required by the API) when it sets no ``max_output_tokens``. ``stream=True``
    streams the answer and assembles it, and ``infer_stream``/``ainfer_stream`` hand
    its pieces to ``AgentLoop.stream`` as they arrive. ``prices`` sets ``Usage.cost``.

    With extended thinking (``LlmConfig(options={"thinking": {...}})``) an answer's thinking text
    is its ``reasoning_content`` and its thinking blocks, signatures included, are kept in
    ``provider_data["anthropic_thinking"]``; they are sent back first in that assistant turn.
    """

    name = "anthropic"
    key_hint = "ANTHROPIC_API_KEY"
    _sdk_label = "Anthropic"
    _kinds = ANTHROPIC_CLIENTS

    def __init__(
        self,
        *,
        client: Any = None,
        async_client: Any = None,
        model: str = "",
        max_tokens: int = 4096,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float | None = None,
        stream: bool = False,
        prices: PriceTable | None = None,
    ) -> None:
        self._sdk = import_sdk("anthropic", "anthropic")
        options = sdk_options(api_key, base_url, max_retries, timeout)
        self._given_or_built(options, client, async_client)
        self.model = model
        self.max_tokens = max_tokens
        self.stream = stream
        self.prices = prices

    def _check_options(self, probe: Any) -> None:
        if not _has_credentials(probe):
            # The SDK builds a client without credentials and fails only when it sends;
            # the OpenAI SDK refuses at once, and so does this provider.
            raise self._cannot_build("no API key")

    def request_body(self, request: InferenceRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request``."""
        config = request.llm_config
        max_tokens = config.max_output_tokens if config else None
        body: dict[str, Any] = {
            "model": self._model_of(request),
            "max_tokens": max_tokens or self.max_tokens,
            "messages": _turns(request.messages),
        }
        system = _system(request)
        if system:
            body["system"] = system
        if request.tools:
            body["tools"] = [_tool(schema) for schema in request.tools]
            if request.tool_choice != "auto":
                body["tool_choice"] = _tool_choice(request.tool_choice)
        if request.response_format:
            schema = _schema(request.response_format)
            if schema is not None:
                body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        # temperature is not a create() argument in anthropic 2.x, but the API takes it.
        extra = extra_body(request, temperature=config.temperature if config else None)
        if extra:
            body["extra_body"] = extra
        if self.stream:
            body["stream"] = True
        return body

    def _whole(self, body: dict[str, Any]) -> InferenceResponse:
        return self._from_message(self.client.messages.create(**body), body)

    async def _awhole(self, body: dict[str, Any]) -> InferenceResponse:
        return self._from_message(await self.async_client.messages.create(**body), body)

    def _from_message(self, answer: Any, body: dict[str, Any]) -> InferenceResponse:
        message = self._checked(answer, "a message")
        assembler = _Assembler()
        assembler.start(message)
        for index, block in enumerate(message.content):
            assembler.block(index, block)
        return self._answer(assembler, body["model"])

    def _pieces(self, body: dict[str, Any]) -> Generator[Delta, None, InferenceResponse]:
        assembler = _Assembler()
        with self.client.messages.create(**body) as events:
            for event in events:
                yield from assembler.event(event)
        return self._from_events(assembler, body)

    async def _apieces(
        self, body: dict[str, Any]
    ) -> AsyncGenerator[Delta | InferenceResponse, None]:
        assembler = _Assembler()
        async with await self.async_client.messages.create(**body) as events:
            async for event in events:
                for piece in assembler.event(event):
                    yield piece
        yield self._from_events(assembler, body)

    def _from_events(self, assembler: _Assembler, body: dict[str, Any]) -> InferenceResponse:
        if not assembler.started:
            raise self._empty_stream()
        return self._answer(assembler, body["model"])

    def _answer(self, assembler: _Assembler, requested: str) -> InferenceResponse:
        calls = assembler.tool_calls()
        stop = assembler.stop_reason
        mapped = _STOP.get(stop, FinishReason.OTHER) if stop else None
        provider_data: JsonObject = {"stop_reason": stop}
        thinking = assembler.thinking_blocks()
        if thinking:
            provider_data[THINKING_KEY] = thinking
        return InferenceResponse(
            content="".join(assembler.text),
            tool_calls=calls,
            usage=self._priced(assembler.usage(), assembler.model, requested),
            finish_reason=fallback_finish(mapped, bool(calls)),
            reasoning_content=assembler.reasoning(),
            model=assembler.model,
            response_id=assembler.id,
            provider_data=provider_data,
        )

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r}, stream={self.stream})"


class _Assembler:
    """One answer from a whole message or from stream events: text, thinking blocks and tool uses
    by block index (``thinking_delta`` and ``input_json_delta`` parts joined per block, a
    ``signature_delta`` setting its block's signature), stop reason and usage."""

    def __init__(self) -> None:
        self.text: list[str] = []
        # Per block index: ``{"type": "thinking", "thinking": [parts], "signature": str}`` or a
        # redacted block as sent.
        self.thinking: dict[int, dict[str, Any]] = {}
        self.tools: dict[int, dict[str, Any]] = {}
        self.counts: dict[str, int] = {}
        self.counted = False
        self.stop_reason: str | None = None
        self.model = ""
        self.id = ""
        self.started = False

    def start(self, message: Any) -> None:
        self.started = True
        self.id, self.model = message.id or "", message.model or ""
        self.stop_reason = message.stop_reason
        self._count(message.usage)

    def block(self, index: int, block: Any) -> list[Delta]:
        """Take content block ``index``; returns its pieces (its text or thinking, or a tool
        use's id and name)."""
        if block.type == "text":
            self.text.append(block.text)
            return [Delta(text=block.text)] if block.text else []
        if block.type == "thinking":
            self.thinking[index] = {
                "type": "thinking",
                "thinking": [block.thinking],
                "signature": getattr(block, "signature", None) or "",
            }
            return [Delta(reasoning=block.thinking)] if block.thinking else []
        elif block.type == "redacted_thinking":
            self.thinking[index] = {"type": "redacted_thinking", "data": block.data}
        elif block.type == "tool_use":
            position = len(self.tools)  # the call's place among the answer's calls
            self.tools[index] = {
                "id": block.id,
                "name": block.name,
                "input": block.input,
                "json": [],
                "position": position,
            }
            return [Delta(index=position, call_id=block.id, name=block.name)]
        return []

    def event(self, event: Any) -> list[Delta]:
        """Take one stream event; returns its pieces."""
        kind = event.type
        if kind == "message_start":
            self.start(event.message)
        elif kind == "content_block_start":
            return self.block(event.index, event.content_block)
        elif kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self._count(event.usage)
        return []

    def _delta(self, index: int, delta: Any) -> list[Delta]:
        if delta.type == "text_delta":
            self.text.append(delta.text)
            return [Delta(text=delta.text)] if delta.text else []
        if delta.type == "thinking_delta" and index in self.thinking:
            self.thinking[index]["thinking"].append(delta.thinking)
            return [Delta(reasoning=delta.thinking)] if delta.thinking else []
        elif delta.type == "signature_delta" and index in self.thinking:
            self.thinking[index]["signature"] = delta.signature
        elif delta.type == "input_json_delta" and index in self.tools:
            tool = self.tools[index]
            tool["json"].append(delta.partial_json)
            if delta.partial_json:
                return [Delta(index=tool["position"], arguments=delta.partial_json)]
        return []

    def _count(self, usage: Any) -> None:
        if usage_part("anthropic", usage, "usage") is None:
            return
        self.counted = True
        for field in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            value = getattr(usage, field, None)
            if value is not None:  # a stream's message_delta repeats only what changed
                self.counts[field] = value

    def usage(self) -> Usage:
        if not self.counted:
            return Usage()
        for field in ("input_tokens", "output_tokens"):  # the API always sends both
            if field not in self.counts:
                raise malformed_usage("anthropic", f"{field} is missing or null")
        read = self.counts.get("cache_read_input_tokens", 0)
        write = self.counts.get("cache_creation_input_tokens", 0)
        try:
            total = self.counts.get("input_tokens", 0) + read + write
        except TypeError as error:  # a count that is not a number
            raise malformed_usage("anthropic", str(error)) from None
        return usage_of(
            "anthropic",
            input_tokens=total,
            output_tokens=self.counts.get("output_tokens", 0),
            cache_read_tokens=read,
            cache_write_tokens=write,
        )

    def reasoning(self) -> str:
        """The text of the thinking blocks, joined."""
        return "".join(
            "".join(block["thinking"])
            for _, block in sorted(self.thinking.items())
            if block["type"] == "thinking"
        )

    def thinking_blocks(self) -> list[JsonObject]:
        """The thinking and redacted thinking blocks as the API wants them back, in order."""
        return [
            {**block, "thinking": "".join(block["thinking"])}
            if block["type"] == "thinking"
            else block
            for _, block in sorted(self.thinking.items())
        ]

    def tool_calls(self) -> tuple[ToolCall, ...]:
        calls: list[ToolCall] = []
        for index in sorted(self.tools):
            tool = self.tools[index]
            joined = "".join(tool["json"])
            arguments = parse_arguments(joined) if joined.strip() else dict(tool["input"] or {})
            calls.append(tool_call("anthropic", len(calls), tool["id"], tool["name"], arguments))
        return tuple(calls)


def _has_credentials(client: Any) -> bool:
    """Whether an SDK client has any way to authenticate: a key, a token, a credentials
    provider (a profile, workload identity) or an auth header of its own."""
    if client.api_key or client.auth_token or getattr(client, "credentials", None) is not None:
        return True
    headers = {name.lower() for name in client.default_headers}
    return bool(headers & {"x-api-key", "authorization"})


def _system(request: InferenceRequest) -> str:
    parts = [m.content for m in request.messages if m.role in _SYSTEM_ROLES and m.content]
    if request.response_format and request.response_format.get("type") == "json_object":
        parts.append("Reply with JSON only.")
    return "\n\n".join(parts)


def _schema(response_format: JsonObject) -> JsonObject | None:
    """The JSON Schema a response format asks for: a bare schema, or OpenAI's ``json_schema``
    form; None for ``{"type": "json_object"}`` (any JSON)."""
    kind = response_format.get("type")
    if kind == "json_schema":
        wrapped = response_format.get("json_schema")
        schema = (
            wrapped.get("schema") if isinstance(wrapped, dict) else response_format.get("schema")
        )
        return schema if isinstance(schema, dict) else None
    return None if kind in ("json_object", "text") else response_format


def _turns(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Messages as alternating user/assistant turns: tool results become ``tool_result`` blocks of
    a user turn, and consecutive blocks of one role are merged into one turn."""
    turns: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.role in _SYSTEM_ROLES:
            continue
        role = "assistant" if message.role is Role.ASSISTANT else "user"
        blocks = _blocks(index, message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _blocks(index: int, message: Message) -> list[dict[str, Any]]:
    if message.role is Role.TOOL:
        result = message.tool_result
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": result.call_id if result is not None else message.name,
            "content": message.content,
        }
        if result is not None and result.is_error:
            block["is_error"] = True
        return [block]
    blocks = _thinking(index, message) if message.role is Role.ASSISTANT else []
    # The API rejects empty and whitespace-only text blocks.
    if message.content.strip():
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in message.tool_calls
    )
    return blocks


def _thinking(index: int, message: Message) -> list[dict[str, Any]]:
    """The thinking blocks an assistant message keeps in ``provider_data``, checked: the API
    would reject a malformed one with an error that names neither the message nor the field."""
    blocks = message.provider_data.get(THINKING_KEY) if message.provider_data else None
    if blocks is None:
        return []
    field = f"messages[{index}].provider_data.{THINKING_KEY}"
    if not isinstance(blocks, list):
        _malformed(field, f"expected a list of thinking blocks, got {type(blocks).__name__}")
    for position, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        required = _THINKING_FIELDS.get(kind) if isinstance(kind, str) else None
        if required is None:
            _malformed(
                f"{field}[{position}]",
                f"expected a dict with type 'thinking' or 'redacted_thinking', got {_shown(block)}",
            )
        for name in required:
            if not isinstance(block.get(name), str):
                _malformed(f"{field}[{position}].{name}", f"a {kind} block needs a string {name}")
    return list(blocks)


def _malformed(field: str, reason: str) -> NoReturn:
    raise InvalidInputError(
        "Anthropic request",
        [(field, f"{reason}; keep the blocks exactly as AnthropicProvider stored them")],
    )


def _shown(value: object) -> str:
    return clipped(repr(value), 60)


def _tool(schema: ToolSchema) -> dict[str, Any]:
    # ``schema.strict`` is not sent: the Messages API has no strict flag on a tool outside a
    # beta that needs its own header, so the tool is offered as without it.
    return {
        "name": schema.name,
        "description": schema.description,
        "input_schema": schema.parameters or {"type": "object", "properties": {}},
    }


def _tool_choice(choice: str) -> dict[str, str]:
    if choice == "required":
        return {"type": "any"}
    if choice in ("none", "auto"):
        return {"type": choice}
    return {"type": "tool", "name": choice}
