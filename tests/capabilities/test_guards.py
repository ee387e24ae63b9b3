"""``UseGuards`` enforces every budget limit at the checkpoint before each step (DESIGN D4)."""

from __future__ import annotations

import sys
from datetime import timedelta

import pytest

from agentrig import (
    AgentState,
    ConfigurationError,
    ExecutionBudget,
    ExecutionStatus,
    FinishReason,
    HookTrigger,
    InvalidInputError,
    StopReason,
    Usage,
    UseGuards,
    runtime_context,
)
from agentrig.fakes import FakeClock, ScriptedLLM, ScriptedTool, ToolReply, Turn, calls
from agentrig.state.usage import MAX_TOKENS


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def tool_turns(count: int, **options: object) -> list[Turn]:
    return [calls(("lookup", {"q": str(n)}), **options) for n in range(count)]


def run(make_agent, start, llm: ScriptedLLM, guards: UseGuards) -> AgentState:
    return make_agent(llm, [lookup], guards).execute(start())


def assert_stopped(final: AgentState, reason: StopReason, steps: int) -> None:
    assert final.status() is ExecutionStatus.STOPPED
    assert final.last_stop_reason() is reason
    assert final.step_count() == steps
    signal = final.stop_signal()
    assert signal is not None
    assert signal.source == "UseGuards"


class TestMaxSteps:
    @pytest.mark.parametrize("limit", [1, 2, 3])
    def test_exactly_n_steps_run(self, make_agent, start, limit: int) -> None:
        llm = ScriptedLLM(tool_turns(5))
        final = run(make_agent, start, llm, UseGuards(max_steps=limit))
        assert_stopped(final, StopReason.STEPS_LIMIT, limit)
        assert len(llm.calls) == limit
        signal = final.stop_signal()
        assert signal is not None
        assert signal.message == f"Step limit reached: {limit}/{limit}"
        assert signal.context == {"current_steps": limit, "max_steps": limit}

    def test_zero_steps(self, make_agent, start) -> None:
        llm = ScriptedLLM([])
        assert_stopped(
            run(make_agent, start, llm, UseGuards(max_steps=0)), StopReason.STEPS_LIMIT, 0
        )

    def test_an_answer_within_the_limit_completes(self, make_agent, start) -> None:
        final = run(make_agent, start, ScriptedLLM(["hi"]), UseGuards(max_steps=1))
        assert final.status() is ExecutionStatus.COMPLETED
        assert final.last_stop_reason() is StopReason.COMPLETED


class TestMaxTokens:
    def test_the_crossing_step_completes_and_the_next_does_not_start(
        self, make_agent, start
    ) -> None:
        llm = ScriptedLLM(tool_turns(4, usage=Usage(input_tokens=50, output_tokens=10)))
        final = run(make_agent, start, llm, UseGuards(max_tokens=100))
        assert_stopped(final, StopReason.TOKEN_LIMIT, 2)
        assert final.usage().total() == 120
        assert llm.remaining == 2
        assert final.stop_signal().message == "Token limit reached: 120/100"  # type: ignore[union-attr]

    def test_reaching_the_limit_exactly_stops(self, make_agent, start) -> None:
        llm = ScriptedLLM(tool_turns(3, usage=Usage(input_tokens=50)))
        assert_stopped(
            run(make_agent, start, llm, UseGuards(max_tokens=100)), StopReason.TOKEN_LIMIT, 2
        )


class TestMaxCost:
    def test_cost_limit_stops_with_token_limit(self, make_agent, start) -> None:
        llm = ScriptedLLM(tool_turns(4, usage=Usage(input_tokens=1, cost=0.3)))
        final = run(make_agent, start, llm, UseGuards(max_cost=0.5))
        assert_stopped(final, StopReason.TOKEN_LIMIT, 2)
        signal = final.stop_signal()
        assert signal is not None
        assert "cost" in signal.message.lower()
        assert signal.context["max_cost"] == 0.5

    def test_the_message_shows_the_cost_without_float_noise(self, make_agent, start) -> None:
        llm = ScriptedLLM(tool_turns(4, usage=Usage(input_tokens=1, cost=0.1)))
        signal = run(make_agent, start, llm, UseGuards(max_cost=0.25)).stop_signal()
        assert signal is not None
        assert signal.message == "Cost limit reached: 0.3/0.25"
        assert signal.context["cost"] == pytest.approx(0.3)  # the exact sum stays in the context

    def test_a_cost_sum_that_overflows_stops_on_the_cost_limit(self, make_agent, start) -> None:
        llm = ScriptedLLM(tool_turns(4, usage=Usage(input_tokens=1, cost=1e308)))
        final = run(make_agent, start, llm, UseGuards(max_cost=1.5e308))
        assert_stopped(final, StopReason.TOKEN_LIMIT, 2)  # not failed with an invalid signal
        assert final.usage().cost == sys.float_info.max  # saturated, still a finite number
        assert AgentState.from_json(final.to_json()) == final

    def test_token_counts_beyond_any_run_are_refused_and_sums_saturate(self) -> None:
        with pytest.raises(InvalidInputError, match="input_tokens"):
            Usage(input_tokens=10**4300)
        with pytest.raises(InvalidInputError, match="cost"):
            Usage(cost=float("inf"))
        total = Usage(input_tokens=MAX_TOKENS) + Usage(input_tokens=MAX_TOKENS)
        assert total.input_tokens == MAX_TOKENS
        assert Usage.from_dict(total.to_dict()) == total


class TestTime:
    def test_max_seconds_reads_the_fake_clock(self, make_agent, start, clock: FakeClock) -> None:
        llm = ScriptedLLM(tool_turns(4, latency=6.0), clock=clock)
        final = run(make_agent, start, llm, UseGuards(max_seconds=10))
        assert_stopped(final, StopReason.TIME_LIMIT, 2)
        assert final.stop_signal().context["elapsed_seconds"] == 12.0  # type: ignore[union-attr]
        assert "12.00s/10.00s" in final.stop_signal().message  # type: ignore[union-attr]

    def test_tool_latency_counts_too(self, make_agent, start, clock: FakeClock) -> None:
        slow = ScriptedTool("slow", [ToolReply(returns="ok", latency=11)], clock=clock)
        llm = ScriptedLLM([calls(("slow", {})), calls(("slow", {}))])
        final = make_agent(llm, [slow], UseGuards(max_seconds=10)).execute(start())
        assert_stopped(final, StopReason.TIME_LIMIT, 1)

    def test_deadline(self, make_agent, start, clock: FakeClock) -> None:
        deadline = clock.now() + timedelta(seconds=10)
        llm = ScriptedLLM(tool_turns(4, latency=6.0), clock=clock)
        final = run(make_agent, start, llm, UseGuards(deadline=deadline))
        assert_stopped(final, StopReason.TIME_LIMIT, 2)
        assert "Deadline reached" in final.stop_signal().message  # type: ignore[union-attr]

    def test_a_past_deadline_runs_no_step(self, make_agent, start, clock: FakeClock) -> None:
        llm = ScriptedLLM([])
        final = run(make_agent, start, llm, UseGuards(deadline=clock.now()))
        assert_stopped(final, StopReason.TIME_LIMIT, 0)


class TestConfiguration:
    def test_keywords_override_the_budget(self) -> None:
        guards = UseGuards(ExecutionBudget(max_steps=5, max_tokens=10), max_steps=2)
        assert guards.budget == ExecutionBudget(max_steps=2, max_tokens=10)

    @pytest.mark.parametrize("field", ["max_steps", "max_tokens", "max_seconds", "max_cost"])
    def test_negative_limits_are_rejected(self, field: str) -> None:
        with pytest.raises(InvalidInputError) as raised:
            UseGuards(**{field: -1})  # type: ignore[arg-type]
        assert raised.value.field == field

    def test_a_single_finish_reason_may_be_given_as_a_string(self) -> None:
        assert UseGuards(finish_reasons="length").finish_reasons == {FinishReason.LENGTH}

    def test_an_unknown_finish_reason_lists_the_valid_ones(self) -> None:
        with pytest.raises(InvalidInputError, match=r"'lenght'.*length, tool_calls") as raised:
            UseGuards(finish_reasons=["lenght"])
        assert raised.value.field == "finish_reasons[0]"
        assert str(raised.value).startswith("invalid UseGuards finish reasons: finish_reasons[0]:")

    def test_no_finish_reasons_may_be_given_as_none(self) -> None:
        assert UseGuards(max_steps=1, finish_reasons=None).finish_reasons == frozenset()

    def test_finish_reasons_that_are_not_a_list_are_named(self) -> None:
        with pytest.raises(InvalidInputError, match="expected finish reasons") as raised:
            UseGuards(finish_reasons=3)  # type: ignore[arg-type]
        assert raised.value.field == "finish_reasons"
        assert str(raised.value) == (
            "invalid UseGuards finish reasons: finish_reasons: expected finish reasons such as "
            "['length'], got int"
        )

    def test_a_budget_may_be_given_as_a_dict_of_its_fields(self) -> None:
        assert UseGuards({"max_steps": 3}).budget == ExecutionBudget(max_steps=3)

    @pytest.mark.parametrize(
        ("budget", "field"),
        [("steps=3", "budget"), ({"max_stepz": 3}, "max_stepz"), ({"max_steps": -1}, "max_steps")],
    )
    def test_a_budget_that_is_not_one_is_named(self, budget: object, field: str) -> None:
        with pytest.raises(InvalidInputError) as raised:
            UseGuards(budget)  # type: ignore[arg-type]
        assert raised.value.field == field

    def test_a_budget_of_the_wrong_type_names_it(self) -> None:
        with pytest.raises(InvalidInputError) as raised:
            UseGuards(3)  # type: ignore[arg-type]
        assert str(raised.value) == (
            "invalid UseGuards: budget: expected an ExecutionBudget or a dict of its fields, got int"
        )

    def test_keywords_alone_make_the_budget(self) -> None:
        assert UseGuards(max_steps=2).budget == ExecutionBudget(max_steps=2)
        budget = ExecutionBudget(max_cost=1.0)
        assert UseGuards(budget).budget == budget

    def test_exceeded_reports_the_first_limit_reached(self) -> None:
        guards = UseGuards(max_steps=0, max_tokens=0)
        signal = guards.exceeded(AgentState())
        assert signal is not None
        assert signal.reason is StopReason.STEPS_LIMIT

    def test_a_replaced_budget_is_enforced(self) -> None:
        guards = UseGuards(max_steps=5)
        assert guards.exceeded(AgentState()) is None
        guards.budget = ExecutionBudget(max_tokens=0)
        signal = guards.exceeded(AgentState())
        assert signal is not None
        assert (signal.reason, signal.message) == (
            StopReason.TOKEN_LIMIT,
            "Token limit reached: 0/0",
        )

    def test_the_hooks_it_installs(self, make_agent) -> None:
        guards = UseGuards(max_steps=3, finish_reasons=["length"])
        agent = make_agent(ScriptedLLM([]), (), guards)
        installed = {hook.name: hook for hook in agent.hooks.hooks}
        budget, finish = installed["guard:budget"], installed["guard:finish_reason"]
        assert budget.triggers == {HookTrigger.BEFORE_EXECUTION, HookTrigger.BEFORE_STEP}
        assert budget.priority == 200  # early: other before_step hooks see the limit's signal
        assert finish.triggers == {HookTrigger.AFTER_STEP}
        assert finish.priority == -200  # late: after the hooks that may change the step

    def test_finish_reasons_alone_install_only_their_hook(self, make_agent) -> None:
        agent = make_agent(ScriptedLLM([]), (), UseGuards(finish_reasons="length"))
        assert [hook.name for hook in agent.hooks.hooks] == ["guard:finish_reason"]

    def test_an_unknown_finish_reason_is_named_by_its_place(self) -> None:
        with pytest.raises(InvalidInputError, match="'lenght'") as raised:
            UseGuards(finish_reasons=["stop", "lenght"])
        assert raised.value.field == "finish_reasons[1]"

    def test_an_empty_budget_installs_no_hook(self, make_agent) -> None:
        agent = make_agent(ScriptedLLM([]), (), UseGuards(ExecutionBudget.unlimited()))
        assert len(agent.hooks) == 0

    def test_guards_without_any_limit_are_refused(self) -> None:
        with pytest.raises(ConfigurationError) as raised:
            UseGuards()
        assert str(raised.value) == (  # docs/architecture.md: the defaults to copy
            "UseGuards() without limits guards nothing: give limits such as "
            "UseGuards(max_steps=20, max_tokens=32_768, max_seconds=300) (the original "
            "runtime's defaults), or a budget (ExecutionBudget.unlimited() for none)"
        )

    def test_the_limit_is_signalled_once(self, make_agent, start) -> None:
        final = run(make_agent, start, ScriptedLLM([]), UseGuards(max_steps=0))
        reasons = [s.reason for s in final.continuation().stop_signals]
        assert reasons == [StopReason.STEPS_LIMIT]


class TestFinishReasons:
    def test_a_listed_finish_reason_stops_as_a_natural_ending(self, make_agent, start) -> None:
        llm = ScriptedLLM(tool_turns(3, finish_reason=FinishReason.LENGTH))
        final = run(make_agent, start, llm, UseGuards(finish_reasons=["length"]))
        assert final.last_stop_reason() is StopReason.FINISH_REASON
        assert final.step_count() == 1
        signal = final.stop_signal()
        assert signal is not None
        assert signal.message == 'Finish reason "length" matched stop condition'
        assert signal.context == {"finish_reason": "length"}
        assert signal.source == "UseGuards"

    def test_a_finish_reason_not_listed_leaves_the_run_alone(self, make_agent, start) -> None:
        llm = ScriptedLLM([*tool_turns(2), "done"])  # tool_calls, tool_calls, then stop
        final = run(make_agent, start, llm, UseGuards(finish_reasons=["length", "content_filter"]))
        assert final.status() is ExecutionStatus.COMPLETED
        assert final.last_stop_reason() is StopReason.COMPLETED
        assert final.step_count() == 3
        assert [s.reason for s in final.continuation().stop_signals] == [StopReason.COMPLETED]


class TestSignalContext:
    def test_a_token_limit_names_the_total_and_the_limit(self, make_agent, start) -> None:
        llm = ScriptedLLM(tool_turns(4, usage=Usage(input_tokens=50, output_tokens=10)))
        signal = run(make_agent, start, llm, UseGuards(max_tokens=100)).stop_signal()
        assert signal is not None
        assert signal.context == {"total_tokens": 120, "max_tokens": 100}

    def test_a_time_limit_names_the_elapsed_seconds_and_the_limit(
        self, make_agent, start, clock: FakeClock
    ) -> None:
        llm = ScriptedLLM(tool_turns(4, latency=6.0), clock=clock)
        signal = run(make_agent, start, llm, UseGuards(max_seconds=10)).stop_signal()
        assert signal is not None
        assert signal.message == "Execution time limit reached: 12.00s/10.00s"
        assert signal.context == {"elapsed_seconds": 12.0, "max_seconds": 10}

    def test_a_deadline_names_itself(self, make_agent, start, clock: FakeClock) -> None:
        deadline = clock.now() + timedelta(seconds=10)
        llm = ScriptedLLM(tool_turns(4, latency=6.0), clock=clock)
        signal = run(make_agent, start, llm, UseGuards(deadline=deadline)).stop_signal()
        assert signal is not None
        assert signal.reason is StopReason.TIME_LIMIT
        assert signal.message == f"Deadline reached: {deadline.isoformat()}"
        assert signal.context == {"deadline": deadline.isoformat()}

    def test_a_cost_limit_names_the_cost_and_the_limit(self, make_agent, start) -> None:
        llm = ScriptedLLM(tool_turns(4, usage=Usage(input_tokens=1, cost=0.25)))
        signal = run(make_agent, start, llm, UseGuards(max_cost=0.4)).stop_signal()
        assert signal is not None
        assert signal.context == {"cost": 0.5, "max_cost": 0.4}


class TestBoundaries:
    def test_a_cost_exactly_at_the_limit_stops(self, make_agent, start) -> None:
        llm = ScriptedLLM(tool_turns(4, usage=Usage(input_tokens=1, cost=0.25)))
        final = run(make_agent, start, llm, UseGuards(max_cost=0.5))  # 0.25 + 0.25 == 0.5
        assert_stopped(final, StopReason.TOKEN_LIMIT, 2)
        assert final.stop_signal().message == "Cost limit reached: 0.5/0.5"  # type: ignore[union-attr]

    def test_a_cost_just_below_the_limit_goes_on(self, make_agent, start) -> None:
        llm = ScriptedLLM(tool_turns(4, usage=Usage(input_tokens=1, cost=0.25)))
        final = run(make_agent, start, llm, UseGuards(max_cost=0.5000001))
        assert_stopped(final, StopReason.TOKEN_LIMIT, 3)

    def test_tokens_just_below_the_limit_go_on(self, make_agent, start) -> None:
        llm = ScriptedLLM(tool_turns(3, usage=Usage(input_tokens=50)))
        final = run(make_agent, start, llm, UseGuards(max_tokens=101))
        assert_stopped(final, StopReason.TOKEN_LIMIT, 3)

    def test_time_exactly_at_the_limit_stops(self, make_agent, start, clock: FakeClock) -> None:
        llm = ScriptedLLM(tool_turns(4, latency=5.0), clock=clock)
        final = run(make_agent, start, llm, UseGuards(max_seconds=10))
        assert_stopped(final, StopReason.TIME_LIMIT, 2)

    def test_a_deadline_exactly_now_stops(self, make_agent, start, clock: FakeClock) -> None:
        llm = ScriptedLLM(tool_turns(4, latency=5.0), clock=clock)
        final = run(make_agent, start, llm, UseGuards(deadline=clock.now() + timedelta(seconds=10)))
        assert_stopped(final, StopReason.TIME_LIMIT, 2)


class TestWithoutAnExecution:
    """``exceeded`` on a state no execution has started yet: nothing has been spent."""

    def test_no_step_has_run(self) -> None:
        assert UseGuards(max_steps=1).exceeded(AgentState()) is None
        signal = UseGuards(max_steps=0).exceeded(AgentState())
        assert signal is not None
        assert signal.context == {"current_steps": 0, "max_steps": 0}
        assert signal.message == "Step limit reached: 0/0"

    def test_no_token_or_cost_has_been_spent(self) -> None:
        assert UseGuards(max_tokens=1, max_cost=0.01).exceeded(AgentState()) is None
        signal = UseGuards(max_cost=0).exceeded(AgentState())
        assert signal is not None
        assert (signal.reason, signal.context) == (
            StopReason.TOKEN_LIMIT,
            {"cost": 0.0, "max_cost": 0},
        )

    def test_no_time_has_passed_but_a_deadline_may_have(self, clock: FakeClock) -> None:
        assert UseGuards(max_seconds=0).exceeded(AgentState()) is None
        with runtime_context(clock=clock):
            assert (
                UseGuards(deadline=clock.now() + timedelta(seconds=1)).exceeded(AgentState())
                is None
            )
            signal = UseGuards(deadline=clock.now()).exceeded(AgentState())
        assert signal is not None
        assert signal.reason is StopReason.TIME_LIMIT


class TestSignalledOnce:
    def test_a_run_resumed_past_its_limit_keeps_one_signal(self, make_agent, start) -> None:
        """A checkpoint saved after the guard signalled, then resumed: both checkpoints of the
        resumed run see the limit again, and neither adds a second signal."""
        agent = make_agent(ScriptedLLM(tool_turns(2)), [lookup], UseGuards(max_steps=1))
        after_one_step = next(iter(agent.iterate(start())))
        assert after_one_step.status() is ExecutionStatus.IN_PROGRESS
        guards = UseGuards(max_steps=1)
        signal = guards.exceeded(after_one_step)
        assert signal is not None
        saved = after_one_step.with_stop_signal(signal)
        resumed = make_agent(ScriptedLLM([]), [lookup], guards).execute(saved)
        assert_stopped(resumed, StopReason.STEPS_LIMIT, 1)
        assert [s.reason for s in resumed.continuation().stop_signals] == [StopReason.STEPS_LIMIT]
