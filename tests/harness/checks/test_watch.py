"""``watch`` and ``run_checked``: one execution of a scenario agent, checked state by state."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from agentrig import AgentState, runtime_context
from agentrig.fakes import FakeClock, ScriptedLLM, call, calls, reply
from agentrig.harness.checks.invariant import select_invariants
from agentrig.harness.checks.watch import is_terminal, run_checked, watch
from agentrig.harness.property.play import build_spec_agent
from agentrig.harness.property.strategies import DEFAULT_TOOL_SPECS
from agentrig.harness.scenarios.model import AgentSpec, BudgetSpec


def _started(script: list, **spec: Any) -> tuple:
    agent = build_spec_agent(AgentSpec(tools=DEFAULT_TOOL_SPECS, **spec))
    agent.script.current = ScriptedLLM(script, clock=agent.clock)
    checker = watch(agent, select_invariants())
    with runtime_context(clock=agent.clock, ids=agent.ids):
        state = AgentState().with_user_message("hi")
    return agent, checker, state


def test_runs_an_execution_to_its_end_checking_every_state() -> None:
    agent, checker, state = _started([call("lookup", query="x"), reply("found")])
    run = run_checked(agent.loop, checker, 1, state)
    assert run.error is None
    assert len(run.states) == 2
    assert is_terminal(run.states[-1])
    assert not is_terminal(run.states[0])
    assert checker.violations == []
    assert checker.checks["clean_messages"] == 2  # every yielded state
    assert checker.events  # the checker hears the agent's events until close()
    agent.close()
    assert agent.detach == []


def test_stops_at_the_limit_and_leaves_the_execution_open() -> None:
    agent, checker, state = _started([call("lookup", query="x"), reply("found")])
    run = run_checked(agent.loop, checker, 1, state, limit=1)
    assert len(run.states) == 1
    assert not is_terminal(run.states[0])


def test_an_error_of_the_loop_is_returned_with_the_states_before_it() -> None:
    agent, checker, state = _started([reply("done")])

    def broken(event: object) -> None:
        raise RuntimeError("listener broke")

    agent.loop.events.wiretap(broken)
    run = run_checked(agent.loop, checker, 1, state)
    assert run.states == []
    assert run.error is not None
    assert "listener broke" in str(run.error)


def test_each_step_is_compared_with_what_was_foreseen_when_the_loop_waited_before_it() -> None:
    # The step's latency takes the clock to the deadline: asked afterwards, the guard would
    # stop the run before the step, and next_request would say it sends nothing.
    deadline = FakeClock().now() + timedelta(seconds=0.5)
    agent, checker, state = _started(
        [calls(("lookup", {"query": "x"}), latency=0.25), reply("found", latency=0.25)],
        budget=BudgetSpec(deadline=deadline),
    )
    run = run_checked(agent.loop, checker, 1, state)
    assert agent.clock.now() == deadline
    assert agent.loop.next_request(state) is None  # too late now
    assert [len(step.input_messages) for step in run.states[-1].steps()] == [1, 3]
    assert checker.violations == []
