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


def gate_with(answers: list[Any], budget: float | None = None) -> tuple[Any, Any, list[Any]]:
    """A gate whose calls the mock answers with ``answers`` in turn (an ``httpx2.Response``, or
    a dict as a JSON 200); the gate, its traffic control and the requests the mock saw."""
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

    traffic = Traffic(
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
