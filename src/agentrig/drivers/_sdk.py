"""What the OpenAI and Anthropic providers share: lazy SDK import, tool-argument JSON, SDK errors,
finish-reason fallback."""

from __future__ import annotations

import asyncio
import copy
import functools
import importlib
import json
import threading
from collections.abc import AsyncGenerator, Generator, Mapping
from types import ModuleType
from typing import Any, Self, cast

from pydantic import BaseModel

from agentrig._model import JsonObject
from agentrig.drivers import network
from agentrig.drivers.pricing import PriceTable
from agentrig.drivers.provider import Delta
from agentrig.errors import (
    AgentrigError,
    ConfigurationError,
    InvalidInputError,
    MissingDependencyError,
    ProviderError,
)
from agentrig.messages import ToolCall
from agentrig.state import InferenceRequest, InferenceResponse, Usage
from agentrig.state.status import FinishReason

RAW_ARGUMENTS_KEY = "__raw_arguments__"
"""Tool-call arguments that are not a JSON object arrive as ``{RAW_ARGUMENTS_KEY: text}``.

A typed tool rejects that key, so the model sees a failed result (``Error in tool call: ...``)
and can correct itself, as with any invalid arguments (DESIGN D7); the text is sent back to the
API unchanged in the next request.
"""

_RETRYABLE_STATUS = frozenset({408, 409, 429})
# Error types the APIs send in an error body or stream event when another attempt may succeed.
_RETRYABLE_KINDS = frozenset(
    {
        "api_error",
        "overloaded_error",
        "rate_limit_error",
        "rate_limit_exceeded",
        "server_error",
        "timeout_error",
    }
)
_REPLAY_MISS = "CannotOverwriteExistingCassetteException"
_NO_CREDENTIALS = "Could not resolve authentication method"
_STREAMING_REQUIRED = "Streaming is required"


CLIENTS = ("client", "async_client")
"""The attributes an SDK provider keeps its sync and async SDK clients in."""

OPENAI_CLIENTS = {"client": "OpenAI", "async_client": "AsyncOpenAI"}
"""The ``openai`` SDK class of each client attribute."""
ANTHROPIC_CLIENTS = {"client": "Anthropic", "async_client": "AsyncAnthropic"}
"""The ``anthropic`` SDK class of each client attribute."""


_BUILDING = threading.RLock()  # reentrant: a copy's client is built from its origin's


class BuiltOnFirstUse:
    """An SDK client attribute of a provider, built the first time it is read.

    A non-data descriptor: a client given to the provider, or built, lives in the provider's
    ``__dict__`` and is read from there; only a client not built yet reaches ``__get__``.
    Each SDK client loads the certificate bundle into an SSL context of its own (about 60 ms),
    so a provider that only ever calls ``ainfer`` never pays for the sync client.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, provider: SdkProvider | None, owner: type | None = None) -> Any:
        if provider is None:
            return self
        with _BUILDING:  # threads (``ainfer`` without an async client) would build one each
            held = vars(provider)
            if self.name not in held:
                held[self.name] = provider._new_client(self.name)
            return held[self.name]


@functools.cache
def _inert_http_client(sdk: ModuleType) -> Any:
    """An HTTP client that never sends (and loads no certificates): it lets the SDK check a
    client's options at once without building a connection pool."""
    return sdk.DefaultHttpxClient(verify=False)


def _default_http_client(sdk: ModuleType, kind: str) -> Any:
    """The HTTP client the SDK would build itself (its class: its defaults for the timeout,
    connection limits and redirects, and its close when dropped), verifying with the SSL
    context every client shares."""
    sync = not kind.startswith("Async")
    wrapper = "SyncHttpxClientWrapper" if sync else "AsyncHttpxClientWrapper"
    public = sdk.DefaultHttpxClient if sync else sdk.DefaultAsyncHttpxClient
    made = getattr(sdk._base_client, wrapper, public)  # the wrapper is the SDK's own choice
    return made(verify=network.shared_ssl_context())


class SdkProvider:
    """The part of ``infer`` both real providers share: build the body, send it inside
    ``network.sending``, turn SDK exceptions into agentrig errors.

    The SDK clients (``client``, ``async_client``) are the ready ones given, or built from the
    provider's options when a call first needs one; the options are checked when the
    provider is built (a missing API key is a ``ConfigurationError`` then, not at the first
    call).

    With ``stream=True`` the answer is read as the API streams it: ``infer`` and ``ainfer``
    assemble it, ``infer_stream`` and ``ainfer_stream`` (what ``AgentLoop.stream`` and
    ``astream`` use) also hand each text and tool-argument piece out as it arrives. Each
    provider reads its stream once, in ``_pieces``/``_apieces``; the plain calls drain them.
    """

    name: str
    key_hint: str
    stream: bool
    model: str
    prices: PriceTable | None
    _sdk: ModuleType
    _sdk_label: str
    """The SDK's name in errors: "OpenAI", "Anthropic"."""
    _kinds: Mapping[str, str]
    """The SDK class each client attribute is built from."""
    _options: dict[str, Any]
    _origin: tuple[SdkProvider, dict[str, str]] | None = None
    client = BuiltOnFirstUse()
    """The SDK's sync client ``infer`` sends with."""
    async_client = BuiltOnFirstUse()
    """The SDK's async client ``ainfer`` sends with; None when the provider was given only a
    sync ``client=``, and then ``ainfer`` runs ``infer`` in a worker thread."""

    def _given_or_built(self, options: dict[str, Any], client: Any, async_client: Any) -> None:
        """Keep a ready ``client`` (with ``async_client``, or none: ``ainfer`` then runs it in a
        thread), or a ready ``async_client`` alone (the sync client built when first needed),
        or build both from ``options`` when first needed."""
        if client is not None:
            self._use_clients(options, client=client, async_client=async_client)
        elif async_client is not None:
            self._use_clients(options, async_client=async_client)
        else:
            self._use_clients(options)

    def _use_clients(self, options: dict[str, Any], **given: Any) -> None:
        """Keep the clients ``given`` (None: the provider has no such client); the others are
        built from ``options`` when first needed, which are checked now."""
        self._options = options
        vars(self).update(given)
        if len(given) < len(CLIENTS):
            self._check_options(self._build(self._kinds["client"], _inert_http_client(self._sdk)))

    def _check_options(self, probe: Any) -> None:
        """Refuse options the SDK would fail on only when it sends; ``probe`` is a client built
        from them that never sends."""

    def _build(self, kind: str, http_client: Any = None) -> Any:
        if http_client is None:
            http_client = _default_http_client(self._sdk, kind)
        options = {**self._options, "http_client": http_client}
        try:
            return getattr(self._sdk, kind)(**options)
        except getattr(self._sdk, f"{self._sdk_label}Error") as error:
            raise self._cannot_build(str(error)) from None

    def _cannot_build(self, why: str) -> ConfigurationError:
        return ConfigurationError(
            f"cannot build the {self._sdk_label} client: {why} "
            f"(set {self.key_hint}, or pass api_key= or a ready client=)"
        )

    def _new_client(self, name: str) -> Any:
        if self._origin is not None:
            origin, headers = self._origin
            return _with_headers(getattr(origin, name), headers)
        return self._build(self._kinds[name])

    def built_clients(self) -> tuple[Any, ...]:
        """The SDK clients this provider was given or has built so far (none is built here)."""
        return tuple(client for name in CLIENTS if (client := vars(self).get(name)) is not None)

    def with_headers(self, headers: Mapping[str, str]) -> Self:
        """A copy of this provider that sends ``headers`` with every request: its clients are
        this provider's, copied with the headers (``with_options``, sharing their connection
        pool) when first needed."""
        twin = copy.copy(self)
        twin._origin = (self, dict(headers))
        for name in CLIENTS:
            if name in vars(self):
                vars(twin)[name] = _with_headers(vars(self)[name], twin._origin[1])
        return twin

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Send ``request`` as one API call and map the answer back."""
        body = self.request_body(request)
        try:
            with network.sending(self.name):
                return self._streamed(body) if self.stream else self._whole(body)
        except AgentrigError:
            raise
        except Exception as error:
            raise provider_error(error, self._sdk, self.name, self.key_hint) from error

    def infer_stream(self, request: InferenceRequest) -> Generator[Delta, None, InferenceResponse]:
        """``infer``, yielding the answer's text and tool-argument pieces as the API streams
        them (``stream=True``); returns the answer ``infer`` gives. Without ``stream=True``
        the answer comes whole, and there are no pieces."""
        if not self.stream:
            return self.infer(request)
        body = self.request_body(request)
        try:
            with network.sending(self.name):
                return (yield from self._pieces(body))
        except AgentrigError:
            raise
        except Exception as error:
            raise provider_error(error, self._sdk, self.name, self.key_hint) from error

    async def ainfer(self, request: InferenceRequest) -> InferenceResponse:
        """``infer`` on the running event loop, through the SDK's async client."""
        if not self._has_async_client():
            return await asyncio.to_thread(self.infer, request)
        body = self.request_body(request)
        try:
            with network.sending(self.name):
                if self.stream:
                    return await self._astreamed(body)
                return await self._awhole(body)
        except AgentrigError:
            raise
        except Exception as error:
            raise provider_error(error, self._sdk, self.name, self.key_hint) from error

    async def ainfer_stream(
        self, request: InferenceRequest
    ) -> AsyncGenerator[Delta | InferenceResponse, None]:
        """``infer_stream`` on the running event loop: the pieces as they arrive, then the
        answer, last. Without ``stream=True`` or an async client it yields only the answer,
        from ``ainfer``."""
        if not self.stream or not self._has_async_client():
            yield await self.ainfer(request)
            return
        body = self.request_body(request)
        pieces = self._apieces(body)
        try:
            with network.sending(self.name):
                async for piece in pieces:
                    yield piece
        except AgentrigError:
            raise
        except Exception as error:
            raise provider_error(error, self._sdk, self.name, self.key_hint) from error
        finally:  # a consumer that stops early closes the HTTP stream now, in this task
            await pieces.aclose()

    def request_body(self, request: InferenceRequest) -> dict[str, Any]:
        """The keyword arguments of the SDK call for ``request``."""
        raise NotImplementedError

    def _has_async_client(self) -> bool:
        """Whether ``ainfer`` has an async client: one given, or one it may build."""
        return "async_client" not in vars(self) or vars(self)["async_client"] is not None

    def _whole(self, body: dict[str, Any]) -> InferenceResponse:
        raise NotImplementedError

    async def _awhole(self, body: dict[str, Any]) -> InferenceResponse:
        raise NotImplementedError

    def _pieces(self, body: dict[str, Any]) -> Generator[Delta, None, InferenceResponse]:
        """Send ``body`` streamed: the pieces as they arrive; returns the assembled answer."""
        raise NotImplementedError

    def _apieces(self, body: dict[str, Any]) -> AsyncGenerator[Delta | InferenceResponse, None]:
        """``_pieces`` on the async client: the pieces, then the assembled answer, last."""
        raise NotImplementedError

    def _streamed(self, body: dict[str, Any]) -> InferenceResponse:
        pieces = self._pieces(body)
        while True:
            try:
                next(pieces)
            except StopIteration as done:
                return cast("InferenceResponse", done.value)

    async def _astreamed(self, body: dict[str, Any]) -> InferenceResponse:
        response: InferenceResponse | None = None
        async for piece in self._apieces(body):
            if isinstance(piece, InferenceResponse):
                response = piece
        if response is None:  # pragma: no cover - every _apieces ends with the answer
            raise self._empty_stream()
        return response

    def _model_of(self, request: InferenceRequest) -> str:
        config = request.llm_config
        model = (config.model if config else "") or self.model
        if not model:
            raise ConfigurationError(
                f"{type(self).__name__} needs a model: pass model= or set LlmConfig(model=...)"
            )
        return model

    def _priced(self, usage: Usage, answered: str, requested: str) -> Usage:
        """``usage`` with its cost, by the model that answered, else the one requested (some
        servers name no model, or an alias the table does not know)."""
        if self.prices is None:
            return usage
        names = [name for name in (answered, requested) if name]
        known = (name for name in names if self.prices.price_of(name) is not None)
        return self.prices.priced(next(known, names[0] if names else ""), usage)

    def _checked(self, answer: Any, what: str) -> Any:
        """``answer``, unless the SDK handed back text instead of ``what`` (an HTML page, say)."""
        if isinstance(answer, str | bytes):
            text = repr(answer)[:200]
            raise ProviderError(
                f"{self.name} API answered with something that is not {what}: {text}; check "
                "base_url (it must point at the API itself, e.g. .../v1 for compatible servers).",
                provider=self.name,
            )
        return answer

    def _empty_stream(self) -> ProviderError:
        return ProviderError(
            f"{self.name} stream ended before its first event: the server may not stream "
            "(or base_url is wrong); check base_url, or use stream=False.",
            provider=self.name,
        )


def _with_headers(client: Any, headers: dict[str, str]) -> Any:
    if client is None or not hasattr(client, "with_options"):
        return client
    return client.with_options(default_headers=headers)


def malformed_usage(provider: str, why: str) -> ProviderError:
    """The error for an answer whose ``usage`` is not what the API documents."""
    return ProviderError(f"{provider} response has a malformed usage: {why}", provider=provider)


def usage_part(provider: str, value: Any, name: str) -> Any:
    """``value``, an SDK object of the answer's usage (or None: the API sent none); any other
    shape (a list, text, a number where an object belongs) is a malformed usage."""
    if value is None or isinstance(value, BaseModel):
        return value
    raise malformed_usage(provider, f"{name} is {type(value).__name__}, not an object")


def usage_count(provider: str, part: Any, field: str, *, required: bool = False) -> Any:
    """The count ``field`` of the usage object ``part``: 0 when an optional count is absent or
    null; a required count (the API always sends it) that is absent or null is malformed. The
    type is checked by :func:`usage_of`."""
    value = getattr(part, field, None)
    if value is not None:
        return value
    if required:
        raise malformed_usage(provider, f"{field} is missing or null")
    return 0


def usage_of(provider: str, **tokens: Any) -> Usage:
    """The ``Usage`` of an answer's token counts; counts ``Usage`` refuses (negative, fractional,
    not numbers, more than it holds) are the API's malformed answer, not the caller's input: a
    ``ProviderError``."""
    try:
        return Usage(**tokens)
    except InvalidInputError as error:
        raise malformed_usage(provider, str(error)) from None


def extra_body(request: InferenceRequest, **fields: Any) -> dict[str, Any]:
    """Body fields the SDK call has no argument for: ``fields`` that are set, then the config's
    and the request's options."""
    config = request.llm_config
    extra = {key: value for key, value in fields.items() if value is not None}
    extra.update({**(config.options if config else {}), **request.options})
    return extra


def sdk_options(
    api_key: str | None, base_url: str | None, max_retries: int, timeout: float | None
) -> dict[str, Any]:
    """The keyword arguments an SDK client is built with (``timeout`` only when given: the
    SDK's own default otherwise)."""
    options: dict[str, Any] = {"api_key": api_key, "base_url": base_url, "max_retries": max_retries}
    if timeout is not None:
        options["timeout"] = timeout
    return options


def import_sdk(module: str, extra: str) -> ModuleType:
    """Import an optional SDK, or raise ``MissingDependencyError`` naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(module, extra) from None


def parse_arguments(raw: str | None) -> JsonObject:
    """Tool-call arguments as the model sent them (a JSON text) turned into a dict."""
    if raw is None or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {RAW_ARGUMENTS_KEY: raw}
    return value if isinstance(value, dict) else {RAW_ARGUMENTS_KEY: raw}


def dump_arguments(arguments: JsonObject) -> str:
    """Arguments as the JSON text to send back (unparsable ones exactly as received)."""
    raw = arguments.get(RAW_ARGUMENTS_KEY)
    if len(arguments) == 1 and isinstance(raw, str):
        return raw
    return json.dumps(arguments, ensure_ascii=False)


def tool_call(
    provider: str, index: int, call_id: str | None, name: str | None, arguments: JsonObject
) -> ToolCall:
    """Tool call ``index`` of an answer; an id is made up when the API sent none."""
    if not name:
        raise ProviderError(
            f"{provider} returned tool call {index} without a name, so it cannot be run; "
            "retry, or check that the model supports tool calling.",
            provider=provider,
        )
    if call_id:
        return ToolCall(id=call_id, name=name, arguments=arguments)
    return ToolCall(name=name, arguments=arguments)


def fallback_finish(reason: FinishReason | None, has_tool_calls: bool) -> FinishReason:
    """The finish reason when the provider sent none (some streams end without one)."""
    if reason is not None:
        return reason
    return FinishReason.TOOL_CALLS if has_tool_calls else FinishReason.STOP


def provider_error(error: Exception, sdk: ModuleType, provider: str, key_hint: str) -> Exception:
    """The agentrig error for an exception raised by an SDK call (agentrig errors pass through)."""
    blocked = _agentrig_cause(error)
    if blocked is not None:
        return blocked
    miss = next((e for e in (error, error.__cause__) if type(e).__name__ == _REPLAY_MISS), None)
    if miss is not None:
        return ProviderError(
            f"{provider} request matched no interaction of the HTTP cassette being replayed: "
            f"{miss}",
            provider=provider,
        )
    if isinstance(error, sdk.APIStatusError) and error.status_code >= 400:
        return _status_error(error, provider, key_hint)
    if isinstance(error, sdk.APITimeoutError) or _is_transport(error, "TimeoutException"):
        return ProviderError(
            f"{provider} request timed out; raise timeout= on the provider or retry later.",
            retryable=True,
            provider=provider,
        )
    if isinstance(error, sdk.APIConnectionError):
        return _connection_error(error.__cause__, provider)
    if _is_transport(error, "TransportError"):  # raised while a stream is read, unwrapped
        return _connection_error(error, provider)
    if isinstance(error, sdk.APIError):  # an error event inside a stream answered with 200
        return reported_error(provider, getattr(error, "body", None), error.message)
    if isinstance(error, TypeError) and _NO_CREDENTIALS in str(error):
        return ProviderError(
            f"{provider} has no API key: set {key_hint}, or pass api_key= or a ready client=.",
            provider=provider,
        )
    if _STREAMING_REQUIRED in str(error):  # the SDK refuses long non-streamed requests
        return ProviderError(
            f"{provider} request refused by the SDK: {error} "
            "(pass stream=True to the provider, or lower the max tokens)",
            provider=provider,
        )
    return ProviderError(
        f"{provider} request failed: {type(error).__name__}: {error}", provider=provider
    )


def reported_error(provider: str, body: object, fallback: str = "") -> ProviderError:
    """The error for a failure the API reported in an answer that came back as a success (a
    stream's error event; OpenRouter's 200 with an ``error`` body)."""
    message, kind, code = _error_fields(body)
    failed = _failed_generation(body)
    if failed is not None:
        return _tool_call_refused(provider, message or fallback, failed, None)
    retryable = kind in _RETRYABLE_KINDS or (
        code is not None and (code in _RETRYABLE_STATUS or code >= 500)
    )
    detail = (message or fallback or "no details") + (f" ({kind})" if kind else "")
    advice = "retry later, or allow retries (UseLlmConfig(max_retries=...))"
    return ProviderError(
        f"{provider} API reported an error: {detail}; "
        + (advice if retryable else "check the request and the model"),
        retryable=retryable,
        provider=provider,
    )


def _error_fields(body: object) -> tuple[str, str, int | None]:
    """Message, type and numeric code of an API error body (``{"error": {...}}`` or its inside)."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if not isinstance(body, dict):
        return "", "", None
    message, kind, code = body.get("message"), body.get("type"), body.get("code")
    return (
        message if isinstance(message, str) else "",
        kind if isinstance(kind, str) else "",
        code if isinstance(code, int) and not isinstance(code, bool) else None,
    )


_TOOL_USE_FAILED = "tool_use_failed"


def _failed_generation(body: object) -> str | None:
    """What the model wrote, when an OpenAI-compatible server (Groq, some vLLM builds) refused the
    tool call it generated: error code ``tool_use_failed``, the text in ``failed_generation``."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if not isinstance(body, dict) or body.get("code") != _TOOL_USE_FAILED:
        return None
    failed = body.get("failed_generation")
    if isinstance(failed, str):
        return failed
    return "" if failed is None else json.dumps(failed, ensure_ascii=False)


def _tool_call_refused(
    provider: str, message: str, failed_generation: str, status: int | None
) -> ProviderError:
    """The model's fault, not the request's: with retries allowed, the ``ToolCallingDriver``
    shows the model this message (so it speaks of the model's call, not of the request) and
    asks again."""
    http = f"HTTP {status}, " if status is not None else ""
    return ProviderError(
        f"{provider} API refused the tool call the model generated ({http}{_TOOL_USE_FAILED}): "
        f"{message or 'no details'}",
        status_code=status,
        provider=provider,
        failed_generation=failed_generation,
    )


def _is_transport(error: Exception, name: str) -> bool:
    """Whether ``error`` is an httpx/httpx2 exception of class ``name`` (or a subclass)."""
    return any(
        cls.__name__ == name and cls.__module__.partition(".")[0] in ("httpx", "httpx2")
        for cls in type(error).__mro__
    )


def _agentrig_cause(error: BaseException) -> AgentrigError | None:
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, AgentrigError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _status_error(error: Any, provider: str, key_hint: str) -> ProviderError:
    status: int = error.status_code
    body = getattr(error, "body", None)
    failed = _failed_generation(body)
    if failed is not None:
        return _tool_call_refused(provider, _error_fields(body)[0], failed, status)
    retryable = status in _RETRYABLE_STATUS or status >= 500
    advice = {
        401: f"check the API key ({key_hint} or api_key=...)",
        403: "the API key may not use this model or endpoint",
        404: "check the model name and base_url",
        429: "rate limited: retry later, slow down, or allow retries "
        "(the provider's max_retries=, UseLlmConfig(max_retries=...))",
    }.get(status)
    if advice is None:
        advice = "retry later" if retryable else "fix the request"
    message, kind, _ = _error_fields(getattr(error, "body", None))
    detail = f"{message} ({kind})" if message and kind else message or error.message
    return ProviderError(
        f"{provider} API returned HTTP {status}: {detail} ({advice})",
        retryable=retryable,
        status_code=status,
        provider=provider,
    )


def _connection_error(cause: BaseException | None, provider: str) -> ProviderError:
    detail = f": {type(cause).__name__}: {cause}" if cause is not None else ""
    return ProviderError(
        f"could not reach the {provider} API{detail}; check base_url and the network.",
        retryable=True,
        provider=provider,
    )
