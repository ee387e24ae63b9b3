"""The public hypothesis strategies: validated arguments, valid values, registered types."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrig import (
    AgentState,
    ExecutionBudget,
    InvalidInputError,
    Message,
    Role,
    StopReason,
    StopSignal,
    ToolCall,
    Usage,
)
from agentrig.fakes import CallSpec, ScriptedLLM, ScriptedTool, ToolReply, Turn
from agentrig.fakes.clock import DEFAULT_START
from agentrig.harness.property import strategies as ars
from agentrig.harness.property.profiles import agentrig_settings
from agentrig.harness.scenarios.model import ModelReply, Scenario, ToolSpec

TOOLS = {"search": {"query": "string", "limit": "integer?"}, "ping": {}}


def arguments_problem(params: dict[str, str], arguments: dict[str, Any]) -> bool:
    """Whether a ScriptedTool with ``params`` refuses ``arguments`` (the fake is the referee)."""
    tool = ScriptedTool("t", [ToolReply(returns="ok")], params=params)
    try:
        tool._check_arguments(arguments)
    except InvalidInputError:
        return True
    return False


class TestArgumentValidation:
    @pytest.mark.parametrize(
        ("build", "message"),
        [
            (lambda: ars.texts(min_size=3, max_size=2), "max_size=2 is smaller than min_size=3"),
            (lambda: ars.texts(min_size=-1), "expected an integer >= 0, got -1"),
            (lambda: ars.budgets(max_steps=True), "expected an integer >= 0, got True"),
            (lambda: ars.budgets(max_cost=float("nan")), "expected a finite number >= 0"),
            (
                lambda: ars.llm_turns(kinds=("text", "poem")),
                "selection of: text, tool_calls, error",
            ),
            (lambda: ars.llm_turns(kinds=()), "non-empty selection"),
            (lambda: ars.call_specs(tools={"bad name": {}}), "is not a tool name"),
            (lambda: ars.call_specs(tools={"t": {"x": "str"}}), "type 'str' is not one of string"),
            (lambda: ars.call_specs(tools={"t": {"x": 42}}), "nor a strategy of values"),
            (lambda: ars.call_specs(tools={}), "no tool to call"),
            (lambda: ars.messages(roles=("robot",)), "'robot' is not one of: system, developer"),
            (lambda: ars.stop_signals(reasons=()), "expected at least one value"),
            (lambda: ars.scripts(min_steps=2, max_steps=1), "smaller than min_steps=2"),
            (lambda: ars.scenarios(max_turns=0), "max_turns=0 is smaller than max_turns=1"),
            (lambda: ars.scenarios(tools={"t": {}}), "expected a mapping of tool name to ToolSpec"),
            (lambda: ars.scenarios(expectations="yes"), "expected True or False, got 'yes'"),
            (
                lambda: ars.scenarios(tools={}, outcomes=("return", "explode")),
                "expected a non-empty selection of: return, raise, stop; got",
            ),
            (lambda: ars.llm_turns(invalid_arguments="yes"), "expected True or False"),
            (lambda: ars.tool_calls(names="search"), r"write names=\['search'\]"),
            (lambda: ars.messages(roles="user"), r"write roles=\['user'\]"),
            (lambda: ars.stop_signals(reasons="completed"), r"write reasons=\['completed'\]"),
            (lambda: ars.llm_turns(kinds="text"), r"write kinds=\['text'\]"),
            (lambda: ars.tool_specs(outcomes="return"), r"write outcomes=\['return'\]"),
            (lambda: ars.budgets(max_seconds=1e308), "expected a finite number >= 0, at most"),
            (lambda: ars.budgets(deadline_within=1e12), "expected a finite number >= 0, at most"),
            (lambda: ars.usages(max_cost=1e308), "expected a finite number >= 0, at most"),
        ],
    )
    def test_bad_arguments_fail_when_the_strategy_is_built(self, build: Any, message: str) -> None:
        with pytest.raises(InvalidInputError, match=message.replace("(", r"\(")):
            build()

    def test_arguments_are_keyword_only(self) -> None:
        with pytest.raises(TypeError):
            ars.budgets(3)  # type: ignore[misc]


class TestValues:
    @agentrig_settings(max_examples=40)
    @given(turn=ars.llm_turns(tools=TOOLS, max_latency=2.0, unknown_tools=True))
    def test_turns_are_valid_scripts(self, turn: Turn) -> None:
        assert turn.problem() is None
        assert 0 <= turn.latency <= 2.0

    @agentrig_settings(max_examples=40)
    @given(spec=ars.call_specs(tools=TOOLS))
    def test_valid_arguments_are_accepted_by_the_tool(self, spec: CallSpec) -> None:
        assert spec.name in TOOLS
        assert not arguments_problem(TOOLS[spec.name], dict(spec.arguments))

    def test_invalid_arguments_come_in_every_kind(self) -> None:
        seen: set[str] = set()

        @agentrig_settings(max_examples=60)
        @given(spec=ars.call_specs(tools={"search": TOOLS["search"]}, invalid_arguments=True))
        def collect(spec: CallSpec) -> None:
            arguments = dict(spec.arguments)
            if "query" not in arguments:
                seen.add("missing")
            elif set(arguments) - {"query", "limit"}:
                seen.add("unexpected")
            elif arguments_problem(TOOLS["search"], arguments):
                seen.add("wrong type")
            else:
                seen.add("valid")

        collect()
        assert seen == {"valid", "missing", "unexpected", "wrong type"}

    @agentrig_settings(max_examples=30)
    @given(script=ars.scripts(tools={"refund": {"order_id": st.sampled_from(["A100", "B7"])}}))
    def test_a_strategy_draws_the_values_of_a_parameter(self, script: list[Turn]) -> None:
        for call in (call for turn in script for call in turn.calls):
            if call.arguments.keys() == {"order_id"} and isinstance(
                call.arguments["order_id"], str
            ):
                assert call.arguments["order_id"] in ("A100", "B7")

    def test_strategy_parameters_mix_with_typed_ones_and_get_every_invalid_kind(self) -> None:
        params: dict[str, Any] = {"order_id": st.sampled_from(["A100"]), "note": "string?"}
        seen: set[str] = set()

        @agentrig_settings(max_examples=80)
        @given(spec=ars.call_specs(tools={"refund": params}, invalid_arguments=True))
        def collect(spec: CallSpec) -> None:
            arguments = dict(spec.arguments)
            if "order_id" not in arguments:
                seen.add("missing")
            elif set(arguments) - {"order_id", "note"}:
                seen.add("unexpected")
            elif arguments["order_id"] != "A100":
                assert not isinstance(arguments["order_id"], str)
                seen.add("wrong type")
            elif arguments_problem({"order_id": "string", "note": "string?"}, arguments):
                seen.add("wrong type")
            else:
                seen.add("valid")

        collect()
        assert seen == {"valid", "missing", "unexpected", "wrong type"}

    @agentrig_settings(max_examples=20)
    @given(spec=ars.call_specs(tools={"refund": {"order": st.builds(dict, id=st.just("A100"))}}))
    def test_valid_arguments_hold_exactly_what_the_strategy_draws(self, spec: CallSpec) -> None:
        assert dict(spec.arguments) == {"order": {"id": "A100"}}

    def test_unknown_tools_are_drawn_besides_known_ones(self) -> None:
        names: list[str] = []

        @agentrig_settings(max_examples=40)
        @given(spec=ars.call_specs(tools=TOOLS, unknown_tools=True))
        def collect(spec: CallSpec) -> None:
            names.append(spec.name)

        collect()
        assert {"search", "ping"} <= set(names)
        assert [name for name in names if name not in TOOLS]

    @agentrig_settings(max_examples=30)
    @given(script=ars.scripts(tools=TOOLS, min_steps=1, max_steps=3, errors=False))
    def test_scripts_end_with_a_text_answer_and_play(self, script: list[Turn]) -> None:
        assert 2 <= len(script) <= 4
        assert all(turn.calls for turn in script[:-1])
        final = script[-1]
        assert final.text
        assert not final.calls
        assert final.error is None
        assert ScriptedLLM(script).remaining == len(script)

    @agentrig_settings(max_examples=40)
    @given(budget=ars.budgets(max_steps=4, max_tokens=None, deadline_within=2.0))
    def test_budgets_stay_within_bounds(self, budget: ExecutionBudget) -> None:
        assert budget.max_tokens is None
        assert budget.max_steps is None or 0 <= budget.max_steps <= 4
        if budget.deadline is not None:
            assert 0 <= (budget.deadline - DEFAULT_START).total_seconds() <= 2.0

    @agentrig_settings(max_examples=30)
    @given(message=ars.messages(roles=("tool", "assistant")))
    def test_messages_have_the_requested_roles_and_consistent_results(
        self, message: Message
    ) -> None:
        assert message.role in (Role.TOOL, Role.ASSISTANT)
        if message.role is Role.TOOL:
            assert message.tool_result is not None
            assert message.content == message.tool_result.content
        assert Message.model_validate(message.model_dump()) == message

    @agentrig_settings(max_examples=20)
    @given(signal=ars.stop_signals(reasons=("user_requested",)))
    def test_stop_signals_have_the_requested_reason(self, signal: StopSignal) -> None:
        assert signal.reason is StopReason.USER_REQUESTED

    @agentrig_settings(max_examples=20)
    @given(scenario=ars.scenarios(max_turns=2, expectations=True))
    def test_scenarios_are_valid_models(self, scenario: Scenario) -> None:
        assert 1 <= len(scenario.turns) <= 2
        data = scenario.model_dump(by_alias=True, exclude_unset=True)
        assert Scenario.model_validate(data) == scenario

    @agentrig_settings(max_examples=20)
    @given(reply=ars.model_replies(tools=TOOLS))
    def test_model_replies_are_scenario_replies(self, reply: ModelReply) -> None:
        assert reply.say or reply.tool_calls or reply.error

    @agentrig_settings(max_examples=10)
    @given(state=ars.agent_states(max_turns=2))
    def test_agent_states_come_from_the_loop(self, state: AgentState) -> None:
        assert state.execution_count >= 1
        assert [m.role for m in state.messages()][:1] == [Role.USER]


class TestRegistration:
    @pytest.mark.parametrize(
        "kind",
        [Message, ToolCall, Usage, ExecutionBudget, StopSignal, CallSpec, Turn, ToolSpec, Scenario],
    )
    def test_from_type_builds_agentrig_types(self, kind: type) -> None:
        @agentrig_settings(max_examples=5)
        @given(value=st.from_type(kind))
        def check(value: object) -> None:
            assert isinstance(value, kind)

        check()


class TestDeterminism:
    def test_the_ci_profile_draws_the_same_examples_every_run(self) -> None:
        def draw_all() -> list[Turn]:
            seen: list[Turn] = []

            @agentrig_settings(max_examples=15)
            @given(turn=ars.llm_turns(tools=TOOLS))
            def collect(turn: Turn) -> None:
                seen.append(turn)

            collect()
            return seen

        assert draw_all() == draw_all()
