"""``play``: scripts run against the agent a scenario's ``agent:`` section describes."""

from __future__ import annotations

import pytest

from agentrig import AgentBuilder, ExecutionStatus, HookContext, HookTrigger, InvalidInputError
from agentrig.fakes import call, reply
from agentrig.harness.property.play import play
from agentrig.harness.property.strategies import DEFAULT_TOOL_SPECS
from agentrig.harness.scenarios.model import AgentSpec


class TestPlay:
    def test_plays_each_turn_as_one_execution(self) -> None:
        playback = play(
            agent=AgentSpec(tools=DEFAULT_TOOL_SPECS),
            turns=[("hi", [call("lookup", query="x"), reply("found")]), ("bye", [reply("bye")])],
        )
        assert playback.violations == ()
        assert [len(e) for e in playback.executions] == [2, 1]
        assert playback.final.status() is ExecutionStatus.COMPLETED
        assert [m.content for m in playback.final.messages()] == ["hi", "found", "bye", "bye"]
        assert playback.all_states()[-1] is playback.final

    def test_reports_violations_of_a_broken_agent(self) -> None:
        def leak(context: HookContext) -> HookContext:
            state = context.state
            trace = state.store().messages_of("execution_buffer")
            return context.with_state(
                state.with_message_store(state.store().section("messages").append(trace))
            )

        playback = play(
            agent=AgentSpec(tools=DEFAULT_TOOL_SPECS),
            turns=[("hi", [call("lookup", query="x"), reply("found")])],
            builder=AgentBuilder.base().add_hook(leak, HookTrigger.AFTER_STEP),
            invariants=["clean_messages"],
        )
        assert {v.invariant for v in playback.violations} == {"clean_messages"}

    def test_refuses_bad_arguments(self) -> None:
        with pytest.raises(InvalidInputError, match="expected an AgentSpec"):
            play(agent={}, turns=[("hi", [reply("x")])])  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="at least one"):
            play(agent=AgentSpec(), turns=[])
