"""The bundled endpoint scenarios, run unchanged by a pydantic-ai agent on its OpenAI Chat,
OpenAI Responses, Anthropic and Google (Gemini) models, plain and streamed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from agentrig.drivers.network import shared_ssl_context
from agentrig.harness.endpoint.handle import EndpointHandle

if TYPE_CHECKING:
    from pydantic_ai.models import Model

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "scenarios" / "endpoint"  # also run on agentrig's runtime by `agentrig run`
RATE_LIMITED = ROOT / "examples" / "endpoint" / "scenarios" / "rate_limited.scenario.yaml"


@pytest.fixture(scope="module", autouse=True)
def _framework() -> None:
    """pydantic-ai (0.5 CPU s) imported by the first test here, not at collection in every
    worker: this module's tests run on one worker (their xdist group, below)."""
    pytest.importorskip("pydantic_ai", reason="needs the frameworks extra (pydantic-ai-slim)")


def build_agent(model: Model | str, **options: Any) -> Any:
    """The example's agent (``weather_pydantic_ai`` imports pydantic-ai when first called)."""
    from weather_pydantic_ai import build_agent

    return build_agent(model, **options)


def _client(ep: EndpointHandle) -> AsyncOpenAI:
    return AsyncOpenAI(
        base_url=ep.openai_base_url, api_key=ep.api_key, http_client=ep.async_httpx2_client()
    )


def openai_chat(ep: EndpointHandle) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel("gpt-4.1", provider=OpenAIProvider(openai_client=_client(ep)))


def openai_responses(ep: EndpointHandle) -> Model:
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIResponsesModel("gpt-4.1", provider=OpenAIProvider(openai_client=_client(ep)))


def anthropic(ep: EndpointHandle) -> Model:
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    client = AsyncAnthropic(
        base_url=ep.anthropic_base_url, api_key=ep.api_key, http_client=ep.async_httpx2_client()
    )
    return AnthropicModel("claude-sonnet-5-5", provider=AnthropicProvider(anthropic_client=client))


def google(ep: EndpointHandle) -> Model:
    from google import genai
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google import GoogleProvider

    # google-genai retries only when given retry options (with its own back-off: it does not
    # read Retry-After); a short one keeps the rate-limited test fast.
    retry = genai.types.HttpRetryOptions(attempts=3, initial_delay=0.01, jitter=0)
    # Given an SSL context (agentrig's shared one), google-genai does not load the
    # certificates twice for each client (about 40 ms CPU).
    ssl_context = shared_ssl_context()
    options = genai.types.HttpOptions(
        base_url=ep.gemini_base_url,
        httpx_async_client=ep.async_httpx2_client(),
        retry_options=retry,
        client_args={"verify": ssl_context},
        async_client_args={"ssl": ssl_context},
    )
    client = genai.Client(api_key=ep.api_key, http_options=options)
    return GoogleModel("gemini-2.5-flash", provider=GoogleProvider(client=client))


MODELS: dict[str, Callable[[EndpointHandle], Model]] = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic,
    "google": google,
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
# One xdist group with the adapter run of tests/harness/live/test_adapters.py: one worker
# imports the framework for both.
pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("pydantic-ai")]

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
    from pydantic_ai.models.google import GoogleModelSettings
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    ep = agentrig_endpoint(SCENARIOS / "reasoning_weather.scenario.yaml")
    # A reasoning model by name: pydantic-ai hands the Responses API its reasoning back as
    # reasoning items only for those (for others it writes the thinking into the text).
    reasoning_model = (
        OpenAIResponsesModel("gpt-5", provider=OpenAIProvider(openai_client=_client(ep)))
        if model == "openai-responses"
        else MODELS[model](ep)
    )
    # Gemini shows its thoughts only to a request that asks for them.
    settings = GoogleModelSettings(google_thinking_config={"include_thoughts": True})
    agent = build_agent(reasoning_model, model_settings=settings if model == "google" else None)

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
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

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
    from pydantic_ai.models.openai import OpenAIResponsesModelSettings

    ep = agentrig_endpoint(SCENARIOS / "two_turns.scenario.yaml")
    settings = OpenAIResponsesModelSettings(openai_previous_response_id="auto")
    agent = build_agent(openai_responses(ep), model_settings=settings)

    _, history = await ask(agent, "What is the weather in Paris?", streamed=False)
    answer, _ = await ask(agent, "And in Oslo?", streamed=False, history=history)

    assert answer == "It is sunny in Oslo too."


@pytest.mark.parametrize(
    "model", ["openai:gpt-4.1", "anthropic:claude-sonnet-5-5", "google:gemini-2.5-flash"]
)
async def test_an_agent_that_makes_its_own_client(
    agentrig_endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-placeholder")
    monkeypatch.setenv("GOOGLE_API_KEY", "placeholder")
    ep = agentrig_endpoint(SCENARIOS / "weather.scenario.yaml")

    with ep.intercept():  # the providers' own hosts are answered by the endpoint
        answer, _ = await ask(build_agent(model), "What is the weather in Paris?", streamed=False)

    assert answer == "It is sunny in Paris."


VALIDATED = """\
name: validated-weather
agent:
  # pydantic-ai adds its own notes to the system prompt when it retries: a rule, not the text
  system_prompt: {contains: You answer weather questions.}
turns:
  - user: What is the weather in Paris?
    model:
      - say: Paris.
      - say: It is sunny in Paris.
    expect:
      final_response: It is sunny in Paris.
      model_calls: 2
"""


def _validated_agent(model: Model) -> Any:
    from pydantic_ai import Agent, ModelRetry

    agent = Agent(model, system_prompt="You answer weather questions.")

    @agent.output_validator
    def about_the_weather(output: str) -> str:
        if "sunny" not in output:
            raise ModelRetry("Say what the weather is.")
        return output

    return agent


@ON_EVERY_MODEL
async def test_an_output_validator_retry_stays_in_its_turn(tmp_path: Path, model: str) -> None:
    # pydantic-ai sends the ModelRetry as a user message: a retry of the turn, not a second turn
    path = tmp_path / "validated.scenario.yaml"
    path.write_text(VALIDATED)
    with EndpointHandle(path) as ep:
        answer, _ = await ask(
            _validated_agent(MODELS[model](ep)), "What is the weather in Paris?", streamed=False
        )
        result = ep.result()

    assert answer == "It is sunny in Paris."
    assert result.passed, [f.message for f in result.failures]


async def test_a_turn_that_allows_no_retry_refuses_the_frameworks(tmp_path: Path) -> None:
    path = tmp_path / "validated.scenario.yaml"
    path.write_text(VALIDATED.replace("    model:\n", "    retries: false\n    model:\n", 1))
    with EndpointHandle(path) as ep:
        with pytest.raises(Exception, match="request 2 carries 2 user messages"):
            await ask(
                _validated_agent(openai_chat(ep)), "What is the weather in Paris?", streamed=False
            )
        result = ep.result()

    assert not result.passed


async def test_a_text_answer_to_a_structured_output_request_is_flagged(tmp_path: Path) -> None:
    # pydantic-ai asks for its output tool (tool_choice "required"): a real API never answers
    # such a request in text, and a scenario scripting one tests an answer the agent never meets
    from pydantic import BaseModel
    from pydantic_ai import Agent

    class Weather(BaseModel):
        city: str

    path = tmp_path / "structured.scenario.yaml"
    path.write_text(
        "name: structured\nturns:\n  - user: Weather in Paris?\n"
        "    model:\n      - say: It is sunny.\n      - call: final_result(city=Paris)\n"
    )
    with EndpointHandle(path) as ep:
        agent = Agent(openai_chat(ep), output_type=Weather)
        output, _ = await ask(agent, "Weather in Paris?", streamed=False)
        allowed = [f for f in ep.result().failures if f.invariant == "answer_allowed"]

    assert output == Weather(city="Paris")
    assert [f.message for f in allowed] == [
        'request 1: answer_allowed: the request sends tool_choice: "required", but the scripted '
        "reply calls no tool: a real API never answers so; change the reply, or check why the "
        "agent asks for that"
    ]
    assert allowed[0].location == f"{path}:5"
