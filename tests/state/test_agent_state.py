"""``AgentState`` as an immutable value: mutators, tagging, routing, status rules (seed 002)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import FrozenInstanceError
from typing import Any

import pytest

from agentrig import (
    AgentState,
    AgentStep,
    AgentStepType,
    ExecutionStatus,
    InferenceResponse,
    InvalidInputError,
    Message,
    Messages,
    StopReason,
    StopSignal,
    ToolCall,
    ToolExecution,
    ToolExecutions,
    ToolResult,
    TraceMode,
    Usage,
    message_tags,
    runtime_context,
)
from agentrig.fakes import FakeClock, SeededIds


@pytest.fixture(autouse=True)
def _deterministic(clock: FakeClock, ids: SeededIds) -> Iterator[None]:
    with runtime_context(clock=clock, ids=ids):
        yield


def final_step(text: str = "done", usage: Usage | None = None) -> AgentStep:
    return AgentStep(
        inference_response=InferenceResponse(content=text, usage=usage or Usage()),
        output_messages=Messages.of(Message.assistant(text)),
    )


def tool_step(error: str | None = None, usage: Usage | None = None) -> AgentStep:
    call = ToolCall(name="lookup", arguments={"q": "x"})
    execution = ToolExecution(
        tool_call=call,
        value=None if error else "found",
        content=f"Error in tool call: {error}" if error else "found",
        error=error,
        started_at=Message.user("t").created_at,
        completed_at=Message.user("t").created_at,
    )
    result = ToolResult(content=execution.content, call_id=call.id, tool_name="lookup")
    return AgentStep(
        inference_response=InferenceResponse(tool_calls=(call,), usage=usage or Usage()),
        output_messages=Messages.of(Message.assistant("", [call]), Message.tool(result)),
        tool_executions=ToolExecutions([execution]),
    )


def signal(reason: StopReason, message: str = "") -> StopSignal:
    return StopSignal(reason=reason, message=message)


class TestBetweenExecutions:
    def test_a_new_state_has_no_execution(self) -> None:
        state = AgentState()
        assert state.execution is None
        assert state.status() is None
        assert state.execution_id() is None
        assert state.step_count() == 0
        assert state.should_stop()
        assert state.usage().is_zero()
        assert state.has_errors() is None
        assert state.execution_count == 0
        assert state.updated_at == state.created_at

    def test_empty_factory(self) -> None:
        assert AgentState.empty(agent_id="a1").agent_id == "a1"

    def test_for_next_execution_keeps_the_session(self) -> None:
        state = (
            AgentState()
            .with_user_message("hi")
            .with_execution_status(ExecutionStatus.IN_PROGRESS)
            .with_current_step(tool_step())
            .with_execution_completed()
            .with_execution_count(1)
        )
        assert state.store().messages_of("execution_buffer")
        nxt = state.for_next_execution()
        assert nxt.execution is None
        assert nxt.status() is None
        assert nxt.messages() == state.messages()
        assert not nxt.store().messages_of("execution_buffer")
        assert (nxt.agent_id, nxt.execution_count) == (state.agent_id, 1)


class TestMutators:
    def test_mutators_return_new_states(self) -> None:
        state = AgentState()
        changed = state.with_user_message("hi")
        assert state.messages() == Messages()
        assert changed.messages().to_text() == "hi"

    def test_mutators_bump_updated_at(self, clock: FakeClock) -> None:
        state = AgentState()
        clock.advance(5)
        changed = state.with_metadata("k", 1)
        assert (changed.updated_at - state.created_at).total_seconds() == 5
        assert changed.created_at == state.created_at

    def test_context_mutators(self) -> None:
        state = (
            AgentState()
            .with_system_prompt("be brief")
            .with_metadata("user", "ann")
            .with_response_format({"type": "json_object"})
            .with_user_message(Message.user("q"))
        )
        assert state.system_prompt() == "be brief"
        assert state.metadata() == {"user": "ann"}
        assert state.context.response_format == {"type": "json_object"}
        assert state.messages().roles() == (Message.user("x").role,)

    def test_system_prompt_is_not_a_message(self) -> None:
        state = AgentState().with_system_prompt("be brief")
        assert state.messages_for_inference() == Messages()

    def test_with_messages_replaces_the_messages_section(self) -> None:
        state = AgentState().with_user_message("a").with_messages(Messages.from_text("b"))
        assert state.messages().to_text() == "b"

    def test_execution_mutators_create_an_in_progress_execution(self) -> None:
        state = AgentState().with_stop_signal(signal(StopReason.COMPLETED))
        assert state.status() is ExecutionStatus.IN_PROGRESS
        assert state.continuation().stop_signals.has_any()


class TestEnsureExecutionGotcha:
    def test_separate_calls_on_an_execution_less_state_give_different_ids(self) -> None:
        state = AgentState()
        with_signal = state.with_stop_signal(signal(StopReason.COMPLETED))
        with_step = state.with_current_step(final_step())
        assert with_signal.execution_id() != with_step.execution_id()

    def test_chained_calls_share_one_execution(self) -> None:
        state = (
            AgentState()
            .with_current_step(final_step())
            .with_stop_signal(signal(StopReason.COMPLETED))
        )
        assert state.current_step() is not None
        assert state.continuation().stop_signals.has_any()

    def test_ids_are_deterministic_under_seeded_ids(self) -> None:
        def two_execution_ids() -> tuple[str | None, str | None]:
            with runtime_context(ids=SeededIds(7), clock=FakeClock()):
                state = AgentState()
                first = state.with_stop_signal(signal(StopReason.COMPLETED)).execution_id()
                second = state.with_execution_continued().execution_id()
            return first, second

        first_run, second_run = two_execution_ids(), two_execution_ids()
        assert first_run == second_run
        assert first_run[0] != first_run[1]


class TestTaggingAndRouting:
    def test_trace_steps_are_tagged_and_go_to_the_execution_buffer(self) -> None:
        state = AgentState().with_user_message("q").with_current_step(tool_step())
        step = state.current_step()
        assert step is not None
        buffer = state.store().messages_of("execution_buffer")
        assert len(buffer) == 2
        assert state.messages().to_text() == "q"
        for message in buffer:
            assert message.metadata == {
                "step_id": step.id,
                "execution_id": state.execution_id(),
                "agent_id": state.agent_id,
                "is_trace": True,
            }
        assert step.output_messages == buffer

    def test_final_steps_have_no_is_trace_key(self) -> None:
        state = AgentState().with_current_step(final_step("answer"))
        (message,) = state.messages()
        assert "is_trace" not in message.metadata
        assert message.metadata["step_id"] == state.current_step().id  # type: ignore[union-attr]
        assert not state.store().messages_of("execution_buffer")

    def test_error_steps_are_traces(self) -> None:
        state = AgentState().with_current_step(tool_step(error="boom"))
        assert state.current_step().step_type() is AgentStepType.ERROR  # type: ignore[union-attr]
        assert all(m.is_trace for m in state.store().messages_of("execution_buffer"))

    def test_inline_mode_puts_traces_in_messages(self) -> None:
        state = AgentState().with_current_step(tool_step(), trace_mode=TraceMode.INLINE)
        assert len(state.messages()) == 2
        assert all(m.is_trace for m in state.messages())
        assert not state.store().messages_of("execution_buffer")

    def test_tagging_keeps_message_ids(self) -> None:
        step = final_step()
        state = AgentState().with_current_step(step)
        assert state.messages()[0].id == step.output_messages[0].id

    @pytest.mark.parametrize("make_step", [tool_step, final_step], ids=["trace", "final"])
    def test_pre_tagged_messages_are_kept_as_they_are(self, make_step: Any) -> None:
        # A driver may build its messages already tagged (message_tags); the state then keeps
        # them, and the result equals tagging by the state.
        state = AgentState().with_step_started()
        step = make_step()
        tagged_by_state = state.with_current_step(step)
        is_trace = step.step_type() is not AgentStepType.FINAL_RESPONSE
        tags = message_tags(step.id, state.execution_id(), state.agent_id, is_trace)  # type: ignore[arg-type]
        pre_tagged = step.evolve(
            output_messages=Messages(m.with_metadata(**tags) for m in step.output_messages)
        )
        kept = state.with_current_step(pre_tagged)
        assert kept.store() == tagged_by_state.store()
        assert kept.current_step() == tagged_by_state.current_step()
        assert kept.current_step().output_messages[0] is pre_tagged.output_messages[0]  # type: ignore[union-attr]

    @pytest.mark.parametrize(
        "wrong",
        [
            {"step_id": "another step"},
            {"execution_id": "another execution"},
            {"agent_id": "another agent"},
            {"is_trace": "yes"},
        ],
    )
    def test_wrong_or_partial_tags_are_replaced(self, wrong: dict[str, Any]) -> None:
        state = AgentState().with_step_started()
        step = tool_step()
        tags = {**message_tags(step.id, state.execution_id(), state.agent_id, True), **wrong}  # type: ignore[arg-type]
        mistagged = step.evolve(
            output_messages=Messages(m.with_metadata(**tags) for m in step.output_messages)
        )
        state = state.with_current_step(mistagged)
        for message in state.store().messages_of("execution_buffer"):
            assert message.metadata == {
                "step_id": step.id,
                "execution_id": state.execution_id(),
                "agent_id": state.agent_id,
                "is_trace": True,
            }

    def test_a_step_without_output_leaves_the_context_alone(self) -> None:
        state = AgentState()
        changed = state.with_current_step(AgentStep())
        assert changed.context is state.context

    def test_messages_for_inference_order(self) -> None:
        state = AgentState().with_user_message("conversation")
        store = state.store()
        store = store.section("execution_buffer").append(Message.assistant("trace"))
        store = store.section("buffer").append(Message.user("buffered"))
        store = store.section("summary").append(Message.system("summary"))
        state = state.with_message_store(store)
        assert state.messages_for_inference().to_text() == "summary\nbuffered\nconversation\ntrace"

    def test_buffer_cleared(self) -> None:
        state = AgentState().with_current_step(tool_step())
        cleared = state.with_execution_buffer_cleared()
        assert not cleared.store().messages_of("execution_buffer")
        assert cleared.with_execution_buffer_cleared() is cleared


class TestSteps:
    def test_completing_a_step_archives_it(self) -> None:
        state = AgentState().with_step_started().with_current_step(tool_step())
        done = state.with_current_step_completed()
        assert done.current_step() is None
        assert done.step_count() == 1
        assert done.last_step() == state.current_step()
        assert done.last_step_type() is AgentStepType.TOOL_EXECUTION
        record = done.last_step_execution()
        assert record is not None
        assert record.id == record.step.id

    def test_completing_without_a_step_is_a_no_op(self) -> None:
        state = AgentState()
        assert state.with_current_step_completed() is state

    def test_step_count_includes_the_step_in_progress(self) -> None:
        state = AgentState().with_current_step(tool_step()).with_current_step_completed()
        assert state.with_current_step(final_step()).step_count() == 2

    def test_usage_sums_completed_and_current_steps(self) -> None:
        state = (
            AgentState()
            .with_current_step(tool_step(usage=Usage(input_tokens=3, output_tokens=1)))
            .with_current_step_completed()
            .with_current_step(final_step(usage=Usage(input_tokens=5, cost=0.5)))
        )
        assert state.usage() == Usage(input_tokens=8, output_tokens=1, cost=0.5)

    def test_continuation_request_is_reset_on_archive_but_signals_stay(self) -> None:
        state = (
            AgentState()
            .with_current_step(tool_step())
            .with_stop_signal(signal(StopReason.STOP_REQUESTED))
            .with_execution_continued()
        )
        assert not state.should_stop()
        done = state.with_current_step_completed()
        assert not done.continuation().is_continuation_requested
        assert done.continuation().stop_signals.has_any()
        assert done.should_stop()

    def test_should_stop_continues_while_tools_are_called(self) -> None:
        assert not AgentState().with_current_step(tool_step()).should_stop()
        assert AgentState().with_current_step(final_step()).should_stop()

    def test_final_and_current_response(self) -> None:
        final = AgentState().with_current_step(final_step("the answer"))
        assert final.has_final_response()
        assert final.final_response().to_text() == "the answer"
        assert final.current_response().to_text() == "the answer"
        tools = AgentState().with_current_step(tool_step())
        assert not tools.has_final_response()
        assert tools.final_response() == Messages()
        assert tools.current_response().to_text() == "found"

    def test_blank_text_is_not_a_final_response(self) -> None:
        assert not AgentState().with_current_step(final_step("   ")).has_final_response()


class TestStatusRules:
    def completed(self, *signals: StopSignal, step: AgentStep | None = None) -> AgentState:
        state = AgentState().with_current_step(step or final_step())
        for each in signals:
            state = state.with_stop_signal(each)
        return state.with_execution_completed()

    def test_no_signal_completes(self) -> None:
        assert self.completed().status() is ExecutionStatus.COMPLETED

    def test_forced_stop_stops(self) -> None:
        state = self.completed(signal(StopReason.COMPLETED), signal(StopReason.STEPS_LIMIT))
        assert state.status() is ExecutionStatus.STOPPED
        assert state.last_stop_reason() is StopReason.STEPS_LIMIT

    def test_finish_reason_is_a_natural_ending(self) -> None:
        assert self.completed(signal(StopReason.FINISH_REASON)).status() is (
            ExecutionStatus.COMPLETED
        )

    def test_a_tool_error_anywhere_fails(self) -> None:
        state = AgentState().with_current_step(tool_step(error="boom"))
        state = state.with_current_step_completed().with_current_step(final_step())
        assert state.with_execution_completed().status() is ExecutionStatus.FAILED

    def test_completion_archives_the_current_step_and_stamps_completion(
        self, clock: FakeClock
    ) -> None:
        state = AgentState().with_current_step(final_step())
        clock.advance(2)
        done = state.with_execution_completed()
        assert done.current_step() is None
        assert done.step_count() == 1
        assert done.execution is not None
        assert done.execution.completed_at == clock.now()
        assert done.execution_duration() == 2

    def test_failure_records_the_error_and_keeps_earlier_signals(self) -> None:
        state = (
            AgentState()
            .with_current_step(tool_step())
            .with_stop_signal(signal(StopReason.STEPS_LIMIT))
            .with_failure(RuntimeError("kaput"))
        )
        assert state.status() is ExecutionStatus.FAILED
        assert state.current_step() is None
        assert [str(error) for error in state.errors()] == ["RuntimeError: kaput"]
        reasons = [s.reason for s in state.continuation().stop_signals]
        assert reasons == [StopReason.STEPS_LIMIT, StopReason.ERROR]
        assert state.last_stop_reason() is StopReason.ERROR
        assert state.with_execution_completed().status() is ExecutionStatus.FAILED

    def test_failure_without_a_step_is_recorded_on_the_execution(self) -> None:
        state = AgentState().with_failure(ValueError("bad"))
        assert state.step_count() == 0
        assert state.has_errors() is True
        assert [e.type for e in state.errors()] == ["ValueError"]

    def test_the_repr_of_a_failed_state_says_why(self) -> None:
        state = AgentState().with_current_step(tool_step(error="boom"))
        state = state.with_current_step_completed().with_current_step(final_step())
        failed = repr(state.with_execution_completed())
        assert failed.endswith("status=failed, steps=2, messages=1, error='boom')")
        twice = (
            AgentState()
            .with_current_step(tool_step(error="boom"))
            .with_failure(RuntimeError("kaput"))
        )
        assert "stop_reason=error, error='boom' (and 1 more))" in repr(twice)
        assert "error=" not in repr(self.completed())

    def test_stop_signal_prefers_the_last_step_on_a_tie(self) -> None:
        step_signal = signal(StopReason.STEPS_LIMIT, "from the step")
        state = (
            AgentState()
            .with_current_step(tool_step())
            .with_stop_signal(step_signal)
            .with_current_step_completed()
        )
        assert state.stop_signal() == step_signal
        later = state.with_stop_signal(signal(StopReason.ERROR, "later"))
        assert later.stop_signal() == signal(StopReason.ERROR, "later")


def test_debug_summary() -> None:
    state = AgentState().with_current_step(final_step()).with_execution_completed()
    debug = state.debug()
    assert set(debug) == {
        "status",
        "execution_count",
        "has_execution",
        "execution_id",
        "steps",
        "continuation",
        "has_errors",
        "errors",
        "usage",
    }
    assert debug["status"] is ExecutionStatus.COMPLETED
    assert debug["continuation"] == "No Stop Signals; Continuation Requested: No"
    assert debug["usage"]["total"] == 0


def test_states_are_frozen() -> None:
    with pytest.raises(FrozenInstanceError):
        AgentState().execution_count = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda s: s.with_user_message(5), "message"),
        (lambda s: s.with_messages("not messages"), "messages"),
        (lambda s: s.with_message_store("not a store"), "store"),
        (lambda s: s.with_execution_status("sleeping"), "status"),
        (lambda s: s.with_stop_signal("stop!"), "signal"),
        (lambda s: s.with_current_step("a step"), "step"),
        (lambda s: s.with_system_prompt(5), "system_prompt"),
        (lambda s: s.with_metadata("k", object()), "metadata"),
        (lambda s: s.with_response_format("json"), "response_format"),
        (lambda s: s.with_llm_config("gpt"), "llm_config"),
        (lambda s: s.with_execution_count(-1), "execution_count"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_mutators_reject_bad_input_naming_the_field(mutate: Any, field: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        mutate(AgentState())
    assert raised.value.field == field
