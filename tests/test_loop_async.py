"""``AgentLoop.aexecute``/``aiterate``: the same run as ``execute``, with a step's tool calls
running together on the event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentLoop,
    AgentState,
    AgentStop,
    ConfigurationError,
    ExecutionStatus,
    HookContext,
    HookTrigger,
    InferenceRequest,
    InferenceResponse,
    StopReason,
    Tool,
    ToolContext,
    UseGuards,
    UseLlmConfig,
    runtime_context,
    tool,
)
from agentrig.clock import current_clock
from agentrig.fakes import (
    FakeClock,
    FunctionLLM,
    ScriptedLLM,
    ScriptedTool,
    SeededIds,
    ToolReply,
    Turn,
    call,
    calls,
    reply,
)

Build = Callable[[FakeClock], tuple[Iterable[Any], list[Turn | str]]]


def agent_and_state(
    build: Build, *, hooks: Iterable[tuple[Any, HookTrigger]] = (), **guards: Any
) -> tuple[AgentLoop, AgentState, FakeClock]:
    """A fresh agent (fake clock, seeded ids) and a fresh state: the same for every call."""
    clock, ids = FakeClock(), SeededIds(3)
    tools, turns = build(clock)
    builder = (
        AgentBuilder.base()
        .with_clock(clock)
        .with_ids(ids)
        .with_capability(UseLlmConfig(ScriptedLLM(turns, clock=clock)))
        .with_tools(list(tools))
    )
    if guards:
        builder.with_capability(UseGuards(**guards))
    for hook, trigger in hooks:
        builder.add_hook(hook, trigger)
    with runtime_context(clock=clock, ids=ids):
        state = AgentState().with_user_message("Hello")
    return builder.build(), state, clock


def both_paths(build: Build, **options: Any) -> tuple[AgentState, AgentState]:
    """The final states of the sync and of the async path, each on a fresh agent."""
    agent, state, _ = agent_and_state(build, **options)
    sync = agent.execute(state)
    agent, state, _ = agent_and_state(build, **options)
    return sync, asyncio.run(agent.aexecute(state))


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


async def alookup(q: str) -> str:
    """Look something up, asynchronously."""
    await asyncio.sleep(0)
    return f"found {q} later"


class TestSameRunAsTheSyncPath:
    def test_a_tool_loop_ends_in_the_same_state(self) -> None:
        def build(clock: FakeClock) -> Any:
            return [lookup], [calls(("lookup", {"q": "a"}), ("lookup", {"q": "b"})), "Done."]

        sync, async_ = both_paths(build)
        assert async_.to_json() == sync.to_json()
        assert async_.final_response().to_text() == "Done."

    def test_aiterate_yields_the_states_iterate_yields(self) -> None:
        def build(clock: FakeClock) -> Any:
            return [lookup], [call("lookup", q="a"), call("lookup", q="b"), "Done."]

        agent, state, _ = agent_and_state(build)
        expected = [s.to_json() for s in agent.iterate(state)]

        async def collect() -> list[str]:
            agent, state, _ = agent_and_state(build)
            return [s.to_json() async for s in agent.aiterate(state)]

        assert asyncio.run(collect()) == expected
        assert len(expected) == 3

    def test_a_stop_in_the_first_of_parallel_calls_records_the_same_results(self) -> None:
        def build(clock: FakeClock) -> Any:
            stopper = ScriptedTool("stopper", [ToolReply(stop="enough")])
            return [stopper, lookup], [calls(("stopper", {}), ("lookup", {"q": "a"}))]

        sync, async_ = both_paths(build)
        assert async_.to_json() == sync.to_json()
        contents = [e.content for e in async_.last_step().tool_executions]  # type: ignore[union-attr]
        assert contents == [
            "Execution stopped: enough",
            "Not executed: the execution was stopped before this call.",
        ]

    def test_a_failing_before_tool_use_hook_records_the_same_results(self) -> None:
        def build(clock: FakeClock) -> Any:
            return [lookup], [calls(("lookup", {"q": "a"}), ("lookup", {"q": "boom"}))]

        def explode(context: HookContext) -> None:
            if context.tool_call is not None and context.tool_call.arguments["q"] == "boom":
                raise RuntimeError("hook broke")

        hooks = [(explode, HookTrigger.BEFORE_TOOL_USE)]
        sync, async_ = both_paths(build, hooks=hooks)
        assert async_.to_json() == sync.to_json()
        step = async_.last_step()
        assert step is not None
        assert [e.content for e in step.tool_executions] == [
            "found a",
            "Not executed: a hook failed before this call.",
        ]


class TestAsyncTools:
    def test_tool_accepts_an_async_function(self) -> None:
        assert tool(alookup).is_async
        assert not tool(lookup).is_async

    def test_an_async_tool_runs_in_both_paths(self) -> None:
        def build(clock: FakeClock) -> Any:
            return [alookup], [call("alookup", q="x"), "ok"]

        sync, async_ = both_paths(build)
        assert async_.to_json() == sync.to_json()
        step = sync.steps()[0]
        assert step.tool_executions[0].content == "found x later"

    def test_an_async_generator_is_still_refused(self) -> None:
        async def numbers(n: int) -> Any:
            yield n

        with pytest.raises(ConfigurationError, match="async generator"):
            tool(numbers)

    def test_a_sync_tool_runs_in_a_worker_thread_seeing_the_runtime_clock(self) -> None:
        seen: list[Any] = []

        def where(context: ToolContext) -> str:
            seen.append((threading.current_thread() is threading.main_thread(), current_clock()))
            return "here"

        def build(clock: FakeClock) -> Any:
            return [where], [call("where"), "ok"]

        agent, state, clock = agent_and_state(build)
        asyncio.run(agent.aexecute(state))
        assert seen == [(False, clock)]

    def test_the_calls_of_a_step_run_together(self) -> None:
        started: list[str] = []
        both_started = asyncio.Event()

        async def meet(name: str) -> str:
            started.append(name)
            if len(started) == 2:
                both_started.set()
            await asyncio.wait_for(both_started.wait(), timeout=5)
            return name

        def build(clock: FakeClock) -> Any:
            return [meet], [calls(("meet", {"name": "a"}), ("meet", {"name": "b"})), "ok"]

        agent, state, _ = agent_and_state(build)
        final = asyncio.run(agent.aexecute(state))
        assert [e.content for e in final.steps()[0].tool_executions] == ["a", "b"]


class TestHookOrder:
    def test_before_hooks_in_call_order_then_the_calls_then_after_hooks(self) -> None:
        order: list[str] = []

        def record(context: HookContext) -> None:
            call = context.tool_call or (
                context.tool_execution and context.tool_execution.tool_call
            )
            assert call is not None
            order.append(f"{context.trigger.value}:{call.arguments['q']}")

        def slow(q: str) -> str:
            order.append(f"run:{q}")
            return q

        def build(clock: FakeClock) -> Any:
            return [slow], [calls(("slow", {"q": "1"}), ("slow", {"q": "2"})), "ok"]

        hooks = [(record, HookTrigger.BEFORE_TOOL_USE), (record, HookTrigger.AFTER_TOOL_USE)]
        agent, state, _ = agent_and_state(build, hooks=hooks)
        asyncio.run(agent.aexecute(state))
        assert order[:2] == ["before_tool_use:1", "before_tool_use:2"]
        assert sorted(order[2:4]) == ["run:1", "run:2"]
        assert order[4:] == ["after_tool_use:1", "after_tool_use:2"]

    def test_async_hooks_are_refused_when_added(self) -> None:
        async def hook(context: HookContext) -> None:
            return None

        with pytest.raises(ConfigurationError, match="async"):
            AgentBuilder.base().add_hook(hook, HookTrigger.BEFORE_STEP)


class TestFakeTime:
    @staticmethod
    def three_slow_calls(clock: FakeClock) -> Any:
        slow = ScriptedTool("slow", [ToolReply(returns="ok", latency=1.0)], clock=clock)
        return [slow], [calls(("slow", {}), ("slow", {}), ("slow", {})), "done"]

    def test_three_one_second_tools_take_one_second_in_the_async_path(self) -> None:
        agent, state, clock = agent_and_state(self.three_slow_calls)
        began = clock.now()
        asyncio.run(agent.aexecute(state))
        assert clock.now() - began == timedelta(seconds=1)

    def test_and_three_seconds_in_the_sync_path(self) -> None:
        agent, state, clock = agent_and_state(self.three_slow_calls)
        began = clock.now()
        agent.execute(state)
        assert clock.now() - began == timedelta(seconds=3)

    def test_budgets_see_the_overlapped_time(self) -> None:
        agent, state, _ = agent_and_state(self.three_slow_calls, max_seconds=2)
        assert agent.execute(state).last_stop_reason() is StopReason.TIME_LIMIT
        agent, state, _ = agent_and_state(self.three_slow_calls, max_seconds=2)
        final = asyncio.run(agent.aexecute(state))
        assert final.last_stop_reason() is StopReason.COMPLETED

    def test_fake_sleeps_wake_in_time_order(self) -> None:
        clock = FakeClock()
        woke: list[tuple[str, float]] = []

        async def nap(name: str, seconds: float) -> None:
            began = clock.now()
            await clock.sleep(seconds)
            woke.append((name, (clock.now() - began).total_seconds()))

        async def main() -> None:
            await asyncio.gather(nap("long", 2), nap("short", 1), nap("none", 0))

        asyncio.run(main())
        assert woke == [("none", 0), ("short", 1), ("long", 2)]


class TestEventLoopBoundaries:
    def test_execute_inside_a_running_loop_fails_at_once_naming_aexecute(self) -> None:
        def build(clock: FakeClock) -> Any:
            return [], ["hi"]

        agent, state, _ = agent_and_state(build)

        async def main() -> None:
            agent.execute(state)

        with pytest.raises(ConfigurationError, match="aexecute"):
            asyncio.run(main())

    def test_cancelling_aexecute_leaves_the_last_state_resumable(self) -> None:
        gate = asyncio.Event()

        async def wait_forever() -> str:
            await gate.wait()
            return "never"

        def build(clock: FakeClock) -> Any:
            return [lookup, wait_forever], [call("lookup", q="a"), call("wait_forever"), "done"]

        agent, state, _ = agent_and_state(build)
        seen: list[AgentState] = []

        async def run() -> None:
            async for yielded in agent.aiterate(state):
                seen.append(yielded)

        async def main() -> None:
            task = asyncio.create_task(run())
            while not seen:
                await asyncio.sleep(0)
            await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(main())
        assert len(seen) == 1
        assert seen[0].status() is ExecutionStatus.IN_PROGRESS


class TestProviders:
    def test_an_async_function_llm(self) -> None:
        async def answer(request: InferenceRequest) -> str:
            await asyncio.sleep(0)
            return "async hello"

        llm = FunctionLLM(answer)
        agent = AgentBuilder.base().with_capability(UseLlmConfig(llm)).build()
        state = AgentState().with_user_message("hi")
        assert asyncio.run(agent.aexecute(state)).final_response().to_text() == "async hello"
        assert agent.execute(state).final_response().to_text() == "async hello"
        assert len(llm.calls) == 2

    def test_a_sync_only_provider_runs_in_a_worker_thread(self) -> None:
        threads: list[bool] = []

        class SyncOnly:
            def infer(self, request: InferenceRequest) -> InferenceResponse:
                threads.append(threading.current_thread() is threading.main_thread())
                return InferenceResponse(content="sync answer")

        agent = AgentBuilder.base().with_capability(UseLlmConfig(SyncOnly())).build()
        final = asyncio.run(agent.aexecute(AgentState().with_user_message("hi")))
        assert final.final_response().to_text() == "sync answer"
        assert threads == [False]

    def test_an_async_only_provider_runs_in_the_sync_path(self) -> None:
        class AsyncOnly:
            async def ainfer(self, request: InferenceRequest) -> InferenceResponse:
                return InferenceResponse(content="async answer")

        agent = AgentBuilder.base().with_capability(UseLlmConfig(AsyncOnly())).build()
        final = agent.execute(AgentState().with_user_message("hi"))
        assert final.final_response().to_text() == "async answer"

    def test_a_scripted_stop_tool_outcome_is_the_same_on_both_paths(self) -> None:
        class Stopper(Tool):
            name = "halt"
            description = "Stops."

            def parameters(self) -> dict[str, Any]:
                return {"type": "object", "properties": {}}

            def invoke(self, arguments: Any, context: ToolContext) -> Any:
                raise AgentStop("halted", source="tool:halt")

        def build(clock: FakeClock) -> Any:
            return [Stopper()], [call("halt"), reply("never")]

        agent, state, _ = agent_and_state(build)
        sync = agent.execute(state)
        agent, state, _ = agent_and_state(build)
        async_ = asyncio.run(agent.aexecute(state))
        assert async_.to_json() == sync.to_json()
        assert async_.last_stop_reason() is StopReason.STOP_REQUESTED
