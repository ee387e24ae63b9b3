"""Tool-call ids are compared by their order of first appearance, in both cassette layers: ids
are made up (by SDKs, other frameworks, or agentrig when a provider sends none or an empty one),
so a session recorded with random ids replays with fresh random ids."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentrig as ar
from agentrig.fakes import ScriptedLLM
from agentrig.harness.cassettes import (
    Cassette,
    CassetteMismatchError,
    Interaction,
    RecordingProvider,
    ReplayProvider,
    cassette_provider,
    load_cassette,
)
from agentrig.harness.cassettes.model import (
    RecordedMessage,
    RecordedRequest,
    RecordedResponse,
    RecordedToolCall,
)

openai = pytest.importorskip("openai")
httpx2 = pytest.importorskip("httpx2")
pytest.importorskip("vcr")

from agentrig.drivers import OpenAIProvider  # noqa: E402
from agentrig.harness.cassettes.http import llm_request, use_http_cassette  # noqa: E402

Build = Callable[..., ar.AgentLoop]


def _completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
    }


def idless_server(request: Any) -> Any:
    """An OpenAI-compatible server that sends tool calls with ``"id": ""`` (as Gemini's
    compatible API and some vLLM and Ollama builds do)."""
    body = json.loads(request.content)
    if not any(m["role"] == "tool" for m in body["messages"]):
        call = {
            "id": "",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
        answer = _completion({"role": "assistant", "tool_calls": [call]}, "tool_calls")
    else:
        answer = _completion({"role": "assistant", "content": "Sunny."}, "stop")
    return httpx2.Response(200, json=answer)


def idless_provider() -> OpenAIProvider:
    mock = httpx2.Client(transport=httpx2.MockTransport(idless_server))
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=mock)
    return OpenAIProvider(client=client, model="m")


def ask(loop: ar.AgentLoop) -> ar.AgentState:
    return loop.execute(ar.AgentState().with_user_message("Weather in Paris?"))


def test_http_cassette_recorded_with_random_ids_replays_with_fresh_random_ids(
    tmp_path: Path, build: Build
) -> None:
    path = tmp_path / "idless.yaml"
    with ar.runtime_context(ids=ar.UuidIds()), use_http_cassette(path, record_mode="once"):
        recorded = ask(build(idless_provider()))
    with ar.runtime_context(ids=ar.UuidIds()), use_http_cassette(path) as cassette:
        replayed = ask(build(OpenAIProvider(api_key="sk-replay", model="m", max_retries=0)))
    assert cassette.play_count == 2
    assert replayed.messages()[-1].content == recorded.messages()[-1].content == "Sunny."


def test_agentrig_cassette_recorded_with_random_ids_replays_with_fresh_random_ids(
    tmp_path: Path, build: Build
) -> None:
    path = tmp_path / "idless.yaml"
    with ar.runtime_context(ids=ar.UuidIds()):
        ask(build(RecordingProvider(idless_provider(), path=path)))
    with ar.runtime_context(ids=ar.UuidIds()):
        replay = ReplayProvider(load_cassette(path), path=path)
        final = ask(build(replay))
    replay.assert_complete()
    assert final.messages()[-1].content == "Sunny."


def _seeded_run(provider: ar.InferenceProvider) -> ar.AgentState:
    """One turn of the weather agent on a fake clock and seeded ids."""
    from agentrig.fakes import FakeClock, SeededIds

    from .conftest import get_weather

    agent = (
        ar.AgentBuilder.base()
        .with_clock(FakeClock())
        .with_ids(SeededIds(3))
        .with_tools([get_weather])
        .with_capability(ar.UseLlmConfig(provider))
        .build()
    )
    return agent.execute(agent.new_state("Weather in Paris?"))


def test_a_run_with_id_less_calls_and_its_replay_end_byte_identical(tmp_path: Path) -> None:
    """The live run makes an id up for the call (from the run's id source); the replay must
    make it up at the same point, or every later id shifts by one."""
    path = tmp_path / "idless.yaml"
    live = _seeded_run(cassette_provider(path, idless_provider(), mode="once"))
    recorded = load_cassette(path).interactions[0].response
    assert recorded is not None
    assert [call.id for call in recorded.tool_calls] == [""]  # as the provider sent it
    replay = cassette_provider(path, mode="none")
    replayed = _seeded_run(replay)
    replay.assert_complete()
    assert replayed.to_json() == live.to_json()


def test_an_id_less_session_converts_with_each_calls_result(tmp_path: Path) -> None:
    from agentrig.harness.cassettes import cassette_to_scenario

    path = tmp_path / "idless.yaml"
    _seeded_run(cassette_provider(path, idless_provider(), mode="once"))
    scenario = cassette_to_scenario(load_cassette(path), name="idless")
    replies = scenario.agent.tools["get_weather"].replies
    assert [reply.return_ for reply in replies] == ["sunny in Paris"]


def _tool_request(call_ids: tuple[str, str], result_ids: tuple[str, str]) -> RecordedRequest:
    calls = tuple(
        RecordedToolCall(id=call_id, name="f", arguments={"n": n})
        for n, call_id in enumerate(call_ids)
    )
    return RecordedRequest(
        messages=(
            RecordedMessage(role="user", content="hi"),
            RecordedMessage(role="assistant", tool_calls=calls),
            *(
                RecordedMessage(role="tool", content=str(n), tool_call_id=result_id, tool_name="f")
                for n, result_id in enumerate(result_ids)
            ),
        )
    )


def _live(request: RecordedRequest) -> ar.InferenceRequest:
    messages: list[ar.Message] = []
    for message in request.messages:
        if message.role == "user":
            messages.append(ar.Message.user(message.content))
        elif message.role == "assistant":
            calls = [
                ar.ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in message.tool_calls
            ]
            messages.append(ar.Message.assistant("", tool_calls=calls))
        else:
            assert message.tool_call_id is not None
            result = ar.ToolResult(
                content=message.content, call_id=message.tool_call_id, tool_name="f"
            )
            messages.append(ar.Message.tool(result))
    return ar.InferenceRequest(messages=ar.Messages(messages))


def test_agentrig_replay_compares_which_result_answers_which_call_not_the_ids() -> None:
    recorded = _tool_request(("pyd_ai_1", "pyd_ai_2"), ("pyd_ai_1", "pyd_ai_2"))
    cassette = Cassette(
        interactions=(Interaction(request=recorded, response=RecordedResponse(content="ok")),)
    )
    same_links = _tool_request(("f7c1", "a0b2"), ("f7c1", "a0b2"))
    assert ReplayProvider(cassette).infer(_live(same_links)).content == "ok"
    swapped = _tool_request(("f7c1", "a0b2"), ("a0b2", "f7c1"))
    with pytest.raises(CassetteMismatchError, match="tool_call_id: '#2'"):
        ReplayProvider(cassette).infer(_live(swapped))


class _Req:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = json.dumps(body).encode()


def _chat_with_ids(call_id: str, result_id: str) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": result_id, "content": "1"},
        ],
    }


def test_the_http_matcher_compares_ids_by_order_of_first_appearance() -> None:
    llm_request(
        _Req(_chat_with_ids("f7c1bd87", "f7c1bd87")), _Req(_chat_with_ids("pyd_ai_ce", "pyd_ai_ce"))
    )
    with pytest.raises(AssertionError, match="conversation item 3"):
        llm_request(
            _Req(_chat_with_ids("f7c1bd87", "other")),
            _Req(_chat_with_ids("pyd_ai_ce", "pyd_ai_ce")),
        )


HAND_WRITTEN = """\
version: 1
interactions:
- request:
    messages:
    - {role: system, content: "You answer weather questions.\\nBe brief."}
    - {role: user, content: Weather in Paris?}
    tools:
    - name: get_weather
    - name: convert_units
  response:
    content: Sunny.
"""


def test_a_hand_written_cassette_needs_no_tool_schemas(tmp_path: Path, build: Build) -> None:
    """Tool descriptions and parameter schemas the cassette leaves out are not compared; the
    tools it names still are."""
    path = tmp_path / "hand.yaml"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    replay = ReplayProvider(load_cassette(path), path=path)
    final = ask(build(replay))
    replay.assert_complete()
    assert final.messages()[-1].content == "Sunny."
    path.write_text(HAND_WRITTEN.replace("name: convert_units", "name: other"), encoding="utf-8")
    with pytest.raises(CassetteMismatchError, match="other"):
        ReplayProvider(load_cassette(path), path=path).infer(
            ar.InferenceRequest(
                messages=ar.Messages.from_text("Weather in Paris?"),
                tools=(ar.ToolSchema(name="get_weather"), ar.ToolSchema(name="convert_units")),
            )
        )


def test_strict_is_compared_where_the_cassette_has_it(tmp_path: Path) -> None:
    """A stub tool (no parameters) compares ``strict`` only when written; a full recorded schema
    always compares it."""
    path = tmp_path / "hand.yaml"
    path.write_text(HAND_WRITTEN, encoding="utf-8")

    def asked(strict: bool, parameters: dict[str, object] | None = None) -> ar.InferenceRequest:
        tools = (
            ar.ToolSchema(name="get_weather", parameters=parameters or {}, strict=strict),
            ar.ToolSchema(name="convert_units"),
        )
        messages = ar.Messages.of(
            ar.Message.system("You answer weather questions.\nBe brief."),
            ar.Message.user("Weather in Paris?"),
        )
        return ar.InferenceRequest(messages=messages, tools=tools)

    ReplayProvider(load_cassette(path), path=path).infer(asked(strict=True))
    written = HAND_WRITTEN.replace(
        "- name: get_weather", "- name: get_weather\n      strict: false"
    )
    path.write_text(written, encoding="utf-8")
    with pytest.raises(CassetteMismatchError, match="strict"):
        ReplayProvider(load_cassette(path), path=path).infer(asked(strict=True))
    recorder = RecordingProvider(ScriptedLLM(["Sunny."]))  # a recording has full schemas
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    recorder.infer(asked(strict=False, parameters=schema))
    with pytest.raises(CassetteMismatchError, match="strict"):
        ReplayProvider(recorder.cassette).infer(asked(strict=True, parameters=schema))
