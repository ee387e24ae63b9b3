"""The agent under test in a live trial (``harness/live/agent.py``), on its own: a builder's
agent through the trial's gateway, an adapter agent and its tape, and how each failure is told
apart (the budget, refused credentials, the provider's failure, the agent's own crash)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentrig import AgentBuilder, UseLlmConfig, tool
from agentrig.errors import ConfigurationError, ProviderError
from agentrig.fakes import FunctionLLM, call, reply
from agentrig.fakes.llm import Turn
from agentrig.harness.live.agent import (
    AccessDenied,
    AdapterAgent,
    AdapterTape,
    AgentCrashed,
    BuilderAgent,
    InfrastructureFailure,
    agent_driver,
    builder_for,
    call_adapter,
    resolve_adapter,
)
from agentrig.harness.live.budget import Budget, BudgetExhausted
from agentrig.harness.live.gateway import Ledger, Unlimited
from agentrig.harness.live.transcript import AgentReply, CalledTool, Exchange, Transcript
from agentrig.state import InferenceRequest, Usage


@tool
def refund(order_id: str) -> str:
    """Refund an order."""
    if order_id == "bad":
        raise ValueError("no such order")
    return f"refunded {order_id}"


def builder(model: Any) -> AgentBuilder:
    return AgentBuilder.base().with_tools([refund]).with_capability(UseLlmConfig(model))


def builder_agent(model: Any, ledger: Ledger | None = None, **options: Any) -> BuilderAgent:
    return BuilderAgent(builder(model), control=Unlimited(), ledger=ledger or Ledger(), **options)


def answer(request: InferenceRequest) -> Turn:
    """Refunds the order named in the last user message, then says so."""
    last = request.messages[-1]
    if last.role.value == "tool":
        return reply(f"done: {last.content}", usage=Usage(input_tokens=10, output_tokens=2))
    return call("refund", order_id=last.content.split()[-1])


def respond(agent: Any, message: str, transcript: Transcript | None = None) -> AgentReply:
    got: AgentReply = asyncio.run(agent.respond(transcript or Transcript(), message))
    return got


def test_a_builder_agent_replies_with_its_text_the_tools_it_called_and_their_results() -> None:
    agent = builder_agent(FunctionLLM(answer))
    first = respond(agent, "refund A-1")
    assert first.content == "done: refunded A-1"
    assert first.tool_calls == (CalledTool("refund", {"order_id": "A-1"}, "refunded A-1"),)
    assert first.usage.input_tokens == 10
    failed = respond(agent, "refund bad")  # the same conversation goes on
    [called] = failed.tool_calls
    # the error itself, not the text the model was shown ("Error in tool call: ...")
    assert called == CalledTool("refund", {"order_id": "bad"}, "no such order", is_error=True)
    assert agent.state is not None
    assert [m.content for m in agent.state.messages() if m.role.value == "user"] == [
        "refund A-1",
        "refund bad",
    ]


def test_a_builder_agents_calls_are_recorded_unless_told_not_to() -> None:
    recorded = builder_agent(FunctionLLM(answer))
    respond(recorded, "refund A-1")
    assert len(recorded.provider.cassette().interactions) == 2
    assert recorded.ledger.sent["agent"] == 2
    unrecorded = builder_agent(FunctionLLM(answer), record=False)
    respond(unrecorded, "refund A-1")
    assert unrecorded.provider.cassette().interactions == ()


def test_a_recorded_builder_agent_is_replayed_without_asking_its_model() -> None:
    recorded = builder_agent(FunctionLLM(answer))
    first = respond(recorded, "refund A-1")

    def never(request: InferenceRequest) -> Turn:
        raise AssertionError("a replayed agent's model is not asked")

    replayed = builder_agent(FunctionLLM(never), replay=recorded.provider.cassette())
    again = respond(replayed, "refund A-1")
    assert (again.content, again.tool_calls) == (first.content, first.tool_calls)
    assert (replayed.ledger.replayed["agent"], replayed.ledger.sent["agent"]) == (2, 0)


def test_an_empty_reply_is_a_reply() -> None:
    agent = builder_agent(FunctionLLM(lambda request: reply("")))
    assert respond(agent, "hi").content == ""


def denied(status: int) -> Any:
    def model(request: InferenceRequest) -> Turn:
        raise ProviderError("invalid API key", status_code=status)

    return FunctionLLM(model)


@pytest.mark.parametrize("status", [401, 403])
def test_a_builder_agent_whose_model_refused_its_key_says_with_which_status(status: int) -> None:
    with pytest.raises(AccessDenied) as raised:
        respond(builder_agent(denied(status)), "hi")
    assert (raised.value.status, str(raised.value)) == (status, "invalid API key")


def test_a_builder_agent_whose_provider_failed_before_it_said_anything_is_set_aside() -> None:
    def overloaded(request: InferenceRequest) -> Turn:
        raise ProviderError("overloaded", status_code=503)

    with pytest.raises(InfrastructureFailure, match=r"^overloaded$"):
        respond(builder_agent(FunctionLLM(overloaded)), "hi")


def test_a_builder_agent_stops_on_the_budgets_refusal() -> None:
    budget = Budget(0.01)
    budget.admit()
    budget.charge(0.02)
    ledger = Ledger()
    agent = BuilderAgent(builder(FunctionLLM(answer)), control=_Refusing(budget), ledger=ledger)
    with pytest.raises(BudgetExhausted):
        respond(agent, "refund A-1")


class _Refusing:
    """A control that asks the budget before each call, as the traffic control does."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    async def call(self, provider: str, make_call: Any, cost_of: Any) -> Any:
        self.budget.check()
        return await make_call()


def test_a_builder_agent_closes_its_own_providers_clients_unless_they_are_shared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentrig.drivers.openai import OpenAIProvider

    def made() -> tuple[BuilderAgent, Any]:
        provider = OpenAIProvider(model="m", api_key="sk", max_retries=0)
        client = provider.client
        return BuilderAgent(builder(provider), control=Unlimited(), ledger=Ledger()), client

    agent, client = made()
    asyncio.run(agent.close())
    assert client.is_closed()
    agent, client = made()
    asyncio.run(agent.close(frozenset({id(agent.made)})))
    assert not client.is_closed()
    agent, client = made()
    asyncio.run(agent.close(frozenset({id(client)})))
    assert not client.is_closed()


def test_a_builder_agent_sends_the_trials_header_when_given_a_key() -> None:
    from agentrig.drivers.openai import OpenAIProvider

    provider = OpenAIProvider(model="m", api_key="sk", max_retries=0)
    keyed = BuilderAgent(builder(provider), control=Unlimited(), ledger=Ledger(), trial_key="t/1")
    assert keyed.provider.inner is not provider
    inner: Any = keyed.provider.inner
    assert inner.client.default_headers["x-agentrig-trial"] == "t/1"
    assert keyed.provider.provider_name == "openai"
    plain = BuilderAgent(builder(provider), control=Unlimited(), ledger=Ledger())
    assert plain.provider.inner is provider


def test_a_builder_without_a_model_cannot_be_tried_live() -> None:
    with pytest.raises(ConfigurationError) as raised:
        agent_driver(AgentBuilder.base().with_tools([refund]))
    assert str(raised.value) == (
        "agent.builder: a live trial needs the agent's model: install UseLlmConfig(provider) "
        "or with_driver(ToolCallingDriver(provider))"
    )


SHARED = builder(FunctionLLM(answer))


def test_each_trial_builds_from_a_copy_of_a_shared_builder() -> None:
    copy = builder_for(f"{__name__}:SHARED")
    assert copy is not SHARED
    assert [t.name for t in copy.tools()] == ["refund"]


NOT_A_FUNCTION = 3


def adapter(conversation: list[dict[str, str]]) -> str:
    return f"you said {conversation[-1]['content']}"


def test_an_adapter_is_resolved_to_a_function_or_refused() -> None:
    assert resolve_adapter(f"{__name__}:adapter") is adapter
    with pytest.raises(ConfigurationError) as raised:
        resolve_adapter(f"{__name__}:NOT_A_FUNCTION")
    assert str(raised.value) == (
        f"adapter '{__name__}:NOT_A_FUNCTION' is int: name a function taking the conversation "
        "(a list of {role, content}) and returning the reply"
    )


def test_an_adapter_that_does_not_import_is_refused_naming_it() -> None:
    with pytest.raises(ConfigurationError) as raised:
        resolve_adapter("no_such_module_here:reply")
    assert str(raised.value).startswith(
        "adapter 'no_such_module_here:reply': cannot import module 'no_such_module_here': "
    )


def test_an_adapter_is_given_a_copy_of_the_conversation_sync_async_or_awaitable() -> None:
    messages = [{"role": "user", "content": "hi"}]
    threads: list[bool] = []

    def sync(given: list[dict[str, str]]) -> str:
        import threading

        threads.append(threading.current_thread() is threading.main_thread())
        given.append({"role": "assistant", "content": "x"})
        return "sync"

    async def coroutine(given: list[dict[str, str]]) -> str:
        given.clear()
        return "async"

    def awaitable(given: list[dict[str, str]]) -> Any:
        return coroutine(given)

    assert asyncio.run(call_adapter(sync, messages)) == "sync"
    assert asyncio.run(call_adapter(coroutine, messages)) == "async"
    assert asyncio.run(call_adapter(awaitable, messages)) == "async"
    assert messages == [{"role": "user", "content": "hi"}]
    assert threads == [False]  # a sync adapter runs in a worker thread


def adapter_agent(function: Any, tape: AdapterTape | None = None, gate: Any = None) -> Any:
    return AdapterAgent(function, "app:reply", tape or AdapterTape(), Ledger(), gate)


def test_an_adapter_agent_is_given_the_conversation_and_records_its_reply() -> None:
    seen: list[list[dict[str, str]]] = []

    def function(conversation: list[dict[str, str]]) -> dict[str, Any]:
        seen.append(conversation)
        return {
            "content": "refunded",
            "tool_calls": [{"name": "refund", "arguments": {"order_id": "A-1"}, "result": "ok"}],
            "usage": {"input_tokens": 7, "output_tokens": 3},
            "cost": 0.5,
        }

    agent = adapter_agent(function)
    before = Transcript().with_exchange(Exchange("hello", AgentReply("hi, which order?")))
    got = respond(agent, "A-1", before)
    assert seen == [
        [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "hi, which order?"},
            {"role": "user", "content": "A-1"},
        ]
    ]
    assert got.content == "refunded"
    assert (agent.ledger.sent["agent"], agent.ledger.cost("agent")) == (1, 0.5)
    assert agent.tape.recorded == [
        {
            "messages": seen[0],
            "reply": {
                "content": "refunded",
                "tool_calls": [
                    {
                        "name": "refund",
                        "arguments": {"order_id": "A-1"},
                        "result": "ok",
                        "is_error": False,
                    }
                ],
                "usage": {
                    "input_tokens": 7,
                    "output_tokens": 3,
                    "cache_read_tokens": 0,
                    "cache_write_tokens": 0,
                    "reasoning_tokens": 0,
                },
                "cost": 0.5,
            },
        }
    ]


def test_a_replayed_adapter_plays_each_recorded_reply_in_turn_without_calling_it() -> None:
    def never(conversation: list[dict[str, str]]) -> str:
        raise AssertionError("a replayed adapter is not called")

    said = ["one", "two", "three"]
    recorded: list[dict[str, Any]] = []
    conversation: list[dict[str, str]] = []
    for number, text in enumerate(said, start=1):
        conversation = [*conversation, {"role": "user", "content": text}]
        recorded.append({"messages": conversation, "reply": {"content": str(number), "cost": 0.25}})
        conversation = [*conversation, {"role": "assistant", "content": str(number)}]
    tape = AdapterTape(replay=recorded)
    agent = adapter_agent(never, tape)
    transcript, replies = Transcript(), []
    for text in said:
        replies.append(respond(agent, text, transcript))
        transcript = transcript.with_exchange(Exchange(text, replies[-1]))
    assert [r.content for r in replies] == ["1", "2", "3"]
    assert agent.ledger.replayed["agent"] == 3
    assert agent.ledger.sent["agent"] == 0
    assert agent.ledger.cost("agent") == 0.75
    assert tape.recorded == recorded


def test_a_tape_without_a_recording_plays_nothing_and_one_that_differs_says_why() -> None:
    assert AdapterTape().played([{"role": "user", "content": "x"}]) is None
    tape = AdapterTape(replay=[{"messages": [{"role": "user", "content": "x"}], "reply": 3}])
    with pytest.raises(LookupError) as damaged:
        tape.played([{"role": "user", "content": "x"}])
    assert str(damaged.value) == (
        "the recording cannot be read: the recorded reply returned int: return the reply's "
        "text (a str), or a dict {content, tool_calls, usage, cost}"
    )
    with pytest.raises(LookupError, match=r"^the conversation differs from the recorded one$"):
        AdapterTape(replay=[]).played([])


class Gate:
    """What an adapter agent reads of the trial's gate: the usage since each reply's mark."""

    def __init__(self, *usages: Usage | None) -> None:
        self.usages = list(usages)
        self.marks = 0

    def mark(self) -> None:
        self.marks += 1

    def since_mark(self) -> Usage | None:
        return self.usages[self.marks - 1]


def test_an_adapters_calls_through_the_gate_are_its_replys_usage_charged_once() -> None:
    gated = Usage(input_tokens=40, output_tokens=4, cost=0.125)
    gate = Gate(gated, None)
    agent = adapter_agent(lambda _: {"content": "x", "cost": 9.0}, gate=gate)
    assert respond(agent, "one").usage == gated
    assert agent.ledger.sent["agent"] == 0  # the gate charged each call itself
    # no call passed the gate for this reply: the reply counts as one call, at its own cost
    assert respond(agent, "two").usage.cost == 9.0
    assert (gate.marks, agent.ledger.sent["agent"], agent.ledger.cost("agent")) == (2, 1, 9.0)


def raising(error: Exception) -> Any:
    def function(conversation: list[dict[str, str]]) -> str:
        raise error

    return function


def test_an_adapter_that_raises_crashed_and_says_so_where() -> None:
    with pytest.raises(AgentCrashed) as raised:
        respond(adapter_agent(raising(ValueError("boom"))), "hi")
    assert str(raised.value).startswith("adapter 'app:reply' raised ValueError: boom (")
    with pytest.raises(AgentCrashed) as returned:
        respond(adapter_agent(lambda _: 3), "hi")
    assert str(returned.value) == (
        "adapter 'app:reply' returned int: return the reply's text (a str), or a dict "
        "{content, tool_calls, usage, cost}"
    )


class RateLimitError(Exception):
    """Named as an SDK's rate-limit error."""


class Throttled(RateLimitError):
    pass


class HttpError(Exception):
    def __init__(self, status_code: Any) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


@pytest.mark.parametrize(
    "error",
    [
        ProviderError("rate limited", status_code=429, retryable=True),
        ProviderError("connection reset", retryable=True),  # no status: its retryability
        HttpError(503),
        HttpError(429),
        RateLimitError("slow down"),
        Throttled("slow down"),
    ],
    ids=["provider error", "dropped connection", "503", "429", "named", "named base class"],
)
def test_an_adapter_whose_provider_failed_is_set_aside(error: Exception) -> None:
    with pytest.raises(InfrastructureFailure) as raised:
        respond(adapter_agent(raising(error)), "hi")
    assert str(raised.value).startswith(f"adapter 'app:reply': {type(error).__name__}: ")


@pytest.mark.parametrize(
    "error",
    [HttpError(400), HttpError("503"), ValueError("x"), ProviderError("bad tool schema")],
)
def test_an_adapter_error_of_no_infrastructure_status_is_a_crash(error: Exception) -> None:
    with pytest.raises(AgentCrashed):
        respond(adapter_agent(raising(error)), "hi")


def test_an_adapter_whose_model_refused_its_key_says_with_which_status() -> None:
    with pytest.raises(AccessDenied) as raised:
        respond(adapter_agent(raising(HttpError(403))), "hi")
    assert raised.value.status == 403
    assert str(raised.value).startswith("adapter 'app:reply': HttpError: HTTP 403 (")


def test_an_adapter_stops_on_the_budgets_refusal_of_one_of_its_calls() -> None:
    ledger = Ledger()
    refused = BudgetExhausted(
        "the budget", 1.0, 1.0
    )  # what the gate noted when it refused the call

    def function(conversation: list[dict[str, str]]) -> str:
        ledger.refused = refused
        raise RuntimeError("the SDK's wrapping of the refusal")

    agent = AdapterAgent(function, "app:reply", AdapterTape(), ledger)
    with pytest.raises(BudgetExhausted) as raised:
        respond(agent, "hi")
    assert raised.value is refused
