"""The bundled endpoint scenarios, run unchanged by a LangGraph agent on langchain-openai's
ChatOpenAI, over Chat Completions and over the Responses API, plain and streamed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

# LangGraph and LangChain (about 1 CPU s) are imported by the first test here, on the one worker
# that runs the LangGraph modules, not at collection in every worker.
pytestmark = pytest.mark.xdist_group("langgraph")


@pytest.fixture(scope="module", autouse=True)
def _frameworks() -> None:
    pytest.importorskip("langgraph", reason="needs the frameworks extra (langgraph)")
    pytest.importorskip("langchain_openai", reason="needs the frameworks extra (langchain-openai)")


def build_agent(model: Any, **options: Any) -> Any:
    """The example's agent (``weather_langgraph`` imports LangChain when first called)."""
    from weather_langgraph import build_agent

    return build_agent(model, **options)


ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "scenarios" / "endpoint"  # also run on agentrig's runtime by `agentrig run`
RATE_LIMITED = ROOT / "examples" / "endpoint" / "scenarios" / "rate_limited.scenario.yaml"

Endpoint = Callable[..., EndpointHandle]


def chat_model(
    ep: EndpointHandle, *, responses: bool, streamed: bool, model: str = "gpt-4.1", **options: Any
) -> ChatOpenAI:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=model,
        base_url=ep.openai_base_url,
        api_key=ep.api_key,
        http_client=ep.httpx2_client(),
        use_responses_api=responses,
        streaming=streamed,
        **options,
    )


def answer_of(state: dict[str, Any]) -> str:
    """The text of the agent's last message."""
    return str(state["messages"][-1].text)


API = pytest.mark.parametrize("responses", [False, True], ids=["chat", "responses"])
MODES = pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])


@MODES
@API
def test_weather(agentrig_endpoint: Endpoint, responses: bool, streamed: bool) -> None:
    ep = agentrig_endpoint(SCENARIOS / "weather.scenario.yaml")
    agent = build_agent(chat_model(ep, responses=responses, streamed=streamed))

    state = agent.invoke({"messages": [("user", "What is the weather in Paris?")]})

    assert answer_of(state) == "It is sunny in Paris."


@MODES
@API
def test_parallel_tool_calls(agentrig_endpoint: Endpoint, responses: bool, streamed: bool) -> None:
    ep = agentrig_endpoint(SCENARIOS / "parallel_weather.scenario.yaml")
    agent = build_agent(chat_model(ep, responses=responses, streamed=streamed))

    state = agent.invoke({"messages": [("user", "What is the weather in Paris and in Oslo?")]})

    assert answer_of(state) == "It is sunny in Paris and in Oslo."


@MODES
@API
def test_two_turns(agentrig_endpoint: Endpoint, responses: bool, streamed: bool) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    ep = agentrig_endpoint(SCENARIOS / "two_turns.scenario.yaml")
    model = chat_model(ep, responses=responses, streamed=streamed)
    agent = build_agent(model, checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "one"}}

    agent.invoke({"messages": [("user", "What is the weather in Paris?")]}, thread)
    state = agent.invoke({"messages": [("user", "And in Oslo?")]}, thread)

    assert answer_of(state) == "It is sunny in Oslo too."


@API
def test_rate_limited_then_retried(agentrig_endpoint: Endpoint, responses: bool) -> None:
    ep = agentrig_endpoint(RATE_LIMITED)
    agent = build_agent(chat_model(ep, responses=responses, streamed=False))

    state = agent.invoke({"messages": [("user", "What is the weather in Paris?")]})

    assert answer_of(state) == "It is sunny in Paris."


@API
def test_an_agent_without_the_tool_is_reported(responses: bool) -> None:
    with EndpointHandle(SCENARIOS / "weather.scenario.yaml") as ep:
        agent = build_agent(chat_model(ep, responses=responses, streamed=False), tools=[])
        agent.invoke({"messages": [("user", "What is the weather in Paris?")]})
        result = ep.result()

    assert not result.passed
    offered = [f for f in result.failures if f.invariant == "tools_offered"]
    assert [f.message for f in offered] == [
        "request 1: tools_offered: the script calls get_weather, which the request does not offer"
    ]


def test_an_agent_that_makes_its_own_client(
    agentrig_endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_openai import ChatOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder")
    ep = agentrig_endpoint(SCENARIOS / "weather.scenario.yaml")

    with ep.intercept():  # api.openai.com is answered by the endpoint
        agent = build_agent(ChatOpenAI(model="gpt-4.1"))
        state = agent.invoke({"messages": [("user", "What is the weather in Paris?")]})

    assert answer_of(state) == "It is sunny in Paris."


def test_on_a_live_server(agentrig_endpoint: Endpoint) -> None:
    from langchain_openai import ChatOpenAI

    ep = agentrig_endpoint(SCENARIOS / "parallel_weather.scenario.yaml", live=True)
    model = ChatOpenAI(
        model="gpt-4.1", base_url=ep.openai_base_url, api_key=ep.api_key, streaming=True
    )

    state = build_agent(model).invoke(
        {"messages": [("user", "What is the weather in Paris and in Oslo?")]}
    )

    assert answer_of(state) == "It is sunny in Paris and in Oslo."


@pytest.mark.parametrize("scenario", ["reasoning_weather", "redacted_reasoning_weather"])
@MODES
@API
def test_a_reasoning_model(
    agentrig_endpoint: Endpoint, responses: bool, streamed: bool, scenario: str
) -> None:
    # redacted_reasoning_weather: reasoning without text (a reasoning item with an empty summary)
    ep = agentrig_endpoint(SCENARIOS / f"{scenario}.scenario.yaml")
    # a reasoning model, which asks the Responses API for its reasoning sealed, to send it back
    options: dict[str, Any] = {"include": ["reasoning.encrypted_content"]} if responses else {}
    model = chat_model(ep, responses=responses, streamed=streamed, model="gpt-5", **options)
    agent = build_agent(model)

    state = agent.invoke({"messages": [("user", "What is the weather in Paris?")]})

    assert answer_of(state) == "It is sunny in Paris."


# ChatAnthropic builds its own HTTP client (it takes no http_client): the endpoint reaches it
# through intercept() (the default host, api.anthropic.com, answered in process) or on a live
# loopback server (base_url).


@MODES
def test_weather_on_chat_anthropic_intercepted(
    agentrig_endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch, streamed: bool
) -> None:
    chat_anthropic = pytest.importorskip("langchain_anthropic").ChatAnthropic
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_URL", raising=False)
    ep = agentrig_endpoint(SCENARIOS / "weather.scenario.yaml")
    model = chat_anthropic(model="claude-sonnet-5-5", api_key="placeholder", streaming=streamed)
    with ep.intercept():
        state = build_agent(model).invoke({"messages": [("user", "What is the weather in Paris?")]})
    assert answer_of(state) == "It is sunny in Paris."
    assert {r.path for r in ep.requests()} == {"/v1/messages"}


def test_weather_on_chat_anthropic_live(agentrig_endpoint: Endpoint) -> None:
    chat_anthropic = pytest.importorskip("langchain_anthropic").ChatAnthropic
    ep = agentrig_endpoint(SCENARIOS / "weather.scenario.yaml", live=True)
    model = chat_anthropic(
        model="claude-sonnet-5-5", base_url=ep.anthropic_base_url, api_key=ep.api_key
    )
    state = build_agent(model).invoke({"messages": [("user", "What is the weather in Paris?")]})
    assert answer_of(state) == "It is sunny in Paris."
