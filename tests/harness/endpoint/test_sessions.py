"""Sessions: multi-turn conversations, isolation by key, faults, and what endpoint mode refuses."""

from __future__ import annotations

import collections
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.datastructures import Headers

from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.endpoint.service import ScenarioEndpoint
from agentrig.harness.endpoint.wire import CREATED
from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios.loader import load_scenario

from .conftest import WEATHER, RawChatAgent, assistant_of, first_turn
from .sdk_agents import SYSTEM, chat_agent

openai = pytest.importorskip("openai")

TWO_TURNS = """\
name: two-turns
agent: {system_prompt: You answer weather questions.}
turns:
  - user: Weather in Paris?
    model:
      - call: get_weather(city=Paris)
      - say: Sunny in Paris.
    expect: {final_response: Sunny in Paris., model_calls: 2}
  - user: And in Oslo?
    model:
      - call: get_weather(city=Oslo)
      - say: Sunny in Oslo too.
    expect:
      final_response: {contains: Oslo}
      tool_calls: {calls: [get_weather(city=Oslo)]}
      tool_results: [{content: sunny in Oslo}]
"""


def _client(handle: EndpointHandle, **options: Any) -> Any:
    return openai.OpenAI(
        api_key=handle.api_key,
        base_url=handle.openai_base_url,
        http_client=handle.httpx2_client(),
        **{"max_retries": 0, **options},
    )


def test_a_multi_turn_conversation_plays_each_turns_script(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(TWO_TURNS))
    client = _client(handle)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert chat_agent(client, messages) == "Sunny in Paris."
    messages.append({"role": "user", "content": "And in Oslo?"})
    assert chat_agent(client, messages) == "Sunny in Oslo too."
    result = handle.check()
    assert [(t.index, t.steps, t.final_response) for t in result.turns] == [
        (1, 2, "Sunny in Paris."),
        (2, 2, "Sunny in Oslo too."),
    ]
    kinds = [(e.turn, e.kind) for e in result.transcript]
    assert kinds == [
        (1, "user"),
        (1, "tool_call"),
        (1, "tool_result"),
        (1, "assistant"),
        (2, "user"),
        (2, "tool_call"),
        (2, "tool_result"),
        (2, "assistant"),
    ]
    # The agent resent its whole conversation four times; the session keeps each item once.
    exchanges = handle.endpoint.session(handle.api_key).exchanges
    kept = [message for exchange in exchanges for message in exchange.conversation]
    assert len(kept) == 1 + 3 + 5 + 7
    assert len({id(message) for message in kept}) == 7


TWO_ROUNDS = """\
name: two-rounds
agent: {system_prompt: You answer weather questions.}
turns:
  - user: Weather in Paris and Oslo?
    model:
      - call: get_weather(city=Paris)
      - call: get_weather(city=Oslo)
      - say: Sunny in both.
    expect:
      model_calls: 3
      tool_results: [{content: sunny in Paris}, {content: sunny in Oslo}]
"""


@pytest.mark.parametrize(
    ("expected", "passes"),
    [
        ("[{content: sunny in Paris}, {content: sunny in Oslo}]", True),
        ("[{content: sunny in Paris}, {content: sunny in Paris}, {content: sunny in Oslo}]", False),
    ],
)
def test_a_tool_result_resent_with_the_history_counts_once(
    write_scenario: Callable[[str], Path], expected: str, passes: bool
) -> None:
    # The second and third requests both carry the Paris result: it was returned once.
    text = TWO_ROUNDS.replace("[{content: sunny in Paris}, {content: sunny in Oslo}]", expected)
    handle = EndpointHandle(write_scenario(text))
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris and Oslo?"},
    ]
    assert chat_agent(_client(handle), messages) == "Sunny in both."
    failures = [f.message for f in handle.result().failures]
    assert (
        failures == []
        if passes
        else ["turn 1: expectation tool_results: 2 tool result(s) were returned, 3 expected"]
    ), failures


def test_a_turn_never_reached_and_unused_replies_fail(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(TWO_TURNS))
    RawChatAgent(handle).post(first_turn())
    messages = [failure.message for failure in handle.result().failures]
    assert "turn 1: scripted model reply 2 was never used" in messages
    assert "turn 2 was never reached: no request carried its user message" in messages


def test_an_agent_that_forgets_the_first_turn(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(TWO_TURNS))
    client = _client(handle)
    first = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    chat_agent(client, first)
    forgetful = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "And in Oslo?"}]
    with pytest.raises(openai.BadRequestError, match="came after the script was used up"):
        chat_agent(client, forgetful)
    failures = handle.result().failures
    # Seen as the first turn again: its script is used up, and the history was dropped.
    assert any(f.invariant == "history_grows" for f in failures)
    assert any(f.invariant == "script_not_exceeded" for f in failures)


def test_sessions_with_different_keys_never_share_a_script(
    write_scenario: Callable[[str], Path],
) -> None:
    scenario = load_scenario(write_scenario(WEATHER))
    endpoint = ScenarioEndpoint([scenario])
    handles = []
    errors: list[BaseException] = []

    def agent(number: int) -> None:
        try:
            handle = EndpointHandle(scenario)
            handle.endpoint = endpoint
            handle.api_key = f"weather/{number}"
            handles.append(handle)
            messages = first_turn()
            raw = RawChatAgent(handle)
            answer = raw.post(messages)
            call_id = answer.json()["choices"][0]["message"]["tool_calls"][0]["id"]
            raw.post(
                [
                    *messages,
                    assistant_of(answer),
                    {"role": "tool", "tool_call_id": call_id, "content": "sunny"},
                ]
            )
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(endpoint.sessions) == 8
    assert all(result.passed for result in endpoint.results())


def test_several_scenarios_are_told_apart_by_key(write_scenario: Callable[[str], Path]) -> None:
    endpoint = ScenarioEndpoint(
        [load_scenario(write_scenario(WEATHER, "a")), load_scenario(write_scenario(TWO_TURNS, "b"))]
    )
    headers = {"authorization": "Bearer nobody"}
    reply = endpoint.handle("POST", "/v1/chat/completions", headers, b"{}")
    assert reply.status == 401
    assert b"names no scenario" in reply.body
    assert b"two-turns, weather" in reply.body
    assert endpoint.session("two-turns/x").scenario.name == "two-turns"
    assert endpoint.session("weather").scenario.name == "weather"


def test_unknown_routes_and_missing_keys_get_provider_errors(
    write_scenario: Callable[[str], Path],
) -> None:
    endpoint = ScenarioEndpoint([load_scenario(write_scenario(WEATHER))])
    missing = endpoint.handle("POST", "/v1/embeddings", {"authorization": "Bearer k"}, b"{}")
    assert missing.status == 404
    error = json.loads(missing.body)["error"]  # as the OpenAI API answers an unknown URL
    assert error["message"].startswith("Invalid URL (POST /v1/embeddings)")
    assert "POST /v1/chat/completions" in error["message"]
    assert (error["type"], error["code"]) == ("invalid_request_error", None)
    anonymous = endpoint.handle("POST", "/v1/messages", {"anthropic-version": "x"}, b"{}")
    assert anonymous.status == 401
    assert b'"type":"error"' in anonymous.body.replace(b" ", b"")
    models = endpoint.handle("GET", "/v1/models", {}, b"")
    assert models.status == 200
    assert b'"owned_by":"agentrig"' in models.body.replace(b" ", b"")


def test_the_model_list_and_errors_take_the_shape_of_the_provider_asked(
    write_scenario: Callable[[str], Path],
) -> None:
    """Headers as a plain dict (as pytest-httpx2's interception hands them over): an Anthropic
    client's ``anthropic-version`` header makes the model list and errors Anthropic's."""
    endpoint = ScenarioEndpoint([load_scenario(write_scenario(WEATHER))])
    listed = json.loads(endpoint.handle("GET", "/v1/models", {}, b"").body)
    assert listed == {
        "object": "list",
        "data": [{"id": "gpt-test", "object": "model", "created": CREATED, "owned_by": "agentrig"}],
    }
    anthropic_headers = {"Anthropic-Version": "2023-06-01", "X-Api-Key": "k"}
    theirs = json.loads(endpoint.handle("GET", "/v1/models", anthropic_headers, b"").body)
    assert theirs["first_id"] == theirs["last_id"] == "gpt-test"
    assert theirs["data"][0]["type"] == "model"
    missing = endpoint.handle("POST", "/v1/embeddings", anthropic_headers, b"{}")
    assert missing.status == 404
    assert json.loads(missing.body)["type"] == "error"


@pytest.mark.parametrize("query", ["key=", "key=%20", "apikey=k"])
def test_a_query_without_a_key_value_is_refused_as_no_key(
    write_scenario: Callable[[str], Path], query: str
) -> None:
    endpoint = ScenarioEndpoint([load_scenario(write_scenario(WEATHER))])
    reply = endpoint.handle("POST", f"/v1beta/models/m:generateContent?{query}", {}, b"{}")
    assert reply.status == 401
    assert "no API key" in json.loads(reply.body)["error"]["message"]


FAULTS = """\
name: faults
agent: {system_prompt: You answer weather questions.}
turns:
  - user: Weather in Paris?
    model:
      - fault: {status: 429, retry_after: 0.01, message: slow down}
      - fault: {status: 529, retry_after: 0.01}
      - call: get_weather(city=Paris)
      - say: Sunny.
    expect: {final_response: Sunny., model_calls: 2}
"""


def test_status_faults_are_retried_by_the_sdk(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(FAULTS))
    client = _client(handle, max_retries=2)
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert chat_agent(client, messages) == "Sunny."
    result = handle.check()
    events = [e.text for e in result.transcript if e.kind == "event"]
    assert events == ["HTTP 429: slow down", "HTTP 529: scripted fault: HTTP 529"]


def test_a_status_fault_carries_retry_after(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(FAULTS))
    response = RawChatAgent(handle).post(first_turn())
    assert response.status_code == 429
    assert response.headers["retry-after"] == "0.01"
    assert response.json()["error"]["message"] == "slow down"


STREAM_FAULTS = """\
name: stream-faults
turns:
  - user: Weather in Paris?
    model:
      - say: It is sunny in Paris today.
        fault: {cut_after: 2}
      - say: It is sunny in Paris today.
        fault: {malformed_at: 2}
      - say: It is sunny in Paris today.
"""


def test_stream_faults_reach_the_agent_as_broken_streams(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(STREAM_FAULTS))
    client = _client(handle)
    messages = [{"role": "user", "content": "Weather in Paris?"}]

    def stream() -> str:
        chunks = client.chat.completions.create(model="m", messages=messages, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    with pytest.raises(openai.APIConnectionError):
        stream()
    with pytest.raises(ValueError, match=r"Expecting value|Extra data|JSON"):
        stream()
    assert stream() == "It is sunny in Paris today."
    result = handle.check()
    assert [e.text for e in result.transcript if e.kind == "event"] == [
        "fault: stream cut after 2 events",
        "fault: malformed stream event 2",
    ]


@pytest.mark.parametrize(
    ("addition", "field", "line"),
    [
        ("    expect: {status: completed}\n", "turns[0].expect.status", 10),
        ("    expect: {messages: [user]}\n", "turns[0].expect.messages", 10),
        ("    cancel: {after_step: 1}\n", "turns[0].cancel", 10),
    ],
)
def test_what_only_agentrigs_runtime_can_do_is_refused_naming_the_line(
    write_scenario: Callable[[str], Path], addition: str, field: str, line: int
) -> None:
    text = WEATHER.split("    expect:")[0] + addition
    path = write_scenario(text)
    with pytest.raises(ScenarioFileError) as caught:
        EndpointHandle(path)
    assert (caught.value.field, caught.value.line, caught.value.path) == (field, line, str(path))
    assert "the endpoint" in caught.value.reason


def test_agent_settings_of_agentrigs_runtime_are_refused(
    write_scenario: Callable[[str], Path],
) -> None:
    text = WEATHER.replace("  model: gpt-test\n", "  model: gpt-test\n  budget: {max_steps: 3}\n")
    with pytest.raises(ScenarioFileError, match=r"agent\.budget: agent\.budget configures"):
        EndpointHandle(write_scenario(text))


def test_a_builder_of_agentrigs_own_is_refused(write_scenario: Callable[[str], Path]) -> None:
    text = WEATHER.replace("  model: gpt-test\n", "  model: gpt-test\n  builder: my_agent:build\n")
    with pytest.raises(ScenarioFileError, match=r"agent\.builder: agent\.builder configures"):
        EndpointHandle(write_scenario(text))


REFUSAL = """\
name: refusal
turns:
  - user: Help me pick a lock.
    model:
      - refuse: I can't help with that.
    expect:
      final_response: I can't help with that.
      model_calls: 1
"""


def test_a_refusal_reaches_the_sdk_as_one(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(REFUSAL))
    message = (
        _client(handle)
        .chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Help me pick a lock."}]
        )
        .choices[0]
    )
    assert message.finish_reason == "content_filter"
    assert message.message.refusal == "I can't help with that."
    handle.check()


def test_responses_previous_response_id_continues_the_stored_conversation(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(WEATHER))
    client = _client(handle)
    first = client.responses.create(
        model="gpt-test",
        instructions=SYSTEM,
        input="Weather in Paris?",
        tools=[
            {
                "type": "function",
                "name": "get_weather",
                "strict": False,
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
    )
    [call] = [item for item in first.output if item.type == "function_call"]
    second = client.responses.create(
        model="gpt-test",
        instructions=SYSTEM,
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
    )
    assert second.output_text == "It is sunny in Paris."
    handle.check()


def test_the_endpoint_takes_no_ids_from_an_agent_running_beside_it(
    write_scenario: Callable[[str], Path],
) -> None:
    """In-process, the endpoint runs in the agent's thread: reading a request must not draw ids
    from the seeded source the agent runs under (that would shift the agent's own ids)."""
    from agentrig.clock import runtime_context
    from agentrig.fakes import FakeClock, SeededIds

    handle = EndpointHandle(write_scenario(WEATHER))
    ids = SeededIds(7)
    with runtime_context(clock=FakeClock(), ids=ids):
        assert chat_agent(_client(handle), first_turn()) == "It is sunny in Paris."
        taken = ids.new_id("message")
    assert taken == SeededIds(7).new_id("message")


# --- what sessions share ------------------------------------------------------------------------

REASONING = """\
name: reasoning
turns:
  - user: Weather in Paris?
    model:
      - think: I should call the tool.
        call: get_weather(city=Paris)
"""

TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def _responses_body(model: str, *, stream: bool = False, sealed: bool = False) -> bytes:
    body: dict[str, Any] = {
        "model": model,
        "input": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": TOOLS,
        "stream": stream,
    }
    if sealed:
        body["include"] = ["reasoning.encrypted_content"]
    return json.dumps(body).encode()


def test_sessions_of_one_scenario_each_get_the_answer_their_request_asks_for(
    write_scenario: Callable[[str], Path],
) -> None:
    """An answer is worked out once for the sessions that play the same reply, but it still
    follows each request: its model, streaming, and whether the reasoning is sealed."""
    endpoint = ScenarioEndpoint([load_scenario(write_scenario(REASONING))])

    def answer(key: str, body: bytes) -> bytes:
        reply = endpoint.handle("POST", "/v1/responses", {"Authorization": f"Bearer {key}"}, body)
        assert reply.status == 200, reply.body
        return reply.body if reply.chunks is None else b"".join(reply.chunks)

    sealed = json.loads(answer("a", _responses_body("model-a", sealed=True)))
    other_model = json.loads(answer("b", _responses_body("model-b", sealed=True)))
    plain = json.loads(answer("c", _responses_body("model-a")))
    streamed = answer("d", _responses_body("model-d", stream=True))
    again = json.loads(answer("e", _responses_body("model-a", sealed=True)))
    assert (sealed["model"], other_model["model"], plain["model"]) == (
        "model-a",
        "model-b",
        "model-a",
    )
    assert "encrypted_content" in sealed["output"][0]
    assert "encrypted_content" not in plain["output"][0]
    assert streamed.startswith(b"event: response.created")
    assert b'"model-d"' in streamed
    assert again == sealed
    assert [r.passed for r in endpoint.results()] == [True] * 5


def starlette_headers() -> Headers:
    """Headers as the ASGI app hands them over (names lowered by the server)."""
    return Headers(raw=[(b"authorization", b"Bearer mixed")])


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer mixed"},
        {"X-Api-Key": "mixed", "Anthropic-Version": "2023-06-01"},
        collections.OrderedDict([("Authorization", "Bearer mixed")]),
        httpx.Headers({"AUTHORIZATION": "Bearer mixed"}),
        starlette_headers(),
    ],
    ids=["dict", "dict-x-api-key", "dict-subclass", "httpx-headers", "starlette-headers"],
)
def test_header_names_are_read_in_any_case(
    write_scenario: Callable[[str], Path], headers: Any
) -> None:
    endpoint = ScenarioEndpoint([load_scenario(write_scenario(REASONING))])
    reply = endpoint.handle("POST", "/v1/responses", headers, _responses_body("m"))
    assert reply.status == 200, reply.body
    assert list(endpoint.sessions) == ["mixed"]


TRIAL_MIXTURE = """\
name: trial-mixture
agent: {system_prompt: You answer.}
turns:
  - user: Hi
    mixture:
      - {weight: 1, label: kind, model: [{say: Hello!}]}
      - {weight: 1, label: curt, model: [{say: What?}]}
"""


def test_each_live_trial_header_is_a_session_of_its_own_with_its_own_mixture_draw(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(TRIAL_MIXTURE), key="model")
    client = _client(handle)
    answers = []
    for trial in range(20):
        headers = {"x-agentrig-trial": f"refund/trial-{trial}.0"}
        answer = client.chat.completions.create(
            model="m",
            messages=[
                {"role": "system", "content": "You answer."},
                {"role": "user", "content": "Hi"},
            ],
            extra_headers=headers,
        )
        answers.append(answer.choices[0].message.content)
    # twenty sessions of one key: each played its own draw, and each passed
    results = handle.endpoint.results()
    assert len(results) == 20
    assert all(result.passed for result in results)
    assert set(answers) == {"Hello!", "What?"}
    # the same key and trial on another endpoint: the same branch
    other = _client(EndpointHandle(write_scenario(TRIAL_MIXTURE), key="model"))
    again = other.chat.completions.create(
        model="m",
        messages=[{"role": "system", "content": "You answer."}, {"role": "user", "content": "Hi"}],
        extra_headers={"x-agentrig-trial": "refund/trial-3.0"},
    )
    assert again.choices[0].message.content == answers[3]


def test_what_a_failing_session_reports_names_each_place(
    write_scenario: Callable[[str], Path],
) -> None:
    # The agent answers the tool call with "cloudy", then asks twice more, past the script.
    path = write_scenario(WEATHER)
    handle = EndpointHandle(path)
    raw = RawChatAgent(handle)
    messages = first_turn()
    answer = raw.post(messages)
    call_id = answer.json()["choices"][0]["message"]["tool_calls"][0]["id"]
    messages += [
        assistant_of(answer),
        {"role": "tool", "tool_call_id": call_id, "content": "cloudy"},
    ]
    messages.append(assistant_of(raw.post(messages)))
    for _ in range(2):
        assert raw.post(messages).status_code == 400
    result = handle.result()

    assert result.session == handle.api_key  # a session without a name is known by its key
    assert result.file == str(path)  # the reports name the scenario file
    overrun = next(o for o in result.invariants if o.name == "script_not_exceeded")
    assert (overrun.checks, overrun.failures) == (4, 2)  # each request is one check
    [expectation] = [f for f in result.failures if f.kind == "expectation"]
    assert expectation.message == "turn 1: expect.tool_results[0]: tool result 1: content differs"
    assert expectation.location == f"{path}:14"  # the line of `tool_results:`
    roles = [(e.kind, e.role) for e in result.transcript if e.turn == 1]
    assert roles[:4] == [
        ("user", "user"),
        ("tool_call", "assistant"),
        ("tool_result", "tool"),
        ("assistant", "assistant"),
    ]


def test_an_assistant_message_the_endpoint_never_gave_is_in_the_transcript(
    write_scenario: Callable[[str], Path],
) -> None:
    # An agent that writes a tool round of its own into the history before asking.
    handle = EndpointHandle(write_scenario(WEATHER))
    call = {"id": "own", "type": "function"}
    call["function"] = {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    messages = [
        *first_turn(),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "own", "content": "rain"},
    ]
    RawChatAgent(handle).post(messages)
    entries = [(e.kind, e.role, e.text) for e in handle.result().transcript][:3]
    assert entries == [
        ("user", "user", "Weather in Paris?"),
        ("assistant", "assistant", "get_weather(city='Oslo')"),
        ("tool_result", "tool", "rain"),
    ]


def test_a_request_past_the_scenarios_turns_is_refused_with_http_400(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(WEATHER))
    messages = [*first_turn(), {"role": "user", "content": "And in Oslo?"}]
    response = RawChatAgent(handle).post(messages)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "agentrig endpoint: request 1 carries 2 user messages, but the scenario has 1 turn(s)"
    )
