"""``OpenAIProvider``: request and response mapping against a mock transport, then replays of
real recorded sessions (OpenAI and OpenRouter) through the real SDK and the full agent loop."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentState,
    ConfigurationError,
    ExecutionStatus,
    FinishReason,
    InferenceDelta,
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
    UseLlmConfig,
    tool,
)
from agentrig.drivers import ModelPrice, OpenAIProvider, PriceTable

openai = pytest.importorskip("openai")
httpx2 = pytest.importorskip("httpx2")
http_cassettes = pytest.importorskip("agentrig.harness.cassettes.http")

FOREIGN = ("tools", "strict")
"""What the real cassettes, recorded by other frameworks, send differently from agentrig: tool
schemas (descriptions, ``additionalProperties``, ``strict``); the replays do not compare them."""


Handler = Callable[[Any], Any]


class FakeServer:
    """An ``httpx2.MockTransport`` answering each request with the next canned response."""

    def __init__(self, *responses: Any) -> None:
        self.responses = list(responses)
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: Any) -> Any:
        self.bodies.append(json.loads(request.content))
        answer = self.responses.pop(0)
        return answer(request) if callable(answer) else answer

    def provider(self, **options: Any) -> OpenAIProvider:
        client = openai.OpenAI(
            api_key="sk-test",
            base_url="https://llm.test/v1",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(self)),
        )
        return OpenAIProvider(client=client, model="gpt-test", **options)


def completion(message: dict[str, Any], finish: str | None = "stop", **usage: Any) -> Any:
    return httpx2.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test-2025",
            "choices": [
                {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, **usage},
        },
    )


def sse(*chunks: dict[str, Any]) -> Any:
    lines = [
        f"data: {json.dumps({'id': 'c1', 'object': 'chat.completion.chunk', 'created': 0, 'model': 'm', **chunk})}\n\n"
        for chunk in chunks
    ]
    body = "".join(lines) + "data: [DONE]\n\n"
    return httpx2.Response(
        200, content=body.encode(), headers={"content-type": "text/event-stream"}
    )


def delta(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def text_reply(text: str = "hi") -> Any:
    return completion({"content": text})


# --- request mapping ------------------------------------------------------------------------


def test_a_whole_conversation_is_sent_as_chat_messages() -> None:
    server = FakeServer(text_reply())
    call = ToolCall(id="call_1", name="lookup", arguments={"q": "x"})
    messages = Messages.of(
        Message.system("Be brief."),
        Message.user("Look up x"),
        Message.assistant("Looking.", [call]),
        Message.tool(
            ToolResult(
                content="Error in tool call: boom",
                call_id="call_1",
                tool_name="lookup",
                is_error=True,
            )
        ),
    )
    schema = ToolSchema(
        name="lookup",
        description="Look up.",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
    )
    request = InferenceRequest(
        messages=messages,
        tools=(schema,),
        tool_choice="lookup",
        response_format={"type": "object", "title": "Answer", "properties": {}},
        llm_config=LlmConfig(
            model="gpt-custom", temperature=0.2, max_output_tokens=64, options={"seed": 7}
        ),
    )
    server.provider().infer(request)
    body = server.bodies[0]
    assert body["model"] == "gpt-custom"
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Look up x"},
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q": "x"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Error in tool call: boom"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look up.",
                "parameters": schema.parameters,
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert body["response_format"]["json_schema"]["name"] == "Answer"
    assert (body["temperature"], body["max_completion_tokens"], body["seed"]) == (0.2, 64, 7)
    assert "stream" not in body


def test_defaults_keep_the_body_minimal() -> None:
    server = FakeServer(text_reply())
    server.provider().infer(InferenceRequest(messages=Messages.from_text("hi")))
    assert server.bodies[0] == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_provider_data_of_other_providers_is_not_sent() -> None:
    plain = Message.assistant("Checking.", [ToolCall(id="t1", name="f")])
    thinking = {"type": "thinking", "thinking": "t", "signature": "s"}
    tagged = plain.evolve(provider_data={"anthropic_thinking": [thinking]})
    provider = OpenAIProvider(client=object(), model="gpt-test")
    bodies = [
        provider.request_body(InferenceRequest(messages=Messages.of(Message.user("x"), m)))
        for m in (plain, tagged)
    ]
    assert bodies[0] == bodies[1]


def test_a_model_is_required() -> None:
    provider = OpenAIProvider(client=object())
    with pytest.raises(ConfigurationError, match="needs a model"):
        provider.infer(InferenceRequest(messages=Messages.from_text("hi")))


def test_the_sdk_is_an_optional_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingDependencyError, match=r"pip install '\./agentrig\[openai\]'"):
        OpenAIProvider(model="m")


# --- response mapping -----------------------------------------------------------------------


def test_an_answer_maps_to_an_inference_response() -> None:
    server = FakeServer(
        completion(
            {
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_9",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"q": "x"}'},
                    }
                ],
            },
            finish="tool_calls",
            prompt_tokens_details={"cached_tokens": 4},
            completion_tokens_details={"reasoning_tokens": 2},
        )
    )
    prices = PriceTable({"gpt-test": ModelPrice(input=1.0, output=10.0, cache_read=0.5)})
    response = server.provider(prices=prices).infer(
        InferenceRequest(messages=Messages.from_text("x"))
    )
    assert response.tool_calls == (ToolCall(id="call_9", name="lookup", arguments={"q": "x"}),)
    assert response.content == ""
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert (response.model, response.response_id) == ("gpt-test-2025", "chatcmpl-1")
    assert response.usage == Usage(
        input_tokens=10,
        output_tokens=5,
        cache_read_tokens=4,
        reasoning_tokens=2,
        cost=(6 * 1.0 + 4 * 0.5 + 5 * 10.0) / 1e6,
    )


@pytest.mark.parametrize(
    ("raw", "finish"),
    [
        ("length", FinishReason.LENGTH),
        ("content_filter", FinishReason.CONTENT_FILTER),
        ("weird", FinishReason.OTHER),
        (None, FinishReason.STOP),
    ],
)
def test_finish_reasons(raw: str | None, finish: FinishReason) -> None:
    server = FakeServer(completion({"content": "x"}, finish=raw))
    assert server.provider().infer(InferenceRequest()).finish_reason is finish


def test_malformed_arguments_reach_the_tool_as_a_failed_call_and_go_back_verbatim(
    run_agent: Callable[..., AgentState],
) -> None:
    server = FakeServer(
        completion(
            {
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"q": '},
                    }
                ]
            },
            finish="tool_calls",
        ),
        text_reply("sorry"),
    )

    @tool
    def lookup(q: str) -> str:
        """Look up."""
        return q

    final = run_agent(server.provider(), "go", [lookup])
    execution = final.steps()[0].tool_executions[0]
    assert execution.error is not None
    assert execution.content.startswith("Error in tool call")
    sent_back = server.bodies[1]["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert sent_back == '{"q": '
    assert final.final_response().to_text() == "sorry"


def test_a_stream_is_assembled_by_index_with_names_assigned() -> None:
    server = FakeServer(
        sse(
            delta(role="assistant", content="Let me "),
            delta(content="check."),
            delta(
                tool_calls=[
                    {
                        "index": 0,
                        "id": "a",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"q"'},
                    }
                ]
            ),
            delta(
                tool_calls=[
                    {
                        "index": 1,
                        "id": "b",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": ""},
                    }
                ]
            ),
            delta(tool_calls=[{"index": 0, "function": {"name": "lookup", "arguments": ': "x"}'}}]),
            delta(
                tool_calls=[{"index": 1, "function": {"name": "lookup", "arguments": '{"q": "y"}'}}]
            ),
        )
    )
    response = server.provider(stream=True).infer(
        InferenceRequest(messages=Messages.from_text("x"))
    )
    assert server.bodies[0]["stream"] is True
    assert response.content == "Let me check."
    assert response.tool_calls == (
        ToolCall(id="a", name="lookup", arguments={"q": "x"}),
        ToolCall(id="b", name="lookup", arguments={"q": "y"}),
    )
    assert response.finish_reason is FinishReason.TOOL_CALLS  # the stream sent none
    assert response.usage == Usage()


# --- errors ---------------------------------------------------------------------------------


def error_reply(status: int) -> Any:
    return httpx2.Response(status, json={"error": {"message": "nope", "type": "x"}})


@pytest.mark.parametrize(
    ("status", "retryable", "advice"),
    [
        (401, False, "OPENAI_API_KEY"),
        (404, False, "model name"),
        (429, True, "rate limited"),
        (503, True, "retry later"),
    ],
)
def test_http_errors_become_provider_errors(status: int, retryable: bool, advice: str) -> None:
    with pytest.raises(ProviderError) as raised:
        FakeServer(error_reply(status)).provider().infer(InferenceRequest())
    error = raised.value
    assert (error.status_code, error.retryable, error.provider) == (status, retryable, "openai")
    assert advice in str(error)


def test_a_connection_failure_is_retryable_and_names_the_cause() -> None:
    def refuse(request: Any) -> Any:
        raise httpx2.ConnectError("connection refused")

    with pytest.raises(ProviderError, match="connection refused") as raised:
        FakeServer(refuse).provider().infer(InferenceRequest())
    assert raised.value.retryable
    assert raised.value.status_code is None


def test_a_missing_api_key_says_how_to_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIProvider(model="m")


# --- replays of real recorded sessions --------------------------------------------------------


@tool
def lookup_population(country: str) -> int:
    """Returns the current population of the specified fictional country"""
    return {"Crumpet": 123124}[country]


@tool
def can_have_dragons(population: int) -> bool:
    """Returns True if the specified population can have dragons, False otherwise"""
    return population > 10_000


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


@tool
def get_temperature(city: str) -> float:
    return {"Tokyo": 20.0}[city]


def tool_calls(state: AgentState) -> list[str]:
    return [str(call) for step in state.steps() for call in step.inference_response.tool_calls]


def replay_provider(**options: Any) -> OpenAIProvider:
    return OpenAIProvider(api_key="sk-replay", max_retries=0, **options)


def test_replay_a_chain_of_two_tool_calls(
    real_cassette: Callable[[str], Any], run_agent: Callable[..., AgentState]
) -> None:
    prices = PriceTable({"gpt-4o-mini": ModelPrice(input=0.15, output=0.6)})
    provider = replay_provider(model="gpt-4o-mini", prices=prices)
    with http_cassettes.use_http_cassette(
        real_cassette("llm/test_tools/test_tool_use_chain_of_two_calls.yaml"),
        ignore=FOREIGN,
    ) as cassette:
        final = run_agent(
            provider,
            "Can the country of Crumpet have dragons? Answer with only YES or NO",
            [lookup_population, can_have_dragons],
        )
    assert final.status() is ExecutionStatus.COMPLETED
    assert final.final_response().to_text() == "YES"
    assert tool_calls(final) == [
        "lookup_population(country='Crumpet')",
        "can_have_dragons(population=123124)",
    ]
    assert [e.content for step in final.steps() for e in step.tool_executions] == ["123124", "true"]
    usage = final.usage()
    assert (usage.input_tokens, usage.output_tokens) == (92 + 118 + 146, 17 + 18 + 3)
    assert usage.cost == pytest.approx((356 * 0.15 + 38 * 0.6) / 1e6)
    assert cassette.all_played
    assert cassette.play_count == 3


def test_replay_a_streamed_tool_call_then_streamed_text(
    real_cassette: Callable[[str], Any], run_agent: Callable[..., AgentState]
) -> None:
    provider = replay_provider(model="gpt-4o-mini", stream=True)
    with http_cassettes.use_http_cassette(
        real_cassette("llm/test_tools/test_tool_use_basic.yaml"),
        ignore=FOREIGN,
    ) as cassette:
        final = run_agent(provider, "What is 1231 * 2331?", [multiply])
    assert tool_calls(final) == ["multiply(a=1231, b=2331)"]
    assert (
        final.final_response().to_text()
        == r"The result of \( 1231 \times 2331 \) is \( 2,869,461 \)."
    )
    assert [step.inference_response.finish_reason for step in final.steps()] == [
        FinishReason.TOOL_CALLS,
        FinishReason.STOP,
    ]
    assert (final.usage().input_tokens, final.usage().output_tokens) == (54 + 87, 20 + 26)
    assert cassette.play_count == 2


def test_replay_a_pydantic_ai_cassette_with_parsed_bodies(
    real_cassette: Callable[[str], Any], run_agent: Callable[..., AgentState]
) -> None:
    path = real_cassette(
        "pydantic-ai/test_openai/test_openai_instructions_with_tool_calls_keep_instructions.yaml"
    )
    with http_cassettes.use_http_cassette(path, ignore=FOREIGN) as cassette:
        final = run_agent(
            replay_provider(model="gpt-4.1-mini"),
            "What is the temperature in Tokyo?",
            [get_temperature],
            system="You are a helpful assistant.",
        )
    assert tool_calls(final) == ["get_temperature(city='Tokyo')"]
    assert (
        final.final_response().to_text()
        == "The temperature in Tokyo is currently 20.0 degrees Celsius."
    )
    assert final.steps()[-1].inference_response.model == "gpt-4.1-mini-2025-04-14"
    assert (final.usage().input_tokens, final.usage().output_tokens) == (50 + 75, 15 + 15)
    assert cassette.play_count == 2


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The SDK's retry back-off, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    return slept


def test_replay_recorded_rate_limits_and_retries(
    real_cassette: Callable[[str], Any], sleeps: list[float]
) -> None:
    provider = OpenAIProvider(
        api_key="sk-replay",
        base_url="https://openrouter.ai/api/v1",
        model="google/gemini-2.0-flash-exp:free",
        max_retries=2,
    )
    request = InferenceRequest(
        messages=Messages.of(Message.system("Be helpful."), Message.user("Tell me a joke."))
    )
    with (
        http_cassettes.use_http_cassette(
            real_cassette("pydantic-ai/test_openrouter/test_openrouter_errors_raised.yaml"),
            ignore=FOREIGN,
        ) as cassette,
        pytest.raises(ProviderError) as raised,
    ):
        provider.infer(request)
    assert (raised.value.status_code, raised.value.retryable) == (429, True)
    assert "Provider returned error" in str(raised.value)
    assert cassette.play_count == 3  # one attempt and two retries
    assert len(sleeps) == 2


# --- answers that are not what was asked for ------------------------------------------------


def test_an_html_page_instead_of_json_says_to_check_base_url() -> None:
    page = httpx2.Response(
        200, content=b"<html>Welcome</html>", headers={"content-type": "text/html"}
    )
    with pytest.raises(ProviderError, match="base_url") as raised:
        FakeServer(page).provider().infer(InferenceRequest())
    assert "<html>Welcome" in str(raised.value)
    assert not raised.value.retryable


@pytest.mark.parametrize(("code", "retryable"), [(429, True), (502, True), (400, False)])
def test_an_error_sent_with_status_200_keeps_its_message(code: int, retryable: bool) -> None:
    # OpenRouter answers some upstream failures this way.
    reply = httpx2.Response(
        200, json={"error": {"message": "Provider returned error", "code": code}}
    )
    with pytest.raises(ProviderError, match="Provider returned error") as raised:
        FakeServer(reply).provider().infer(InferenceRequest())
    assert (raised.value.retryable, raised.value.provider) == (retryable, "openai")


def test_a_choice_without_a_message_is_a_provider_error() -> None:
    reply = httpx2.Response(
        200, json={"id": "x", "model": "m", "choices": [{"index": 0, "finish_reason": "error"}]}
    )
    with pytest.raises(ProviderError, match="no message"):
        FakeServer(reply).provider().infer(InferenceRequest())


def test_a_tool_call_without_an_id_gets_one_as_when_streamed() -> None:
    server = FakeServer(
        completion(
            {"tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            finish="tool_calls",
        )
    )
    (call,) = server.provider().infer(InferenceRequest()).tool_calls
    assert (call.name, call.arguments) == ("f", {})
    assert call.id


def test_a_tool_call_without_a_name_is_a_provider_error() -> None:
    server = FakeServer(
        completion(
            {
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "", "arguments": "{}"}}
                ]
            },
            finish="tool_calls",
        )
    )
    with pytest.raises(ProviderError, match="tool call 0 without a name"):
        server.provider().infer(InferenceRequest())


def test_a_streamed_refusal_is_kept_like_a_whole_one() -> None:
    streamed = FakeServer(sse(delta(refusal="I can't "), delta(refusal="help with that.")))
    whole = FakeServer(completion({"content": None, "refusal": "I can't help with that."}))
    request = InferenceRequest()
    assert streamed.provider(stream=True).infer(request).content == "I can't help with that."
    assert whole.provider().infer(request).content == "I can't help with that."


@pytest.mark.parametrize("stream", [False, True])
def test_a_refusal_finishes_with_content_filter_like_anthropic(stream: bool) -> None:
    if stream:
        chunks = (delta(refusal="I can't "), delta(refusal="help."), finished("stop"))
        server = FakeServer(sse(*chunks))
    else:
        server = FakeServer(completion({"content": None, "refusal": "I can't help."}))
    response = server.provider(stream=stream).infer(InferenceRequest())
    assert response.content == "I can't help."
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.provider_data == {"finish_reason": "stop"}


def test_a_refusal_cut_short_keeps_length() -> None:
    server = FakeServer(completion({"content": None, "refusal": "I can't"}, finish="length"))
    assert server.provider().infer(InferenceRequest()).finish_reason is FinishReason.LENGTH


def finished(reason: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


@pytest.mark.parametrize(
    "reply",
    [
        completion({"content": "hello"}),
        httpx2.Response(200, content=b"<html></html>", headers={"content-type": "text/html"}),
    ],
)
def test_a_stream_without_any_chunk_is_an_error_not_an_empty_answer(reply: Any) -> None:
    with pytest.raises(ProviderError, match="stream=False"):
        FakeServer(reply).provider(stream=True).infer(InferenceRequest())


def test_an_error_event_in_a_stream_is_retryable_when_the_server_failed() -> None:
    body = (
        f"data: {json.dumps({'id': 'c1', 'object': 'chat.completion.chunk', 'created': 0, 'model': 'm', **delta(content='he')})}\n\n"
        'data: {"error": {"message": "server overloaded", "type": "server_error"}}\n\n'
    )
    reply = httpx2.Response(
        200, content=body.encode(), headers={"content-type": "text/event-stream"}
    )
    with pytest.raises(ProviderError, match="server overloaded") as raised:
        FakeServer(reply).provider(stream=True).infer(InferenceRequest())
    assert raised.value.retryable
    assert "retry" in str(raised.value)


@pytest.mark.parametrize("status", [408, 409])
def test_retryable_statuses_advise_a_retry(status: int) -> None:
    with pytest.raises(ProviderError) as raised:
        FakeServer(error_reply(status)).provider().infer(InferenceRequest())
    assert raised.value.retryable
    assert "fix the request" not in str(raised.value)
    assert "retry" in str(raised.value)


@pytest.mark.parametrize("answered_model", ["", "some-alias"])
def test_cost_uses_the_requested_model_when_the_answer_names_an_unknown_one(
    answered_model: str,
) -> None:
    server = FakeServer(
        httpx2.Response(
            200,
            json={
                "id": "c1",
                "model": answered_model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "x"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0, "total_tokens": 1},
            },
        )
    )
    prices = PriceTable({"gpt-test": ModelPrice(input=2.0, output=8.0)}, strict=True)
    response = server.provider(prices=prices).infer(InferenceRequest())
    assert response.usage.cost == pytest.approx(2.0)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -1},
        {"prompt_tokens": "ten"},
        {"prompt_tokens": 10**30},
        {"completion_tokens": 1.5},
        {"prompt_tokens_details": {"cached_tokens": -3}},
        {"completion_tokens_details": {"reasoning_tokens": "x"}},
    ],
)
def test_a_malformed_usage_is_a_provider_error(usage: dict[str, Any]) -> None:
    server = FakeServer(completion({"content": "hi"}, **usage))
    with pytest.raises(ProviderError, match="malformed usage") as raised:
        server.provider().infer(InferenceRequest(messages=Messages.from_text("hi")))
    assert raised.value.provider == "openai"
    assert not isinstance(raised.value, InvalidInputError)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": "7", "completion_tokens": 5},
        {"prompt_tokens": None, "completion_tokens": 5},
        {"prompt_tokens": 10, "completion_tokens": None},
        [10, 5],
        "10",
        {"prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": [4]},
    ],
)
def test_a_usage_of_the_wrong_shape_is_a_provider_error(usage: Any) -> None:
    reply = completion({"content": "hi"})
    body = json.loads(reply.content)
    body["usage"] = usage
    server = FakeServer(httpx2.Response(200, json=body))
    with pytest.raises(ProviderError, match="malformed usage") as raised:
        server.provider().infer(InferenceRequest(messages=Messages.from_text("hi")))
    assert raised.value.provider == "openai"


def test_a_usage_without_details_or_no_usage_at_all_counts_what_is_there() -> None:
    reply = completion({"content": "hi"})
    body = json.loads(reply.content)
    body["usage"]["prompt_tokens_details"] = None
    server = FakeServer(httpx2.Response(200, json=body))
    usage = server.provider().infer(InferenceRequest(messages=Messages.from_text("hi"))).usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (10, 5, 0)
    del body["usage"]
    server = FakeServer(httpx2.Response(200, json=body))
    assert (
        server.provider().infer(InferenceRequest(messages=Messages.from_text("hi"))).usage.is_zero()
    )


def test_a_huge_price_gives_the_largest_finite_cost() -> None:
    table = PriceTable({"gpt-test": ModelPrice(input=1e300, output=1e300)})
    server = FakeServer(completion({"content": "hi"}, prompt_tokens=10**15))
    response = server.provider(prices=table).infer(
        InferenceRequest(messages=Messages.from_text("hi"))
    )
    assert response.usage.cost == sys.float_info.max


# --- reasoning of compatible providers across a tool loop -----------------------------------


def reasoned_call(field: str, stream: bool) -> Any:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "multiply", "arguments": '{"a": 2, "b": 3}'},
    }
    if stream:
        return sse(
            delta(role="assistant", **{field: "Multiply "}),
            delta(**{field: "first."}),
            delta(tool_calls=[{"index": 0, **call}]),
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        )
    return completion({field: "Multiply first.", "tool_calls": [call]}, "tool_calls")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_goes_back_with_the_assistant_message_in_its_own_field(
    run_agent: Callable[..., AgentState], field: str, stream: bool
) -> None:
    """Compatible providers that keep thinking across a tool loop (DeepSeek, vLLM, OpenRouter,
    Ollama) need the reasoning of the tool-call turn sent back."""
    answer = sse(delta(role="assistant", content="6")) if stream else text_reply("6")
    server = FakeServer(reasoned_call(field, stream), answer)
    final = run_agent(server.provider(stream=stream), "2*3?", [multiply])
    assert final.final_response().to_text() == "6"
    assert final.steps()[0].inference_response.reasoning_content == "Multiply first."
    assistant = server.bodies[1]["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant[field] == "Multiply first."
    other = "reasoning" if field == "reasoning_content" else "reasoning_content"
    assert other not in assistant
    assert AgentState.from_json(final.to_json()) == final


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_streamed_reasoning_reaches_agent_stream_as_reasoning_pieces_before_the_call(
    field: str,
) -> None:
    server = FakeServer(
        reasoned_call(field, stream=True), sse(delta(role="assistant", content="6"))
    )
    agent = (
        AgentBuilder.base()
        .with_capability(UseLlmConfig(server.provider(stream=True)))
        .with_tools([multiply])
        .build()
    )
    items = list(agent.stream(AgentState().with_user_message("2*3?")))
    first = [i for i in items if isinstance(i, InferenceDelta) and i.step_number == 1]
    assert [p.reasoning for p in first] == ["Multiply ", "first.", ""]
    assert first[-1].tool_name == "multiply"
    final = items[-1]
    assert isinstance(final, AgentState)
    assert final.steps()[0].inference_response.reasoning_content == "Multiply first."
