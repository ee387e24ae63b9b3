"""One example: the scenario served as a fresh session, the agent run on it, what crossed the
wire, and the script bounded so that an agent that never stops gets an error."""

from __future__ import annotations

import time
from typing import Any

from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.fuzz.run import AgentRun, bounded, play
from agentrig.harness.fuzz.target import FunctionTarget
from agentrig.harness.scenarios.model import ModelReply, Scenario, ScenarioTurn

from .agents import TOOLS, asks, client_of, correct

PROMPT = "Weather in Paris?"
HOUR = 3600.0


def script(*replies: ModelReply, earlier: tuple[ScenarioTurn, ...] = ()) -> Scenario:
    return Scenario(name="run", turns=(*earlier, ScenarioTurn(user=PROMPT, model=replies)))


def said(text: str, *, repeat: bool = False) -> ModelReply:
    return ModelReply(say=text, repeat=repeat)


def played(scenario: Scenario, agent: Any, *, max_model_calls: int = 10) -> AgentRun:
    with EndpointHandle(scenario) as ep:
        return play(ep, FunctionTarget(agent), scenario, PROMPT, max_model_calls=max_model_calls)


def test_a_run_holds_the_scenario_the_prompt_what_the_agent_returned_and_every_request():
    scenario = script(ModelReply(call="get_weather(city=Paris)"), said("Sunny.", repeat=True))
    run = played(scenario, correct)
    assert run.scenario is scenario  # as given, not as bounded
    assert run.prompt == PROMPT
    assert (run.returned, run.raised) == ("Sunny.", None)
    assert [(e.number, e.reply) for e in run.exchanges] == [(1, 0), (2, 1)]
    assert run.model_calls == 2
    assert run.wire_failures == ()


def test_what_the_agent_raised_is_kept_with_what_it_returned_as_none():
    def crashes(ep: Any, prompt: str) -> str:
        correct(ep, prompt)
        raise KeyError("x")

    run = played(script(said("Hi.", repeat=True)), crashes)
    assert run.returned is None
    assert isinstance(run.raised, KeyError)
    assert run.model_calls == 1


def test_the_wire_checks_that_failed_are_kept():
    # the model called get_weather: a second request without its result breaks the history
    def drops_results(ep: Any, prompt: str) -> str:
        with client_of(ep) as client:
            for _ in range(2):
                client.chat.completions.create(
                    model="gpt", messages=[{"role": "user", "content": prompt}], tools=TOOLS
                )
        return "done"

    run = played(
        script(ModelReply(call="get_weather(city=Paris)"), said("ok", repeat=True)), drops_results
    )
    assert run.wire_failures
    assert all(failure.kind == "invariant" for failure in run.wire_failures)


def test_answered_calls_are_the_calls_the_agent_received_numbered_by_request():
    scenario = script(
        ModelReply(calls=("get_weather(city=Paris)", "get_weather(city=Oslo)")),
        ModelReply(error="the model is down"),
        ModelReply(call="book_flight(to=PAR)"),
        said("Booked.", repeat=True),
    )

    def retries(ep: Any, prompt: str) -> str:
        answer = correct(ep, prompt)
        return answer if answer != "unavailable" else correct(ep, prompt)

    run = played(scenario, retries)
    calls = [(number, call.name, call.arguments) for number, call in run.answered_calls()]
    assert calls == [
        (1, "get_weather", {"city": "Paris"}),
        (1, "get_weather", {"city": "Oslo"}),
        (3, "book_flight", {"to": "PAR"}),
    ]
    assert run.model_calls == 4


def test_calls_whose_answer_never_reached_the_agent_are_not_answered_calls():
    # the answer comes after the client's 30 s timeout: the agent gave up on it
    run = played(script(ModelReply(call="get_weather(city=Paris)", latency=60)), correct)
    assert run.returned == "unavailable"
    assert run.model_calls == 1
    assert run.answered_calls() == ()


def test_in_process_the_agent_does_not_wait():
    def sleeps(ep: Any, prompt: str) -> str:
        time.sleep(HOUR)
        return correct(ep, prompt)

    started = time.monotonic()
    run = played(script(said("Hi.", repeat=True)), sleeps)
    assert time.monotonic() - started < HOUR  # the test would hang for an hour otherwise
    assert run.returned == "Hi."


def test_over_a_live_server_the_agent_waits():
    real = time.sleep

    def looks(ep: Any, prompt: str) -> bool:
        return time.sleep is real

    scenario = script(said("Hi.", repeat=True))
    with EndpointHandle(scenario, live=True) as ep:
        assert play(ep, FunctionTarget(looks), scenario, PROMPT, max_model_calls=3).returned
    with EndpointHandle(scenario) as ep:
        assert not play(ep, FunctionTarget(looks), scenario, PROMPT, max_model_calls=3).returned


def test_the_endpoint_answers_at_most_max_model_calls_requests_then_refuses():
    got, agent = asks(10)
    run = played(script(said("a"), said("b", repeat=True)), agent, max_model_calls=3)
    assert got == ["a", "b", "b", 400]
    assert run.model_calls == 4


def test_the_bound_holds_when_the_script_is_as_long_as_it_or_longer():
    for limit, expected in [(2, ["a", "b", 400]), (1, ["a", 400])]:
        got, agent = asks(10)
        played(script(said("a"), said("b"), said("c", repeat=True)), agent, max_model_calls=limit)
        assert got == expected, limit
    got, agent = asks(10)
    played(script(said("a"), said("b", repeat=True)), agent, max_model_calls=2)
    assert got == ["a", "b", 400]


def test_a_script_that_ends_within_the_bound_is_played_as_it_is():
    got, agent = asks(10)
    scenario = script(said("a"), said("b"))
    assert bounded(scenario, 5) == scenario
    played(scenario, agent, max_model_calls=5)
    assert got == ["a", "b", 400]


def test_bounded_writes_out_the_last_turns_repeating_reply_and_keeps_the_rest():
    earlier = ScenarioTurn(user="Hello", model=(said("Hi", repeat=True),))
    scenario = script(said("a"), said("b", repeat=True), earlier=(earlier,))
    written = bounded(scenario, 4)
    assert written.turns[0] == earlier
    assert written.turns[1].user == PROMPT
    assert [(r.say, r.repeat) for r in written.turns[1].replies] == [
        ("a", False),
        ("b", False),
        ("b", False),
        ("b", False),
    ]
    assert written.model_copy(update={"turns": scenario.turns}) == scenario
    assert [(r.say, r.repeat) for r in scenario.turns[1].replies] == [("a", False), ("b", True)]


def test_a_last_turn_without_a_script_is_left_as_it_is():
    auto = Scenario(name="run", turns=(ScenarioTurn(user=PROMPT, model="auto"),))
    assert bounded(auto, 2) == auto
