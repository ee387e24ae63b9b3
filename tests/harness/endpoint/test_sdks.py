"""The official SDKs (sync and async; Chat, Responses, Messages and Gemini; streamed and not) and
agentrig's own providers run one scenario unchanged against the endpoint, in-process and live."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentrig as ar
from agentrig.harness.endpoint.handle import EndpointHandle

from .sdk_agents import (
    SYSTEM,
    agentrig_provider,
    anthropic_agent,
    anthropic_client,
    async_openai_client,
    chat_agent,
    gemini_agent,
    gemini_client,
    get_weather,
    openai_client,
    responses_agent,
    weather_agent,
)

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

SCENARIO = """\
name: weather
agent:
  system_prompt: You answer weather questions.
turns:
  - user: Weather in Paris?
    model:
      - call: get_weather(city=Paris)
        usage: {input: 30, output: 5}
      - say: It is sunny in Paris today.
        usage: {input: 50, output: 7}
    expect:
      final_response: It is sunny in Paris today.
      tool_calls: {calls: [get_weather(city=Paris)]}
      model_calls: 2
      tool_results: [{tool: get_weather, content: sunny in Paris}]
"""


@pytest.fixture
def weather(write_scenario: Callable[[str], Path]) -> Path:
    return write_scenario(SCENARIO)


def _chat_messages() -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Weather in Paris?"}]


@pytest.mark.parametrize("live", [False, True], ids=["in-process", "live"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
class TestOpenAISync:
    def test_chat_completions(self, weather: Path, live: bool, stream: bool) -> None:
        with EndpointHandle(weather, live=live) as handle, openai_client(handle) as client:
            text = chat_agent(client, _chat_messages(), stream=stream)
            assert text == "It is sunny in Paris today."
            handle.check()

    def test_responses(self, weather: Path, live: bool, stream: bool) -> None:
        with EndpointHandle(weather, live=live) as handle, openai_client(handle) as client:
            items: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
            assert responses_agent(client, items, stream=stream) == ("It is sunny in Paris today.")
            handle.check()

    def test_anthropic_messages(self, weather: Path, live: bool, stream: bool) -> None:
        with EndpointHandle(weather, live=live) as handle, anthropic_client(handle) as client:
            messages = [{"role": "user", "content": "Weather in Paris?"}]
            assert anthropic_agent(client, messages, stream=stream) == (
                "It is sunny in Paris today."
            )
            handle.check()

    def test_gemini_generate_content(self, weather: Path, live: bool, stream: bool) -> None:
        pytest.importorskip("google.genai")
        with EndpointHandle(weather, live=live) as handle:
            assert gemini_agent(gemini_client(handle), stream=stream) == (
                "It is sunny in Paris today."
            )
            handle.check()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_async_openai_chat(weather: Path, stream: bool) -> None:
    async def agent(client: Any) -> str:
        messages = _chat_messages()
        while True:
            if stream:
                text, calls = "", {}
                async for chunk in await client.chat.completions.create(
                    model="m", messages=messages, tools=_tools(), stream=True
                ):
                    for choice in chunk.choices:
                        text += choice.delta.content or ""
                        for delta in choice.delta.tool_calls or ():
                            entry = calls.setdefault(
                                delta.index, [delta.id, delta.function.name, ""]
                            )
                            entry[2] += delta.function.arguments or ""
                tool_calls = [
                    {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                    for i, n, a in calls.values()
                ]
            else:
                message = (
                    (
                        await client.chat.completions.create(
                            model="m", messages=messages, tools=_tools()
                        )
                    )
                    .choices[0]
                    .message
                )
                text = message.content or ""
                tool_calls = [c.model_dump() for c in message.tool_calls or ()]
            messages.append(
                {
                    "role": "assistant",
                    "content": text or None,
                    **({"tool_calls": tool_calls} if tool_calls else {}),
                }
            )
            if not tool_calls:
                return text
            for call in tool_calls:
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": get_weather("Paris")}
                )

    handle = EndpointHandle(weather)
    assert asyncio.run(agent(async_openai_client(handle))) == "It is sunny in Paris today."
    handle.check()


def test_async_anthropic_streamed(weather: Path) -> None:
    async def agent(client: Any) -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
        while True:
            async with client.messages.stream(
                model="c",
                max_tokens=100,
                system=SYSTEM,
                messages=messages,
                tools=[{"name": "get_weather", "input_schema": {"type": "object"}}],
            ) as events:
                message = await events.get_final_message()
            messages.append(
                {
                    "role": "assistant",
                    "content": [b.model_dump(exclude_none=True) for b in message.content],
                }
            )
            if message.stop_reason != "tool_use":
                return str(message.content[0].text)
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": b.id,
                            "content": get_weather(**b.input),
                        }
                        for b in message.content
                        if b.type == "tool_use"
                    ],
                }
            )

    handle = EndpointHandle(weather)
    client = anthropic.AsyncAnthropic(
        api_key=handle.api_key,
        base_url=handle.anthropic_base_url,
        http_client=handle.async_httpx2_client(),
        max_retries=0,
    )
    assert asyncio.run(agent(client)) == "It is sunny in Paris today."
    handle.check()


def _tools() -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]


@pytest.mark.parametrize("provider_name", ["openai", "responses", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_agentrigs_own_providers(weather: Path, provider_name: str, stream: bool) -> None:
    handle = EndpointHandle(weather)
    provider = agentrig_provider(provider_name, handle, stream=stream)
    agent = weather_agent(provider, max_steps=5, max_tokens=10_000)
    state = agent.execute(ar.AgentState().with_user_message("Weather in Paris?"))
    assert state.final_response().to_text() == "It is sunny in Paris today."
    assert state.usage().input_tokens == 80
    handle.check()
