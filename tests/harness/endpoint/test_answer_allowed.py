"""``answer_allowed``: a scripted answer a real API would never give the request (a tool call
under ``tool_choice: none``, two calls when parallel calls are off, text when a call is
required, a call of a tool Gemini's ``allowedFunctionNames`` leaves out) fails, naming the
request, the setting and the scripted reply's line; through the official SDKs on all four APIs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.results import Failure

from .sdk_agents import (
    CHAT_TOOLS,
    GEMINI_DECLARATION,
    PARAMETERS,
    anthropic_client,
    gemini_client,
    openai_client,
)

pytest.importorskip("openai")
pytest.importorskip("anthropic")
pytest.importorskip("google.genai")

TWO_CALLS = """\
name: two-calls
turns:
  - user: Weather in Paris and Oslo?
    model:
      - calls: [get_weather(city=Paris), get_weather(city=Oslo)]
"""

ONE_CALL = """\
name: one-call
turns:
  - user: Weather in Paris?
    model:
      - call: get_weather(city=Paris)
"""

TEXT = """\
name: text
turns:
  - user: Weather in Paris?
    model:
      - say: It is sunny.
"""

USER = [{"role": "user", "content": "placeholder"}]
RESPONSES_TOOLS = [{"type": "function", "name": "get_weather", "parameters": PARAMETERS}]
ANTHROPIC_TOOLS = [{"name": "get_weather", "input_schema": PARAMETERS}]


def _allowed(handle: EndpointHandle) -> list[Failure]:
    return [f for f in handle.result().failures if f.invariant == "answer_allowed"]


def _chat(handle: EndpointHandle, user: str, **settings: Any) -> None:
    with openai_client(handle) as client:
        client.chat.completions.create(
            model="gpt-test",
            messages=[{"role": "user", "content": user}],
            tools=CHAT_TOOLS,
            **settings,
        )


def _responses(handle: EndpointHandle, user: str, **settings: Any) -> None:
    with openai_client(handle) as client:
        client.responses.create(model="gpt-test", input=user, tools=RESPONSES_TOOLS, **settings)


def _anthropic(handle: EndpointHandle, user: str, **settings: Any) -> None:
    with anthropic_client(handle) as client:
        client.messages.create(
            model="claude-test",
            max_tokens=100,
            messages=[{"role": "user", "content": user}],
            tools=ANTHROPIC_TOOLS,
            **settings,
        )


def _gemini(handle: EndpointHandle, user: str, **calling: Any) -> None:
    """google-genai with ``toolConfig.functionCallingConfig`` of ``calling``."""
    from google.genai import types

    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[GEMINI_DECLARATION])],
        tool_config=types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(**calling)
        ),
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    gemini_client(handle).models.generate_content(model="gemini-test", contents=user, config=config)


CASES = [
    pytest.param(
        _chat,
        TWO_CALLS,
        {"parallel_tool_calls": False},
        "the request sends parallel_tool_calls: false, but the scripted reply makes 2 tool "
        "calls (get_weather, get_weather)",
        id="chat-parallel-off",
    ),
    pytest.param(
        _chat,
        ONE_CALL,
        {"tool_choice": "none"},
        'the request sends tool_choice: "none", but the scripted reply calls get_weather',
        id="chat-none",
    ),
    pytest.param(
        _chat,
        TEXT,
        {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
        'the request sends tool_choice: {"type":"function","function":{"name":"get_weather"}}, '
        "but the scripted reply calls no tool",
        id="chat-named",
    ),
    pytest.param(
        _responses,
        TWO_CALLS,
        {"parallel_tool_calls": False},
        "the request sends parallel_tool_calls: false, but the scripted reply makes 2 tool "
        "calls (get_weather, get_weather)",
        id="responses-parallel-off",
    ),
    pytest.param(
        _responses,
        TEXT,
        {"tool_choice": "required"},
        'the request sends tool_choice: "required", but the scripted reply calls no tool',
        id="responses-required",
    ),
    pytest.param(
        _anthropic,
        TWO_CALLS,
        {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}},
        "the request sends disable_parallel_tool_use: true, but the scripted reply makes 2 "
        "tool calls (get_weather, get_weather)",
        id="anthropic-parallel-off",
    ),
    pytest.param(
        _anthropic,
        ONE_CALL,
        {"tool_choice": {"type": "none"}},
        'the request sends tool_choice: {"type":"none"}, but the scripted reply calls get_weather',
        id="anthropic-none",
    ),
    pytest.param(
        _anthropic,
        TEXT,
        {"tool_choice": {"type": "any"}},
        'the request sends tool_choice: {"type":"any"}, but the scripted reply calls no tool',
        id="anthropic-any",
    ),
    pytest.param(
        _gemini,
        ONE_CALL,
        {"mode": "NONE"},
        'the request sends toolConfig: {"functionCallingConfig":{"mode":"NONE"}}, but the '
        "scripted reply calls get_weather",
        id="gemini-none",
    ),
    pytest.param(
        _gemini,
        TEXT,
        {"mode": "ANY"},
        'the request sends toolConfig: {"functionCallingConfig":{"mode":"ANY"}}, but the '
        "scripted reply calls no tool",
        id="gemini-any",
    ),
    pytest.param(
        _gemini,
        ONE_CALL,
        {"mode": "ANY", "allowed_function_names": ["get_time"]},
        'the request sends toolConfig: {"functionCallingConfig":{"allowedFunctionNames":'
        '["get_time"],"mode":"ANY"}}, but the scripted reply calls get_weather',
        id="gemini-allowed-names",
    ),
]


@pytest.mark.parametrize(("send", "scenario", "settings", "problem"), CASES)
def test_an_answer_the_request_does_not_allow_fails_at_the_reply(
    write_scenario: Callable[[str], Path],
    send: Callable[..., None],
    scenario: str,
    settings: dict[str, Any],
    problem: str,
) -> None:
    path = write_scenario(scenario)
    with EndpointHandle(path) as handle:
        send(handle, _user(scenario), **settings)
        found = _allowed(handle)

    assert [f.message for f in found] == [
        f"request 1: answer_allowed: {problem}: a real API never answers so; change the reply, "
        "or check why the agent asks for that"
    ]
    assert found[0].location == f"{path}:5"  # the scripted reply


@pytest.mark.parametrize(
    ("send", "scenario", "settings"),
    [
        pytest.param(_chat, ONE_CALL, {"parallel_tool_calls": False}, id="chat-one-call"),
        pytest.param(_chat, TEXT, {"tool_choice": "none"}, id="chat-text-under-none"),
        pytest.param(_chat, ONE_CALL, {"tool_choice": "required"}, id="chat-call-required"),
        pytest.param(
            _responses,
            ONE_CALL,
            {"tool_choice": {"type": "function", "name": "get_weather"}},
            id="responses-named",
        ),
        pytest.param(
            _anthropic,
            ONE_CALL,
            {"tool_choice": {"type": "tool", "name": "get_weather"}},
            id="anthropic-named",
        ),
        pytest.param(_anthropic, TWO_CALLS, {"tool_choice": {"type": "auto"}}, id="anthropic"),
        pytest.param(
            _gemini,
            TWO_CALLS,
            {"mode": "ANY", "allowed_function_names": ["get_weather"]},
            id="gemini-allowed-names",
        ),
        pytest.param(_gemini, TEXT, {"mode": "VALIDATED"}, id="gemini-validated"),
        pytest.param(_gemini, TEXT, {"mode": "NONE"}, id="gemini-text-under-none"),
    ],
)
def test_an_answer_the_request_allows_passes(
    write_scenario: Callable[[str], Path],
    send: Callable[..., None],
    scenario: str,
    settings: dict[str, Any],
) -> None:
    with EndpointHandle(write_scenario(scenario)) as handle:
        send(handle, _user(scenario), **settings)
        assert _allowed(handle) == []


def _user(scenario: str) -> str:
    return "Weather in Paris and Oslo?" if "Oslo" in scenario else "Weather in Paris?"


def test_an_auto_answer_the_request_does_not_allow_fails_at_model_auto(
    write_scenario: Callable[[str], Path],
) -> None:
    # model: auto calls the next offered tool, tool_choice or not: no reply of its own to name
    path = write_scenario("name: auto\nturns:\n  - user: Weather in Paris?\n    model: auto\n")
    with EndpointHandle(path) as handle:
        _chat(handle, "Weather in Paris?", tool_choice="none")
        [found] = _allowed(handle)
    assert found.message.startswith("request 1: answer_allowed: the request sends tool_choice")
    assert found.location == f"{path}:4"  # `model: auto`
