"""What the OpenAI and Anthropic providers share: lazy SDK import, tool-argument JSON, SDK errors,
finish-reason fallback."""

from __future__ import annotations

import importlib
import json
from types import ModuleType
from typing import Any

from agentrig._model import JsonObject
from agentrig.drivers import network
from agentrig.errors import AgentrigError, ConfigurationError, MissingDependencyError, ProviderError
from agentrig.state import InferenceRequest, InferenceResponse
from agentrig.state.status import FinishReason

RAW_ARGUMENTS_KEY = "__raw_arguments__"
"""Tool-call arguments that are not a JSON object arrive as ``{RAW_ARGUMENTS_KEY: text}``.

A typed tool rejects that key, so the model sees a failed result (``Error in tool call: ...``)
and can correct itself, as with any invalid arguments (DESIGN D7); the text is sent back to the
API unchanged in the next request.
"""

_RETRYABLE_STATUS = frozenset({408, 409, 429})
_REPLAY_MISS = "CannotOverwriteExistingCassetteException"


class SdkProvider:
    """The part of ``infer`` both real providers share: build the body, send it inside
    ``network.sending``, turn SDK exceptions into agentrig errors."""

    name: str
    key_hint: str
    stream: bool
    model: str
    _sdk: ModuleType

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

    def request_body(self, request: InferenceRequest) -> dict[str, Any]:
        """The keyword arguments of the SDK call for ``request``."""
        raise NotImplementedError

    def _whole(self, body: dict[str, Any]) -> InferenceResponse:
        raise NotImplementedError

    def _streamed(self, body: dict[str, Any]) -> InferenceResponse:
        raise NotImplementedError

    def _model_of(self, request: InferenceRequest) -> str:
        config = request.llm_config
        model = (config.model if config else "") or self.model
        if not model:
            raise ConfigurationError(
                f"{type(self).__name__} needs a model: pass model= or set LlmConfig(model=...)"
            )
        return model


def extra_body(request: InferenceRequest, **fields: Any) -> dict[str, Any]:
    """Body fields the SDK call has no argument for: ``fields`` that are set, then the config's
    and the request's options."""
    config = request.llm_config
    extra = {key: value for key, value in fields.items() if value is not None}
    extra.update({**(config.options if config else {}), **request.options})
    return extra


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
    if isinstance(error, sdk.APIStatusError):
        return _status_error(error, provider, key_hint)
    if isinstance(error, sdk.APITimeoutError):
        return ProviderError(
            f"{provider} request timed out; raise timeout= on the provider or retry later.",
            retryable=True,
            provider=provider,
        )
    if isinstance(error, sdk.APIConnectionError):
        return _connection_error(error, provider)
    return ProviderError(
        f"{provider} request failed: {type(error).__name__}: {error}", provider=provider
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
    advice = {
        401: f"check the API key ({key_hint} or api_key=...)",
        403: "the API key may not use this model or endpoint",
        404: "check the model name and base_url",
        429: "rate limited: retry later, slow down, or allow retries "
        "(the provider's max_retries=, UseLlmConfig(max_retries=...))",
    }.get(status)
    if advice is None:
        advice = "the server failed; retry later" if status >= 500 else "fix the request"
    return ProviderError(
        f"{provider} API returned HTTP {status}: {error.message} ({advice})",
        retryable=status in _RETRYABLE_STATUS or status >= 500,
        status_code=status,
        provider=provider,
    )


def _connection_error(error: Exception, provider: str) -> ProviderError:
    cause = error.__cause__
    detail = f": {type(cause).__name__}: {cause}" if cause is not None else ""
    return ProviderError(
        f"could not reach the {provider} API{detail}; check base_url and the network.",
        retryable=True,
        provider=provider,
    )
