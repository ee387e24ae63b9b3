"""The reference model: it predicts what the real loop does with a script, and says how a state
differs from its prediction."""

from __future__ import annotations

import pytest

from agentrig import ExecutionBudget, ExecutionStatus, StopReason, TraceMode
from agentrig.fakes import FakeClock, call, reply
from agentrig.harness.property.play import play
from agentrig.harness.property.reference_model import AgentModel, ToolOracle, UnpredictableError
from agentrig.harness.property.strategies import DEFAULT_TOOL_SPECS
from agentrig.harness.scenarios.model import AgentSpec, BudgetSpec


def _oracle() -> ToolOracle:
    return ToolOracle(DEFAULT_TOOL_SPECS, list(DEFAULT_TOOL_SPECS))


def test_the_oracle_predicts_each_scripted_outcome() -> None:
    oracle = _oracle()
    assert oracle.outcome("lookup", {"query": "x"}) == ("ok", 0.0)
    assert oracle.outcome("fail", {}) == ("error", 0.0)
    assert oracle.outcome("halt", {}) == ("stop", 0.0)
    assert oracle.outcome("missing", {}) == ("error", 0.0)  # the agent lacks it: a failed call


def test_a_tool_the_oracle_cannot_see_makes_the_model_give_up() -> None:
    model = AgentModel(TraceMode.SEPARATED, ExecutionBudget())
    model.add_user_message("hi")
    oracle = ToolOracle({}, ["own_tool"])
    with pytest.raises(UnpredictableError, match="own_tool"):
        model.run([call("own_tool"), reply("done")], limit=None, clock=FakeClock(), tools=oracle)


@pytest.mark.parametrize(
    ("script", "budget", "status", "reason", "steps"),
    [
        ([call("lookup", query="x"), reply("found")], None, "completed", "completed", 2),
        ([call("fail"), reply("sorry")], None, "failed", "completed", 2),
        ([call("halt"), reply("never")], None, "stopped", "stop_requested", 1),
        ([call("lookup", query="x"), reply("found")], 1, "stopped", "steps_limit", 1),
    ],
    ids=["tool-then-answer", "tool-error", "stopping-tool", "step-limit"],
)
def test_the_model_predicts_what_the_loop_does(
    script: list, budget: int | None, status: str, reason: str, steps: int
) -> None:
    limits = BudgetSpec(max_steps=budget) if budget is not None else None
    final = play(agent=AgentSpec(tools=DEFAULT_TOOL_SPECS, budget=limits), turns=[("hi", script)])
    model = AgentModel(TraceMode.SEPARATED, ExecutionBudget(max_steps=budget))
    model.add_user_message("hi")
    model.run(script, limit=None, clock=FakeClock(), tools=_oracle())
    assert (model.status, model.stop_reason(), model.steps) == (
        ExecutionStatus(status),
        StopReason(reason),
        steps,
    )
    assert list(model.mismatches(final.final, exact=True)) == []


def test_a_state_that_differs_is_named() -> None:
    final = play(agent=AgentSpec(), turns=[("hi", [reply("hello")])]).final
    model = AgentModel(TraceMode.SEPARATED, ExecutionBudget())
    model.add_user_message("bye")
    assert "user messages are ['hi'], expected ['bye']" in list(
        model.mismatches(final, exact=False)
    )
