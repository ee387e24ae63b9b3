"""Play scripts against the agent a scenario's ``agent:`` section describes.

:func:`play` runs user turns, each with the model's script for it, exactly as the scenario runner
builds the agent, and returns every state the loop yielded with the invariant violations found.
The property strategies (``agent_states()``) and the state machine use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentrig import AgentBuilder, AgentState, runtime_context
from agentrig.errors import InvalidInputError
from agentrig.fakes import ScriptedLLM, Turn
from agentrig.harness.checks.invariant import Violation, select_invariants
from agentrig.harness.checks.watch import run_checked, watch
from agentrig.harness.scenarios.agent_factory import ScenarioAgent, build_agent
from agentrig.harness.scenarios.model import AgentSpec, Scenario, ScenarioTurn

__all__ = ["Playback", "build_spec_agent", "play"]


def build_spec_agent(agent: AgentSpec, *, builder: AgentBuilder | None = None) -> ScenarioAgent:
    """The agent a scenario's ``agent:`` section describes, built as the scenario runner builds
    it (on ``builder`` when given), with no turns of its own."""
    stub = Scenario(name="agentrig-play", agent=agent, turns=(ScenarioTurn(user=""),))
    return build_agent(stub, base=builder)


@dataclass(frozen=True)
class Playback:
    """What :func:`play` saw: the states each execution yielded, and the invariant violations."""

    executions: tuple[tuple[AgentState, ...], ...]
    violations: tuple[Violation, ...]

    @property
    def final(self) -> AgentState:
        """The last state of the last execution."""
        return self.executions[-1][-1]

    def all_states(self) -> tuple[AgentState, ...]:
        """Every yielded state, in order."""
        return tuple(state for execution in self.executions for state in execution)


def play(
    *,
    agent: AgentSpec,
    turns: Sequence[tuple[str, Sequence[Turn]]],
    builder: AgentBuilder | None = None,
    invariants: Sequence[str] | None = None,
) -> Playback:
    """Run ``turns`` (a user message and the model's script for it) against the agent a scenario's
    ``agent:`` section describes, exactly as the scenario runner builds it, checking invariants
    (all, or the named ones) after every yielded state."""
    if not isinstance(agent, AgentSpec):
        reason = f"expected an AgentSpec (a scenario's agent: section), got {type(agent).__name__}"
        raise InvalidInputError("play(agent=...)", [("", reason)])
    if not turns:
        reason = "needs at least one (user message, script) pair"
        raise InvalidInputError("play(turns=...)", [("", reason)])
    built = build_spec_agent(agent, builder=builder)
    checker = watch(built, select_invariants(invariants))
    with runtime_context(clock=built.clock, ids=built.ids):
        state = AgentState()
    executions = []
    for number, (user, script) in enumerate(turns, start=1):
        built.script.current = ScriptedLLM(script, clock=built.clock, name=f"turn {number}")
        with runtime_context(clock=built.clock, ids=built.ids):
            state = state.with_user_message(user)
        run = run_checked(built.loop, checker, number, state)
        if run.error is not None:
            raise run.error
        executions.append(tuple(run.states))
        state = run.states[-1]
    return Playback(tuple(executions), tuple(checker.violations))
