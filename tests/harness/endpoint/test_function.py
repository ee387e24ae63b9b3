"""A reply function as the model: it decides each reply from the request, and the scenario's
invariants and expectations hold what it answered."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentrig.harness.endpoint.function import ReplyRequest
from agentrig.harness.endpoint.handle import EndpointCheckFailed, EndpointHandle
from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios.model import ModelReply

from .sdk_agents import SYSTEM, anthropic_agent, anthropic_client, chat_agent, openai_client

openai = pytest.importorskip("openai")

UNSCRIPTED = """\
name: unscripted-weather
agent:
  system_prompt: You answer weather questions.
  tools:
    get_weather:
      params: {city: string}
      replies: [{return: sunny in Paris}]
turns:
  - user: Weather in Paris?
    expect:
      final_response: The tool says sunny in Paris.
      tool_calls: {calls: [get_weather(city=Paris)]}
      model_calls: 2
"""


def weather_model(request: ReplyRequest) -> ModelReply | dict[str, object] | str:
    """Calls get_weather for the city asked about, then repeats what the tool said."""
    last = request.last
    if last is not None and last.tool_result is not None:
        return f"The tool says {last.tool_result.content}."
    assert [tool.name for tool in request.tools] == ["get_weather"]
    city = request.user.removeprefix("Weather in ").rstrip("?")
    return {"call": {"name": "get_weather", "args": {"city": city}}}


def test_a_reply_function_answers_the_openai_and_anthropic_sdks(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(UNSCRIPTED)
    handle = EndpointHandle(path, replies=weather_model)
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert chat_agent(openai_client(handle), messages) == "The tool says sunny in Paris."
    result = handle.check()
    assert [turn.steps for turn in result.turns] == [2]
    assert all(outcome.failures == 0 for outcome in result.invariants)

    pytest.importorskip("anthropic")
    handle = EndpointHandle(path, replies=weather_model)
    asked = [{"role": "user", "content": "Weather in Paris?"}]
    assert anthropic_agent(anthropic_client(handle), asked) == "The tool says sunny in Paris."
    handle.check()


def test_a_reply_function_reads_the_system_prompt_sent(
    write_scenario: Callable[[str], Path],
) -> None:
    systems: list[str | None] = []

    def model(request: ReplyRequest) -> ModelReply | dict[str, object] | str:
        systems.append(request.system)
        return weather_model(request)

    handle = EndpointHandle(write_scenario(UNSCRIPTED), replies=model)
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    chat_agent(openai_client(handle), messages)
    assert systems == [SYSTEM, SYSTEM]


def test_what_the_function_answers_is_checked_as_a_script_is(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(UNSCRIPTED), replies=lambda request: "It rains.")
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert chat_agent(openai_client(handle), messages) == "It rains."
    with pytest.raises(EndpointCheckFailed) as failed:
        handle.check()
    assert "expect.final_response" in str(failed.value)
    assert "expect.model_calls:" in str(failed.value)


def test_a_function_that_fails_fails_the_session_with_http_500(
    write_scenario: Callable[[str], Path],
) -> None:
    def broken(request: ReplyRequest) -> dict[str, object]:
        if request.number == 1:
            return {"say": "Hi", "colour": "blue"}
        raise RuntimeError("no idea")

    path = write_scenario(UNSCRIPTED)
    handle = EndpointHandle(path, replies=broken)
    client = openai_client(handle).with_options(max_retries=0)
    asked = [{"role": "user", "content": "Weather in Paris?"}]
    for _ in range(2):
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="m", messages=asked)
    failures = [f for f in handle.result().failures if f.kind == "script"]
    assert [f.location for f in failures] == [f"{path}:9"] * 2  # the turn the function answers
    messages = [f.message for f in failures]
    assert messages[0].startswith(
        "request 1: the reply function failed: InvalidInputError: invalid reply: colour:"
    )
    assert messages[1] == "request 2: the reply function failed: RuntimeError: no idea"


def test_a_scenario_whose_turns_script_replies_is_refused_with_a_function(
    write_scenario: Callable[[str], Path],
) -> None:
    scripted = UNSCRIPTED.replace(
        "  - user: Weather in Paris?\n", "  - user: Weather in Paris?\n    model: [{say: Hi}]\n"
    )
    path = write_scenario(scripted)
    with pytest.raises(ScenarioFileError) as refused:
        EndpointHandle(path, replies=weather_model)
    assert f"{path}:10:5: turns[0].model" in str(refused.value)
    assert "turns[0].model" in str(refused.value)
    assert "a reply function answers every request" in str(refused.value)


def test_each_answer_of_a_reply_function_has_its_own_id_and_every_turn_must_be_reached(
    write_scenario: Callable[[str], Path],
) -> None:
    text = UNSCRIPTED.replace(
        "      model_calls: 2\n", "      model_calls: 2\n  - user: And Oslo?\n"
    )
    handle = EndpointHandle(write_scenario(text), replies=lambda request: "Sunny.")
    client = openai_client(handle)
    asked = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.chat.completions.create(model="m", messages=asked)
    second = client.chat.completions.create(model="m", messages=asked)
    assert (first.id, second.id) == ("chatcmpl-agentrig-1", "chatcmpl-agentrig-2")
    messages = [f.message for f in handle.result().failures]
    assert "turn 2 was never reached: no request carried its user message" in messages
