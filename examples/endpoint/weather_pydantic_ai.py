"""A weather agent on pydantic-ai, as an application would write it: the model is passed in,
so a test can point it at the scenario endpoint (see tests/examples/endpoint/)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

SYSTEM_PROMPT = "You answer weather questions."


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"It is sunny in {city}."


def build_agent(
    model: Model | str,
    tools: Sequence[Callable[..., Any]] = (get_weather,),
    model_settings: ModelSettings | None = None,
) -> Agent[None, str]:
    """The weather agent on ``model`` (a model, or a name such as ``"openai:gpt-4.1"``)."""
    return Agent(
        model, system_prompt=SYSTEM_PROMPT, tools=list(tools), model_settings=model_settings
    )
