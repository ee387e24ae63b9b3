"""A weather agent on the OpenAI Agents SDK, as an application would write it: the model is
passed in, so a test can point it at the scenario endpoint (see tests/examples/endpoint/)."""

from __future__ import annotations

from collections.abc import Sequence

from agents import Agent, FunctionTool, Model, function_tool

INSTRUCTIONS = "You answer weather questions."


@function_tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"It is sunny in {city}."


def build_agent(model: Model | str, tools: Sequence[FunctionTool] = (get_weather,)) -> Agent[None]:
    """The weather agent on ``model`` (a model, or a model name for the default client)."""
    return Agent(name="weather", instructions=INSTRUCTIONS, model=model, tools=list(tools))
