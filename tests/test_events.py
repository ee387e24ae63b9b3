"""The ``EventBus`` and the events a run emits."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from agentrig import (
    AgentEvent,
    AgentExecutionCompleted,
    AgentExecutionStarted,
    AgentExecutionStopped,
    AgentState,
    AgentStepCompleted,
    AgentStepStarted,
    AgentStop,
    ContinuationEvaluated,
    EventBus,
    EventListenerError,
    HookContext,
    HookExecuted,
    InferenceResponseReceived,
    StopSignalReceived,
    SubagentDefinition,
    TokenUsageReported,
    ToolCallBlocked,
    ToolCallCompleted,
    ToolCallEvent,
    ToolCallStarted,
    Usage,
    UseGuards,
    UseSubagents,
)
from agentrig.fakes import ScriptedLLM, call, calls, reply

AT = datetime(2026, 1, 1, tzinfo=UTC)


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def event(kind: type[AgentEvent] = HookExecuted) -> AgentEvent:
    if kind is HookExecuted:
        return HookExecuted.of(AgentState(), trigger="before_step", hook_name="h")
    return kind.of(AgentState(), message_count=0, available_tools=())


def run_and_record(make_agent, start, script: list) -> tuple[list[AgentEvent], AgentState]:
    events = EventBus()
    seen: list[AgentEvent] = []
    events.wiretap(seen.append)
    agent = make_agent(ScriptedLLM(script), [lookup], events=events)
    return seen, agent.execute(start())


class TestEventBus:
    def test_subscribe_by_type_includes_subclasses(self) -> None:
        bus = EventBus()
        everything: list[AgentEvent] = []
        only_hooks: list[HookExecuted] = []
        bus.subscribe(AgentEvent, everything.append)
        bus.subscribe(HookExecuted, only_hooks.append)
        bus.dispatch(event(HookExecuted))
        bus.dispatch(event(AgentExecutionStarted))
        assert [e.name for e in everything] == ["HookExecuted", "AgentExecutionStarted"]
        assert [e.name for e in only_hooks] == ["HookExecuted"]

    def test_unsubscribe(self) -> None:
        bus = EventBus()
        seen: list[AgentEvent] = []
        unsubscribe = bus.wiretap(seen.append)
        bus.dispatch(event())
        unsubscribe()
        bus.dispatch(event())
        assert len(seen) == 1
        assert not bus.wants(HookExecuted)

    @pytest.mark.parametrize("how", ["wiretap", "subscribe"])
    def test_an_unsubscribe_called_twice_leaves_other_registrations_alone(self, how) -> None:
        bus = EventBus()
        seen: list[AgentEvent] = []

        def register() -> Callable[[], None]:
            if how == "wiretap":
                return bus.wiretap(seen.append)
            return bus.subscribe(HookExecuted, seen.append)

        first, _second = register(), register()
        first()
        first()  # a second call (cleanup code, a finally) is a no-op
        bus.dispatch(event())
        assert len(seen) == 1

    def test_wants_reflects_listeners_here_and_in_parents(self) -> None:
        parent = EventBus()
        child = parent.child()
        assert not child.wants(HookExecuted)
        parent.subscribe(HookExecuted, lambda e: None)
        assert child.wants(HookExecuted)
        assert not child.wants(AgentExecutionStarted)

    def test_child_bus_forwards_to_the_parent(self) -> None:
        parent = EventBus()
        seen: list[AgentEvent] = []
        parent.wiretap(seen.append)
        parent.child().dispatch(event())
        assert len(seen) == 1

    def test_events_describe_their_agent(self) -> None:
        state = AgentState(agent_id="a1", parent_agent_id="p1")
        made = HookExecuted.of(state, trigger="x", hook_name="y")
        assert (made.agent_id, made.parent_agent_id, made.execution_id) == ("a1", "p1", None)
        assert made.name == "HookExecuted"


class TestRunEvents:
    def test_sequence_of_a_two_step_run(self, make_agent, start) -> None:
        script = [calls(("lookup", {"q": "x"}), usage=Usage(input_tokens=3)), reply("ok")]
        seen, final = run_and_record(make_agent, start, script)
        assert [e.name for e in seen] == [
            "AgentExecutionStarted",
            "AgentStepStarted",
            "InferenceRequestStarted",
            "InferenceResponseReceived",
            "ToolCallStarted",
            "ToolCallCompleted",
            "AgentStepCompleted",
            "TokenUsageReported",
            "ContinuationEvaluated",
            "AgentStepStarted",
            "InferenceRequestStarted",
            "InferenceResponseReceived",
            "AgentStepCompleted",
            "ContinuationEvaluated",
            "AgentExecutionStopped",
            "AgentExecutionCompleted",
        ]
        assert {e.execution_id for e in seen} == {final.execution_id()}
        assert {e.agent_id for e in seen} == {final.agent_id}

    def test_continuation_evaluations_per_step(self, make_agent, start) -> None:
        seen, _ = run_and_record(make_agent, start, [call("lookup", q="x"), reply("ok")])
        evaluations = [e for e in seen if isinstance(e, ContinuationEvaluated)]
        assert [(e.step_number, e.should_stop) for e in evaluations] == [(1, False), (2, True)]
        assert evaluations[-1].stop_reason == "completed"

    def test_step_completed_payload(self, make_agent, start) -> None:
        seen, _ = run_and_record(make_agent, start, [call("nope"), reply("ok")])
        first = next(e for e in seen if isinstance(e, AgentStepCompleted))
        assert (first.step_number, first.step_type, first.has_tool_calls) == (1, "error", True)
        assert first.error_count == 1
        assert "Tool 'nope' not found" in first.error_messages[0]
        completed = next(e for e in seen if isinstance(e, ToolCallCompleted))
        assert not completed.success

    def test_execution_completed_carries_the_terminal_status(self, make_agent, start) -> None:
        seen, _ = run_and_record(make_agent, start, [reply("the answer")])
        (done,) = [e for e in seen if isinstance(e, AgentExecutionCompleted)]
        assert (done.status, done.total_steps, done.final_response) == (
            "completed",
            1,
            "the answer",
        )

    def test_no_usage_report_for_zero_usage(self, make_agent, start) -> None:
        seen, _ = run_and_record(make_agent, start, [reply("ok")])
        assert not any(isinstance(e, TokenUsageReported) for e in seen)

    def test_failure_path(self, make_agent, start) -> None:
        seen, final = run_and_record(make_agent, start, [])
        assert [e.name for e in seen] == [
            "AgentExecutionStarted",
            "AgentStepStarted",
            "InferenceRequestStarted",
            "AgentExecutionFailed",
            "ContinuationEvaluated",
            "AgentExecutionStopped",
            "AgentExecutionCompleted",
        ]
        assert seen[-1].status == "failed"  # type: ignore[attr-defined]
        failed = seen[3]
        assert failed.error_type == "ScriptExhaustedError"  # type: ignore[attr-defined]
        assert final.status() == "failed"


def test_agent_stop_is_reported(make_agent, start) -> None:
    def halt() -> str:
        raise AgentStop("enough", source="tool:halt")

    events = EventBus()
    received: list[StopSignalReceived] = []
    events.subscribe(StopSignalReceived, received.append)
    make_agent(ScriptedLLM([call("halt")]), [halt], events=events).execute(start())
    assert [(e.reason, e.message, e.source) for e in received] == [
        ("stop_requested", "enough", "tool:halt")
    ]


def test_stop_events_carry_the_signal_context(make_agent, start) -> None:
    def halt() -> str:
        raise AgentStop("enough", source="tool:halt", context={"ticket": 7})

    events = EventBus()
    seen: list[AgentEvent] = []
    events.wiretap(seen.append)
    make_agent(ScriptedLLM([call("halt")]), [halt], events=events).execute(start())
    received = [e for e in seen if isinstance(e, StopSignalReceived)]
    stopped = [e for e in seen if isinstance(e, AgentExecutionStopped)]
    assert [e.context for e in received] == [{"ticket": 7}]
    assert [(e.stop_reason, e.stop_context) for e in stopped] == [("stop_requested", {"ticket": 7})]


def test_a_guard_stop_names_its_limit_in_the_stopped_event(make_agent, start) -> None:
    events = EventBus()
    stopped: list[AgentExecutionStopped] = []
    events.subscribe(AgentExecutionStopped, stopped.append)
    llm = ScriptedLLM([call("lookup", q="a"), call("lookup", q="b"), reply("done")])
    make_agent(llm, [lookup], UseGuards(max_steps=1), events=events).execute(start())
    assert [e.stop_reason for e in stopped] == ["steps_limit"]
    assert stopped[0].stop_context == {"current_steps": 1, "max_steps": 1}


def test_blocked_tool_calls_are_reported(make_agent, start) -> None:
    events = EventBus()
    seen: list[AgentEvent] = []
    events.wiretap(seen.append)

    def block(ctx: HookContext) -> HookContext:
        return ctx.block_tool_execution("not today")

    llm = ScriptedLLM([call("lookup", q="x"), reply("ok")])
    make_agent(llm, [lookup], hooks=[(block, "before_tool_use", 0)], events=events).execute(start())
    blocked = [e for e in seen if isinstance(e, ToolCallBlocked)]
    assert [(e.tool, e.args, e.reason) for e in blocked] == [("lookup", {"q": "x"}, "not today")]
    assert not any(isinstance(e, ToolCallStarted | ToolCallCompleted) for e in seen)


def test_a_subscriber_to_tool_call_events_hears_every_kind(make_agent, start) -> None:
    events = EventBus()
    heard: list[ToolCallEvent] = []
    events.subscribe(ToolCallEvent, heard.append)

    def block_second(ctx: HookContext) -> HookContext:
        call = ctx.tool_call
        return ctx.block_tool_execution("no") if call and call.arguments["q"] == "b" else ctx

    llm = ScriptedLLM([calls(("lookup", {"q": "a"}), ("lookup", {"q": "b"})), reply("ok")])
    hooks = [(block_second, "before_tool_use", 0)]
    make_agent(llm, [lookup], hooks=hooks, events=events).execute(start())
    assert [(type(e).__name__, e.step_number, e.tool) for e in heard] == [
        ("ToolCallStarted", 1, "lookup"),
        ("ToolCallCompleted", 1, "lookup"),
        ("ToolCallBlocked", 1, "lookup"),
    ]
    completed = heard[1]
    assert isinstance(completed, ToolCallCompleted)
    assert (completed.success, completed.error, completed.error_type) == (True, None, None)


def test_a_failed_call_says_its_kind_of_error(make_agent, start) -> None:
    events = EventBus()
    done: list[ToolCallCompleted] = []
    events.subscribe(ToolCallCompleted, done.append)

    def broken(q: str) -> str:
        """Always fails."""
        raise LookupError(f"no {q}")

    llm = ScriptedLLM([call("broken", q="x"), reply("ok")])
    make_agent(llm, [broken], events=events).execute(start())
    [completed] = done
    assert (completed.success, completed.error_type) == (False, "LookupError")
    assert "no x" in (completed.error or "")


class TestListenerErrors:
    """A listener's error leaves the run as ``EventListenerError``, wherever it is dispatched."""

    @pytest.mark.parametrize(
        "kind",
        [
            AgentExecutionStarted,
            AgentStepStarted,
            InferenceResponseReceived,
            ToolCallStarted,
            ToolCallCompleted,
            AgentStepCompleted,
            ContinuationEvaluated,
            AgentExecutionCompleted,
            HookExecuted,
        ],
        ids=lambda kind: kind.__name__,
    )
    def test_it_propagates_from_every_event(self, make_agent, start, kind) -> None:
        events = EventBus()
        broken = ValueError("listener bug")

        def listener(event: AgentEvent) -> None:
            raise broken

        events.subscribe(kind, listener)
        agent = make_agent(
            ScriptedLLM([call("lookup", q="a"), "done"]),
            [lookup],
            events=events,
            hooks=[(lambda ctx: None, "before_step", 0)],
        )
        with pytest.raises(EventListenerError) as raised:
            agent.execute(start())
        assert raised.value.event == kind.__name__
        assert raised.value.error is broken
        assert raised.value.__cause__ is broken
        assert "listener" in raised.value.listener
        assert f"raised ValueError on {kind.__name__}: listener bug" in str(raised.value)

    def test_an_assertion_in_a_test_listener_is_not_turned_into_a_failed_run(
        self, make_agent, start
    ) -> None:
        events = EventBus()

        def expect_one_step(event: AgentStepStarted) -> None:
            assert event.step_number == 1, f"step {event.step_number}"

        events.subscribe(AgentStepStarted, expect_one_step)
        agent = make_agent(ScriptedLLM([call("lookup", q="a"), "done"]), [lookup], events=events)
        with pytest.raises(EventListenerError) as raised:
            agent.execute(start())
        assert isinstance(raised.value.error, AssertionError)
        assert "step 2" in str(raised.value)

    def test_a_parent_listener_failing_on_a_subagent_event_stops_the_parent(
        self, make_agent, start
    ) -> None:
        events = EventBus()

        def listener(event: AgentStepStarted) -> None:
            if event.parent_agent_id is not None:
                raise RuntimeError("cannot handle child events")

        events.subscribe(AgentStepStarted, listener)
        child = ScriptedLLM(["child answer"])
        parent = ScriptedLLM(
            [calls(("spawn_subagent", {"subagent": "helper", "prompt": "go"})), "done"]
        )
        definition = SubagentDefinition(name="helper", description="helps", provider=child)
        agent = make_agent(parent, [], UseSubagents([definition]), events=events)
        with pytest.raises(EventListenerError, match="cannot handle child events"):
            agent.execute(start())

    def test_a_listener_raising_agent_stop_is_told_how_to_stop_the_run(
        self, make_agent, start
    ) -> None:
        events = EventBus()

        def stop_after_first_step(event: AgentStepCompleted) -> None:
            raise AgentStop("enough")

        events.subscribe(AgentStepCompleted, stop_after_first_step)
        agent = make_agent(ScriptedLLM([call("lookup", q="a"), "done"]), [lookup], events=events)
        with pytest.raises(EventListenerError) as raised:
            agent.execute(start())
        assert "CancellationToken" in str(raised.value)
        assert "fix the listener" not in str(raised.value)

    def test_the_bus_reports_the_listener_by_name(self) -> None:
        bus = EventBus()

        def on_hook(event: AgentEvent) -> None:
            raise KeyError("x")

        bus.subscribe(HookExecuted, on_hook)
        with pytest.raises(EventListenerError) as raised:
            bus.dispatch(event(HookExecuted))
        assert raised.value.listener.endswith("on_hook")
        assert raised.value.event == "HookExecuted"
