"""HTTP cassettes: both cassette shapes load, the LLM request matcher, strict replay, recording,
pytest-recording compatibility, and the block on real LLM calls in tests."""

from __future__ import annotations

import gzip
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentrig import (
    InferenceRequest,
    Message,
    Messages,
    ProviderError,
    RealLlmCallBlockedError,
    ToolCall,
    ToolSchema,
)
from agentrig.drivers import AnthropicProvider, OpenAIProvider
from agentrig.harness.data_files import MAX_FILE_BYTES

vcr = pytest.importorskip("vcr")
openai = pytest.importorskip("openai")
httpx2 = pytest.importorskip("httpx2")

from agentrig.harness.cassettes import http as http_cassettes  # noqa: E402
from agentrig.harness.cassettes.http import (  # noqa: E402
    HttpCassetteFileError,
    HttpCassetteMismatchError,
    HttpCassetteNotFoundError,
    UnplayedInteractionsError,
    llm_request,
    request_fingerprint,
    use_http_cassette,
)

FOREIGN = ("tools", "strict")
"""What the real cassettes, recorded by other frameworks, send differently from agentrig: tool
schemas (descriptions, ``additionalProperties``, ``strict``); the replays do not compare them."""

PYDANTIC_OPENAI = (
    "pydantic-ai/test_openai/test_openai_instructions_with_tool_calls_keep_instructions.yaml"
)


PARSED_BODY_CASSETTE = """\
interactions:
- request:
    headers: {content-type: [application/json]}
    method: POST
    parsed_body:
      model: m
      messages: [{role: user, content: hi}]
    uri: https://llm.test/v1/chat/completions?beta=true
  response:
    headers: {content-length: ['3'], content-type: [application/json]}
    parsed_body: {id: x, choices: []}
    status: {code: 200, message: OK}
version: 1
"""


# --- serializer -----------------------------------------------------------------------------


def test_parsed_bodies_become_json_text() -> None:
    data = http_cassettes.deserialize(PARSED_BODY_CASSETTE)
    interaction = data["interactions"][0]
    assert json.loads(interaction["request"]["body"]) == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
    }
    body = interaction["response"]["body"]["string"]
    assert json.loads(body) == {"id": "x", "choices": []}
    assert interaction["response"]["headers"]["content-length"] == [str(len(body))]


def test_stock_cassettes_keep_their_gzip_binary_bodies(
    real_cassette: Callable[[str], Path],
) -> None:
    data = http_cassettes.deserialize(
        real_cassette("llm/test_tools/test_tool_use_chain_of_two_calls.yaml").read_text()
    )
    body = data["interactions"][0]["response"]["body"]["string"]
    assert isinstance(body, bytes)
    assert (
        json.loads(gzip.decompress(body))["choices"][0]["message"]["tool_calls"][0]["function"][
            "name"
        ]
        == "lookup_population"
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [("- just a list", "interactions"), ("interactions:\n- request: {}\n", "interaction 1 needs")],
)
def test_what_is_not_a_cassette_is_refused(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        http_cassettes.deserialize(text)


# --- matcher --------------------------------------------------------------------------------


class Req:
    def __init__(self, body: Any) -> None:
        self.body = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()


def chat(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": list(messages), **extra}


def test_the_matcher_ignores_what_sdks_add_or_spell_differently() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    sent = chat(
        {"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [call]}, tools=tools
    )
    recorded = chat(
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": ""},
        {
            "role": "assistant",
            "tool_calls": [{**call, "function": {"name": "f", "arguments": '{"a":1}'}}],
        },
        n=1,
        stream=False,
        stream_options={"include_usage": True},
        tools=tools,
        tool_choice="auto",
    )
    llm_request(Req(sent), Req(recorded))


def _weather_tool(**schema: Any) -> list[dict[str, Any]]:
    parameters = {"type": "object", "properties": {"city": {"type": "string"}}}
    function = {"name": "weather", "description": "Weather.", "parameters": parameters, **schema}
    return [{"type": "function", "function": function}]


@pytest.mark.parametrize(
    ("setting", "recorded", "named"),
    [
        ("tools", {"tools": _weather_tool(description="Old.")}, "tool 'weather' description"),
        (
            "tools",
            {"tools": _weather_tool(parameters={"type": "object"})},
            "tool 'weather' parameters",
        ),
        ("strict", {"tools": _weather_tool(strict=True)}, "tool 'weather' strict"),
        ("tool_choice", {"tool_choice": "required"}, "tool_choice: sent 'auto'"),
        ("temperature", {"temperature": 0.2}, "temperature"),
        ("max_tokens", {"max_tokens": 100}, "max_tokens"),
        ("response_format", {"response_format": {"type": "json_object"}}, "response_format"),
        ("thinking", {"reasoning_effort": "high"}, "thinking"),
        (
            "reasoning",
            {"messages": [{"role": "assistant", "content": "a", "reasoning_content": "r"}]},
            "reasoning",
        ),
    ],
)
def test_the_matcher_compares_the_settings_the_recording_has_unless_ignored(
    setting: str, recorded: dict[str, Any], named: str
) -> None:
    """Tool schemas, strict, tool_choice, temperature, max tokens, response format, thinking and
    the reasoning sent back are compared; the message names the field and how to relax it."""
    sent = chat({"role": "assistant", "content": "a"}, tools=_weather_tool())
    theirs = {**sent, **recorded}
    with pytest.raises(AssertionError, match=f"{named}.*ignore=\\['{setting}'\\]"):
        llm_request(Req(sent), Req(theirs))
    http_cassettes.llm_request_ignoring(setting)(Req(sent), Req(theirs))


def test_a_setting_absent_from_the_recording_is_not_compared() -> None:
    """A hand-written cassette needs no tool schema or settings: only what it has is checked."""
    sent = chat(
        {"role": "user", "content": "hi"},
        tools=_weather_tool(strict=True),
        temperature=0.5,
        max_completion_tokens=10,
        tool_choice="required",
    )
    recorded = chat(
        {"role": "user", "content": "hi"},
        tools=[{"type": "function", "function": {"name": "weather"}}],
    )
    with pytest.raises(AssertionError, match="tool_choice"):
        llm_request(Req(sent), Req(recorded))
    llm_request(Req({**sent, "tool_choice": "auto"}), Req(recorded))


def test_spellings_of_max_tokens_and_tool_choice_are_one_setting() -> None:
    tools = [{"name": "weather", "input_schema": {"type": "object"}}]
    anthropic = {
        "model": "m",
        "messages": [],
        "tools": tools,
        "max_tokens": 5,
        "tool_choice": {"type": "any"},
    }
    openai = {
        "model": "m",
        "messages": [],
        "tools": [
            {"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}
        ],
        "max_completion_tokens": 5,
        "tool_choice": "required",
    }
    llm_request(Req(openai), Req(anthropic))


def test_ignoring_an_unknown_setting_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="cannot ignore 'temprature': the settings are tools"):
        http_cassettes.llm_request_ignoring("temprature")


@pytest.mark.parametrize(
    ("recorded", "named"),
    [
        (
            chat(
                {"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "c1", "content": "2"},
            ),
            "conversation item 2",
        ),
        ({**chat({"role": "user", "content": "hi"}), "model": "other"}, "model"),
        ({**chat({"role": "user", "content": "hi"}), "system": "Be brief."}, "system"),
        ({**chat({"role": "user", "content": "hi"}), "stream": True}, "stream"),
    ],
)
def test_the_matcher_names_the_first_difference(recorded: dict[str, Any], named: str) -> None:
    sent = chat(
        {"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c1", "content": "1"}
    )
    if named != "conversation item 2":
        sent = chat({"role": "user", "content": "hi"})
    with pytest.raises(AssertionError, match=named):
        llm_request(Req(sent), Req(recorded))


def test_a_responses_body_is_compared_like_a_chat_body() -> None:
    """Responses API bodies: ``instructions`` is the system prompt, ``input`` the conversation
        (a bare string is one user message), ``function_call`` / ``function_call_output`` items are
        tool calls and results, reasoning items are not conversation items (they are the reasoning sent
    back, compared as a setting)."""
    chat_body = chat(
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "2"},
        tools=[{"type": "function", "function": {"name": "f"}}],
    )
    responses_body = {
        "model": "m",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a":1}'},
            {"type": "function_call_output", "call_id": "c1", "output": "2"},
        ],
        "tools": [{"type": "function", "name": "f"}],
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    responses_print = request_fingerprint(json.dumps(responses_body))
    chat_print = request_fingerprint(json.dumps(chat_body))
    assert responses_print is not None
    assert chat_print is not None
    assert responses_print.pop("settings")["reasoning"] == [
        {"summary": [], "encrypted_content": "e"}
    ]
    assert chat_print.pop("settings").get("reasoning") is None
    assert responses_print == chat_print
    bare = {"model": "m", "input": "hi"}
    assert request_fingerprint(json.dumps(bare)) == request_fingerprint(
        json.dumps(chat({"role": "user", "content": "hi"}))
    )
    changed = {**responses_body, "input": [*responses_body["input"][:3]]}
    with pytest.raises(AssertionError, match="conversation item 3"):
        llm_request(Req(json.dumps(changed).encode()), Req(json.dumps(responses_body).encode()))


def test_bodies_that_are_not_json_must_be_equal() -> None:
    llm_request(Req(b"a=1"), Req(b"a=1"))
    with pytest.raises(AssertionError, match="bodies differ"):
        llm_request(Req(b"a=1"), Req(b"a=2"))
    assert request_fingerprint(b"not json") is None


# --- replay ---------------------------------------------------------------------------------


def openai_provider(**options: Any) -> OpenAIProvider:
    return OpenAIProvider(api_key="sk-replay", max_retries=0, **options)


TEMPERATURE_TOOL = ToolSchema(
    name="get_temperature",
    parameters={
        "additionalProperties": False,
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "type": "object",
    },
)
"""The tool as the recording has it (but for ``strict: true``, which it cannot express)."""


def weather_request(question: str = "What is the temperature in Tokyo?") -> InferenceRequest:
    messages = Messages.of(Message.system("You are a helpful assistant."), Message.user(question))
    return InferenceRequest(messages=messages, tools=(TEMPERATURE_TOOL,))


def test_a_replay_that_leaves_interactions_unplayed_fails(
    real_cassette: Callable[[str], Path],
) -> None:
    with (
        pytest.raises(UnplayedInteractionsError) as raised,
        use_http_cassette(real_cassette(PYDANTIC_OPENAI), ignore=["strict"]),
    ):
        openai_provider(model="gpt-4.1-mini").infer(weather_request())
    assert raised.value.unplayed == ["#2 POST https://api.openai.com/v1/chat/completions"]
    assert "1 of 2 recorded interaction(s)" in str(raised.value)


def test_a_request_matching_nothing_fails_with_the_difference(
    real_cassette: Callable[[str], Path],
) -> None:
    provider = openai_provider(model="gpt-4.1-mini")
    with (
        pytest.raises(HttpCassetteMismatchError),
        use_http_cassette(
            real_cassette(PYDANTIC_OPENAI), check_all_played=False, ignore=["strict"]
        ),
        pytest.raises(ProviderError) as raised,
    ):
        provider.infer(weather_request("What is the temperature in Oslo?"))
    message = str(raised.value)
    assert "matched no interaction" in message
    assert "conversation item 1" in message


def test_an_anthropic_replay_miss_is_not_retried_into_a_connection_error(
    real_cassette: Callable[[str], Path],
) -> None:
    path = real_cassette("pydantic-ai/test_anthropic/test_anthropic_mixed_strict_tool_run.yaml")
    provider = AnthropicProvider(api_key="sk-replay", model="claude-other", max_retries=0)
    with (
        pytest.raises(HttpCassetteMismatchError),
        use_http_cassette(path, check_all_played=False, ignore=FOREIGN),
        pytest.raises(ProviderError, match="matched no interaction") as raised,
    ):
        provider.infer(InferenceRequest(messages=Messages.from_text("hi")))
    assert not raised.value.retryable


def test_a_placeholder_tool_schema_does_not_replay_a_real_session(
    real_cassette: Callable[[str], Path],
) -> None:
    placeholder = weather_request().evolve(tools=(ToolSchema(name="get_temperature"),))
    with (
        pytest.raises(HttpCassetteMismatchError, match="tool 'get_temperature' parameters"),
        use_http_cassette(real_cassette(PYDANTIC_OPENAI), ignore=["strict"]),
        pytest.raises(ProviderError),
    ):
        openai_provider(model="gpt-4.1-mini").infer(placeholder)


def test_a_miss_the_caller_swallowed_is_reported_when_the_block_ends(
    real_cassette: Callable[[str], Path],
) -> None:
    """The loop records a provider error as a failed step; leaving the block must then name the
    miss and its difference, not claim the code sent fewer requests."""
    provider = openai_provider(model="gpt-4.1-mini")
    with (
        pytest.raises(HttpCassetteMismatchError) as raised,
        use_http_cassette(real_cassette(PYDANTIC_OPENAI), ignore=["strict"]),
        pytest.raises(ProviderError),  # swallowed, as the agent loop does
    ):
        provider.infer(weather_request("What is the temperature in Oslo?"))
    message = str(raised.value)
    assert "1 request(s) matched no recorded interaction" in message
    assert "conversation item 1" in message
    assert raised.value.path == str(real_cassette(PYDANTIC_OPENAI))
    assert len(raised.value.misses) == 1


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("interactions:\n- request: {}\n", "interaction 1 needs a 'request' and a 'response'"),
        ("interactions: [\n", "invalid YAML"),
    ],
)
def test_a_broken_cassette_file_is_an_error_naming_the_file(
    tmp_path: Path, text: str, reason: str
) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(HttpCassetteFileError) as raised, use_http_cassette(path):
        pass
    assert str(raised.value).startswith(f"HTTP cassette {path}: ")
    assert reason in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_replaying_a_missing_file_says_how_to_record_it(tmp_path: Path) -> None:
    with (
        pytest.raises(HttpCassetteNotFoundError, match="record_mode='once'"),
        use_http_cassette(tmp_path / "none.yaml"),
    ):
        pass


def test_record_then_replay(tmp_path: Path) -> None:
    """Recording goes through vcrpy (here in front of a mock transport, not the network); the file
    is stock vcrpy YAML without the API key, and replays through the real HTTP transport."""
    answer = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "t",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
            }
        ],
    }
    mock = httpx2.Client(
        transport=httpx2.MockTransport(lambda request: httpx2.Response(200, json=answer))
    )
    recording = OpenAIProvider(
        client=openai.OpenAI(api_key="sk-secret", max_retries=0, http_client=mock), model="m"
    )
    path = tmp_path / "session.yaml"
    with use_http_cassette(path, record_mode="once"):
        recording.infer(InferenceRequest(messages=Messages.from_text("hi")))
    text = path.read_text()
    assert "interactions:" in text
    assert "sk-secret" not in text
    with use_http_cassette(path) as cassette:
        response = openai_provider(model="m").infer(
            InferenceRequest(messages=Messages.from_text("hi"))
        )
    assert response.tool_calls == (ToolCall(id="t", name="f"),)
    assert cassette.play_count == 1


# --- pytest-recording and the network block, through pytester --------------------------------


def test_pytest_recording_replays_with_the_documented_setup(
    pytester: pytest.Pytester, real_cassette: Callable[[str], Path]
) -> None:
    pytest.importorskip("pytest_recording")
    path = real_cassette(PYDANTIC_OPENAI)
    pytester.makeconftest(
        """
        import pytest
        from agentrig.harness.cassettes import http as http_cassettes

        def pytest_recording_configure(config, vcr):
            http_cassettes.configure_vcr(vcr, ignore=["strict"])

        @pytest.fixture(scope="module")
        def vcr_config():
            return http_cassettes.vcr_config()
        """
    )
    pytester.makepyfile(
        f"""
        import pytest
        from agentrig import InferenceRequest, Message, Messages, ToolSchema
        from agentrig.drivers import OpenAIProvider

        @pytest.mark.vcr({str(path)!r})
        def test_replay(vcr):
            provider = OpenAIProvider(api_key="sk", model="gpt-4.1-mini", max_retries=0)
            messages = Messages.of(Message.system("You are a helpful assistant."), Message.user("What is the temperature in Tokyo?"))
            tool = ToolSchema(name="get_temperature", parameters={TEMPERATURE_TOOL.parameters!r})
            response = provider.infer(InferenceRequest(messages=messages, tools=(tool,)))
            assert str(response.tool_calls[0]) == "get_temperature(city='Tokyo')"
            assert vcr.play_count == 1
        """
    )
    pytester.runpytest("--record-mode=none", "-p", "no:cacheprovider").assert_outcomes(passed=1)


RECORDING_CONFTEST = """
import pytest
from agentrig.harness.cassettes import http as http_cassettes

def pytest_recording_configure(config, vcr):
    http_cassettes.configure_vcr(vcr)

@pytest.fixture(scope="module")
def vcr_config():
    return http_cassettes.vcr_config()
"""


def test_a_miss_the_agent_loop_swallowed_fails_a_pytest_recording_test(
    pytester: pytest.Pytester,
) -> None:
    """Without it, a test that checks little passes with a run that never got an answer."""
    pytest.importorskip("pytest_recording")
    pytester.makeconftest(RECORDING_CONFTEST)
    pytester.makepyfile(
        """
        import pytest
        from agentrig import AgentBuilder, AgentState, UseLlmConfig
        from agentrig.drivers import OpenAIProvider

        @pytest.mark.vcr
        def test_no_cassette_yet():
            provider = OpenAIProvider(api_key="sk", model="gpt-4o-mini", max_retries=0)
            agent = AgentBuilder.base().with_capability(UseLlmConfig(provider)).build()
            final = agent.execute(AgentState().with_user_message("Hi"))
            assert final.status().value == "failed"  # the test checks nothing else

        def test_without_a_cassette_is_left_alone():
            assert True
        """
    )
    result = pytester.runpytest("--record-mode=none", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    output = result.stdout.str()
    assert "1 request(s) matched no recorded interaction of" in output
    assert "test_no_cassette_yet.yaml" in output
    assert "the cassette doesn't exist" in output


BLOCKED_TESTS = """
import pytest
from agentrig import AgentBuilder, AgentState, InferenceRequest, Messages, ProviderError, RealLlmCallBlockedError, UseLlmConfig
from agentrig.drivers import OpenAIProvider


def provider():
    return OpenAIProvider(api_key="sk", base_url="http://llm.invalid:9/v1", model="m", max_retries=0)

def test_direct_call_is_blocked():
    with pytest.raises(RealLlmCallBlockedError, match="agentrig_real_llm"):
        provider().infer(InferenceRequest(messages=Messages.from_text("hi")))

def test_a_call_the_loop_swallowed_still_fails_the_test():
    agent = AgentBuilder.base().with_capability(UseLlmConfig(provider())).build()
    final = agent.execute(AgentState().with_user_message("hi"))
    assert final.has_errors()

@pytest.mark.agentrig_real_llm
def test_allowed_calls_reach_the_network():
    with pytest.raises(ProviderError, match="could not reach") as raised:
        provider().infer(InferenceRequest(messages=Messages.from_text("hi")))
    assert not isinstance(raised.value, RealLlmCallBlockedError)
"""


def test_real_llm_calls_are_blocked_unless_the_test_allows_them(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(BLOCKED_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    # Every blocked attempt fails its test at teardown, even when the error was caught.
    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_direct_call_is_blocked*",
            "real openai call to http://llm.invalid:9/v1/chat/completions blocked (1 in all)*",
            "*ERROR at teardown of test_a_call_the_loop_swallowed_still_fails_the_test*",
        ]
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda: OpenAIProvider(api_key="sk", base_url="http://llm.invalid:9/v1", model="m"),
        lambda: AnthropicProvider(api_key="sk", base_url="http://llm.invalid:9", model="m"),
    ],
    ids=["openai", "anthropic"],
)
def test_a_blocked_call_fails_at_once_without_sdk_retries(
    make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("anthropic")
    from agentrig.harness.cassettes.network_block import block_real_llm_calls

    sleeps: list[float] = []
    monkeypatch.setattr("time.sleep", sleeps.append)
    provider = make()  # the SDKs' default max_retries (2) stays on
    with block_real_llm_calls() as blocker, pytest.raises(RealLlmCallBlockedError):
        provider.infer(InferenceRequest(messages=Messages.from_text("hi")))
    assert len(blocker.blocked) == 1
    assert sleeps == []


# --- hostile cassette files ---------------------------------------------------------------

_GOOD_REQUEST = "method: POST\n    uri: https://api.openai.com/v1/chat/completions\n    body: '{}'"
_GOOD_RESPONSE = "status: {code: 200, message: OK}\n    headers: {}\n    body: {string: '{}'}"


def _cassette(request: str = _GOOD_REQUEST, response: str = _GOOD_RESPONSE) -> str:
    return f"interactions:\n- request:\n    {request}\n  response:\n    {response}\nversion: 1\n"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("interactions:\n- request: [1]\n  response: {}\n", "request: expected a mapping"),
        ("interactions:\n- request: {}\n  response: []\n", "request: method must be text"),
        (_cassette(_GOOD_REQUEST + "\n    headers: {A: []}"), "request headers A: expected a"),
        (_cassette(_GOOD_REQUEST + "\n    headers: [a]"), "request headers: expected a mapping"),
        (_cassette(_GOOD_REQUEST + "\n    headers: {1: [a]}"), "header names must be text"),
        (_cassette(_GOOD_REQUEST + "\n    extra: 1"), "unknown key 'extra'"),
        (_cassette("method: 1\n    uri: u"), "method must be text"),
        (_cassette(_GOOD_REQUEST.replace("'{}'", "[1]")), "body: expected text or binary"),
        (_cassette(response="status: 200"), "status: expected a mapping"),
        (_cassette(response="status: {code: x, message: OK}"), "code must be an HTTP status"),
        (_cassette(response="status: {code: 200, message: 1}"), "message must be text"),
        (_cassette(response="status: {code: 200, message: OK}\n    body: 1"), "body: expected a"),
        (
            _cassette(response="status: {code: 200, message: OK}\n    body: {string: [1]}"),
            "body string: expected text",
        ),
        (
            _cassette(response="status: {code: 200, message: OK}\n    headers: {A: 1}"),
            "response headers A: expected a non-empty list",
        ),
        (
            _cassette(_GOOD_REQUEST.replace("body: '{}'", "parsed_body: !!binary AAAA")),
            "parsed_body: not JSON data",
        ),
        (_cassette().replace("version: 1", "version: " + "[" * 150 + "]" * 150), "nested"),
        (_cassette().replace("version: 1", "x: !!int 0x"), "invalid"),
    ],
)
def test_every_malformed_part_of_a_cassette_is_a_file_error(
    tmp_path: Path, text: str, reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        http_cassettes.deserialize(text)
    path = tmp_path / "malformed.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(HttpCassetteFileError, match=reason) as raised, use_http_cassette(path):
        pass
    assert raised.value.path == str(path)


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path: Path, bounded: Any) -> None:
    lines = ["a0: &a0 [x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, 22)]  # 4 million
    bomb = _cassette(_GOOD_REQUEST.replace("body: '{}'", "parsed_body: {b: *a21}"))
    text = "\n".join(lines) + "\n" + bomb
    with pytest.raises(ValueError, match="aliases expand"):
        bounded(lambda: http_cassettes.deserialize(text))


@pytest.mark.parametrize("mode", ["once", "new_episodes", "none"])
def test_a_cassette_with_a_non_utf8_byte_is_an_error_never_a_reason_to_record(
    tmp_path: Path, mode: str
) -> None:
    path = tmp_path / "damaged.yaml"
    path.write_bytes(_cassette().encode().replace(b"OK", b"O\xff"))
    with (
        pytest.raises(HttpCassetteFileError, match=r"not UTF-8 text \(byte 0xff on line 7\)"),
        use_http_cassette(path, record_mode=mode),
    ):
        pass
    assert b"\xff" in path.read_bytes()  # left as it was


def test_a_well_formed_cassette_of_the_same_shape_loads(tmp_path: Path) -> None:
    path = tmp_path / "good.yaml"
    path.write_text(_cassette(), encoding="utf-8")
    with use_http_cassette(path, check_all_played=False) as cassette:
        assert len(cassette) == 1


@pytest.mark.parametrize("tag", ["!!timestamp", "!!int", "!!bool", "!!float"])
def test_a_tagged_value_that_does_not_parse_is_a_value_error(tag: str) -> None:
    with pytest.raises(ValueError, match="invalid YAML value"):
        http_cassettes.deserialize(f"{tag} x\n")


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.53", "localhost", "[::1]"])
def test_a_call_to_this_machine_is_not_blocked(host: str) -> None:
    # agentrig serve, or a model server on the machine: no real LLM API, nothing spent
    from agentrig.harness.cassettes.network_block import block_real_llm_calls

    provider = OpenAIProvider(
        api_key="sk", base_url=f"http://{host}:9/v1", model="m", max_retries=0
    )
    with block_real_llm_calls() as blocker, pytest.raises(ProviderError) as raised:
        provider.infer(InferenceRequest(messages=Messages.from_text("hi")))
    assert blocker.blocked == []
    assert not isinstance(raised.value, RealLlmCallBlockedError)  # refused by the port, not us


WEATHER_SCENARIO = """\
name: weather
agent:
  system_prompt: You answer weather questions.
  tools:
    get_weather:
      params: {city: string}
      replies: [{return: "sunny, 21C"}]
turns:
  - user: What is the weather in Paris?
    model:
      - call: get_weather(city=Paris)
      - say: It is sunny in Paris.
"""

WEATHER_AGENT = '''
import agentrig as ar
from agentrig.drivers import OpenAIProvider


@ar.tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return "sunny, 21C"


def ask(question: str) -> ar.AgentState:
    provider = OpenAIProvider(model="gpt-4.1-mini", api_key="sk-placeholder", max_retries=0)
    agent = (
        ar.AgentBuilder.base()
        .with_tools([get_weather])
        .with_capability(ar.UseLlmConfig(provider))
        .with_capability(ar.UseContextConfig("You answer weather questions."))
        .build()
    )
    return agent.execute(agent.new_state(question))
'''


def test_a_cassette_recorded_from_the_endpoint_needs_no_key_and_a_miss_hides_agentrigs_frames(
    pytester: pytest.Pytester,
) -> None:
    from agentrig.harness.cassettes.network_block import block_real_llm_calls
    from agentrig.harness.endpoint.handle import EndpointHandle

    pytester.path.joinpath("weather.scenario.yaml").write_text(WEATHER_SCENARIO, encoding="utf-8")
    agent_module = pytester.makepyfile(http_cassette_weather_agent=WEATHER_AGENT)
    namespace: dict[str, Any] = {}
    exec(compile(agent_module.read_text(encoding="utf-8"), str(agent_module), "exec"), namespace)
    cassette = pytester.path / "weather.yaml"
    # Recording: the endpoint plays the model, no request leaves the machine (the block is on).
    with (
        block_real_llm_calls() as blocker,
        EndpointHandle(pytester.path / "weather.scenario.yaml") as endpoint,
        endpoint.intercept(),
        use_http_cassette(cassette, record_mode="once"),
    ):
        state = namespace["ask"]("What is the weather in Paris?")
    assert state.final_response().to_text() == "It is sunny in Paris."
    assert blocker.blocked == []
    assert endpoint.check().passed
    pytester.makepyfile(
        test_replay=f"""
        from agentrig.harness.cassettes.http import use_http_cassette
        from http_cassette_weather_agent import ask

        def test_replayed():
            with use_http_cassette({str(cassette)!r}):
                assert ask("What is the weather in Paris?").final_response().to_text() == (
                    "It is sunny in Paris."
                )

        def test_a_miss():
            with use_http_cassette({str(cassette)!r}):
                ask("What is the weather in Oslo?")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    output = result.stdout.str()
    assert "HttpCassetteMismatchError" in output
    assert "matched no recorded interaction" in output
    assert "cassettes/http.py" not in output  # agentrig's own frames are hidden
    assert "contextlib.py" not in output


def test_a_miss_is_reported_even_when_unplayed_recordings_are_allowed(
    real_cassette: Callable[[str], Path],
) -> None:
    """check_all_played=False forgives recordings the code did not ask for, never a request the
    cassette could not answer."""
    provider = openai_provider(model="gpt-4.1-mini")
    with (
        pytest.raises(HttpCassetteMismatchError, match="matched no recorded interaction"),
        use_http_cassette(
            real_cassette(PYDANTIC_OPENAI), ignore=["strict"], check_all_played=False
        ),
        pytest.raises(ProviderError),  # swallowed, as the agent loop does
    ):
        provider.infer(weather_request("What is the temperature in Oslo?"))


@pytest.mark.parametrize("mode", ["once", "new_episodes", "all", "none"])
def test_a_cassette_path_that_is_not_a_regular_file_is_refused_and_kept(
    tmp_path: Path, mode: str, bounded: Any
) -> None:
    """A FIFO was "absent": replay said it did not exist, and recording blocked writing it."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)

    def replay() -> None:
        with use_http_cassette(fifo, record_mode=mode):
            pass

    with pytest.raises(HttpCassetteFileError, match="not a regular file: it is a FIFO"):
        bounded(replay)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_cassette_larger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)
    with (
        pytest.raises(HttpCassetteFileError, match=f"larger than {MAX_FILE_BYTES} bytes"),
        use_http_cassette(path),
    ):
        pass


POPULATION = {
    "properties": {"country": {"type": "string"}},
    "required": ["country"],
    "type": "object",
}
DRAGONS = {
    "properties": {"population": {"type": "integer"}},
    "required": ["population"],
    "type": "object",
}


def test_tools_declared_exactly_as_recorded_replay_another_clients_session(
    real_cassette: Callable[[str], Path],
) -> None:
    """The session was recorded by another client, whose schemas have no additionalProperties:
    tools carrying the recorded description and schema replay it with nothing ignored."""
    from agentrig import AgentBuilder, AgentState, ExecutionStatus, FunctionTool, UseLlmConfig

    def lookup_population(country: str) -> int:
        return 123124

    def can_have_dragons(population: int) -> bool:
        return population > 10000

    tools = [
        FunctionTool(
            lookup_population,
            description="Returns the current population of the specified fictional country",
            parameters=POPULATION,
        ),
        FunctionTool(
            can_have_dragons,
            description="Returns True if the specified population can have dragons, False "
            "otherwise",
            parameters=DRAGONS,
        ),
    ]
    provider = OpenAIProvider(api_key="sk-replay", max_retries=0, model="gpt-4o-mini")
    agent = AgentBuilder.base().with_capability(UseLlmConfig(provider)).with_tools(tools).build()
    state = AgentState().with_user_message(
        "Can the country of Crumpet have dragons? Answer with only YES or NO"
    )
    with use_http_cassette(real_cassette("llm/test_tools/test_tool_use_chain_of_two_calls.yaml")):
        final = agent.execute(state)
    assert final.status() is ExecutionStatus.COMPLETED
    assert final.final_response()[-1].content == "YES"


_USER = {"role": "user", "content": "hi"}
_TWO_TOOLS = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in "fg"]
_TWO_USES = {
    "role": "assistant",
    "content": [
        {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        {"type": "tool_use", "id": "t2", "name": "f", "input": {}},
    ],
}


def _result_of(call_id: str, content: Any = "ok") -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    return {"role": "user", "content": [block]}


@pytest.mark.parametrize(
    ("sent", "recorded", "message"),
    [
        (chat(_USER), chat(_USER, stream=True), "stream: sent False, recorded True"),
        (
            chat(_USER, {"role": "tool", "tool_call_id": "c1", "content": "1"}),
            chat(_USER, {"role": "tool", "tool_call_id": "c1", "content": "2"}),
            "conversation item 2: sent ('tool_result', '#1', '1'), recorded "
            "('tool_result', '#1', '2')",
        ),
        (
            chat(_USER, _TWO_USES, _result_of("t1", [{"type": "text", "text": "one"}])),
            chat(_USER, _TWO_USES, _result_of("t1", [{"type": "text", "text": "two"}])),
            "conversation item 4: sent ('tool_result', '#1', 'one'), recorded "
            "('tool_result', '#1', 'two')",
        ),
        (
            chat(_USER, _TWO_USES, _result_of("t2")),
            chat(_USER, _TWO_USES, _result_of("t1")),
            "conversation item 4: sent ('tool_result', '#2', 'ok'), recorded "
            "('tool_result', '#1', 'ok')",
        ),
        (
            chat(
                _USER, tools=_TWO_TOOLS, tool_choice={"type": "function", "function": {"name": "f"}}
            ),
            chat(
                _USER, tools=_TWO_TOOLS, tool_choice={"type": "function", "function": {"name": "g"}}
            ),
            "tool_choice: sent 'f', recorded 'g' (not compared with ignore=['tool_choice'])",
        ),
        (
            chat(_USER, thinking={"type": "enabled", "budget_tokens": 100}),
            chat(_USER, thinking={"type": "enabled", "budget_tokens": 200}),
            "thinking: sent {'thinking': {'type': 'enabled', 'budget_tokens': 100}}, recorded "
            "{'thinking': {'type': 'enabled', 'budget_tokens': 200}} (not compared with "
            "ignore=['thinking'])",
        ),
    ],
    ids=[
        "stream",
        "tool-message",
        "result-blocks",
        "result-of-another-call",
        "tool-choice",
        "thinking",
    ],
)
def test_the_matcher_says_in_full_what_differs(
    sent: dict[str, Any], recorded: dict[str, Any], message: str
) -> None:
    with pytest.raises(AssertionError) as raised:
        llm_request(Req(sent), Req(recorded))

    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "interactions:\n- request: null\n  response: {}\n",
            "interaction 1 request: expected a mapping, got null",
        ),
        (
            "interactions:\n- request: {}\n  response: []\n",
            "interaction 1 request: method must be text, got null",
        ),
    ],
)
def test_a_broken_interaction_is_named_with_what_it_holds(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="interaction 1 request") as raised:
        http_cassettes.deserialize(text)

    assert str(raised.value) == message


def test_a_cassette_that_cannot_be_read_is_reported_without_agentrigs_frames(
    pytester: pytest.Pytester,
) -> None:
    broken = pytester.path / "broken.yaml"
    broken.write_text("interactions: [\n", encoding="utf-8")
    pytester.makepyfile(
        test_broken=f"""
        from agentrig.harness.cassettes.http import use_http_cassette

        def test_entering():
            with use_http_cassette({str(broken)!r}):
                pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "broken.yaml" in output
    assert "cassettes/http.py" not in output  # raised entering: agentrig's frames hidden
    assert "contextlib.py" not in output
