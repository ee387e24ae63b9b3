"""Record-through: the endpoint forwards to an upstream (here a second endpoint on loopback,
never the network), relays its answers, and records a scrubbed cassette that converts back into
the scenario's script."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrig.harness.cassettes import load_cassette
from agentrig.harness.cli import app
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.endpoint.recording import RecordThrough
from agentrig.harness.endpoint.server import EndpointServer
from agentrig.harness.scenarios.loader import load_scenario

from .sdk_agents import SYSTEM, anthropic_agent, chat_agent, responses_agent

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

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
        client = openai.OpenAI(api_key=SECRET, base_url=f"{base_url}/v1", max_retries=0)
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
        client = anthropic.Anthropic(api_key=SECRET, base_url=base_url, max_retries=0)
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
        client = openai.OpenAI(api_key=SECRET, base_url=f"{base_url}/v1", max_retries=0)
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
