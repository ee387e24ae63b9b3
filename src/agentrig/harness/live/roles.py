"""The models of a live scenario's simulated user and judge, made from the scenario's
``model:`` entries with agentrig's own providers (the official SDKs)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from agentrig.drivers import InferenceProvider
from agentrig.drivers._sdk import SdkProvider
from agentrig.drivers.pricing import ModelPrice, PriceTable
from agentrig.errors import ConfigurationError
from agentrig.harness.scenarios.live_model import LiveModelSpec
from agentrig.state import LlmConfig

__all__ = [
    "TRIAL_HEADER",
    "api_key",
    "close_clients",
    "key_location",
    "llm_config_of",
    "provider_for",
    "sdk_clients",
    "with_trial_header",
]


def api_key(spec: LiveModelSpec, where: str) -> str:
    """The API key of ``spec``, read from the environment variable it names (or the provider's
    default one). ``where`` says where the spec (or its ``api_key_env``) was written
    (``file:line``) for the :class:`~agentrig.errors.ConfigurationError` raised when the
    variable is unset or empty, which names it."""
    variable = spec.key_variable()
    key = os.environ.get(variable)
    if not key:
        other = "another" if spec.api_key_env is not None else "the"
        raise ConfigurationError(
            f"{where}: the {spec.provider} model {spec.name!r} needs an API key: set "
            f"{variable} (or name {other} variable with api_key_env)"
        )
    return key


def provider_for(spec: LiveModelSpec, where: str) -> InferenceProvider:
    """The provider ``spec`` names, with its API key read from the environment (see
    :func:`api_key`; ``where`` is as there)."""
    key = api_key(spec, where)
    prices = None
    if spec.price is not None:
        prices = PriceTable({spec.name: ModelPrice.model_validate(spec.price)})
    # The SDKs' own retries are off: the live runner backs off on 429 itself, on its clock,
    # and counts each attempt.
    if spec.provider == "anthropic":
        from agentrig.drivers.anthropic import AnthropicProvider

        return AnthropicProvider(
            model=spec.name,
            api_key=key,
            base_url=spec.base_url,
            max_retries=0,
            max_tokens=spec.max_tokens or 4096,
            prices=prices,
        )
    if spec.provider == "openai-responses":
        from agentrig.drivers.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(
            model=spec.name, api_key=key, base_url=spec.base_url, max_retries=0, prices=prices
        )
    from agentrig.drivers.openai import OpenAIProvider

    return OpenAIProvider(
        model=spec.name, api_key=key, base_url=spec.base_url, max_retries=0, prices=prices
    )


def key_location(spec: LiveModelSpec, role: str) -> tuple[str, ...]:
    """The field path that names ``role``'s API key variable: its ``api_key_env`` when given,
    else its ``model``."""
    model = (role, "model")
    return (*model, "api_key_env") if spec.api_key_env is not None else model


def llm_config_of(spec: LiveModelSpec) -> LlmConfig:
    """The per-request settings of ``spec``: model, temperature, most output tokens."""
    return LlmConfig(
        model=spec.name,
        provider=spec.provider,
        temperature=spec.temperature,
        max_output_tokens=spec.max_tokens,
    )


TRIAL_HEADER = "x-agentrig-trial"
"""The header that names the live trial on every request of it (all three roles)."""


def with_trial_header(provider: Any, key: str) -> Any:
    """``provider`` (an agentrig SDK provider) sending ``x-agentrig-trial: KEY`` with each
    request: a copy whose SDK clients are copied with the header (their connection pool is
    shared; an agentrig SDK provider's each when the trial first needs it). Any other provider
    is returned as it is."""
    if isinstance(provider, SdkProvider):
        return provider.with_headers({TRIAL_HEADER: key})
    client = getattr(provider, "client", None)
    if client is None or not hasattr(client, "with_options") or not hasattr(provider, "__dict__"):
        return provider
    headers = {TRIAL_HEADER: key}
    copy = object.__new__(type(provider))
    copy.__dict__.update(provider.__dict__)
    copy.__dict__["client"] = client.with_options(default_headers=headers)
    async_client = getattr(provider, "async_client", None)
    if async_client is not None and hasattr(async_client, "with_options"):
        copy.__dict__["async_client"] = async_client.with_options(default_headers=headers)
    return copy


def sdk_clients(provider: Any) -> tuple[Any, ...]:
    """The SDK clients a provider holds (sync and async; an agentrig SDK provider's: those
    given or built so far), none for others."""
    if isinstance(provider, SdkProvider):
        held: tuple[Any, ...] = provider.built_clients()
    else:
        held = (getattr(provider, "client", None), getattr(provider, "async_client", None))
    return tuple(client for client in held if client is not None and hasattr(client, "close"))


async def close_clients(clients: tuple[Any, ...]) -> None:
    """Close ``clients`` (their connection pools): the async ones awaited, the sync ones too;
    an httpx client's async close is ``aclose``, an SDK client's is ``close``. Cancelled
    meanwhile (a trial stopped as it was closing), it closes every one all the same, then the
    cancellation goes on: a client left open keeps its connections open."""
    interrupted: asyncio.CancelledError | None = None
    for client in clients:
        closing = client.aclose() if hasattr(client, "aclose") else client.close()
        if not hasattr(closing, "__await__"):
            continue
        closed = asyncio.ensure_future(closing)
        while not closed.done():
            try:
                await asyncio.shield(closed)
            except asyncio.CancelledError as error:
                interrupted = error
    if interrupted is not None:
        raise interrupted
