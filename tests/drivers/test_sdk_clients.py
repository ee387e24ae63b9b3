"""The SDK clients of the OpenAI, Responses and Anthropic providers: each built when a call
first needs it (each loads the certificate bundle, about 60 ms), the options checked at once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from agentrig.drivers import AnthropicProvider, OpenAIProvider, OpenAIResponsesProvider

PROVIDERS = [
    (OpenAIProvider, openai.OpenAI, openai.AsyncOpenAI),
    (OpenAIResponsesProvider, openai.OpenAI, openai.AsyncOpenAI),
    (AnthropicProvider, anthropic.Anthropic, anthropic.AsyncAnthropic),
]


@pytest.mark.parametrize(("kind", "sync", "asynchronous"), PROVIDERS)
def test_a_provider_builds_only_the_client_a_call_reads(
    kind: Any, sync: type, asynchronous: type
) -> None:
    provider = kind(model="m", api_key="sk-test")
    assert provider.built_clients() == ()
    async_client = provider.async_client
    assert isinstance(async_client, asynchronous)
    assert provider.built_clients() == (async_client,)
    assert provider.async_client is async_client  # built once
    assert isinstance(provider.client, sync)
    assert provider.built_clients() == (provider.client, async_client)


@pytest.mark.parametrize(("kind", "sync", "asynchronous"), PROVIDERS)
def test_a_copy_with_headers_copies_the_clients_of_its_origin(
    kind: Any, sync: type, asynchronous: type
) -> None:
    origin = kind(model="m", api_key="sk-test")
    twin = origin.with_headers({"x-trial": "t1"})
    assert (origin.built_clients(), twin.built_clients()) == ((), ())
    assert twin.async_client.default_headers["x-trial"] == "t1"
    (built,) = origin.built_clients()  # the origin's async client, and no sync one
    assert isinstance(built, asynchronous)
    assert "x-trial" not in built.default_headers
    assert twin.model == "m"


def test_a_provider_given_a_sync_client_builds_no_async_one() -> None:
    given = openai.OpenAI(api_key="sk-test")
    provider = OpenAIProvider(client=given, model="m")
    assert provider.built_clients() == (given,)
    assert provider.async_client is None
    twin = provider.with_headers({"x-trial": "t1"})
    assert twin.async_client is None
    assert twin.client.default_headers["x-trial"] == "t1"


def test_threads_that_first_need_a_client_at_once_share_one() -> None:
    # ainfer without an async client runs infer in worker threads: one client for all of them
    provider = OpenAIProvider(model="m", api_key="sk-test")
    start = threading.Barrier(8)

    def read() -> Any:
        start.wait()
        return provider.client

    with ThreadPoolExecutor(8) as pool:
        clients = list(pool.map(lambda _: read(), range(8)))
    assert len({id(client) for client in clients}) == 1
    assert provider.built_clients() == (clients[0],)


@pytest.mark.parametrize(("kind", "sync", "asynchronous"), PROVIDERS)
def test_built_clients_share_one_ssl_context_of_the_sdks_own_client_class(
    kind: Any, sync: type, asynchronous: type, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def context(client: Any) -> Any:
        return client._client._transport._pool._ssl_context

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    first, second = kind(model="m", api_key="sk-test"), kind(model="m", api_key="sk-test")
    shared = context(first.async_client)
    assert context(second.async_client) is shared
    assert context(first.client) is shared
    # the class the SDK builds itself (which closes a dropped client), with its defaults
    plain = asynchronous(api_key="sk-test")
    assert type(first.async_client._client) is type(plain._client)
    assert first.async_client._client.timeout == plain._client.timeout
    assert first.async_client.timeout == plain.timeout
    # certificates named in the environment get a context of their own
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    assert context(kind(model="m", api_key="sk-test").async_client) is not shared
