"""The ready-made properties, each on an agent that has the bug it catches and on one that
does not."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from agentrig.drivers._sdk import RAW_ARGUMENTS_KEY
from agentrig.errors import InvalidInputError
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.fuzz import (
    AgentRun,
    SideEffects,
    UserCheck,
    answers_every_tool_call,
    never_repeats,
    raises_only,
    terminates_within,
)
from agentrig.harness.fuzz.properties import WireInvariants, all_problems, as_property
from agentrig.harness.fuzz.run import play
from agentrig.harness.fuzz.target import FunctionTarget
from agentrig.harness.results import Failure
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
    decoding = AgentRun(run.scenario, PROMPT, None, json.JSONDecodeError("bad", "{", 0), (), ())
    assert raises_only(ValueError, TypeError).problems(decoding) == []
    assert raises_only(KeyError, TypeError).problems(decoding) == [
        "the agent raised json.decoder.JSONDecodeError: bad: line 1 column 1 (char 0) "
        "(documented errors: KeyError, TypeError)"
    ]
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


SCENARIO = Scenario(name="props", turns=(ScenarioTurn(user=PROMPT, model=(ModelReply(say="ok"),)),))


def run_with(*failures: Failure, raised: Exception | None = None) -> AgentRun:
    """A run that sent no request (or whose requests do not matter) and broke ``failures``."""
    return AgentRun(SCENARIO, PROMPT, None, raised, (), failures)


def grown(sent: Any, got: Any, invariant: str = "history_grows") -> Failure:
    return Failure(
        kind="invariant",
        message="the history changed",
        invariant=invariant,
        expected=sent,
        observed=got,
    )


RAW = {RAW_ARGUMENTS_KEY: "{city: Paris"}
REENCODED = {"INVALID_JSON": "{city: Paris"}


def assistant(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def weather_call(arguments: Any, name: str = "get_weather", id: str = "c1") -> dict[str, Any]:
    return {"id": id, "name": name, "arguments": arguments}


def test_wire_invariants_let_an_agent_resend_arguments_that_were_not_json_reencoded():
    sent = assistant(weather_call(RAW), weather_call({"city": "Oslo"}, id="c2"))
    got = assistant(weather_call(REENCODED), weather_call({"city": "Oslo"}, id="c2"))
    assert WireInvariants().problems(run_with(grown(sent, got))) == []


@pytest.mark.parametrize(
    ("sent", "got", "invariant"),
    [
        # the same change found by another invariant
        (assistant(weather_call(RAW)), assistant(weather_call(REENCODED)), "reasoning_sent_back"),
        # what is not a message with calls
        (["a"], {"tool_calls": []}, "history_grows"),
        ({"tool_calls": []}, "text", "history_grows"),
        ({"content": "a"}, {"content": "b"}, "history_grows"),
        ({"tool_calls": "x"}, {"tool_calls": []}, "history_grows"),
        (assistant(), assistant(content="changed"), "history_grows"),
        # calls on one side only; a call dropped, the message's text changed, a call not a
        # mapping; a call resent as it was, then one whose arguments (JSON) changed
        (assistant(weather_call(RAW)), {**assistant(), "tool_calls": None}, "history_grows"),
        (
            assistant(weather_call(RAW, id="c0"), weather_call({"city": "Paris"})),
            assistant(weather_call(RAW, id="c0"), weather_call({"city": "Oslo"})),
            "history_grows",
        ),
        (assistant(weather_call(RAW)), assistant(), "history_grows"),
        (
            assistant(weather_call(RAW)),
            assistant(weather_call(REENCODED), content="changed"),
            "history_grows",
        ),
        (assistant(weather_call(RAW)), assistant("c1"), "history_grows"),  # type: ignore[arg-type]
        # arguments that were JSON, changed; raw arguments, with the call renamed
        (
            assistant(weather_call({"city": "Paris"})),
            assistant(weather_call({"city": "Oslo"})),
            "history_grows",
        ),
        (
            assistant(weather_call(RAW)),
            assistant(weather_call(REENCODED, name="get_time")),
            "history_grows",
        ),
        (
            assistant(weather_call({**RAW, "city": "Paris"})),
            assistant(weather_call(REENCODED)),
            "history_grows",
        ),
    ],
)
def test_wire_invariants_report_any_other_change_with_both_sides(sent, got, invariant):
    (problem,) = WireInvariants().problems(run_with(grown(sent, got, invariant)))
    assert problem == (
        f"the history changed (expected {json.dumps(sent, ensure_ascii=False)}, "
        f"got {json.dumps(got, ensure_ascii=False)})"
    )


def test_wire_invariants_show_a_message_alone_and_cut_long_sides():
    plain = Failure(kind="invariant", message="a request was not read", invariant="readable")
    long = grown("é" * 400, None)
    longest = grown("é" * 298, None)  # 300 characters with its quotes: shown whole
    assert WireInvariants().problems(run_with(plain, long, longest)) == [
        "a request was not read",
        'the history changed (expected "' + "é" * 296 + "..., got null)",
        'the history changed (expected "' + "é" * 298 + '", got null)',
    ]


def plain_weather(city: str) -> str:
    """A tool whose calls a test's ``SideEffects`` records."""
    return f"sunny in {city}"


def test_never_repeats_checks_the_tools_given_and_allows_a_run_per_call():
    effects = SideEffects()
    weather = effects.track(plain_weather)
    refund = effects.track(lambda: "refunded", name="issue_refund")

    def runs_each_call_once(ep: Any, prompt: str) -> str:
        messages: list[Any] = [{"role": "user", "content": prompt}]
        with client_of(ep) as client:
            while True:
                create = client.chat.completions.create
                message = create(model="gpt", messages=messages, tools=TOOLS).choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    return message.content or ""
                for call in message.tool_calls:
                    content = weather("Paris")
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": content})

    checked = never_repeats(effects)
    checked.begin()
    run = _run(runs_each_call_once, ModelReply(call="get_weather(city=Paris)"))
    refund()
    refund()
    assert effects.executed == {"plain_weather": 1, "issue_refund": 2}
    # tracked under the function's name, which is not the tool the model called
    assert checked.problems(run) == [
        "the side-effecting tool issue_refund ran 2 time(s), but the model called it 0 time(s)",
        "the side-effecting tool plain_weather ran 1 time(s), but the model called it 0 time(s)",
    ]
    renamed = SideEffects()
    renamed.executed.update({"get_weather": 1, "issue_refund": 2})
    assert never_repeats(renamed, ["get_weather"]).problems(run) == []
    assert never_repeats(renamed, iter(["issue_refund"])).problems(run) == [
        "the side-effecting tool issue_refund ran 2 time(s), but the model called it 0 time(s)"
    ]
    assert never_repeats(renamed).problems(run) == never_repeats(
        renamed, ["issue_refund"]
    ).problems(run)


# raised, not asserted: pytest rewrites a test module's assert statements' messages
def no_crash(run: AgentRun) -> None:
    if run.raised is not None:
        raise AssertionError


def said_why(run: AgentRun) -> None:
    if run.raised is not None:
        raise AssertionError(f"it raised {run.raised!r}")


def test_a_user_check_is_named_by_its_function_and_says_what_it_found():
    crashed = run_with(raised=KeyError("x"))
    assert UserCheck(no_crash).problems(crashed) == ["no_crash failed"]
    assert UserCheck(said_why).problems(crashed) == ["said_why: it raised KeyError('x')"]
    assert UserCheck(no_crash).problems(run_with()) == []
    listing = as_property(lambda run: ["one", "two"])
    assert listing.problems(run_with()) == ["<lambda>: one", "<lambda>: two"]
    assert as_property(lambda run: []).problems(run_with()) == []
    nameless = UserCheck(functools.partial(said_why))
    assert nameless.problems(crashed) == ["check: it raised KeyError('x')"]


def test_all_problems_names_each_ready_made_property_and_leaves_user_checks_as_they_say():
    run = run_with(grown({"content": "a"}, {"content": "b"}), raised=KeyError("x"))
    properties = [
        as_property(WireInvariants()),
        raises_only(),
        terminates_within(1),
        as_property(said_why),
    ]
    assert all_problems(run, properties) == [
        'wire_invariants: the history changed (expected {"content": "a"}, got {"content": "b"})',
        "raises_only: the agent raised builtins.KeyError: 'x' (documented errors: none)",
        "said_why: it raised KeyError('x')",
    ]


def test_answers_every_tool_call_ignores_calls_the_agent_never_received():
    # the answer comes after the client's 30 s timeout: the agent gave up on it
    run = _run(correct, ModelReply(calls=TWO_CALLS.calls, latency=60))
    assert run.returned == "unavailable"
    assert [(e.answered, e.plan.answer is not None) for e in run.exchanges] == [(False, True)]
    assert run.answered_calls() == ()
    assert answers_every_tool_call().problems(run) == []


def test_answers_every_tool_call_holds_when_the_last_request_got_no_answer():
    # the calls were answered (the results sent), and the model failed on them
    run = _run(correct, TWO_CALLS, ModelReply(error="the model is down"))
    assert [e.plan.answer is not None for e in run.exchanges] == [True, False]
    assert run.returned == "unavailable"
    assert answers_every_tool_call().problems(run) == []
    assert answers_every_tool_call().problems(run_with()) == []  # no request at all


def test_answers_every_tool_call_leaves_a_run_that_raised_to_raises_only():
    run = _run(stops_at_calls, TWO_CALLS)
    crashed = AgentRun(run.scenario, PROMPT, None, KeyError("x"), run.exchanges, ())
    assert answers_every_tool_call().problems(crashed) == []
    (problem,) = answers_every_tool_call().problems(run)
    call_ids = [call.id for _, call in run.answered_calls()]
    assert problem == (
        "the agent returned without answering the tool calls of request 1: "
        f"get_weather (id {call_ids[0]!r}), get_weather (id {call_ids[1]!r})"
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: raises_only(KeyError, "ValueError"),
            "invalid raises_only: [1]: expected an exception type, got 'ValueError'",
        ),
        (
            lambda: terminates_within(True),
            "invalid terminates_within: model_calls: expected a positive integer, got True",
        ),
        (
            lambda: terminates_within(2.0),
            "invalid terminates_within: model_calls: expected a positive integer, got 2.0",
        ),
        (
            lambda: as_property(5),
            "invalid properties: <root>: expected a Property or a function of the run, got 5",
        ),
    ],
)
def test_bad_arguments_say_what_was_expected(make, message):
    with pytest.raises(InvalidInputError) as caught:
        make()
    assert str(caught.value) == message
