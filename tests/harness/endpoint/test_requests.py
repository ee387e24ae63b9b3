"""``handle.requests()``: what the agent sent, for a test's own assertions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle

from .conftest import WEATHER
from .sdk_agents import SYSTEM, anthropic_client, openai_client

openai = pytest.importorskip("openai")

HELLO = """\
name: hello
turns:
  - user: Hi
    model: [{say: Hello}]
"""


def test_the_requests_the_openai_sdk_sent_with_their_settings_and_headers(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(WEATHER))
    client = openai_client(handle).with_options(default_headers={"x-team": "refunds"})
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    answer = (
        client.chat.completions.create(
            model="gpt-test",
            messages=messages,
            tools=tools,
            temperature=0.2,
            tool_choice="required",
            max_tokens=300,
        )
        .choices[0]
        .message
    )
    assert answer.tool_calls
    [first] = handle.requests()
    assert (first.number, first.method, first.path, first.status) == (
        1,
        "POST",
        "/v1/chat/completions",
        200,
    )
    assert first.body["temperature"] == 0.2
    assert first.body["tool_choice"] == "required"
    assert first.body["max_tokens"] == 300
    assert first.body["messages"] == messages
    assert first.headers["x-team"] == "refunds"
    assert first.headers["authorization"] == f"Bearer {handle.api_key}"
    assert first.json() == first.body


def test_requests_answered_with_an_error_are_kept_too(
    write_scenario: Callable[[str], Path],
) -> None:
    pytest.importorskip("anthropic")
    handle = EndpointHandle(write_scenario(HELLO))
    client = anthropic_client(handle)
    answer = client.messages.create(
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "Hi"}]
    )
    assert answer.content[0].text == "Hello"
    with pytest.raises(Exception, match="script was used up"):
        client.with_options(max_retries=0).messages.create(
            model="claude-test", max_tokens=32, messages=[{"role": "user", "content": "Hi"}]
        )
    kept = handle.requests()
    assert [(r.number, r.path, r.status, r.body["max_tokens"]) for r in kept] == [
        (1, "/v1/messages", 200, 64),
        (2, "/v1/messages", 400, 32),
    ]
    assert "anthropic-version" in kept[0].headers
    # another session's requests are its own
    assert EndpointHandle(write_scenario(HELLO, name="other")).requests() == []
