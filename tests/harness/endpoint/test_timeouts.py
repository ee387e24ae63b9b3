"""An agent's timeout handling, tested: a reply later than the client's timeout (``latency``)
or none at all (``fault: {timeout: true}``) is given up on by the client, in process (the
client's own timeout error, raised when its read timeout has passed) and over loopback (the
endpoint sees the client disconnect). A reply the client never received is no model call, and
the request that retries carries no answer to it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentrig.harness.endpoint.handle import EndpointHandle

from .sdk_agents import SYSTEM, chat_agent

openai = pytest.importorskip("openai")

SCENARIO = """\
name: slow
agent:
  system_prompt: You answer weather questions.
turns:
  - user: Weather in Paris?
    model:
      - call: get_weather(city=Paris)
      - say: It is sunny in Paris, at last.
        SLOW
      - say: It is sunny in Paris today.
    expect:
      final_response: It is sunny in Paris today.
      model_calls: 2
      tool_results: [{tool: get_weather, content: sunny in Paris}]
"""

LATE = "latency: 30"
NO_ANSWER = "fault: {timeout: true}"


class _QuickRetries:
    """The SDK's client, waiting 10 ms before a retry, not its 0.4-0.5 s back-off: that the
    agent retries is what these tests check, not how long the SDK waits first."""

    def _calculate_retry_timeout(self, *args: Any, **kwargs: Any) -> float:
        return 0.01


class _OpenAI(_QuickRetries, openai.OpenAI):
    pass


class _AsyncOpenAI(_QuickRetries, openai.AsyncOpenAI):
    pass


IN_PROCESS_TIMEOUT = 0.05
"""The client's timeout in process: only a reply scripted late waits there (that long), so it
can be short; over loopback every request crosses a socket of a shared machine: 0.3 s."""


def _client(handle: EndpointHandle, *, retries: int) -> Any:
    return _OpenAI(
        base_url=handle.openai_base_url,
        api_key=handle.api_key,
        http_client=None if handle.live else handle.httpx2_client(),
        timeout=0.3 if handle.live else IN_PROCESS_TIMEOUT,
        max_retries=retries,
    )


def _messages() -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Weather in Paris?"}]


@pytest.mark.slow
@pytest.mark.parametrize("live", [False, True], ids=["in-process", "loopback"])
@pytest.mark.parametrize("slow", [LATE, NO_ANSWER], ids=["latency", "timeout-fault"])
def test_a_reply_the_client_gave_up_on_is_no_model_call(
    write_scenario: Callable[[str], Path], live: bool, slow: str
) -> None:
    started = time.monotonic()
    with (
        EndpointHandle(write_scenario(SCENARIO.replace("SLOW", slow)), live=live) as handle,
        _client(handle, retries=1) as client,
    ):
        answer = chat_agent(client, _messages())  # the SDK retries the timed-out request
        result = handle.check()  # no history_grows, model_calls 2 (not 3)

    assert answer == "It is sunny in Paris today."
    assert [o.failures for o in result.invariants] == [0] * len(result.invariants)
    assert time.monotonic() - started < 10  # never the scripted 30 s: the client's timeout
    events = [e.text for e in result.transcript if e.kind == "event"]
    why = "latency 30 s" if slow == LATE else "fault: no answer until the client's timeout"
    assert events == [f"the client never got the reply ({why}): it gave up first"]


@pytest.mark.parametrize("live", [False, True], ids=["in-process", "loopback"])
def test_an_agent_that_does_not_retry_a_timeout_is_named(
    write_scenario: Callable[[str], Path], live: bool
) -> None:
    path = write_scenario(SCENARIO.replace("SLOW", LATE))
    with EndpointHandle(path, live=live) as handle, _client(handle, retries=0) as client:
        with pytest.raises(openai.APITimeoutError):
            chat_agent(client, _messages())
        failures = handle.result().failures

    named = [f for f in failures if "no request followed" in f.message]
    assert [f.message for f in named] == [
        "turn 1: request 2 never received the scripted reply (latency: 30) (line 8) and "
        "no request followed: the agent gave up where the script has it recover"
    ]
    assert named[0].location == f"{path}:8"


def test_a_scripted_error_comes_after_its_replys_latency(
    write_scenario: Callable[[str], Path],
) -> None:
    # a fault's HTTP error keeps the latency of the reply it stands for: the client times out
    late_error = SCENARIO.replace(
        "      - say: It is sunny in Paris, at last.\n        SLOW\n",
        "      - fault: {status: 503}\n        latency: 30\n",
    )
    with (
        EndpointHandle(write_scenario(late_error)) as handle,
        _client(handle, retries=0) as client,
    ):
        with pytest.raises(openai.APITimeoutError):
            chat_agent(client, _messages())
        result = handle.result()
    events = [e.text for e in result.transcript if e.kind == "event"]
    assert events == [
        "the client never got the reply (fault: HTTP 503): it gave up first",
    ]


def test_a_client_without_a_read_timeout_meets_a_timeout_fault_at_once(
    write_scenario: Callable[[str], Path],
) -> None:
    with EndpointHandle(write_scenario(SCENARIO.replace("SLOW", NO_ANSWER))) as handle:
        client = handle.httpx_client(timeout=None)
        headers = {"authorization": f"Bearer {handle.api_key}"}
        body = {"model": "m", "messages": _messages()}
        url = f"{handle.openai_base_url}/chat/completions"
        client.post(url, json=body, headers=headers)  # the tool call
        with pytest.raises(httpx.ReadTimeout, match="it would wait for ever"):
            client.post(url, json=body, headers=headers)


@pytest.mark.slow
def test_an_async_client_in_process_is_held_to_its_timeout_too(
    write_scenario: Callable[[str], Path],
) -> None:
    text = SCENARIO.replace("SLOW", LATE).replace("      - call: get_weather(city=Paris)\n", "")
    text = text.replace("model_calls: 2", "model_calls: 1").replace(
        "      tool_results: [{tool: get_weather, content: sunny in Paris}]\n", ""
    )

    async def ask(handle: EndpointHandle) -> str:
        client = _AsyncOpenAI(
            base_url=handle.openai_base_url,
            api_key=handle.api_key,
            http_client=handle.async_httpx2_client(),
            timeout=IN_PROCESS_TIMEOUT,
            max_retries=1,
        )
        async with client:
            answer = await client.chat.completions.create(model="m", messages=_messages())
        return answer.choices[0].message.content or ""

    with EndpointHandle(write_scenario(text)) as handle:
        assert asyncio.run(ask(handle)) == "It is sunny in Paris today."
        handle.check()


def test_intercept_meets_a_timeout_fault_with_the_clients_timeout_error(
    write_scenario: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder")
    path = write_scenario(SCENARIO.replace("SLOW", NO_ANSWER))
    with EndpointHandle(path) as handle, handle.intercept():
        client = openai.OpenAI(timeout=0.3, max_retries=0)  # the default host
        with pytest.raises(openai.APITimeoutError):
            chat_agent(client, _messages())
        failures = handle.result().failures

    assert [f.message for f in failures if "no request followed" in f.message] == [
        "turn 1: request 2 got the scripted fault (no answer until the client's timeout) "
        "(line 8) and no request followed: the agent gave up where the script has it recover"
    ]


SLOW_STREAM = "chunk_latency: 30"  # seconds between chunks: the client gives up mid-stream
httpx2 = pytest.importorskip("httpx2")
GAVE_UP_MID_STREAM = (openai.APITimeoutError, httpx.ReadTimeout, httpx2.ReadTimeout)


@pytest.mark.parametrize("live", [False, True], ids=["in-process", "loopback"])
def test_a_stream_the_client_gave_up_on_midway_is_no_model_call(
    write_scenario: Callable[[str], Path], live: bool
) -> None:
    started = time.monotonic()
    path = write_scenario(SCENARIO.replace("SLOW", SLOW_STREAM))
    with EndpointHandle(path, live=live) as handle, _client(handle, retries=0) as client:
        messages = _messages()
        with pytest.raises(GAVE_UP_MID_STREAM):  # the first words came, then nothing
            chat_agent(client, messages, stream=True)
        answer = chat_agent(client, messages, stream=True)  # the agent asks again
        result = handle.check()  # model_calls 2 (not 3), no history_grows

    assert answer == "It is sunny in Paris today."
    assert time.monotonic() - started < 10  # never the scripted 30 s: the client's timeout
    events = [e.text for e in result.transcript if e.kind == "event"]
    assert events == [
        "the client got only part of the reply (chunk_latency 30 s between chunks): it gave up "
        "mid-stream"
    ]


@pytest.mark.parametrize("live", [False, True], ids=["in-process", "loopback"])
def test_an_agent_that_gives_up_mid_stream_for_good_is_named(
    write_scenario: Callable[[str], Path], live: bool
) -> None:
    path = write_scenario(SCENARIO.replace("SLOW", SLOW_STREAM))
    with EndpointHandle(path, live=live) as handle, _client(handle, retries=0) as client:
        with pytest.raises(GAVE_UP_MID_STREAM):
            chat_agent(client, _messages(), stream=True)
        failures = handle.result().failures

    named = [f for f in failures if "no request followed" in f.message]
    assert [f.message for f in named] == [
        "turn 1: request 2 received the scripted reply only in part (chunk_latency: 30 between "
        "chunks) (line 8) and no request followed: the agent gave up where the script has it "
        "recover"
    ]
    assert named[0].location == f"{path}:8"
    assert "model_calls" in " ".join(f.message for f in failures)  # 1 received, not 2
