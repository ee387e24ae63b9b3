"""The gate an adapter's model calls pass (``current_trial().http_client()``), on its own: a
mock transport stands for the provider, the openai SDK for the adapter."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def completion(text: str = "hello", prompt: int = 100, output: int = 20) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4.1-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": 120},
    }


def gate_with(
    answers: list[Any], budget: float | None = None, traffic: Any = None
) -> tuple[Any, Any, list[Any]]:
    """A gate whose calls the mock answers with ``answers`` in turn (an ``httpx2.Response``, or
    a dict as a JSON 200); the gate, its traffic control (``traffic`` if given) and the
    requests the mock saw."""
    import asyncio

    import httpx2

    from agentrig.harness.live.adapter_gate import AdapterGate, adapter_prices
    from agentrig.harness.live.budget import Budget
    from agentrig.harness.live.gateway import Ledger
    from agentrig.harness.live.limits import Backoff, ProviderLimits, Traffic

    seen: list[Any] = []

    def answer(request: Any) -> Any:
        seen.append(request)
        given = answers.pop(0)
        return given if isinstance(given, httpx2.Response) else httpx2.Response(200, json=given)

    traffic = traffic or Traffic(
        ProviderLimits({"openai": 2}, backoff=Backoff(base=0.001, max=0.01)),
        None if budget is None else Budget(budget),
    )
    gate = AdapterGate(
        key="run/refund/trial-0.1",
        control=traffic,
        ledger=Ledger(),
        prices=adapter_prices({"input": 0.4, "output": 1.6}),
        loop=asyncio.get_running_loop(),
        transport=httpx2.MockTransport(answer),
    )
    return gate, traffic, seen


async def ask(gate: Any, text: str = "hi") -> Any:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(api_key="sk-test", http_client=gate.http_client(), max_retries=0)
    return await client.chat.completions.create(
        model="gpt-4.1-mini", messages=[{"role": "user", "content": text}]
    )


async def test_each_call_is_costed_at_agent_price_and_carries_the_trial_header() -> None:
    gate, traffic, seen = gate_with([completion(), completion(prompt=50, output=10)])
    gate.mark()
    assert (await ask(gate)).choices[0].message.content == "hello"
    await ask(gate, "again")
    assert [r.headers["x-agentrig-trial"] for r in seen] == ["run/refund/trial-0.1"] * 2
    used = gate.since_mark()
    assert used is not None
    assert used.cost * 1e6 == pytest.approx(100 * 0.4 + 20 * 1.6 + 50 * 0.4 + 10 * 1.6)
    assert (gate.ledger.sent["agent"], gate.ledger.cost("agent")) == (2, used.cost)
    assert traffic.stats()["openai"].calls == 2
    # two requests that do not continue each other: two conversations, one cassette each
    assert [len(c.interactions) for c in gate.cassettes] == [1, 1]
    await gate.aclose()


async def test_a_rate_limit_is_retried_by_the_gate_and_the_sdk_never_sees_it() -> None:
    import httpx2

    limited = httpx2.Response(
        429, json={"error": {"message": "slow down"}}, headers={"retry-after-ms": "1"}
    )
    gate, traffic, seen = gate_with([limited, limited, completion()])
    answer = await ask(gate)
    assert answer.choices[0].message.content == "hello"
    assert len(seen) == 3
    assert traffic.stats()["openai"].retries[429] == 2
    assert gate.ledger.sent["agent"] == 1  # only the answer the agent got is a call
    await gate.aclose()


async def test_a_spent_budget_refuses_the_next_call_and_says_so() -> None:
    from agentrig.harness.live.budget import BudgetExhausted

    gate, _, seen = gate_with([completion(prompt=1000, output=1000)], budget=0.001)
    await ask(gate)  # 0.002 USD: admitted before it cost anything, then charged
    with pytest.raises(BudgetExhausted):
        await ask(gate)  # the SDK passes on what the transport raised
    assert len(seen) == 1
    assert isinstance(gate.ledger.refused, BudgetExhausted)
    await gate.aclose()


async def test_a_gzip_answer_is_recorded_decoded_and_relayed_as_sent() -> None:
    import gzip

    import httpx2

    body = json.dumps(completion("zipped")).encode()
    zipped = httpx2.Response(
        200,
        content=gzip.compress(body),
        headers={"content-encoding": "gzip", "content-type": "application/json"},
    )
    gate, _, _ = gate_with([zipped])
    assert (await ask(gate)).choices[0].message.content == "zipped"
    [cassette] = gate.cassettes
    [interaction] = cassette.interactions
    assert interaction.response is not None
    assert interaction.response.content == "zipped"
    await gate.aclose()


async def test_a_sync_adapter_sends_through_the_gate_from_its_worker_thread() -> None:
    import asyncio

    import httpx2
    from openai import OpenAI

    gate, traffic, _ = gate_with([completion("from a thread")])

    def sync_adapter() -> str:
        http_client = gate.sync_http_client(timeout=9.0)
        assert http_client.timeout == httpx2.Timeout(9.0)
        client = OpenAI(api_key="sk-test", http_client=http_client, max_retries=0)
        answer = client.chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": "hi"}]
        )
        return answer.choices[0].message.content or ""

    assert await asyncio.to_thread(sync_adapter) == "from a thread"
    assert traffic.stats()["openai"].calls == 1
    await gate.aclose()


class Sleeper:
    """Waits that take no time: ``now()`` moves only by what was slept, noted in ``slept``."""

    def __init__(self) -> None:
        self.time = 0.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        import asyncio

        self.slept.append(seconds)
        self.time += seconds
        await asyncio.sleep(0)


def traffic_with(sleeper: Sleeper, *, max_attempts: int = 20, budget: float | None = None) -> Any:
    from agentrig.harness.live.budget import Budget
    from agentrig.harness.live.limits import Backoff, ProviderLimits, Traffic

    limits = ProviderLimits(backoff=Backoff(base=0.25, jitter=0.0), sleeper=sleeper)
    return Traffic(limits, None if budget is None else Budget(budget), max_attempts=max_attempts)


def rate_limited(**headers: str) -> Any:
    import httpx2

    return httpx2.Response(429, json={"error": {"message": "slow down"}}, headers=headers)


async def test_a_retry_after_sent_in_any_case_is_waited_for() -> None:
    sleeper = Sleeper()
    answers = [rate_limited(**{"Retry-After": "7"}), completion()]
    gate, _, seen = gate_with(answers, traffic=traffic_with(sleeper))
    assert (await ask(gate)).choices[0].message.content == "hello"
    assert len(seen) == 2
    assert sleeper.slept == [7.0]  # the server's wait, not the back-off's 0.25 s
    await gate.aclose()


async def test_a_rate_limit_given_up_on_reaches_the_sdk_as_sent_and_costs_nothing() -> None:
    from openai import RateLimitError

    sleeper = Sleeper()
    answers = [rate_limited(**{"x-request-id": "req-1"}) for _ in range(2)]
    gate, traffic, seen = gate_with(answers, traffic=traffic_with(sleeper, max_attempts=2))
    with pytest.raises(RateLimitError) as raised:
        await ask(gate)
    assert raised.value.status_code == 429
    assert raised.value.response.headers["x-request-id"] == "req-1"
    assert raised.value.body == {"message": "slow down"}
    assert len(seen) == 2
    assert traffic.stats()["openai"].gave_up == 1
    assert (gate.calls, gate.ledger.sent["agent"], gate.since_mark()) == (0, 0, None)
    [cassette] = gate.cassettes  # the answer the SDK got is recorded, as an error
    [interaction] = cassette.interactions
    assert interaction.error is not None
    assert interaction.error.status_code == 429
    await gate.aclose()


async def test_anthropic_calls_are_capped_as_anthropic_with_or_without_a_query() -> None:
    from anthropic import AsyncAnthropic

    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4",
        "content": [{"type": "text", "text": "hi there"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    gate, traffic, _ = gate_with([answer, answer, completion()])
    client = AsyncAnthropic(api_key="sk-test", http_client=gate.http_client(), max_retries=0)
    said = await client.messages.create(
        model="claude-sonnet-4", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )
    assert said.content[0].text == "hi there"  # type: ignore[union-attr]
    again = await gate.http_client().post(  # as the SDK's beta calls go: with a query
        "https://api.anthropic.com/v1/messages?beta=true",
        json={
            "model": "claude-sonnet-4",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}],
        },
    )
    assert again.json()["content"][0]["text"] == "hi there"
    await ask(gate)
    assert {name: s.calls for name, s in traffic.stats().items()} == {"anthropic": 2, "openai": 1}
    assert gate.calls == 3
    await gate.aclose()


async def test_each_reply_counts_the_calls_since_its_mark() -> None:
    gate, _, _ = gate_with([completion(prompt=100, output=20), completion(prompt=50, output=10)])
    assert gate.since_mark() is None  # nothing passed yet
    await ask(gate)
    first = gate.since_mark()  # no mark yet: from the first call
    assert first is not None
    assert (first.input_tokens, first.output_tokens) == (100, 20)
    gate.mark()
    assert gate.since_mark() is None
    await ask(gate, "again")
    second = gate.since_mark()
    assert second is not None
    assert (second.input_tokens, second.output_tokens) == (50, 10)
    assert gate.calls == 2
    await gate.aclose()


async def test_what_is_no_model_call_passes_uncharged_with_its_headers() -> None:
    import httpx2

    models = httpx2.Response(
        200, json={"object": "list", "data": []}, headers={"x-request-id": "req-7"}
    )
    gate, traffic, seen = gate_with([models, completion()], budget=1.0)
    client = gate.http_client(timeout=7.0)
    assert client.timeout == httpx2.Timeout(7.0)
    listed = await client.get("https://api.openai.com/v1/models")
    assert listed.json() == {"object": "list", "data": []}
    assert listed.headers["x-request-id"] == "req-7"
    assert seen[0].headers["x-agentrig-trial"] == "run/refund/trial-0.1"
    assert (gate.calls, gate.cassettes) == (0, [])
    assert traffic.budget.spent == 0.0
    assert traffic.stats()["openai"].cost == 0.0
    await gate.aclose()


async def test_a_model_calls_answer_keeps_its_headers() -> None:
    import httpx2

    answer = httpx2.Response(200, json=completion(), headers={"x-request-id": "req-9"})
    gate, _, _ = gate_with([answer])
    client = gate.http_client()
    sent = await client.post(
        "https://api.openai.com/v1/chat/completions",
        json={"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert sent.headers["x-request-id"] == "req-9"
    assert sent.json()["choices"][0]["message"]["content"] == "hello"
    assert gate.calls == 1
    await gate.aclose()


async def test_a_gzip_stream_is_recorded_decoded_and_relayed_as_sent() -> None:
    # a real transport hands the body over still encoded (a mock's is read already)
    import asyncio
    import gzip

    import httpx2

    from agentrig.harness.live.adapter_gate import AdapterGate, adapter_prices
    from agentrig.harness.live.gateway import Ledger, Unlimited

    zipped = gzip.compress(json.dumps(completion("streamed zip")).encode())

    class Upstream(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: Any) -> Any:
            headers = {"content-encoding": "gzip", "content-type": "application/json"}
            return httpx2.Response(200, headers=headers, stream=httpx2.ByteStream(zipped))

    gate = AdapterGate(
        key="run/refund/trial-0.1",
        control=Unlimited(),
        ledger=Ledger(),
        prices=adapter_prices({"input": 0.4, "output": 1.6}),
        loop=asyncio.get_running_loop(),
        transport=Upstream(),
    )
    assert (await ask(gate)).choices[0].message.content == "streamed zip"
    [cassette] = gate.cassettes
    [interaction] = cassette.interactions
    assert interaction.response is not None
    assert interaction.response.content == "streamed zip"
    assert gate.ledger.cost("agent") * 1e6 == pytest.approx(100 * 0.4 + 20 * 1.6)
    await gate.aclose()


async def test_a_rate_limit_under_a_control_that_never_retries_reaches_the_sdk_as_sent() -> None:
    """``run_live_scenario`` without a ``LiveRun`` sends through ``Unlimited``: the SDK gets
    the provider's 429 (and may retry it), not a connection error."""
    from openai import RateLimitError

    from agentrig.harness.live.gateway import Unlimited

    gate, _, seen = gate_with([rate_limited(**{"Retry-After": "7"})], traffic=Unlimited())
    with pytest.raises(RateLimitError) as raised:
        await ask(gate)
    assert raised.value.status_code == 429
    assert raised.value.response.headers["retry-after"] == "7"
    assert len(seen) == 1
    [cassette] = gate.cassettes
    [interaction] = cassette.interactions
    assert interaction.error is not None
    assert interaction.error.status_code == 429
    await gate.aclose()


async def test_a_gates_network_clients_verify_with_the_shared_ssl_context() -> None:
    # each client a trial builds would otherwise load the certificate bundle again (22 ms)
    import asyncio

    from agentrig.drivers.network import shared_ssl_context
    from agentrig.harness.live.adapter_gate import AdapterGate
    from agentrig.harness.live.gateway import Ledger, Unlimited

    gate = AdapterGate(
        key="run/refund/trial-0.1",
        control=Unlimited(),
        ledger=Ledger(),
        prices=None,
        loop=asyncio.get_running_loop(),
    )
    for client in (gate.http_client(), gate.http_client(), gate.sync_http_client()):
        assert client._transport.inner._pool._ssl_context is shared_ssl_context()
    await gate.aclose()
