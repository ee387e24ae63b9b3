"""A weather agent on the OpenAI Agents SDK (Responses API), and a copy with a bug a
misbehaving model reveals.

``agent`` catches the errors the SDK documents for a model that misbehaves
(``AgentsException``: arguments that are not JSON, too many turns) or cannot be reached
(``openai.APIError``), and says so. ``crash_on_blank_answer`` keeps the first line of the
answer as a one-line summary, and fails when the model answers no text, or whitespace.
"""

from __future__ import annotations

import logging
from typing import Any

import openai
from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from agents.exceptions import AgentsException
from openai import AsyncOpenAI

set_tracing_disabled(True)
# The SDK logs every failed model call at ERROR level; the agent reports them itself.
logging.getLogger("openai.agents").setLevel(logging.CRITICAL)

INSTRUCTIONS = "You answer weather questions."


@function_tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"It is sunny in {city}."


async def _run(ep: Any, prompt: str) -> str:
    async with AsyncOpenAI(
        base_url=ep.openai_base_url,
        api_key=ep.api_key,
        http_client=ep.async_httpx2_client(),
        max_retries=2,
    ) as client:
        weather = Agent(
            name="weather",
            instructions=INSTRUCTIONS,
            model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client),
            tools=[get_weather],
        )
        try:
            result = await Runner.run(weather, prompt, max_turns=8)
        except (AgentsException, openai.APIError) as error:
            return f"Sorry, I cannot answer now ({type(error).__name__})."
        return str(result.final_output)


async def agent(ep: Any, prompt: str) -> str:
    """The weather agent: no known bug."""
    return await _run(ep, prompt)


async def crash_on_blank_answer(ep: Any, prompt: str) -> str:
    """Answers with the first line of the model's answer: ``IndexError`` on a blank one."""
    answer = await _run(ep, prompt)
    return answer.split()[0]
