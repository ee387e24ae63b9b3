"""``AnthropicProvider``: Messages API mapping against a mock transport, then replays of real
recorded sessions (plain and streamed with parallel tool uses) through the full agent loop."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentrig import (
    AgentState,
    ConfigurationError,
    FinishReason,
    InferenceRequest,
    LlmConfig,
    Message,
    Messages,
    MissingDependencyError,
    ProviderError,
    ToolCall,
    ToolResult,
    ToolSchema,
    Usage,
    tool,
)
from agentrig.drivers import AnthropicProvider

anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")
http_cassettes = pytest.importorskip("agentrig.harness.http_cassettes")


class FakeServer:
    """An ``httpx2.MockTransport`` answering each request with the next canned response."""

    def __init__(self, *responses: Any) -> None:
        self.responses = list(responses)
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: Any) -> Any:
        self.bodies.append(json.loads(request.content))
        return self.responses.pop(0)

    def provider(self, **options: Any) -> AnthropicProvider:
        client = anthropic.Anthropic(
            api_key="sk-test",
            base_url="https://llm.test",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(self)),
        )
        return AnthropicProvider(client=client, model="claude-test", **options)


def message(*content: dict[str, Any], stop: str | None = "end_turn", **usage: int) -> Any:
    return httpx2.Response(
        200,
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test-1",
            "content": list(content),
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5, **usage},
        },
    )


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def sse(*events: dict[str, Any]) -> Any:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return httpx2.Response(
        200, content=body.encode(), headers={"content-type": "text/event-stream"}
    )


# --- request mapping ------------------------------------------------------------------------


def test_a_conversation_becomes_alternating_turns_with_tool_result_blocks() -> None:
    server = FakeServer(message(text("done")))
    calls = [
        ToolCall(id="t1", name="lookup", arguments={"q": "a"}),
        ToolCall(id="t2", name="lookup", arguments={"q": "b"}),
    ]
    messages = Messages.of(
        Message.system("Be brief."),
        Message.user("Look up a and b"),
        Message.assistant(" ", calls),
        Message.tool(ToolResult(content="A", call_id="t1", tool_name="lookup")),
        Message.tool(
            ToolResult(
                content="Error in tool call: boom", call_id="t2", tool_name="lookup", is_error=True
            )
        ),
        Message.user("and?"),
    )
    schema = ToolSchema(
        name="lookup",
        description="Look up.",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
    )
    request = InferenceRequest(
        messages=messages,
        tools=(schema,),
        tool_choice="required",
        llm_config=LlmConfig(temperature=0.5, max_output_tokens=100, options={"top_k": 3}),
    )
    server.provider().infer(request)
    body = server.bodies[0]
    assert body["system"] == "Be brief."
    assert body["messages"] == [
        {"role": "user", "content": [text("Look up a and b")]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": "a"}},
                {"type": "tool_use", "id": "t2", "name": "lookup", "input": {"q": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": "Error in tool call: boom",
                    "is_error": True,
                },
                text("and?"),
            ],
        },
    ]
    assert body["tools"] == [
        {"name": "lookup", "description": "Look up.", "input_schema": schema.parameters}
    ]
    assert body["tool_choice"] == {"type": "any"}
    assert (body["model"], body["max_tokens"], body["temperature"], body["top_k"]) == (
        "claude-test",
        100,
        0.5,
        3,
    )


def test_max_tokens_is_always_sent_and_a_schema_becomes_an_output_format() -> None:
    server = FakeServer(message(text("{}")))
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    request = InferenceRequest(
        messages=Messages.from_text("hi"),
        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
    )
    server.provider(max_tokens=321).infer(request)
    body = server.bodies[0]
    assert body["max_tokens"] == 321
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    assert "system" not in body


def test_a_model_is_required() -> None:
    with pytest.raises(ConfigurationError, match="needs a model"):
        AnthropicProvider(client=object()).infer(InferenceRequest())


def test_the_sdk_is_an_optional_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'agentrig\[anthropic\]'"):
        AnthropicProvider(model="m")


# --- response mapping -----------------------------------------------------------------------


def test_an_answer_maps_text_tool_uses_usage_and_stop_reason() -> None:
    server = FakeServer(
        message(
            text("Checking."),
            {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": "a"}},
            stop="tool_use",
            cache_read_input_tokens=20,
            cache_creation_input_tokens=3,
        )
    )
    response = server.provider().infer(InferenceRequest(messages=Messages.from_text("x")))
    assert response.content == "Checking."
    assert response.tool_calls == (ToolCall(id="t1", name="lookup", arguments={"q": "a"}),)
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.usage == Usage(
        input_tokens=33, output_tokens=5, cache_read_tokens=20, cache_write_tokens=3
    )
    assert (response.model, response.response_id) == ("claude-test-1", "msg_1")


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("max_tokens", FinishReason.LENGTH),
        ("refusal", FinishReason.CONTENT_FILTER),
        ("pause_turn", FinishReason.OTHER),
        ("stop_sequence", FinishReason.STOP),
    ],
)
def test_stop_reasons(stop: str, finish: FinishReason) -> None:
    server = FakeServer(message(text("x"), stop=stop))
    assert server.provider().infer(InferenceRequest()).finish_reason is finish


def test_a_stream_joins_input_json_deltas_per_block() -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "c",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 7, "output_tokens": 1},
        },
    }

    def tool_start(index: int, call_id: str) -> dict[str, Any]:
        return {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "tool_use", "id": call_id, "name": "lookup", "input": {}},
        }

    def json_part(index: int, part: str) -> dict[str, Any]:
        return {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": part},
        }

    server = FakeServer(
        sse(
            start,
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "On it."},
            },
            tool_start(1, "t1"),
            tool_start(2, "t2"),
            json_part(1, '{"q": '),
            json_part(2, '{"q": "b"}'),
            json_part(1, '"a"}'),
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 30},
            },
            {"type": "message_stop"},
        )
    )
    response = server.provider(stream=True).infer(
        InferenceRequest(messages=Messages.from_text("x"))
    )
    assert server.bodies[0]["stream"] is True
    assert response.content == "On it."
    assert response.tool_calls == (
        ToolCall(id="t1", name="lookup", arguments={"q": "a"}),
        ToolCall(id="t2", name="lookup", arguments={"q": "b"}),
    )
    assert response.usage == Usage(input_tokens=7, output_tokens=30)
    assert response.finish_reason is FinishReason.TOOL_CALLS


@pytest.mark.parametrize(("status", "retryable"), [(401, False), (429, True), (529, True)])
def test_http_errors_become_provider_errors(status: int, retryable: bool) -> None:
    reply = httpx2.Response(
        status, json={"type": "error", "error": {"type": "x", "message": "nope"}}
    )
    with pytest.raises(ProviderError) as raised:
        FakeServer(reply).provider().infer(InferenceRequest())
    assert (raised.value.status_code, raised.value.retryable, raised.value.provider) == (
        status,
        retryable,
        "anthropic",
    )


# --- replays of real recorded sessions --------------------------------------------------------


@tool
def country_source() -> str:
    return "Japan"


@tool
def capital_lookup(country: str) -> str:
    return {"Japan": "Tokyo"}[country]


@pytest.fixture
def pelican_name_generator() -> Iterator[Callable[[], str]]:
    names = iter(["Charles", "Sammy"])

    @tool
    def pelican_name_generator() -> str:
        return next(names)

    return pelican_name_generator


def calls_of(state: AgentState) -> list[list[str]]:
    return [[str(call) for call in step.inference_response.tool_calls] for step in state.steps()]


@pytest.mark.filterwarnings("ignore:The model 'claude-sonnet-4-5' is deprecated:DeprecationWarning")
def test_replay_a_chain_with_text_before_the_tool_use(
    real_cassette: Callable[[str], Any], run_agent: Callable[..., AgentState]
) -> None:
    path = real_cassette("pydantic-ai/test_anthropic/test_anthropic_mixed_strict_tool_run.yaml")
    provider = AnthropicProvider(api_key="sk-replay", model="claude-sonnet-4-5", max_retries=0)
    system = "Always call `country_source` first, then call `capital_lookup` with that result before replying."
    with http_cassettes.use_http_cassette(path) as cassette:
        final = run_agent(
            provider,
            "Use the registered tools and respond exactly as `Capital: <city>`.",
            [country_source, capital_lookup],
            system=system,
        )
    assert final.errors() == ()
    assert calls_of(final) == [["country_source()"], ["capital_lookup(country='Japan')"], []]
    assert (
        final.steps()[0].inference_response.content
        == "I'll help you find the capital city using the available tools."
    )
    assert final.final_response().to_text() == "Capital: Tokyo"
    assert (final.usage().input_tokens, final.usage().output_tokens) == (
        628 + 691 + 757,
        50 + 53 + 6,
    )
    assert cassette.play_count == 3


def test_replay_a_gzip_stream_with_two_parallel_tool_uses(
    real_cassette: Callable[[str], Any],
    run_agent: Callable[..., AgentState],
    pelican_name_generator: Callable[[], str],
) -> None:
    path = real_cassette("llm-anthropic/test_anthropic/test_tools.yaml")
    provider = AnthropicProvider(
        api_key="sk-replay",
        model="claude-haiku-4-5-20251001",
        max_tokens=8192,
        max_retries=0,
        stream=True,
    )
    with http_cassettes.use_http_cassette(path) as cassette:
        final = run_agent(
            provider,
            "Two names for a pet pelican",
            [pelican_name_generator],
            llm_config=LlmConfig(temperature=1.0),
        )
    first = final.steps()[0]
    assert [call.id for call in first.inference_response.tool_calls] == [
        "toolu_01LtHJmixrs9NcWQkK8hu8hj",
        "toolu_01N8a4jWyf116qKTMqKKmjyt",
    ]
    assert [execution.content for execution in first.tool_executions] == ["Charles", "Sammy"]
    answer = final.final_response().to_text()
    assert answer.startswith("Here are two great names for your pet pelican:")
    assert "**Charles**" in answer
    assert "**Sammy**" in answer
    assert [step.inference_response.finish_reason for step in final.steps()] == [
        FinishReason.TOOL_CALLS,
        FinishReason.STOP,
    ]
    assert (final.usage().input_tokens, final.usage().output_tokens) == (542 + 678, 62 + 82)
    assert cassette.play_count == 2


# --- answers that are not what was asked for ------------------------------------------------


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Any:
    """No Anthropic credential anywhere the SDK looks; returns ``monkeypatch``."""
    for variable in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_PROFILE",
        "ANTHROPIC_CONFIG_DIR",
        "ANTHROPIC_IDENTITY_TOKEN",
        "ANTHROPIC_IDENTITY_TOKEN_FILE",
        "XDG_CONFIG_HOME",
    ):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return monkeypatch


def test_a_missing_api_key_says_how_to_set_it(no_credentials: Any) -> None:
    server = FakeServer(message(text("x")))
    client = anthropic.Anthropic(
        base_url="https://llm.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(server)),
    )
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY") as raised:
        AnthropicProvider(client=client, model="m").infer(InferenceRequest())
    assert not raised.value.retryable


def test_a_client_that_cannot_be_built_is_a_configuration_error(
    no_credentials: Any, tmp_path: Any
) -> None:
    no_credentials.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path))
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider(model="m")


def test_an_html_page_instead_of_json_says_to_check_base_url() -> None:
    page = httpx2.Response(
        200, content=b"<html>Welcome</html>", headers={"content-type": "text/html"}
    )
    with pytest.raises(ProviderError, match="base_url"):
        FakeServer(page).provider().infer(InferenceRequest())


def test_an_error_body_is_reported_by_its_message() -> None:
    reply = httpx2.Response(
        400, json={"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
    )
    with pytest.raises(ProviderError) as raised:
        FakeServer(reply).provider().infer(InferenceRequest())
    assert "HTTP 400: bad (invalid_request_error)" in str(raised.value)


def stream_start() -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "m1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 1},
        },
    }


@pytest.mark.parametrize(
    ("kind", "retryable"), [("overloaded_error", True), ("invalid_request_error", False)]
)
def test_an_error_event_in_a_stream_is_retryable_when_the_server_failed(
    kind: str, retryable: bool
) -> None:
    reply = sse(stream_start(), {"type": "error", "error": {"type": kind, "message": "Overloaded"}})
    with pytest.raises(ProviderError, match="Overloaded") as raised:
        FakeServer(reply).provider(stream=True).infer(InferenceRequest())
    assert raised.value.retryable is retryable
    assert raised.value.status_code is None
    assert "HTTP 200" not in str(raised.value)


class _Dropped(httpx2.SyncByteStream):
    def __init__(self, error: Exception) -> None:
        self.error = error

    def __iter__(self) -> Iterator[bytes]:
        yield f"event: message_start\ndata: {json.dumps(stream_start())}\n\n".encode()
        raise self.error


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (httpx2.RemoteProtocolError("peer closed connection"), "peer closed connection"),
        (httpx2.ReadTimeout("timed out"), "timed out"),
    ],
)
def test_a_stream_cut_off_midway_is_retryable(error: Exception, says: str) -> None:
    reply = httpx2.Response(
        200, stream=_Dropped(error), headers={"content-type": "text/event-stream"}
    )
    with pytest.raises(ProviderError, match=says) as raised:
        FakeServer(reply).provider(stream=True).infer(InferenceRequest())
    assert raised.value.retryable


def test_a_stream_without_any_event_is_an_error_not_an_empty_answer() -> None:
    with pytest.raises(ProviderError, match="stream=False"):
        FakeServer(message(text("hello"))).provider(stream=True).infer(InferenceRequest())


def test_cost_uses_the_requested_model_when_the_answer_names_none() -> None:
    from agentrig.drivers import ModelPrice, PriceTable

    reply = httpx2.Response(
        200,
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "",
            "content": [text("x")],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 0, "output_tokens": 1_000_000},
        },
    )
    prices = PriceTable({"claude-test": ModelPrice(input=3.0, output=15.0)})
    response = FakeServer(reply).provider(prices=prices).infer(InferenceRequest())
    assert response.usage.cost == pytest.approx(15.0)


def test_a_long_unstreamed_request_says_to_stream() -> None:
    request = InferenceRequest(llm_config=LlmConfig(max_output_tokens=128_000))
    with pytest.raises(ProviderError, match="stream=True"):
        FakeServer(message(text("x"))).provider().infer(request)
