"""Each over-the-wire invariant, fed a deliberately broken agent: it names the request, the
scenario file and line, and shows both sides."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.results import Failure

from .conftest import WEATHER, WEATHER_TOOL, RawChatAgent, assistant_of, first_turn


def _play_well(agent: RawChatAgent, *, result: str = "sunny") -> list[dict[str, Any]]:
    messages = first_turn()
    answer = agent.post(messages)
    call = answer.json()["choices"][0]["message"]["tool_calls"][0]
    messages += [
        assistant_of(answer),
        {"role": "tool", "tool_call_id": call["id"], "content": result},
    ]
    agent.post(messages)
    return messages


def _violations(handle: EndpointHandle, name: str) -> list[Failure]:
    return [f for f in handle.result().failures if f.invariant == name]


def test_a_well_behaved_agent_passes_every_check(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(WEATHER))
    _play_well(RawChatAgent(handle))
    result = handle.check()
    assert result.passed
    assert {o.name: (o.checks, o.failures) for o in result.invariants} == {
        "tool_results_answer_calls": (2, 0),
        "history_grows": (2, 0),
        "tools_offered": (2, 0),
        "reasoning_sent_back": (2, 0),
        "tools_as_declared": (2, 0),
        "model_named": (2, 0),
        "system_prompt_sent": (2, 0),
        "user_turn_sent": (2, 0),
        "script_not_exceeded": (2, 0),
    }


def test_a_tool_result_for_a_call_never_made(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(WEATHER)
    handle = EndpointHandle(path)
    agent = RawChatAgent(handle)
    messages = first_turn()
    answer = agent.post(messages)
    messages += [assistant_of(answer), {"role": "tool", "tool_call_id": "made-up", "content": "x"}]
    agent.post(messages)
    [problem, unanswered] = _violations(handle, "tool_results_answer_calls")
    assert problem.message.startswith("request 2: tool_results_answer_calls: conversation item 3")
    assert "'made-up'" in problem.message
    assert problem.location == f"{path}:6"
    assert (problem.expected, problem.observed) == (["call_1_1_1"], "made-up")
    assert "not answered before this model call: get_weather (id 'call_1_1_1')" in (
        unanswered.message
    )


def test_a_call_left_unanswered_before_the_next_user_message(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(WEATHER))
    agent = RawChatAgent(handle)
    messages = first_turn()
    answer = agent.post(messages)
    agent.post([*messages, assistant_of(answer)])
    [problem] = _violations(handle, "tool_results_answer_calls")
    assert "request 2" in problem.message
    assert "tool call(s) not answered before this model call: get_weather" in problem.message


def test_history_that_drops_a_message(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(WEATHER))
    agent = RawChatAgent(handle)
    messages = first_turn()
    answer = agent.post(messages)
    call_id = answer.json()["choices"][0]["message"]["tool_calls"][0]["id"]
    # The agent forgets the user's message when it sends the tool result.
    agent.post(
        [
            messages[0],
            assistant_of(answer),
            {"role": "tool", "tool_call_id": call_id, "content": "sunny"},
        ]
    )
    [problem] = _violations(handle, "history_grows")
    assert problem.message == (
        "request 2: history_grows: conversation item 1 differs from what was sent or answered "
        "before"
    )
    assert problem.expected == {"role": "user", "content": "Weather in Paris?"}
    assert problem.observed["role"] == "assistant"


def test_history_that_edits_the_models_answer(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(WEATHER))
    agent = RawChatAgent(handle)
    messages = first_turn()
    answer = agent.post(messages)
    edited = assistant_of(answer)
    call_id = edited["tool_calls"][0]["id"]
    edited["tool_calls"][0]["function"]["arguments"] = '{"city": "Lyon"}'
    agent.post([*messages, edited, {"role": "tool", "tool_call_id": call_id, "content": "sunny"}])
    [problem] = _violations(handle, "history_grows")
    assert "conversation item 2 differs" in problem.message
    assert problem.expected["tool_calls"][0]["arguments"] == {"city": "Paris"}
    assert problem.observed["tool_calls"][0]["arguments"] == {"city": "Lyon"}


def test_the_scripted_tool_was_not_offered(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(WEATHER)
    handle = EndpointHandle(path)
    RawChatAgent(handle).post(first_turn(), tools=[])
    [problem] = _violations(handle, "tools_offered")
    assert problem.message == (
        "request 1: tools_offered: the script calls get_weather, which the request does not offer"
    )
    assert problem.location == f"{path}:8"  # the scripted reply that calls it


def test_the_offered_schema_refuses_the_scripted_arguments(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(WEATHER))
    tool = {
        "type": "function",
        "function": {
            **WEATHER_TOOL["function"],
            "parameters": {  # type: ignore[dict-item]
                "type": "object",
                "properties": {"city": {"type": "integer"}},
            },
        },
    }
    RawChatAgent(handle).post(first_turn(), tools=[tool])
    [problem] = _violations(handle, "tools_offered")
    assert "do not fit the offered schema: city: 'Paris' is not of type 'integer'" in (
        problem.message
    )


DECLARED = WEATHER.replace(
    "  model: gpt-test\n",
    """  model: gpt-test
  tools:
    get_weather:
      params: {city: string, days: integer?}
      replies: [{return: sunny}]
    get_time:
      params: {zone: string}
      replies: [{return: noon}]
""",
)


def _weather_tool(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    function = {**WEATHER_TOOL["function"]}  # type: ignore[dict-item]
    function["parameters"] = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": function}


def _time_tool() -> dict[str, Any]:
    parameters = {
        "type": "object",
        "properties": {"zone": {"type": "string"}},
        "required": ["zone"],
    }
    return {"type": "function", "function": {"name": "get_time", "parameters": parameters}}


def test_tools_the_agent_offers_as_the_scenario_declares_them_pass(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(DECLARED))
    weather = _weather_tool({"city": {"type": "string"}, "days": {"type": "integer"}}, ["city"])
    RawChatAgent(handle).post(first_turn(), tools=[weather, _time_tool()])
    assert _violations(handle, "tools_as_declared") == []
    outcome = {o.name: (o.checks, o.failures) for o in handle.result().invariants}
    assert outcome["tools_as_declared"] == (1, 0)


def test_a_parameter_the_agent_renamed_fails_at_the_declared_tool(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(DECLARED)
    handle = EndpointHandle(path)
    weather = _weather_tool(
        {"city_name": {"type": "string"}, "days": {"type": "string"}}, ["city_name"]
    )
    RawChatAgent(handle).post(first_turn(), tools=[weather, _time_tool()])
    [problem] = _violations(handle, "tools_as_declared")
    assert problem.message == (
        "request 1: tools_as_declared: the agent's get_weather differs from agent.tools: "
        "parameter 'city' is not a parameter of the real tool (did you mean 'city_name'?); "
        "parameter 'days' is integer in the scenario but string in the real tool; "
        "the real tool requires parameter 'city_name', not declared in params"
    )
    assert problem.location == f"{path}:6"  # get_weather under agent.tools
    assert problem.expected == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    }
    assert problem.observed["properties"]["city_name"] == {"type": "string"}


def test_a_declared_tool_the_agent_does_not_offer_fails_unless_scripted(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(DECLARED)
    handle = EndpointHandle(path)
    weather = _weather_tool({"city": {"type": "string"}, "days": {"type": "integer"}}, ["city"])
    RawChatAgent(handle).post(first_turn(), tools=[weather])
    [problem] = _violations(handle, "tools_as_declared")
    assert problem.message.startswith(
        "request 1: tools_as_declared: agent.tools declares get_time, which the request does "
        "not offer (it offers: get_weather)"
    )
    assert problem.location == f"{path}:9"  # get_time under agent.tools
    scripted = DECLARED.replace(
        "      params: {zone: string}\n", "      params: {zone: string}\n      scripted: true\n"
    )
    handle = EndpointHandle(write_scenario(scripted, name="scripted"))
    RawChatAgent(handle).post(first_turn(), tools=[weather])
    assert _violations(handle, "tools_as_declared") == []


def test_a_request_that_offers_no_tools_is_left_to_tools_offered(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(DECLARED))
    RawChatAgent(handle).post(first_turn(), tools=[])
    assert _violations(handle, "tools_as_declared") == []
    assert len(_violations(handle, "tools_offered")) == 1


def test_a_request_after_the_script_is_used_up(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(WEATHER))
    agent = RawChatAgent(handle)
    messages = _play_well(agent)
    third = agent.post(messages)
    assert third.status_code == 400
    assert "used up" in third.json()["error"]["message"]
    [problem] = _violations(handle, "script_not_exceeded")
    assert problem.message.startswith(
        "request 3: script_not_exceeded: turn 1: request 3 came after the script was used up"
    )


def test_the_wrong_model(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(WEATHER)
    handle = EndpointHandle(path)
    RawChatAgent(handle).post(first_turn(), model="gpt-other")
    [problem] = _violations(handle, "model_named")
    assert (problem.expected, problem.observed) == ("gpt-test", "gpt-other")
    assert problem.location == f"{path}:4"


def test_the_wrong_system_prompt(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(WEATHER))
    messages = first_turn()
    messages[0]["content"] = "You are a pirate."
    RawChatAgent(handle).post(messages)
    [problem] = _violations(handle, "system_prompt_sent")
    assert (problem.expected, problem.observed) == (
        "You answer weather questions.",
        "You are a pirate.",
    )


def test_the_wrong_user_message(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(WEATHER))
    RawChatAgent(handle).post(first_turn("Weather in Rome?"))
    [problem] = _violations(handle, "user_turn_sent")
    assert problem.observed == "Weather in Rome?"


def test_invariants_can_be_excluded(write_scenario: Callable[[str], Path]) -> None:
    text = WEATHER + "invariants: {exclude: [model_named, user_turn_sent]}\n"
    handle = EndpointHandle(write_scenario(text))
    agent = RawChatAgent(handle)
    messages = first_turn("Weather in Rome?")
    answer = agent.post(messages, model="other")
    call_id = answer.json()["choices"][0]["message"]["tool_calls"][0]["id"]
    agent.post(
        [
            *messages,
            assistant_of(answer),
            {"role": "tool", "tool_call_id": call_id, "content": "sunny"},
        ],
        model="other",
    )
    result = handle.check()
    assert [o.name for o in result.invariants] == [
        "tool_results_answer_calls",
        "history_grows",
        "tools_offered",
        "reasoning_sent_back",
        "tools_as_declared",
        "system_prompt_sent",
        "script_not_exceeded",
    ]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"not json", "body: not valid JSON"),
        (b'{"model": "m"}', "messages"),
        (b'{"model": "m", "messages": [{"role": "tool", "content": "x"}]}', "tool_call_id"),
    ],
)
def test_a_request_it_cannot_read_gets_the_providers_error_and_fails_the_session(
    write_scenario: Callable[[str], Path], body: bytes, fragment: str
) -> None:
    handle = EndpointHandle(write_scenario(WEATHER))
    response = handle.httpx_client().post(
        f"{handle.openai_base_url}/chat/completions",
        content=body,
        headers={"authorization": f"Bearer {handle.api_key}"},
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert fragment in error["message"]
    failures = handle.result().failures
    assert failures[0].kind == "script"
    assert failures[0].message.startswith("request 1 could not be read: /v1/chat/completions: ")
