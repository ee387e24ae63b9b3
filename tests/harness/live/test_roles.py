"""The role models of a live scenario (``harness/live/roles.py``): the API key each reads, the
provider made from a ``model:`` entry, the trial's header on every request of it, and the SDK
clients a provider holds and how they are closed. No request is sent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentrig.drivers.pricing import ModelPrice
from agentrig.errors import ConfigurationError
from agentrig.harness.live.roles import (
    TRIAL_HEADER,
    api_key,
    close_clients,
    key_location,
    llm_config_of,
    provider_for,
    sdk_clients,
    with_trial_header,
)
from agentrig.harness.scenarios.live_model import LiveModelSpec


def spec(**fields: Any) -> LiveModelSpec:
    return LiveModelSpec.model_validate({"provider": "openai", "name": "gpt-4.1-mini", **fields})


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_KEY"):
        monkeypatch.delenv(variable, raising=False)


def test_the_api_key_is_read_from_the_providers_variable_or_the_one_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-anthropic")
    monkeypatch.setenv("MY_KEY", "sk-mine")
    assert api_key(spec(), "here") == "sk-openai"
    assert api_key(spec(provider="openai-responses"), "here") == "sk-openai"
    assert api_key(spec(provider="anthropic", name="claude-x"), "here") == "sk-anthropic"
    assert api_key(spec(api_key_env="MY_KEY"), "here") == "sk-mine"


@pytest.mark.parametrize("value", [None, ""])
def test_a_missing_or_empty_key_names_the_variable_and_where_the_model_was_written(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is not None:
        monkeypatch.setenv("OPENAI_API_KEY", value)
        monkeypatch.setenv("MY_KEY", value)
    with pytest.raises(ConfigurationError) as default:
        api_key(spec(), "refund.scenario.yaml:12")
    assert str(default.value) == (
        "refund.scenario.yaml:12: the openai model 'gpt-4.1-mini' needs an API key: set "
        "OPENAI_API_KEY (or name the variable with api_key_env)"
    )
    with pytest.raises(ConfigurationError) as named:
        api_key(spec(provider="anthropic", name="claude-x", api_key_env="MY_KEY"), "f:3")
    assert str(named.value) == (
        "f:3: the anthropic model 'claude-x' needs an API key: set MY_KEY (or name another "
        "variable with api_key_env)"
    )


def test_an_openai_model_is_asked_through_agentrigs_provider_without_the_sdks_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentrig.drivers.openai import OpenAIProvider

    monkeypatch.setenv("MY_KEY", "sk-openai")  # not the SDK's OPENAI_API_KEY: given to it
    given = {"api_key_env": "MY_KEY", "base_url": "http://127.0.0.1:9/v1"}
    made: Any = provider_for(spec(**given, price={"input": 1, "output": 2}), "")
    assert type(made) is OpenAIProvider
    assert made.model == "gpt-4.1-mini"
    assert made.prices is not None
    assert made.prices.price_of("gpt-4.1-mini") == ModelPrice(input=1, output=2)
    client = made.client
    assert (client.api_key, str(client.base_url), client.max_retries) == (
        "sk-openai",
        "http://127.0.0.1:9/v1/",
        0,
    )
    unpriced: Any = provider_for(spec(**given), "")
    assert unpriced.prices is None


def test_a_responses_model_is_asked_through_the_responses_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentrig.drivers.openai_responses import OpenAIResponsesProvider

    monkeypatch.setenv("MY_KEY", "sk-mine")
    made = provider_for(
        spec(
            provider="openai-responses",
            name="gpt-5",
            api_key_env="MY_KEY",
            base_url="http://127.0.0.1:9/v1",
            price={"input": 3, "output": 4},
        ),
        "",
    )
    assert type(made) is OpenAIResponsesProvider
    assert made.model == "gpt-5"
    assert made.prices is not None
    assert made.prices.price_of("gpt-5") == ModelPrice(input=3, output=4)
    client = made.client
    assert (client.api_key, str(client.base_url), client.max_retries) == (
        "sk-mine",
        "http://127.0.0.1:9/v1/",
        0,
    )


@pytest.mark.parametrize(("max_tokens", "sent"), [(None, 4096), (300, 300)])
def test_an_anthropic_model_is_asked_with_its_most_tokens_or_4096(
    monkeypatch: pytest.MonkeyPatch, max_tokens: int | None, sent: int
) -> None:
    from agentrig.drivers.anthropic import AnthropicProvider

    monkeypatch.setenv("MY_KEY", "sk-ant")  # not the SDK's ANTHROPIC_API_KEY: given to it
    made = provider_for(
        spec(
            provider="anthropic",
            name="claude-x",
            api_key_env="MY_KEY",
            max_tokens=max_tokens,
            base_url="http://127.0.0.1:9",
            price={"input": 5, "output": 6},
        ),
        "",
    )
    assert type(made) is AnthropicProvider
    assert (made.model, made.max_tokens) == ("claude-x", sent)
    assert made.prices is not None
    assert made.prices.price_of("claude-x") == ModelPrice(input=5, output=6)
    client = made.client
    assert (client.api_key, str(client.base_url), client.max_retries) == (
        "sk-ant",
        "http://127.0.0.1:9",
        0,
    )


def test_a_provider_without_its_key_says_where_the_model_was_written() -> None:
    with pytest.raises(ConfigurationError, match=r"^user\.model at f:4: the openai model"):
        provider_for(spec(), "user.model at f:4")


def test_the_key_is_located_at_api_key_env_when_given_else_at_the_model() -> None:
    assert key_location(spec(), "judge") == ("judge", "model")
    assert key_location(spec(api_key_env="MY_KEY"), "user") == ("user", "model", "api_key_env")


def test_the_llm_config_carries_the_models_settings() -> None:
    config = llm_config_of(spec(provider="anthropic", name="c", temperature=0.3, max_tokens=99))
    assert (config.model, config.provider, config.temperature, config.max_output_tokens) == (
        "c",
        "anthropic",
        0.3,
        99,
    )
    plain = llm_config_of(spec())
    assert (plain.temperature, plain.max_output_tokens) == (None, None)


class Client:
    """An SDK client's part that a provider's copy uses: options copied with headers."""

    def __init__(self, headers: dict[str, str] | None = None) -> None:
        self.headers = headers or {}
        self.closed = False

    def with_options(self, *, default_headers: dict[str, str]) -> Client:
        return Client({**self.headers, **default_headers})

    def close(self) -> None:
        self.closed = True


class Provider:
    """A provider that is no agentrig SDK provider, holding SDK-like clients."""

    def __init__(self, client: Any = None, async_client: Any = None) -> None:
        self.client = client
        self.async_client = async_client
        self.model = "m"


def test_an_sdk_provider_sends_the_trials_header_from_a_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    made: Any = provider_for(spec(), "")
    copy = with_trial_header(made, "run/refund/trial-3.0")
    assert copy is not made
    assert copy.client.default_headers[TRIAL_HEADER] == "run/refund/trial-3.0"
    assert copy.async_client.default_headers[TRIAL_HEADER] == "run/refund/trial-3.0"
    assert TRIAL_HEADER not in made.client.default_headers
    assert TRIAL_HEADER == "x-agentrig-trial"


def test_another_provider_with_clients_is_copied_with_the_header_on_each() -> None:
    original = Provider(Client({"a": "1"}), Client())
    copy = with_trial_header(original, "k")
    assert type(copy) is Provider
    assert copy is not original
    assert copy.client.headers == {"a": "1", TRIAL_HEADER: "k"}
    assert copy.async_client.headers == {TRIAL_HEADER: "k"}
    assert copy.model == "m"
    assert (original.client.headers, original.async_client.headers) == ({"a": "1"}, {})


def test_a_provider_with_a_sync_client_only_keeps_no_async_client() -> None:
    copy = with_trial_header(Provider(Client()), "k")
    assert copy.client.headers == {TRIAL_HEADER: "k"}
    assert copy.async_client is None
    odd = with_trial_header(Provider(Client(), async_client="no options"), "k")
    assert odd.async_client == "no options"


class SyncOnly:
    """A provider with a sync client and no ``async_client`` attribute at all."""

    def __init__(self) -> None:
        self.client = Client()


def test_a_provider_without_an_async_client_attribute_is_copied_with_its_client() -> None:
    copy = with_trial_header(SyncOnly(), "k")
    assert copy.client.headers == {TRIAL_HEADER: "k"}
    assert not hasattr(copy, "async_client")


class Slotted:
    __slots__ = ("client",)

    def __init__(self) -> None:
        self.client = Client()


@pytest.mark.parametrize(
    "provider",
    [Provider(), Provider(client="no options"), Slotted(), object()],
    ids=["no client", "client without options", "no __dict__", "plain object"],
)
def test_a_provider_whose_clients_cannot_be_copied_is_returned_as_it_is(provider: Any) -> None:
    assert with_trial_header(provider, "k") is provider


def test_the_clients_of_an_sdk_provider_are_those_it_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    made: Any = provider_for(spec(), "")
    assert sdk_clients(made) == ()
    client = made.client
    assert sdk_clients(made) == (client,)


def test_the_clients_of_another_provider_are_those_it_holds_that_close() -> None:
    sync, other = Client(), Client()
    assert sdk_clients(Provider(sync, other)) == (sync, other)
    assert sdk_clients(Provider(None, other)) == (other,)
    assert sdk_clients(Provider(sync, "cannot close")) == (sync,)
    assert sdk_clients(object()) == ()


def test_closing_awaits_an_async_close_and_calls_a_sync_one() -> None:
    closed: list[str] = []

    class Async:
        async def aclose(self) -> None:
            closed.append("aclose")

        def close(self) -> None:  # an httpx client's: aclose is the one to await
            closed.append("sync close of an async client")

    class SdkAsync:
        async def close(self) -> None:
            closed.append("sdk close")

    sync = Client()
    asyncio.run(close_clients((Async(), SdkAsync(), sync)))
    assert closed == ["aclose", "sdk close"]
    assert sync.closed


def test_closing_cancelled_midway_closes_every_client_then_is_cancelled() -> None:
    """A trial stopped while it closes its clients (the run reached its verdict): the client
    being closed finishes closing, the next ones are closed too, and the cancellation goes on
    (a client left open kept its connections open: an unclosed transport)."""
    closed: list[str] = []

    class Slow:
        def __init__(self, name: str) -> None:
            self.name = name

        async def aclose(self) -> None:
            await asyncio.sleep(0.01)
            closed.append(self.name)

    async def main() -> None:
        closing = asyncio.create_task(close_clients((Slow("first"), Slow("second"))))
        await asyncio.sleep(0)  # the first close has begun
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        assert closing.cancelled()

    asyncio.run(main())
    assert closed == ["first", "second"]


def test_a_close_that_is_itself_cancelled_does_not_leave_the_next_client_open() -> None:
    class Cancelled:
        async def aclose(self) -> None:
            raise asyncio.CancelledError

    class Other:
        closed = False

        async def aclose(self) -> None:
            self.closed = True

    other = Other()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(close_clients((Cancelled(), other)))
    assert other.closed
