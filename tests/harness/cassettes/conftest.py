"""A weather agent with real ``@tool`` tools, driven by any provider, for record/replay tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import agentrig as ar
from agentrig.fakes import FunctionLLM, Turn, call, reply


@ar.tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    if city == "Oslo":
        raise LookupError("service unavailable")
    return f"sunny in {city}"


@ar.tool
def convert_units(celsius: int, unit: str = "F") -> str:
    """Convert a temperature."""
    return f"{celsius * 9 // 5 + 32}{unit}"


def weather_brain(request: ar.InferenceRequest) -> Turn | str:
    """The model: looks up Paris, then Oslo (which fails), then answers; thanks get a reply."""
    users = [m.content for m in request.messages if m.role is ar.Role.USER]
    if "Thanks" in users[-1]:
        return reply("You're welcome!", usage=ar.Usage(input_tokens=30, output_tokens=3))
    results = [m for m in request.messages if m.role is ar.Role.TOOL]
    if len(results) == 0:
        return call("get_weather", city="Paris")
    if len(results) == 1:
        return call("get_weather", city="Oslo")
    return reply(
        "Paris is sunny.\nOslo's service is down.",
        usage=ar.Usage(input_tokens=40, output_tokens=8, cost=0.002),
    )


Build = Callable[[ar.InferenceProvider], ar.AgentLoop]


@pytest.fixture
def build() -> Build:
    """``build(provider)``: the weather agent asking ``provider``."""

    def make(provider: ar.InferenceProvider, max_retries: int = 1) -> ar.AgentLoop:
        return (
            ar.AgentBuilder.base()
            .with_tools([get_weather, convert_units])
            .with_capability(ar.UseLlmConfig(provider, max_retries=max_retries))
            .with_capability(ar.UseContextConfig("You answer weather questions.\nBe brief."))
            .build()
        )

    return make


@pytest.fixture
def brain() -> FunctionLLM:
    """A fresh ``FunctionLLM`` playing :func:`weather_brain`."""
    return FunctionLLM(weather_brain)


def ask_twice(loop: ar.AgentLoop) -> ar.AgentState:
    """Ask about the weather, then say thanks."""
    state = loop.execute(ar.AgentState().with_user_message("Weather in Paris and Oslo?"))
    return loop.execute(state.with_user_message("Thanks!"))


@pytest.fixture
def two_turns() -> Callable[[ar.AgentLoop], ar.AgentState]:
    """``two_turns(loop)``: ask about the weather, then say thanks; the final state."""
    return ask_twice
