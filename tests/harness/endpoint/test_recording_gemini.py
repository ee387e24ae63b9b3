"""Record-through on the Gemini API: google-genai's requests forwarded to an upstream (a second
endpoint on loopback, never the network), its answers relayed and recorded into a scrubbed
cassette that converts back into the scenario's script and plays back to the same agent."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrig.errors import ProviderError
from agentrig.harness.cassettes import load_cassette
from agentrig.harness.cli import app
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.endpoint.recording import RecordThrough
from agentrig.harness.endpoint.server import EndpointServer
from agentrig.harness.endpoint.wire.base import WireAnswer
from agentrig.harness.endpoint.wire.gemini import GEMINI
from agentrig.harness.endpoint.wire.gemini_answers import gemini_response
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.messages import ToolCall
from agentrig.state import Usage
from agentrig.state.status import FinishReason

from .conftest import REASONING_WEATHER
from .sdk_agents import SYSTEM, gemini_agent

genai = pytest.importorskip("google.genai")

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
REDACTED = REASONING_WEATHER.replace(
    "think: The user wants the weather, so I call the tool.", "think: {redacted: true}"
)
SECRET = "AIzaSy-live-0123456789abcdefghijklmnop"


def _client(base_url: str, key: str = SECRET) -> Any:
    options = genai.types.HttpOptions(base_url=base_url)
    return genai.Client(api_key=key, http_options=options)


def _recorded_and_converted(scenario: Path, tmp_path: Path, stream: bool) -> tuple[Path, Path]:
    """The Gemini agent (asking to see thoughts) recorded through to an upstream serving
    ``scenario``, the cassette converted: the cassette and the converted scenario."""
    cassette = tmp_path / "recorded.cassette.yaml"
    with EndpointHandle(scenario, live=True) as upstream:
        with (
            RecordThrough(upstream.base_url, cassette) as recorder,
            EndpointServer(recorder) as through,
        ):
            answer = gemini_agent(_client(through.gemini_base_url), stream=stream, thoughts=True)
            assert answer == "It is sunny in Paris today."
        assert recorder.recorded == 2
        [session] = upstream.endpoint.results()  # the agent's requests reached it unchanged
        assert session.passed, session.failures
    converted = tmp_path / "converted.scenario.yaml"
    outcome = CliRunner().invoke(app, ["convert", str(cassette), "-o", str(converted)])
    assert outcome.exit_code == 0, outcome.output
    return cassette, converted


def _played_back(converted: Path, stream: bool) -> dict[str, tuple[int, int]]:
    """The converted scenario served to the same agent, which passes: its invariants' checks
    and failures."""
    with EndpointHandle(converted, live=True) as again:
        client = _client(again.gemini_base_url, again.api_key)
        assert gemini_agent(client, stream=stream, thoughts=True) == "It is sunny in Paris today."
        result = again.check()
    return {o.name: (o.checks, o.failures) for o in result.invariants}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_recording_the_google_genai_sdk_through_to_an_upstream(
    write_scenario: Callable[[str], Path], tmp_path: Path, stream: bool
) -> None:
    cassette_path, converted = _recorded_and_converted(write_scenario(SCENARIO), tmp_path, stream)

    assert SECRET not in cassette_path.read_text()
    first, second = load_cassette(cassette_path).interactions
    assert first.request.messages[0].content == SYSTEM
    assert first.request.llm_config.model == "gemini-test"
    assert first.response is not None
    assert [(c.name, c.arguments) for c in first.response.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert (first.response.usage.input_tokens, first.response.usage.output_tokens) == (30, 5)
    assert second.response is not None
    assert second.response.content == "It is sunny in Paris today."
    scenario = load_scenario(converted)
    [turn] = scenario.turns
    assert turn.user == "Weather in Paris?"
    assert [r.tool_calls[0].shorthand() if r.tool_calls else r.say for r in turn.model] == [
        "get_weather(city=Paris)",
        "It is sunny in Paris today.",
    ]
    assert scenario.agent.system_prompt == SYSTEM
    _played_back(converted, stream)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_reasoning_is_recorded_converted_to_think_and_played_back(
    write_scenario: Callable[[str], Path], tmp_path: Path, stream: bool
) -> None:
    _, converted = _recorded_and_converted(write_scenario(REASONING_WEATHER), tmp_path, stream)

    [turn] = load_scenario(converted).turns
    assert [reply.think for reply in turn.model] == [
        "The user wants the weather, so I call the tool.",
        "The tool says sunny.",
    ]
    assert _played_back(converted, stream)["reasoning_sent_back"] == (2, 0)


def test_reasoning_without_thought_text_converts_to_think_redacted(
    write_scenario: Callable[[str], Path], tmp_path: Path
) -> None:
    _, converted = _recorded_and_converted(write_scenario(REDACTED), tmp_path, stream=True)

    assert "redacted: true" in converted.read_text()
    [turn] = load_scenario(converted).turns
    assert [(reply.think_redacted, reply.think_text) for reply in turn.model] == [
        (True, ""),
        (False, "The tool says sunny."),
    ]
    assert _played_back(converted, stream=True)["reasoning_sent_back"] == (2, 0)


# --- a Gemini answer read back -----------------------------------------------------------

ANSWER = WireAnswer(
    text="Checking.",
    reasoning="Think.",
    tool_calls=(ToolCall(id="c1", name="weather", arguments={"city": "Paris"}),),
    usage=Usage(input_tokens=12, output_tokens=9, cache_read_tokens=4, reasoning_tokens=3),
    seal="c2VhbA==",
)


@pytest.mark.parametrize("how", ["plain", "streamed", "json-array"])
def test_an_answer_reads_back_as_the_response_it_encodes(how: str) -> None:
    streamed = how != "plain"
    if streamed:
        events = GEMINI.stream_chunks(ANSWER, model="m", response_id="r", include_usage=False)
        if how == "json-array":
            events = GEMINI.json_array(events, closed=True)
        body = b"".join(events)
    else:
        body = json.dumps(GEMINI.response_body(ANSWER, model="m", response_id="r")).encode()

    response = gemini_response(200, body, streamed=streamed)

    assert (response.content, response.reasoning_content) == ("Checking.", "Think.")
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("c1", "weather", {"city": "Paris"})
    ]
    assert response.usage == ANSWER.usage
    assert (response.finish_reason, response.model, response.response_id) == (
        FinishReason.TOOL_CALLS,
        "m",
        "r",
    )
    assert response.provider_data == {"reasoning_seal": "c2VhbA=="}


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        ("STOP", FinishReason.STOP),
        ("MAX_TOKENS", FinishReason.LENGTH),
        ("SAFETY", FinishReason.CONTENT_FILTER),
        ("MALFORMED_FUNCTION_CALL", FinishReason.OTHER),
    ],
)
def test_finish_reasons_read_back(finish: str, expected: FinishReason) -> None:
    body = {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": finish}]}

    assert gemini_response(200, json.dumps(body).encode(), streamed=False).finish_reason == (
        expected
    )


@pytest.mark.parametrize(("status", "retryable"), [(400, False), (429, True), (503, True)])
def test_an_error_answer_is_a_provider_error(status: int, retryable: bool) -> None:
    body = json.dumps(GEMINI.error_body(status, "no")).encode()

    with pytest.raises(ProviderError) as raised:
        gemini_response(status, body, streamed=False)

    assert (raised.value.status_code, raised.value.retryable) == (status, retryable)
    assert str(raised.value).endswith(": no")


@pytest.mark.parametrize(
    "body", [b"not json", b'{"candidates": [{"content": {"parts": [{"functionCall": {}}]}}]}']
)
def test_an_answer_that_cannot_be_read_is_a_provider_error(body: bytes) -> None:
    with pytest.raises(ProviderError, match="could not be read"):
        gemini_response(200, body, streamed=False)


def test_a_bare_streamed_answer_reads_back_without_ids_or_seal() -> None:
    """A stream whose JSON spans two ``data:`` lines (joined by a newline, as server-sent events
    are), with no response id, model version or thought signature."""
    body = (
        b'data: {"candidates": [{"content": {"parts": [{"text": "Sun"}]}}]}\r\n\r\n'
        b'data: {"candidates": [{"content": {"parts":\r\n'
        b'data: [{"text": "ny."}]}, "finishReason": "STOP"}]}\r\n\r\n'
    )

    response = gemini_response(200, body, streamed=True)

    assert response.content == "Sunny."
    assert (response.model, response.response_id, response.provider_data) == ("", "", {})
