"""The ready-made properties, each on an agent that has the bug it catches and on one that
does not."""

from __future__ import annotations

from typing import Any

import pytest

from agentrig.errors import InvalidInputError
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.fuzz import (
    AgentRun,
    SideEffects,
    answers_every_tool_call,
    never_repeats,
    raises_only,
    terminates_within,
)
from agentrig.harness.fuzz.properties import WireInvariants
from agentrig.harness.fuzz.run import play
from agentrig.harness.fuzz.target import FunctionTarget
from agentrig.harness.scenarios.model import ModelReply, Scenario, ScenarioTurn

from .agents import TOOLS, client_of, correct, run_tool

PROMPT = "Weather in Paris?"
TWO_CALLS = ModelReply(calls=("get_weather(city=Paris)", "get_weather(city=Oslo)"))


def _run(agent: Any, *replies: ModelReply) -> AgentRun:
    turn = ScenarioTurn(user=PROMPT, model=(*replies, ModelReply(say="done", repeat=True)))
    scenario = Scenario(name="props", turns=(turn,))
    with EndpointHandle(scenario) as ep:
        return play(ep, FunctionTarget(agent), scenario, PROMPT, max_model_calls=10)


def first_call_only(ep: Any, prompt: str) -> str:
    """Answers only the first call of an answer."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    with client_of(ep) as client:
        while True:
            message = (
                client.chat.completions.create(model="gpt", messages=messages, tools=TOOLS)
                .choices[0]
                .message
            )
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return message.content or ""
            call = message.tool_calls[0]
            result = run_tool(call.function.name, call.function.arguments)  # type: ignore[union-attr]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def stops_at_calls(ep: Any, prompt: str) -> str:
    """Returns as soon as the model calls a tool, without running it."""
    with client_of(ep) as client:
        message = (
            client.chat.completions.create(
                model="gpt", messages=[{"role": "user", "content": prompt}], tools=TOOLS
            )
            .choices[0]
            .message
        )
    return message.content or ""


EFFECTS = SideEffects()


@EFFECTS.track
def get_weather(city: str) -> str:
    """A tool whose calls are recorded."""
    return f"sunny in {city}"


def runs_tools_twice(ep: Any, prompt: str) -> str:
    """Runs each call, then (a bad retry) runs it again."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    with client_of(ep) as client:
        while True:
            message = (
                client.chat.completions.create(model="gpt", messages=messages, tools=TOOLS)
                .choices[0]
                .message
            )
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return message.content or ""
            for call in message.tool_calls:
                get_weather("Paris")
                result = get_weather("Paris")
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def test_wire_invariants_report_an_unanswered_call_with_both_sides():
    run = _run(first_call_only, TWO_CALLS)
    (problem,) = WireInvariants().problems(run)
    assert "tool_results_answer_calls" in problem
    assert "(expected [" in problem
    assert WireInvariants().problems(_run(correct, TWO_CALLS)) == []


def test_raises_only_accepts_the_documented_errors_only():
    run = _run(correct)
    failing = AgentRun(run.scenario, PROMPT, None, KeyError("x"), run.exchanges, ())
    assert raises_only(LookupError).problems(failing) == []
    (problem,) = raises_only(ValueError).problems(failing)
    assert problem == "the agent raised builtins.KeyError: 'x' (documented errors: ValueError)"
    assert raises_only().problems(run) == []


def test_terminates_within_counts_model_calls():
    run = _run(correct, TWO_CALLS)
    assert run.model_calls == 2
    assert terminates_within(2).problems(run) == []
    assert terminates_within(1).problems(run) == ["the agent made 2 model calls, more than 1"]


def test_answers_every_tool_call_catches_an_agent_that_returns_with_calls_pending():
    (problem,) = answers_every_tool_call().problems(_run(stops_at_calls, TWO_CALLS))
    assert problem.startswith("the agent returned without answering the tool calls of request 1")
    assert answers_every_tool_call().problems(_run(correct, TWO_CALLS)) == []


def test_never_repeats_catches_a_tool_run_twice_for_one_call():
    prop = never_repeats(EFFECTS)
    prop.begin()
    run = _run(runs_tools_twice, ModelReply(call="get_weather(city=Paris)"))
    assert prop.problems(run) == [
        "the side-effecting tool get_weather ran 2 time(s), but the model called it 1 time(s)"
    ]
    prop.begin()
    assert prop.problems(_run(runs_tools_twice)) == []


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: raises_only("KeyError"), "[0]"),  # type: ignore[arg-type]
        (lambda: terminates_within(0), "model_calls"),
    ],
)
def test_bad_arguments_name_the_field(make, field):
    with pytest.raises(InvalidInputError) as caught:
        make()
    assert caught.value.field == field
