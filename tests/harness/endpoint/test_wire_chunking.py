"""``agent: {wire_chunking: bytes | utf8}``: the scenario endpoint cuts a streamed answer's bytes
one at a time, or inside every multi-byte UTF-8 character, and the official SDKs and agentrig's
own providers still put emoji and CJK text and arguments back together."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentrig as ar
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.errors import ScenarioFileError

from .sdk_agents import (
    SYSTEM,
    agentrig_provider,
    anthropic_agent,
    anthropic_client,
    chat_agent,
    openai_client,
    responses_agent,
    weather_agent,
)

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

ANSWER = "東京は晴れ ☀️ — sunny in 東京 🌸, naïve café"
SCENARIO = """\
name: unicode
agent:
  system_prompt: You answer weather questions.
  wire_chunking: {chunking}
turns:
  - user: Weather in Paris?
    model:
      - call: {{name: get_weather, args: {{city: 東京 🗼}}}}
      - say: {answer}
    expect:
      final_response: {answer}
      tool_calls: {{calls: [{{name: get_weather, args: {{city: 東京 🗼}}}}]}}
      tool_results: [{{tool: get_weather, content: sunny in 東京 🗼}}]
"""
CHUNKINGS = ["bytes", "utf8"]


@pytest.fixture(params=CHUNKINGS)
def unicode_scenario(request: pytest.FixtureRequest, write_scenario: Callable[[str], Path]) -> Path:
    return write_scenario(
        SCENARIO.format(chunking=request.param, answer=json.dumps(ANSWER, ensure_ascii=False))
    )


def raw_chunks(handle: EndpointHandle) -> list[bytes]:
    """The network chunks of one streamed Chat Completions answer, as the transport hands
    them to the client."""
    body = {
        "model": "m",
        "stream": True,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Weather in Paris?"},
        ],
    }
    headers = {"authorization": f"Bearer {handle.api_key}"}
    with (
        handle.httpx2_client() as client,
        client.stream(
            "POST", f"{handle.openai_base_url}/chat/completions", json=body, headers=headers
        ) as response,
    ):
        return list(response.iter_raw())


def events_of(chunks: list[bytes]) -> list[str]:
    return [line for line in b"".join(chunks).decode().split("\n\n") if line]


def test_the_stream_is_cut_inside_multibyte_characters(
    write_scenario: Callable[[str], Path],
) -> None:
    answer = json.dumps(ANSWER, ensure_ascii=False)
    cut: dict[str, list[bytes]] = {}
    for chunking in ["events", *CHUNKINGS]:
        path = write_scenario(SCENARIO.format(chunking=chunking, answer=answer), chunking)
        cut[chunking] = raw_chunks(EndpointHandle(path))
    whole = cut["events"]
    assert all(chunk.decode() for chunk in whole)  # events mode: every chunk is whole UTF-8
    for chunking in CHUNKINGS:
        # The same bytes, in other reads (ids are per session: compare the events' shape).
        assert len(events_of(cut[chunking])) == len(events_of(whole))
    assert all(len(chunk) == 1 for chunk in cut["bytes"])
    broken = [chunk for chunk in cut["utf8"] if not _decodes(chunk)]
    assert len(broken) >= len("東京🗼")
    assert len(cut["utf8"]) < len(cut["bytes"])
    for chunk in cut["utf8"]:  # every multi-byte character is split after its lead byte
        assert chunk[-1] >= 0xC0 or _decodes(chunk[_continuations(chunk) :])


def _decodes(chunk: bytes) -> bool:
    try:
        chunk.decode()
    except UnicodeDecodeError:
        return False
    return True


def _continuations(chunk: bytes) -> int:
    """How many continuation bytes open ``chunk`` (the rest of a character cut before it)."""
    count = 0
    while count < len(chunk) and 0x80 <= chunk[count] < 0xC0:
        count += 1
    return count


def test_an_unknown_wire_chunking_is_refused_naming_the_field(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(
        SCENARIO.format(chunking="nibbles", answer=json.dumps(ANSWER, ensure_ascii=False))
    )
    with pytest.raises(ScenarioFileError, match="wire_chunking"):
        EndpointHandle(path)


# --- the official SDKs ------------------------------------------------------------------------


def test_the_sdks_put_the_characters_back_together(unicode_scenario: Path) -> None:
    with EndpointHandle(unicode_scenario) as handle:
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Weather in Paris?"},
        ]
        assert chat_agent(openai_client(handle), messages, stream=True) == ANSWER
        handle.check()
    with EndpointHandle(unicode_scenario) as handle:
        items: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
        assert responses_agent(openai_client(handle), items, stream=True) == ANSWER
        handle.check()
    with EndpointHandle(unicode_scenario) as handle:
        user = [{"role": "user", "content": "Weather in Paris?"}]
        assert anthropic_agent(anthropic_client(handle), user, stream=True) == ANSWER
        handle.check()


# --- agentrig's own providers, through agent.stream and astream ------------------------------


@pytest.mark.parametrize("provider_name", ["chat", "responses", "anthropic"])
@pytest.mark.parametrize("run", ["stream", "astream"])
def test_agentrigs_providers_stream_the_characters_whole(
    unicode_scenario: Path, provider_name: str, run: str
) -> None:
    start = ar.AgentState().with_user_message("Weather in Paris?")
    with EndpointHandle(unicode_scenario) as handle:
        agent = weather_agent(agentrig_provider(provider_name, handle, stream=True), max_steps=5)
        if run == "stream":
            items = list(agent.stream(start))
        else:

            async def collect() -> list[Any]:
                return [item async for item in agent.astream(start)]

            items = asyncio.run(collect())
        handle.check()
    final = items[-1]
    assert isinstance(final, ar.AgentState)
    assert final.final_response().to_text() == ANSWER
    pieces = [item for item in items if isinstance(item, ar.InferenceDelta)]
    assert "".join(p.text for p in pieces if p.step_number == 2) == ANSWER
    arguments = "".join(p.arguments for p in pieces if p.step_number == 1)
    assert json.loads(arguments) == {"city": "東京 🗼"}
    assert [e.content for e in final.steps()[0].tool_executions] == ["sunny in 東京 🗼"]


def test_a_live_server_sends_the_cut_stream(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(
        SCENARIO.format(chunking="utf8", answer=json.dumps(ANSWER, ensure_ascii=False))
    )
    with EndpointHandle(path, live=True) as handle, openai_client(handle) as client:
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Weather in Paris?"},
        ]
        assert chat_agent(client, messages, stream=True) == ANSWER
        handle.check()
