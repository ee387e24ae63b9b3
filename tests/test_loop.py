"""``AgentLoop``: trace routing (D1), continuation (D2), status (D3) and determinism (D10)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentExecutionCompleted,
    AgentLoop,
    AgentState,
    AgentStep,
    AgentStop,
    ConfigurationError,
    ContinuationEvaluated,
    EventBus,
    ExecutionBudget,
    ExecutionStatus,
    FinishReason,
    ForeignClockError,
    HookContext,
    InferenceResponse,
    Role,
    StopReason,
    StopSignal,
    SubagentDefinition,
    ToolCallingDriver,
    Tools,
    Usage,
    UseContextConfig,
    UseGuards,
    UseLlmConfig,
    UseSubagents,
    runtime_context,
)
from agentrig.clock import new_id
from agentrig.fakes import FakeClock, ScriptedLLM, SeededIds, call, calls, reply

TOOL_THEN_ANSWER = [call("lookup", q="x"), reply("The answer.")]


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def roles(messages: Any) -> list[str]:
    return [m.role.value for m in messages]


def buffer(state: AgentState) -> Any:
    return state.store().messages_of("execution_buffer")


def add_signal(reason: StopReason, message: str = "") -> Any:
    def hook(ctx: HookContext) -> HookContext:
        signal = StopSignal(reason=reason, message=message, source="test")
        return ctx.with_state(ctx.state.with_stop_signal(signal))

    return hook


class TestSeparatedTraces:
    def test_traces_live_in_the_buffer_during_the_execution(self, make_agent, start) -> None:
        llm = ScriptedLLM(TOOL_THEN_ANSWER)
        middle, final = list(make_agent(llm, [lookup]).iterate(start()))
        assert middle.status() is ExecutionStatus.IN_PROGRESS
        assert roles(middle.messages()) == ["user"]
        assert roles(buffer(middle)) == ["assistant", "tool"]
        assert roles(middle.messages_for_inference()) == ["user", "assistant", "tool"]
        assert roles(llm.requests[1].messages) == ["user", "assistant", "tool"]
        assert roles(final.messages()) == ["user", "assistant"]
        assert not buffer(final)

    def test_output_messages_are_tagged(self, make_agent, start) -> None:
        middle, final = list(make_agent(ScriptedLLM(TOOL_THEN_ANSWER), [lookup]).iterate(start()))
        step_one, step_two = final.steps()
        for message in buffer(middle):
            assert message.metadata["step_id"] == step_one.id
            assert message.metadata["execution_id"] == final.execution_id()
            assert message.metadata["agent_id"] == final.agent_id
            assert message.metadata["is_trace"] is True
        answer = final.messages()[-1]
        assert answer.metadata["step_id"] == step_two.id
        assert answer.metadata["execution_id"] == final.execution_id()
        assert answer.metadata["agent_id"] == final.agent_id
        assert "is_trace" not in answer.metadata

    def test_full_traces_stay_in_step_executions(self, make_agent, start) -> None:
        final = make_agent(ScriptedLLM(TOOL_THEN_ANSWER), [lookup]).execute(start())
        traced = final.step_executions()[0].step.output_messages
        assert roles(traced) == ["assistant", "tool"]
        assert all(m.is_trace for m in traced)
        assert traced[1].content == "found x"

    def test_buffer_cleared_when_stopped_by_a_budget(self, make_agent, start) -> None:
        llm = ScriptedLLM([call("lookup", q="1"), call("lookup", q="2")])
        final = make_agent(llm, [lookup], UseGuards(max_steps=1)).execute(start())
        assert final.status() is ExecutionStatus.STOPPED
        assert not buffer(final)
        assert roles(final.messages()) == ["user"]

    def test_buffer_cleared_when_failed(self, make_agent, start) -> None:
        llm = ScriptedLLM([call("lookup", q="1")])
        states = list(make_agent(llm, [lookup]).iterate(start()))
        assert buffer(states[0])
        final = states[-1]
        assert final.status() is ExecutionStatus.FAILED
        assert not buffer(final)
        assert final.step_count() == 1


class TestInlineTraces:
    def test_everything_goes_to_messages(self, make_agent, start) -> None:
        agent = make_agent(ScriptedLLM(TOOL_THEN_ANSWER), [lookup], inline=True)
        middle, final = list(agent.iterate(start()))
        assert roles(middle.messages()) == ["user", "assistant", "tool"]
        assert not buffer(middle)
        assert roles(final.messages()) == ["user", "assistant", "tool", "assistant"]
        assert [m.is_trace for m in final.messages()] == [False, True, True, False]

    def test_the_next_execution_does_not_see_earlier_traces(self, make_agent, start) -> None:
        llm = ScriptedLLM([*TOOL_THEN_ANSWER, reply("Second answer.")])
        agent = make_agent(llm, [lookup], inline=True)
        first = agent.execute(start("one"))
        agent.execute(first.with_user_message("two"))
        assert roles(llm.requests[2].messages) == ["user", "assistant", "user"]


class TestContinuation:
    def test_continuation_request_overrides_a_natural_stop_once(self, make_agent, start) -> None:
        requested: list[bool] = []

        def continue_once(ctx: HookContext) -> HookContext | None:
            if requested:
                return None
            requested.append(True)
            return ctx.with_state(ctx.state.with_execution_continued())

        llm = ScriptedLLM(["first", "second", "third"])
        final = make_agent(llm, hooks=[(continue_once, "after_step", 0)]).execute(start())
        assert final.step_count() == 2
        assert final.final_response().to_text() == "second"
        assert final.last_stop_reason() is StopReason.COMPLETED
        assert llm.remaining == 1

    def test_continuation_request_overrides_signals_for_one_evaluation(
        self, make_agent, start
    ) -> None:
        events = EventBus()
        evaluations: list[tuple[int, bool]] = []
        events.subscribe(
            ContinuationEvaluated, lambda e: evaluations.append((e.step_number, e.should_stop))
        )
        requested: list[bool] = []

        def continue_once(ctx: HookContext) -> HookContext | None:
            if requested:
                return None
            requested.append(True)
            return ctx.with_state(ctx.state.with_execution_continued())

        hooks = [
            (add_signal(StopReason.STOP_REQUESTED, "enough"), "after_step", 10),
            (continue_once, "after_step", 0),
        ]
        llm = ScriptedLLM([call("lookup", q="1"), call("lookup", q="2")])
        final = make_agent(llm, [lookup], hooks=hooks, events=events).execute(start())
        assert evaluations == [(1, False), (1, True)]
        assert final.step_count() == 1
        assert final.last_stop_reason() is StopReason.STOP_REQUESTED
        assert final.status() is ExecutionStatus.STOPPED

    def test_a_continuation_request_cannot_exceed_the_step_budget(self, start) -> None:
        def always_continue(ctx: HookContext) -> HookContext:
            return ctx.with_state(ctx.state.with_execution_continued())

        llm = ScriptedLLM([call("lookup", q="1"), call("lookup", q="2")])
        agent = (
            AgentBuilder.base()
            .with_tools([lookup])
            .with_capability(UseLlmConfig(llm))
            .with_capability(UseGuards(max_steps=1))
            .add_hook(always_continue, ["before_step", "after_step"], priority=-10)
            .build()
        )
        final = agent.execute(start())
        assert final.step_count() == 1
        assert final.last_stop_reason() is StopReason.STEPS_LIMIT
        assert final.status() is ExecutionStatus.STOPPED

    def test_signals_accumulate_and_the_highest_priority_wins(self, make_agent, start) -> None:
        hooks = [
            (add_signal(StopReason.COMPLETED), "after_step", 0),
            (add_signal(StopReason.USER_REQUESTED, "bye"), "on_stop", 0),
        ]
        final = make_agent(ScriptedLLM(["hi"]), hooks=hooks).execute(start())
        reasons = [s.reason for s in final.continuation().stop_signals]
        assert reasons == [StopReason.COMPLETED, StopReason.USER_REQUESTED]
        assert final.last_stop_reason() is StopReason.USER_REQUESTED
        assert final.status() is ExecutionStatus.STOPPED

    def test_on_a_tie_the_first_signal_wins(self, make_agent, start) -> None:
        hooks = [
            (add_signal(StopReason.STEPS_LIMIT, "first"), "after_step", 5),
            (add_signal(StopReason.STEPS_LIMIT, "second"), "after_step", 0),
        ]
        final = make_agent(ScriptedLLM(["hi"]), hooks=hooks).execute(start())
        signal = final.stop_signal()
        assert signal is not None
        assert signal.message == "first"

    def test_natural_completion_records_a_completed_signal(self, make_agent, start) -> None:
        final = make_agent(ScriptedLLM(["hi"])).execute(start())
        signal = final.stop_signal()
        assert signal is not None
        assert (signal.reason, signal.source) == (StopReason.COMPLETED, "AgentLoop")
        assert not final.stop_signal().reason.was_force_stopped()  # type: ignore[union-attr]

    def test_finish_reason_guard_is_a_natural_ending(self, make_agent, start) -> None:
        llm = ScriptedLLM([reply("partial", finish_reason=FinishReason.LENGTH)])
        final = make_agent(llm, (), UseGuards(finish_reasons=["length"])).execute(start())
        assert final.last_stop_reason() is StopReason.FINISH_REASON
        assert final.status() is ExecutionStatus.COMPLETED


class TestStatus:
    def test_none_between_executions_and_in_progress_during(self, make_agent, start) -> None:
        initial = start()
        assert initial.status() is None
        llm = ScriptedLLM([call("lookup", q="1"), call("lookup", q="2"), reply("ok")])
        states = list(make_agent(llm, [lookup]).iterate(initial))
        assert [s.status() for s in states] == [
            ExecutionStatus.IN_PROGRESS,
            ExecutionStatus.IN_PROGRESS,
            ExecutionStatus.COMPLETED,
        ]
        assert states[-1].for_next_execution().status() is None

    @pytest.mark.parametrize(
        ("script", "guards", "status", "reason"),
        [
            (["ok"], None, ExecutionStatus.COMPLETED, StopReason.COMPLETED),
            (
                [call("lookup", q="1")],
                UseGuards(max_steps=1),
                ExecutionStatus.STOPPED,
                StopReason.STEPS_LIMIT,
            ),
            ([], None, ExecutionStatus.FAILED, StopReason.ERROR),
        ],
    )
    def test_terminal_statuses(
        self, make_agent, start, script: list, guards: Any, status: ExecutionStatus, reason: Any
    ) -> None:
        capabilities = [guards] if guards else []
        final = make_agent(ScriptedLLM(script), [lookup], *capabilities).execute(start())
        assert final.status() is status
        assert final.last_stop_reason() is reason

    def test_a_tool_error_fails_the_execution_even_after_an_answer(self, make_agent, start) -> None:
        llm = ScriptedLLM([call("ghost"), reply("All good anyway.")])
        final = make_agent(llm, [lookup]).execute(start())
        assert final.has_final_response()
        assert final.last_stop_reason() is StopReason.COMPLETED
        assert final.status() is ExecutionStatus.FAILED

    def test_a_terminal_state_starts_a_new_execution(self, make_agent, start) -> None:
        agent = make_agent(ScriptedLLM(["one", "two"]))
        first = agent.execute(start("a"))
        second = agent.execute(first.with_user_message("b"))
        assert (first.execution_count, second.execution_count) == (1, 2)
        assert second.execution_id() != first.execution_id()
        assert second.step_count() == 1
        assert second.agent_id == first.agent_id

    def test_an_in_progress_state_is_resumed(self, make_agent, start) -> None:
        first_llm = ScriptedLLM([call("lookup", q="1"), reply("unused")])
        middle = next(iter(make_agent(first_llm, [lookup]).iterate(start())))
        assert middle.status() is ExecutionStatus.IN_PROGRESS
        second_llm = ScriptedLLM([reply("resumed answer")])
        final = make_agent(second_llm, [lookup]).execute(middle)
        assert final.execution_id() == middle.execution_id()
        assert final.step_count() == 2
        assert final.steps()[0] == middle.steps()[0]
        assert final.final_response().to_text() == "resumed answer"
        assert roles(second_llm.requests[0].messages) == ["user", "assistant", "tool"]


class TestIterate:
    def test_yields_one_state_per_step(self, make_agent, start) -> None:
        llm = ScriptedLLM([call("lookup", q="1"), call("lookup", q="2"), reply("ok")])
        states = list(make_agent(llm, [lookup]).iterate(start()))
        assert [s.step_count() for s in states] == [1, 2, 3]

    def test_a_stop_before_the_first_step_yields_once(self, make_agent, start) -> None:
        hooks = [(add_signal(StopReason.STOP_REQUESTED), "before_execution", 0)]
        states = list(make_agent(ScriptedLLM([]), hooks=hooks).iterate(start()))
        assert len(states) == 1
        assert states[0].step_count() == 0
        assert states[0].status() is ExecutionStatus.STOPPED

    def test_a_guard_stop_yields_the_last_step_state_too(self, make_agent, start) -> None:
        llm = ScriptedLLM([call("lookup", q="1"), call("lookup", q="2")])
        states = list(make_agent(llm, [lookup], UseGuards(max_steps=2)).iterate(start()))
        assert [s.step_count() for s in states] == [1, 2, 2]

    def test_loop_built_without_the_builder(self, clock: FakeClock, ids: SeededIds, start) -> None:
        llm = ScriptedLLM(TOOL_THEN_ANSWER)
        loop = AgentLoop(driver=ToolCallingDriver(llm), tools=Tools([lookup]), clock=clock, ids=ids)
        final = loop.execute(start())
        assert final.final_response().to_text() == "The answer."
        assert roles(final.messages()) == ["user", "assistant"]

    def test_the_loop_keeps_no_state_between_runs(self, make_agent, start) -> None:
        llm = ScriptedLLM(["one", "two"])
        agent = make_agent(llm)
        first, second = agent.execute(start("a")), agent.execute(start("b"))
        assert first.messages()[-1].content == "one"
        assert second.messages()[-1].content == "two"
        assert roles(llm.requests[1].messages) == ["user"]

    def test_budget_stops_do_not_lose_the_user_message(self, make_agent, start) -> None:
        final = make_agent(ScriptedLLM([]), (), UseGuards(max_steps=0)).execute(start("keep me"))
        assert final.messages()[0].role is Role.USER
        assert final.messages()[0].content == "keep me"


def scripted_run(seed: int) -> AgentState:
    clock, ids = FakeClock(), SeededIds(seed)
    script = [call("lookup", q="1"), reply("done", latency=1.5), reply("again", latency=0.5)]
    llm = ScriptedLLM(script, clock=clock)
    agent = (
        AgentBuilder.base()
        .with_clock(clock)
        .with_ids(ids)
        .with_capability(UseLlmConfig(llm))
        .with_capability(UseGuards(ExecutionBudget(max_steps=5)))
        .with_tools([lookup])
        .build()
    )
    with runtime_context(clock=clock, ids=ids):
        state = AgentState().with_user_message("q")
    first = agent.execute(state)
    with runtime_context(clock=clock, ids=ids):
        follow_up = first.with_user_message("and?")
    return agent.execute(follow_up)


def test_same_script_same_clock_and_seed_gives_identical_states() -> None:
    assert scripted_run(11).execution_count == 2
    assert scripted_run(11).to_dict() == scripted_run(11).to_dict()
    assert scripted_run(11).to_json() == scripted_run(11).to_json()


def test_a_different_seed_gives_different_ids() -> None:
    assert scripted_run(11).agent_id != scripted_run(12).agent_id


@pytest.mark.parametrize(
    ("trigger", "steps"),
    [
        ("before_execution", 0),
        ("before_step", 0),
        ("before_inference_request", 0),
        ("after_inference_response", 1),  # the model answered: the step is kept (with usage)
        ("before_tool_use", 1),
        ("after_tool_use", 1),
        ("after_step", 1),
        ("on_stop", 2),
        ("after_execution", 2),
    ],
)
def test_an_exception_in_any_hook_fails_the_execution_cleanly(
    make_agent, start, trigger: str, steps: int
) -> None:
    def boom(ctx: HookContext) -> None:
        raise RuntimeError(f"{trigger} broke")

    events = EventBus()
    completed: list[object] = []
    events.subscribe(AgentExecutionCompleted, completed.append)
    agent = make_agent(
        ScriptedLLM(TOOL_THEN_ANSWER), [lookup], hooks=[(boom, trigger, 0)], events=events
    )
    final = agent.execute(start())
    assert final.status() is ExecutionStatus.FAILED
    assert final.last_stop_reason() is StopReason.ERROR
    assert [(e.type, e.message) for e in final.errors()] == [("RuntimeError", f"{trigger} broke")]
    assert final.step_count() == steps
    assert not buffer(final)
    assert len(completed) == 1


class TestAgentStopMidStep:
    """An ``AgentStop`` raised inside a step keeps what the step did (no lost data, D4 usage)."""

    @staticmethod
    def escalate(reason: str) -> str:
        """Hand over to a human."""
        raise AgentStop(f"human needed: {reason}", source="tool:escalate")

    def run(self, make_agent, start, *, inline: bool = False) -> AgentState:
        llm = ScriptedLLM(
            [
                calls(("lookup", {"q": "x"}), usage=Usage(input_tokens=10, output_tokens=2)),
                calls(
                    ("lookup", {"q": "y"}),
                    ("escalate", {"reason": "refund"}),
                    ("lookup", {"q": "z"}),
                    usage=Usage(input_tokens=20, output_tokens=5),
                ),
                reply("never reached"),
            ]
        )
        return make_agent(llm, [lookup, self.escalate], inline=inline).execute(start())

    def test_the_cut_short_step_is_recorded_with_its_usage(self, make_agent, start) -> None:
        final = self.run(make_agent, start)
        assert final.status() is ExecutionStatus.STOPPED
        assert final.last_stop_reason() is StopReason.STOP_REQUESTED
        assert final.step_count() == 2
        assert final.usage().total() == 37
        assert not final.has_errors()

    def test_every_call_has_a_result_and_the_cut_ones_are_marked(self, make_agent, start) -> None:
        step = self.run(make_agent, start).steps()[-1]
        executions = list(step.tool_executions)
        assert [(e.name, e.was_stopped(), e.has_error) for e in executions] == [
            ("lookup", False, False),
            ("escalate", True, False),
            ("lookup", True, False),
        ]
        assert executions[0].value == "found y"
        assert executions[1].content == "Execution stopped: human needed: refund"
        assert executions[2].content.startswith("Not executed")
        results = [m.tool_result for m in step.output_messages if m.tool_result is not None]
        assert [r.call_id for r in results] == [c.id for c in step.requested_tool_calls()]

    def test_traces_follow_the_trace_mode(self, make_agent, start) -> None:
        separated = self.run(make_agent, start)
        assert roles(separated.messages()) == ["user"]
        assert not buffer(separated)
        inline = self.run(make_agent, start, inline=True)
        assert roles(inline.messages()) == ["user", "assistant", "tool", "assistant"] + ["tool"] * 3

    def test_the_state_round_trips(self, make_agent, start) -> None:
        final = self.run(make_agent, start)
        assert AgentState.from_json(final.to_json()) == final

    def test_a_driver_raising_it_records_no_step_unless_it_attaches_one(
        self, clock: FakeClock, ids: SeededIds, start
    ) -> None:
        class StoppingDriver(ToolCallingDriver):
            attach: bool = False

            def use_tools(self, state: AgentState, runtime: Any) -> AgentState:
                stop = AgentStop("driver stop", source="driver")
                if self.attach:
                    stop.step = AgentStep(
                        inference_response=InferenceResponse(
                            content="partial", usage=Usage(input_tokens=3)
                        )
                    )
                raise stop

        for attach, steps in ((False, 0), (True, 1)):
            driver = StoppingDriver(ScriptedLLM([]))
            driver.attach = attach
            agent = AgentBuilder.base().with_clock(clock).with_ids(ids).with_driver(driver).build()
            final = agent.execute(start())
            assert (final.status(), final.step_count()) == (ExecutionStatus.STOPPED, steps)
            assert final.usage().total() == (3 if attach else 0)


class TestStatesOnTheAgentsClock:
    """``new_state`` / ``continue_with`` stamp states with the agent's clock and ids, so a test
    needs no ``runtime_context``; ``check_clock`` names a state made on another clock."""

    @staticmethod
    def agent(seed: int = 11) -> AgentLoop:
        clock = FakeClock()
        script = [call("lookup", q="1"), reply("done", latency=1.5), reply("again")]
        return (
            AgentBuilder.base()
            .with_clock(clock)
            .with_ids(SeededIds(seed))
            .with_capability(UseLlmConfig(ScriptedLLM(script, clock=clock)))
            .with_tools([lookup])
            .build()
        )

    def two_turns(self, *, run_async: bool = False) -> AgentState:
        agent = self.agent()

        def run(state: AgentState) -> AgentState:
            return asyncio.run(agent.aexecute(state)) if run_async else agent.execute(state)

        first = run(agent.new_state("q"))
        return run(agent.continue_with(first, "and?"))

    def test_two_turns_without_runtime_context_are_byte_identical(self) -> None:
        final = self.two_turns()
        assert final.execution_count == 2
        assert [m.content for m in final.messages()] == ["q", "done", "and?", "again"]
        assert final.to_json() == self.two_turns().to_json()

    def test_the_async_path_gives_the_same_states(self) -> None:
        assert self.two_turns(run_async=True).to_json() == self.two_turns().to_json()

    def test_the_same_as_wiring_runtime_context_by_hand(self) -> None:
        agent = self.agent()
        with runtime_context(clock=agent.clock, ids=agent.ids):
            by_hand = AgentState().with_user_message("q")
        assert self.agent().new_state("q").to_json() == by_hand.to_json()

    def test_new_state_takes_state_fields_and_may_hold_no_message(self) -> None:
        state = self.agent().new_state(parent_agent_id="parent")
        assert state.parent_agent_id == "parent"
        assert len(state.messages()) == 0
        assert state.created_at == FakeClock().now()

    def test_check_clock_passes_a_state_of_the_agent(self) -> None:
        agent = self.agent()
        state = agent.execute(agent.new_state("q"))
        assert agent.check_clock(state) is state

    def test_check_clock_names_a_time_the_agent_has_not_reached(self) -> None:
        later = FakeClock()
        later.advance(60)
        with runtime_context(clock=later, ids=SeededIds(0)):
            foreign = AgentState().with_user_message("q")
        with pytest.raises(ForeignClockError, match=r"2026-01-01T00:01:00.*new_state") as raised:
            self.agent().check_clock(foreign)
        assert raised.value.field == "created_at"
        assert "context.store.messages[0].created_at" in [f for f, _ in raised.value.problems]

    def test_check_clock_catches_a_state_made_on_the_system_clock(self) -> None:
        # The system clock is past FakeClock's default start (2026-01-01) from then on.
        with pytest.raises(ForeignClockError, match="made on another clock"):
            self.agent().check_clock(AgentState().with_user_message("q"))


class TestCheckClockRule:
    """``check_clock``'s rule: a time ahead of the clock or before its start, or a UUID the
    agent's ids did not hand out, is foreign; what the agent made passes."""

    agent = staticmethod(TestStatesOnTheAgentsClock.agent)

    @staticmethod
    def problems(agent: AgentLoop, state: AgentState) -> dict[str, str]:
        with pytest.raises(ForeignClockError) as raised:
            agent.check_clock(state)
        return dict(raised.value.problems)

    def test_a_time_before_the_clock_started_is_foreign(self) -> None:
        agent = self.agent()
        earlier = FakeClock(datetime(2025, 6, 1, tzinfo=UTC))
        with runtime_context(clock=earlier, ids=agent.ids):
            behind = AgentState().with_user_message("q")
        problems = self.problems(agent, behind)
        assert set(problems) == {
            "created_at",
            "updated_at",
            "context.store.messages[0].created_at",
        }
        assert problems["created_at"].startswith(
            "2025-06-01T00:00:00+00:00 is earlier than the agent's clock "
            "FakeClock(2026-01-01T00:00:00+00:00) started (2026-01-01T00:00:00+00:00): "
            "the state was made on another clock"
        )

    def test_ids_of_another_seed_are_foreign(self) -> None:
        agent = self.agent(seed=11)
        with runtime_context(clock=agent.clock, ids=SeededIds(99)):
            other = AgentState().with_user_message("q")
        problems = self.problems(agent, other)
        assert set(problems) == {"agent_id", "context.store.messages[0].id"}
        assert problems["agent_id"].startswith(
            f"{other.agent_id} was not handed out by the agent's ids SeededIds(seed=11)"
        )

    def test_random_ids_are_foreign(self) -> None:
        agent = self.agent()
        with runtime_context(clock=agent.clock):  # the clock wired, the ids forgotten
            state = AgentState().with_user_message("q")
        assert "agent_id" in self.problems(agent, state)

    def test_ids_a_new_agent_of_the_same_seed_has_not_handed_out_yet_are_foreign(self) -> None:
        first = self.agent(seed=3)
        final = first.execute(first.new_state("q"))
        problems = self.problems(self.agent(seed=3), final)
        assert "a new factory of the same seed would hand it out again" in problems["agent_id"]
        assert "execution.step_executions[0].id" in problems

    def test_many_foreign_ids_are_counted_after_the_first_ten(self) -> None:
        agent = self.agent()
        with runtime_context(clock=agent.clock, ids=SeededIds(99)):
            state = AgentState()
            for number in range(12):
                state = state.with_user_message(f"q{number}")
        with pytest.raises(ForeignClockError) as raised:
            agent.check_clock(state)
        assert len(raised.value.problems) == 11
        assert raised.value.problems[-1][1] == (
            "and 3 more id(s) not handed out by SeededIds(seed=11)"
        )

    def test_what_the_agent_made_passes_across_turns_tools_and_subagents(self) -> None:
        definition = SubagentDefinition(name="helper", description="Helps.")
        clock = FakeClock()
        llm = ScriptedLLM(
            [
                call("spawn_subagent", subagent="helper", prompt="help"),
                call("lookup", q="1"),
                reply("done", latency=2),
                reply("again"),
            ],
            subagents={"helper": [reply("helped")]},
        )
        agent = (
            AgentBuilder.base()
            .with_clock(clock)
            .with_ids(SeededIds(4))
            .with_capability(UseLlmConfig(llm))
            .with_capability(UseSubagents([definition]))
            .with_tools([lookup])
            .build()
        )
        first = agent.execute(agent.new_state("q"))
        assert agent.check_clock(first) is first
        follow_up = agent.continue_with(first, "and?")
        assert agent.check_clock(follow_up) is follow_up
        final = agent.execute(follow_up)
        assert agent.check_clock(final) is final
        assert final.final_response().to_text() == "again"

    def test_ids_a_user_chose_are_not_checked(self) -> None:
        agent = self.agent()
        state = agent.new_state("q", agent_id="support-bot")
        assert agent.check_clock(state) is state

    def test_on_the_system_clock_and_random_ids_only_a_time_ahead_is_caught(self) -> None:
        loop = AgentLoop(driver=ToolCallingDriver(ScriptedLLM([])))
        past = FakeClock(datetime(2020, 1, 1, tzinfo=UTC))
        with runtime_context(clock=past, ids=SeededIds(1)):
            old = AgentState().with_user_message("q")
        assert loop.check_clock(old) is old
        with pytest.raises(ForeignClockError, match="is later than the agent's clock"):
            loop.check_clock(
                self.agent()
                .new_state("q")
                .with_user_message("x")
                .evolve(created_at=datetime(2999, 1, 1, tzinfo=UTC))
            )

    def test_checking_moves_neither_the_clock_nor_the_ids(self) -> None:
        def run(check: bool) -> str:
            agent = self.agent()
            state = agent.new_state("q")
            if check:
                agent.check_clock(agent.execute(state))
                return agent.execute(agent.continue_with(state, "more")).to_json()
            agent.execute(state)
            return agent.execute(agent.continue_with(state, "more")).to_json()

        assert run(check=True) == run(check=False)


class TestNextRequest:
    """``AgentLoop.next_request``: what the model will see next, as the step sends it."""

    @staticmethod
    def agent(
        script: list[Any],
        *,
        inline: bool = False,
        capabilities: tuple[Any, ...] = (),
        hooks: tuple[tuple[Any, str], ...] = (),
        events: EventBus | None = None,
    ) -> AgentLoop:
        clock = FakeClock()
        builder = (
            AgentBuilder.base()
            .with_clock(clock)
            .with_ids(SeededIds(5))
            .with_capability(UseLlmConfig(ScriptedLLM(script, clock=clock)))
            .with_tools([lookup])
            .with_separated_tool_trace(not inline)
        )
        if events is not None:
            builder.with_events(events)
        for capability in capabilities:
            builder.with_capability(capability)
        for hook, trigger in hooks:
            builder.add_hook(hook, trigger)
        return builder.build()

    def test_a_system_prompt_a_before_step_hook_sets_is_in_the_first_request(self) -> None:
        agent = self.agent([reply("done")], capabilities=(UseContextConfig("Be brief."),))
        start = agent.new_state("q")
        predicted = agent.next_request(start)
        assert predicted is not None
        assert [(m.role, m.content) for m in predicted.messages] == [
            (Role.SYSTEM, "Be brief."),
            (Role.USER, "q"),
        ]
        assert start.context.system_prompt == ""  # the hooks ran on the state value
        final = agent.execute(start)
        assert self.seen(predicted.messages) == self.seen(final.steps()[0].input_messages)

    def test_before_execution_and_before_inference_request_hooks_are_in_it(self) -> None:
        def greet(ctx: HookContext) -> HookContext:
            return ctx.with_state(ctx.state.with_user_message("(new session)"))

        def trim(ctx: HookContext) -> HookContext:
            request = ctx.inference_request
            assert request is not None
            return ctx.with_inference_request(request.evolve(messages=request.messages[-1:]))

        agent = self.agent(
            [call("lookup", q="x"), reply("done")],
            hooks=((greet, "before_execution"), (trim, "before_inference_request")),
        )
        start = agent.new_state("q")
        predicted = agent.next_request(start)
        assert predicted is not None
        assert [m.content for m in predicted.messages] == ["(new session)"]
        first, final = list(agent.iterate(start))
        # From a state in progress, the next step of that execution: no before_execution.
        ahead = agent.next_request(first)
        assert ahead is not None
        assert [m.role for m in ahead.messages] == [Role.TOOL]
        assert self.seen(ahead.messages) == self.seen(final.steps()[1].input_messages)
        assert self.seen(predicted.messages) == self.seen(final.steps()[0].input_messages)

    @pytest.mark.parametrize("trigger", ["before_execution", "before_step"])
    def test_none_when_a_hook_stops_the_run_first(self, trigger: str) -> None:
        def enough(ctx: HookContext) -> HookContext:
            return ctx.stop("stop_requested", message="enough")

        def halt(ctx: HookContext) -> HookContext:
            raise AgentStop("halt")

        def broken(ctx: HookContext) -> HookContext:
            raise RuntimeError("broken hook")

        for hook in (enough, halt, broken):
            agent = self.agent([reply("never")], hooks=((hook, trigger),))
            start = agent.new_state("q")
            assert agent.next_request(start) is None, hook.__name__
            assert agent.execute(start).step_count() == 0  # the run sends nothing either

    def test_hooks_false_leaves_the_hooks_out(self) -> None:
        calls_made: list[str] = []

        def counted(ctx: HookContext) -> None:
            calls_made.append(ctx.trigger.value)

        agent = self.agent(
            [reply("done")],
            capabilities=(UseContextConfig("Be brief."),),
            hooks=((counted, "before_step"),),
        )
        start = agent.new_state("q")
        plain = agent.next_request(start, hooks=False)
        assert plain is not None
        assert [m.role for m in plain.messages] == [Role.USER]
        assert calls_made == []
        agent.next_request(start)
        assert calls_made == ["before_step"]  # a hook's own side effect happens again

    def test_asking_with_hooks_reports_no_event_and_changes_no_later_id(self) -> None:
        def tag(ctx: HookContext) -> HookContext:  # takes an id from the running agent's
            return ctx.with_state(ctx.state.with_metadata("note", new_id("note")))

        def run(ask: bool) -> tuple[str, list[str]]:
            events = EventBus()
            heard: list[str] = []
            events.wiretap(lambda event: heard.append(type(event).__name__))
            agent = self.agent(
                [call("lookup", q="x"), reply("done")],
                capabilities=(UseContextConfig("Be brief."),),
                hooks=((tag, "before_step"),),
                events=events,
            )
            final = state = agent.new_state("q")
            if ask:
                agent.next_request(state)
            for final in agent.iterate(state):
                if ask:
                    agent.next_request(final)
            return final.to_json(), heard

        asked, quiet = run(ask=True), run(ask=False)
        assert asked[0] == quiet[0]
        assert "HookExecuted" in quiet[1]
        assert asked[1] == quiet[1]  # the hooks next_request ran reported nothing

    @staticmethod
    def seen(messages: Any) -> list[tuple[str, str]]:
        return [(m.role.value, m.content if m.role is Role.SYSTEM else m.id) for m in messages]

    def test_it_is_what_the_next_step_sends(self) -> None:
        agent = self.agent([call("lookup", q="x"), reply("done")])
        start = agent.new_state("q").with_system_prompt("Be brief.")
        first, final = list(agent.iterate(start))
        predicted = agent.next_request(first)
        assert predicted.messages[0].role is Role.SYSTEM
        assert predicted.messages[0].content == "Be brief."
        assert [tool.name for tool in predicted.tools] == ["lookup"]
        assert self.seen(predicted.messages) == self.seen(final.steps()[1].input_messages)

    def test_in_inline_mode_it_leaves_out_earlier_executions_traces(self) -> None:
        agent = self.agent([call("lookup", q="x"), reply("one"), reply("two")], inline=True)
        first = agent.execute(agent.new_state("q"))
        follow_up = agent.continue_with(first, "and?")
        traces = [m for m in follow_up.messages_for_inference() if m.is_trace]
        assert len(traces) == 2  # the raw view still holds the first execution's trace
        predicted = agent.next_request(follow_up)
        assert [m.content for m in predicted.messages] == ["q", "one", "and?"]
        second = agent.execute(follow_up)
        assert self.seen(predicted.messages) == self.seen(second.steps()[0].input_messages)

    def test_asking_changes_no_later_id_or_time(self) -> None:
        def run(ask: bool) -> str:
            agent = self.agent([call("lookup", q="x"), reply("done")])
            state = agent.new_state("q").with_system_prompt("Be brief.")
            if ask:
                agent.next_request(state)
            return agent.execute(state).to_json()

        assert run(ask=True) == run(ask=False)

    def test_a_driver_that_cannot_say_is_named(self) -> None:
        class Opaque:
            def use_tools(self, state: AgentState, runtime: Any) -> AgentState:
                return state

        loop = AgentLoop(driver=Opaque())
        with pytest.raises(ConfigurationError, match=r"Opaque.*next_request\(state, tools\)"):
            loop.next_request(AgentState())


class TestEffectsPerformedWhereTheyArise:
    """``execute``/``iterate`` set ``StepRuntime.direct``: the step performs its effects itself;
    the async and streaming paths get them yielded. Every path ends in the same state."""

    class Recording(ToolCallingDriver):
        seen: list[tuple[bool, bool]]

        def step(self, state: AgentState, runtime: Any) -> Any:
            self.seen.append((runtime.direct, runtime.streaming))
            return (yield from super().step(state, runtime))

    def run(self, how: str) -> tuple[list[tuple[bool, bool]], str]:
        clock = FakeClock()
        driver = self.Recording(ScriptedLLM([call("lookup", q="1"), reply("done")]))
        driver.seen = []
        agent = (
            AgentBuilder.base()
            .with_clock(clock)
            .with_ids(SeededIds(3))
            .with_driver(driver)
            .with_tools([lookup])
            .build()
        )
        start = agent.new_state("q")
        if how == "execute":
            final = agent.execute(start)
        elif how == "iterate":
            final = list(agent.iterate(start))[-1]
        elif how == "aexecute":
            final = asyncio.run(agent.aexecute(start))
        else:
            items = list(agent.stream(start))
            final = items[-1]
        return driver.seen, final.to_json()

    @pytest.mark.parametrize(
        ("how", "seen"),
        [
            ("execute", (True, False)),
            ("iterate", (True, False)),
            ("aexecute", (False, False)),
            ("stream", (False, True)),
        ],
    )
    def test_each_path_tells_the_driver_how_it_performs_effects(
        self, how: str, seen: tuple[bool, bool]
    ) -> None:
        runtimes, final = self.run(how)
        assert runtimes == [seen, seen]
        assert final == self.run("aexecute")[1]
