"""The bundled endpoint scenarios, run unchanged by the LangGraph agent of weather_langgraph on
langchain-google-genai's ChatGoogleGenerativeAI (the Gemini API), plain and streamed.

ChatGoogleGenerativeAI sends tool calls and results back without their ids, as the Gemini API
allows: the endpoint pairs them with the calls they repeat."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentrig.drivers.network import shared_ssl_context
from agentrig.harness.endpoint.handle import EndpointHandle

if TYPE_CHECKING:
    from langchain_google_genai import ChatGoogleGenerativeAI

# LangGraph, LangChain and langchain-google-genai (about 2 CPU s) are imported by the first test
# here, on the one worker that runs the LangGraph modules, not at collection in every worker.
pytestmark = pytest.mark.xdist_group("langgraph")


@pytest.fixture(scope="module", autouse=True)
def _frameworks() -> None:
    pytest.importorskip("langgraph", reason="needs the frameworks extra (langgraph)")
    pytest.importorskip(
        "langchain_google_genai", reason="needs the frameworks extra (langchain-google-genai)"
    )


def build_agent(model: Any, **options: Any) -> Any:
    """The example's agent (``weather_langgraph`` imports LangChain when first called)."""
    from weather_langgraph import build_agent

    return build_agent(model, **options)


ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "scenarios" / "endpoint"  # also run on agentrig's runtime by `agentrig run`
RATE_LIMITED = ROOT / "examples" / "endpoint" / "scenarios" / "rate_limited.scenario.yaml"

Endpoint = Callable[..., EndpointHandle]


def chat_model(ep: EndpointHandle, *, streamed: bool, **options: Any) -> ChatGoogleGenerativeAI:
    """ChatGoogleGenerativeAI on the endpoint: in process through ``client_args`` (which
    google-genai passes to the httpx clients it makes), or over loopback when live. Given an
    SSL context (agentrig's shared one, ``verify``; ``ssl`` for its websockets), google-genai
    does not load the certificates twice for each model (about 40 ms CPU)."""
    from langchain_google_genai import ChatGoogleGenerativeAI

    if not ep.live:
        ssl_context = shared_ssl_context()
        options.setdefault(
            "client_args",
            {"transport": ep.httpx_transport(), "verify": ssl_context, "ssl": ssl_context},
        )
    return ChatGoogleGenerativeAI(
        model="gemini-2.5-flash",
        api_key=ep.api_key,
        base_url=ep.gemini_base_url,
        streaming=streamed,
        **options,
    )


def answer_of(state: dict[str, Any]) -> str:
    """The text of the agent's last message."""
    return str(state["messages"][-1].text)


MODES = pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])


@MODES
def test_weather(agentrig_endpoint: Endpoint, streamed: bool) -> None:
    ep = agentrig_endpoint(SCENARIOS / "weather.scenario.yaml")
    agent = build_agent(chat_model(ep, streamed=streamed))

    state = agent.invoke({"messages": [("user", "What is the weather in Paris?")]})

    assert answer_of(state) == "It is sunny in Paris."


@MODES
def test_parallel_tool_calls(agentrig_endpoint: Endpoint, streamed: bool) -> None:
    ep = agentrig_endpoint(SCENARIOS / "parallel_weather.scenario.yaml")
    agent = build_agent(chat_model(ep, streamed=streamed))

    state = agent.invoke({"messages": [("user", "What is the weather in Paris and in Oslo?")]})

    assert answer_of(state) == "It is sunny in Paris and in Oslo."


@MODES
def test_two_turns(agentrig_endpoint: Endpoint, streamed: bool) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    ep = agentrig_endpoint(SCENARIOS / "two_turns.scenario.yaml")
    agent = build_agent(chat_model(ep, streamed=streamed), checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "one"}}

    agent.invoke({"messages": [("user", "What is the weather in Paris?")]}, thread)
    state = agent.invoke({"messages": [("user", "And in Oslo?")]}, thread)

    assert answer_of(state) == "It is sunny in Oslo too."


@pytest.mark.slow  # google-genai backs off 1 s or more before it retries (it ignores Retry-After)
def test_rate_limited_then_retried(
    agentrig_endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    # google-genai ignores Retry-After and backs off for 1-2 s before its first retry: that it
    # retries is what is checked here, not how long it waits
    for default in ("_RETRY_INITIAL_DELAY", "_RETRY_JITTER"):
        monkeypatch.setattr(f"google.genai._api_client.{default}", 0.01, raising=False)
    ep = agentrig_endpoint(RATE_LIMITED)
    agent = build_agent(chat_model(ep, streamed=False, max_retries=3))

    state = agent.invoke({"messages": [("user", "What is the weather in Paris?")]})

    assert answer_of(state) == "It is sunny in Paris."


def test_an_agent_without_the_tool_is_reported() -> None:
    with EndpointHandle(SCENARIOS / "weather.scenario.yaml") as ep:
        agent = build_agent(chat_model(ep, streamed=False), tools=[])
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
    from langchain_google_genai import ChatGoogleGenerativeAI

    monkeypatch.setenv("GOOGLE_API_KEY", "placeholder")
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    ep = agentrig_endpoint(SCENARIOS / "weather.scenario.yaml")

    with ep.intercept():  # generativelanguage.googleapis.com is answered by the endpoint
        agent = build_agent(ChatGoogleGenerativeAI(model="gemini-2.5-flash"))
        state = agent.invoke({"messages": [("user", "What is the weather in Paris?")]})

    assert answer_of(state) == "It is sunny in Paris."


def test_on_a_live_server(agentrig_endpoint: Endpoint) -> None:
    ep = agentrig_endpoint(SCENARIOS / "parallel_weather.scenario.yaml", live=True)

    state = build_agent(chat_model(ep, streamed=True)).invoke(
        {"messages": [("user", "What is the weather in Paris and in Oslo?")]}
    )

    assert answer_of(state) == "It is sunny in Paris and in Oslo."


@pytest.mark.parametrize("scenario", ["reasoning_weather", "redacted_reasoning_weather"])
@MODES
def test_a_reasoning_model(agentrig_endpoint: Endpoint, streamed: bool, scenario: str) -> None:
    # the thought signature of the call goes back with it (reasoning_sent_back, at teardown)
    ep = agentrig_endpoint(SCENARIOS / f"{scenario}.scenario.yaml")
    agent = build_agent(chat_model(ep, streamed=streamed, include_thoughts=True))

    state = agent.invoke({"messages": [("user", "What is the weather in Paris?")]})

    assert answer_of(state) == "It is sunny in Paris."
