"""The seeds' own acceptance lists: seed 001 "Test Cases" and seed 004 "Testing Checklist"."""

from __future__ import annotations

from typing import Any

import pytest

from agentrig import (
    AgentState,
    CancellationToken,
    ExecutionStatus,
    Role,
    SubagentDefinition,
    Usage,
    UseCooperativeCancellation,
    UseGuards,
    UseSubagents,
)
from agentrig.fakes import ScriptedLLM, call, calls, reply

SUBAGENT_PROMPT = "You are a researcher. INTERNAL-ONLY."


def get_weather(city: str) -> str:
    """Weather for a city."""
    return {"Paris": "sunny, 21C", "Oslo": "rain, 9C"}.get(city, "unknown")


def get_time(city: str) -> str:
    """Local time in a city."""
    return "12:00"


def roles(messages: Any) -> list[str]:
    return [m.role.value for m in messages]


def buffer(state: AgentState) -> Any:
    return state.store().messages_of("execution_buffer")


def run(
    make_agent, start, script: list, *capabilities: Any, extra_tools: tuple = (), **options: Any
) -> list[AgentState]:
    tools = [get_weather, get_time, *extra_tools]
    agent = make_agent(ScriptedLLM(script), tools, *capabilities, **options)
    return list(agent.iterate(start("What's the weather?")))


def assert_clean(final: AgentState, answer: str) -> None:
    assert roles(final.messages()) == ["user", "assistant"]
    assert final.messages()[-1].content == answer
    assert not any(m.is_trace for m in final.messages())
    assert not buffer(final)


def interrupted_by(kind: str) -> dict[str, Any]:
    """A script, capabilities and tools that interrupt the run after its first step."""
    two_tool_steps = [call("get_weather", city="Paris"), call("get_time", city="Paris")]
    if kind == "budget":
        return {"script": two_tool_steps, "capabilities": (UseGuards(max_steps=1),)}
    if kind == "failure":
        return {"script": two_tool_steps[:1], "capabilities": ()}
    token = CancellationToken()

    def cancelling_weather(city: str) -> str:
        token.cancel()
        return "sunny"

    return {
        "script": [call("cancelling_weather", city="Paris"), reply("never")],
        "capabilities": (UseCooperativeCancellation(token),),
        "extra_tools": (cancelling_weather,),
    }


def run_interrupted(make_agent, start, kind: str) -> list[AgentState]:
    setup = interrupted_by(kind)
    return run(
        make_agent,
        start,
        setup["script"],
        *setup["capabilities"],
        extra_tools=setup.get("extra_tools", ()),
    )


def test_seed001_case1_single_tool_call_keeps_messages_clean(make_agent, start) -> None:
    script = [call("get_weather", city="Paris"), reply("Paris is sunny.")]
    final = run(make_agent, start, script)[-1]
    assert_clean(final, "Paris is sunny.")
    assert final.status() is ExecutionStatus.COMPLETED


def test_seed001_case2_multiple_tool_calls_trace_only_in_buffer(make_agent, start) -> None:
    script = [
        calls(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})),
        call("get_time", city="Oslo"),
        reply("Paris is sunny, Oslo rainy at noon."),
    ]
    first, second, final = run(make_agent, start, script)
    assert roles(buffer(first)) == ["assistant", "tool", "tool"]
    assert roles(buffer(second)) == ["assistant", "tool", "tool", "assistant", "tool"]
    for during in (first, second):
        assert roles(during.messages()) == ["user"]
        assert all(m.is_trace for m in buffer(during))
    assert_clean(final, "Paris is sunny, Oslo rainy at noon.")
    assert sum(len(step.tool_executions) for step in final.steps()) == 3


@pytest.mark.parametrize("interruption", ["budget", "failure", "cancellation"])
def test_seed001_case3_interrupted_execution_clears_buffer_and_keeps_partial_state(
    make_agent, start, interruption: str
) -> None:
    states = run_interrupted(make_agent, start, interruption)
    assert buffer(states[0])
    final = states[-1]
    assert final.status() in (ExecutionStatus.STOPPED, ExecutionStatus.FAILED)
    assert not buffer(final)
    assert roles(final.messages()) == ["user"]
    assert final.step_count() == 1
    step = final.steps()[0]
    assert roles(step.output_messages) == ["assistant", "tool"]
    assert step.tool_executions[0].value in ("sunny, 21C", "sunny")
    assert AgentState.from_json(final.to_json()) == final


def test_seed001_case4_subagent_parent_sees_only_the_response_text(make_agent, start) -> None:
    child = ScriptedLLM([call("get_weather", city="Oslo"), reply("Oslo: rain, 9C.")])
    researcher = SubagentDefinition(
        name="researcher", system_prompt=SUBAGENT_PROMPT, provider=child
    )
    script = [
        call("spawn_subagent", subagent="researcher", prompt="Weather in Oslo?"),
        reply("It rains in Oslo."),
    ]
    final = run(make_agent, start, script, UseSubagents([researcher]))[-1]
    assert_clean(final, "It rains in Oslo.")
    execution = final.steps()[0].tool_executions[0]
    assert execution.content == "Oslo: rain, 9C."
    assert "INTERNAL-ONLY" not in final.to_json()
    assert final.store().to_messages().to_text() == "What's the weather?\nIt rains in Oslo."


def test_seed001_case5_resume_starts_with_an_empty_buffer_and_keeps_messages(
    make_agent, start
) -> None:
    llm = ScriptedLLM(
        [
            call("get_weather", city="Paris"),
            reply("Paris is sunny."),
            call("get_weather", city="Oslo"),
            reply("Oslo is rainy."),
        ]
    )
    agent = make_agent(llm, [get_weather])
    first = agent.execute(start("Paris?"))
    second_states = list(agent.iterate(first.with_user_message("And Oslo?")))
    in_progress, final = second_states
    assert roles(llm.requests[2].messages) == ["user", "assistant", "user"]
    assert {m.execution_id for m in buffer(in_progress)} == {in_progress.execution_id()}
    assert len(buffer(in_progress)) == 2
    assert roles(final.messages()) == ["user", "assistant", "user", "assistant"]
    assert final.messages().to_text() == "Paris?\nParis is sunny.\nAnd Oslo?\nOslo is rainy."
    assert not buffer(final)
    assert final.execution_count == 2


def test_seed004_item1_basic_execution(make_agent, start) -> None:
    script = [call("get_weather", city="Paris"), reply("Paris: sunny, 21C.")]
    final = run(make_agent, start, script)[-1]
    execution = final.steps()[0].tool_executions[0]
    assert (execution.name, execution.arguments, execution.value) == (
        "get_weather",
        {"city": "Paris"},
        "sunny, 21C",
    )
    assert final.final_response().to_text() == "Paris: sunny, 21C."
    assert final.has_final_response()


def test_seed004_item2_multiple_tools_buffered(make_agent, start) -> None:
    script = [
        calls(("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})),
        reply("Sunny at noon."),
    ]
    middle, final = run(make_agent, start, script)
    assert [m.tool_result.tool_name for m in buffer(middle) if m.tool_result] == [
        "get_weather",
        "get_time",
    ]
    assert_clean(final, "Sunny at noon.")


def test_seed004_item3_no_tool_calls(make_agent, start) -> None:
    states = run(make_agent, start, [reply("Just an answer.")])
    assert len(states) == 1
    final = states[0]
    assert_clean(final, "Just an answer.")
    assert final.step_count() == 1
    assert final.status() is ExecutionStatus.COMPLETED


def test_seed004_item4_subagent(make_agent, start) -> None:
    child = ScriptedLLM([reply("child says hi")])
    helper = SubagentDefinition(name="helper", system_prompt=SUBAGENT_PROMPT, provider=child)
    script = [call("spawn_subagent", subagent="helper", prompt="say hi"), reply("Parent: hi")]
    final = run(make_agent, start, script, UseSubagents([helper]))[-1]
    assert final.steps()[0].tool_executions[0].content == "child says hi"
    assert_clean(final, "Parent: hi")


def test_seed004_item5_interrupted_state_is_consistent(make_agent, start) -> None:
    final = run_interrupted(make_agent, start, "budget")[-1]
    assert final.status() is ExecutionStatus.STOPPED
    assert not buffer(final)
    assert final.current_step() is None
    assert final.messages_for_inference() == final.messages()
    assert final.usage() == sum((s.usage() for s in final.steps()), start=Usage())


def test_seed004_item6_backward_compatible_inline_mode(make_agent, start) -> None:
    llm = ScriptedLLM(
        [call("get_weather", city="Paris"), reply("Sunny."), reply("You're welcome.")]
    )
    agent = make_agent(llm, [get_weather], inline=True)
    first = agent.execute(start("Paris?"))
    assert roles(first.messages()) == ["user", "assistant", "tool", "assistant"]
    assert [m.is_trace for m in first.messages()] == [False, True, True, False]
    assert not buffer(first)
    second = agent.execute(first.with_user_message("Thanks!"))
    request = llm.requests[2]
    assert roles(request.messages) == ["user", "assistant", "user"]
    assert request.messages.to_text() == "Paris?\nSunny.\nThanks!"
    assert len(second.messages()) == 6
    assert second.messages()[1].role is Role.ASSISTANT
    assert second.messages()[1].is_trace
