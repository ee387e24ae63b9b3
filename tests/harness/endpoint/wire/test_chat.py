"""The Chat Completions wire format against the official ``openai`` SDK, agentrig's own
``OpenAIProvider`` and real recorded sessions."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

import pytest

from agentrig.drivers import OpenAIProvider
from agentrig.harness.endpoint.wire.base import TokenLogprobs, ToolChoice, WireAnswer, WireError
from agentrig.harness.endpoint.wire.chat import CHAT, ChatFormat
from agentrig.messages import Message, ToolCall
from agentrig.state import InferenceRequest, InferenceResponse, LlmConfig, Usage
from agentrig.state.status import FinishReason

openai = pytest.importorskip("openai")

USAGE = Usage(input_tokens=30, output_tokens=7, cache_read_tokens=4, reasoning_tokens=2)
TEXT = WireAnswer(text="It is sunny in Paris, 21 °C.", usage=USAGE)
CALLS = WireAnswer(
    tool_calls=(
        ToolCall(id="call_a", name="weather", arguments={"city": "Paris", "days": [1, 2]}),
        ToolCall(id="call_b", name="time", arguments={}),
    ),
    usage=USAGE,
)
USER = [{"role": "user", "content": "Weather in Paris?"}]


def summary(messages: Iterable[Message]) -> list[tuple[Any, ...]]:
    """Messages as comparable tuples (ids and times left out)."""
    return [
        (
            message.role.value,
            message.content,
            tuple((call.id, call.name, call.arguments) for call in message.tool_calls),
            None
            if message.tool_result is None
            else (
                message.tool_result.call_id,
                message.tool_result.tool_name,
                message.tool_result.is_error,
            ),
        )
        for message in messages
    ]


# --- the SDK reads what the format writes ------------------------------------------------


def test_a_text_answer_parses_into_the_sdk_completion(wire: Any) -> None:
    client = wire.openai(wire.Played(CHAT, TEXT))

    completion = client.chat.completions.create(model="gpt-x", messages=USER)

    assert completion.id == wire.response_id
    assert completion.model == wire.model
    choice = completion.choices[0]
    assert choice.message.content == TEXT.text
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert completion.usage.prompt_tokens == 30
    assert completion.usage.completion_tokens == 7
    assert completion.usage.total_tokens == 37
    assert completion.usage.prompt_tokens_details.cached_tokens == 4
    assert completion.usage.completion_tokens_details.reasoning_tokens == 2


def test_parallel_tool_calls_parse_into_the_sdk_completion(wire: Any) -> None:
    client = wire.openai(wire.Played(CHAT, CALLS))

    completion = client.chat.completions.create(model="gpt-x", messages=USER)

    message = completion.choices[0].message
    assert message.content is None
    assert [
        (c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls
    ] == [
        ("call_a", "weather", {"city": "Paris", "days": [1, 2]}),
        ("call_b", "time", {}),
    ]
    assert completion.choices[0].finish_reason == "tool_calls"


def test_a_refusal_is_the_message_refusal(wire: Any) -> None:
    client = wire.openai(wire.Played(CHAT, WireAnswer(refusal="I can't help with that.")))

    message = client.chat.completions.create(model="gpt-x", messages=USER).choices[0].message

    assert message.refusal == "I can't help with that."
    assert message.content is None


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        (FinishReason.LENGTH, "length"),
        (FinishReason.CONTENT_FILTER, "content_filter"),
        (FinishReason.ERROR, "stop"),
    ],
)
def test_finish_reasons_use_the_api_words(wire: Any, finish: FinishReason, expected: str) -> None:
    client = wire.openai(wire.Played(CHAT, WireAnswer(text="cut", finish_reason=finish)))

    completion = client.chat.completions.create(model="gpt-x", messages=USER)

    assert completion.choices[0].finish_reason == expected


@pytest.mark.parametrize("answer", [TEXT, CALLS], ids=["text", "tool-calls"])
def test_a_streamed_answer_accumulates_to_the_plain_one(wire: Any, answer: WireAnswer) -> None:
    client = wire.openai(wire.Played(CHAT, answer))
    plain = client.chat.completions.create(model="gpt-x", messages=USER)

    with client.chat.completions.stream(
        model="gpt-x", messages=USER, stream_options={"include_usage": True}
    ) as stream:
        for _ in stream:
            pass
        streamed = stream.get_final_completion()

    assert streamed.id == plain.id
    choice, expected = streamed.choices[0], plain.choices[0]
    assert choice.message.content == expected.message.content
    assert [
        (c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls or ()
    ] == [(c.id, c.function.name, c.function.arguments) for c in expected.message.tool_calls or ()]
    assert choice.finish_reason == expected.finish_reason
    assert streamed.usage == plain.usage


def test_the_async_client_reads_plain_and_streamed_answers(wire: Any) -> None:
    client = wire.async_openai(wire.Played(CHAT, CALLS))

    async def run() -> tuple[Any, list[Any]]:
        plain = await client.chat.completions.create(model="gpt-x", messages=USER)
        chunks = await client.chat.completions.create(model="gpt-x", messages=USER, stream=True)
        return plain, [chunk async for chunk in chunks]

    plain, chunks = asyncio.run(run())

    assert [call.id for call in plain.choices[0].message.tool_calls] == ["call_a", "call_b"]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_stream_chunks_follow_the_api_sequence(wire: Any) -> None:
    client = wire.openai(wire.Played(CHAT, CALLS))

    chunks = list(
        client.chat.completions.create(
            model="gpt-x", messages=USER, stream=True, stream_options={"include_usage": True}
        )
    )

    assert chunks[0].choices[0].delta.role == "assistant"
    first_delta_of_call = [
        part
        for chunk in chunks
        for choice in chunk.choices
        for part in choice.delta.tool_calls or ()
        if part.id
    ]
    assert [(part.index, part.id, part.function.name) for part in first_delta_of_call] == [
        (0, "call_a", "weather"),
        (1, "call_b", "time"),
    ]
    assert chunks[-2].choices[0].finish_reason == "tool_calls"
    assert chunks[-1].choices == []
    assert chunks[-1].usage.total_tokens == 37
    assert all(chunk.usage is None for chunk in chunks[:-1])


def test_without_include_usage_no_usage_chunk_is_sent() -> None:
    chunks = CHAT.stream_chunks(TEXT, model="m", response_id="r", include_usage=False)

    assert chunks[-1] == b"data: [DONE]\n\n"
    assert all(b'"usage"' not in chunk for chunk in chunks)
    assert all(chunk.startswith(b"data: ") and chunk.endswith(b"\n\n") for chunk in chunks)


def test_the_encoding_is_deterministic_and_created_is_a_parameter() -> None:
    first = CHAT.stream_chunks(CALLS, model="m", response_id="r", include_usage=True)

    assert first == CHAT.stream_chunks(CALLS, model="m", response_id="r", include_usage=True)
    assert ChatFormat(created=42).response_body(TEXT, model="m", response_id="r")["created"] == 42


# --- agentrig's own provider reads it too ------------------------------------------------


def provider(wire: Any, answer: WireAnswer, *, stream: bool) -> OpenAIProvider:
    return OpenAIProvider(
        client=wire.openai(wire.Played(CHAT, answer)), model="gpt-x", stream=stream
    )


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_the_openai_provider_gets_the_scripted_answer(wire: Any, stream: bool) -> None:
    request = InferenceRequest(messages=[Message.user("Weather?")], llm_config=LlmConfig())

    text = provider(wire, TEXT, stream=stream).infer(request)
    calls = provider(wire, CALLS, stream=stream).infer(request)
    refused = provider(wire, WireAnswer(refusal="No."), stream=stream).infer(request)

    assert (text.content, text.tool_calls, text.finish_reason) == (TEXT.text, (), "stop")
    assert text.usage == USAGE.evolve(reasoning_tokens=2)
    assert (text.model, text.response_id) == (wire.model, wire.response_id)
    assert calls.tool_calls == CALLS.tool_calls
    assert calls.finish_reason is FinishReason.TOOL_CALLS
    assert (refused.content, refused.finish_reason) == ("No.", FinishReason.CONTENT_FILTER)


@pytest.mark.parametrize(
    ("status", "error_class", "kind", "retryable"),
    [
        (400, "BadRequestError", "invalid_request_error", False),
        (401, "AuthenticationError", "invalid_request_error", False),
        (404, "NotFoundError", "invalid_request_error", False),
        (429, "RateLimitError", "requests", True),
        (500, "InternalServerError", "server_error", True),
        (503, "InternalServerError", "server_error", True),
    ],
)
def test_error_bodies_raise_the_sdk_error_of_the_status(
    wire: Any, status: int, error_class: str, kind: str, retryable: bool
) -> None:
    body = CHAT.error_body(status, "scripted failure", param="messages")

    def handler(request: Any) -> Any:
        return wire.json_answer(body, status)

    with pytest.raises(getattr(openai, error_class)) as raised:
        wire.openai(handler).chat.completions.create(model="gpt-x", messages=USER)
    assert raised.value.body["message"] == "scripted failure"
    assert raised.value.type == kind
    assert raised.value.param == "messages"
    assert (raised.value.code is not None) == (status in (401, 429))  # 404: an unknown URL
    from agentrig.errors import ProviderError

    with pytest.raises(ProviderError, match="scripted failure") as mapped:
        OpenAIProvider(client=wire.openai(handler), model="gpt-x").infer(InferenceRequest())
    assert mapped.value.retryable is retryable


# --- requests ------------------------------------------------------------------------------


def test_a_whole_conversation_is_read() -> None:
    body = {
        "model": "gpt-x",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
            {
                "role": "user",
                "name": "ann",
                "content": [
                    {"type": "text", "text": "Weather "},
                    {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                    {"type": "text", "text": "in Paris?"},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "time", "arguments": ""},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
            {
                "role": "tool",
                "tool_call_id": "call_b",
                "content": [{"type": "text", "text": "noon"}],
            },
            {"role": "assistant", "content": "Sunny at noon."},
            {"role": "user", "content": "Tomorrow?"},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "No more."}]},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "The weather.",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                    "strict": True,
                },
            },
            {"type": "function", "function": {"name": "time"}},
            {"type": "custom", "custom": {"name": "grammar"}},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.2,
        "tool_choice": "auto",
    }

    request = CHAT.parse_request(json.dumps(body).encode())

    assert request.format == "chat"
    assert request.model == "gpt-x"
    assert request.system == "Be brief.\n\nUse tools."
    assert summary(request.messages) == [
        ("user", "Weather in Paris?", (), None),
        ("assistant", "", (("call_a", "weather", {"city": "Paris"}), ("call_b", "time", {})), None),
        ("tool", "sunny", (), ("call_a", "weather", False)),
        ("tool", "noon", (), ("call_b", "time", False)),
        ("assistant", "Sunny at noon.", (), None),
        ("user", "Tomorrow?", (), None),
        ("assistant", "No more.", (), None),
    ]
    assert request.messages[0].name == "ann"
    assert [(t.name, t.description, t.parameters) for t in request.tools] == [
        ("weather", "The weather.", {"type": "object", "properties": {"city": {"type": "string"}}}),
        ("time", "", {}),
    ]
    assert [t.strict for t in request.tools] == [True, False]
    assert (request.stream, request.include_usage) == (True, True)
    assert request.settings == {"temperature": 0.2, "tool_choice": "auto"}


def test_a_minimal_request_has_no_system_no_tools_and_does_not_stream() -> None:
    request = CHAT.parse_request(b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}')

    assert (request.system, request.tools, request.stream, request.include_usage) == (
        None,
        (),
        False,
        False,
    )
    assert request.settings == {}


def test_arguments_that_are_not_a_json_object_are_kept_as_sent() -> None:
    body = {
        "model": "m",
        "messages": [
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{oops"}}],
            }
        ],
    }

    (message,) = CHAT.parse_request(json.dumps(body).encode()).messages

    assert message.tool_calls[0].arguments == {"__raw_arguments__": "{oops"}


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"not json", "body: not valid JSON"),
        (b"[1, 2]", "body: expected a JSON object, got an array"),
        (b'{"messages": []}', "model: missing"),
        (b'{"model": 3, "messages": []}', "model: expected a string, got an integer"),
        (b'{"model": "m"}', "messages: missing"),
        (b'{"model": "m", "messages": {}}', "messages: expected an array, got an object"),
        (b'{"model": "m", "messages": [3]}', "messages[0]: expected an object, got an integer"),
        (b'{"model": "m", "messages": [{"content": "x"}]}', "messages[0].role: missing"),
        (b'{"model": "m", "messages": [{"role": "bot"}]}', "messages[0].role: 'bot' is not one of"),
        (
            b'{"model": "m", "messages": [{"role": "user", "content": 5}]}',
            "messages[0].content: expected a string or an array, got an integer",
        ),
        (
            b'{"model": "m", "messages": [{"role": "user", "content": [{"text": "x"}]}]}',
            "messages[0].content[0].type: missing",
        ),
        (
            b'{"model": "m", "messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "x"}]}',
            "messages[1].tool_call_id: missing",
        ),
        (
            b'{"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}]}',
            "messages[0].tool_calls[0].function: missing",
        ),
        (
            b'{"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": ""}}]}]}',
            "messages[0].tool_calls[0].function.name: empty",
        ),
        (
            b'{"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {}}}]}]}',
            "messages[0].tool_calls[0].function.arguments: expected a string, got an object",
        ),
        (
            b'{"model": "m", "messages": [], "tools": [{"type": "function"}]}',
            "tools[0].function: missing",
        ),
        (
            b'{"model": "m", "messages": [], "stream": "yes"}',
            "stream: expected a boolean, got a string",
        ),
        (
            b'{"model": "m", "messages": [], "stream_options": {"include_usage": 1}}',
            "stream_options.include_usage: expected a boolean, got an integer",
        ),
        (b'{"model": "m", "messages": [], "x": NaN}', "body: not valid JSON"),
        (b'{"model": "m", "messages": [], "x": 1e999}', "body: not valid JSON"),
    ],
)
def test_a_request_that_cannot_be_read_names_the_field(body: bytes, error: str) -> None:
    with pytest.raises(WireError) as raised:
        CHAT.parse_request(body)

    assert raised.value.message.startswith(error)


def test_the_error_names_the_field_as_its_param() -> None:
    with pytest.raises(WireError) as raised:
        CHAT.parse_request(b'{"model": "m", "messages": [{"role": "user"}, {"role": "tool"}]}')

    assert raised.value.param == "messages[1].tool_call_id"


# --- against reality -------------------------------------------------------------------------

CHAT_CASSETTES = [
    "llm/test_tools/test_tool_use_chain_of_two_calls.yaml",
    "llm/test_tools/test_tool_use_basic.yaml",
    "pydantic-ai/test_openai/test_openai_instructions_with_tool_calls_keep_instructions.yaml",
]


def parsed_by_provider(wire: Any, handler: Callable[[Any], Any], stream: bool) -> InferenceResponse:
    client = wire.openai(handler)
    return OpenAIProvider(client=client, model="gpt-x", stream=stream).infer(
        InferenceRequest(messages=[Message.user("x")])
    )


def as_answer(response: InferenceResponse) -> WireAnswer:
    """The answer the endpoint would play to say what ``response`` says."""
    return WireAnswer(
        text="" if response.finish_reason is FinishReason.CONTENT_FILTER else response.content,
        tool_calls=response.tool_calls,
        usage=response.usage,
        finish_reason=response.finish_reason,
    )


@pytest.mark.parametrize("relative", CHAT_CASSETTES)
def test_every_real_answer_and_its_encoding_parse_alike(
    wire: Any, recorded: Callable[[str], list[Any]], relative: str
) -> None:
    for interaction in recorded(relative):
        real = parsed_by_provider(wire, interaction.replay, interaction.streamed)
        answer = as_answer(real)
        if interaction.streamed:
            content = b"".join(
                CHAT.stream_chunks(
                    answer, model=real.model, response_id=real.response_id, include_usage=True
                )
            )
            ours = parsed_by_provider(wire, lambda _, c=content: wire.event_stream(c), stream=True)
        else:
            body = CHAT.response_body(answer, model=real.model, response_id=real.response_id)
            ours = parsed_by_provider(wire, lambda _, b=body: wire.json_answer(b), stream=False)

        assert ours.model_dump(exclude={"created_at", "id"}) == real.model_dump(
            exclude={"created_at", "id"}
        )


@pytest.mark.parametrize("relative", CHAT_CASSETTES)
def test_the_sdk_reads_a_real_answer_and_its_encoding_alike(
    wire: Any, recorded: Callable[[str], list[Any]], relative: str
) -> None:
    for interaction in recorded(relative):
        if interaction.streamed:
            continue
        real = wire.openai(interaction.replay).chat.completions.create(model="m", messages=USER)
        answer = as_answer(parsed_by_provider(wire, interaction.replay, stream=False))
        body = CHAT.response_body(answer, model=real.model, response_id=real.id)

        ours = wire.openai(lambda _, b=body: wire.json_answer(b)).chat.completions.create(
            model="m", messages=USER
        )

        assert ours.choices[0].message.content == real.choices[0].message.content
        assert ours.choices[0].message.tool_calls == real.choices[0].message.tool_calls
        assert ours.choices[0].finish_reason == real.choices[0].finish_reason
        assert ours.usage.prompt_tokens == real.usage.prompt_tokens
        assert ours.usage.completion_tokens == real.usage.completion_tokens
        assert ours.usage.total_tokens == real.usage.total_tokens


def test_every_real_request_is_read(recorded: Callable[[str], list[Any]]) -> None:
    for relative in [
        *CHAT_CASSETTES,
        "pydantic-ai/test_openrouter/test_openrouter_errors_raised.yaml",
    ]:
        for interaction in recorded(relative):
            request = CHAT.parse_request(interaction.request_body)
            sent = interaction.request_json()
            assert request.model == sent["model"]
            assert request.stream is bool(sent.get("stream"))
            assert [tool.name for tool in request.tools] == [
                tool["function"]["name"] for tool in sent.get("tools", ())
            ]


def test_a_real_multi_step_conversation_is_read_as_sent(
    recorded: Callable[[str], list[Any]],
) -> None:
    last = recorded("llm/test_tools/test_tool_use_chain_of_two_calls.yaml")[-1]

    request = CHAT.parse_request(last.request_body)

    assert request.system is None
    assert summary(request.messages) == [
        ("user", "Can the country of Crumpet have dragons? Answer with only YES or NO", (), None),
        (
            "assistant",
            "",
            (("call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", {"country": "Crumpet"}),),
            None,
        ),
        ("tool", "123124", (), ("call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", False)),
        (
            "assistant",
            "",
            (("call_aq9UyiSFkzX6W8Ydc33DoI9Y", "can_have_dragons", {"population": 123124}),),
            None,
        ),
        ("tool", "true", (), ("call_aq9UyiSFkzX6W8Ydc33DoI9Y", "can_have_dragons", False)),
    ]


def test_a_real_request_with_instructions_has_its_system_prompt(
    recorded: Callable[[str], list[Any]],
) -> None:
    last = recorded(
        "pydantic-ai/test_openai/test_openai_instructions_with_tool_calls_keep_instructions.yaml"
    )[-1]

    request = CHAT.parse_request(last.request_body)

    assert request.system == "You are a helpful assistant."
    assert summary(request.messages)[-1] == (
        "tool",
        "20.0",
        (),
        ("call_bhZkmIKKItNGJ41whHUHB7p9", "get_temperature", False),
    )
    assert request.settings == {"n": 1, "tool_choice": "auto"}


def chunk_shapes(chunks: Iterable[Any]) -> list[str]:
    """What each chunk carries, consecutive repeats collapsed: ``role``, ``content``,
    ``tool_call`` (an opening: id and name), ``arguments``, ``finish``, ``usage``."""
    shapes: list[str] = []
    for chunk in chunks:
        if not chunk.choices:
            shape = "usage"
        else:
            choice = chunk.choices[0]
            delta, parts = choice.delta, []
            if delta.role:
                parts.append("role")
            if delta.content:
                parts.append("content")
            for call in delta.tool_calls or ():
                parts.append("tool_call" if call.id else "arguments")
            if choice.finish_reason:
                parts.append("finish")
            shape = "+".join(parts) or "empty"
        if not shapes or shapes[-1] != shape:
            shapes.append(shape)
    return shapes


def test_a_real_stream_and_its_encoding_have_the_same_shape(
    wire: Any, recorded: Callable[[str], list[Any]]
) -> None:
    for interaction in recorded("llm/test_tools/test_tool_use_basic.yaml"):
        answer = as_answer(parsed_by_provider(wire, interaction.replay, stream=True))
        content = b"".join(
            CHAT.stream_chunks(answer, model="m", response_id="r", include_usage=True)
        )

        def chunks(handler: Callable[[Any], Any]) -> list[Any]:
            return list(
                wire.openai(handler).chat.completions.create(
                    model="m", messages=USER, stream=True, stream_options={"include_usage": True}
                )
            )

        real = chunks(interaction.replay)
        ours = chunks(lambda _, c=content: wire.event_stream(c))

        assert chunk_shapes(ours) == chunk_shapes(real)
        assert interaction.response_body.endswith(b"data: [DONE]\n\n")
        assert content.endswith(b"data: [DONE]\n\n")


# --- what a request allows, asks and gets back -----------------------------------------------


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, ToolChoice()),
        ({"tool_choice": "none"}, ToolChoice(mode="none", said='tool_choice: "none"')),
        (
            {"tool_choice": "required", "parallel_tool_calls": True},
            ToolChoice(mode="required", said='tool_choice: "required"'),
        ),
        (
            {"tool_choice": {"type": "function", "function": {"name": "weather"}}},
            ToolChoice(
                mode="tool",
                tool="weather",
                said='tool_choice: {"type":"function","function":{"name":"weather"}}',
            ),
        ),
        (
            {"tool_choice": {"type": "function"}},
            ToolChoice(said='tool_choice: {"type":"function"}'),
        ),
        (
            {"parallel_tool_calls": False},
            ToolChoice(parallel=False, parallel_said="parallel_tool_calls: false"),
        ),
    ],
)
def test_tool_choice_says_what_the_model_may_answer(
    settings: dict[str, Any], expected: ToolChoice
) -> None:
    request = CHAT.parse_request(json.dumps({"model": "m", "messages": USER, **settings}).encode())

    assert CHAT.tool_choice(request) == expected


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"logprobs": True, "top_logprobs": 2}, 2),
        ({"logprobs": True}, 0),
        ({"top_logprobs": 2}, None),
    ],
)
def test_log_probabilities_are_asked_with_logprobs_true(
    settings: dict[str, Any], expected: int | None
) -> None:
    request = CHAT.parse_request(json.dumps({"model": "m", "messages": USER, **settings}).encode())

    assert CHAT.logprobs_asked(request) == expected


LOGPROBS = (
    TokenLogprobs("Sun", -0.25, top=(("Sun", -0.25), ("Rain", -1.5))),
    TokenLogprobs("ny.", -0.5, top=(("ny.", -0.5),)),
)


def test_log_probabilities_are_sent_only_when_asked_with_their_bytes() -> None:
    unasked = WireAnswer(text="Sunny.", logprobs=LOGPROBS)
    asked = replace(unasked, logprobs_top=1)

    assert CHAT.response_body(unasked, model="m", response_id="r")["choices"][0]["logprobs"] is None
    sent = CHAT.response_body(asked, model="m", response_id="r")["choices"][0]["logprobs"]
    assert sent == {
        "content": [
            {
                "token": "Sun",
                "logprob": -0.25,
                "bytes": [83, 117, 110],
                "top_logprobs": [{"token": "Sun", "logprob": -0.25, "bytes": [83, 117, 110]}],
            },
            {
                "token": "ny.",
                "logprob": -0.5,
                "bytes": [110, 121, 46],
                "top_logprobs": [{"token": "ny.", "logprob": -0.5, "bytes": [110, 121, 46]}],
            },
        ],
        "refusal": None,
    }


def test_streamed_log_probabilities_accumulate_to_the_text(wire: Any) -> None:
    answer = WireAnswer(text="Sunny.", logprobs=LOGPROBS, logprobs_top=0)
    client = wire.openai(wire.Played(CHAT, answer))

    stream = client.chat.completions.create(
        model="gpt-x", messages=USER, stream=True, logprobs=True
    )
    deltas = [(c.choices[0].delta.content, c.choices[0].logprobs) for c in stream if c.choices]

    assert "".join(content or "" for content, _ in deltas) == "Sunny."
    tokens = [entry.token for _, sent in deltas if sent and sent.content for entry in sent.content]
    assert tokens == ["Sun", "ny."]


def test_a_plain_answer_is_the_whole_chat_completion() -> None:
    answer = WireAnswer(text="Hi.", reasoning="think", usage=Usage(input_tokens=3, output_tokens=2))

    body = CHAT.response_body(answer, model="m", response_id="r")

    assert body["choices"] == [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Hi.",
                "refusal": None,
                "annotations": [],
                "reasoning_content": "think",
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ]
    assert (body["id"], body["object"], body["model"]) == ("r", "chat.completion", "m")


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            b'{"model": "m", "messages": [{"role": "user", "content": "x"}, {"role": "assistant",'
            b' "tool_calls": [{"id": "", "type": "function", "function": {"name": "f"}}]}]}',
            "messages[1].tool_calls[0].id: empty",
        ),
        (
            b'{"model": "m", "messages": [{"role": "user", "content": "x", "name": 3}]}',
            "messages[0].name: expected a string, got an integer",
        ),
        (
            b'{"model": "m", ',
            "body: not valid JSON (Expecting property name enclosed in double quotes: line 1 "
            "column 16 (char 15))",
        ),
        (
            b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            "body: not valid JSON (nested too deeply)",
        ),
    ],
)
def test_the_whole_error_names_the_field_and_the_reason(body: bytes, error: str) -> None:
    with pytest.raises(WireError) as raised:
        CHAT.parse_request(body)

    assert raised.value.message == error
