"""The built-in invariants: silent on correct runs, loud and precise on broken ones.

Every run here is a real agent (``AgentBuilder`` + ``ToolCallingDriver`` + ``ScriptedLLM`` +
tools, on a ``FakeClock`` and ``SeededIds``) driven under an ``InvariantChecker`` exactly like
the runner drives it. Broken runs are made with small custom drivers,
hooks, loop subclasses or event filters; monkeypatching is used only where nothing else reaches.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from agentrig import (
    AgentLoop,
    AgentState,
    AgentStep,
    AgentStepType,
    AllSections,
    ExecutionBudget,
    ExecutionStatus,
    HookContext,
    HookTrigger,
    InferenceRequest,
    Message,
    Messages,
    Role,
    StepRuntime,
    StopReason,
    StopSignal,
    SubagentDefinition,
    ToolCallingDriver,
    ToolExecution,
    ToolExecutions,
    Tools,
    TraceMode,
    Usage,
    UseContextConfig,
    UseGuards,
    UseSubagents,
    runtime_context,
)
from agentrig.errors import AgentrigError
from agentrig.events import (
    AgentEvent,
    AgentExecutionCompleted,
    AgentExecutionStarted,
    AgentExecutionStopped,
    ToolCallCompleted,
    ToolCallStarted,
)
from agentrig.fakes import (
    FakeClock,
    ScriptedLLM,
    ScriptedTool,
    SeededIds,
    ToolReply,
    Turn,
    call,
    calls,
    fail,
    reply,
)
from agentrig.harness.checks.invariant import (
    InvariantChecker,
    invariant_names,
    select_invariants,
)
from agentrig.store import EXECUTION_BUFFER, INFERENCE_ORDER

from .conftest import Agent, ForceRouting, Hook, Wrapping, assert_violation, lookup, weather_tool

BUILT_INS = (
    "clean_messages",
    "buffer_cleared",
    "buffer_holds_current_trace",
    "inference_view",
    "tool_calls_paired",
    "budget_respected",
    "stop_is_terminal",
    "status_transitions",
    "serialization_round_trip",
    "earlier_states_unchanged",
    "metadata_tagging",
    "step_type_derivation",
    "monotonic_counters",
    "stable_execution_id",
    "no_user_message_lost",
    "subagent_isolation",
    "event_sequence",
)


# --- a tiny harness: build an agent, run turns under a checker -------------------------------


def reroute(state: AgentState, step: AgentStep, runtime: StepRuntime) -> AgentState:
    """Set ``step`` as the step in progress through the public API (tagged and routed)."""
    return state.with_current_step(step, trace_mode=runtime.trace_mode)


def when_step(number: int, change: Callable[[AgentState], AgentState]) -> Hook:
    """A hook that applies ``change`` when the state has ``number`` steps."""

    def hook(context: HookContext) -> HookContext | None:
        if context.state.step_count() != number:
            return None
        return context.with_state(change(context.state))

    return hook


# --- correct runs: no invariant fires -----------------------------------------------------------


def separated_tools() -> Agent:
    agent = Agent(
        [calls(("lookup", {"q": "a"}), ("lookup", {"q": "b"})), call("lookup", q="c"), "done"]
    )
    agent.say("look up a, b, c")
    return agent


def inline_tools() -> Agent:
    agent = Agent([call("lookup", q="a"), "first", call("lookup", q="b"), "second"], inline=True)
    agent.say("one")
    agent.say("two")
    return agent


def budget_stop() -> Agent:
    budget = ExecutionBudget(max_steps=2)
    agent = Agent(
        [call("lookup", q="a"), call("lookup", q="b"), "never played"],
        capabilities=[UseGuards(budget)],
        budget=budget,
    )
    final = agent.say("keep looking")
    assert final.last_stop_reason() is StopReason.STEPS_LIMIT
    return agent


def token_budget_stop() -> Agent:
    budget = ExecutionBudget(max_tokens=100, max_cost=1.0, max_seconds=60)
    usage = Usage(input_tokens=70, output_tokens=40, cost=0.01)
    agent = Agent(
        [Turn(calls=call("lookup", q="a").calls, usage=usage, latency=2), "never played"],
        capabilities=[UseGuards(budget)],
        budget=budget,
    )
    final = agent.say("spend")
    assert final.last_stop_reason() is StopReason.TOKEN_LIMIT
    return agent


def tool_error() -> Agent:
    agent = Agent(
        [calls(("weather", {"city": "Paris"}), ("weather", {"city": "Oslo"})), "Oslo is down"],
        tools=[weather_tool()],
    )
    final = agent.say("weather?")
    assert final.status() is ExecutionStatus.FAILED
    return agent


def provider_error() -> Agent:
    agent = Agent([call("lookup", q="a"), Turn(error="provider down")])
    final = agent.say("hi")
    assert final.status() is ExecutionStatus.FAILED
    return agent


def subagent_call() -> Agent:
    child = ScriptedLLM([call("lookup", q="deep"), "child answer"])
    subagents = UseSubagents([SubagentDefinition(name="researcher", provider=child)])
    agent = Agent(
        [call("spawn_subagent", subagent="researcher", prompt="dig"), "parent answer"],
        capabilities=[subagents],
    )
    final = agent.say("research this")
    assert final.status() is ExecutionStatus.COMPLETED
    assert final.steps()[0].tool_executions[0].content == "child answer"
    return agent


def two_turns_separated() -> Agent:
    agent = Agent([call("lookup", q="a"), "first", "second"])
    agent.say("one")
    agent.say("two")
    return agent


def tool_stops_the_agent() -> Agent:
    stopper = ScriptedTool("finish", [ToolReply(stop="enough")])
    agent = Agent([call("lookup", q="a"), call("finish"), "never played"], tools=[lookup, stopper])
    final = agent.say("go")
    assert (final.status(), final.last_stop_reason()) == (
        ExecutionStatus.STOPPED,
        StopReason.STOP_REQUESTED,
    )
    return agent


def blocked_tool_inline() -> Agent:
    def block(context: HookContext) -> HookContext:
        return context.block_tool_execution("not allowed")

    agent = Agent(
        [call("lookup", q="a"), "could not look it up"],
        hooks=[(block, HookTrigger.BEFORE_TOOL_USE)],
        inline=True,
    )
    final = agent.say("look up a")
    assert final.steps()[0].tool_executions[0].blocked
    return agent


def after_step_hook_fails() -> Agent:
    """A hook that raises after a final answer: the step becomes an error step, and its answer,
    routed to the conversation untagged when the step was set, stays there as it was."""

    def crash(context: HookContext) -> HookContext:
        raise RuntimeError("boom")

    agent = Agent(["hello"], hooks=[(crash, HookTrigger.AFTER_STEP)])
    final = agent.say("hi")
    assert final.status() is ExecutionStatus.FAILED
    assert final.steps()[0].step_type() is AgentStepType.ERROR
    assert final.messages().roles() == (Role.USER, Role.ASSISTANT)
    return agent


CORRECT_RUNS: dict[str, Callable[[], Agent]] = {
    "separated_tools": separated_tools,
    "inline_two_turns": inline_tools,
    "steps_budget_stop": budget_stop,
    "token_budget_stop": token_budget_stop,
    "tool_error": tool_error,
    "provider_error": provider_error,
    "subagent_call": subagent_call,
    "two_turns_separated": two_turns_separated,
    "blocked_tool_inline": blocked_tool_inline,
    "after_step_hook_fails": after_step_hook_fails,
}


@pytest.fixture(scope="module")
def correct_run() -> Callable[[str], Agent]:
    """Each correct run once per module (runs are only read afterwards): a fixture, not a
    module-level cache, so that a mutation run (which forks each mutant from a process that
    ran the tests once) plays the runs again with the mutant."""
    return functools.cache(lambda name: CORRECT_RUNS[name]())


class TestCorrectRuns:
    def test_all_built_ins_are_registered(self) -> None:
        assert set(BUILT_INS) <= set(invariant_names())
        assert invariant_names()[: len(BUILT_INS)] == BUILT_INS

    @pytest.mark.parametrize("run", list(CORRECT_RUNS))
    def test_no_violation(self, run: str, correct_run: Callable[[str], Agent]) -> None:
        agent = correct_run(run)
        assert [str(v) for v in agent.violations] == []
        assert all(agent.checker.checks[name] > 0 for name in BUILT_INS)
        assert all(count == 0 for count in agent.checker.failures.values())

    @pytest.mark.parametrize("name", BUILT_INS)
    def test_each_invariant_holds_on_every_correct_run(
        self, name: str, correct_run: Callable[[str], Agent]
    ) -> None:
        for run in CORRECT_RUNS:
            agent = correct_run(run)
            assert agent.of(name) == [], f"{run}: {agent.of(name)}"

    def test_no_violation_when_a_tool_stops_the_agent(self) -> None:
        agent = tool_stops_the_agent()
        assert [str(v) for v in agent.violations] == []

    def test_checks_are_counted_per_state(self) -> None:
        agent = separated_tools()  # 3 steps: 2 intermediate states and the final one
        assert agent.checker.checks["clean_messages"] == 3
        assert agent.checker.checks["buffer_cleared"] == 1  # final only
        assert agent.checker.checks["event_sequence"] == 1

    def test_observe_before_begin_raises(self) -> None:
        with pytest.raises(AgentrigError, match="before begin"):
            InvariantChecker().observe(AgentState(), is_final=True)


# --- broken runs: each invariant names what broke and where ----------------------------------


class TestCleanMessages:
    def test_tool_trace_in_messages_in_separated_mode(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), "done"],
            wrap_driver=lambda inner: ForceRouting(inner, TraceMode.INLINE),
        )
        agent.say("hi")
        violation = assert_violation(
            agent, "clean_messages", turn=1, step=1, contains="`messages` item 2 is a tool trace"
        )
        assert "assistant/assistant_tool_calls" in violation.message
        assert any(
            "item 3" in v.message and "tool/tool_result" in v.message
            for v in agent.of("clean_messages")
        )

    def test_untagged_tool_message_is_still_a_trace(self) -> None:
        def smuggle(state: AgentState) -> AgentState:
            trace = state.store().messages_of(EXECUTION_BUFFER)
            untagged = [m.evolve(metadata={}) for m in trace]
            return state.with_messages(state.messages().appended(*untagged))

        agent = Agent(
            [call("lookup", q="a"), "done"], hooks=[(when_step(1, smuggle), HookTrigger.AFTER_STEP)]
        )
        agent.say("hi")
        assert_violation(agent, "clean_messages", turn=1, step=1, contains="item 2 is a tool trace")

    def test_inline_mode_allows_traces_in_messages(self) -> None:
        agent = Agent([call("lookup", q="a"), "done"], inline=True)
        agent.say("hi")
        assert agent.of("clean_messages") == []
        assert agent.state.messages()[1].is_trace


class LeakyBufferLoop(AgentLoop):
    """A loop that forgets to clear the execution buffer when the execution ends."""

    def _finish(self, state: AgentState) -> AgentState:
        buffer = state.store().messages_of(EXECUTION_BUFFER)
        final = super()._finish(state)
        return final.with_message_store(final.store().section(EXECUTION_BUFFER).set(buffer))


class TestBufferCleared:
    def test_buffer_left_at_the_end(self) -> None:
        agent = Agent([call("lookup", q="a"), "done"], loop_class=LeakyBufferLoop)
        agent.say("hi")
        assert_violation(
            agent,
            "buffer_cleared",
            turn=1,
            step=2,
            contains="execution ended (completed) with 2 message(s) left in the execution buffer",
        )
        assert agent.checker.checks["buffer_cleared"] == 1

    def test_buffer_left_after_a_failure(self) -> None:
        agent = Agent([call("lookup", q="a"), Turn(error="boom")], loop_class=LeakyBufferLoop)
        agent.say("hi")
        assert_violation(
            agent, "buffer_cleared", turn=1, step=1, contains="execution ended (failed) with 2"
        )


class TestBufferHoldsCurrentTrace:
    def test_buffer_emptied_mid_execution(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), call("lookup", q="b"), "done"],
            hooks=[
                (when_step(1, AgentState.with_execution_buffer_cleared), HookTrigger.AFTER_STEP)
            ],
        )
        agent.say("hi")
        assert_violation(
            agent,
            "buffer_holds_current_trace",
            turn=1,
            step=1,
            contains="execution buffer holds 0 message(s), expected the 2 trace message(s)",
        )
        second = agent.of("buffer_holds_current_trace")[1]
        assert second.step == 2
        assert "holds 2 message(s), expected the 4 trace message(s)" in second.message

    def test_trace_in_buffer_in_inline_mode(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), "done"],
            inline=True,
            wrap_driver=lambda inner: ForceRouting(inner, TraceMode.SEPARATED),
        )
        agent.say("hi")
        assert_violation(
            agent,
            "buffer_holds_current_trace",
            turn=1,
            step=1,
            contains="inline mode, yet the execution buffer holds 2 message(s)",
        )


class MisorderedState(AgentState):
    """A state whose inference view puts the execution buffer before the conversation."""

    def messages_for_inference(self) -> Messages:
        return self.store().select(reversed(INFERENCE_ORDER))


class TestInferenceView:
    def test_sections_in_the_wrong_order(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), "done"],
            initial=lambda state: MisorderedState.from_dict(state.to_dict()),
        )
        agent.say("hi")
        assert_violation(
            agent,
            "inference_view",
            turn=1,
            step=1,
            contains="messages_for_inference() is not summary + buffer + messages + execution_buffer",
        )

    def test_earlier_traces_sent_to_the_model(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), "first", "second"], inline=True, compiler=AllSections()
        )
        agent.say("one")
        assert agent.of("inference_view") == []
        agent.say("two")
        assert_violation(
            agent,
            "inference_view",
            turn=2,
            step=1,
            contains="step 1 sent the model 2 trace message(s) of another execution",
        )

    def test_the_next_request_holding_earlier_traces(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), "first", call("lookup", q="b"), "second"],
            inline=True,
            compiler=AllSections(),
        )
        agent.say("one")
        agent.say("two")
        messages = [v.message for v in agent.of("inference_view")]
        assert "the next request would send the model 2 trace message(s) of another execution" in (
            messages
        )

    def test_a_step_that_sent_something_else_than_next_request_said(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), call("lookup", q="b"), "done"],
            wrap_driver=PreviewWithoutTheLastMessage,
        )
        agent.say("hi")
        assert_violation(  # the first step is compared too, with the state the run started from
            agent,
            "inference_view",
            turn=1,
            step=1,
            contains="step 1 sent the model",
        )
        messages = [violation.message for violation in agent.of("inference_view")]
        assert [m.split(" sent")[0] for m in messages] == ["step 1", "step 2", "step 3"]
        assert all("but next_request() on the state before it said" in m for m in messages)

    def test_the_first_step_is_compared_with_hooks_that_change_its_request(self) -> None:
        def greet(ctx: HookContext) -> HookContext:
            return ctx.with_state(ctx.state.with_user_message("(new session)"))

        agent = Agent(
            [call("lookup", q="a"), "one", "two"],
            capabilities=[UseContextConfig("Be brief.")],
            hooks=[(greet, "before_execution")],
        )
        agent.say("first")
        agent.say("second")
        assert agent.of("inference_view") == []
        first_step = agent.yielded[0].steps()[0]
        assert [m.content for m in first_step.input_messages] == [
            "Be brief.",
            "first",
            "(new session)",
        ]

    def test_holds_when_a_refused_tool_call_was_retried(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), fail("refused", failed_generation="<bad call>"), "done"],
            wrap_driver=lambda driver: driver.with_max_attempts(2),
        )
        final = agent.say("hi")
        assert final.final_response().to_text() == "done"
        sent = final.steps()[1].input_messages
        assert [m.content for m in sent][-2:][0] == "<bad call>"  # the retry's two come last
        assert agent.violations == []

    def test_holds_on_a_real_run_in_both_modes(self) -> None:
        for inline in (False, True):
            agent = Agent(
                [call("lookup", q="a"), call("lookup", q="b"), "one", "two"],
                inline=inline,
                capabilities=[UseContextConfig("Be brief.")],
            )
            agent.say("first")
            agent.say("second")
            assert agent.of("inference_view") == []


class PreviewWithoutTheLastMessage:
    """A driver whose ``next_request`` leaves out the newest message its steps send."""

    def __init__(self, inner: ToolCallingDriver) -> None:
        self.inner = inner

    def use_tools(self, state: AgentState, runtime: StepRuntime) -> AgentState:
        return self.inner.use_tools(state, runtime)

    def next_request(self, state: AgentState, tools: Tools) -> InferenceRequest:
        request = self.inner.next_request(state, tools)
        return request.evolve(messages=Messages(request.messages[:-1]))


class DropToolResults(Wrapping):
    """A driver that loses the tool messages of its step."""

    def tamper(
        self, before: AgentState, after: AgentState, step: AgentStep, runtime: StepRuntime
    ) -> AgentState:
        kept = step.output_messages.filtered(lambda m: m.tool_result is None)
        return reroute(before, step.evolve(output_messages=kept), runtime)


class DropToolExecutions(Wrapping):
    """A driver that forgets to record its tool executions."""

    def tamper(
        self, before: AgentState, after: AgentState, step: AgentStep, runtime: StepRuntime
    ) -> AgentState:
        return reroute(before, step.evolve(tool_executions=ToolExecutions()), runtime)


class DropAssistantMessage(Wrapping):
    """A driver that keeps tool results but loses the assistant message that called them."""

    def tamper(
        self, before: AgentState, after: AgentState, step: AgentStep, runtime: StepRuntime
    ) -> AgentState:
        kept = step.output_messages.filtered(lambda m: not m.tool_calls)
        return reroute(before, step.evolve(output_messages=kept), runtime)


class TestToolCallsPaired:
    def test_tool_call_without_result(self) -> None:
        agent = Agent([call("lookup", q="a"), "done"], wrap_driver=DropToolResults)
        agent.say("hi")
        call_id = agent.state.steps()[0].requested_tool_calls()[0].id
        assert_violation(
            agent,
            "tool_calls_paired",
            turn=1,
            step=1,
            contains=f"step 1: tool results for [], expected one for each of ['{call_id}']",
        )

    def test_tool_call_without_execution(self) -> None:
        agent = Agent([call("lookup", q="a"), "done"], wrap_driver=DropToolExecutions)
        agent.say("hi")
        call_id = agent.state.steps()[0].requested_tool_calls()[0].id
        assert_violation(
            agent,
            "tool_calls_paired",
            turn=1,
            step=1,
            contains=f"step 1: requested calls ['{call_id}'] but executions for []",
        )

    def test_tool_result_without_preceding_call(self) -> None:
        agent = Agent([call("lookup", q="a"), "done"], wrap_driver=DropAssistantMessage)
        agent.say("hi")
        call_id = agent.state.steps()[0].requested_tool_calls()[0].id
        assert_violation(
            agent,
            "tool_calls_paired",
            turn=1,
            step=1,
            contains=f"section 'execution_buffer': tool result for '{call_id}' has no preceding call",
        )


START = FakeClock().now()


class TestBudgetRespected:
    def test_more_steps_than_max_steps(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), call("lookup", q="b"), call("lookup", q="c"), "done"],
            budget=ExecutionBudget(max_steps=2),
        )
        agent.say("no guards installed")
        assert_violation(
            agent, "budget_respected", turn=1, step=3, contains="3 steps ran, max_steps is 2"
        )

    def test_step_started_after_the_token_limit(self) -> None:
        usage = Usage(input_tokens=30, output_tokens=20)
        agent = Agent(
            [Turn(calls=call("lookup", q="a").calls, usage=usage), reply("done", usage=usage)],
            budget=ExecutionBudget(max_tokens=50),
        )
        agent.say("no guards installed")
        assert_violation(
            agent,
            "budget_respected",
            turn=1,
            step=2,
            contains="step 2 started after the token limit was reached (50/50)",
        )

    def test_step_started_after_the_cost_limit(self) -> None:
        agent = Agent(
            [Turn(calls=call("lookup", q="a").calls, usage=Usage(cost=0.5)), "done"],
            budget=ExecutionBudget(max_cost=0.25),
        )
        agent.say("no guards installed")
        assert_violation(
            agent,
            "budget_respected",
            turn=1,
            step=2,
            contains="step 2 started after the cost limit was reached (0.5/0.25)",
        )

    def test_the_cost_of_every_step_so_far_counts(self) -> None:
        turns = [Turn(calls=call("lookup", q=q).calls, usage=Usage(cost=0.2)) for q in "ab"]
        agent = Agent([*turns, "done"], budget=ExecutionBudget(max_cost=0.25))
        agent.say("no guards installed")
        assert_violation(
            agent,
            "budget_respected",
            turn=1,
            step=3,
            contains="step 3 started after the cost limit was reached (0.4/0.25)",
        )

    def test_step_started_after_max_seconds(self) -> None:
        agent = Agent(
            [Turn(calls=call("lookup", q="a").calls, latency=10), "done"],
            budget=ExecutionBudget(max_seconds=5),
        )
        agent.say("no guards installed")
        assert_violation(
            agent,
            "budget_respected",
            turn=1,
            step=2,
            contains="step 2 started 10.0s into the execution, max_seconds is 5",
        )

    def test_step_started_after_the_deadline(self) -> None:
        deadline = FakeClock().now() + timedelta(seconds=5)
        agent = Agent(
            [Turn(calls=call("lookup", q="a").calls, latency=10), "done"],
            budget=ExecutionBudget(deadline=deadline),
        )
        agent.say("no guards installed")
        assert_violation(
            agent,
            "budget_respected",
            turn=1,
            step=2,
            contains=f"step 2 started after the deadline {deadline.isoformat()}",
        )

    @pytest.mark.parametrize(
        ("script", "guard", "budget", "step", "contains"),
        [
            (
                [call("lookup", q="a"), call("lookup", q="b"), "never played"],
                UseGuards(max_steps=2),
                ExecutionBudget(max_steps=3),
                2,
                "stopped for steps_limit after 2 steps, max_steps is 3",
            ),
            (
                [call("lookup", q="a"), call("lookup", q="b"), "never played"],
                UseGuards(max_tokens=0),
                ExecutionBudget(max_tokens=1000),
                0,
                "stopped for token_limit with 0 tokens and cost 0.0",
            ),
            (
                [Turn(calls=call("lookup", q="a").calls, latency=10), "never played"],
                UseGuards(max_seconds=5),
                ExecutionBudget(max_seconds=100),
                1,
                "stopped for time_limit before step 2, 10.0s into the execution: "
                "max_seconds is 100.0",
            ),
            (
                [Turn(calls=call("lookup", q="a").calls, latency=10), "never played"],
                UseGuards(deadline=START + timedelta(seconds=5)),
                ExecutionBudget(deadline=START + timedelta(seconds=100)),
                1,
                "stopped for time_limit before step 2, 10.0s into the execution: "
                f"the deadline is {(START + timedelta(seconds=100)).isoformat()}",
            ),
            (
                ["never played"],
                UseGuards(max_seconds=0),
                ExecutionBudget(max_steps=5),
                0,
                "stopped for time_limit before step 1, 0.0s into the execution: "
                "the budget has no max_seconds or deadline",
            ),
        ],
        ids=["steps", "tokens", "max_seconds", "deadline", "no_time_limit"],
    )
    def test_a_stop_the_budget_does_not_explain(
        self,
        script: list[Turn | str],
        guard: UseGuards,
        budget: ExecutionBudget,
        step: int,
        contains: str,
    ) -> None:
        agent = Agent(script, capabilities=[guard], budget=budget)
        agent.say("the guard and the budget disagree")
        assert_violation(agent, "budget_respected", turn=1, step=step, contains=contains)

    @pytest.mark.parametrize(
        ("max_seconds", "deadline_in"), [(5, None), (10, None), (100, 10), (None, 3)]
    )
    def test_time_limit_stop_at_or_past_a_limit_holds(
        self, max_seconds: float | None, deadline_in: float | None
    ) -> None:
        deadline = None
        if deadline_in is not None:
            deadline = FakeClock().now() + timedelta(seconds=deadline_in)
        budget = ExecutionBudget(max_seconds=max_seconds, deadline=deadline)
        agent = Agent(
            [Turn(calls=call("lookup", q="a").calls, latency=10), "never played"],
            capabilities=[UseGuards(budget)],
            budget=budget,
        )
        final = agent.say("stopped by its own limit")
        assert final.last_stop_reason() is StopReason.TIME_LIMIT
        assert agent.of("budget_respected") == []

    def test_forced_stop_with_completed_status(self) -> None:
        class CompletesAnyway(AgentLoop):
            def _finish(self, state: AgentState) -> AgentState:
                return super()._finish(state).with_execution_status(ExecutionStatus.COMPLETED)

        agent = Agent(
            [call("lookup", q="a"), call("lookup", q="b"), "never played"],
            capabilities=[UseGuards(max_steps=2)],
            budget=ExecutionBudget(max_steps=2),
            loop_class=CompletesAnyway,
        )
        agent.say("hi")
        assert_violation(
            agent,
            "budget_respected",
            turn=1,
            step=2,
            contains="stop reason steps_limit is a forced stop, yet the status is completed",
        )

    def test_no_budget_no_check(self) -> None:
        agent = Agent([call("lookup", q="a"), call("lookup", q="b"), "done"])
        agent.say("hi")
        assert agent.of("budget_respected") == []


def set_status(status: ExecutionStatus) -> Callable[[AgentState], AgentState]:
    return lambda state: state.with_execution_status(status)


class TestStopIsTerminal:
    def test_terminal_status_on_an_intermediate_state(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), "done"],
            hooks=[(when_step(1, set_status(ExecutionStatus.COMPLETED)), HookTrigger.AFTER_STEP)],
        )
        agent.say("hi")
        assert_violation(
            agent,
            "stop_is_terminal",
            turn=1,
            step=1,
            contains="an intermediate state already has terminal status completed",
        )

    def test_final_state_not_terminal(self) -> None:
        class NeverEnds(AgentLoop):
            def _finish(self, state: AgentState) -> AgentState:
                return super()._finish(state).with_execution_status(ExecutionStatus.IN_PROGRESS)

        agent = Agent(["done"], loop_class=NeverEnds)
        agent.say("hi")
        assert_violation(
            agent,
            "stop_is_terminal",
            turn=1,
            step=1,
            contains="the final state has non-terminal status in_progress",
        )

    def test_final_state_without_stop_reason(self) -> None:
        class ForgetsWhy(AgentLoop):
            def _finish(self, state: AgentState) -> AgentState:
                final = super()._finish(state)
                assert final.execution is not None
                records = [
                    record.evolve(continuation=record.continuation.evolve(stop_signals=()))
                    for record in final.execution.step_executions
                ]
                execution = final.execution.evolve(
                    continuation=final.execution.continuation.evolve(stop_signals=()),
                    step_executions=records,
                )
                return final.with_execution(execution)

        agent = Agent(["done"], loop_class=ForgetsWhy)
        agent.say("hi")
        assert_violation(
            agent, "stop_is_terminal", turn=1, step=1, contains="the final state has no stop reason"
        )


class TestStatusTransitions:
    def test_not_in_progress_during_the_execution(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), "done"],
            hooks=[(when_step(1, set_status(ExecutionStatus.PENDING)), HookTrigger.AFTER_STEP)],
        )
        agent.say("hi")
        assert_violation(
            agent,
            "status_transitions",
            turn=1,
            step=1,
            contains="status is pending during the execution, expected in_progress",
        )

    def test_completed_despite_a_tool_error(self) -> None:
        class IgnoresErrors(AgentLoop):
            def _finish(self, state: AgentState) -> AgentState:
                return super()._finish(state).with_execution_status(ExecutionStatus.COMPLETED)

        agent = Agent(
            [call("weather", city="Oslo"), "sorry"],
            tools=[weather_tool()],
            loop_class=IgnoresErrors,
        )
        agent.say("weather in Oslo?")
        assert_violation(
            agent,
            "status_transitions",
            turn=1,
            step=2,
            contains="final status is completed, expected failed from the errors and stop signals",
        )

    def test_stopped_without_a_forced_stop(self) -> None:
        class StopsAnyway(AgentLoop):
            def _finish(self, state: AgentState) -> AgentState:
                return super()._finish(state).with_execution_status(ExecutionStatus.STOPPED)

        agent = Agent(["done"], loop_class=StopsAnyway)
        agent.say("hi")
        assert_violation(
            agent,
            "status_transitions",
            turn=1,
            step=1,
            contains="final status is stopped, expected completed",
        )


class TestSerializationRoundTrip:
    def test_nan_tool_value_is_kept_as_text(self) -> None:
        def measure(q: str) -> float:
            """Measure something that is not a number."""
            return float("nan")

        agent = Agent([call("measure", q="x"), "done"], tools=[measure])
        agent.say("measure")
        assert agent.of("serialization_round_trip") == []

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (
                (1, 2),
                "from_dict(to_dict(state)) differs from the state: first difference at "
                "execution.step_executions[0].step.tool_executions[0].value (tuple vs list)",
            ),
            (
                float("nan"),
                "first difference at execution.step_executions[0].step."
                "tool_executions[0].value (nan vs None)",
            ),
        ],
        ids=["tuple", "nan"],
    )
    def test_tool_value_that_cannot_be_rebuilt(self, value: object, expected: str) -> None:
        class Unchecked(Wrapping):
            """A driver that builds its tool execution without validation."""

            def tamper(
                self, before: AgentState, after: AgentState, step: AgentStep, runtime: StepRuntime
            ) -> AgentState:
                execution = step.tool_executions[0]
                raw = ToolExecution._trusted(**{**execution.__dict__, "value": value})
                return reroute(before, step.evolve(tool_executions=ToolExecutions([raw])), runtime)

        agent = Agent([call("lookup", q="x"), "done"], wrap_driver=Unchecked)
        agent.say("look up x")
        assert_violation(agent, "serialization_round_trip", turn=1, step=1, contains=expected)

    def test_to_dict_dropping_a_field(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = AgentState.to_dict

        def lossy(self: AgentState) -> dict[str, Any]:
            data = real(self)
            del data["execution_count"]
            return data

        monkeypatch.setattr(AgentState, "to_dict", lossy)
        agent = Agent([call("lookup", q="a"), "done"])
        agent.say("hi")
        assert_violation(
            agent,
            "serialization_round_trip",
            turn=1,
            step=1,
            contains="from_dict(to_dict(state)) differs from the state: first difference at "
            "execution_count (1 vs 0)",
        )

    def test_unreadable_dict(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = AgentState.to_dict

        def unversioned(self: AgentState) -> dict[str, Any]:
            data = real(self)
            del data["schema_version"]
            return data

        monkeypatch.setattr(AgentState, "to_dict", unversioned)
        agent = Agent(["done"])
        agent.say("hi")
        assert_violation(
            agent,
            "serialization_round_trip",
            turn=1,
            step=1,
            contains="the state does not read back: ",
        )
        assert "schema_version" in agent.of("serialization_round_trip")[0].message

    def test_step_record_changed_after_it_was_read_back(self) -> None:
        """A record read back once is not validated again while its serialized form is the
        same, yet the state is still compared in full: a change its JSON does not show (a list
        made a tuple) is caught in every later state."""

        def pair(q: str) -> list[int]:
            """Two numbers."""
            return [1, 2]

        def retype(context: HookContext) -> None:
            if context.state.step_count() == 2:
                execution = context.state.execution
                assert execution is not None
                first = execution.step_executions[0].step.tool_executions[0]
                object.__setattr__(first, "value", (1, 2))  # the bug: in place, a tuple

        agent = Agent(
            [call("pair", q="a"), call("pair", q="b"), "done"],
            tools=[pair],
            hooks=[(retype, HookTrigger.BEFORE_STEP)],
        )
        agent.say("hi")
        assert_violation(
            agent,
            "serialization_round_trip",
            turn=1,
            step=2,
            contains="first difference at execution.step_executions[0].step.tool_executions[0]"
            ".value (tuple vs list)",
        )
        assert [v.step for v in agent.of("serialization_round_trip")] == [2, 2, 3, 3]


class TestEarlierStatesUnchanged:
    def test_hook_mutating_a_shared_message_in_place(self) -> None:
        def annotate(context: HookContext) -> None:
            if context.state.step_count() == 2:
                question = context.state.messages()[0]
                question.metadata["seen"] = True  # the bug: in place instead of with_metadata()

        agent = Agent(
            [call("lookup", q="a"), call("lookup", q="b"), "done"],
            hooks=[(annotate, HookTrigger.BEFORE_STEP)],
        )
        agent.say("hi")
        assert agent.state.messages()[0].metadata == {"seen": True}
        assert_violation(
            agent,
            "earlier_states_unchanged",
            turn=1,
            step=3,
            contains="yielded state 1 of this execution changed after it was yielded",
        )
        assert len(agent.of("earlier_states_unchanged")) == 1  # state 2 was observed after
        assert agent.checker.checks["earlier_states_unchanged"] == 1

    def test_consumer_mutating_a_yielded_state(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), "done"], initial=lambda state: state.with_metadata("seen", {})
        )
        with runtime_context(clock=agent.clock, ids=agent.ids):
            state = agent.state.with_user_message("hi")
        checker = agent.checker
        checker.begin(1, state)
        states = list(agent.loop.iterate(state))
        checker.observe(states[0], is_final=False)
        seen = states[0].metadata()["seen"]
        assert isinstance(seen, dict)
        seen["by"] = "a careless consumer"
        checker.observe(states[1], is_final=True)
        assert_violation(
            agent, "earlier_states_unchanged", turn=1, step=2, contains="yielded state 1 of"
        )


class Retag(Wrapping):
    """A driver that stores step ``at_step`` with hand-made tags instead of the API's."""

    def __init__(
        self, inner: ToolCallingDriver, retag: Callable[[Message], Message], at_step: int
    ) -> None:
        super().__init__(inner)
        self.retag = retag
        self.at_step = at_step

    def tamper(
        self, before: AgentState, after: AgentState, step: AgentStep, runtime: StepRuntime
    ) -> AgentState:
        if runtime.step_number != self.at_step:
            return after
        assert after.execution is not None
        output = Messages(self.retag(message) for message in step.output_messages)
        execution = after.execution.with_current_step(step.evolve(output_messages=output))
        return after.with_execution(execution)


def without(key: str) -> Callable[[Message], Message]:
    return lambda message: message.evolve(
        metadata={k: v for k, v in message.metadata.items() if k != key}
    )


def tagged(**tags: Any) -> Callable[[Message], Message]:
    return lambda message: message.with_metadata(**tags)


class TestMetadataTagging:
    @pytest.mark.parametrize(
        ("retag", "step", "expected"),
        [
            (without("step_id"), 1, "step 1: output message lacks step_id"),
            (without("agent_id"), 1, "step 1: output message has agent_id None"),
            (
                tagged(agent_id="someone-else"),
                2,
                "step 2: output message has agent_id 'someone-else'",
            ),
            (
                tagged(execution_id="elsewhere"),
                1,
                "step 1: output message has execution_id 'elsewhere'",
            ),
            (without("is_trace"), 1, "step 1 (tool_execution): output message not tagged is_trace"),
            (tagged(is_trace=True), 2, "step 2 (final_response): output message carries is_trace"),
        ],
        ids=[
            "no-step-id",
            "no-agent-id",
            "wrong-agent-id",
            "wrong-execution-id",
            "trace-untagged",
            "final-tagged",
        ],
    )
    def test_wrong_tags(
        self, retag: Callable[[Message], Message], step: int, expected: str
    ) -> None:
        agent = Agent(
            [call("lookup", q="a"), "done"], wrap_driver=lambda inner: Retag(inner, retag, step)
        )
        agent.say("hi")
        assert_violation(agent, "metadata_tagging", turn=1, step=step, contains=expected)


class MislabelledStep(AgentStep):
    """A step that claims to be a tool execution whatever it holds."""

    def step_type(self) -> AgentStepType:
        return AgentStepType.TOOL_EXECUTION


class Mislabel(Wrapping):
    def tamper(
        self, before: AgentState, after: AgentState, step: AgentStep, runtime: StepRuntime
    ) -> AgentState:
        return reroute(before, MislabelledStep.from_dict(step.to_dict()), runtime)


class TestStepTypeDerivation:
    def test_step_type_that_lies(self) -> None:
        agent = Agent(["done"], wrap_driver=Mislabel)
        agent.say("hi")
        assert_violation(
            agent,
            "step_type_derivation",
            turn=1,
            step=1,
            contains="step 1 has type tool_execution, expected final_response",
        )

    def test_failed_tool_step_must_be_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = AgentStep.step_type

        def ignores_tool_errors(self: AgentStep) -> AgentStepType:
            kind = real(self)
            return AgentStepType.TOOL_EXECUTION if kind is AgentStepType.ERROR else kind

        monkeypatch.setattr(AgentStep, "step_type", ignores_tool_errors)
        agent = Agent([call("weather", city="Oslo"), "sorry"], tools=[weather_tool()])
        agent.say("weather in Oslo?")
        assert_violation(
            agent,
            "step_type_derivation",
            turn=1,
            step=1,
            contains="step 1 has type tool_execution, expected error",
        )


class TwoStepsPerCall(Wrapping):
    """A driver that runs two inferences per call, archiving the first step itself."""

    def tamper(
        self, before: AgentState, after: AgentState, step: AgentStep, runtime: StepRuntime
    ) -> AgentState:
        archived = after.with_current_step_completed().with_step_started()
        return self.inner.use_tools(archived, runtime)


class TestMonotonicCounters:
    def test_step_count_jumps(self) -> None:
        script = [call("lookup", q=q) for q in "abc"] + ["done"]
        agent = Agent(script, wrap_driver=TwoStepsPerCall)
        agent.say("hi")
        assert_violation(
            agent, "monotonic_counters", turn=1, step=4, contains="step count went from 2 to 4"
        )

    def test_execution_count_skips(self) -> None:
        def bump(context: HookContext) -> HookContext:
            state = context.state
            return context.with_state(state.with_execution_count(state.execution_count + 1))

        agent = Agent(["done"], hooks=[(bump, HookTrigger.BEFORE_EXECUTION)])
        agent.say("hi")
        assert_violation(
            agent, "monotonic_counters", turn=1, step=1, contains="execution_count is 2, expected 1"
        )

    def test_created_at_changes(self) -> None:
        def rebirth(context: HookContext) -> HookContext:
            moved = context.state.created_at + timedelta(days=1)
            return context.with_state(context.state.evolve(created_at=moved))

        agent = Agent(["done"], hooks=[(rebirth, HookTrigger.AFTER_STEP)])
        agent.say("hi")
        assert_violation(agent, "monotonic_counters", turn=1, step=1, contains="created_at changed")

    def test_step_count_that_does_not_grow(self) -> None:
        class Rewinds(Wrapping):
            def tamper(
                self, before: AgentState, after: AgentState, step: AgentStep, runtime: StepRuntime
            ) -> AgentState:
                if before.step_count() == 1:  # replace step 1 instead of adding step 2
                    assert before.execution is not None
                    execution = before.execution.evolve(step_executions=())
                    return after.with_execution(execution.with_current_step(step))
                return after

        agent = Agent([call("lookup", q="a"), call("lookup", q="b"), "done"], wrap_driver=Rewinds)
        agent.say("hi")
        assert_violation(
            agent, "monotonic_counters", turn=1, step=1, contains="step count went from 1 to 1"
        )


class TestStableExecutionId:
    def test_execution_id_changes_mid_execution(self) -> None:
        def hijack(state: AgentState) -> AgentState:
            assert state.execution is not None
            return state.with_execution(state.execution.evolve(execution_id="hijacked"))

        agent = Agent(
            [call("lookup", q="a"), call("lookup", q="b"), "done"],
            hooks=[(when_step(1, hijack), HookTrigger.BEFORE_STEP)],
        )
        agent.say("hi")
        original = agent.yielded[0].execution_id()
        assert_violation(
            agent,
            "stable_execution_id",
            turn=1,
            step=2,
            contains=f"execution id changed from {original!r} to 'hijacked'",
        )
        events = [v for v in agent.of("stable_execution_id") if "carries" in v.message]
        assert len(events) == 1, events  # events are checked once, on the final state
        assert (events[0].step, events[0].message) == (
            3,
            f"HookExecuted carries execution id 'hijacked', expected {original!r}",
        )

    def test_event_of_another_execution(self) -> None:
        stray = AgentExecutionStarted(
            agent_id="",
            parent_agent_id=None,
            execution_id="stray",
            at=FakeClock().now(),
            message_count=0,
            available_tools=(),
        )
        agent = Agent(["done"])
        agent.loop.events.wiretap(
            lambda event: (
                agent.checker.record_event(dataclasses.replace(stray, agent_id=event.agent_id))
                if isinstance(event, AgentExecutionCompleted)
                else None
            )
        )
        agent.say("hi")
        assert_violation(
            agent,
            "stable_execution_id",
            turn=1,
            step=1,
            contains="AgentExecutionStarted carries execution id 'stray', expected",
        )


class TestNoUserMessageLost:
    def test_hook_dropping_the_first_question(self) -> None:
        def keep_last_only(context: HookContext) -> HookContext | None:
            state = context.state
            if state.execution_count < 2:
                return None
            return context.with_state(state.with_messages(state.messages()[-1:]))

        agent = Agent(
            ["first answer", "second answer"],
            hooks=[(keep_last_only, HookTrigger.BEFORE_EXECUTION)],
        )
        agent.say("first question")
        assert agent.violations == []
        agent.say("second question")
        assert [m.content for m in agent.state.messages()] == ["second question", "second answer"]
        assert_violation(
            agent,
            "no_user_message_lost",
            turn=2,
            step=1,
            contains="user message 'first question' is no longer in `messages`",
        )

    def test_hook_reordering_user_messages(self) -> None:
        def swap(context: HookContext) -> HookContext:
            state = context.state
            return context.with_state(state.with_messages(Messages(reversed(state.messages()))))

        agent = Agent(
            ["done"],
            hooks=[(swap, HookTrigger.BEFORE_EXECUTION)],
            initial=lambda state: state.with_user_message("earlier"),
        )
        agent.say("later")
        assert_violation(
            agent, "no_user_message_lost", turn=1, step=1, contains="user messages changed order"
        )


def subagent_agent(*hooks: tuple[Hook, HookTrigger]) -> Agent:
    child = ScriptedLLM(["child answer"])
    return Agent(
        [call("spawn_subagent", subagent="researcher", prompt="dig"), "parent answer"],
        capabilities=[UseSubagents([SubagentDefinition(name="researcher", provider=child)])],
        hooks=list(hooks),
    )


class TestSubagentIsolation:
    def test_child_message_copied_into_the_parent(self) -> None:
        def copy_child_answer(context: HookContext) -> HookContext | None:
            execution = context.tool_execution
            if execution is None or not isinstance(execution.value, dict):
                return None
            leaked = Message.assistant(str(execution.value["response"])).with_metadata(
                agent_id=execution.value["agent_id"]
            )
            return context.with_state(context.state.with_user_message(leaked))

        agent = subagent_agent((copy_child_answer, HookTrigger.AFTER_TOOL_USE))
        agent.say("research this")
        child_id = agent.state.steps()[0].tool_executions[0].value["agent_id"]  # type: ignore[index,call-overload]
        assert_violation(
            agent,
            "subagent_isolation",
            turn=1,
            step=1,
            contains=f"the store holds a message of agent {child_id!r}: assistant/text 'child answer'",
        )

    def test_parent_sees_something_else_than_the_child_text(self) -> None:
        def rewrite(context: HookContext) -> HookContext | None:
            execution = context.tool_execution
            if execution is None:
                return None
            return context.with_tool_execution(execution.evolve(content="rewritten"))

        agent = subagent_agent((rewrite, HookTrigger.AFTER_TOOL_USE))
        agent.say("research this")
        assert_violation(
            agent,
            "subagent_isolation",
            turn=1,
            step=1,
            contains="step 1: the parent saw something other than the child's final text",
        )


class TestEventSequence:
    def test_missing_execution_started(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), "done"],
            drop_event=lambda event: isinstance(event, AgentExecutionStarted),
        )
        agent.say("hi")
        assert_violation(
            agent,
            "event_sequence",
            turn=1,
            step=2,
            contains="the first event is AgentStepStarted, expected AgentExecutionStarted",
        )

    def test_unmatched_tool_call_started(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), "done"],
            drop_event=lambda event: isinstance(event, ToolCallCompleted),
        )
        agent.say("hi")
        call_id = agent.state.steps()[0].requested_tool_calls()[0].id
        assert_violation(
            agent,
            "event_sequence",
            turn=1,
            step=2,
            contains=f"ToolCallStarted for {call_id!r} never completed",
        )

    def test_tool_call_completed_without_start(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), "done"],
            drop_event=lambda event: isinstance(event, ToolCallStarted),
        )
        agent.say("hi")
        call_id = agent.state.steps()[0].requested_tool_calls()[0].id
        assert_violation(
            agent,
            "event_sequence",
            turn=1,
            step=2,
            contains=f"ToolCallCompleted for {call_id!r} without a start",
        )

    @pytest.mark.parametrize(
        ("dropped", "expected"),
        [
            (
                AgentExecutionCompleted,
                "the last event is AgentExecutionStopped, expected AgentExecutionCompleted",
            ),
            (AgentExecutionStopped, "0 AgentExecutionStopped events, expected 1"),
        ],
    )
    def test_missing_end_events(self, dropped: type[AgentEvent], expected: str) -> None:
        agent = Agent(["done"], drop_event=lambda event: isinstance(event, dropped))
        agent.say("hi")
        assert_violation(agent, "event_sequence", turn=1, step=1, contains=expected)

    def test_subagent_events_are_not_the_parents(self) -> None:
        agent = subagent_agent()
        agent.say("research this")
        names = [event.name for event in agent.checker.events]
        assert names.count("AgentExecutionStarted") == 2  # parent and child on one bus
        assert agent.of("event_sequence") == []


class TestHandBuiltStates:
    """States no real loop yields, checked through ``Observation`` directly."""

    def observe(
        self, state: AgentState, invariant: str, budget: ExecutionBudget | None = None
    ) -> list[str]:
        checker = InvariantChecker(select_invariants([invariant]), budget=budget)
        checker.begin(1, AgentState())
        return [v.message for v in checker.observe(state, is_final=True)]

    def test_token_limit_reason_met_by_cost(self) -> None:
        state = (
            AgentState()
            .with_current_step(
                AgentStep(inference_response=reply("x", usage=Usage(cost=2.0)).to_response())
            )
            .with_stop_signal(StopSignal(reason=StopReason.TOKEN_LIMIT))
            .with_execution_completed()
        )
        assert self.observe(state, "budget_respected", ExecutionBudget(max_cost=1.0)) == []
        assert self.observe(state, "budget_respected", ExecutionBudget(max_cost=3.0)) == [
            "stopped for token_limit with 0 tokens and cost 2.0"
        ]

    def test_a_step_in_progress_started_after_max_seconds(self) -> None:
        clock = FakeClock()
        with runtime_context(clock=clock, ids=SeededIds(1)):
            state = AgentState().with_execution_status(ExecutionStatus.IN_PROGRESS)
            clock.advance(7.5)
            started = state.with_step_started()
        checker = InvariantChecker(
            select_invariants(["budget_respected"]), budget=ExecutionBudget(max_seconds=5)
        )
        checker.begin(1, state)
        found = checker.observe(started, is_final=False)
        assert [v.message for v in found] == [
            "step 1 started 7.5s into the execution, max_seconds is 5.0"
        ]

    def test_usage_going_down(self) -> None:
        base = AgentState()
        step = AgentStep(inference_response=reply("x", usage=Usage(input_tokens=5)).to_response())
        more = base.with_current_step(step).with_execution_count(1)
        assert more.execution is not None
        cheaper = step.evolve(inference_response=reply("x").to_response())
        less = more.with_execution(more.execution.evolve(current_step=cheaper))
        checker = InvariantChecker(select_invariants(["monotonic_counters"]))
        checker.begin(1, base)
        assert checker.observe(more, is_final=False) == []
        found = checker.observe(less, is_final=True)
        assert [v.message for v in found] == ["usage went down: 5 -> 0 tokens"]
