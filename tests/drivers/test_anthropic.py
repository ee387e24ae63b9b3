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
    InvalidInputError,
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
from agentrig.drivers import AnthropicProvider, Delta

anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")
http_cassettes = pytest.importorskip("agentrig.harness.cassettes.http")

FOREIGN = ("tools", "strict")
"""What the real cassettes, recorded by other frameworks, send differently from agentrig: tool
schemas (descriptions, ``additionalProperties``, ``strict``); the replays do not compare them."""


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


def stream_end(stop: str, *, output_tokens: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


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
    with pytest.raises(MissingDependencyError, match=r"pip install '\./agentrig\[anthropic\]'"):
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
            *stream_end("tool_use", output_tokens=30),
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
    with http_cassettes.use_http_cassette(path, ignore=FOREIGN) as cassette:
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
    with http_cassettes.use_http_cassette(path, ignore=FOREIGN) as cassette:
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


def test_no_api_key_anywhere_is_a_configuration_error_when_the_provider_is_built(
    no_credentials: Any,
) -> None:
    # The SDK builds a client without credentials (it fails only when it sends); the provider
    # refuses at once, as OpenAIProvider does, naming the variable to set.
    with pytest.raises(ConfigurationError, match=r"no API key.*ANTHROPIC_API_KEY"):
        AnthropicProvider(model="m")


@pytest.mark.parametrize(
    "credential",
    [
        {"ANTHROPIC_API_KEY": "sk-ant-test"},
        {"ANTHROPIC_AUTH_TOKEN": "token"},
        {"ANTHROPIC_CUSTOM_HEADERS": "x-api-key: from-a-header"},
    ],
)
def test_any_credential_the_sdk_takes_lets_the_provider_build(
    no_credentials: Any, credential: dict[str, str]
) -> None:
    for name, value in credential.items():
        no_credentials.setenv(name, value)
    assert AnthropicProvider(model="m").client is not None


def test_an_api_key_passed_needs_no_environment(no_credentials: Any) -> None:
    assert AnthropicProvider(model="m", api_key="sk-ant-test").client.api_key == "sk-ant-test"


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


# --- extended thinking ----------------------------------------------------------------------

THOUGHT = {"type": "thinking", "thinking": "Tokyo is the capital.", "signature": "EqQBsig=="}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
LOOKUP = {"type": "tool_use", "id": "t1", "name": "capital_lookup", "input": {"country": "Japan"}}
THINKING_ON = LlmConfig(
    max_output_tokens=2048, options={"thinking": {"type": "enabled", "budget_tokens": 1024}}
)


def thinking_answer() -> Any:
    return message(THOUGHT, REDACTED, text("Looking it up."), LOOKUP, stop="tool_use")


def test_an_answer_keeps_its_thinking_blocks_whole_and_in_order() -> None:
    server = FakeServer(thinking_answer())
    response = server.provider().infer(InferenceRequest(messages=Messages.from_text("x")))
    assert response.provider_data == {
        "stop_reason": "tool_use",
        "anthropic_thinking": [THOUGHT, REDACTED],
    }
    assert response.reasoning_content == "Tokyo is the capital."
    assert response.content == "Looking it up."
    assert response.tool_calls == (
        ToolCall(id="t1", name="capital_lookup", arguments={"country": "Japan"}),
    )


def thinking_stream() -> Any:
    def delta(index: int, **part: str) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": part}

    def begin(index: int, block: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_start", "index": index, "content_block": block}

    return sse(
        stream_start(),
        begin(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, type="thinking_delta", thinking="Tokyo is "),
        delta(0, type="thinking_delta", thinking="the capital."),
        delta(0, type="signature_delta", signature="EqQBsig=="),
        {"type": "content_block_stop", "index": 0},
        begin(1, REDACTED),
        {"type": "content_block_stop", "index": 1},
        begin(2, text("")),
        delta(2, type="text_delta", text="Looking it up."),
        begin(3, {**LOOKUP, "input": {}}),
        delta(3, type="input_json_delta", partial_json='{"country": "Japan"}'),
        *stream_end("tool_use", output_tokens=40),
    )


def test_a_streamed_answer_assembles_thinking_and_signature_deltas_per_block() -> None:
    server = FakeServer(thinking_stream())
    streamed = server.provider(stream=True).infer(
        InferenceRequest(messages=Messages.from_text("x"))
    )
    whole = FakeServer(thinking_answer()).provider().infer(InferenceRequest())
    assert streamed.provider_data == whole.provider_data
    assert streamed.reasoning_content == whole.reasoning_content == "Tokyo is the capital."
    assert (streamed.content, streamed.tool_calls) == (whole.content, whole.tool_calls)


def test_a_streamed_answer_hands_out_its_thinking_as_reasoning_pieces_before_the_text(
    drained: Callable[..., tuple[list[Delta], Any]],
) -> None:
    handed, response = drained(
        FakeServer(thinking_stream())
        .provider(stream=True)
        .infer_stream(InferenceRequest(messages=Messages.from_text("x")))
    )
    assert [d.reasoning for d in handed if d.reasoning] == ["Tokyo is ", "the capital."]
    first_text = next(n for n, d in enumerate(handed) if d.text)
    assert all(d.reasoning == "" for d in handed[first_text:])  # the redacted block gives none
    assert response.reasoning_content == "Tokyo is the capital."


def test_an_answer_without_thinking_keeps_only_its_stop_reason() -> None:
    response = FakeServer(message(text("hi"))).provider().infer(InferenceRequest())
    assert response.provider_data == {"stop_reason": "end_turn"}
    assert response.reasoning_content == ""


def test_the_next_step_sends_the_thinking_blocks_back_first_in_the_tool_use_turn(
    run_agent: Callable[..., AgentState],
) -> None:
    server = FakeServer(thinking_answer(), message(text("Capital: Tokyo")))
    final = run_agent(
        server.provider(), "Capital of Japan?", [capital_lookup], llm_config=THINKING_ON
    )
    assert final.errors() == ()
    assert final.final_response().to_text() == "Capital: Tokyo"
    assert server.bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert server.bodies[1]["messages"] == [
        {"role": "user", "content": [text("Capital of Japan?")]},
        {"role": "assistant", "content": [THOUGHT, REDACTED, text("Looking it up."), LOOKUP]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Tokyo"}],
        },
    ]
    assistant = final.steps()[0].output_messages[0]
    assert assistant.provider_data["anthropic_thinking"] == [THOUGHT, REDACTED]
    assert AgentState.from_json(final.to_json()) == final


def test_a_run_recorded_with_thinking_replays_the_same_run(
    run_agent: Callable[..., AgentState], tmp_path: Any
) -> None:
    cassettes = pytest.importorskip("agentrig.harness.cassettes")
    path = tmp_path / "thinking.yaml"
    server = FakeServer(thinking_answer(), message(text("Capital: Tokyo")))
    recorder = cassettes.cassette_provider(path, server.provider(), mode="once")
    recorded = run_agent(recorder, "Capital of Japan?", [capital_lookup], llm_config=THINKING_ON)
    replayer = cassettes.cassette_provider(path, mode="none")
    replayed = run_agent(replayer, "Capital of Japan?", [capital_lookup], llm_config=THINKING_ON)
    replayer.assert_complete()
    assert replayed == recorded
    assert replayed.steps()[0].output_messages[0].provider_data["anthropic_thinking"] == [
        THOUGHT,
        REDACTED,
    ]


def test_provider_data_without_thinking_does_not_change_the_request() -> None:
    plain = Message.assistant("Checking.", [ToolCall(id="t1", name="f")])
    tagged = plain.evolve(provider_data={"stop_reason": "tool_use", "other": [1]})
    provider = AnthropicProvider(client=object(), model="m")
    bodies = [
        provider.request_body(InferenceRequest(messages=Messages.of(Message.user("x"), m)))
        for m in (plain, tagged)
    ]
    assert bodies[0] == bodies[1]


@pytest.mark.parametrize(
    ("thinking", "field", "says"),
    [
        ("not blocks", "", "expected a list of thinking blocks, got str"),
        (["text"], "[0]", "expected a dict with type 'thinking' or 'redacted_thinking'"),
        ([THOUGHT, {"type": "text", "text": "t"}], "[1]", "got {'type': 'text'"),
        ([{"type": "thinking", "thinking": "t"}], "[0].signature", "needs a string signature"),
        ([{"type": "redacted_thinking", "data": 3}], "[0].data", "needs a string data"),
    ],
)
def test_malformed_thinking_blocks_name_the_message_and_field(
    thinking: Any, field: str, says: str
) -> None:
    assistant = Message.assistant("", [ToolCall(id="t1", name="f")]).evolve(
        provider_data={"anthropic_thinking": thinking}
    )
    request = InferenceRequest(
        messages=Messages.of(Message.system("s"), Message.user("x"), assistant)
    )
    provider = AnthropicProvider(client=object(), model="m")
    with pytest.raises(InvalidInputError) as raised:
        provider.request_body(request)
    assert raised.value.field == f"messages[2].provider_data.anthropic_thinking{field}"
    assert says in str(raised.value)


MALFORMED_USAGES = [
    {"input_tokens": -1},
    {"input_tokens": "ten"},
    {"output_tokens": 10**30},
    {"output_tokens": 1.5},
    {"cache_read_input_tokens": -3},
    {"cache_creation_input_tokens": "x"},
]


@pytest.mark.parametrize("usage", MALFORMED_USAGES)
def test_a_malformed_usage_is_a_provider_error(usage: dict[str, Any]) -> None:
    server = FakeServer(message(text("hi"), **usage))
    with pytest.raises(ProviderError, match="malformed usage") as raised:
        server.provider().infer(InferenceRequest(messages=Messages.from_text("hi")))
    assert raised.value.provider == "anthropic"
    assert not isinstance(raised.value, InvalidInputError)


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": None, "output_tokens": 5},
        {"input_tokens": 10, "output_tokens": None},
        [10, 5],
        7,
    ],
)
def test_a_usage_of_the_wrong_shape_is_a_provider_error(usage: Any) -> None:
    body = json.loads(message(text("hi")).content)
    body["usage"] = usage
    server = FakeServer(httpx2.Response(200, json=body))
    with pytest.raises(ProviderError, match="malformed usage") as raised:
        server.provider().infer(InferenceRequest(messages=Messages.from_text("hi")))
    assert raised.value.provider == "anthropic"


@pytest.mark.parametrize("usage", MALFORMED_USAGES)
def test_a_malformed_usage_in_a_stream_is_a_provider_error(usage: dict[str, Any]) -> None:
    end = stream_end("end_turn", output_tokens=1)
    end[0]["usage"] = {"output_tokens": 1, **usage}
    reply = sse(
        stream_start(),
        {"type": "content_block_start", "index": 0, "content_block": text("")},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        *end,
    )
    with pytest.raises(ProviderError, match="malformed usage") as raised:
        FakeServer(reply).provider(stream=True).infer(InferenceRequest())
    assert raised.value.provider == "anthropic"
    assert not isinstance(raised.value, InvalidInputError)
