"""The bundled endpoint scenarios, run unchanged by a pydantic-ai agent on its OpenAI Chat,
OpenAI Responses and Anthropic models, plain and streamed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="needs the frameworks extra (pydantic-ai-slim)")

from anthropic import AsyncAnthropic
from openai import AsyncOpenAI
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import (
    OpenAIChatModel,
    OpenAIResponsesModel,
    OpenAIResponsesModelSettings,
)
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from weather_pydantic_ai import build_agent

from agentrig.harness.endpoint.handle import EndpointHandle

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "scenarios" / "endpoint"  # also run on agentrig's runtime by `agentrig run`
RATE_LIMITED = ROOT / "examples" / "endpoint" / "scenarios" / "rate_limited.scenario.yaml"


def _client(ep: EndpointHandle) -> AsyncOpenAI:
    return AsyncOpenAI(
        base_url=ep.openai_base_url, api_key=ep.api_key, http_client=ep.async_httpx2_client()
    )


def openai_chat(ep: EndpointHandle) -> Model:
    return OpenAIChatModel("gpt-4.1", provider=OpenAIProvider(openai_client=_client(ep)))


def openai_responses(ep: EndpointHandle) -> Model:
    return OpenAIResponsesModel("gpt-4.1", provider=OpenAIProvider(openai_client=_client(ep)))


def anthropic(ep: EndpointHandle) -> Model:
    client = AsyncAnthropic(
        base_url=ep.anthropic_base_url, api_key=ep.api_key, http_client=ep.async_httpx2_client()
    )
    return AnthropicModel("claude-sonnet-5-5", provider=AnthropicProvider(anthropic_client=client))


MODELS: dict[str, Callable[[EndpointHandle], Model]] = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic,
}

Endpoint = Callable[..., EndpointHandle]


async def ask(agent: Any, question: str, *, streamed: bool, history: Any = None) -> tuple[str, Any]:
    """The agent's answer to ``question`` and the conversation so far, run plain or streamed."""
    if not streamed:
        result = await agent.run(question, message_history=history)
        return result.output, result.all_messages()
    async with agent.run_stream(question, message_history=history) as streamed_result:
        return await streamed_result.get_output(), streamed_result.all_messages()


# Async tests, on asyncio: ``run_sync`` leaves the event loop it makes open as the thread's
# loop, and a later test's loop replacing it warns that it was never closed.
pytestmark = pytest.mark.anyio

MODES = pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
ON_EVERY_MODEL = pytest.mark.parametrize("model", MODELS)


@MODES
@ON_EVERY_MODEL
async def test_weather(agentrig_endpoint: Endpoint, model: str, streamed: bool) -> None:
    ep = agentrig_endpoint(SCENARIOS / "weather.scenario.yaml")
    agent = build_agent(MODELS[model](ep))

    answer, _ = await ask(agent, "What is the weather in Paris?", streamed=streamed)

    assert answer == "It is sunny in Paris."


@MODES
@ON_EVERY_MODEL
async def test_parallel_tool_calls(agentrig_endpoint: Endpoint, model: str, streamed: bool) -> None:
    ep = agentrig_endpoint(SCENARIOS / "parallel_weather.scenario.yaml")
    agent = build_agent(MODELS[model](ep))

    answer, _ = await ask(agent, "What is the weather in Paris and in Oslo?", streamed=streamed)

    assert answer == "It is sunny in Paris and in Oslo."


@MODES
@ON_EVERY_MODEL
async def test_two_turns(agentrig_endpoint: Endpoint, model: str, streamed: bool) -> None:
    ep = agentrig_endpoint(SCENARIOS / "two_turns.scenario.yaml")
    agent = build_agent(MODELS[model](ep))

    _, history = await ask(agent, "What is the weather in Paris?", streamed=streamed)
    answer, _ = await ask(agent, "And in Oslo?", streamed=streamed, history=history)

    assert answer == "It is sunny in Oslo too."


@ON_EVERY_MODEL
async def test_rate_limited_then_retried(agentrig_endpoint: Endpoint, model: str) -> None:
    ep = agentrig_endpoint(RATE_LIMITED)
    agent = build_agent(MODELS[model](ep))  # the SDK client retries the 429 itself

    answer, _ = await ask(agent, "What is the weather in Paris?", streamed=False)

    assert answer == "It is sunny in Paris."


@ON_EVERY_MODEL
async def test_an_agent_without_the_tool_is_reported(model: str) -> None:
    with EndpointHandle(SCENARIOS / "weather.scenario.yaml") as ep:
        agent = build_agent(MODELS[model](ep), tools=[])
        await ask(agent, "What is the weather in Paris?", streamed=False)
        result = ep.result()

    assert not result.passed
    offered = [f for f in result.failures if f.invariant == "tools_offered"]
    assert [f.message for f in offered] == [
        "request 1: tools_offered: the script calls get_weather, which the request does not offer"
    ]


@MODES
@ON_EVERY_MODEL
async def test_a_reasoning_model(agentrig_endpoint: Endpoint, model: str, streamed: bool) -> None:
    ep = agentrig_endpoint(SCENARIOS / "reasoning_weather.scenario.yaml")
    # A reasoning model by name: pydantic-ai hands the Responses API its reasoning back as
    # reasoning items only for those (for others it writes the thinking into the text).
    reasoning_model = (
        OpenAIResponsesModel("gpt-5", provider=OpenAIProvider(openai_client=_client(ep)))
        if model == "openai-responses"
        else MODELS[model](ep)
    )
    agent = build_agent(reasoning_model)

    answer, messages = await ask(agent, "What is the weather in Paris?", streamed=streamed)

    assert answer == "It is sunny in Paris."
    thinking = [
        part.content
        for message in messages
        for part in getattr(message, "parts", ())
        if type(part).__name__ == "ThinkingPart"
    ]
    assert thinking[0].startswith("The user asks for the weather in Paris")


@MODES
@ON_EVERY_MODEL
async def test_a_reasoning_model_that_shows_no_reasoning_text(
    agentrig_endpoint: Endpoint, model: str, streamed: bool
) -> None:
    # A redacted_thinking block (Anthropic), a reasoning item with an empty summary (Responses):
    # the endpoint's checks when the test ends include reasoning_sent_back.
    ep = agentrig_endpoint(SCENARIOS / "redacted_reasoning_weather.scenario.yaml")
    reasoning_model = (
        OpenAIResponsesModel("gpt-5", provider=OpenAIProvider(openai_client=_client(ep)))
        if model == "openai-responses"
        else MODELS[model](ep)
    )
    agent = build_agent(reasoning_model)

    answer, _ = await ask(agent, "What is the weather in Paris?", streamed=streamed)

    assert answer == "It is sunny in Paris."
    # pydantic-ai keeps the redacted_thinking block / the reasoning item with its encrypted
    # content and sends it back: the request after the call passes reasoning_sent_back
    checks = {o.name: (o.checks, o.failures) for o in ep.result().invariants}
    assert checks["reasoning_sent_back"] == (2, 0)


@ON_EVERY_MODEL
async def test_an_agent_whose_tool_drifted_from_the_scenario_is_reported(model: str) -> None:
    def get_weather(town: str) -> str:
        """The current weather in a town."""
        return f"It is sunny in {town}."

    with EndpointHandle(SCENARIOS / "weather.scenario.yaml") as ep:
        agent = build_agent(MODELS[model](ep), tools=[get_weather])
        await ask(agent, "What is the weather in Paris?", streamed=False)
        result = ep.result()

    assert not result.passed
    drifted = [f for f in result.failures if f.invariant == "tools_as_declared"]
    assert drifted, [f.message for f in result.failures]
    assert drifted[0].message == (
        "requests 1 and 2: tools_as_declared: the agent's get_weather differs from agent.tools: "
        "parameter 'city' is not a parameter of the real tool; "
        "the real tool requires parameter 'town', not declared in params"
    )
    assert drifted[0].location == f"{SCENARIOS / 'weather.scenario.yaml'}:11"


@ON_EVERY_MODEL
async def test_an_agent_whose_tool_now_returns_something_else_is_reported(model: str) -> None:
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return f"It is raining in {city}."

    with EndpointHandle(SCENARIOS / "weather.scenario.yaml") as ep:
        agent = build_agent(MODELS[model](ep), tools=[get_weather])
        await ask(agent, "What is the weather in Paris?", streamed=False)
        result = ep.result()

    [drifted] = [f for f in result.failures if f.invariant == "tool_results_as_scripted"]
    assert drifted.message == (
        "request 2: tool_results_as_scripted: the agent's get_weather returned "
        "'It is raining in Paris.', not 'It is sunny in Paris.' "
        "(agent.tools.get_weather.replies[0])"
    )
    assert drifted.location == f"{SCENARIOS / 'weather.scenario.yaml'}:14"


async def test_two_turns_on_a_stored_responses_conversation(agentrig_endpoint: Endpoint) -> None:
    ep = agentrig_endpoint(SCENARIOS / "two_turns.scenario.yaml")
    settings = OpenAIResponsesModelSettings(openai_previous_response_id="auto")
    agent = build_agent(openai_responses(ep), model_settings=settings)

    _, history = await ask(agent, "What is the weather in Paris?", streamed=False)
    answer, _ = await ask(agent, "And in Oslo?", streamed=False, history=history)

    assert answer == "It is sunny in Oslo too."


@pytest.mark.parametrize("model", ["openai:gpt-4.1", "anthropic:claude-sonnet-5-5"])
async def test_an_agent_that_makes_its_own_client(
    agentrig_endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-placeholder")
    ep = agentrig_endpoint(SCENARIOS / "weather.scenario.yaml")

    with ep.intercept():  # the providers' own hosts are answered by the endpoint
        answer, _ = await ask(build_agent(model), "What is the weather in Paris?", streamed=False)

    assert answer == "It is sunny in Paris."
