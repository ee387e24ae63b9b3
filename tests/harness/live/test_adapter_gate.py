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


class Sleeps:
    """A sleeper whose clock moves past each wait at once; the waits it was asked for."""

    def __init__(self) -> None:
        self.time = 0.0
        self.waits: list[float] = []

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.time += seconds


def gate_with(
    answers: list[Any],
    budget: float | None = None,
    *,
    max_attempts: int = 5,
    sleeper: Sleeps | None = None,
    control: Any = None,
    transport: Any = None,
) -> tuple[Any, Any, list[Any]]:
    """A gate whose calls the mock answers with ``answers`` in turn (an ``httpx2.Response``, or
    a dict as a JSON 200); the gate, its traffic control (``control`` when given) and the
    requests the mock saw. ``transport`` wraps the mock (its answers streamed, say)."""
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

    traffic = control or Traffic(
        ProviderLimits(
            {"openai": 2}, backoff=Backoff(base=0.001, max=0.01), seed=3, sleeper=sleeper
        ),
        None if budget is None else Budget(budget),
        max_attempts=max_attempts,
    )
    mock = httpx2.MockTransport(answer)
    gate = AdapterGate(
        key="run/refund/trial-0.1",
        control=traffic,
        ledger=Ledger(),
        prices=adapter_prices({"input": 0.4, "output": 1.6}),
        loop=asyncio.get_running_loop(),
        transport=mock if transport is None else transport(mock),
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

    from openai import OpenAI

    gate, traffic, _ = gate_with([completion("from a thread")])

    def sync_adapter() -> str:
        client = OpenAI(api_key="sk-test", http_client=gate.sync_http_client(), max_retries=0)
        answer = client.chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": "hi"}]
        )
        return answer.choices[0].message.content or ""

    assert await asyncio.to_thread(sync_adapter) == "from a thread"
    assert traffic.stats()["openai"].calls == 1
    await gate.aclose()


def message(text: str = "bonjour") -> dict[str, Any]:
    """An Anthropic message answer (100 tokens in, 20 out)."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


def limited(retry_after: str | None = None) -> Any:
    import httpx2

    headers = {} if retry_after is None else {"Retry-After": retry_after}
    return httpx2.Response(429, json={"error": {"message": "slow down"}}, headers=headers)


def streamed(raw: bytes, headers: dict[str, str]) -> Any:
    """A transport answering 200 with ``raw`` still unread, in two chunks (a stream, as the
    network's answer is, where a mock's is read already)."""
    import httpx2

    class Streamed(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: Any) -> Any:
            async def chunks() -> Any:
                yield raw[:10]
                yield raw[10:]

            return httpx2.Response(200, headers=headers, content=chunks())

    return lambda mock: Streamed()


async def test_a_call_is_counted_and_charged_from_the_start_or_from_each_mark() -> None:
    gate, _, _ = gate_with([completion(), completion(prompt=50, output=10)])
    assert (gate.calls, gate.since_mark()) == (0, None)
    await ask(gate)
    first = gate.since_mark()  # no mark(): every call so far
    assert first is not None
    assert (first.input_tokens, first.output_tokens) == (100, 20)
    gate.mark()
    assert gate.since_mark() is None
    await ask(gate, "again")
    second = gate.since_mark()
    assert second is not None
    assert (second.input_tokens, second.output_tokens) == (50, 10)
    assert gate.calls == 2
    assert gate.ledger.usage["agent"].cost == pytest.approx(first.cost + second.cost)
    await gate.aclose()


async def test_a_rate_limit_waits_as_long_as_its_retry_after_says() -> None:
    sleeps = Sleeps()
    gate, traffic, seen = gate_with([limited("3"), completion()], sleeper=sleeps)
    assert (await ask(gate)).choices[0].message.content == "hello"
    assert (len(seen), sleeps.waits) == (2, [3.0])  # not the back-off's 0.001 s
    assert traffic.stats()["openai"].rate_limited == {429: 1}
    await gate.aclose()


async def test_a_rate_limit_agentrig_gave_up_on_reaches_the_sdk_as_sent_and_is_recorded() -> None:
    from openai import RateLimitError

    gate, traffic, seen = gate_with([limited(), limited()], max_attempts=2)
    gate.mark()
    with pytest.raises(RateLimitError) as raised:
        await ask(gate)
    assert raised.value.status_code == 429
    assert raised.value.body == {"message": "slow down"}
    assert len(seen) == 2
    assert traffic.stats()["openai"].gave_up == 1
    # the answer the agent got is in the trial's cassette, costing nothing and no model call
    [cassette] = gate.cassettes
    [interaction] = cassette.interactions
    assert interaction.response is None
    assert interaction.error is not None
    assert interaction.error.status_code == 429
    assert (gate.calls, gate.ledger.sent["agent"], gate.since_mark()) == (0, 0, None)
    await gate.aclose()


async def test_a_rate_limit_under_a_control_that_never_retries_reaches_the_sdk_as_sent() -> None:
    """``run_live_scenario`` without a ``LiveRun`` sends through ``Unlimited``: the SDK gets
    the provider's 429 (and may retry it), not a connection error."""
    from openai import RateLimitError

    from agentrig.harness.live.gateway import Unlimited

    gate, _, seen = gate_with([limited("7")], control=Unlimited())
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


async def test_anthropic_calls_are_capped_as_anthropic_with_or_without_a_query() -> None:
    from anthropic import AsyncAnthropic

    gate, traffic, seen = gate_with([message(), message("beta")])
    client = AsyncAnthropic(api_key="sk-ant", http_client=gate.http_client(), max_retries=0)
    said: Any = [{"role": "user", "content": "hi"}]
    answer = await client.messages.create(model="claude-test", max_tokens=100, messages=said)
    assert answer.content[0].text == "bonjour"  # type: ignore[union-attr]
    beta = await client.messages.create(
        model="claude-test", max_tokens=100, messages=said, extra_query={"beta": "true"}
    )
    assert beta.content[0].text == "beta"  # type: ignore[union-attr]
    assert seen[1].url.query == b"beta=true"
    stats = traffic.stats()
    assert stats["anthropic"].calls == 2
    assert "openai" not in stats or stats["openai"].calls == 0
    assert gate.calls == 2
    await gate.aclose()


async def test_a_request_that_is_no_model_call_passes_uncharged() -> None:
    from openai import AsyncOpenAI

    models = {"object": "list", "data": [{"id": "gpt-4.1-mini", "object": "model"}]}
    gate, traffic, seen = gate_with([models], budget=1.0)
    client = AsyncOpenAI(api_key="sk-test", http_client=gate.http_client(), max_retries=0)
    listed = await client.models.list()
    assert [model.id for model in listed.data] == ["gpt-4.1-mini"]
    assert seen[0].headers["x-agentrig-trial"] == "run/refund/trial-0.1"
    assert traffic.stats()["openai"].calls == 1
    assert traffic.stats()["openai"].cost == 0.0
    assert traffic.budget.spent == 0.0
    assert (gate.calls, gate.ledger.sent["agent"], gate.cassettes) == (0, 0, [])
    await gate.aclose()


async def test_a_streamed_gzip_answer_is_recorded_decoded_and_relayed_as_sent() -> None:
    import gzip

    body = json.dumps(completion("zipped", prompt=10, output=2)).encode()
    headers = {"content-encoding": "gzip", "content-type": "application/json"}
    gate, _, _ = gate_with([], transport=streamed(gzip.compress(body), headers))
    assert (await ask(gate)).choices[0].message.content == "zipped"
    [cassette] = gate.cassettes
    [interaction] = cassette.interactions
    assert interaction.response is not None
    assert interaction.response.content == "zipped"
    used = gate.since_mark()
    assert used is not None
    assert (used.input_tokens, used.output_tokens) == (10, 2)
    await gate.aclose()


async def test_the_clients_take_the_options_given() -> None:
    import asyncio

    gate, _, seen = gate_with([completion(), completion()])
    client = gate.http_client(headers={"x-agent": "async"}, timeout=7.0)
    assert client.timeout.read == 7.0
    await client.post("https://api.openai.com/v1/chat/completions", json={})
    sync = gate.sync_http_client(headers={"x-agent": "sync"}, timeout=8.0)
    assert sync.timeout.read == 8.0
    await asyncio.to_thread(sync.post, "https://api.openai.com/v1/chat/completions", json={})
    assert [r.headers["x-agent"] for r in seen] == ["async", "sync"]
    await gate.aclose()
