"""Conformance with the original runtime's tested behaviour (``shared/reference/original-runtime.md``).

Each class covers one section of the reference and holds only statements no other test checks;
where agentrig deliberately differs (DESIGN.md, docs/architecture.md "Decisions") the test checks
agentrig's side of the decision.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from agentrig import (
    AgentEvent,
    AgentState,
    AgentStep,
    AgentStepType,
    AgentStop,
    ContinuationEvaluated,
    EventBus,
    ExecutionStatus,
    FinishReason,
    HookContext,
    HookStack,
    HookTrigger,
    InferenceResponse,
    LlmConfig,
    Messages,
    StepError,
    StopReason,
    StopSignal,
    ToolCall,
    ToolCallingDriver,
    ToolExecution,
    ToolExecutions,
    Usage,
    UseGuards,
    runtime_context,
)
from agentrig.errors import HookContractViolationError
from agentrig.fakes import FakeClock, ScriptedLLM, call, reply

from .conftest import MakeAgent, Start


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def add_signal(reason: StopReason, message: str = "") -> Any:
    def hook(ctx: HookContext) -> HookContext:
        signal = StopSignal(reason=reason, message=message, source="test")
        return ctx.with_state(ctx.state.with_stop_signal(signal))

    return hook


def recorded(
    make_agent: MakeAgent, start: Start, script: list[Any], *args: Any, hooks: Any = ()
) -> tuple[list[AgentEvent], AgentState]:
    """Run ``script`` and return every event with the final state."""
    events = EventBus()
    seen: list[AgentEvent] = []
    events.wiretap(seen.append)
    agent = make_agent(ScriptedLLM(script), [lookup], *args, hooks=hooks, events=events)
    return seen, agent.execute(start())


def names(seen: list[AgentEvent], *kinds: str) -> list[str]:
    return [e.name for e in seen if not kinds or e.name in kinds]


def _text(text: str) -> Messages:
    return Messages.from_text(text, role="assistant")


def tool_execution(clock: FakeClock, *, error: str | None = None) -> ToolExecution:
    at = clock.now()
    return ToolExecution(
        tool_call=ToolCall(name="lookup", arguments={"q": "x"}),
        value=None if error else "found x",
        content=f"Error in tool call: {error}" if error else "found x",
        error=error,
        started_at=at,
        completed_at=at,
    )


class TestAgentStateAndExecution:
    """Reference §2.1-2.2: AgentState and ExecutionState."""

    def test_completing_a_state_without_an_execution_gives_a_completed_one(self) -> None:
        state = AgentState().with_execution_completed()
        assert state.execution is not None
        assert state.status() is ExecutionStatus.COMPLETED
        assert state.step_count() == 0

    def test_current_step_or_last(self) -> None:
        first, second = AgentStep(output_messages=_text("one")), AgentStep()
        archived = AgentState().with_current_step(first).with_current_step_completed()
        assert archived.current_step_or_last() == archived.last_step()
        assert archived.last_step().id == first.id  # type: ignore[union-attr]
        assert archived.with_current_step(second).current_step_or_last() == second

    def test_a_continuation_request_continues_after_a_final_step(self) -> None:
        state = AgentState().with_current_step(AgentStep()).with_execution_continued()
        assert not state.should_stop()

    def test_for_next_execution_keeps_the_whole_session(
        self, clock: FakeClock, start: Start
    ) -> None:
        with runtime_context(clock=clock):
            state = (
                start(parent_agent_id="parent")
                .with_system_prompt("be brief")
                .with_metadata("user", "ann")
                .with_llm_config(LlmConfig(model="m1"))
                .with_execution_count(3)
                .with_current_step(AgentStep())
                .with_execution_completed()
            )
            clock.advance(5)
            nxt = state.for_next_execution()
        kept = ("agent_id", "parent_agent_id", "created_at", "llm_config", "execution_count")
        assert {name: getattr(nxt, name) for name in kept} == {
            name: getattr(state, name) for name in kept
        }
        assert (nxt.system_prompt(), nxt.metadata()) == ("be brief", {"user": "ann"})
        assert nxt.updated_at == clock.now()
        assert nxt.execution is None

    def test_the_archived_step_keeps_the_signals_without_the_request(self) -> None:
        signal = StopSignal(reason=StopReason.STOP_REQUESTED, source="test")
        state = (
            AgentState()
            .with_current_step(AgentStep())
            .with_stop_signal(signal)
            .with_execution_continued()
            .with_current_step_completed()
        )
        record = state.last_step_execution()
        assert record is not None
        assert list(record.continuation.stop_signals) == [signal]
        assert not record.continuation.is_continuation_requested

    def test_archiving_a_step_does_not_stamp_completion(self) -> None:
        """§9.3 quirk not copied: the original set ``completedAt`` on every archived step."""
        state = AgentState().with_current_step(AgentStep()).with_current_step_completed()
        assert state.execution is not None
        assert state.execution.completed_at is None

    def test_step_count_comes_from_the_execution_not_the_messages(self) -> None:
        state = AgentState().with_user_message("a").with_user_message("b")
        assert state.step_count() == 0


class TestStatus:
    """Reference §2.3: ExecutionStatus values and the transitions the loop drives."""

    def test_string_values(self) -> None:
        assert [status.value for status in ExecutionStatus] == [
            "pending",
            "in_progress",
            "completed",
            "stopped",
            "failed",
        ]

    def test_resuming_an_in_progress_execution_still_counts_an_execution(
        self, make_agent: MakeAgent, start: Start
    ) -> None:
        llm = ScriptedLLM([call("lookup", q="1"), reply("unused")])
        middle = next(iter(make_agent(llm, [lookup]).iterate(start())))
        assert middle.execution_count == 1
        final = make_agent(ScriptedLLM(["resumed"]), [lookup]).execute(middle)
        assert final.execution_id() == middle.execution_id()
        assert final.execution_count == 2

    def test_a_pending_execution_is_resumed_too(self, make_agent: MakeAgent, start: Start) -> None:
        pending = start().with_execution_status(ExecutionStatus.PENDING)
        final = make_agent(ScriptedLLM(["ok"])).execute(pending)
        assert final.execution_id() == pending.execution_id()
        assert final.status() is ExecutionStatus.COMPLETED


class TestAgentStep:
    """Reference §2.4-2.6: AgentStep, StepExecution, ToolExecution."""

    def test_errors_are_tool_errors_then_the_step_errors(self, clock: FakeClock) -> None:
        step = AgentStep(
            tool_executions=ToolExecutions([tool_execution(clock, error="boom")]),
            errors=(StepError(message="own", type="RuntimeError"),),
        )
        assert [e.message for e in step.all_errors()] == ["boom", "own"]
        assert step.with_error(StepError(message="more")).id == step.id

    def test_a_failed_tool_execution_makes_an_error_step(self, clock: FakeClock) -> None:
        failed = ToolExecutions([tool_execution(clock, error="boom")])
        response = InferenceResponse(tool_calls=(ToolCall(name="lookup", arguments={"q": "x"}),))
        step = AgentStep(inference_response=response, tool_executions=failed)
        assert step.step_type() is AgentStepType.ERROR
        assert step.has_tool_calls()

    def test_has_tool_calls_looks_at_requested_calls(self) -> None:
        response = InferenceResponse(tool_calls=(ToolCall(name="lookup", arguments={"q": "x"}),))
        step = AgentStep(inference_response=response)
        assert step.has_tool_calls()
        assert step.executed_tool_calls() == ()
        assert step.step_type() is AgentStepType.TOOL_EXECUTION

    def test_step_type_values(self) -> None:
        assert {t.value for t in AgentStepType} == {"tool_execution", "final_response", "error"}

    def test_step_execution_duration_and_id(self, clock: FakeClock, start: Start) -> None:
        with runtime_context(clock=clock):
            state = start().with_step_started().with_current_step(AgentStep())
            clock.advance(1.5)
            record = state.with_current_step_completed().last_step_execution()
        assert record is not None
        assert record.id == record.step.id
        assert record.duration() == 1.5

    def test_tool_execution_accessors(self, clock: FakeClock) -> None:
        ok, failed = tool_execution(clock), tool_execution(clock, error="boom")
        assert ok.id != ok.tool_call.id
        assert (ok.error_message(), ok.has_error) == ("", False)
        assert (failed.value, failed.error_message(), failed.has_error) == (None, "boom", True)


class TestSerialization:
    """Reference §2.10: the round-trips the original tests (D5: every field, losslessly)."""

    def test_a_state_between_executions(self, start: Start) -> None:
        state = (
            start(parent_agent_id="parent", execution_count=2)
            .with_llm_config(LlmConfig(model="m1", temperature=0.2))
            .with_metadata("user", "ann")
            .with_system_prompt("be brief")
            .with_message_store(start().store().section("notes").append(_text("kept")))
        )
        restored = AgentState.from_json(state.to_json())
        assert restored == state
        assert restored.execution is None
        assert restored.store().section_names() == ("messages", "notes")

    def test_a_state_with_a_step_in_progress(self, start: Start) -> None:
        signal = StopSignal(reason=StopReason.STOP_REQUESTED, message="m", context={"k": 1})
        state = start().with_current_step(AgentStep()).with_stop_signal(signal)
        restored = AgentState.from_json(state.to_json())
        assert restored == state
        assert (restored.step_count(), restored.execution_id()) == (1, state.execution_id())
        assert restored.execution is not None
        assert restored.execution.completed_at is None


class TestLoopAlgorithm:
    """Reference §4.2: ``iterate`` — phases, event order and the tested consequences."""

    def test_an_exception_in_a_before_step_hook(self, make_agent: MakeAgent, start: Start) -> None:
        def boom(ctx: HookContext) -> None:
            raise RuntimeError("no")

        seen, final = recorded(make_agent, start, ["hi"], hooks=[(boom, "before_step", 0)])
        assert names(seen, "AgentStepStarted", "AgentStepCompleted") == ["AgentStepStarted"]
        assert (final.step_count(), final.status()) == (0, ExecutionStatus.FAILED)

    def test_the_driver_fails_after_a_before_step_hook_set_a_step(
        self, make_agent: MakeAgent, start: Start
    ) -> None:
        def inject(ctx: HookContext) -> HookContext:
            return ctx.with_state(ctx.state.with_current_step(AgentStep()))

        seen, final = recorded(make_agent, start, [], hooks=[(inject, "before_step", 0)])
        assert (final.step_count(), final.status()) == (1, ExecutionStatus.FAILED)
        assert names(seen, "AgentStepCompleted") == ["AgentStepCompleted"]

    def test_an_agent_stop_from_the_driver(self, make_agent: MakeAgent, start: Start) -> None:
        class StoppingDriver(ToolCallingDriver):
            def use_tools(self, state: AgentState, runtime: Any) -> AgentState:
                raise AgentStop("driver stop", source="the-driver")

        events = EventBus()
        evaluations: list[ContinuationEvaluated] = []
        events.subscribe(ContinuationEvaluated, evaluations.append)
        agent = make_agent(ScriptedLLM([]), events=events)
        agent.driver = StoppingDriver(ScriptedLLM([]))
        final = agent.execute(start())
        signal = final.stop_signal()
        assert signal is not None
        assert (signal.reason, signal.source) == (StopReason.STOP_REQUESTED, "the-driver")
        assert (final.step_count(), final.status()) == (0, ExecutionStatus.STOPPED)
        assert [(e.step_number, e.should_stop) for e in evaluations] == [(0, True)]

    def test_the_stopped_event_carries_the_winning_signal_of_mixed_signals(
        self, make_agent: MakeAgent, start: Start
    ) -> None:
        hooks = [
            (add_signal(StopReason.COMPLETED), "after_step", 0),
            (add_signal(StopReason.USER_REQUESTED, "bye"), "on_stop", 0),
        ]
        seen, _ = recorded(make_agent, start, ["hi"], hooks=hooks)
        stopped = [e for e in seen if e.name == "AgentExecutionStopped"]
        assert [e.stop_reason for e in stopped] == ["user_requested"]  # type: ignore[attr-defined]

    def test_a_checkpoint_signal_beats_an_archived_step_signal(
        self, make_agent: MakeAgent, start: Start
    ) -> None:
        def complete_but_continue(ctx: HookContext) -> HookContext:
            signal = StopSignal(reason=StopReason.COMPLETED, source="test")
            return ctx.with_state(ctx.state.with_stop_signal(signal).with_execution_continued())

        def cancel_before_step_two(ctx: HookContext) -> HookContext | None:
            if ctx.state.step_count() != 1:
                return None
            return ctx.with_state(ctx.state.with_stop_signal(StopSignal.user_requested("stop")))

        hooks = [
            (complete_but_continue, "after_step", 0),
            (cancel_before_step_two, "before_step", 0),
        ]
        final = make_agent(ScriptedLLM(["one", "two"]), hooks=hooks).execute(start())
        assert final.step_count() == 1
        assert final.last_stop_reason() is StopReason.USER_REQUESTED
        assert final.status() is ExecutionStatus.STOPPED

    def test_a_checkpoint_stop_is_evaluated_and_skips_after_step(
        self, make_agent: MakeAgent, start: Start
    ) -> None:
        seen, final = recorded(
            make_agent,
            start,
            [call("lookup", q="1"), call("lookup", q="2")],
            UseGuards(max_steps=1),
        )
        run = [name for name in names(seen) if name != "HookExecuted"]
        tail = run[run.index("ContinuationEvaluated") + 1 :]
        assert tail == [
            "AgentStepStarted",
            "ContinuationEvaluated",
            "AgentExecutionStopped",
            "AgentExecutionCompleted",
        ]
        last_evaluation = [e for e in seen if e.name == "ContinuationEvaluated"][-1]
        assert (last_evaluation.step_number, last_evaluation.should_stop) == (1, True)  # type: ignore[attr-defined]
        assert final.step_count() == 1

    def test_a_stop_at_the_before_execution_checkpoint_is_evaluated(
        self, make_agent: MakeAgent, start: Start
    ) -> None:
        hooks = [(add_signal(StopReason.STOP_REQUESTED), "before_execution", 0)]
        seen, final = recorded(make_agent, start, [], hooks=hooks)
        assert [name for name in names(seen) if name != "HookExecuted"] == [
            "AgentExecutionStarted",
            "ContinuationEvaluated",
            "AgentExecutionStopped",
            "AgentExecutionCompleted",
        ]
        assert final.status() is ExecutionStatus.STOPPED

    def test_asking_again_before_the_checkpoint_lets_the_next_step_run(
        self, make_agent: MakeAgent, start: Start
    ) -> None:
        def signal_and_continue(ctx: HookContext) -> HookContext | None:
            if ctx.state.step_count() != 1:
                return None
            signal = StopSignal(reason=StopReason.STOP_REQUESTED, source="test")
            return ctx.with_state(ctx.state.with_stop_signal(signal).with_execution_continued())

        def continue_again(ctx: HookContext) -> HookContext:
            return ctx.with_state(ctx.state.with_execution_continued())

        hooks = [(signal_and_continue, "after_step", 0), (continue_again, "before_step", 0)]
        llm = ScriptedLLM(["one", "two", "three"])
        final = make_agent(llm, hooks=hooks).execute(start())
        assert final.step_count() == 2
        assert final.last_stop_reason() is StopReason.STOP_REQUESTED
        assert final.status() is ExecutionStatus.STOPPED

    def test_hooks_run_between_the_phase_events(self, make_agent: MakeAgent, start: Start) -> None:
        log: list[str] = []

        def record(ctx: HookContext) -> None:
            log.append(ctx.trigger.value)

        events = EventBus()
        watched = {
            "AgentExecutionStarted",
            "AgentStepStarted",
            "AgentStepCompleted",
            "AgentExecutionStopped",
            "AgentExecutionCompleted",
            "ToolCallStarted",
            "ToolCallCompleted",
        }
        events.wiretap(lambda e: log.append(e.name) if e.name in watched else None)
        triggers = [
            "before_execution",
            "before_step",
            "before_tool_use",
            "after_tool_use",
            "after_step",
            "on_stop",
            "after_execution",
        ]
        agent = make_agent(
            ScriptedLLM([call("lookup", q="x"), reply("ok")]),
            [lookup],
            hooks=[(record, triggers, 0)],
            events=events,
        )
        agent.execute(start())
        assert log == [
            "AgentExecutionStarted",
            "before_execution",
            "AgentStepStarted",
            "before_step",
            "before_tool_use",
            "ToolCallStarted",
            "ToolCallCompleted",
            "after_tool_use",
            "after_step",
            "AgentStepCompleted",
            "AgentStepStarted",
            "before_step",
            "after_step",
            "AgentStepCompleted",
            "on_stop",
            "AgentExecutionStopped",
            "after_execution",
            "AgentExecutionCompleted",
        ]

    def test_on_error_hooks_run_before_the_failed_event(
        self, make_agent: MakeAgent, start: Start
    ) -> None:
        log: list[str] = []
        events = EventBus()
        events.wiretap(lambda e: log.append(e.name) if e.name == "AgentExecutionFailed" else None)

        def record(ctx: HookContext) -> None:
            log.append(ctx.trigger.value)

        agent = make_agent(ScriptedLLM([]), hooks=[(record, "on_error", 0)], events=events)
        agent.execute(start())
        assert log == ["on_error", "AgentExecutionFailed"]

    def test_stop_and_completion_events_count_the_steps(
        self, make_agent: MakeAgent, start: Start
    ) -> None:
        script = [call("ghost"), reply("ok", usage=Usage(input_tokens=4, output_tokens=1))]
        seen, _ = recorded(make_agent, start, script)
        (stopped,) = [e for e in seen if e.name == "AgentExecutionStopped"]
        (completed,) = [e for e in seen if e.name == "AgentExecutionCompleted"]
        assert (stopped.stop_reason, stopped.total_steps) == ("completed", 2)  # type: ignore[attr-defined]
        assert completed.total_steps == 2  # type: ignore[attr-defined]
        assert completed.usage == Usage(input_tokens=4, output_tokens=1)  # type: ignore[attr-defined]
        assert len(completed.errors) == 1  # type: ignore[attr-defined]
        assert "ghost" in completed.errors[0]  # type: ignore[attr-defined]

    def test_an_error_step_without_tool_calls_stops_the_loop(
        self, make_agent: MakeAgent, start: Start
    ) -> None:
        def fail_the_answer(ctx: HookContext) -> HookContext:
            step = ctx.state.current_step()
            if step is None:
                return ctx
            return ctx.with_state(
                ctx.state.with_current_step(step.with_error(StepError(message="x")))
            )

        llm = ScriptedLLM(["first", "second"])
        final = make_agent(llm, hooks=[(fail_the_answer, "after_step", 0)]).execute(start())
        assert final.step_count() == 1
        assert final.status() is ExecutionStatus.FAILED


class TestEventPayloads:
    """Reference §4.5: what the loop, driver and executor events carry."""

    def test_payloads_of_a_tool_run(self, make_agent: MakeAgent, start: Start) -> None:
        seen, final = recorded(make_agent, start, [call("lookup", q="x"), reply("ok")])
        by_name: dict[str, list[Any]] = {}
        for event in seen:
            by_name.setdefault(event.name, []).append(event)
        (started,) = by_name["AgentExecutionStarted"]
        assert (started.message_count, started.available_tools) == (1, ("lookup",))
        assert [e.step_number for e in by_name["AgentStepStarted"]] == [1, 2]
        assert [e.step_number for e in by_name["InferenceRequestStarted"]] == [1, 2]
        (tool_started,) = by_name["ToolCallStarted"]
        (tool_completed,) = by_name["ToolCallCompleted"]
        call_id = final.steps()[0].requested_tool_calls()[0].id
        assert (tool_started.step_number, tool_started.tool, tool_started.args) == (
            1,
            "lookup",
            {"q": "x"},
        )
        assert tool_started.tool_call_id == tool_completed.tool_call_id == call_id
        assert (tool_completed.success, tool_completed.error) == (True, None)

    def test_a_failure_reports_the_steps_completed(
        self, make_agent: MakeAgent, start: Start
    ) -> None:
        seen, _ = recorded(make_agent, start, [call("lookup", q="x")])
        (failed,) = [e for e in seen if e.name == "AgentExecutionFailed"]
        assert failed.steps_completed == 1  # type: ignore[attr-defined]
        assert failed.error_type == "ScriptExhaustedError"  # type: ignore[attr-defined]


class TestGuards:
    """Reference §5.1: the guards' signals."""

    def test_finish_reason_message(self, make_agent: MakeAgent, start: Start) -> None:
        llm = ScriptedLLM([reply("partial", finish_reason=FinishReason.LENGTH)])
        final = make_agent(llm, (), UseGuards(finish_reasons=["length"])).execute(start())
        signal = final.stop_signal()
        assert signal is not None
        assert signal.message == 'Finish reason "length" matched stop condition'
        assert signal.context["finish_reason"] == "length"

    def test_the_time_limit_counts_from_each_execution_start(
        self, make_agent: MakeAgent, start: Start, clock: FakeClock
    ) -> None:
        """§9.3 quirk not copied: the original kept the start time in the hook, shared by every
        execution of the loop."""
        agent = make_agent(ScriptedLLM(["one", "two"]), (), UseGuards(max_seconds=10))
        first = agent.execute(start())
        clock.advance(60)
        second = agent.execute(first.with_user_message("again"))
        assert second.status() is ExecutionStatus.COMPLETED
        assert second.final_response().to_text() == "two"


class TestHookStack:
    """Reference §4.3-4.4: triggers and HookStack semantics."""

    def test_hook_exceptions_are_not_caught_by_the_stack(self) -> None:
        def boom(ctx: HookContext) -> None:
            raise ValueError("from the hook")

        stack = HookStack().with_hook(boom, "before_step")
        with pytest.raises(ValueError, match="from the hook"):
            stack.intercept(HookContext(HookTrigger.BEFORE_STEP, AgentState()))

    def test_changing_the_trigger_is_a_violation(self) -> None:
        def retarget(ctx: HookContext) -> HookContext:
            return dataclasses.replace(ctx, trigger=HookTrigger.AFTER_STEP)

        stack = HookStack().with_hook(retarget, "before_step", name="retarget")
        with pytest.raises(HookContractViolationError) as raised:
            stack.intercept(HookContext(HookTrigger.BEFORE_STEP, AgentState()))
        assert (raised.value.hook, raised.value.field, raised.value.trigger) == (
            "retarget",
            "trigger",
            "before_step",
        )


class TestToolExecution:
    """Reference §6.2: the ToolExecutor."""

    def test_a_blocked_call_runs_no_after_tool_use(
        self, make_agent: MakeAgent, start: Start
    ) -> None:
        log: list[str] = []

        def block(ctx: HookContext) -> HookContext:
            return ctx.block_tool_execution("no")

        def after(ctx: HookContext) -> None:
            log.append("after_tool_use")

        hooks = [(block, "before_tool_use", 0), (after, "after_tool_use", 0)]
        make_agent(
            ScriptedLLM([call("lookup", q="x"), reply("ok")]), [lookup], hooks=hooks
        ).execute(start())
        assert log == []

    def test_a_blocked_execution_set_by_a_hook_blocks_the_call(
        self, make_agent: MakeAgent, start: Start
    ) -> None:
        """§4.3: a context counts as blocked when its tool execution was blocked, flag or not;
        §6.2: the hook's execution is recorded and the tool does not run."""
        ran: list[str] = []

        def counted(q: str) -> str:
            ran.append(q)
            return q

        def supply_blocked(ctx: HookContext) -> HookContext:
            assert ctx.tool_call is not None
            at = ctx.state.created_at
            blocked = ToolExecution(
                tool_call=ctx.tool_call,
                content="Error in tool call: not here",
                error="not here",
                error_type="ToolBlockedError",
                blocked=True,
                started_at=at,
                completed_at=at,
            )
            return ctx.with_tool_execution(blocked)

        llm = ScriptedLLM([call("counted", q="x"), reply("ok")])
        agent = make_agent(llm, [counted], hooks=[(supply_blocked, "before_tool_use", 0)])
        (execution,) = agent.execute(start()).steps()[0].tool_executions
        assert ran == []
        assert (execution.was_blocked(), execution.error) == (True, "not here")

    def test_a_call_without_an_id_gets_one(self) -> None:
        assert ToolCall(name="lookup").id
        assert ToolCall(name="lookup").id != ToolCall(name="lookup").id
