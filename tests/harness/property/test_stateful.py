"""``AgentMachine``: a hypothesis state machine over the real loop.

The machine finds nothing wrong with the runtime; it finds planted bugs, by the harness
invariants or by its model; users subclass it with their own tools and hooks; and every run
it can express as a scenario file replays to the same outcome under the scenario runner.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from agentrig import (
    AgentBuilder,
    AgentState,
    ExecutionBudget,
    HookContext,
    HookTrigger,
    InvalidInputError,
    Role,
    StepRuntime,
    StopReason,
    ToolCallingDriver,
    UseContextConfig,
    tool,
)
from agentrig.fakes import CallSpec, Turn, call, reply
from agentrig.harness.property.profiles import agentrig_settings
from agentrig.harness.property.stateful import AgentMachine
from agentrig.harness.property.strategies import DEFAULT_TOOL_SPECS, llm_turns, params_of
from agentrig.harness.runner import run_scenario
from agentrig.harness.scenarios.model import CancelAfterStep, Expectation

# --- the machine as a test --------------------------------------------------------------------

TestAgentMachine = AgentMachine.TestCase
TestAgentMachine.settings = agentrig_settings(max_examples=40, stateful_step_count=12)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def count_steps(context: HookContext) -> HookContext:
    steps = context.state.metadata().get("steps_seen", 0)
    assert isinstance(steps, int)
    return context.with_state(context.state.with_metadata("steps_seen", steps + 1))


class CalculatorMachine(AgentMachine):
    """A user's machine: a Python tool and a hook on top of the scripted tools."""

    trace_modes: ClassVar[tuple[Any, ...]] = ("separated",)

    def base_builder(self) -> AgentBuilder:
        return AgentBuilder.base().with_tools([add]).add_hook(count_steps, HookTrigger.AFTER_STEP)

    def turn_strategy(self) -> st.SearchStrategy[Turn]:
        tools = {**params_of(self.agent_tools), "add": {"a": "integer", "b": "integer"}}
        return llm_turns(tools=tools, invalid_arguments=False)


TestCalculatorMachine = CalculatorMachine.TestCase
TestCalculatorMachine.settings = agentrig_settings(max_examples=15, stateful_step_count=8)


def test_a_machine_with_its_own_builder_compares_only_what_the_model_can_know() -> None:
    assert AgentMachine().exact
    assert not CalculatorMachine().exact


# --- planted bugs -----------------------------------------------------------------------------


def finding(max_examples: int) -> settings:
    """Settings for tests that only need hypothesis to find a failure (no shrinking)."""
    return settings(
        agentrig_settings(max_examples=max_examples, stateful_step_count=6),
        phases=[Phase.generate],
    )


@pytest.fixture
def duplicated_tool_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """A planted driver bug: every tool result is appended to `messages` a second time."""
    original = ToolCallingDriver.use_tools

    def use_tools(self: ToolCallingDriver, state: AgentState, runtime: StepRuntime) -> AgentState:
        state = original(self, state, runtime)
        step = state.current_step()
        results = [m for m in step.output_messages if m.role is Role.TOOL] if step else []
        return state.with_message_store(state.store().section("messages").append(results))

    monkeypatch.setattr(ToolCallingDriver, "use_tools", use_tools)


class InlineMachine(AgentMachine):
    trace_modes: ClassVar[tuple[Any, ...]] = ("inline",)


@pytest.mark.usefixtures("duplicated_tool_results")
def test_the_model_finds_what_the_invariants_miss() -> None:
    # In inline mode tool results belong in `messages`, so duplicates break no invariant;
    # the model knows how many messages there should be.
    with pytest.raises(AssertionError, match="the state differs from the model") as caught:
        run_state_machine_as_test(InlineMachine, settings=finding(100))
    assert "conversation is" in str(caught.value)


@pytest.mark.usefixtures("duplicated_tool_results")
def test_the_harness_invariants_find_a_leak_in_separated_mode() -> None:
    class SeparatedMachine(AgentMachine):
        trace_modes: ClassVar[tuple[Any, ...]] = ("separated",)

    with pytest.raises(AssertionError, match=r"harness invariants failed:\n.*\[clean_messages\]"):
        run_state_machine_as_test(SeparatedMachine, settings=finding(100))


def test_the_model_finds_a_loop_that_ignores_the_step_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentrig.capabilities.guards import UseGuards

    original = UseGuards.exceeded

    def exceeded(self: UseGuards, state: AgentState) -> Any:
        signal = original(self, state)
        return None if signal is not None and signal.reason is StopReason.STEPS_LIMIT else signal

    monkeypatch.setattr(UseGuards, "exceeded", exceeded)

    class NoInvariants(AgentMachine):
        checked_invariants: ClassVar[tuple[str, ...] | None] = ()

    with pytest.raises(AssertionError, match=r"the model expected|differs from the model"):
        run_state_machine_as_test(NoInvariants, settings=finding(200))


# --- runs as scenarios ------------------------------------------------------------------------


def machine(budget: ExecutionBudget | None = None, trace_mode: str = "separated") -> AgentMachine:
    m = AgentMachine()
    m.configure(budget=budget or ExecutionBudget(), trace_mode=trace_mode)  # type: ignore[arg-type]
    return m


class TestToScenario:
    def test_turns_keep_the_replies_the_model_played(self) -> None:
        m = machine(ExecutionBudget(max_steps=2))
        m.start_turn("look it up")
        m.run_to_end([call("lookup", query="x"), call("lookup", query="y"), reply("never played")])
        scenario = m.to_scenario()
        assert scenario is not None
        (turn,) = scenario.turns
        assert [r.call.shorthand() for r in turn.model if r.call] == [
            "lookup(query=x)",
            "lookup(query=y)",
        ]
        assert scenario.agent.budget is not None
        assert scenario.agent.budget.max_steps == 2
        assert scenario.agent.tools == DEFAULT_TOOL_SPECS

    def test_a_raised_user_stop_becomes_a_cancel_after_the_step(self) -> None:
        m = machine()
        m.start_turn("go")
        m.step(call("lookup", query="x"))
        m.raise_stop_signal(StopReason.USER_REQUESTED)
        m.step(reply("unused"))
        scenario = m.to_scenario()
        assert scenario is not None
        assert scenario.turns[0].cancel == CancelAfterStep(after_step=1)
        assert m.unrepresentable == []

    def test_an_unfinished_turn_is_cancelled_where_the_run_left_it(self) -> None:
        m = machine()
        m.start_turn("go")
        m.step(call("lookup", query="x"))
        scenario = m.to_scenario()
        assert scenario is not None
        assert scenario.turns[0].cancel == CancelAfterStep(after_step=1)

    def test_unknown_tools_are_expected_errors(self) -> None:
        m = machine()
        m.start_turn("go")
        m.run_to_end([Turn(calls=(CallSpec("nope"),)), reply("done")])
        scenario = m.to_scenario()
        assert scenario is not None
        assert scenario.turns[0].expect == Expectation(errors=("Tool 'nope' not found",))

    def test_an_unknown_tool_skipped_after_a_stopping_tool_is_not_expected(self) -> None:
        m = machine()
        m.start_turn("go")
        m.step(Turn(calls=(CallSpec("halt"), CallSpec("nope"))))
        scenario = m.to_scenario()
        assert scenario is not None
        assert scenario.turns[0].expect == Expectation()
        assert run_scenario(scenario).failures == ()

    def test_a_bad_name_is_refused_with_the_rule(self) -> None:
        m = machine()
        m.start_turn("hi")
        m.step(reply("yo"))
        with pytest.raises(InvalidInputError, match=r"to_scenario.*use lowercase letters"):
            m.to_scenario(name="Bad Name")

    def test_the_failure_folder_may_be_given_as_text(self, tmp_path: Any) -> None:
        m = machine()
        m.start_turn("hi")
        m.step(reply("yo"))
        path = m.write_failure(str(tmp_path / "failures"))
        assert path == tmp_path / "failures" / "agent-machine.scenario.yaml"
        assert path.is_file()

    def test_what_a_scenario_cannot_express_is_listed(self) -> None:
        m = machine()
        m.start_turn("go")
        m.step(call("lookup", query="x"))
        m.raise_stop_signal(StopReason.STOP_REQUESTED)
        m.request_continuation()
        assert m.unrepresentable == [
            "a stop_requested stop signal raised between steps",
            "a continuation request between steps",
        ]

    def test_failed_tool_calls_are_listed_so_the_written_turn_replays(self) -> None:
        m = machine()
        m.start_turn("go")
        m.run_to_end(
            [
                Turn(calls=(CallSpec("lookup", {"query": 3}), CallSpec("nope", {}))),
                call("explode"),  # its scripted raise reply is intended: not listed
                reply("done"),
            ]
        )
        scenario = m.to_scenario()
        assert scenario is not None
        assert scenario.turns[0].expect.errors == (
            "Tool 'nope' not found",
            "invalid arguments for tool 'lookup': query: expected string, got int",
        )
        assert run_scenario(scenario).failures == ()

    def test_tools_its_own_builder_lacks_are_written_as_scripted(self) -> None:
        m = CalculatorMachine()
        m.configure(budget=ExecutionBudget(), trace_mode="separated")
        m.start_turn("go")
        m.run_to_end(
            [
                Turn(calls=(CallSpec("lookup", {"query": "x"}), CallSpec("add", {"a": 1, "b": 2}))),
                reply("ok"),
            ]
        )
        scenario = m.to_scenario()
        assert scenario is not None
        assert {name: spec.scripted for name, spec in scenario.agent.tools.items()} == {
            "lookup": True,
            "explode": True,
            "halt": True,
        }
        result = run_scenario(scenario, builder=m.base_builder())
        assert result.passed, result.failures

    def test_a_run_without_turns_has_no_scenario(self) -> None:
        assert machine().to_scenario() is None

    def test_the_written_file_replays_to_the_same_outcome(self, tmp_path: Any) -> None:
        m = machine(ExecutionBudget(max_tokens=50))
        m.start_turn("one")
        m.run_to_end(
            [
                call("explode"),
                Turn(calls=(CallSpec("lookup", {"query": "q"}),), usage=_usage(60)),
                reply("x"),
            ]
        )
        m.start_turn("two")
        m.step(reply("done"))
        path = m.write_failure(tmp_path)
        assert path is not None
        assert path.name == "agent-machine.scenario.yaml"
        from agentrig.harness.scenarios.loader import load_scenario

        result = run_scenario(load_scenario(path))
        assert result.passed, result.failures
        assert [(t.status, t.stop_reason, t.steps) for t in result.turns] == [
            ("failed", "token_limit", 2),
            ("completed", "completed", 1),
        ]


def _usage(tokens: int) -> Any:
    from agentrig import Usage

    return Usage(input_tokens=tokens)


class ReplayingMachine(AgentMachine):
    """Replays each run it can express as a scenario and compares every finished turn."""

    def __init__(self) -> None:
        super().__init__()
        self.outcomes: dict[int, tuple[str, str, int]] = {}

    def _advance(self, script: Any, *, limit: int | None) -> None:
        super()._advance(script, limit=limit)
        state = self.state
        status, reason = state.status(), state.last_stop_reason()
        if status is not None and status.is_terminal() and reason is not None:
            self.outcomes[len(self.records)] = (status.value, reason.value, state.step_count())

    def teardown(self) -> None:
        scenario = self.to_scenario()
        if scenario is None or self.unrepresentable:
            return
        result = run_scenario(scenario)
        assert [f for f in result.failures if f.kind in ("invariant", "error")] == []
        for number, turn in enumerate(result.turns, start=1):
            if number in self.outcomes:
                assert (turn.status, turn.stop_reason, turn.steps) == self.outcomes[number]


def test_every_expressible_run_replays_to_the_same_outcomes() -> None:
    settings = agentrig_settings(max_examples=30, stateful_step_count=10)
    run_state_machine_as_test(ReplayingMachine, settings=settings)


class PromptedAgent(AgentMachine):
    def base_builder(self) -> AgentBuilder:
        return AgentBuilder.base().with_capability(UseContextConfig("You are the real agent."))


def _system_prompt(machine: AgentMachine) -> str:
    machine.configure(ExecutionBudget(), "separated")
    agent = machine.agent
    assert agent is not None
    request = agent.loop.next_request(agent.loop.new_state("hi"))
    assert request is not None
    system = request.messages.to_tuple()[0]
    assert system.role is Role.SYSTEM
    return system.content


def test_the_machine_keeps_your_builders_system_prompt_unless_told_to_replace_it() -> None:
    assert _system_prompt(PromptedAgent()) == "You are the real agent."
    replacing = type("Replacing", (PromptedAgent,), {"system_prompt": "Be terse."})
    assert _system_prompt(replacing()) == "Be terse."
    assert _system_prompt(AgentMachine()) == "You are the agent under test."
