"""The scenario endpoint on the Gemini API, through the official ``google-genai`` SDK: its keys,
routes and errors, the scripted faults, wire chunking, interception of Google's host, and the
invariants that read what only Gemini sends (thought signatures, calls without ids)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.endpoint.service import ScenarioEndpoint
from agentrig.harness.scenarios.loader import load_scenario

from .conftest import REASONING_WEATHER
from .sdk_agents import GEMINI_DECLARATION, SYSTEM, gemini_agent, gemini_client

genai = pytest.importorskip("google.genai")
types = genai.types
httpx = pytest.importorskip("httpx")

WEATHER = """\
name: weather
agent:
  system_prompt: You answer weather questions.
  model: gemini-test
  tools:
    get_weather:
      params: {city: string}
      replies: [{return: sunny in Paris}]
turns:
  - user: Weather in Paris?
    model:
      - call: get_weather(city=Paris)
      - say: It is sunny in Paris today.
    expect:
      final_response: It is sunny in Paris today.
      tool_calls: {calls: [get_weather(city=Paris)]}
      tool_results: [{tool: get_weather, content: sunny in Paris}]
"""
PATH = "/v1beta/models/gemini-test:generateContent"
QUESTION = {
    "systemInstruction": {"parts": [{"text": SYSTEM}]},
    "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
    "tools": [{"functionDeclarations": [GEMINI_DECLARATION]}],
}


@pytest.fixture
def weather(write_scenario: Callable[[str], Path]) -> Path:
    return write_scenario(WEATHER)


def post(handle: EndpointHandle, path: str, body: object, **headers: str) -> Any:
    """One raw request through an in-process httpx client."""
    with handle.httpx_client() as client:
        return client.post(f"{handle.base_url}{path}", json=body, headers=headers)


# --- keys, routes, errors ----------------------------------------------------------------


@pytest.mark.parametrize("where", ["header", "query"])
def test_the_key_is_read_from_googles_header_or_the_query(weather: Path, where: str) -> None:
    handle = EndpointHandle(weather, key="weather/one")
    if where == "header":
        response = post(handle, PATH, QUESTION, **{"x-goog-api-key": "weather/one"})
    else:
        response = post(handle, f"{PATH}?key=weather/one", QUESTION)

    assert response.status_code == 200
    assert response.json()["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == (
        "get_weather"
    )
    assert list(handle.endpoint.sessions) == ["weather/one"]


def test_a_request_without_a_key_gets_googles_401(weather: Path) -> None:
    response = post(EndpointHandle(weather), PATH, QUESTION)

    assert response.status_code == 401
    assert response.json()["error"]["status"] == "UNAUTHENTICATED"


def test_an_unknown_gemini_method_gets_googles_404(weather: Path) -> None:
    handle = EndpointHandle(weather)
    response = post(
        handle, "/v1beta/models/gemini-test:countTokens", QUESTION, **{"x-goog-api-key": "k"}
    )

    assert response.status_code == 404
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (404, "NOT_FOUND")
    assert "POST /v1beta/models/{model}:generateContent" in error["message"]


def test_the_model_list_is_googles(weather: Path) -> None:
    endpoint = ScenarioEndpoint([load_scenario(weather)])
    reply = endpoint.handle("GET", "/v1beta/models", {"x-goog-api-key": "k"}, b"")

    assert json.loads(reply.body)["models"][0]["name"] == "models/gemini-test"
    assert reply.status == 200


STREAM = "/v1beta/models/gemini-test:streamGenerateContent"


@pytest.mark.parametrize("live", [False, True], ids=["in-process", "loopback"])
def test_a_stream_without_alt_sse_is_one_json_array_sent_element_by_element(
    weather: Path, live: bool
) -> None:
    with (
        EndpointHandle(weather, live=live) as handle,
        httpx.Client() if live else handle.httpx_client() as client,
    ):
        headers = {"x-goog-api-key": handle.api_key}
        url = f"{handle.base_url}{STREAM}"
        with client.stream("POST", url, json=QUESTION, headers=headers) as response:
            pieces = list(response.iter_raw())
            kind = response.headers["content-type"]
        first = json.loads(b"".join(pieces))
        answer = {
            **QUESTION,
            "contents": [*QUESTION["contents"], first[-1]["candidates"][0]["content"]],
        }
        answer["contents"].append(
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "get_weather",
                            "response": {"output": "sunny in Paris"},
                        }
                    }
                ],
            }
        )
        second = json.loads(client.post(f"{url}?alt=json", json=answer, headers=headers).content)
        handle.check()

    assert kind == "application/json"
    assert pieces[0].startswith(b"[{")
    assert pieces[-1] == b"\n]"
    assert first[0]["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "get_weather"
    text = "".join(
        part.get("text", "")
        for chunk in second
        for part in chunk["candidates"][0]["content"]["parts"]
    )
    assert text == "It is sunny in Paris today."
    assert len(second) > 1
    assert second[-1]["candidates"][0]["finishReason"] == "STOP"


def test_a_stream_cut_midway_leaves_the_json_array_open(
    write_scenario: Callable[[str], Path],
) -> None:
    text = WEATHER.replace(
        "      - say: It is sunny in Paris today.\n",
        "      - say: It is sunny in Paris today.\n        fault: {cut_after: 2}\n",
    )
    handle = EndpointHandle(write_scenario(text))
    body = {**QUESTION, "contents": QUESTION["contents"]}
    headers = {"x-goog-api-key": handle.api_key}
    with handle.httpx_client() as client:
        client.post(f"{handle.base_url}{STREAM}", json=body, headers=headers)  # the call
        pieces: list[bytes] = []
        url = f"{handle.base_url}{STREAM}"
        with (
            client.stream("POST", url, json=body, headers=headers) as cut,
            pytest.raises(httpx.RemoteProtocolError),  # the connection cut
        ):
            pieces.extend(cut.iter_raw())
    sent = b"".join(pieces)
    assert sent.startswith(b"[{")
    assert not sent.endswith(b"]")


def test_a_stream_of_another_alt_is_refused_naming_alt(weather: Path) -> None:
    handle = EndpointHandle(weather)
    response = post(handle, f"{STREAM}?alt=proto", QUESTION, **{"x-goog-api-key": handle.api_key})

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert error["details"][0]["fieldViolations"][0]["field"] == "alt"
    assert "could not be read" in handle.result().failures[0].message


def test_a_model_other_than_the_scenarios_is_reported(weather: Path) -> None:
    handle = EndpointHandle(weather)
    client = gemini_client(handle)
    client.models.generate_content(model="gemini-other", contents="Weather in Paris?")

    named = [f for f in handle.result().failures if f.invariant == "model_named"]
    assert len(named) == 1
    assert "gemini-other" in named[0].message


PARALLEL = """\
name: parallel
agent: {system_prompt: You answer weather questions.}
turns:
  - user: Weather in Paris?
    model:
      - calls: [get_weather(city=Paris), get_weather(city=Oslo)]
      - say: Sunny in both.
    expect:
      final_response: Sunny in both.
      tool_results:
        - {tool: get_weather, content: sunny in Paris}
        - {tool: get_weather, content: sunny in Oslo}
"""


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_parallel_calls_through_the_sdk(
    write_scenario: Callable[[str], Path], stream: bool, asynchronous: bool
) -> None:
    handle = EndpointHandle(write_scenario(PARALLEL))
    client = gemini_client(handle)

    if asynchronous:
        answer = asyncio.run(_async_gemini_agent(client.aio, stream=stream))
    else:
        answer = gemini_agent(client, stream=stream)

    assert answer == "Sunny in both."
    handle.check()


async def _async_gemini_agent(client: Any, *, stream: bool) -> str:
    """``gemini_agent`` on the SDK's async client."""
    config = types.GenerateContentConfig(
        system_instruction=SYSTEM, tools=[types.Tool(function_declarations=[GEMINI_DECLARATION])]
    )
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="Weather in Paris?")])]
    while True:
        options = {"model": "gemini-test", "contents": contents, "config": config}
        if stream:
            parts = [
                part
                async for chunk in await client.models.generate_content_stream(**options)
                for part in chunk.candidates[0].content.parts or ()
            ]
            content = types.Content(role="model", parts=parts)
        else:
            content = (await client.models.generate_content(**options)).candidates[0].content
        contents.append(content)
        calls = [part.function_call for part in content.parts or () if part.function_call]
        if not calls:
            return "".join(part.text or "" for part in content.parts or ())
        contents.append(
            types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id=call.id,
                            name=call.name,
                            response={"result": f"sunny in {call.args['city']}"},
                        )
                    )
                    for call in calls
                ],
            )
        )


# --- faults ------------------------------------------------------------------------------

FAULTS = """\
name: faults
agent: {system_prompt: You answer weather questions.}
turns:
  - user: Weather in Paris?
    model:
      - fault: {status: 429, retry_after: 0, message: slow down}
      - fault: {status: 503}
      - call: get_weather(city=Paris)
      - say: Sunny.
    expect: {final_response: Sunny., model_calls: 2}
"""


def test_status_faults_are_retried_by_the_sdk(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(FAULTS))

    assert gemini_agent(gemini_client(handle, attempts=2)) == "Sunny."

    result = handle.check()
    events = [e.text for e in result.transcript if e.kind == "event"]
    assert events == ["HTTP 429: slow down", "HTTP 503: scripted fault: HTTP 503"]


def test_a_status_fault_reaches_an_sdk_that_does_not_retry_as_googles_error(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(FAULTS))

    with pytest.raises(genai.errors.ClientError) as raised:
        gemini_agent(gemini_client(handle))

    assert (raised.value.code, raised.value.status, raised.value.message) == (
        429,
        "RESOURCE_EXHAUSTED",
        "slow down",
    )


def test_a_status_fault_carries_retry_after(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(FAULTS))
    response = post(handle, PATH, QUESTION, **{"x-goog-api-key": handle.api_key})

    assert response.status_code == 429
    assert response.headers["retry-after"] == "0"


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
        latency: 0.01
"""


def test_stream_faults_reach_the_agent_as_broken_streams(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(STREAM_FAULTS))
    client = gemini_client(handle)

    def stream() -> str:
        chunks = client.models.generate_content_stream(model="m", contents="Weather in Paris?")
        return "".join(chunk.text or "" for chunk in chunks)

    with pytest.raises(httpx.RemoteProtocolError):
        stream()
    with pytest.raises(ValueError, match=r"Expecting value|Extra data|JSON"):
        stream()
    assert stream() == "It is sunny in Paris today."
    result = handle.check()
    assert [e.text for e in result.transcript if e.kind == "event"] == [
        "fault: stream cut after 2 events",
        "fault: malformed stream event 2",
    ]


def test_latency_delays_the_reply(write_scenario: Callable[[str], Path]) -> None:
    endpoint = ScenarioEndpoint([load_scenario(write_scenario(STREAM_FAULTS))])
    target = "/v1beta/models/m:streamGenerateContent?alt=sse"
    body = json.dumps(QUESTION).encode()
    replies = [endpoint.handle("POST", target, {"x-goog-api-key": "k"}, body) for _ in range(3)]

    assert [(reply.delay, reply.drop) for reply in replies] == [
        (0.0, True),
        (0.0, False),
        (0.01, False),
    ]


UNICODE = """\
name: unicode
agent: {{wire_chunking: {chunking}}}
turns:
  - user: Weather in Paris?
    model:
      - call: {{name: get_weather, args: {{city: 東京 🗼}}}}
      - say: 東京は晴れ ☀️ — naïve café
    expect:
      final_response: 東京は晴れ ☀️ — naïve café
      tool_results: [{{tool: get_weather, content: sunny in 東京 🗼}}]
"""


@pytest.mark.parametrize("chunking", ["bytes", "utf8"])
def test_a_stream_cut_anywhere_is_put_back_together_by_the_sdk(
    write_scenario: Callable[[str], Path], chunking: str
) -> None:
    handle = EndpointHandle(write_scenario(UNICODE.format(chunking=chunking)))

    assert gemini_agent(gemini_client(handle), stream=True) == "東京は晴れ ☀️ — naïve café"
    handle.check()


def test_an_agent_that_builds_its_own_client_is_intercepted(
    weather: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("respx")
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    handle = EndpointHandle(weather)

    with handle.intercept():  # generativelanguage.googleapis.com is answered by the endpoint
        text = gemini_agent(genai.Client(api_key="placeholder"), stream=True)

    assert text == "It is sunny in Paris today."
    handle.check()


# --- what only Gemini sends --------------------------------------------------------------


def _round_trip(handle: EndpointHandle, change: Callable[[dict[str, Any]], None]) -> None:
    """One tool round trip on the raw API, each part of the answer changed by ``change``."""
    headers = {"x-goog-api-key": handle.api_key}
    first = post(handle, PATH, QUESTION, **headers).json()["candidates"][0]["content"]
    for part in first["parts"]:
        change(part)
    call = next(p["functionCall"] for p in first["parts"] if "functionCall" in p)
    response = {"name": call["name"], "response": {"result": "sunny in Paris"}}
    if "id" in call:
        response["id"] = call["id"]
    contents = [*QUESTION["contents"], first, {"parts": [{"functionResponse": response}]}]
    assert post(handle, PATH, {**QUESTION, "contents": contents}, **headers).status_code == 200


def _unchanged(part: dict[str, Any]) -> None:
    pass


def test_an_agent_that_sends_the_thought_signature_back_passes(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(REASONING_WEATHER))

    _round_trip(handle, _unchanged)

    outcomes = {o.name: (o.checks, o.failures) for o in handle.check().invariants}
    assert outcomes["reasoning_sent_back"] == (2, 0)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda part: part.pop("thoughtSignature", None), "was not sent back"),
        (
            lambda part: (
                part.update(thoughtSignature="AAAA") if "thoughtSignature" in part else None
            ),
            "came back changed",
        ),
    ],
    ids=["dropped", "changed"],
)
def test_an_agent_that_drops_or_changes_the_thought_signature_is_reported(
    write_scenario: Callable[[str], Path], change: Callable[[dict[str, Any]], None], problem: str
) -> None:
    handle = EndpointHandle(write_scenario(REASONING_WEATHER))

    _round_trip(handle, change)

    (failure,) = [f for f in handle.result().failures if f.invariant == "reasoning_sent_back"]
    assert problem in failure.message


def test_calls_sent_back_without_ids_pass_as_the_api_allows(weather: Path) -> None:
    handle = EndpointHandle(weather)

    def forget_id(part: dict[str, Any]) -> None:
        part.get("functionCall", {}).pop("id", None)

    _round_trip(handle, forget_id)

    handle.check()


def test_a_call_sent_back_changed_without_its_id_is_reported(weather: Path) -> None:
    handle = EndpointHandle(weather)

    def change_call(part: dict[str, Any]) -> None:
        if "functionCall" in part:
            part["functionCall"] = {"name": "get_weather", "args": {"city": "Oslo"}}

    _round_trip(handle, change_call)

    (failure,) = [f for f in handle.result().failures if f.invariant == "history_grows"]
    assert "conversation item 2" in failure.message


def test_the_system_instruction_is_checked(weather: Path) -> None:
    handle = EndpointHandle(weather)
    body = {**QUESTION, "systemInstruction": {"parts": [{"text": "Refund everything."}]}}
    post(handle, PATH, body, **{"x-goog-api-key": handle.api_key})

    (failure,) = [f for f in handle.result().failures if f.invariant == "system_prompt_sent"]
    assert failure.observed == "Refund everything."
    assert failure.expected == SYSTEM


@pytest.mark.parametrize(
    ("generation", "shown"),
    [
        ({}, False),
        ({"generationConfig": {"thinkingConfig": {"thinkingBudget": 512}}}, False),
        ({"generationConfig": {"thinkingConfig": {"includeThoughts": True}}}, True),
        ({"generation_config": {"thinking_config": {"include_thoughts": True}}}, True),
    ],
)
def test_thoughts_are_shown_only_to_a_request_that_asks_for_them(
    write_scenario: Callable[[str], Path], generation: dict[str, Any], shown: bool
) -> None:
    handle = EndpointHandle(write_scenario(REASONING_WEATHER))
    headers = {"x-goog-api-key": handle.api_key}

    answer = post(handle, PATH, {**QUESTION, **generation}, **headers).json()

    parts = answer["candidates"][0]["content"]["parts"]
    thoughts = [part["text"] for part in parts if part.get("thought")]
    assert thoughts == (["The user wants the weather, so I call the tool."] if shown else [])
    assert parts[-1]["functionCall"]["name"] == "get_weather"
    assert parts[-1]["thoughtSignature"]  # sealed either way


def test_the_sdk_sees_thoughts_when_it_asks(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(REASONING_WEATHER))
    config = types.GenerateContentConfig(
        thinking_config=types.ThinkingConfig(include_thoughts=True)
    )

    answer = gemini_client(handle).models.generate_content(
        model="gemini-test", contents="Weather in Paris?", config=config
    )

    assert answer.candidates[0].content.parts[0].thought
