"""Record-through: the endpoint forwards to an upstream (here a second endpoint on loopback,
never the network), relays its answers, and records a scrubbed cassette that converts back into
the scenario's script."""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrig.drivers.network import shared_ssl_context
from agentrig.harness.cassettes import Cassette, cassette_to_scenario, load_cassette
from agentrig.harness.cli import app
from agentrig.harness.endpoint.command import record_until_interrupted
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.endpoint.recording import RecordThrough
from agentrig.harness.endpoint.server import EndpointServer
from agentrig.harness.endpoint.service import EndpointReply
from agentrig.harness.scenarios.loader import load_scenario

from .conftest import REASONING_WEATHER
from .sdk_agents import (
    CHAT_TOOLS,
    RESPONSES_TOOLS,
    SYSTEM,
    anthropic_agent,
    chat_agent,
    responses_agent,
)

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")


def on_loopback(sdk: Any) -> dict[str, Any]:
    """Options of an SDK client (``openai``'s, ``anthropic``'s) for a server on loopback: no
    retries, and the SDK's own HTTP client class verifying with agentrig's shared SSL context
    (the client it builds itself loads the certificates, about 20 ms CPU, for plain HTTP)."""
    return {"max_retries": 0, "http_client": sdk.DefaultHttpxClient(verify=shared_ssl_context())}


SCENARIO = """\
name: upstream
agent: {system_prompt: You answer weather questions.}
turns:
  - user: Weather in Paris?
    model:
      - call: get_weather(city=Paris)
        usage: {input: 30, output: 5}
      - say: It is sunny in Paris today.
        usage: {input: 50, output: 7}
"""
SECRET = "sk-live-0123456789abcdefghijklmnop"


def _record(
    write_scenario: Callable[[str], Path], tmp_path: Path, run: Callable[[str], Any]
) -> Path:
    cassette = tmp_path / "recorded.cassette.yaml"
    with EndpointHandle(write_scenario(SCENARIO), live=True) as upstream:
        with (
            RecordThrough(upstream.base_url, cassette) as recorder,
            EndpointServer(recorder) as through,
        ):
            run(through.base_url)
        assert recorder.recorded == 2
        # The upstream saw the agent's own requests, unchanged, as the session of its key.
        [result] = upstream.endpoint.results()
        assert result.passed, result.failures
    return cassette


def test_recording_the_openai_sdk_through_to_an_upstream(
    write_scenario: Callable[[str], Path], tmp_path: Path
) -> None:
    def run(base_url: str) -> None:
        client = openai.OpenAI(api_key=SECRET, base_url=f"{base_url}/v1", **on_loopback(openai))
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Weather in Paris?"},
        ]
        assert chat_agent(client, messages, stream=True) == "It is sunny in Paris today."
        client.close()

    cassette_path = _record(write_scenario, tmp_path, run)
    text = cassette_path.read_text()
    assert SECRET not in text
    cassette = load_cassette(cassette_path)
    first, second = cassette.interactions
    assert first.response is not None
    assert [c.name for c in first.response.tool_calls] == ["get_weather"]
    assert second.response is not None
    assert second.response.content == "It is sunny in Paris today."

    converted = tmp_path / "converted.scenario.yaml"
    outcome = CliRunner().invoke(app, ["convert", str(cassette_path), "-o", str(converted)])
    assert outcome.exit_code == 0, outcome.output
    scenario = load_scenario(converted)
    [turn] = scenario.turns
    assert turn.user == "Weather in Paris?"
    assert [r.tool_calls[0].shorthand() if r.tool_calls else r.say for r in turn.model] == [
        "get_weather(city=Paris)",
        "It is sunny in Paris today.",
    ]
    assert scenario.agent.system_prompt == SYSTEM


def test_recording_the_anthropic_sdk(write_scenario: Callable[[str], Path], tmp_path: Path) -> None:
    def run(base_url: str) -> None:
        client = anthropic.Anthropic(api_key=SECRET, base_url=base_url, **on_loopback(anthropic))
        messages = [{"role": "user", "content": "Weather in Paris?"}]
        assert anthropic_agent(client, messages) == "It is sunny in Paris today."
        client.close()

    cassette = load_cassette(_record(write_scenario, tmp_path, run))
    assert [i.response.usage.input_tokens for i in cassette.interactions if i.response] == [30, 50]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_recording_the_responses_api(
    write_scenario: Callable[[str], Path], tmp_path: Path, stream: bool
) -> None:
    def run(base_url: str) -> None:
        client = openai.OpenAI(api_key=SECRET, base_url=f"{base_url}/v1", **on_loopback(openai))
        items: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
        assert responses_agent(client, items, stream=stream) == "It is sunny in Paris today."
        client.close()

    cassette = load_cassette(_record(write_scenario, tmp_path, run))
    first, second = cassette.interactions
    assert first.request.messages[0].content == SYSTEM
    assert first.response is not None
    assert [(c.name, c.arguments) for c in first.response.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert second.response is not None
    assert second.response.content == "It is sunny in Paris today."


def test_serve_refuses_half_of_the_recording_options(tmp_path: Path) -> None:
    outcome = CliRunner().invoke(app, ["serve", "--upstream", "http://127.0.0.1:9"])
    assert outcome.exit_code == 2
    assert "--upstream and --record go together" in outcome.output


# --- real shapes: gzip answers, and reasoning through record, convert and play back ---------


class _Recorded:
    """An upstream that answers each request with the next HTTP response of a real cassette,
    byte for byte (gzip bodies with their Content-Encoding, as the real APIs send them)."""

    def __init__(self, path: Path) -> None:
        from agentrig.harness.cassettes.http import deserialize

        self.interactions = deserialize(path.read_text(encoding="utf-8"))["interactions"]
        self.answered = 0

    def requests(self) -> list[tuple[str, bytes]]:
        """The recorded requests: the path and the body."""
        from urllib.parse import urlsplit

        return [
            (urlsplit(i["request"]["uri"]).path, i["request"]["body"].encode())
            for i in self.interactions
        ]

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> EndpointReply:
        response = self.interactions[self.answered]["response"]
        self.answered += 1
        content = response["body"]["string"]
        kept = ("content-type", "content-encoding")
        return EndpointReply(
            response["status"]["code"],
            {k.lower(): v[0] for k, v in response["headers"].items() if k.lower() in kept},
            content if isinstance(content, bytes) else content.encode(),
        )


@pytest.mark.parametrize(
    "relative",
    [
        "llm/test_tools/test_tool_use_chain_of_two_calls.yaml",
        "llm-anthropic/test_anthropic/test_tools.yaml",
        "llm/test_openai_responses/test_responses_tool_use_streaming.yaml",
    ],
    ids=["chat-gzip", "anthropic-streamed-gzip", "responses-streamed-reasoning-model"],
)
def test_recording_real_answers(
    real_cassette: Callable[[str], Path], tmp_path: Path, relative: str
) -> None:
    upstream = _Recorded(real_cassette(relative))
    recorded = _replayed_through_the_recorder(upstream, tmp_path)
    assert len(recorded.interactions) == len(upstream.interactions)
    assert all(i.response is not None for i in recorded.interactions)
    calls = [c.name for i in recorded.interactions if i.response for c in i.response.tool_calls]
    assert calls  # the real answers' tool calls were read from the decoded bytes
    scenario = cassette_to_scenario(recorded, name="real")
    assert [r.tool_calls[0].name for t in scenario.turns for r in t.model if r.tool_calls]


def _replayed_through_the_recorder(upstream: _Recorded, tmp_path: Path) -> Cassette:
    """The real requests of ``upstream`` sent through a record-through server in front of it
    (which answers with the real bytes): the cassette recorded."""
    cassette = tmp_path / "recorded.cassette.yaml"
    with (
        EndpointServer(upstream) as provider,
        RecordThrough(provider.base_url, cassette) as recorder,
        EndpointServer(recorder) as through,
        httpx2.Client(base_url=through.base_url, verify=shared_ssl_context()) as agent,
    ):
        for path, body in upstream.requests():
            answer = agent.post(path, content=body, headers={"content-type": "application/json"})
            assert answer.status_code == 200, answer.text
            # relayed decoded: JSON, or the server-sent events of a streamed answer
            assert answer.text.lstrip().startswith(("{", "event:")), answer.text[:80]
    return load_cassette(cassette)


class _Gzipped:
    """An upstream that answers as ``inner`` does, gzip-encoded as the real APIs answer."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> EndpointReply:
        reply = self.inner.handle(method, path, headers, body)
        whole = b"".join(reply.chunks) if reply.chunks is not None else reply.body
        return EndpointReply(
            reply.status, {**reply.headers, "content-encoding": "gzip"}, gzip.compress(whole)
        )


def _reasoning_agent(api: str, stream: bool, base_url: str, key: str = SECRET) -> str:
    """One turn of an SDK agent that sends its reasoning back as each API wants it."""
    question = [{"role": "user", "content": "Weather in Paris?"}]
    if api == "anthropic":
        with anthropic.Anthropic(
            api_key=key, base_url=base_url, **on_loopback(anthropic)
        ) as claude:
            return anthropic_agent(claude, question, stream=stream)
    with openai.OpenAI(api_key=key, base_url=f"{base_url}/v1", **on_loopback(openai)) as client:
        if api == "chat":
            messages = [{"role": "system", "content": SYSTEM}, *question]
            return chat_agent(client, messages, stream=stream)
        create, streamed = client.responses.create, client.responses.stream
        sealed = {"include": ["reasoning.encrypted_content"], "store": False}
        client.responses.create = lambda **options: create(**{**sealed, **options})
        client.responses.stream = lambda **options: streamed(**{**sealed, **options})
        return responses_agent(client, list(question), stream=stream)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
def test_reasoning_is_recorded_converted_to_think_and_played_back(
    write_scenario: Callable[[str], Path], tmp_path: Path, api: str, stream: bool
) -> None:
    converted, checks = _recorded_converted_and_played_back(
        write_scenario(REASONING_WEATHER), tmp_path, api, stream
    )
    [turn] = load_scenario(converted).turns
    assert [reply.think for reply in turn.model] == [
        "The user wants the weather, so I call the tool.",
        "The tool says sunny.",
    ]
    if api != "chat":  # Chat Completions has no sealed reasoning to send back
        assert checks["reasoning_sent_back"] == (2, 0)


def _recorded_converted_and_played_back(
    scenario: Path, tmp_path: Path, api: str, stream: bool
) -> tuple[Path, dict[str, tuple[int, int]]]:
    """The reasoning agent on ``api`` recorded through a gzip-answering upstream serving
    ``scenario``, the cassette converted, and the converted scenario played back to the same
    agent (which passes it): the converted file, and its invariants' checks and failures."""
    cassette = tmp_path / "recorded.cassette.yaml"
    with EndpointHandle(scenario, live=True) as upstream:
        with (
            EndpointServer(_Gzipped(upstream.endpoint)) as provider,
            RecordThrough(provider.base_url, cassette) as recorder,
            EndpointServer(recorder) as through,
        ):
            assert _reasoning_agent(api, stream, through.base_url) == "It is sunny in Paris today."
        [session] = upstream.endpoint.results()
        assert session.passed, session.failures

    converted = tmp_path / "converted.scenario.yaml"
    outcome = CliRunner().invoke(app, ["convert", str(cassette), "-o", str(converted)])
    assert outcome.exit_code == 0, outcome.output
    # The scenario of an agent seen on the wire is one the endpoint serves, and the same agent
    # passes it, its reasoning sent back as the API wants it.
    with EndpointHandle(converted, live=True) as again:
        answer = _reasoning_agent(api, stream, again.base_url, again.api_key)
        assert answer == "It is sunny in Paris today."
        result = again.check()
    return converted, {o.name: (o.checks, o.failures) for o in result.invariants}


class _Reasoner:
    """A Chat Completions server that reasons in the ``reasoning`` field, as OpenRouter, Ollama
    and Groq answer (DeepSeek and vLLM use ``reasoning_content``, which the endpoint plays)."""

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> EndpointReply:
        message = {"role": "assistant", "content": "Hello!", "reasoning": "A greeting: greet."}
        answer = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "reasoner",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
        return EndpointReply(200, {"content-type": "application/json"}, json.dumps(answer).encode())


def test_chat_reasoning_in_the_reasoning_field_converts_to_think(tmp_path: Path) -> None:
    cassette = tmp_path / "recorded.cassette.yaml"
    with (
        EndpointServer(_Reasoner()) as provider,
        RecordThrough(provider.base_url, cassette) as recorder,
        EndpointServer(recorder) as through,
        openai.OpenAI(
            api_key=SECRET, base_url=f"{through.base_url}/v1", **on_loopback(openai)
        ) as client,
    ):
        question = [{"role": "user", "content": "Hi"}]
        client.chat.completions.create(model="reasoner", messages=question)
    [turn] = cassette_to_scenario(load_cassette(cassette), name="reasoner").turns
    assert [(reply.think, reply.say) for reply in turn.model] == [("A greeting: greet.", "Hello!")]


# --- one cassette per conversation --------------------------------------------------------------


def _chat(base_url: str, key: str = SECRET) -> Any:
    return openai.OpenAI(api_key=key, base_url=f"{base_url}/v1", **on_loopback(openai))


@contextlib.contextmanager
def _recording_through(
    write_scenario: Callable[[str], Path], cassette: Path
) -> Iterator[tuple[RecordThrough, str]]:
    """A record-through server in front of a live upstream serving ``SCENARIO`` (a session per
    API key): the recorder and the base URL an agent is pointed at."""
    with (
        EndpointHandle(write_scenario(SCENARIO), live=True) as upstream,
        RecordThrough(upstream.base_url, cassette) as recorder,
        EndpointServer(recorder) as through,
    ):
        yield recorder, through.base_url


def test_each_run_of_the_agent_is_recorded_into_a_cassette_of_its_own(
    write_scenario: Callable[[str], Path], tmp_path: Path
) -> None:
    """Two runs of the same agent, one after the other: two conversations, so two cassettes
    (the second beside the first), each converting to the scenario of one run."""
    cassette = tmp_path / "session.cassette.yaml"
    with _recording_through(write_scenario, cassette) as (recorder, base_url):
        for run in ("first", "second"):
            client = _chat(base_url, key=run)  # each run is a session of its own upstream
            messages = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": "Weather in Paris?"},
            ]
            assert chat_agent(client, messages) == "It is sunny in Paris today."
            client.close()
    second = tmp_path / "session-2.cassette.yaml"
    assert recorder.paths == [cassette, second]
    assert recorder.recorded == 4
    for path in (cassette, second):
        assert len(load_cassette(path).interactions) == 2
        converted = tmp_path / f"{path.name.split('.')[0]}.scenario.yaml"
        outcome = CliRunner().invoke(app, ["convert", str(path), "-o", str(converted)])
        assert outcome.exit_code == 0, outcome.output
        [turn] = load_scenario(converted).turns
        assert [r.say or r.tool_calls[0].shorthand() for r in turn.model] == [
            "get_weather(city=Paris)",
            "It is sunny in Paris today.",
        ]


def test_conversations_that_interleave_are_told_apart_by_what_they_repeat(
    write_scenario: Callable[[str], Path], tmp_path: Path
) -> None:
    """Two agents at once (their requests alternate): each request goes to the conversation
    whose last request it repeats."""
    cassette = tmp_path / "both.cassette.yaml"
    with _recording_through(write_scenario, cassette) as (recorder, base_url):
        client = _chat(base_url)
        talks: dict[str, list[Any]] = {
            city: [{"role": "user", "content": f"Weather in {city}?"}] for city in ("Paris", "Oslo")
        }
        for step in range(2):
            for city, messages in talks.items():
                answer = (
                    client.chat.completions.create(
                        model="gpt-test",
                        messages=messages,
                        tools=CHAT_TOOLS,
                        # each talk is a session of its own upstream (its own key)
                        extra_headers={"Authorization": f"Bearer {city}"},
                    )
                    .choices[0]
                    .message
                )
                if step == 0:
                    [call] = answer.tool_calls or []
                    messages.append(answer.model_dump(exclude_none=True))
                    result = f"sunny in {city}"
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        client.close()
    assert recorder.paths == [cassette, tmp_path / "both-2.cassette.yaml"]
    for path, city in zip(recorder.paths, ("Paris", "Oslo"), strict=True):
        first, second = load_cassette(path).interactions
        assert first.request.messages[-1].content == f"Weather in {city}?"
        assert second.request.messages[-1].content == f"sunny in {city}"


def test_a_responses_request_with_previous_response_id_continues_its_conversation(
    write_scenario: Callable[[str], Path], tmp_path: Path
) -> None:
    cassette = tmp_path / "stored.cassette.yaml"
    with _recording_through(write_scenario, cassette) as (recorder, base_url):
        client = _chat(base_url)
        first = client.responses.create(
            model="gpt-test",
            input=[{"role": "user", "content": "Weather in Paris?"}],
            tools=RESPONSES_TOOLS,
        )
        [call] = [item for item in first.output if item.type == "function_call"]
        output = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}
        client.responses.create(
            model="gpt-test", input=[output], previous_response_id=first.id, tools=RESPONSES_TOOLS
        )
        client.close()
    assert recorder.paths == [cassette]
    assert len(load_cassette(cassette).interactions) == 2


def test_the_record_command_says_which_cassettes_it_wrote(
    write_scenario: Callable[[str], Path], tmp_path: Path
) -> None:
    lines: list[str] = []
    stop = threading.Event()
    done: list[tuple[int, list[Path]]] = []
    cassette = tmp_path / "run.cassette.yaml"
    with EndpointHandle(write_scenario(SCENARIO), live=True) as upstream:
        recording = threading.Thread(
            target=lambda: done.append(
                record_until_interrupted(
                    upstream.base_url,
                    cassette,
                    host="127.0.0.1",
                    port=0,
                    say=lines.append,
                    stop=stop,
                )
            )
        )
        recording.start()
        try:
            assert _wait_for(lambda: any("Press Ctrl-C" in line for line in lines)), lines
            base_url = next(line for line in lines if " on http://" in line).rsplit(" ", 1)[-1]
            assert "Each conversation is a cassette of its own" in "\n".join(lines)
            for run in ("one", "two"):
                client = _chat(base_url, key=run)
                messages = [{"role": "user", "content": "Weather in Paris?"}]
                assert chat_agent(client, messages) == "It is sunny in Paris today."
                client.close()
        finally:
            stop.set()
            recording.join(timeout=30)
    assert done == [(4, [cassette, tmp_path / "run-2.cassette.yaml"])]


def _wait_for(condition: Callable[[], bool], seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


REDACTED = REASONING_WEATHER.replace("name: reasoning-weather", "name: upstream-redacted").replace(
    "- think: The user wants the weather, so I call the tool.", "- think: {redacted: true}"
)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("api", ["responses", "anthropic"])
def test_reasoning_without_text_is_recorded_converted_to_think_redacted_and_played_back(
    write_scenario: Callable[[str], Path], tmp_path: Path, api: str, stream: bool
) -> None:
    # Upstream answers first with reasoning the client cannot read: a redacted_thinking block,
    # a reasoning item with an empty summary and encrypted content.
    converted, checks = _recorded_converted_and_played_back(
        write_scenario(REDACTED), tmp_path, api, stream
    )
    assert "redacted: true" in converted.read_text()
    [turn] = load_scenario(converted).turns
    assert [(reply.think_redacted, reply.think_text) for reply in turn.model] == [
        (True, ""),
        (False, "The tool says sunny."),
    ]
    assert checks["reasoning_sent_back"] == (2, 0)


class _ReasonedFirst(_Recorded):
    """The real streamed Responses session of a reasoning model (gpt-5.5, ``store: false``,
    ``include: ["reasoning.encrypted_content"]``), whose first answer also carries a reasoning
    item as the API sends one without summary text: ``summary: []`` and ``encrypted_content``.
    (That recording itself reasoned too little to send one.)"""

    ITEM = {
        "id": "rs_00d64fa806f333310169fab1bf1c2081a0b2f7a1e2d3c4b5a6",
        "type": "reasoning",
        "encrypted_content": "gAAAAABp-rG_opaque-sealed-reasoning==",
        "summary": [],
    }

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        response = self.interactions[0]["response"]
        body: str = response["body"]["string"]
        item = json.dumps(self.ITEM, separators=(",", ":"))
        body = body.replace('"output_index":0', '"output_index":1')
        body = body.replace('"output":[{"id":"fc_', f'"output":[{item},{{"id":"fc_')
        first = body.index("event: response.output_item.added")
        events = "".join(
            f"event: {kind}\ndata: "
            + json.dumps(
                {"type": kind, "item": self.ITEM, "output_index": 0}, separators=(",", ":")
            )
            + "\n\n"
            for kind in ("response.output_item.added", "response.output_item.done")
        )
        response["body"]["string"] = body[:first] + events + body[first:]


def test_a_real_reasoning_models_session_with_a_reasoning_item_without_summary_converts_to_think_redacted(
    real_cassette: Callable[[str], Path], tmp_path: Path
) -> None:
    upstream = _ReasonedFirst(
        real_cassette("llm/test_openai_responses/test_responses_tool_use_streaming.yaml")
    )
    recorded = _replayed_through_the_recorder(upstream, tmp_path)
    first = recorded.interactions[0].response
    assert first is not None
    assert first.reasoning_content == ""
    assert first.provider_data["openai_reasoning"] == [
        {key: _ReasonedFirst.ITEM[key] for key in ("type", "id", "summary", "encrypted_content")}
    ]
    scenario = cassette_to_scenario(recorded, name="real")
    [turn] = scenario.turns
    assert [(r.think_redacted, r.think_text) for r in turn.model] == [(True, ""), (False, "")]
    assert turn.model[0].tool_calls[0].name == "multiply"
    # played back, the first answer carries such an item again, sealed by the endpoint
    handle = EndpointHandle(scenario)
    client = openai.OpenAI(
        api_key=handle.api_key,
        base_url=handle.openai_base_url,
        http_client=handle.httpx2_client(),
        max_retries=0,
    )
    replayed = client.responses.create(
        model="gpt-5.5",
        input="What is 1231 * 2331? Use the multiply tool.",
        include=["reasoning.encrypted_content"],
        store=False,
    )
    item, call = replayed.output
    assert (item.type, item.summary, bool(item.encrypted_content)) == ("reasoning", [], True)
    assert call.name == "multiply"


class _RedactedFirst(_Recorded):
    """The real streamed, gzip-compressed Anthropic session (two parallel tool uses, then text),
    whose first answer opens with a ``redacted_thinking`` block as the API streams one: whole in
    its ``content_block_start``, then its ``content_block_stop``."""

    BLOCK = {
        "type": "redacted_thinking",
        "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw",
    }

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        response = self.interactions[0]["response"]
        text = gzip.decompress(response["body"]["string"]).decode()
        text = re.sub(r'"index":(\d+)', lambda m: f'"index":{int(m.group(1)) + 1}', text)
        start = {"type": "content_block_start", "index": 0, "content_block": self.BLOCK}
        block = (
            f"event: content_block_start\ndata: {json.dumps(start)}\n\n"
            'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        )
        first = text.index("event: content_block_start")
        response["body"]["string"] = gzip.compress((text[:first] + block + text[first:]).encode())


def test_a_real_anthropic_session_with_a_redacted_thinking_block_converts_to_think_redacted(
    real_cassette: Callable[[str], Path], tmp_path: Path
) -> None:
    upstream = _RedactedFirst(real_cassette("llm-anthropic/test_anthropic/test_tools.yaml"))
    recorded = _replayed_through_the_recorder(upstream, tmp_path)
    first = recorded.interactions[0].response
    assert first is not None
    assert first.provider_data["anthropic_thinking"] == [_RedactedFirst.BLOCK]
    assert [c.name for c in first.tool_calls] == ["pelican_name_generator"] * 2
    scenario = cassette_to_scenario(recorded, name="real")
    [turn] = scenario.turns
    assert [r.think_redacted for r in turn.model] == [True, False]
    # played back, the first answer opens with such a block again, its data made up
    handle = EndpointHandle(scenario)
    client = anthropic.Anthropic(
        api_key=handle.api_key,
        base_url=handle.anthropic_base_url,
        http_client=handle.httpx2_client(),
        max_retries=0,
    )
    question = [{"role": "user", "content": "Two names for a pet pelican"}]
    with client.messages.stream(model="claude", max_tokens=256, messages=question) as events:
        replayed = events.get_final_message()
    assert [block.type for block in replayed.content] == [
        "redacted_thinking",
        "tool_use",
        "tool_use",
    ]


def _chat_loop(client: Any, tool_says: str) -> str:
    """A Chat Completions agent whose get_weather says ``tool_says``."""
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    while True:
        message = (
            client.chat.completions.create(model="gpt-test", messages=messages, tools=CHAT_TOOLS)
            .choices[0]
            .message
        )
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return str(message.content)
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": tool_says})


def test_a_converted_recording_holds_the_agent_to_the_tool_results_it_sent(
    write_scenario: Callable[[str], Path], tmp_path: Path
) -> None:
    def run(base_url: str) -> None:
        with openai.OpenAI(
            api_key=SECRET, base_url=f"{base_url}/v1", **on_loopback(openai)
        ) as client:
            assert _chat_loop(client, "shipped") == "It is sunny in Paris today."

    cassette = _record(write_scenario, tmp_path, run)
    converted = tmp_path / "converted.scenario.yaml"
    outcome = CliRunner().invoke(app, ["convert", str(cassette), "-o", str(converted)])
    assert outcome.exit_code == 0, outcome.output
    scenario = load_scenario(converted)
    [turn] = scenario.turns
    assert turn.expect.tool_results is not None
    assert [r.model_dump(exclude_none=True) for r in turn.expect.tool_results] == [
        {"tool": "get_weather", "content": "shipped"}
    ]

    def replay(tool_says: str) -> list[str]:
        with EndpointHandle(converted) as endpoint:
            client = openai.OpenAI(
                api_key=endpoint.api_key,
                base_url=endpoint.openai_base_url,
                http_client=endpoint.httpx2_client(),
            )
            _chat_loop(client, tool_says)
            return [failure.message for failure in endpoint.result().failures]

    assert replay("shipped") == []
    # the agent's lookup now says something else: the replay fails, naming the recorded result
    drifted = replay("cancelled")
    assert (
        "request 2: tool_results_as_scripted: the agent's get_weather returned 'cancelled', "
        "not 'shipped' (agent.tools.get_weather.replies[0])"
    ) in drifted
    assert "turn 1: expect.tool_results[0]: tool result 1: content differs" in drifted


def test_the_recorder_verifies_the_upstream_with_the_shared_ssl_context(tmp_path: Path) -> None:
    """Each recorder would otherwise load the certificates again (about 20 ms CPU)."""
    with RecordThrough("https://api.openai.com/v1", tmp_path / "r.cassette.yaml") as recorder:
        assert recorder._client._transport._pool._ssl_context is shared_ssl_context()
