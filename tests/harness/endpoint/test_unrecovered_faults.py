"""A scripted fault or error the agent did not recover from is named: the request it answered,
the fault and its line, and that no request followed (the SDKs' own clients, retries off)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.results import Failure

from .sdk_agents import SYSTEM, anthropic_client, openai_client

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

SCENARIO = """\
name: faulted
agent:
  system_prompt: You answer weather questions.
turns:
  - user: Weather in Paris?
    model:
      - FAULT
      - say: It is sunny in Paris.
"""


def _gave_up(handle: EndpointHandle) -> list[Failure]:
    return [f for f in handle.result().failures if "no request followed" in f.message]


def _chat_once(handle: EndpointHandle) -> None:
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    with openai_client(handle) as client, pytest.raises(openai.APIError):
        client.with_options(max_retries=0).chat.completions.create(
            model="gpt-test", messages=messages
        )


def _stream(client: anthropic.Anthropic) -> None:
    with client.with_options(max_retries=0).messages.stream(
        model="claude-test",
        max_tokens=100,
        system=SYSTEM,
        messages=[{"role": "user", "content": "Weather in Paris?"}],
    ) as stream:
        stream.get_final_message()


def _anthropic_once(handle: EndpointHandle) -> None:
    # a stream cut mid-way reaches the caller as the HTTP library's own error
    with (
        anthropic_client(handle) as client,
        pytest.raises((anthropic.APIError, httpx2.RemoteProtocolError)),
    ):
        _stream(client)


@pytest.mark.parametrize(
    ("fault", "send", "what"),
    [
        pytest.param(
            "fault: {status: 429, message: slow down}",
            _chat_once,
            "the scripted fault (HTTP 429: slow down)",
            id="chat-429",
        ),
        pytest.param(
            "error: overloaded\n        retryable: true",
            _chat_once,
            "the scripted error (HTTP 503: overloaded)",
            id="chat-error",
        ),
        pytest.param(
            "say: It is\n        fault: {cut_after: 2}",
            _anthropic_once,
            "the scripted fault (stream cut after 2 events)",
            id="anthropic-cut-stream",
        ),
    ],
)
def test_a_fault_the_agent_did_not_recover_from_is_named(
    write_scenario: Callable[[str], Path],
    fault: str,
    send: Callable[[EndpointHandle], None],
    what: str,
) -> None:
    path = write_scenario(SCENARIO.replace("FAULT", fault))
    with EndpointHandle(path) as handle:
        send(handle)
        [named] = _gave_up(handle)

    assert named.message == (
        f"turn 1: request 1 got {what} (line 7) and no request followed: the agent gave up "
        "where the script has it recover"
    )
    assert named.location == f"{path}:7"
    assert named.kind == "script"


def test_a_fault_that_ends_the_script_is_not_named(
    write_scenario: Callable[[str], Path],
) -> None:
    text = SCENARIO.replace("FAULT", "fault: {status: 400}").replace(
        "      - say: It is sunny in Paris.\n", ""
    )
    with EndpointHandle(write_scenario(text)) as handle:
        _chat_once(handle)
        assert handle.check().passed  # the agent was meant to give up on a 400
