"""``think: {redacted: true}``: the model reasoned, but shows no text. Over the wire, an Anthropic
``redacted_thinking`` block of opaque data, a Responses reasoning item with an empty summary (and
its encrypted content when asked), nothing over Chat Completions; ``reasoning_sent_back`` checks
that an agent returns it with its tool calls. On agentrig's own runtime, an answer without
reasoning text whose ``provider_data`` holds the seal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentrig as ar
from agentrig.fakes import REASONING_SEAL_KEY, ScriptedLLM, Turn, call, reply
from agentrig.harness import load_scenario, run_scenario
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.results import Failure
from agentrig.harness.runner import final_states

from .sdk_agents import (
    SYSTEM,
    agentrig_provider,
    anthropic_agent,
    anthropic_client,
    openai_client,
    responses_agent,
    weather_agent,
)

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

SCENARIO = """\
name: redacted-weather
agent:
  system_prompt: You answer weather questions.
  tools:
    get_weather:
      params: {city: string}
      replies: [{return: sunny in Paris}]
turns:
  - user: Weather in Paris?
    model:
      - think: {redacted: true}
        call: get_weather(city=Paris)
        usage: {input: 20, output: 30, reasoning: 24}
      - say: It is sunny in Paris today.
    expect:
      final_response: It is sunny in Paris today.
      model_calls: 2
"""


@pytest.fixture
def redacted(write_scenario: Callable[[str], Path]) -> Path:
    return write_scenario(SCENARIO)


def _violations(handle: EndpointHandle) -> list[Failure]:
    return [f for f in handle.result().failures if f.invariant == "reasoning_sent_back"]


def _first_turn() -> list[dict[str, Any]]:
    return [{"role": "user", "content": "Weather in Paris?"}]


def _outcome(handle: EndpointHandle) -> tuple[int, int]:
    result = handle.check()
    return {o.name: (o.checks, o.failures) for o in result.invariants}["reasoning_sent_back"]


# --- what each API sends --------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_anthropic_answers_with_a_redacted_thinking_block_first(
    redacted: Path, stream: bool
) -> None:
    client = anthropic_client(EndpointHandle(redacted))
    options: dict[str, Any] = {
        "model": "claude-test",
        "max_tokens": 256,
        "system": SYSTEM,
        "messages": _first_turn(),
    }
    if stream:
        with client.messages.stream(**options) as events:
            kinds = [event.type for event in events]
            message = events.get_final_message()
        assert "thinking" not in kinds  # no text: no thinking_delta
        assert "signature" not in kinds
    else:
        message = client.messages.create(**options)
    block, use = message.content
    assert isinstance(block, anthropic.types.RedactedThinkingBlock)  # as the SDK types it
    assert block.data  # opaque, and the same on every run
    assert use.type == "tool_use"
    assert message.usage.output_tokens == 30


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("sealed", [True, False], ids=["included", "not-included"])
def test_responses_answers_with_a_reasoning_item_without_summary(
    redacted: Path, stream: bool, sealed: bool
) -> None:
    client = openai_client(EndpointHandle(redacted))
    options: dict[str, Any] = {"model": "gpt-test", "input": "Weather in Paris?"}
    if sealed:
        options["include"] = ["reasoning.encrypted_content"]
    if stream:
        with client.responses.stream(**options) as events:
            kinds = [event.type for event in events]
            response = events.get_final_response()
        assert not [kind for kind in kinds if "reasoning_summary" in kind]
    else:
        response = client.responses.create(**options)
    item, call_item = response.output
    assert (item.type, item.summary) == ("reasoning", [])
    assert bool(item.encrypted_content) is sealed
    assert call_item.type == "function_call"
    assert response.usage.output_tokens_details.reasoning_tokens == 24


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_chat_sends_nothing_of_it(redacted: Path, stream: bool) -> None:
    client = openai_client(EndpointHandle(redacted))
    options: dict[str, Any] = {"model": "gpt-test", "messages": _first_turn()}
    if stream:
        chunks = list(client.chat.completions.create(**options, stream=True))
        extras = [c.choices[0].delta.model_extra or {} for c in chunks if c.choices]
        assert not [extra for extra in extras if "reasoning_content" in extra]
        assert any(c.choices and c.choices[0].delta.tool_calls for c in chunks)
    else:
        message = client.chat.completions.create(**options).choices[0].message
        assert "reasoning_content" not in (message.model_extra or {})
        assert message.tool_calls


# --- agents that send it back, and agents that do not ---------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_an_sdk_agent_that_returns_its_redacted_thinking_block_passes(
    redacted: Path, stream: bool
) -> None:
    handle = EndpointHandle(redacted)
    messages = _first_turn()
    assert anthropic_agent(anthropic_client(handle), messages, stream=stream) == (
        "It is sunny in Paris today."
    )
    assert messages[1]["content"][0]["type"] == "redacted_thinking"
    assert _outcome(handle) == (2, 0)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_stateless_responses_agent_that_returns_its_reasoning_item_passes(
    redacted: Path, stream: bool
) -> None:
    handle = EndpointHandle(redacted)
    client = openai_client(handle)
    create, streamed = client.responses.create, client.responses.stream
    sealed = {"include": ["reasoning.encrypted_content"], "store": False}
    client.responses.create = lambda **options: create(**{**sealed, **options})
    client.responses.stream = lambda **options: streamed(**{**sealed, **options})
    items: list[Any] = _first_turn()
    assert responses_agent(client, items, stream=stream) == "It is sunny in Paris today."
    reasoning = items[1]
    assert (reasoning["type"], reasoning["summary"]) == ("reasoning", [])
    assert reasoning["encrypted_content"]
    assert _outcome(handle) == (2, 0)


def _anthropic_round_trip(handle: EndpointHandle, change: Callable[[dict[str, Any]], Any]) -> None:
    """One tool round trip on the raw Messages API, the redacted thinking block changed by
    ``change`` (which returns the block to send back, or None to drop it)."""
    client = anthropic_client(handle)
    messages = _first_turn()
    first = client.messages.create(model="claude-test", max_tokens=256, messages=messages)
    blocks = [block.model_dump(exclude_none=True) for block in first.content]
    sent = [b for b in (change(blocks[0]), *blocks[1:]) if b is not None]
    messages += [
        {"role": "assistant", "content": sent},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": blocks[1]["id"], "content": "sun"}],
        },
    ]
    client.messages.create(model="claude-test", max_tokens=256, messages=messages)


def test_an_agent_that_drops_the_redacted_thinking_block_is_reported(redacted: Path) -> None:
    handle = EndpointHandle(redacted)
    _anthropic_round_trip(handle, lambda block: None)  # as agents that keep only text do
    [problem] = _violations(handle)
    assert problem.message == (
        "request 2: reasoning_sent_back: the answer that called get_weather reasoned first, and "
        "its redacted_thinking block (with its data) was not sent back with the calls: the real "
        "API refuses to go on with a reasoning model's tool calls without it"
    )
    assert problem.location == f"{redacted}:11"  # the reply that reasoned
    assert problem.observed is None


@pytest.mark.parametrize(
    "change",
    [
        lambda block: {**block, "data": "forged"},
        lambda block: {"type": "thinking", "thinking": "", "signature": block["data"]},
    ],
    ids=["other-data", "sent-as-a-thinking-block"],
)
def test_an_agent_that_changes_the_redacted_thinking_block_is_reported(
    redacted: Path, change: Callable[[dict[str, Any]], Any]
) -> None:
    handle = EndpointHandle(redacted)
    _anthropic_round_trip(handle, change)
    [problem] = _violations(handle)
    assert "its redacted_thinking block (with its data) came back changed" in problem.message


def test_a_redacted_thinking_block_without_its_data_is_refused(redacted: Path) -> None:
    handle = EndpointHandle(redacted)
    with pytest.raises(anthropic.BadRequestError, match=r"messages\[1\]\.content\[0\]\.data"):
        _anthropic_round_trip(handle, lambda block: {"type": "redacted_thinking"})


def test_a_responses_agent_that_drops_the_reasoning_item_is_reported(redacted: Path) -> None:
    handle = EndpointHandle(redacted)
    client = openai_client(handle)
    sealed: dict[str, Any] = {"include": ["reasoning.encrypted_content"], "store": False}
    items: list[Any] = _first_turn()
    first = client.responses.create(model="gpt-test", input=items, **sealed)
    kept = [i.model_dump(exclude_none=True) for i in first.output if i.type != "reasoning"]
    [function_call] = kept
    items += [
        *kept,
        {"type": "function_call_output", "call_id": function_call["call_id"], "output": "sun"},
    ]
    client.responses.create(model="gpt-test", input=items, **sealed)
    [problem] = _violations(handle)
    assert "its reasoning item (with its encrypted content) was not sent back" in problem.message
    assert problem.location == f"{redacted}:11"


# --- agentrig's own providers, and its own runtime ------------------------------------------


@pytest.mark.parametrize("provider_name", ["responses", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_agentrigs_providers_keep_and_send_back_the_redacted_reasoning(
    redacted: Path, provider_name: str, stream: bool
) -> None:
    handle = EndpointHandle(redacted)
    # a reasoning model's name for the Responses API: agentrig then asks for encrypted reasoning
    model = "gpt-5" if provider_name == "responses" else ""
    agent = weather_agent(agentrig_provider(provider_name, handle, model=model, stream=stream))
    items = list(agent.stream(ar.AgentState().with_user_message("Weather in Paris?")))
    final = items[-1]
    assert isinstance(final, ar.AgentState)
    assert final.final_response().to_text() == "It is sunny in Paris today."
    first = final.steps()[0].inference_response
    assert first.reasoning_content == ""
    kept = first.provider_data[
        "anthropic_thinking" if provider_name == "anthropic" else "openai_reasoning"
    ]
    assert len(kept) == 1
    assert not [i for i in items if isinstance(i, ar.InferenceDelta) and i.reasoning]
    assert _outcome(handle) == (2, 0)


def test_agentrigs_runtime_plays_it_as_a_sealed_answer_without_reasoning_text(
    redacted: Path,
) -> None:
    scenario = load_scenario(redacted)
    assert run_scenario(scenario).passed
    [final] = final_states(scenario)
    first, second = (step.inference_response for step in final.steps())
    assert first.reasoning_content == ""
    assert first.provider_data[REASONING_SEAL_KEY]
    assert first.usage.reasoning_tokens == 24
    assert second.provider_data == {}
    # the assistant message keeps it, so the conversation carries it on
    [assistant] = [m for m in final.steps()[0].output_messages if m.tool_calls]
    assert assistant.provider_data == first.provider_data


def test_a_scripted_turn_with_redacted_reasoning_streams_no_reasoning() -> None:
    llm = ScriptedLLM(
        [
            Turn(calls=call("get_weather", city="Paris").calls, redacted_reasoning=True),
            reply("Sunny."),
        ]
    )
    agent = weather_agent(llm)
    items = list(agent.stream(ar.AgentState().with_user_message("Weather in Paris?")))
    assert not [i for i in items if isinstance(i, ar.InferenceDelta) and i.reasoning]
    final = items[-1]
    assert isinstance(final, ar.AgentState)
    assert REASONING_SEAL_KEY in final.steps()[0].inference_response.provider_data
