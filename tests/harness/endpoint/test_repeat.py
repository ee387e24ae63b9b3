"""``repeat: true``: a reply that answers every further request of its turn, as a judge, a user
simulator or another stateless role is asked again and again, each time a fresh conversation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.results import ScenarioResult

from .conftest import RawChatAgent, assistant_of, first_turn
from .sdk_agents import anthropic_client, openai_client

pytest.importorskip("openai")
pytest.importorskip("anthropic")

JUDGE = """\
name: judge
agent:
  system_prompt: You grade answers. Reply PASS or FAIL.
turns:
  - user: "Question: capital of France? Answer: Paris."
    model:
      - say: PASS
        repeat: true
    expect:
      final_response: PASS
"""

QUESTION = "Question: capital of France? Answer: Paris."
SYSTEM = "You grade answers. Reply PASS or FAIL."


def _ask_chat(handle: EndpointHandle, question: str, stream: bool) -> str:
    client = openai_client(handle)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    if not stream:
        answer = client.chat.completions.create(model="judge", messages=messages)
        return str(answer.choices[0].message.content)
    chunks = client.chat.completions.create(model="judge", messages=messages, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def _ask_responses(handle: EndpointHandle, question: str, stream: bool) -> str:
    client = openai_client(handle)
    if not stream:
        answer = client.responses.create(model="judge", instructions=SYSTEM, input=question)
        return str(answer.output_text)
    with client.responses.stream(model="judge", instructions=SYSTEM, input=question) as events:
        return str(events.get_final_response().output_text)


def _ask_anthropic(handle: EndpointHandle, question: str, stream: bool) -> str:
    client = anthropic_client(handle)
    messages = [{"role": "user", "content": question}]
    if not stream:
        answer = client.messages.create(
            model="judge", max_tokens=16, system=SYSTEM, messages=messages
        )
        return "".join(block.text for block in answer.content if block.type == "text")
    with client.messages.stream(
        model="judge", max_tokens=16, system=SYSTEM, messages=messages
    ) as events:
        return "".join(events.text_stream)


ASKERS = {"chat": _ask_chat, "responses": _ask_responses, "anthropic": _ask_anthropic}


def _outcomes(result: ScenarioResult) -> dict[str, tuple[int, int]]:
    return {o.name: (o.checks, o.failures) for o in result.invariants}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", sorted(ASKERS))
def test_a_judge_asked_fresh_conversations_passes_with_every_invariant_on(
    write_scenario: Callable[[str], Path], api: str, stream: bool
) -> None:
    handle = EndpointHandle(write_scenario(JUDGE))
    ask = ASKERS[api]
    assert [ask(handle, QUESTION, stream) for _ in range(5)] == ["PASS"] * 5
    result = handle.check()
    assert result.turns[0].steps == 5
    outcomes = _outcomes(result)
    assert outcomes["history_grows"] == (5, 0)
    assert outcomes["user_turn_sent"] == (5, 0)
    assert outcomes["script_not_exceeded"] == (5, 0)


def test_a_judge_asked_other_questions_breaks_user_turn_sent_alone(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(JUDGE))
    questions = [QUESTION, "Question: 2+2? Answer: 4.", "Question: sky colour? Answer: blue."]
    assert [_ask_chat(handle, q, False) for q in questions] == ["PASS"] * 3
    result = handle.result()
    assert [(f.invariant, f.step) for f in result.failures] == [
        ("user_turn_sent", 2),
        ("user_turn_sent", 3),
    ]
    # the turn's user text describes one question: a judge asked several excludes the check
    excluded = JUDGE + "invariants: {exclude: [user_turn_sent]}\n"
    handle = EndpointHandle(write_scenario(excluded, name="excluded"))
    assert [_ask_chat(handle, q, False) for q in questions] == ["PASS"] * 3
    assert _outcomes(handle.check())["history_grows"] == (3, 0)


def test_a_repeating_reply_is_used_once_it_answered_and_never_runs_the_script_out(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(JUDGE))
    result = handle.result()  # never asked: the turn was never reached
    assert [f.message for f in result.failures] == [
        "turn 1 was never reached: no request carried its user message"
    ]
    handle = EndpointHandle(write_scenario(JUDGE))
    assert _ask_chat(handle, QUESTION, False) == "PASS"
    assert handle.endpoint.session(handle.api_key).unused_replies == 0
    assert handle.check().turns[0].steps == 1


TOOL_THEN_REPEAT = """\
name: tool-then-repeat
agent: {system_prompt: You answer weather questions.}
turns:
  - user: Weather in Paris?
    model:
      - call: get_weather(city=Paris)
      - say: It is sunny in Paris.
        repeat: true
"""


def test_replies_before_the_repeating_one_must_still_be_used(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(TOOL_THEN_REPEAT))
    agent = RawChatAgent(handle)
    assert agent.post(first_turn()).status_code == 200
    result = handle.result()
    assert [(f.kind, f.message) for f in result.failures] == [
        ("script", "turn 1: scripted model reply 2 was never used")
    ]
    assert result.failures[0].location is not None
    assert result.failures[0].location.endswith(":7")


def test_requests_a_repeating_reply_answers_each_carry_the_conversation_before_it(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(TOOL_THEN_REPEAT))
    agent = RawChatAgent(handle)
    messages = first_turn()
    called = agent.post(messages)
    result = {"role": "tool", "tool_call_id": "call_1_1_1", "content": "sunny"}
    base = [*messages, assistant_of(called), result]
    for _ in range(3):  # three independent follow-ups, each from the same point
        answer = agent.post(base)
        assert answer.json()["choices"][0]["message"]["content"] == "It is sunny in Paris."
    # one that drops the tool round trip the repeating reply first answered after
    assert agent.post(messages).status_code == 200
    outcome = handle.result()
    assert [(f.invariant, f.step) for f in outcome.failures] == [("history_grows", 5)]
    # the conversation the repeating reply first answered: the question and the call
    assert "conversation item 2 of 2 was dropped" in outcome.failures[0].message


def test_a_violation_at_a_repeated_reply_points_at_that_reply(
    write_scenario: Callable[[str], Path],
) -> None:
    text = """\
name: repeat-calls
turns:
  - user: Weather in Paris?
    model:
      - say: Let me look.
      - call: get_forecast(city=Paris)
        repeat: true
"""
    handle = EndpointHandle(write_scenario(text))
    agent = RawChatAgent(handle)  # it offers get_weather only
    looked = agent.post(first_turn())
    base = [*first_turn(), assistant_of(looked)]
    answers: list[Any] = [agent.post(base) for _ in range(3)]
    assert [a.status_code for a in answers] == [200] * 3
    failures = handle.result().failures
    # one violation, said once for the three requests it answered
    assert [(f.invariant, f.step) for f in failures] == [("tools_offered", 2)]
    assert failures[0].message.startswith("requests 2, 3 and 4: tools_offered:")
    assert handle.scenario.source is not None
    assert {f.location for f in failures} == {f"{handle.scenario.source.path}:6"}


def test_the_bundled_judge_grades_any_number_of_answers_with_logprobs() -> None:
    path = Path(__file__).parents[3] / "scenarios" / "endpoint" / "judge.scenario.yaml"
    handle = EndpointHandle(path)
    client = openai_client(handle)
    system = handle.scenario.agent.system_prompt
    verdicts = []
    for _ in range(4):
        answer = client.chat.completions.create(
            model="judge",
            messages=[
                {"role": "system", "content": system},
                {"role": "user", "content": handle.scenario.turns[0].user},
            ],
            logprobs=True,
            top_logprobs=2,
        )
        content = answer.choices[0].logprobs.content[0]
        verdicts.append((answer.choices[0].message.content, content.logprob))
        assert [t.token for t in content.top_logprobs] == ["PASS", "FAIL"]
    assert verdicts == [("PASS", -0.0202)] * 4
    handle.check()


def test_a_stateless_role_with_replies_in_turn_must_exclude_history_grows(
    write_scenario: Callable[[str], Path],
) -> None:
    text = JUDGE.replace(
        "      - say: PASS\n        repeat: true\n", "      - say: PASS\n      - say: FAIL\n"
    )
    text = text.replace("final_response: PASS", "final_response: FAIL")
    handle = EndpointHandle(write_scenario(text))
    assert [_ask_chat(handle, QUESTION, False) for _ in range(2)] == ["PASS", "FAIL"]
    assert [(f.invariant, f.step) for f in handle.result().failures] == [("history_grows", 2)]
    excluded = text + "invariants: {exclude: [history_grows]}\n"
    handle = EndpointHandle(write_scenario(excluded, name="excluded"))
    assert [_ask_chat(handle, QUESTION, False) for _ in range(2)] == ["PASS", "FAIL"]
    handle.check()
