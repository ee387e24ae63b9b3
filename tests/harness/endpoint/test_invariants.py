"""Each over-the-wire invariant, fed a deliberately broken agent: it names the request, the
scenario file and line, and shows both sides."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentrig.harness.endpoint import memo, session
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.results import Failure

from .conftest import WEATHER, WEATHER_TOOL, RawChatAgent, assistant_of, first_turn


@pytest.fixture(autouse=True)
def _nothing_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a fresh process would: nothing the endpoint remembers across sessions
    (schema verdicts, the invariants a selection names) from an earlier test answers for it, as
    it would when mutation testing runs each test again in a process that ran them all once."""
    monkeypatch.setattr(memo, "_REMEMBERED", {})
    session._selection.cache_clear()


def _play_well(
    agent: RawChatAgent, *, result: str = "sunny", between: Sequence[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
    """The weather scenario's tool round, ``between`` sent after the answer, before its result."""
    messages = first_turn()
    answer = agent.post(messages)
    call = answer.json()["choices"][0]["message"]["tool_calls"][0]
    messages += [
        assistant_of(answer),
        *between,
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
        "answer_allowed": (2, 0),
        "reasoning_sent_back": (2, 0),
        "tools_as_declared": (2, 0),
        "model_named": (2, 0),
        "system_prompt_sent": (2, 0),
        "user_turn_sent": (2, 0),
        "script_not_exceeded": (2, 0),
        "tool_results_as_scripted": (0, 0),  # the scenario declares no tools
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
    assert problem.message == "request 1: model_named: the request asks for model 'gpt-other'"
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


def test_a_developer_message_mid_conversation_is_part_of_the_system_prompt(
    write_scenario: Callable[[str], Path],
) -> None:
    # Chat Completions lets a system or developer message stand anywhere: it is the request's
    # system prompt, checked as one, and never an entry of the conversation's transcript.
    handle = EndpointHandle(write_scenario(WEATHER))
    _play_well(
        RawChatAgent(handle), between=[{"role": "developer", "content": "Answer in one line."}]
    )
    [problem] = _violations(handle, "system_prompt_sent")
    assert problem.message.startswith("request 2: ")
    assert (problem.expected, problem.observed) == (
        "You answer weather questions.",
        "You answer weather questions.\n\nAnswer in one line.",
    )
    assert [(e.kind, e.text) for e in handle.result().transcript] == [
        ("user", "Weather in Paris?"),
        ("tool_call", "get_weather(city='Paris')"),
        ("tool_result", "sunny"),
        ("assistant", "It is sunny in Paris."),
    ]


def test_the_wrong_user_message(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(WEATHER)
    handle = EndpointHandle(path)
    RawChatAgent(handle).post(first_turn("Weather in Rome?"))
    [problem] = _violations(handle, "user_turn_sent")
    assert problem.message == (
        "request 1: user_turn_sent: the newest user message differs from the turn's user text"
    )
    assert (problem.expected, problem.observed) == ("Weather in Paris?", "Weather in Rome?")
    assert problem.location == f"{path}:6"


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
        "answer_allowed",
        "reasoning_sent_back",
        "tools_as_declared",
        "system_prompt_sent",
        "script_not_exceeded",
        "tool_results_as_scripted",
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


# --- each check in detail: what it reports, and what it lets pass ---------------------------


TWO_ROUNDS = """\
name: two-rounds
agent:
  system_prompt: You answer weather questions.
  model: gpt-test
turns:
  - user: Weather in Paris and Lyon?
    model:
      - calls: [get_weather(city=Paris), get_weather(city=Lyon)]
      - call: get_weather(city=Nice)
      - say: Sunny everywhere.
"""
"""Two tool rounds: the third request sends back the tool results of the first round again."""

PARIS, LYON, NICE = "call_1_1_1", "call_1_1_2", "call_1_2_1"


def _tool(call_id: str, content: str = "sunny") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _two_rounds(
    handle: EndpointHandle, edit: Callable[[list[dict[str, Any]]], Any] = lambda sent: None
) -> None:
    """Both rounds of ``TWO_ROUNDS``, played well, but for ``edit`` of the third request."""
    agent = RawChatAgent(handle)
    messages = first_turn("Weather in Paris and Lyon?")
    first = agent.post(messages)
    messages += [assistant_of(first), _tool(PARIS), _tool(LYON)]
    second = agent.post(messages)
    messages += [assistant_of(second), _tool(NICE)]
    edit(messages)
    agent.post(messages)


def _item_of_calls(*calls: tuple[str, str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "tool_calls": [
            {"id": call_id, "name": "get_weather", "arguments": {"city": city}}
            for call_id, city in calls
        ],
    }


def test_an_agent_that_sends_every_round_back_passes(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(TWO_ROUNDS))
    _two_rounds(handle)
    result = handle.result()
    assert result.failures == ()
    assert {o.name: (o.checks, o.failures) for o in result.invariants}["history_grows"] == (3, 0)


def test_a_tool_result_sent_back_for_another_call_id_is_an_edit(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(TWO_ROUNDS)
    handle = EndpointHandle(path)

    def renumber(sent: list[dict[str, Any]]) -> None:
        sent[3] = _tool("call_9", "sunny")  # same content, another call id

    _two_rounds(handle, renumber)
    [problem] = _violations(handle, "history_grows")
    assert problem.message == (
        "request 3: history_grows: conversation item 3 differs from what was sent or answered "
        "before"
    )
    assert problem.location == f"{path}:6"  # the turn
    assert problem.expected == {
        "role": "tool",
        "content": "sunny",
        "tool_result": {"call_id": PARIS, "content": "sunny"},
    }
    assert problem.observed == {
        "role": "tool",
        "content": "sunny",
        "tool_result": {"call_id": "call_9", "content": "sunny"},
    }


@pytest.mark.parametrize(
    ("change", "observed"),
    [
        (lambda calls: calls.pop(), _item_of_calls((PARIS, "Paris"))),
        (lambda calls: calls.clear(), {"role": "assistant"}),
        (
            lambda calls: calls[1].update(id="call_9"),
            _item_of_calls((PARIS, "Paris"), ("call_9", "Lyon")),
        ),
        (
            lambda calls: calls[1]["function"].update(name="get_time"),
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": PARIS, "name": "get_weather", "arguments": {"city": "Paris"}},
                    {"id": LYON, "name": "get_time", "arguments": {"city": "Lyon"}},
                ],
            },
        ),
    ],
    ids=["a call dropped", "every call dropped", "a call id changed", "a tool renamed"],
)
def test_tool_calls_sent_back_changed_are_an_edit(
    write_scenario: Callable[[str], Path],
    change: Callable[[list[dict[str, Any]]], Any],
    observed: dict[str, Any],
) -> None:
    handle = EndpointHandle(write_scenario(TWO_ROUNDS))
    _two_rounds(handle, lambda sent: change(sent[2]["tool_calls"]))
    [problem] = _violations(handle, "history_grows")
    assert problem.message.startswith("request 3: history_grows: conversation item 2 differs")
    assert problem.expected == _item_of_calls((PARIS, "Paris"), (LYON, "Lyon"))
    assert problem.observed == observed


def test_a_user_message_sent_back_reworded_is_an_edit(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(TWO_ROUNDS))

    def reword(sent: list[dict[str, Any]]) -> None:
        sent[1]["content"] = "Weather in Paris and Lyon, please?"

    _two_rounds(handle, reword)
    [problem] = _violations(handle, "history_grows")
    assert "conversation item 1 differs" in problem.message
    assert problem.observed == {"role": "user", "content": "Weather in Paris and Lyon, please?"}


def test_history_that_drops_the_models_answer(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(WEATHER)
    handle = EndpointHandle(path)
    agent = RawChatAgent(handle)
    agent.post(first_turn())
    agent.post(first_turn())  # the question again, without the answer and its tool call
    [problem] = _violations(handle, "history_grows")
    assert problem.message == "request 2: history_grows: conversation item 2 of 2 was dropped"
    assert problem.location == f"{path}:6"
    assert problem.expected == [
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "call_1_1_1", "name": "get_weather", "arguments": {"city": "Paris"}}
            ],
        }
    ]
    assert problem.observed == []
    assert _violations(handle, "tool_results_answer_calls") == []


TWO_TURNS = (
    WEATHER
    + """\
  - user: And in Lyon?
    model:
      - say: Sunny too.
"""
)


def test_calls_left_unanswered_when_the_next_user_message_comes(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(TWO_TURNS)
    handle = EndpointHandle(path)
    agent = RawChatAgent(handle)
    messages = first_turn()
    answer = agent.post(messages)
    # The next question before the tool result, which comes after it: too late.
    agent.post(
        [
            *messages,
            assistant_of(answer),
            {"role": "user", "content": "And in Lyon?"},
            _tool("call_1_1_1"),
        ]
    )
    unanswered, stray = _violations(handle, "tool_results_answer_calls")
    assert unanswered.message == (
        "request 2: tool_results_answer_calls: tool call(s) not answered before conversation "
        "item 3 (user): get_weather (id 'call_1_1_1')"
    )
    assert (unanswered.expected, unanswered.observed) == (["call_1_1_1"], [])
    assert unanswered.location == f"{path}:15"  # the second turn
    assert stray.message == (
        "request 2: tool_results_answer_calls: conversation item 4: tool result for call id "
        "'call_1_1_1', which the assistant turn before it did not make"
    )
    assert (stray.expected, stray.observed) == ([], "call_1_1_1")


def test_every_call_left_unanswered_is_named(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(TWO_ROUNDS))
    agent = RawChatAgent(handle)
    messages = first_turn("Weather in Paris and Lyon?")
    agent.post([*messages, assistant_of(agent.post(messages))])
    [problem] = _violations(handle, "tool_results_answer_calls")
    assert problem.message == (
        "request 2: tool_results_answer_calls: tool call(s) not answered before this model "
        f"call: get_weather (id '{PARIS}'), get_weather (id '{LYON}')"
    )
    assert (problem.expected, problem.observed) == ([PARIS, LYON], [])


def test_each_scripted_tool_not_offered_is_reported(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(TWO_ROUNDS)
    handle = EndpointHandle(path)
    RawChatAgent(handle).post(first_turn("Weather in Paris and Lyon?"), tools=[_time_tool()])
    problems = _violations(handle, "tools_offered")
    assert [(p.message, p.expected, p.observed, p.location) for p in problems] == 2 * [
        (
            "request 1: tools_offered: the script calls get_weather, which the request does not "
            "offer",
            "get_weather",
            ["get_time"],
            f"{path}:8",
        )
    ]


def _offering(handle: EndpointHandle, parameters: dict[str, Any]) -> list[Failure]:
    """The tools_offered failures of the first request of ``TWO_ROUNDS`` (which calls
    get_weather for Paris and for Lyon) offering get_weather with ``parameters``."""
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": parameters}}
    RawChatAgent(handle).post(first_turn("Weather in Paris and Lyon?"), tools=[tool])
    return _violations(handle, "tools_offered")


def test_each_call_is_checked_against_the_offered_schema(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(TWO_ROUNDS))
    parameters = {"type": "object", "properties": {"city": {"enum": ["Paris"]}}}
    [problem] = _offering(handle, parameters)  # the Lyon call
    assert problem.message == (
        "request 1: tools_offered: the scripted arguments of get_weather do not fit the offered "
        "schema: city: 'Lyon' is not one of ['Paris']"
    )
    assert (problem.expected, problem.observed) == (parameters, {"city": "Lyon"})


@pytest.mark.parametrize(
    ("parameters", "problem"),
    [
        (
            {"type": "object", "required": ["city", "country"]},
            "arguments: 'country' is a required property",
        ),
        (  # of several problems, the same one every time
            {
                "type": "object",
                "properties": {"city": {"type": "integer", "minLength": 9}},
                "required": ["country"],
            },
            "city: '{city}' is not of type 'integer'",
        ),
        (
            {"type": "object", "properties": {"city": {"type": "text"}}},
            "it is invalid: properties/city/type: 'text' is not valid under any of the given "
            "schemas",
        ),
        (
            {"type": "object", "properties": {"city": {"pattern": "(unclosed"}}},
            "it is invalid: properties/city/pattern: '(unclosed' is not a 'regex'",
        ),
    ],
    ids=["missing", "several", "invalid type", "invalid pattern"],
)
def test_what_the_offered_schema_refuses_is_named(
    write_scenario: Callable[[str], Path], parameters: dict[str, Any], problem: str
) -> None:
    handle = EndpointHandle(write_scenario(TWO_ROUNDS))
    problems = _offering(handle, parameters)
    assert [p.message.split("offered schema: ", 1)[1] for p in problems] == [
        problem.format(city=city) for city in ("Paris", "Lyon")
    ]


def test_each_agents_schema_is_checked_for_the_same_arguments(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(TWO_ROUNDS)
    assert _offering(EndpointHandle(path), {"type": "object"}) == []
    refusing = {"type": "object", "properties": {"city": {"type": "integer"}}}
    assert len(_offering(EndpointHandle(path), refusing)) == 2


def test_an_argument_deep_in_the_schema_is_named_by_its_path(
    write_scenario: Callable[[str], Path],
) -> None:
    text = WEATHER.replace(
        "      - call: get_weather(city=Paris)\n",
        "      - calls: [{name: get_weather, args: {place: {city: Paris}}}]\n",
    )
    handle = EndpointHandle(write_scenario(text))
    place = {"type": "object", "properties": {"city": {"type": "integer"}}}
    tool = _weather_tool({"place": place}, ["place"])
    RawChatAgent(handle).post(first_turn(), tools=[tool])
    [problem] = _violations(handle, "tools_offered")
    assert problem.message.endswith("schema: place/city: 'Paris' is not of type 'integer'")


def test_a_schema_offered_anew_is_checked_anew(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(DECLARED))
    agent = RawChatAgent(handle)
    weather = _weather_tool({"city": {"type": "string"}, "days": {"type": "integer"}}, ["city"])
    messages = first_turn()
    answer = agent.post(messages, tools=[weather, _time_tool()])  # as declared
    messages += [assistant_of(answer), _tool("call_1_1_1")]
    changed = _weather_tool({"city": {"type": "string"}, "days": {"type": "string"}}, ["city"])
    agent.post(messages, tools=[changed, _time_tool()])
    [problem] = _violations(handle, "tools_as_declared")
    assert problem.message == (
        "request 2: tools_as_declared: the agent's get_weather differs from agent.tools: "
        "parameter 'days' is integer in the scenario but string in the real tool"
    )


def test_tools_offered_with_the_same_schema_are_each_held_to_their_own_declaration(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(DECLARED))
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    }
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": schema}}
    time = {"type": "function", "function": {"name": "get_time", "parameters": schema}}
    RawChatAgent(handle).post(first_turn(), tools=[weather, time])
    [problem] = _violations(handle, "tools_as_declared")
    assert problem.message.startswith("request 1: tools_as_declared: the agent's get_time differs")


LEFT_OUT_FIRST = WEATHER.replace(
    "  model: gpt-test\n",
    """  model: gpt-test
  tools:
    get_time:
      params: {zone: string}
      scripted: true
      replies: [{return: noon}]
    get_date:
      params: {zone: string}
      replies: [{return: today}]
    get_weather:
      params: {city: string}
      replies: [{return: sunny}]
""",
)
"""Declared tools the checks pass over (a scripted one, one not offered) before one that
differs."""


def test_every_declared_tool_is_compared_past_those_left_out(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(LEFT_OUT_FIRST)
    handle = EndpointHandle(path)
    weather = _weather_tool({"town": {"type": "string"}}, ["town"])
    other = {"type": "function", "function": {"name": "get_moon", "parameters": {}}}
    RawChatAgent(handle).post(first_turn(), tools=[weather, other])
    missing, differs, undeclared = _violations(handle, "tools_as_declared")
    assert missing.message == (
        "request 1: tools_as_declared: agent.tools declares get_date, which the request does not "
        "offer (it offers: get_moon, get_weather); fix the name, or mark the tool scripted: true "
        "if the agent really has no such tool"
    )
    assert (missing.expected, missing.observed) == ("get_date", ["get_moon", "get_weather"])
    assert missing.location == f"{path}:10"
    assert differs.message.startswith(
        "request 1: tools_as_declared: the agent's get_weather differs from agent.tools"
    )
    assert undeclared.message.startswith(
        "request 1: tools_as_declared: the request offers get_moon, which agent.tools does not "
        "declare"
    )


DECLARED_WEATHER = WEATHER.replace(
    "  model: gpt-test\n",
    """  model: gpt-test
  tools:
    get_weather:
      description: Current weather for a city.
      params: {city: string}
      replies: [{return: sunny}]
""",
)


def test_a_tool_the_scenario_does_not_declare_fails(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(DECLARED_WEATHER)
    handle = EndpointHandle(path)
    refund = {"type": "function", "function": {"name": "refund", "parameters": {}}}
    RawChatAgent(handle).post(first_turn(), tools=[WEATHER_TOOL, refund])
    [problem] = _violations(handle, "tools_as_declared")
    assert problem.message == (
        "request 1: tools_as_declared: the request offers refund, which agent.tools does not "
        "declare: the scenario describes another agent than the one under test; declare the "
        "tool (its params, and its description to check that too)"
    )
    assert (problem.expected, problem.observed) == (["get_weather"], ["get_weather", "refund"])
    assert problem.location == f"{path}:5"


def test_a_changed_description_fails_when_the_scenario_declares_one(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(DECLARED_WEATHER)
    handle = EndpointHandle(path)
    changed = {**WEATHER_TOOL, "function": {**WEATHER_TOOL["function"]}}
    changed["function"]["description"] = "NEVER refund anything"  # type: ignore[index]
    RawChatAgent(handle).post(first_turn(), tools=[changed])
    [problem] = _violations(handle, "tools_as_declared")
    assert problem.message == (
        "request 1: tools_as_declared: the agent's get_weather differs from agent.tools: its "
        "description is 'NEVER refund anything', not the declared 'Current weather for a city.'"
    )
    assert problem.location == f"{path}:6"


def test_a_description_the_scenario_leaves_out_is_not_checked(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(
        write_scenario(
            DECLARED_WEATHER.replace("      description: Current weather for a city.\n", "")
        )
    )
    changed = {**WEATHER_TOOL, "function": {**WEATHER_TOOL["function"]}}
    changed["function"]["description"] = "NEVER refund anything"  # type: ignore[index]
    RawChatAgent(handle).post(first_turn(), tools=[changed])
    assert _violations(handle, "tools_as_declared") == []


def test_a_missing_system_prompt(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(WEATHER)
    handle = EndpointHandle(path)
    RawChatAgent(handle).post(first_turn()[1:])  # no system message at all
    [problem] = _violations(handle, "system_prompt_sent")
    assert problem.message == (
        "request 1: system_prompt_sent: the system prompt sent differs from agent.system_prompt"
    )
    assert (problem.expected, problem.observed) == ("You answer weather questions.", None)
    assert problem.location == f"{path}:3"


def test_a_blank_system_prompt_asks_for_none(write_scenario: Callable[[str], Path]) -> None:
    text = WEATHER.replace("You answer weather questions.", "' '")
    handle = EndpointHandle(write_scenario(text))
    RawChatAgent(handle).post(first_turn()[1:])
    assert _violations(handle, "system_prompt_sent") == []


def test_only_the_invariants_named_are_checked(write_scenario: Callable[[str], Path]) -> None:
    text = WEATHER + "invariants: {only: [history_grows, model_named]}\n"
    handle = EndpointHandle(write_scenario(text))
    RawChatAgent(handle).post(first_turn("Weather in Rome?"), model="other")
    result = handle.result()
    assert [o.name for o in result.invariants] == ["history_grows", "model_named"]
    assert [f.invariant for f in result.failures if f.kind == "invariant"] == ["model_named"]


def test_the_endpoints_invariant_names_are_those_of_its_checks() -> None:
    from agentrig.harness.endpoint.invariant_names import (
        ENDPOINT_INVARIANT_NAMES,
        SCRIPT_NOT_EXCEEDED,
        TOOL_RESULTS_AS_SCRIPTED,
        WIRE_INVARIANT_NAMES,
    )
    from agentrig.harness.endpoint.invariants import ALL_INVARIANT_NAMES, WIRE_INVARIANTS

    assert tuple(WIRE_INVARIANTS) == WIRE_INVARIANT_NAMES
    assert (
        ALL_INVARIANT_NAMES
        == ENDPOINT_INVARIANT_NAMES
        == (*WIRE_INVARIANTS, SCRIPT_NOT_EXCEEDED, TOOL_RESULTS_AS_SCRIPTED)
    )


RETRIED = """\
name: retried
agent:
  system_prompt: {regex: "^You answer weather questions\\\\."}
turns:
  - user: Weather in Paris?
    RETRIES
    model:
      - say: Paris.
      - say: It is sunny in Paris.
  - user: And in Oslo?
    model:
      - say: It is sunny in Oslo.
"""


def _retry_then_next_turn(agent: RawChatAgent, retry: str) -> None:
    messages = first_turn()
    answer = agent.post(messages)
    messages += [assistant_of(answer), {"role": "user", "content": retry}]
    answer = agent.post(messages)
    messages += [assistant_of(answer), {"role": "user", "content": "And in Oslo?"}]
    agent.post(messages)


@pytest.mark.parametrize(
    ("retries", "retry"),
    [
        pytest.param("", "Please return text or call a tool.", id="a-framework's-by-default"),
        pytest.param("retries: {contains: Try again}", "Try again: no city.", id="a-rule"),
        pytest.param("retries: true", "Anything at all.", id="any"),
    ],
)
def test_a_retry_of_a_turn_is_answered_in_that_turn(
    write_scenario: Callable[[str], Path], retries: str, retry: str
) -> None:
    handle = EndpointHandle(write_scenario(RETRIED.replace("RETRIES", retries)))
    _retry_then_next_turn(RawChatAgent(handle), retry)
    result = handle.check()
    assert [turn.final_response for turn in result.turns] == [
        "It is sunny in Paris.",
        "It is sunny in Oslo.",
    ]


def test_a_message_no_rule_names_starts_the_next_turn(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(RETRIED.replace("RETRIES", "retries: {contains: Try again}"))
    handle = EndpointHandle(path)
    _retry_then_next_turn(RawChatAgent(handle), "Something else.")
    [problem] = _violations(handle, "user_turn_sent")
    assert problem.message == (
        "request 2: user_turn_sent: the newest user message differs from the turn's user text"
    )
    assert (problem.expected, problem.observed) == ("And in Oslo?", "Something else.")


def test_a_system_prompt_rule_the_prompt_fails(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(RETRIED.replace("RETRIES", ""))
    handle = EndpointHandle(path)
    messages = first_turn()
    messages[0]["content"] = "Note: you answer weather questions."
    RawChatAgent(handle).post(messages)
    [problem] = _violations(handle, "system_prompt_sent")
    assert problem.message == (
        "request 1: system_prompt_sent: the system prompt sent does not pass "
        "agent.system_prompt's rule {'regex': '^You answer weather questions\\\\.'}"
    )
    assert problem.location == f"{path}:3"


AGENTS = """\
name: two-agents
agent:
  tools:
    get_weather: {params: {city: string}, replies: [{return: sunny}]}
    get_time: {params: {zone: string}, replies: [{return: noon}]}
  agents:
    weather: {system_prompt: You answer weather questions., tools: [get_weather]}
    clock: {system_prompt: {contains: time}, tools: [get_time]}
turns:
  - user: Weather in Paris?
    model:
      - say: It is sunny.
"""


def test_a_request_that_is_none_of_the_agents_fails_system_prompt_sent(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(AGENTS)
    handle = EndpointHandle(path)
    messages = first_turn()
    messages[0]["content"] = "You tell jokes."
    RawChatAgent(handle).post(messages)  # offers get_weather: one of agent.tools, no failure
    [problem] = _violations(handle, "system_prompt_sent")
    assert problem.message == (
        "request 1: system_prompt_sent: the system prompt sent is that of none of agent.agents "
        "(weather, clock)"
    )
    assert problem.location == f"{path}:6"
    assert _violations(handle, "tools_as_declared") == []


def test_a_request_of_one_agent_is_held_to_its_tools(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(AGENTS)
    handle = EndpointHandle(path)
    RawChatAgent(handle).post(first_turn(), tools=[])  # the weather agent, without its tool
    assert _violations(handle, "system_prompt_sent") == []
    time = {"type": "function", "function": {"name": "get_time", "parameters": {}}}
    handle = EndpointHandle(path)
    RawChatAgent(handle).post(first_turn(), tools=[WEATHER_TOOL, time])
    [problem] = _violations(handle, "tools_as_declared")
    assert problem.message.startswith(
        "request 1: tools_as_declared: the request offers get_time, which "
        "agent.agents.weather.tools does not declare"
    )
    assert problem.location == f"{path}:7"


def test_a_violation_points_at_the_line_of_the_field_it_concerns(
    write_scenario: Callable[[str], Path],
) -> None:
    # Fields written on lines of their own: the user text after the script, an agent's tools
    # below its prompt.
    text = WEATHER.replace("  - user: Weather in Paris?\n    model:\n", "  - model:\n")
    path = write_scenario(
        text.replace("    expect:\n", "    user: Weather in Paris?\n    expect:\n")
    )
    handle = EndpointHandle(path)
    RawChatAgent(handle).post(first_turn("Weather in Rome?"))
    [problem] = _violations(handle, "user_turn_sent")
    assert problem.location == f"{path}:9"
    block = (
        "weather:\n      system_prompt: You answer weather questions.\n      tools: [get_weather]"
    )
    path = write_scenario(
        AGENTS.replace(
            "weather: {system_prompt: You answer weather questions., tools: [get_weather]}", block
        ),
        "agents-in-blocks",
    )
    handle = EndpointHandle(path)
    time = {"type": "function", "function": {"name": "get_time", "parameters": {}}}
    RawChatAgent(handle).post(first_turn(), tools=[WEATHER_TOOL, time])
    [problem] = _violations(handle, "tools_as_declared")
    assert problem.location == f"{path}:9"


def test_agents_take_the_place_of_the_system_prompt(
    write_scenario: Callable[[str], Path],
) -> None:
    from agentrig.harness.errors import ScenarioFileError

    text = AGENTS.replace("agent:\n", "agent:\n  system_prompt: You help.\n").replace(
        "tools: [get_time]", "tools: [get_date]"
    )
    with pytest.raises(ScenarioFileError) as raised:
        EndpointHandle(write_scenario(text))
    message = str(raised.value)
    assert "give each agent's system_prompt under agents, not system_prompt" in message
    assert "unknown tool 'get_date'; agent.tools has: get_weather, get_time" in message


def test_a_violation_every_request_repeats_is_said_once_naming_the_requests(
    write_scenario: Callable[[str], Path],
) -> None:
    openai = pytest.importorskip("openai")
    path = write_scenario(
        DECLARED.replace(
            "      - say: It is sunny",
            "      - call: get_weather(city=Paris)\n      - say: It is sunny",
        )
    )
    handle = EndpointHandle(path)
    client = openai.OpenAI(
        api_key=handle.api_key, base_url=handle.openai_base_url, http_client=handle.httpx2_client()
    )
    weather = _weather_tool({"city": {"type": "string"}, "days": {"type": "integer"}}, ["city"])
    messages: list[Any] = first_turn()
    while True:  # the agent offers get_weather only: each request breaks tools_as_declared
        message = (
            client.chat.completions.create(model="gpt-test", messages=messages, tools=[weather])
            .choices[0]
            .message
        )
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
    [problem] = _violations(handle, "tools_as_declared")
    assert problem.message.startswith(
        "requests 1, 2 and 3: tools_as_declared: agent.tools declares get_time"
    )
    assert (problem.step, problem.location) == (1, f"{path}:9")
    outcome = {o.name: (o.checks, o.failures) for o in handle.result().invariants}
    assert outcome["tools_as_declared"] == (3, 3)  # each request still counts


EMPTY_ANSWER = """\
name: empty-answer
turns:
  - user: Weather in Paris?
    model:
      - say: ""
        finish_reason: stop
      - say: It is sunny.
"""


@pytest.mark.parametrize("echoed", [False, True], ids=["left out", "sent back"])
def test_an_answer_of_no_text_may_be_left_out_of_the_history_or_sent_back(
    write_scenario: Callable[[str], Path], echoed: bool
) -> None:
    handle = EndpointHandle(write_scenario(EMPTY_ANSWER))
    agent = RawChatAgent(handle)
    messages = first_turn()
    empty = agent.post(messages)
    assert empty.json()["choices"][0]["message"]["content"] == ""
    again = [*messages, assistant_of(empty)] if echoed else messages
    assert agent.post(again).json()["choices"][0]["message"]["content"] == "It is sunny."
    result = handle.check()
    assert {o.name: o.failures for o in result.invariants}["history_grows"] == 0
    said = [(entry.kind, entry.text) for entry in result.transcript]
    assert said == [("user", "Weather in Paris?"), ("assistant", "It is sunny.")]


def test_an_answer_of_text_left_out_of_the_history_is_still_dropped(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(EMPTY_ANSWER.replace('say: ""', "say: Hm.")))
    agent = RawChatAgent(handle)
    agent.post(first_turn())
    agent.post(first_turn())
    [problem] = _violations(handle, "history_grows")
    assert problem.message == "request 2: history_grows: conversation item 2 of 2 was dropped"
