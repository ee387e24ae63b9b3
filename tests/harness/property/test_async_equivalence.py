"""Property: on generated scripts, the async path ends in the same states as the sync path,
byte for byte (serialized), turn after turn."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from agentrig import AgentState, TraceMode, runtime_context
from agentrig.fakes import ScriptedLLM, Turn
from agentrig.harness.property import strategies as ars
from agentrig.harness.property.profiles import agentrig_settings
from agentrig.harness.scenarios.agent_factory import build_agent
from agentrig.harness.scenarios.model import AgentSpec, Scenario, ScenarioTurn
from agentrig.harness.scenarios.writer import budget_spec

Script = Sequence[tuple[str, Sequence[Turn]]]


def final_states(agent: AgentSpec, turns: Script, *, use_async: bool) -> list[str]:
    """Each turn's final state, serialized, on a fresh agent built as the scenario runner builds it."""
    built = build_agent(Scenario(name="equivalence", agent=agent, turns=(ScenarioTurn(user=""),)))
    with runtime_context(clock=built.clock, ids=built.ids):
        state = AgentState()
    finals = []
    for number, (user, script) in enumerate(turns, start=1):
        built.script.current = ScriptedLLM(script, clock=built.clock, name=f"turn {number}")
        with runtime_context(clock=built.clock, ids=built.ids):
            state = state.with_user_message(user)
        run = built.loop.aexecute if use_async else None
        state = asyncio.run(run(state)) if run is not None else built.loop.execute(state)
        finals.append(state.to_json())
    built.close()
    return finals


@st.composite
def runs(draw: st.DrawFn) -> tuple[AgentSpec, Script]:
    budget = draw(ars.budgets(max_steps=4, max_tokens=900, max_cost=0.6))
    script = ars.scripts(max_steps=4, max_calls=3, max_latency=2.0, unknown_tools=True)
    turns = draw(st.lists(st.tuples(ars.texts(), script), min_size=1, max_size=2))
    agent = AgentSpec(
        trace_mode=draw(st.sampled_from(TraceMode)).value,
        budget=budget_spec(budget),
        tools=ars.DEFAULT_TOOL_SPECS,
    )
    return agent, turns


@agentrig_settings(max_examples=40)
@given(run=runs())
def test_the_async_path_ends_in_the_same_states_as_the_sync_path(
    run: tuple[AgentSpec, Script],
) -> None:
    agent, turns = run
    assert final_states(agent, turns, use_async=True) == final_states(agent, turns, use_async=False)
