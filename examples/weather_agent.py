"""A complete agent built with ``AgentBuilder`` and driven by a scripted fake LLM.

Run it with ``python examples/weather_agent.py``. Swap ``ScriptedLLM`` for a real provider and
the rest stays the same.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

import agentrig as ar
from agentrig.fakes import FakeClock, ScriptedLLM, SeededIds, call, reply

FORECASTS = {"paris": "sunny, 21C", "oslo": "snow, -3C"}


@ar.tool
def get_weather(city: Annotated[str, Field(description="City name")]) -> str:
    """Current weather for a city."""
    forecast = FORECASTS.get(city.lower())
    if forecast is None:
        raise LookupError(f"no forecast for {city}")
    return forecast


def build_agent(llm: ar.InferenceProvider, clock: FakeClock, ids: SeededIds) -> ar.AgentLoop:
    """The weather agent: one tool, a system prompt, a budget, events on a bus."""
    return (
        ar.AgentBuilder.base()
        .with_tools([get_weather])
        .with_clock(clock)
        .with_ids(ids)
        .with_capability(ar.UseLlmConfig(llm))
        .with_capability(ar.UseContextConfig("You answer weather questions briefly."))
        .with_capability(ar.UseGuards(max_steps=6, max_tokens=4_000))
        .build()
    )


def main() -> ar.AgentState:
    """Run two turns and print what happened."""
    clock = FakeClock()
    llm = ScriptedLLM(
        [
            call("get_weather", city="Paris"),
            call("get_weather", city="Atlantis"),
            reply("Paris is sunny (21C); I have no forecast for Atlantis."),
            reply("You're welcome!"),
        ]
    )
    agent = build_agent(llm, clock, SeededIds(0))
    agent.events.subscribe(
        ar.events.ToolCallCompleted, lambda e: print(f"  tool {e.tool}: ok={e.success}")
    )

    state = agent.execute(agent.new_state("Weather in Paris and Atlantis?"))
    print(f"turn 1: {state.status()} after {state.step_count()} steps ({state.last_stop_reason()})")
    print(f"  answer: {state.final_response()}")

    state = agent.execute(agent.continue_with(state, "Thanks!"))
    print(f"turn 2: {state.status()}, answer: {state.final_response()}")
    print(f"conversation: {[m.role.value for m in state.messages()]}")
    llm.assert_complete()
    return state


if __name__ == "__main__":
    main()
