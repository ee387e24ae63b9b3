"""``OpenAIResponsesProvider``: the OpenAI Responses API (``POST /v1/responses``) through the
``openai`` SDK, sync (``infer``) and async (``ainfer``), whole or streamed.

Needs the ``openai`` extra: ``pip install './agentrig[openai]'`` from a checkout. The SDK is imported when a
provider is built, never by ``import agentrig``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Iterable, Sequence
from typing import Any, NoReturn

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
from agentrig.errors import ConfigurationError, InvalidInputError, ProviderError
from agentrig.messages import Message, Role, ToolCall
from agentrig.state import InferenceRequest, InferenceResponse, ToolSchema, Usage
from agentrig.state.status import FinishReason

REASONING_KEY = "openai_reasoning"
"""The ``provider_data`` key of an answer's reasoning items, in order, as plain dicts (``type``,
``id``, ``summary``, ``encrypted_content``): with ``store: false`` the API keeps nothing, so
they are sent back, unchanged, before the calls they led to."""
ENCRYPTED_REASONING = "reasoning.encrypted_content"
_SYSTEM_ROLES = (Role.SYSTEM, Role.DEVELOPER)
_INCOMPLETE = {
    "max_output_tokens": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}
_FORMAT_TYPES = frozenset({"text", "json_object", "json_schema"})
# What a reasoning item keeps: its plain-text ``content`` is output only (the API refuses it back).
_REASONING_FIELDS = ("type", "id", "summary", "encrypted_content")


class OpenAIResponsesProvider(SdkProvider):
    """Answers inference requests with the OpenAI Responses API.

    Pass a ready ``openai.OpenAI`` client (``client=``) and/or ``openai.AsyncOpenAI`` client
    (``async_client=``, or ``client=`` when it is the only one), or ``api_key``/``base_url``/``max_retries``/``timeout`` to build them
    (each when a call first needs it). ``model`` is used when the request's
    ``LlmConfig`` names none. ``stream=True`` streams the answer and assembles it,
    and ``infer_stream``/``ainfer_stream`` hand its pieces to ``AgentLoop.stream`` as they arrive.
    ``prices`` sets ``Usage.cost``.

    ``store`` is sent as is (default False: the API keeps nothing). ``include`` is the API's
    ``include`` list. By default it is ``["reasoning.encrypted_content"]`` when ``store`` is
    False and the model reasons (the request sets a ``reasoning`` option, or the model's name
    starts with ``o1``, ``o3``, ``o4``, ``gpt-5`` but not ``gpt-5-chat``, or ``codex``), so that reasoning items come back with
    their encrypted content, are kept in ``provider_data["openai_reasoning"]`` and are sent back
    in the next request of a tool loop; other models refuse it (HTTP 400).
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
        store: bool = False,
        include: Sequence[str] | None = None,
    ) -> None:
        self._sdk = import_sdk("openai", "openai")
        options = sdk_options(api_key, base_url, max_retries, timeout)
        if async_client is None and isinstance(client, self._sdk.AsyncOpenAI):
            client, async_client = None, client  # an async client given as client= serves ainfer
        # A provider given a ready client builds no other: it cannot know that client's options.
        if client is None and async_client is None:
            self._use_clients(options)
        else:
            self._use_clients(options, client=client, async_client=async_client)
        self.model = model
        self.stream = stream
        self.prices = prices
        self.store = store
        self.include: tuple[str, ...] | None = None if include is None else _include(include)

    # --- requests -------------------------------------------------------------------------

    def request_body(self, request: InferenceRequest) -> dict[str, Any]:
        """The keyword arguments of ``responses.create`` for ``request``."""
        config = request.llm_config
        body: dict[str, Any] = {
            "model": self._model_of(request),
            "input": _input_items(request.messages, store=self.store),
            "store": self.store,
        }
        instructions = _instructions(request)
        if instructions:
            body["instructions"] = instructions
        include = self.include
        if include is None:
            wanted = not self.store and _reasons(body["model"], request)
            include = (ENCRYPTED_REASONING,) if wanted else ()
        if include:
            body["include"] = list(include)
        if request.tools:
            body["tools"] = [_tool(schema) for schema in request.tools]
            if request.tool_choice != "auto":
                body["tool_choice"] = _tool_choice(request.tool_choice)
        if request.response_format:
            body["text"] = {"format": _text_format(request.response_format)}
        if config is not None and config.temperature is not None:
            body["temperature"] = config.temperature
        if config is not None and config.max_output_tokens is not None:
            body["max_output_tokens"] = config.max_output_tokens
        extra = extra_body(request)
        if extra:
            body["extra_body"] = extra
        if self.stream:
            body["stream"] = True
        return body

    # --- sync -------------------------------------------------------------------------------

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Send ``request`` as one ``responses.create`` call and map the answer back."""
        self._sync_client()
        return super().infer(request)

    def infer_stream(self, request: InferenceRequest) -> Generator[Delta, None, InferenceResponse]:
        """``infer``, yielding the text and argument pieces as they stream (``stream=True``)."""
        self._sync_client()
        return (yield from super().infer_stream(request))

    def _sync_client(self) -> Any:
        if self.client is None:
            raise ConfigurationError(
                "OpenAIResponsesProvider has only an async client: use ainfer, or pass client="
            )
        return self.client

    def _whole(self, body: dict[str, Any]) -> InferenceResponse:
        answer = self._checked(self.client.responses.create(**body), "a response")
        assembler = ResponseAssembler()
        assembler.whole(answer)
        return self._answer(assembler, body["model"])

    def _pieces(self, body: dict[str, Any]) -> Generator[Delta, None, InferenceResponse]:
        assembler = ResponseAssembler()
        with self.client.responses.create(**body) as events:
            for event in events:
                yield from assembler.feed(event)
        return self._answer(assembler, body["model"])

    # --- async ------------------------------------------------------------------------------

    def _has_async_client(self) -> bool:
        return True  # given, built when first needed, or refused (``_async_client``)

    async def _awhole(self, body: dict[str, Any]) -> InferenceResponse:
        answer = await self._async_client().responses.create(**body)
        assembler = ResponseAssembler()
        assembler.whole(self._checked(answer, "a response"))
        return self._answer(assembler, body["model"])

    async def _apieces(
        self, body: dict[str, Any]
    ) -> AsyncGenerator[Delta | InferenceResponse, None]:
        assembler = ResponseAssembler()
        async with await self._async_client().responses.create(**body) as events:
            async for event in events:
                for piece in assembler.feed(event):
                    yield piece
        yield self._answer(assembler, body["model"])

    def _async_client(self) -> Any:
        if self.async_client is None:
            raise ConfigurationError(
                "OpenAIResponsesProvider was given only a sync client: pass "
                "async_client=openai.AsyncOpenAI(...) to use ainfer"
            )
        return self.async_client

    # --- answers ----------------------------------------------------------------------------

    def _answer(self, assembler: ResponseAssembler, requested: str) -> InferenceResponse:
        if not assembler.started:
            raise self._empty_stream()
        if assembler.error is not None:
            raise assembler.error
        calls = assembler.tool_calls()
        content, refused = assembler.text()
        status = assembler.status
        if status == "incomplete":
            finish: FinishReason | None = _INCOMPLETE.get(
                assembler.incomplete_reason or "", FinishReason.OTHER
            )
        elif status == "cancelled":
            finish = FinishReason.OTHER
        else:  # completed, or a stream that ended without saying
            finish = FinishReason.CONTENT_FILTER if refused and not calls else None
        provider_data: JsonObject = {"status": status}
        if assembler.incomplete_reason:
            provider_data["incomplete_reason"] = assembler.incomplete_reason
        reasoning = assembler.reasoning_items()
        if reasoning:
            provider_data[REASONING_KEY] = reasoning
        return InferenceResponse(
            content=content,
            tool_calls=calls,
            usage=self._priced(assembler.usage(), assembler.model, requested),
            finish_reason=fallback_finish(finish, bool(calls)),
            reasoning_content=assembler.reasoning_text(),
            model=assembler.model,
            response_id=assembler.id,
            provider_data=provider_data,
        )

    def __repr__(self) -> str:
        return f"OpenAIResponsesProvider(model={self.model!r}, stream={self.stream})"


_REASONING_MODELS = ("o1", "o3", "o4", "gpt-5", "codex")
_NOT_REASONING = ("gpt-5-chat",)


def _reasons(model: str, request: InferenceRequest) -> bool:
    """Whether ``model`` is taken for a reasoning model, whose reasoning items the provider asks
    to get back encrypted: the request sets a ``reasoning`` option, or the model's name (after
    any ``vendor/`` prefix) starts with ``o1``, ``o3``, ``o4``, ``gpt-5`` (not ``gpt-5-chat``) or
    ``codex``. Pass ``include=`` to the provider to decide for yourself."""
    config = request.llm_config
    if "reasoning" in request.options or (config is not None and "reasoning" in config.options):
        return True
    name = model.rpartition("/")[2].lower()
    return name.startswith(_REASONING_MODELS) and not name.startswith(_NOT_REASONING)


class ResponseAssembler:
    """One answer from a whole ``Response`` (:meth:`whole`) or from its stream events, fed one
    at a time (:meth:`feed`).

    Output items are kept by ``output_index``: text and refusal deltas are joined per message,
    argument deltas per function call (parallel calls interleave freely), reasoning summary
    deltas per reasoning item; an ``output_item.done`` (or ``function_call_arguments.done``)
    replaces what the deltas built. ``response.completed`` (or ``incomplete``) brings the
    status and the usage. A ``response.failed`` or ``error`` event sets :attr:`error`.
    """

    def __init__(self) -> None:
        self.started = False
        self.id = ""
        self.model = ""
        self.status: str | None = None
        self.incomplete_reason: str | None = None
        self.error: ProviderError | None = None
        self.items: dict[int, dict[str, Any]] = {}
        self._usage: Any = None

    def whole(self, response: Any) -> None:
        """Take a whole (not streamed) ``Response``."""
        for index, item in enumerate(response.output or ()):
            self._item(index, item)
        self._response(response)

    def feed(self, event: Any) -> list[Delta]:
        """Take one stream event (unknown kinds are ignored); returns its pieces: text and
        refusal text, reasoning text, a function call's id and name when it is added, its
        argument pieces."""
        self.started = True
        kind = getattr(event, "type", "")
        if kind in ("response.created", "response.in_progress"):
            self._response(event.response)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            if not self.items:  # a server that sends the output only at the end
                for index, item in enumerate(event.response.output or ()):
                    self._item(index, item)
            self._response(event.response)
        elif kind in ("response.output_item.added", "response.output_item.done"):
            self._item(event.output_index, event.item)
            if kind == "response.output_item.added" and self._is_call(event.output_index):
                slot = self.items[event.output_index]
                return [
                    Delta(
                        index=self._position(event.output_index),
                        call_id=slot["call_id"] or None,
                        name=slot["name"] or None,
                        arguments="".join(slot["arguments"]),
                    )
                ]
        elif kind == "response.output_text.delta":
            self._slot(event.output_index, "message")["text"].append(event.delta)
            return [Delta(text=event.delta)] if event.delta else []
        elif kind == "response.refusal.delta":
            self._slot(event.output_index, "message")["refusal"].append(event.delta)
            return [Delta(text=event.delta)] if event.delta else []
        elif kind == "response.function_call_arguments.delta":
            self._slot(event.output_index, "function_call")["arguments"].append(event.delta)
            if event.delta:
                return [Delta(index=self._position(event.output_index), arguments=event.delta)]
        elif kind == "response.function_call_arguments.done":
            self._slot(event.output_index, "function_call")["arguments"] = [event.arguments]
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            self._slot(event.output_index, "reasoning")["deltas"].append(event.delta)
            return [Delta(reasoning=event.delta)] if event.delta else []
        elif kind == "error":
            body = {"message": event.message, "type": getattr(event, "code", None) or ""}
            self.error = reported_error("openai", body, "the stream reported an error")
        return []

    def _is_call(self, output_index: int) -> bool:
        slot = self.items.get(output_index)
        return slot is not None and slot["type"] == "function_call"

    def _position(self, output_index: int) -> int:
        """The place of the function call at ``output_index`` among the answer's calls."""
        return sum(
            1
            for index, slot in self.items.items()
            if index < output_index and slot["type"] == "function_call"
        )

    def _response(self, response: Any) -> None:
        self.started = True
        self.id = response.id or self.id
        self.model = response.model or self.model
        self.status = response.status or self.status
        details = getattr(response, "incomplete_details", None)
        self.incomplete_reason = getattr(details, "reason", None) or self.incomplete_reason
        if response.usage is not None:
            self._usage = response.usage
        failure = getattr(response, "error", None)
        if self.status == "failed" or failure is not None:
            code = getattr(failure, "code", None)
            body = {  # a string code is the error's kind; some servers send an HTTP status
                "message": getattr(failure, "message", "") or "",
                "type": code if isinstance(code, str) else "",
                "code": code if isinstance(code, int) else None,
            }
            self.error = reported_error("openai", body, "the response failed")

    def _slot(self, index: int, kind: str) -> dict[str, Any]:
        slot = self.items.get(index)
        if slot is None or slot["type"] != kind:
            slot = self.items[index] = _empty(kind)
        return slot

    def _item(self, index: int, item: Any) -> None:
        kind = getattr(item, "type", None)
        if kind == "message":
            slot = self._slot(index, "message")
            parts = item.content or ()
            if parts:  # a done item: its parts replace the deltas
                # a part without a type (some compatible servers) counts as text
                slot["text"] = [p.text for p in parts if p.type in ("output_text", None) and p.text]
                slot["refusal"] = [p.refusal for p in parts if p.type == "refusal" and p.refusal]
        elif kind == "function_call":
            slot = self._slot(index, "function_call")
            slot["call_id"] = item.call_id or slot["call_id"]
            slot["name"] = item.name or slot["name"]
            if item.arguments:
                slot["arguments"] = [item.arguments]
        elif kind == "reasoning":
            slot = self._slot(index, "reasoning")
            dumped = item.model_dump(mode="json", exclude_none=True)
            slot["item"] = {key: dumped[key] for key in _REASONING_FIELDS if key in dumped}
            slot["item"].setdefault("summary", [])
            texts = [part.get("text", "") for part in dumped.get("summary") or ()]
            texts += [part.get("text", "") for part in dumped.get("content") or ()]
            if any(texts):
                slot["deltas"] = texts

    def _ordered(self, kind: str) -> list[dict[str, Any]]:
        return [slot for _, slot in sorted(self.items.items()) if slot["type"] == kind]

    def text(self) -> tuple[str, bool]:
        """The answer's text (its refusal when it has no text) and whether it is a refusal."""
        messages = self._ordered("message")
        text = "".join("".join(slot["text"]) for slot in messages)
        refusal = "".join("".join(slot["refusal"]) for slot in messages)
        return (text, False) if text or not refusal else (refusal, True)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(
            tool_call(
                "openai",
                position,
                slot["call_id"],
                slot["name"],
                parse_arguments("".join(slot["arguments"])),
            )
            for position, slot in enumerate(self._ordered("function_call"))
        )

    def reasoning_items(self) -> list[JsonObject]:
        """The reasoning items as the API wants them back, in order."""
        return [slot["item"] for slot in self._ordered("reasoning") if slot["item"]]

    def reasoning_text(self) -> str:
        """The reasoning summaries (or texts) of the answer, joined."""
        return "\n\n".join(
            "".join(slot["deltas"]) for slot in self._ordered("reasoning") if slot["deltas"]
        )

    def usage(self) -> Usage:
        usage = usage_part("openai", self._usage, "usage")
        if usage is None:
            return Usage()
        inputs = usage_part(
            "openai", getattr(usage, "input_tokens_details", None), "input_tokens_details"
        )
        outputs = usage_part(
            "openai", getattr(usage, "output_tokens_details", None), "output_tokens_details"
        )
        return usage_of(
            "openai",
            input_tokens=usage_count("openai", usage, "input_tokens", required=True),
            output_tokens=usage_count("openai", usage, "output_tokens", required=True),
            cache_read_tokens=usage_count("openai", inputs, "cached_tokens"),
            cache_write_tokens=usage_count("openai", inputs, "cache_write_tokens"),
            reasoning_tokens=usage_count("openai", outputs, "reasoning_tokens"),
        )


def _empty(kind: str) -> dict[str, Any]:
    if kind == "message":
        return {"type": kind, "text": [], "refusal": []}
    if kind == "function_call":
        return {"type": kind, "call_id": "", "name": "", "arguments": []}
    return {"type": kind, "item": {}, "deltas": []}


# --- agentrig messages as Responses input -----------------------------------------------------


def _input_items(messages: Iterable[Message], *, store: bool = False) -> list[dict[str, Any]]:
    """The ``input`` items for ``messages`` (system and developer messages go to
    ``instructions``): user and assistant texts, an assistant's kept reasoning items first, its
    ``function_call`` items, one ``function_call_output`` per tool result.

    With ``store`` False a reasoning item without ``encrypted_content`` is left out: the API
    would look it up by id and fail, since it kept nothing.
    """
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.role in _SYSTEM_ROLES:
            continue
        if message.role is Role.TOOL:
            result = message.tool_result
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": result.call_id if result is not None else message.name,
                    "output": message.content,
                }
            )
            continue
        if message.role is Role.ASSISTANT:
            items.extend(
                item
                for item in _reasoning(index, message)
                if store or item.get("encrypted_content")
            )
        if message.content.strip() or message.role is not Role.ASSISTANT:
            items.append({"role": message.role.value, "content": message.content})
        items.extend(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": dump_arguments(call.arguments),
            }
            for call in message.tool_calls
        )
    return items


def _reasoning(index: int, message: Message) -> list[dict[str, Any]]:
    """The reasoning items an assistant message keeps in ``provider_data``, checked: the API
    would reject a malformed one with an error that names neither the message nor the field."""
    kept = message.provider_data.get(REASONING_KEY) if message.provider_data else None
    if kept is None:
        return []
    field = f"messages[{index}].provider_data.{REASONING_KEY}"
    if not isinstance(kept, list):
        _malformed(field, f"expected a list of reasoning items, got {type(kept).__name__}")
    for position, item in enumerate(kept):
        if not isinstance(item, dict) or item.get("type") != "reasoning":
            _malformed(f"{field}[{position}]", "expected a dict with type 'reasoning'")
        if not isinstance(item.get("id"), str):
            _malformed(f"{field}[{position}].id", "a reasoning item needs a string id")
        encrypted = item.get("encrypted_content")
        if encrypted is not None and not isinstance(encrypted, str):
            _malformed(f"{field}[{position}].encrypted_content", "expected a string")
    return [dict(item) for item in kept]


def _malformed(field: str, reason: str) -> NoReturn:
    raise InvalidInputError(
        "OpenAI Responses request",
        [(field, f"{reason}; keep the items exactly as OpenAIResponsesProvider stored them")],
    )


def _instructions(request: InferenceRequest) -> str:
    return "\n\n".join(m.content for m in request.messages if m.role in _SYSTEM_ROLES and m.content)


def _tool(schema: ToolSchema) -> dict[str, Any]:
    # Always sent: the API's default (on) refuses schemas with optional parameters, so a tool is
    # strict only when it asks to be.
    return {
        "type": "function",
        "name": schema.name,
        "description": schema.description,
        "parameters": schema.parameters or {"type": "object", "properties": {}},
        "strict": schema.strict,
    }


def _tool_choice(choice: str) -> Any:
    if choice in ("none", "required", "auto"):
        return choice
    return {"type": "function", "name": choice}


def _text_format(response_format: JsonObject) -> JsonObject:
    """The Responses ``text.format`` for a response format: ``json_schema`` is flat here
    (Chat Completions' nested ``json_schema`` form is unwrapped), a bare JSON Schema is wrapped."""
    kind = response_format.get("type")
    if kind == "json_schema" and isinstance(response_format.get("json_schema"), dict):
        return {"type": "json_schema", **response_format["json_schema"]}
    if kind in _FORMAT_TYPES:
        return response_format
    name = response_format.get("title")
    return {
        "type": "json_schema",
        "name": name if isinstance(name, str) else "response",
        "schema": response_format,
    }


def _include(include: object) -> tuple[str, ...]:
    """``include=`` as the API's list of names; a bare string (read letter by letter) or an item
    that is not a name is a ``ConfigurationError``."""
    if isinstance(include, str):
        raise ConfigurationError(
            f"OpenAIResponsesProvider include= is a list of names, got the string {include!r}: "
            f"write include=[{include!r}]"
        )
    items = tuple(include) if isinstance(include, Iterable) else None
    if items is None or not all(isinstance(item, str) and item for item in items):
        raise ConfigurationError(
            f"OpenAIResponsesProvider include= is a list of names such as "
            f"['reasoning.encrypted_content'], got {include!r}"
        )
    return items
