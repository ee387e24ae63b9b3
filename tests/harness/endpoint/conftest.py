"""Helpers for the endpoint tests: scenarios written on the fly, and a raw Chat Completions agent
whose every request the test controls (to break one invariant at a time)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}

WEATHER = """\
name: weather
agent:
  system_prompt: You answer weather questions.
  model: gpt-test
turns:
  - user: Weather in Paris?
    model:
      - call: get_weather(city=Paris)
      - say: It is sunny in Paris.
    expect:
      final_response: {contains: sunny}
      tool_calls: {calls: [get_weather(city=Paris)]}
      model_calls: 2
      tool_results: [{tool: get_weather, content: sunny}]
"""

REASONING_WEATHER = """\
name: reasoning-weather
agent:
  system_prompt: You answer weather questions.
  tools:
    get_weather:
      params: {city: string}
      replies: [{return: sunny in Paris}]
turns:
  - user: Weather in Paris?
    model:
      - think: The user wants the weather, so I call the tool.
        call: get_weather(city=Paris)
      - think: The tool says sunny.
        say: It is sunny in Paris today.
    expect:
      final_response: It is sunny in Paris today.
      model_calls: 2
"""
"""A reasoning model's tool round trip: each reply thinks first (``think:``)."""


@pytest.fixture
def write_scenario(tmp_path: Path) -> Callable[[str], Path]:
    """Write a scenario text to a file and return its path."""

    def write(text: str, name: str = "case") -> Path:
        path = tmp_path / f"{name}.scenario.yaml"
        path.write_text(text)
        return path

    return write


class RawChatAgent:
    """Posts Chat Completions bodies as given, through an in-process httpx client."""

    def __init__(self, handle: EndpointHandle) -> None:
        self.handle = handle
        self.client = handle.httpx_client()

    def post(self, messages: list[dict[str, Any]], **extra: Any) -> Any:
        body = {"model": "gpt-test", "messages": messages, "tools": [WEATHER_TOOL], **extra}
        headers = {"authorization": f"Bearer {self.handle.api_key}"}
        return self.client.post(
            f"{self.handle.openai_base_url}/chat/completions", json=body, headers=headers
        )


def first_turn(user: str = "Weather in Paris?") -> list[dict[str, Any]]:
    """The opening of a conversation that follows the weather scenario."""
    return [
        {"role": "system", "content": "You answer weather questions."},
        {"role": "user", "content": user},
    ]


def assistant_of(response: Any) -> dict[str, Any]:
    """The assistant message of a Chat Completions answer, as an agent sends it back."""
    message: dict[str, Any] = response.json()["choices"][0]["message"]
    return {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
