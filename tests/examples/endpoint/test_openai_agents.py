"""The bundled endpoint scenarios, run unchanged by an OpenAI Agents SDK agent on its Responses
and Chat Completions models, plain and streamed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from openai import AsyncOpenAI

from agentrig.harness.endpoint.handle import EndpointHandle

if TYPE_CHECKING:
    from agents import Agent, Model

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "scenarios" / "endpoint"  # also run on agentrig's runtime by `agentrig run`
RATE_LIMITED = ROOT / "examples" / "endpoint" / "scenarios" / "rate_limited.scenario.yaml"


@pytest.fixture(scope="module", autouse=True)
def _sdk() -> None:
    """The SDK (1.2 CPU s) imported by the first test here, not at collection in every worker:
    this module's tests run on one worker (their xdist group, below)."""
    agents = pytest.importorskip("agents", reason="needs the frameworks extra (openai-agents)")
    agents.set_tracing_disabled(True)  # no trace export to the OpenAI platform from tests


def build_agent(model: Model | str, **options: Any) -> Agent[None]:
    """The example's agent (``weather_openai_agents`` imports the SDK: imported here when a
    test first builds one)."""
    from weather_openai_agents import build_agent

    return build_agent(model, **options)


def client(ep: EndpointHandle) -> AsyncOpenAI:
    return AsyncOpenAI(
        base_url=ep.openai_base_url, api_key=ep.api_key, http_client=ep.async_httpx2_client()
    )


def responses(ep: EndpointHandle) -> Model:
    from agents import OpenAIResponsesModel

    return OpenAIResponsesModel(model="gpt-4.1", openai_client=client(ep))


def chat_completions(ep: EndpointHandle) -> Model:
    from agents import OpenAIChatCompletionsModel

    return OpenAIChatCompletionsModel(model="gpt-4.1", openai_client=client(ep))


MODELS: dict[str, Callable[[EndpointHandle], Model]] = {
    "responses": responses,
    "chat-completions": chat_completions,
}

Endpoint = Callable[..., EndpointHandle]


async def ask(agent: Agent[None], conversation: str | list[Any], *, streamed: bool) -> Any:
    """The agent's run on ``conversation``, plain or streamed."""
    from agents import Runner

    if not streamed:
        return await Runner.run(agent, conversation)
    result = Runner.run_streamed(agent, conversation)
    async for _ in result.stream_events():
        pass
    return result


# Async tests, on asyncio: ``Runner.run_sync`` shuts down the async generators of the thread's
# loop after each run and keeps the loop, so a later run on that thread warns about httpx's.
# One xdist group with the adapter run of tests/harness/live/test_adapters.py: one worker
# imports the framework for both.
pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("openai-agents")]

MODES = pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
ON_EVERY_MODEL = pytest.mark.parametrize("model", MODELS)


@MODES
@ON_EVERY_MODEL
async def test_weather(agentrig_endpoint: Endpoint, model: str, streamed: bool) -> None:
    ep = agentrig_endpoint(SCENARIOS / "weather.scenario.yaml")
    agent = build_agent(MODELS[model](ep))

    result = await ask(agent, "What is the weather in Paris?", streamed=streamed)

    assert result.final_output == "It is sunny in Paris."


@MODES
@ON_EVERY_MODEL
async def test_parallel_tool_calls(agentrig_endpoint: Endpoint, model: str, streamed: bool) -> None:
    ep = agentrig_endpoint(SCENARIOS / "parallel_weather.scenario.yaml")
    agent = build_agent(MODELS[model](ep))

    result = await ask(agent, "What is the weather in Paris and in Oslo?", streamed=streamed)

    assert result.final_output == "It is sunny in Paris and in Oslo."


@MODES
@ON_EVERY_MODEL
async def test_two_turns(agentrig_endpoint: Endpoint, model: str, streamed: bool) -> None:
    ep = agentrig_endpoint(SCENARIOS / "two_turns.scenario.yaml")
    agent = build_agent(MODELS[model](ep))

    first = await ask(agent, "What is the weather in Paris?", streamed=streamed)
    follow_up = [*first.to_input_list(), {"role": "user", "content": "And in Oslo?"}]
    result = await ask(agent, follow_up, streamed=streamed)

    assert result.final_output == "It is sunny in Oslo too."


@ON_EVERY_MODEL
async def test_rate_limited_then_retried(agentrig_endpoint: Endpoint, model: str) -> None:
    ep = agentrig_endpoint(RATE_LIMITED)
    agent = build_agent(MODELS[model](ep))  # the SDK client retries the 429 itself

    result = await ask(agent, "What is the weather in Paris?", streamed=False)

    assert result.final_output == "It is sunny in Paris."


@ON_EVERY_MODEL
async def test_an_agent_without_the_tool_is_reported(model: str) -> None:
    from agents import ModelBehaviorError

    with EndpointHandle(SCENARIOS / "weather.scenario.yaml") as ep:
        agent = build_agent(MODELS[model](ep), tools=[])
        with pytest.raises(ModelBehaviorError, match="Tool get_weather not found"):
            await ask(agent, "What is the weather in Paris?", streamed=False)
        result = ep.result()

    assert not result.passed
    offered = [f for f in result.failures if f.invariant == "tools_offered"]
    assert [f.message for f in offered] == [
        "request 1: tools_offered: the script calls get_weather, which the request does not offer"
    ]


async def test_two_turns_on_a_stored_responses_conversation(agentrig_endpoint: Endpoint) -> None:
    from agents import Runner

    ep = agentrig_endpoint(SCENARIOS / "two_turns.scenario.yaml")
    agent = build_agent(responses(ep))

    first = await Runner.run(agent, "What is the weather in Paris?", auto_previous_response_id=True)
    result = await Runner.run(
        agent,
        "And in Oslo?",
        previous_response_id=first.last_response_id,
        auto_previous_response_id=True,
    )

    assert result.final_output == "It is sunny in Oslo too."


async def test_an_agent_that_makes_its_own_client(
    agentrig_endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents import Runner

    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder")
    ep = agentrig_endpoint(SCENARIOS / "weather.scenario.yaml")

    with ep.intercept():  # api.openai.com is answered by the endpoint
        result = await Runner.run(build_agent("gpt-4.1"), "What is the weather in Paris?")

    assert result.final_output == "It is sunny in Paris."


@pytest.mark.parametrize("scenario", ["reasoning_weather", "redacted_reasoning_weather"])
@MODES
@ON_EVERY_MODEL
async def test_a_reasoning_model(
    agentrig_endpoint: Endpoint, model: str, streamed: bool, scenario: str
) -> None:
    # redacted_reasoning_weather: reasoning without text (a reasoning item with an empty summary)
    from agents import ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel

    ep = agentrig_endpoint(SCENARIOS / f"{scenario}.scenario.yaml")
    reasoning_model = (
        OpenAIResponsesModel(model="gpt-5", openai_client=client(ep))
        if model == "responses"
        else OpenAIChatCompletionsModel(model="gpt-5", openai_client=client(ep))
    )
    agent = build_agent(reasoning_model).clone(
        model_settings=ModelSettings(store=False, response_include=["reasoning.encrypted_content"])
        if model == "responses"
        else ModelSettings()
    )

    result = await ask(agent, "What is the weather in Paris?", streamed=streamed)

    assert result.final_output == "It is sunny in Paris."


HANDOFF = """\
name: refund-handoff
agent:
  tools:
    transfer_to_refunds: {replies: [{return: {assistant: Refunds}}]}
    refund_order:
      description: Refund an order.
      params: {order_id: string}
      replies: [{return: refunded 42}]
  agents:   # a triage agent hands off to a refunds agent: each has its prompt and tools
    triage:
      system_prompt: You triage customer requests.
      tools: [transfer_to_refunds]
    refunds:
      system_prompt: {contains: You handle refunds.}
      tools: [refund_order]
turns:
  - user: Refund order 42
    model:
      - call: transfer_to_refunds()
      - call: refund_order(order_id="42")
      - say: Order 42 is refunded.
    expect:
      final_response: Order 42 is refunded.
      model_calls: 3
"""


def _handoff(model: Model, *tools: Any) -> Agent[None]:
    from agents import Agent, function_tool

    @function_tool
    def refund_order(order_id: str) -> str:
        """Refund an order."""
        return f"refunded {order_id}"

    refunds = Agent(
        name="Refunds",
        instructions="You handle refunds.",
        tools=[refund_order, *tools],
        model=model,
    )
    return Agent(
        name="Triage",
        instructions="You triage customer requests.",
        handoffs=[refunds],
        model=model,
    )


@pytest.mark.parametrize("model", MODELS)
async def test_a_handoff_is_held_to_each_agents_prompt_and_tools(
    tmp_path: Path, model: str
) -> None:
    from agents import Runner

    path = tmp_path / "handoff.scenario.yaml"
    path.write_text(HANDOFF)
    with EndpointHandle(path) as ep:
        result = await Runner.run(_handoff(MODELS[model](ep)), "Refund order 42")
        checked = ep.check()

    assert result.final_output == "Order 42 is refunded."
    assert {o.name: o.failures for o in checked.invariants}["tools_as_declared"] == 0


async def test_a_tool_one_agent_gained_fails_at_that_agents_tools(tmp_path: Path) -> None:
    from agents import Runner, function_tool

    @function_tool
    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        return f"cancelled {order_id}"

    path = tmp_path / "handoff.scenario.yaml"
    path.write_text(HANDOFF)
    with EndpointHandle(path) as ep:
        await Runner.run(_handoff(responses(ep), cancel_order), "Refund order 42")
        failures = ep.result().failures

    drifted = [f for f in failures if f.invariant == "tools_as_declared"]
    # said once, naming both requests of the refunds agent
    assert [f.message for f in drifted] == [
        "requests 2 and 3: tools_as_declared: the request offers cancel_order, which "
        "agent.agents.refunds.tools does not declare: the scenario describes another agent "
        "than the one under test; declare the tool (its params, and its description to check "
        "that too)"
    ]
    assert drifted[0].location == f"{path}:15"  # the refunds agent's tools
