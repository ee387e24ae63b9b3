"""Hooks: triggers, ordering, contracts, blocking (DESIGN D6)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

import pytest

from agentrig import (
    AgentState,
    AgentStepType,
    AgentStop,
    ConfigurationError,
    EventBus,
    ExecutionStatus,
    HookContext,
    HookContractViolationError,
    HookExecuted,
    HookStack,
    HookTrigger,
    InferenceRequest,
    InvalidInputError,
    StepError,
    StopReason,
    ToolCall,
    ToolCallBlocked,
)
from agentrig.fakes import ScriptedLLM, call, reply

ALL = tuple(HookTrigger)


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def recorder(log: list[str], label: str) -> Callable[[HookContext], None]:
    def hook(context: HookContext) -> None:
        log.append(label)

    return hook


def context(trigger: HookTrigger = HookTrigger.BEFORE_STEP) -> HookContext:
    return HookContext(trigger, AgentState())


class TestHookStack:
    def test_runs_by_descending_priority(self) -> None:
        log: list[str] = []
        stack = (
            HookStack()
            .with_hook(recorder(log, "low"), HookTrigger.BEFORE_STEP, priority=-5)
            .with_hook(recorder(log, "high"), HookTrigger.BEFORE_STEP, priority=100)
            .with_hook(recorder(log, "mid"), HookTrigger.BEFORE_STEP, priority=0)
        )
        stack.intercept(context())
        assert log == ["high", "mid", "low"]

    def test_ties_keep_registration_order(self) -> None:
        log: list[str] = []
        stack = HookStack()
        for label in ("a", "b", "c", "d"):
            stack = stack.with_hook(recorder(log, label), HookTrigger.BEFORE_STEP, priority=7)
        stack = stack.with_hook(recorder(log, "first"), HookTrigger.BEFORE_STEP, priority=8)
        stack.intercept(context())
        assert log == ["first", "a", "b", "c", "d"]

    def test_only_hooks_for_the_trigger_run(self) -> None:
        log: list[str] = []
        stack = HookStack().with_hook(recorder(log, "x"), [HookTrigger.AFTER_STEP, "on_stop"])
        stack.intercept(context(HookTrigger.BEFORE_STEP))
        assert log == []
        stack.intercept(context(HookTrigger.ON_STOP))
        assert log == ["x"]
        assert [h.name for h in stack.hooks_for(HookTrigger.AFTER_STEP)] == ["hook"]

    def test_with_hook_returns_a_new_stack(self) -> None:
        stack = HookStack()
        bigger = stack.with_hook(recorder([], "x"), HookTrigger.BEFORE_STEP)
        assert (len(stack), len(bigger)) == (0, 1)

    def test_returning_none_leaves_the_context_unchanged(self) -> None:
        original = context()
        stack = HookStack().with_hook(lambda ctx: None, HookTrigger.BEFORE_STEP)
        assert stack.intercept(original) is original

    def test_each_hook_sees_the_previous_output(self) -> None:
        def set_a(ctx: HookContext) -> HookContext:
            return ctx.with_state(ctx.state.with_metadata("a", 1))

        def read_a(ctx: HookContext) -> HookContext:
            return ctx.with_metadata_entry("saw_a", ctx.state.metadata().get("a"))

        stack = (
            HookStack()
            .with_hook(set_a, HookTrigger.BEFORE_STEP, priority=1)
            .with_hook(read_a, HookTrigger.BEFORE_STEP)
        )
        assert stack.intercept(context()).metadata == {"saw_a": 1}

    def test_changing_a_forbidden_field_raises(self) -> None:
        def sneaky(ctx: HookContext) -> HookContext:
            return ctx.with_tool_call(ToolCall(name="x"))

        stack = HookStack().with_hook(sneaky, HookTrigger.BEFORE_STEP, name="sneaky")
        with pytest.raises(HookContractViolationError) as raised:
            stack.intercept(context())
        error = raised.value
        assert (error.hook, error.field, error.trigger) == ("sneaky", "tool_call", "before_step")
        assert "may change only: state, metadata" in str(error)

    def test_allowed_fields_per_trigger(self) -> None:
        request = InferenceRequest()

        def swap_request(ctx: HookContext) -> HookContext:
            return ctx.with_inference_request(request)

        allowed = HookStack().with_hook(swap_request, HookTrigger.BEFORE_INFERENCE_REQUEST)
        ctx = context(HookTrigger.BEFORE_INFERENCE_REQUEST)
        assert allowed.intercept(ctx).inference_request is request
        forbidden = HookStack().with_hook(swap_request, HookTrigger.AFTER_INFERENCE_RESPONSE)
        with pytest.raises(HookContractViolationError):
            forbidden.intercept(context(HookTrigger.AFTER_INFERENCE_RESPONSE))

    def test_an_equal_replacement_is_not_a_violation(self) -> None:
        def same_trigger(ctx: HookContext) -> HookContext:
            return HookContext(HookTrigger.BEFORE_STEP, ctx.state)

        stack = HookStack().with_hook(same_trigger, HookTrigger.BEFORE_STEP)
        stack.intercept(context())

    def test_returning_something_else_is_a_type_error(self) -> None:
        stack = HookStack().with_hook(lambda ctx: "oops", HookTrigger.BEFORE_STEP, name="bad")
        with pytest.raises(TypeError, match="bad"):
            stack.intercept(context())

    def test_reports_each_hook_run(self) -> None:
        events = EventBus()
        seen: list[HookExecuted] = []
        events.subscribe(HookExecuted, seen.append)
        stack = HookStack().with_hook(lambda ctx: None, "before_step", name="n").with_events(events)
        stack.intercept(context())
        assert [(e.trigger, e.hook_name) for e in seen] == [("before_step", "n")]


class TestTriggersInTheLoop:
    def run_recording(self, make_agent, start, script: list) -> tuple[list[str], AgentState]:
        log: list[str] = []

        def record(ctx: HookContext) -> None:
            log.append(ctx.trigger.value)

        agent = make_agent(ScriptedLLM(script), [lookup], hooks=[(record, ALL, 0)])
        return log, agent.execute(start())

    def test_two_step_run_with_a_tool(self, make_agent, start) -> None:
        log, final = self.run_recording(make_agent, start, [call("lookup", q="x"), reply("ok")])
        assert final.status() is ExecutionStatus.COMPLETED
        assert log == [
            "before_execution",
            "before_step",
            "before_inference_request",
            "after_inference_response",
            "before_tool_use",
            "after_tool_use",
            "after_step",
            "before_step",
            "before_inference_request",
            "after_inference_response",
            "after_step",
            "on_stop",
            "after_execution",
        ]

    def test_on_error_fires_when_a_step_raises(self, make_agent, start) -> None:
        log, final = self.run_recording(make_agent, start, [])
        assert final.status() is ExecutionStatus.FAILED
        assert log == [
            "before_execution",
            "before_step",
            "before_inference_request",
            "on_error",
            "after_step",
            "on_stop",
            "after_execution",
        ]

    def test_after_execution_hooks_see_a_non_terminal_status(self, make_agent, start) -> None:
        seen: list[ExecutionStatus | None] = []

        def spy(ctx: HookContext) -> None:
            seen.append(ctx.state.status())

        agent = make_agent(ScriptedLLM(["hi"]), hooks=[(spy, "after_execution", 0)])
        assert agent.execute(start()).status() is ExecutionStatus.COMPLETED
        assert seen == [ExecutionStatus.IN_PROGRESS]

    def test_state_changes_by_hooks_are_kept(self, make_agent, start) -> None:
        def tag(ctx: HookContext) -> HookContext:
            return ctx.with_state(ctx.state.with_metadata("seen_steps", ctx.state.step_count()))

        agent = make_agent(ScriptedLLM(["hi"]), hooks=[(tag, "after_step", 0)])
        assert agent.execute(start()).metadata() == {"seen_steps": 1}


class TestContractViolationInTheLoop:
    @pytest.mark.parametrize("trigger", ["before_execution", "before_step", "after_step"])
    def test_becomes_a_failed_execution(self, make_agent, start, trigger: str) -> None:
        def sneaky(ctx: HookContext) -> HookContext:
            return ctx.with_inference_request(InferenceRequest())

        agent = make_agent(ScriptedLLM(["hi"]), hooks=[(sneaky, trigger, 0)])
        final = agent.execute(start())
        assert final.status() is ExecutionStatus.FAILED
        assert final.last_stop_reason() is StopReason.ERROR
        assert [e.type for e in final.errors()] == ["HookContractViolationError"]
        assert "inference_request" in final.errors()[0].message


class TestBlockingToolUse:
    def test_the_model_sees_the_error_and_the_loop_goes_on(self, make_agent, start) -> None:
        def block(ctx: HookContext) -> HookContext:
            return ctx.block_tool_execution("lookups are disabled")

        calls_made: list[str] = []

        def guarded(q: str) -> str:
            calls_made.append(q)
            return q

        llm = ScriptedLLM([call("guarded", q="x"), reply("I could not look it up.")])
        agent = make_agent(llm, [guarded], hooks=[(block, "before_tool_use", 0)])
        final = agent.execute(start())
        assert calls_made == []
        step = final.steps()[0]
        assert step.step_type() is AgentStepType.ERROR
        (execution,) = step.tool_executions
        assert execution.was_blocked()
        assert execution.error_type == "ToolBlockedError"
        tool_message = llm.requests[1].messages[-1]
        assert tool_message.content == "Error in tool call: lookups are disabled"
        assert tool_message.tool_result is not None
        assert tool_message.tool_result.is_error
        assert final.step_count() == 2
        assert final.status() is ExecutionStatus.FAILED

    def test_default_block_message_names_the_call(self, make_agent, start) -> None:
        def block(ctx: HookContext) -> HookContext:
            return ctx.block_tool_execution()

        llm = ScriptedLLM([call("lookup", q="x"), reply("ok")])
        agent = make_agent(llm, [lookup], hooks=[(block, "before_tool_use", 0)])
        execution = agent.execute(start()).steps()[0].tool_executions[0]
        assert execution.error is not None
        assert "lookup(q='x')" in execution.error

    def test_before_tool_use_may_rewrite_the_call(self, make_agent, start) -> None:
        def rewrite(ctx: HookContext) -> HookContext:
            assert ctx.tool_call is not None
            return ctx.with_tool_call(ctx.tool_call.evolve(arguments={"q": "rewritten"}))

        llm = ScriptedLLM([call("lookup", q="x"), reply("ok")])
        agent = make_agent(llm, [lookup], hooks=[(rewrite, "before_tool_use", 0)])
        execution = agent.execute(start()).steps()[0].tool_executions[0]
        assert execution.value == "found rewritten"

    def test_after_tool_use_may_replace_the_execution(self, make_agent, start) -> None:
        def redact(ctx: HookContext) -> HookContext:
            assert ctx.tool_execution is not None
            return ctx.with_tool_execution(ctx.tool_execution.evolve(content="[redacted]"))

        llm = ScriptedLLM([call("lookup", q="secret"), reply("ok")])
        agent = make_agent(llm, [lookup], hooks=[(redact, "after_tool_use", 0)])
        agent.execute(start())
        assert llm.requests[1].messages[-1].content == "[redacted]"


@pytest.mark.parametrize("trigger", ["before_execution", "before_step", "after_step"])
def test_agent_stop_raised_by_a_hook_stops(make_agent, start, trigger: str) -> None:
    def stop(ctx: HookContext) -> None:
        raise AgentStop("hook says stop", source="my-hook")

    agent = make_agent(ScriptedLLM(["hi", "again"]), hooks=[(stop, trigger, 0)])
    final = agent.execute(start())
    assert final.status() is ExecutionStatus.STOPPED
    signal = final.stop_signal()
    assert signal is not None
    assert (signal.reason, signal.message, signal.source) == (
        StopReason.STOP_REQUESTED,
        "hook says stop",
        "my-hook",
    )
    assert final.step_count() == (1 if trigger == "after_step" else 0)


def test_a_failing_on_error_hook_is_recorded_too(make_agent, start) -> None:
    def broken_handler(ctx: HookContext) -> None:
        raise RuntimeError("handler broke")

    agent = make_agent(ScriptedLLM([]), hooks=[(broken_handler, "on_error", 0)])
    final = agent.execute(start())
    assert final.status() is ExecutionStatus.FAILED
    assert [e.type for e in final.errors()] == ["ScriptExhaustedError", "RuntimeError"]


def test_on_error_hooks_see_the_errors(make_agent, start) -> None:
    seen: list[tuple[str, ...]] = []

    def handler(ctx: HookContext) -> None:
        seen.append(tuple(e.type for e in ctx.errors))

    make_agent(ScriptedLLM([]), hooks=[(handler, "on_error", 0)]).execute(start())
    assert seen == [("ScriptExhaustedError",)]


def test_errors_an_on_error_hook_adds_are_recorded(make_agent, start) -> None:
    def annotate(ctx: HookContext) -> HookContext:
        return ctx.with_error(StepError(message="the model was unreachable", type="Diagnosis"))

    agent = make_agent(ScriptedLLM([]), hooks=[(annotate, "on_error", 0)])
    final = agent.execute(start())
    assert final.status() is ExecutionStatus.FAILED
    assert [(e.type, e.message) for e in final.errors()][1:] == [
        ("Diagnosis", "the model was unreachable")
    ]
    assert AgentState.from_json(final.to_json()) == final


def test_an_on_error_hook_that_only_reads_the_errors_adds_none(make_agent, start) -> None:
    def reread(ctx: HookContext) -> HookContext:
        return dataclasses.replace(ctx, errors=tuple(reversed(ctx.errors)))

    agent = make_agent(ScriptedLLM([]), hooks=[(reread, "on_error", 0)])
    assert [e.type for e in agent.execute(start()).errors()] == ["ScriptExhaustedError"]


def test_an_error_added_before_tool_use_fails_the_call_without_running_it(
    make_agent, start
) -> None:
    ran: list[str] = []

    def tracked(q: str) -> str:
        """Look something up."""
        ran.append(q)
        return q

    def veto(ctx: HookContext) -> HookContext:
        return ctx.with_error(StepError(message="quota used up", type="QuotaError"))

    events = EventBus()
    blocked: list[ToolCallBlocked] = []
    events.subscribe(ToolCallBlocked, blocked.append)
    llm = ScriptedLLM([call("tracked", q="x"), reply("ok")])
    agent = make_agent(llm, [tracked], hooks=[(veto, "before_tool_use", 0)], events=events)
    execution = agent.execute(start()).steps()[0].tool_executions[0]
    assert ran == []
    assert execution.was_blocked()
    assert execution.content == "Error in tool call: quota used up"
    assert [e.reason for e in blocked] == ["quota used up"]


def test_blocking_by_flag_alone_gives_a_default_blocked_execution(make_agent, start) -> None:
    def flag_only(ctx: HookContext) -> HookContext:
        return dataclasses.replace(ctx, is_tool_execution_blocked=True)

    llm = ScriptedLLM([call("lookup", q="x"), reply("ok")])
    agent = make_agent(llm, [lookup], hooks=[(flag_only, "before_tool_use", 0)])
    execution = agent.execute(start()).steps()[0].tool_executions[0]
    assert execution.was_blocked()
    assert execution.content.startswith("Error in tool call: Tool execution blocked")


class TestRegistrationErrors:
    def test_an_unknown_trigger_lists_the_valid_ones(self) -> None:
        with pytest.raises(InvalidInputError, match=r"before_stepp.*before_step") as raised:
            HookStack().with_hook(lambda ctx: None, "before_stepp")
        assert raised.value.field == "triggers"

    def test_an_unknown_trigger_in_a_list_is_named(self) -> None:
        with pytest.raises(InvalidInputError, match="'nope'"):
            HookStack().with_hook(lambda ctx: None, ["before_step", "nope"])

    @pytest.mark.parametrize("triggers", [[], (), set()], ids=["list", "tuple", "set"])
    def test_no_trigger_at_all_is_refused_rather_than_a_hook_that_never_runs(
        self, triggers
    ) -> None:
        with pytest.raises(InvalidInputError, match="at least one trigger") as raised:
            HookStack().with_hook(lambda ctx: None, triggers)
        assert raised.value.field == "triggers"

    def test_a_hook_that_is_not_callable_is_refused_when_added(self) -> None:
        with pytest.raises(ConfigurationError, match="not callable"):
            HookStack().with_hook(3, "before_step")  # type: ignore[arg-type]

    def test_a_priority_that_is_not_an_int_is_refused_when_added(self) -> None:
        with pytest.raises(ConfigurationError, match="priority"):
            HookStack().with_hook(lambda ctx: None, "before_step", priority="high")  # type: ignore[arg-type]


class TestWrongValuesInAllowedFields:
    def test_a_state_that_is_not_an_agent_state_is_a_type_error(self) -> None:
        stack = HookStack().with_hook(lambda ctx: ctx.with_state({}), "before_step", name="bad")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="Hook 'bad' set 'state' to dict, expected AgentState"):
            stack.intercept(context())

    def test_a_tool_execution_of_the_wrong_type_is_a_type_error(self) -> None:
        def bad(ctx: HookContext) -> HookContext:
            return ctx.with_tool_execution("done")  # type: ignore[arg-type]

        stack = HookStack().with_hook(bad, HookTrigger.AFTER_TOOL_USE)
        with pytest.raises(TypeError, match="'tool_execution' to str, expected ToolExecution"):
            stack.intercept(context(HookTrigger.AFTER_TOOL_USE))

    @pytest.mark.parametrize(
        "trigger", ["before_execution", "before_step", "after_step", "on_stop"]
    )
    def test_in_the_loop_the_execution_fails_with_the_hook_named(
        self, make_agent, start, trigger: str
    ) -> None:
        def bad(ctx: HookContext) -> HookContext:
            return ctx.with_state({})  # type: ignore[arg-type]

        agent = make_agent(ScriptedLLM([reply("ok")]), [lookup], hooks=[(bad, trigger, 0)])
        final = agent.execute(start())
        assert final.status() is ExecutionStatus.FAILED
        assert [error.message for error in final.errors()] == [
            "Hook 'bad' set 'state' to dict, expected AgentState"
        ]


def test_blocks_the_call_answers_for_each_way_a_hook_blocks() -> None:
    context = HookContext(HookTrigger.BEFORE_TOOL_USE, AgentState(), tool_call=ToolCall(name="f"))
    assert not context.blocks_the_call()
    assert context.block_tool_execution("no").blocks_the_call()
    assert dataclasses.replace(context, is_tool_execution_blocked=True).blocks_the_call()
    assert context.with_error(StepError(message="quota", type="QuotaError")).blocks_the_call()
    blocked = context.block_tool_execution("no").tool_execution
    assert blocked is not None
    assert context.with_tool_execution(blocked).blocks_the_call()


class TestStopFromAHook:
    def test_stop_is_the_short_form_of_adding_a_stop_signal(self) -> None:
        ctx = context(HookTrigger.AFTER_STEP)
        stopped = ctx.stop("completed", message="done early", source="my-hook")
        signal = stopped.state.stop_signal()
        assert signal is not None
        assert (signal.reason, signal.message, signal.source) == (
            StopReason.COMPLETED,
            "done early",
            "my-hook",
        )
        assert ctx.state.stop_signal() is None

    def test_the_default_reason_is_stop_requested(self) -> None:
        signal = context().stop(message="enough").state.stop_signal()
        assert signal is not None
        assert (signal.reason, signal.message) == (StopReason.STOP_REQUESTED, "enough")

    def test_an_unknown_reason_lists_the_valid_ones(self) -> None:
        with pytest.raises(InvalidInputError, match=r"'finished'.*stop_requested") as raised:
            context().stop("finished")
        assert raised.value.field == "reason"

    @pytest.mark.parametrize("run", ["execute", "aexecute"])
    def test_in_the_loop_the_execution_stops_with_the_reason(
        self, make_agent, start, run: str
    ) -> None:
        def stop_after_first(ctx: HookContext) -> HookContext:
            return ctx.stop(StopReason.STOP_REQUESTED, message="one step is enough")

        llm = ScriptedLLM([call("lookup", q="x"), reply("never asked")])
        agent = make_agent(llm, [lookup], hooks=[(stop_after_first, "after_step", 0)])
        state = start()
        final = agent.execute(state) if run == "execute" else asyncio.run(agent.aexecute(state))
        assert final.status() is ExecutionStatus.STOPPED
        assert final.step_count() == 1
        assert len(llm.requests) == 1
        signal = final.stop_signal()
        assert signal is not None
        assert (signal.reason, signal.message) == (StopReason.STOP_REQUESTED, "one step is enough")
