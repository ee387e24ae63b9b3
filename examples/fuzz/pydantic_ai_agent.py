"""A weather agent on pydantic-ai, and a copy with a bug a misbehaving model reveals.

``agent`` catches the errors pydantic-ai documents for a model that misbehaves or cannot be
reached (``AgentRunError``; ``openai.APIError`` for a connection that failed) and says so.
``crash_on_unknown_city`` has a tool that raises on a city it does not know, instead of asking
the model to try again (``ModelRetry``): pydantic-ai lets the tool's error end the run.
"""

from __future__ import annotations

from typing import Any

import openai
from openai import AsyncOpenAI
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.exceptions import AgentRunError
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

SYSTEM_PROMPT = "You answer weather questions."
FORECASTS = {"Paris": "sunny", "Oslo": "snowing"}


def get_weather(city: str) -> str:
    """The current weather in a city."""
    if city not in FORECASTS:
        raise ModelRetry(f"no forecast for {city!r}; known cities: {', '.join(FORECASTS)}")
    return f"It is {FORECASTS[city]} in {city}."


def get_weather_unguarded(city: str) -> str:
    """The current weather in a city (raises ``KeyError`` for a city it does not know)."""
    return f"It is {FORECASTS[city]} in {city}."


async def _run(ep: Any, prompt: str, tool: Any) -> str:
    async with AsyncOpenAI(
        base_url=ep.openai_base_url,
        api_key=ep.api_key,
        http_client=ep.async_httpx2_client(),
        max_retries=2,
    ) as client:
        model = OpenAIChatModel("gpt-4.1", provider=OpenAIProvider(openai_client=client))
        weather = Agent(model, system_prompt=SYSTEM_PROMPT, tools=[tool])
        try:
            result = await weather.run(prompt)
        except (AgentRunError, openai.APIError) as error:
            return f"Sorry, I cannot answer now ({type(error).__name__})."
        return result.output


async def agent(ep: Any, prompt: str) -> str:
    """The weather agent: no known bug."""
    return await _run(ep, prompt, get_weather)


async def crash_on_unknown_city(ep: Any, prompt: str) -> str:
    """Its tool raises ``KeyError`` on a city it has no forecast for."""
    return await _run(ep, prompt, get_weather_unguarded)
