"""Reading a rate limit off an error: its status, and its ``Retry-After`` (a number of seconds,
milliseconds, or an HTTP date), from agentrig's ``ProviderError`` raised from the SDK's error, as
the real providers raise it."""

from __future__ import annotations

import asyncio
import itertools
import math
from datetime import timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from agentrig import InferenceRequest, Message, Messages, ProviderError
from agentrig.drivers import AnthropicProvider, OpenAIProvider
from agentrig.fakes import FakeClock
from agentrig.harness.live.limits import ProviderLimits, Traffic
from agentrig.harness.live.rate_limits import RateLimitSignal, rate_limit_of
from agentrig.harness.live.virtual_time import run_in_virtual_time

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

REQUEST = InferenceRequest(messages=Messages.of(Message.user("Hi")))


def chat() -> Any:
    return httpx2.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "hello"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
    )


def message() -> Any:
    return httpx2.Response(
        200,
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": "hello"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    )


def refusal(status: int, **headers: str) -> Any:
    body = {"error": {"message": "slow down", "type": "rate_limit_error"}}
    return httpx2.Response(status, json=body, headers=headers)


class Server:
    """Answers each request with the next canned response, noting the virtual time it came."""

    def __init__(self, *responses: Any) -> None:
        self.responses = list(responses)
        self.times: list[float] = []

    def __call__(self, request: Any) -> Any:
        self.times.append(asyncio.get_running_loop().time())
        return self.responses.pop(0)

    def openai(self) -> OpenAIProvider:
        client = openai.AsyncOpenAI(
            api_key="sk-test",
            base_url="https://llm.test/v1",
            max_retries=0,  # the traffic control retries, not the SDK
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self)),
        )
        return OpenAIProvider(client=object(), async_client=client, model="gpt-test")

    def anthropic(self) -> AnthropicProvider:
        client = anthropic.AsyncAnthropic(
            api_key="sk-test",
            base_url="https://llm.test",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self)),
        )
        return AnthropicProvider(client=object(), async_client=client, model="claude-test")


def tokens(response: Any) -> float:
    return float(response.usage.total()) * 1e-6


def error_of(provider: Any) -> ProviderError:
    async def main() -> None:
        await provider.ainfer(REQUEST)

    with pytest.raises(ProviderError) as raised:
        asyncio.run(main())
    return raised.value


class TestRealProviders:
    @pytest.mark.parametrize(
        ("headers", "seconds"),
        [({"retry-after": "2.5"}, 2.5), ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5)],
    )
    def test_openai_retry_after_is_honoured_on_the_virtual_clock(
        self, headers: dict[str, str], seconds: float
    ) -> None:
        server = Server(refusal(429, **headers), chat())
        provider = server.openai()
        traffic = Traffic(ProviderLimits({"openai": 2}))

        async def main() -> str:
            await asyncio.sleep(1.0)
            response = await traffic.call("openai", lambda: provider.ainfer(REQUEST), tokens)
            return response.content

        assert run_in_virtual_time(main()) == "hello"
        assert server.times == [1.0, 1.0 + seconds]
        assert traffic.stats()["openai"].rate_limited == {429: 1}

    def test_anthropic_overloaded_529_is_retried_after_its_retry_after(self) -> None:
        server = Server(refusal(529, **{"retry-after": "4"}), message())
        provider = server.anthropic()
        traffic = Traffic(ProviderLimits({"anthropic": 2}))

        async def main() -> str:
            response = await traffic.call("anthropic", lambda: provider.ainfer(REQUEST), tokens)
            return response.content

        assert run_in_virtual_time(main()) == "hello"
        assert server.times == [0.0, 4.0]
        assert traffic.stats()["anthropic"].retries == {529: 1}

    def test_a_refused_request_passes_through_unchanged(self) -> None:
        server = Server(httpx2.Response(400, json={"error": {"message": "bad request"}}))
        provider = server.openai()
        traffic = Traffic(ProviderLimits({"openai": 2}))

        async def main() -> None:
            await traffic.call("openai", lambda: provider.ainfer(REQUEST), tokens)

        with pytest.raises(ProviderError) as raised:
            run_in_virtual_time(main())
        assert raised.value.status_code == 400
        assert len(server.times) == 1

    def test_the_signal_of_a_real_provider_error(self) -> None:
        error = error_of(Server(refusal(429, **{"retry-after": "7"})).openai())
        assert rate_limit_of(error) == RateLimitSignal(429, 7.0)
        error = error_of(Server(refusal(503)).anthropic())
        assert rate_limit_of(error) == RateLimitSignal(503, None)


class Failure(Exception):
    def __init__(self, status: object = None, **attributes: Any) -> None:
        super().__init__("failed")
        self.status_code = status
        for name, value in attributes.items():
            setattr(self, name, value)


class Response:
    def __init__(self, status: int | None = None, **headers: str) -> None:
        self.status_code = status
        self.headers = headers


class TestSignals:
    @pytest.mark.parametrize("status", [400, 401, 404, 408, 409, 500, 502, 504])
    def test_other_statuses_are_not_rate_limits(self, status: int) -> None:
        assert rate_limit_of(ProviderError("x", status_code=status)) is None

    @pytest.mark.parametrize("status", [None, True, "429"])
    def test_no_status_is_no_rate_limit(self, status: object) -> None:
        assert rate_limit_of(Failure(status)) is None
        assert rate_limit_of(ValueError("429")) is None

    def test_the_status_of_an_http_response(self) -> None:
        error = Failure(response=Response(429, **{"retry-after": "3"}))
        assert rate_limit_of(error) == RateLimitSignal(429, 3.0)

    def test_the_retry_after_of_a_cause(self) -> None:
        cause = Failure(response=Response(429, **{"retry-after": "0.25"}))
        error = ProviderError("rate limited", status_code=429)
        error.__cause__ = cause
        assert rate_limit_of(error) == RateLimitSignal(429, 0.25)

    def test_an_http_date_is_read_on_the_given_clock(self) -> None:
        clock = FakeClock()
        date = format_datetime(clock.now() + timedelta(seconds=7), usegmt=True)
        error = Failure(429, response=Response(**{"retry-after": date}))
        assert rate_limit_of(error, clock) == RateLimitSignal(429, 7.0)
        clock.advance(10)  # a date already past: retry now
        assert rate_limit_of(error, clock) == RateLimitSignal(429, 0.0)

    @pytest.mark.parametrize(
        ("value", "seconds"),
        [("-3", 0.0), ("soon", None), ("nan", None), ("inf", math.inf), ("1e400", math.inf)],
    )
    def test_odd_retry_after_values(self, value: str, seconds: float | None) -> None:
        error = Failure(429, response=Response(**{"retry-after": value}))
        assert rate_limit_of(error) == RateLimitSignal(429, seconds)

    def test_a_retry_after_attribute_comes_first(self) -> None:
        error = Failure(429, retry_after=1.5, response=Response(**{"retry-after": "9"}))
        assert rate_limit_of(error) == RateLimitSignal(429, 1.5)

    def test_a_cycle_of_causes_ends(self) -> None:
        first, second = Failure(None), Failure(None)
        first.__cause__, second.__cause__ = second, first
        assert rate_limit_of(first) is None

    def test_the_status_is_looked_for_eight_causes_deep(self) -> None:
        def chain(length: int) -> BaseException:
            errors = [Failure(None) for _ in range(length - 1)] + [Failure(429)]
            for error, cause in itertools.pairwise(errors):
                error.__cause__ = cause
            return errors[0]

        assert rate_limit_of(chain(8)) == RateLimitSignal(429, None)
        assert rate_limit_of(chain(9)) is None

    def test_headers_are_read_by_their_lower_case_names(self) -> None:
        # a plain mapping (as some clients hand headers over) is read as the names are sent
        error = Failure(429, response=Response(**{"retry-after-ms": "1500"}))
        assert rate_limit_of(error) == RateLimitSignal(429, 1.5)

    def test_headers_that_are_no_mapping_give_no_retry_after(self) -> None:
        error = Failure(429, response=Response())
        error.response.headers = [("retry-after", "3")]
        assert rate_limit_of(error) == RateLimitSignal(429, None)

    @pytest.mark.parametrize(
        ("zone", "seconds"),
        [("GMT", 7.0), ("-0000", 7.0), ("+0000", 7.0), ("+0100", 0.0), ("-0100", 3607.0)],
    )
    def test_an_http_date_in_any_zone(self, zone: str, seconds: float) -> None:
        clock = FakeClock()  # 2026-01-01 00:00:00 UTC, a Thursday
        error = Failure(
            429, response=Response(**{"retry-after": f"Thu, 01 Jan 2026 00:00:07 {zone}"})
        )
        assert rate_limit_of(error, clock) == RateLimitSignal(429, seconds)
