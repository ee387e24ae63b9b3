"""A scenario reply's ``think:`` over the wire: the reasoning each API sends (an Anthropic
thinking block with its signature, a Responses reasoning item, a Chat ``reasoning_content``),
and the ``reasoning_sent_back`` check that an agent returns sealed reasoning with its tool calls."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentrig as ar
from agentrig.harness import load_scenario, run_scenario
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.runner import final_states

from .conftest import REASONING_WEATHER
from .sdk_agents import (
    SYSTEM,
    agentrig_provider,
    anthropic_agent,
    anthropic_client,
    anthropic_round_trip,
    first_turn,
    openai_client,
    reasoning_violations,
    responses_agent,
    weather_agent,
)

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")


FIRST_THOUGHT = "The user wants the weather, so I call the tool."


@pytest.fixture
def reasoning(write_scenario: Callable[[str], Path]) -> Path:
    return write_scenario(REASONING_WEATHER)


# --- what each API sends --------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_anthropic_answers_with_a_signed_thinking_block_first(
    reasoning: Path, stream: bool
) -> None:
    handle = EndpointHandle(reasoning)
    client = anthropic_client(handle)
    options: dict[str, Any] = {
        "model": "claude-test",
        "max_tokens": 256,
        "system": SYSTEM,
        "messages": first_turn(),
    }
    if stream:
        with client.messages.stream(**options) as events:
            kinds = [event.type for event in events]
            message = events.get_final_message()
        assert "thinking" in kinds  # the SDK's own event for a thinking_delta
        assert "signature" in kinds
    else:
        message = client.messages.create(**options)
    thinking, use = message.content
    assert thinking.type == "thinking"
    assert thinking.thinking == FIRST_THOUGHT
    assert thinking.signature  # opaque, and the same on every run
    assert use.type == "tool_use"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_responses_answers_with_a_reasoning_item_sealed_when_asked(
    reasoning: Path, stream: bool
) -> None:
    handle = EndpointHandle(reasoning)
    client = openai_client(handle)
    options: dict[str, Any] = {
        "model": "gpt-test",
        "input": "Weather in Paris?",
        "include": ["reasoning.encrypted_content"],
    }
    if stream:
        with client.responses.stream(**options) as events:
            deltas = [e.delta for e in events if e.type == "response.reasoning_summary_text.delta"]
            response = events.get_final_response()
        assert "".join(deltas) == FIRST_THOUGHT
    else:
        response = client.responses.create(**options)
    item, call = response.output
    assert (item.type, item.summary[0].text) == ("reasoning", FIRST_THOUGHT)
    assert item.encrypted_content
    assert call.type == "function_call"
    unsealed = EndpointHandle(reasoning)
    plain = openai_client(unsealed).responses.create(model="gpt-test", input="Weather in Paris?")
    assert plain.output[0].encrypted_content is None


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_chat_answers_with_reasoning_content_as_compatible_servers_do(
    reasoning: Path, stream: bool
) -> None:
    handle = EndpointHandle(reasoning)
    client = openai_client(handle)
    options: dict[str, Any] = {"model": "gpt-test", "messages": first_turn()}
    if stream:
        chunks = list(client.chat.completions.create(**options, stream=True))
        pieces = [(c.choices[0].delta.model_extra or {}).get("reasoning_content") for c in chunks]
        assert "".join(p for p in pieces if p) == FIRST_THOUGHT
    else:
        completion = client.chat.completions.create(**options)
        extra = completion.choices[0].message.model_extra or {}
        assert extra["reasoning_content"] == FIRST_THOUGHT


# --- agents that send it back, and agents that do not ---------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_an_sdk_agent_that_returns_its_thinking_blocks_passes(
    reasoning: Path, stream: bool
) -> None:
    handle = EndpointHandle(reasoning)
    answer = anthropic_agent(anthropic_client(handle), first_turn(), stream=stream)
    assert answer == "It is sunny in Paris today."
    result = handle.check()
    outcome = {o.name: (o.checks, o.failures) for o in result.invariants}
    assert outcome["reasoning_sent_back"] == (2, 0)


def test_a_responses_agent_that_returns_its_reasoning_items_passes(reasoning: Path) -> None:
    handle = EndpointHandle(reasoning)
    client = openai_client(handle)
    create = client.responses.create

    def sealed(**options: Any) -> Any:
        return create(**options, include=["reasoning.encrypted_content"])

    client.responses.create = sealed
    items: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    assert responses_agent(client, items) == "It is sunny in Paris today."
    assert [item["type"] for item in items[1:4]] == [
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert items[1]["encrypted_content"]
    handle.check()


def test_an_agent_that_drops_the_thinking_block_is_reported(reasoning: Path) -> None:
    handle = EndpointHandle(reasoning)
    anthropic_round_trip(handle, lambda block: None)
    [problem] = reasoning_violations(handle)
    assert problem.message == (
        "request 2: reasoning_sent_back: the answer that called get_weather reasoned first, and "
        "its thinking block (with its signature) was not sent back with the calls: the real API "
        "refuses to go on with a reasoning model's tool calls without it"
    )
    assert problem.location == f"{reasoning}:11"  # the reply that reasoned
    assert problem.observed is None


def test_reasoning_dropped_by_the_next_turn_points_at_the_reply_that_reasoned(
    write_scenario: Callable[[str], Path],
) -> None:
    # An agent that leaves a reasoned tool call unanswered, thinking block and all, and asks
    # its next question: the reply to blame is the first turn's, not the next turn's first.
    path = write_scenario(REASONING_WEATHER + "  - user: And in Rome?\n    model: [say: Rainy.]\n")
    handle = EndpointHandle(path)
    client = anthropic_client(handle)
    messages = first_turn()
    first = client.messages.create(model="claude-test", max_tokens=256, messages=messages)
    [_, use] = [block.model_dump(exclude_none=True) for block in first.content]
    messages += [
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": "And in Rome?"},
    ]
    client.messages.create(model="claude-test", max_tokens=256, messages=messages)
    [problem] = reasoning_violations(handle)
    assert problem.message.startswith("request 2: reasoning_sent_back: ")
    assert problem.location == f"{path}:11"  # the reply that reasoned, in turn 1


TWO_REASONED_CALLS = """\
name: two-reasoned-calls
turns:
  - user: Weather in Paris?
    model:
      - think: I call the tool for Paris.
        call: get_weather(city=Paris)
      - think: Now for Oslo.
        call: get_weather(city=Oslo)
      - say: Sunny in both.
"""


def _sent_back(answer: Any, *, thinking: bool, result: str) -> list[dict[str, Any]]:
    """The assistant message of ``answer`` (with or without its thinking block) and its
    tool result."""
    blocks = [block.model_dump(exclude_none=True) for block in answer.content]
    use = blocks[-1]
    return [
        {"role": "assistant", "content": blocks if thinking else [use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": result}],
        },
    ]


def test_reasoning_dropped_later_points_at_the_last_reply_that_reasoned(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(TWO_REASONED_CALLS)
    handle = EndpointHandle(path)
    client = anthropic_client(handle)
    messages = first_turn()
    paris = client.messages.create(model="claude-test", max_tokens=256, messages=messages)
    messages += _sent_back(paris, thinking=True, result="sun")
    oslo = client.messages.create(model="claude-test", max_tokens=256, messages=messages)
    messages += _sent_back(oslo, thinking=False, result="sun")
    client.messages.create(model="claude-test", max_tokens=256, messages=messages)
    [problem] = reasoning_violations(handle)
    assert problem.message.startswith("request 3: reasoning_sent_back: the answer that called ")
    assert problem.location == f"{path}:7"  # Oslo's reply, not Paris's


def test_reasoning_dropped_after_a_fault_points_at_the_reply_that_reasoned(
    write_scenario: Callable[[str], Path],
) -> None:
    # The agent sends the reasoned call back unanswered (its tool failed), meets a fault, then
    # sends it again without its thinking: the reply to blame is the one that reasoned.
    fault = "      - fault: {status: 503}\n"
    path = write_scenario(
        TWO_REASONED_CALLS.replace("      - think: Now", fault + "      - think: Now")
    )
    handle = EndpointHandle(path)
    client = anthropic_client(handle).with_options(max_retries=0)
    messages = first_turn()
    paris = client.messages.create(model="claude-test", max_tokens=256, messages=messages)
    [unanswered, _] = _sent_back(paris, thinking=True, result="sun")
    with pytest.raises(anthropic.InternalServerError):
        client.messages.create(
            model="claude-test", max_tokens=256, messages=[*messages, unanswered]
        )
    messages += _sent_back(paris, thinking=False, result="sun")
    client.messages.create(model="claude-test", max_tokens=256, messages=messages)
    [problem] = reasoning_violations(handle)
    assert problem.message.startswith("request 3: reasoning_sent_back: the answer that called ")
    assert problem.location == f"{path}:5"  # the reply that reasoned, not the fault (line 7)


def test_an_agent_that_changes_the_signature_is_reported(reasoning: Path) -> None:
    handle = EndpointHandle(reasoning)
    signatures: list[str] = []

    def forge(block: dict[str, Any]) -> dict[str, Any]:
        signatures.append(block["signature"])
        return {**block, "signature": "forged"}

    anthropic_round_trip(handle, forge)
    [problem] = reasoning_violations(handle)
    assert problem.message == (
        "request 2: reasoning_sent_back: the answer that called get_weather reasoned first, and "
        "its thinking block (with its signature) came back changed with the calls: the real API "
        "refuses to go on with a reasoning model's tool calls without it"
    )
    assert (problem.expected, problem.observed) == (signatures[0], "forged")


def test_every_call_of_the_answer_is_named(write_scenario: Callable[[str], Path]) -> None:
    text = REASONING_WEATHER.replace(
        "        call: get_weather(city=Paris)\n",
        "        calls: [get_weather(city=Paris), get_weather(city=Lyon)]\n",
    )
    handle = EndpointHandle(write_scenario(text, name="two-calls"))
    anthropic_round_trip(handle, lambda block: None)
    [problem] = reasoning_violations(handle)
    assert problem.message.startswith(
        "request 2: reasoning_sent_back: the answer that called get_weather, get_weather "
        "reasoned first"
    )


def test_an_agent_that_goes_on_over_an_api_without_sealed_reasoning_is_reported(
    reasoning: Path,
) -> None:
    handle = EndpointHandle(reasoning)
    messages = first_turn()
    first = anthropic_client(handle).messages.create(
        model="claude-test", max_tokens=256, messages=messages
    )
    use = first.content[1]
    arguments = json.dumps(use.input)
    call = {
        "id": use.id,
        "type": "function",
        "function": {"name": use.name, "arguments": arguments},
    }
    openai_client(handle).chat.completions.create(  # the same session: the same key
        model="gpt-test",
        messages=[
            *messages,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": use.id, "content": "sun"},
        ],
    )
    [problem] = reasoning_violations(handle)
    assert problem.message == (
        "request 2: reasoning_sent_back: the answer that called get_weather reasoned first, and "
        "its sealed reasoning was not sent back with the calls: the real API refuses to go on "
        "with a reasoning model's tool calls without it"
    )


def test_reasoning_before_a_final_answer_need_not_come_back(
    write_scenario: Callable[[str], Path],
) -> None:
    text = (
        REASONING_WEATHER
        + """\
  - user: And tomorrow?
    model:
      - say: Sunny too.
"""
    )
    handle = EndpointHandle(write_scenario(text, name="two-turns"))
    client = anthropic_client(handle)
    messages = first_turn()
    assert anthropic_agent(client, messages) == "It is sunny in Paris today."
    answer = messages[-1]["content"]
    assert [block["type"] for block in answer] == ["thinking", "text"]
    messages[-1] = {"role": "assistant", "content": answer[1:]}  # its thinking left out
    messages.append({"role": "user", "content": "And tomorrow?"})
    client.messages.create(model="claude-test", max_tokens=256, system=SYSTEM, messages=messages)
    result = handle.result()
    assert [f.message for f in result.failures if f.kind == "invariant"] == []
    assert {o.name: o.checks for o in result.invariants}["reasoning_sent_back"] == 3


def test_reasoning_the_answer_did_not_have_is_not_asked_for(
    write_scenario: Callable[[str], Path],
) -> None:
    text = REASONING_WEATHER.replace(
        "      - think: The user wants the weather, so I call the tool.\n        call:",
        "      - call:",
    )
    handle = EndpointHandle(write_scenario(text, name="unreasoned"))
    made_up = {"type": "thinking", "thinking": "Hmm.", "signature": "made up"}
    anthropic_round_trip(handle, lambda use: [made_up, use])
    assert reasoning_violations(handle) == []


def test_an_answer_dropped_altogether_is_left_to_history_grows(reasoning: Path) -> None:
    handle = EndpointHandle(reasoning)
    client = anthropic_client(handle)
    for _ in range(2):  # the question again, without the answer
        client.messages.create(model="claude-test", max_tokens=256, messages=first_turn())
    dropped = [f.message for f in handle.result().failures if f.invariant == "history_grows"]
    assert dropped == ["request 2: history_grows: conversation item 2 of 2 was dropped"]
    assert reasoning_violations(handle) == []


def test_a_thinking_block_without_its_signature_is_refused_as_the_api_does(
    reasoning: Path,
) -> None:
    handle = EndpointHandle(reasoning)
    with pytest.raises(anthropic.BadRequestError, match=r"messages\[1\]\.content\[0\]"):
        anthropic_round_trip(handle, lambda block: {"type": "thinking", "thinking": "x"})


def test_the_check_can_be_excluded(write_scenario: Callable[[str], Path]) -> None:
    text = REASONING_WEATHER.replace(
        "turns:", "invariants: {exclude: [reasoning_sent_back]}\nturns:"
    )
    handle = EndpointHandle(write_scenario(text, name="excluded"))
    anthropic_round_trip(handle, lambda block: None)
    assert reasoning_violations(handle) == []


# --- agentrig's own providers, and its own runtime ------------------------------------------


@pytest.mark.parametrize("provider_name", ["openai", "responses", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_agentrigs_providers_keep_stream_and_send_back_the_reasoning(
    reasoning: Path, provider_name: str, stream: bool
) -> None:
    handle = EndpointHandle(reasoning)
    # a reasoning model's name for the Responses API: agentrig then asks for encrypted reasoning
    model = "gpt-5" if provider_name == "responses" else ""
    agent = weather_agent(agentrig_provider(provider_name, handle, model=model, stream=stream))
    state = ar.AgentState().with_user_message("Weather in Paris?")
    items = list(agent.stream(state))
    final = items[-1]
    assert isinstance(final, ar.AgentState)
    assert final.final_response().to_text() == "It is sunny in Paris today."
    first = final.steps()[0].inference_response
    assert first.reasoning_content == FIRST_THOUGHT
    pieces = [i.reasoning for i in items if isinstance(i, ar.InferenceDelta) and i.reasoning]
    assert "".join(pieces) == (FIRST_THOUGHT + "The tool says sunny." if stream else "")
    result = handle.check()
    outcome = {o.name: (o.checks, o.failures) for o in result.invariants}
    assert outcome["reasoning_sent_back"] == (2, 0)


def test_agentrigs_runtime_plays_think_as_the_responses_reasoning(reasoning: Path) -> None:
    scenario = load_scenario(reasoning)
    assert run_scenario(scenario).passed
    [final] = final_states(scenario)
    thoughts = [step.inference_response.reasoning_content for step in final.steps()]
    assert thoughts == [FIRST_THOUGHT, "The tool says sunny."]
