"""The Anthropic Messages wire format against the official ``anthropic`` SDK, agentrig's own
``AnthropicProvider`` and real recorded sessions."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from agentrig.drivers import AnthropicProvider
from agentrig.errors import ProviderError
from agentrig.harness.endpoint.wire.anthropic import ANTHROPIC
from agentrig.harness.endpoint.wire.base import ToolChoice, WireAnswer, WireError
from agentrig.messages import Message, ToolCall
from agentrig.state import InferenceRequest, InferenceResponse, LlmConfig, Usage
from agentrig.state.status import FinishReason

anthropic = pytest.importorskip("anthropic")

USAGE = Usage(input_tokens=40, output_tokens=9, cache_read_tokens=10, cache_write_tokens=5)
TEXT = WireAnswer(text="It is sunny in Paris, 21 °C.", usage=USAGE)
CALLS = WireAnswer(
    text="Let me check.",
    tool_calls=(
        ToolCall(id="toolu_a", name="weather", arguments={"city": "Paris", "days": [1, 2]}),
        ToolCall(id="toolu_b", name="time", arguments={}),
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


def create(client: Any, **options: Any) -> Any:
    return client.messages.create(model="claude-x", max_tokens=100, messages=USER, **options)


# --- the SDK reads what the format writes ------------------------------------------------


def test_a_text_answer_parses_into_the_sdk_message(wire: Any) -> None:
    message = create(wire.anthropic(wire.Played(ANTHROPIC, TEXT)))

    assert (message.id, message.model, message.role) == (wire.response_id, wire.model, "assistant")
    assert message.type == "message"
    assert [(block.type, block.text) for block in message.content] == [("text", TEXT.text)]
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens == 25
    assert message.usage.cache_read_input_tokens == 10
    assert message.usage.cache_creation_input_tokens == 5
    assert message.usage.output_tokens == 9


def test_text_and_parallel_tool_uses_parse_into_the_sdk_message(wire: Any) -> None:
    message = create(wire.anthropic(wire.Played(ANTHROPIC, CALLS)))

    assert message.content[0].text == "Let me check."
    assert [(b.type, b.id, b.name, b.input) for b in message.content[1:]] == [
        ("tool_use", "toolu_a", "weather", {"city": "Paris", "days": [1, 2]}),
        ("tool_use", "toolu_b", "time", {}),
    ]
    assert message.stop_reason == "tool_use"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (WireAnswer(text="cut", finish_reason=FinishReason.LENGTH), "max_tokens"),
        (WireAnswer(refusal="I can't help with that."), "refusal"),
        (WireAnswer(text="x", finish_reason=FinishReason.CONTENT_FILTER), "refusal"),
        (WireAnswer(text="x", finish_reason=FinishReason.OTHER), "end_turn"),
    ],
)
def test_stop_reasons_use_the_api_words(wire: Any, answer: WireAnswer, expected: str) -> None:
    message = create(wire.anthropic(wire.Played(ANTHROPIC, answer)))

    assert message.stop_reason == expected


def test_a_refusal_is_the_text_of_a_refusal_stop(wire: Any) -> None:
    message = create(wire.anthropic(wire.Played(ANTHROPIC, WireAnswer(refusal="No."))))

    assert [block.text for block in message.content] == ["No."]


THINKING = WireAnswer(text="Sunny.", reasoning="Look it up.", seal="sig", usage=USAGE)
REDACTED = WireAnswer(text="Sunny.", reasoning="hidden", redacted=True, seal="sealed", usage=USAGE)


@pytest.mark.parametrize(
    "answer",
    [TEXT, CALLS, WireAnswer(), THINKING, REDACTED],
    ids=["text", "tools", "empty", "thinking", "redacted"],
)
def test_a_streamed_answer_accumulates_to_the_plain_one(wire: Any, answer: WireAnswer) -> None:
    client = wire.anthropic(wire.Played(ANTHROPIC, answer))
    plain = create(client)

    with client.messages.stream(model="claude-x", max_tokens=100, messages=USER) as stream:
        texts = list(stream.text_stream)
        streamed = stream.get_final_message()

    assert "".join(texts) == answer.text
    assert streamed.id == plain.id
    assert [block.model_dump(exclude={"parsed_output"}) for block in streamed.content] == [
        block.model_dump() for block in plain.content
    ]
    assert streamed.stop_reason == plain.stop_reason
    assert streamed.usage == plain.usage


def test_the_async_client_reads_plain_and_streamed_answers(wire: Any) -> None:
    client = wire.async_anthropic(wire.Played(ANTHROPIC, CALLS))

    async def run() -> tuple[Any, Any]:
        plain = await client.messages.create(model="claude-x", max_tokens=100, messages=USER)
        async with client.messages.stream(
            model="claude-x", max_tokens=100, messages=USER
        ) as stream:
            return plain, await stream.get_final_message()

    plain, streamed = asyncio.run(run())

    assert [block.type for block in plain.content] == ["text", "tool_use", "tool_use"]
    assert [block.type for block in streamed.content] == ["text", "tool_use", "tool_use"]
    assert streamed.content[1].input == {"city": "Paris", "days": [1, 2]}


def test_stream_events_follow_the_api_sequence(wire: Any) -> None:
    client = wire.anthropic(wire.Played(ANTHROPIC, CALLS))

    kinds = [event.type for event in create(client, stream=True)]

    assert kinds[0] == "message_start"
    assert kinds[-2:] == ["message_delta", "message_stop"]
    starts = [i for i, kind in enumerate(kinds) if kind == "content_block_start"]
    stops = [i for i, kind in enumerate(kinds) if kind == "content_block_stop"]
    assert len(starts) == len(stops) == 3
    assert all(start < stop for start, stop in zip(starts, stops, strict=True))


@pytest.mark.parametrize(
    ("answer", "first"),
    [
        (TEXT, ["message_start", "content_block_start", "ping", "content_block_delta"]),
        (REDACTED, ["message_start", "content_block_start", "ping", "content_block_stop"]),
    ],
)
def test_the_ping_follows_the_first_block_start_as_the_api_sends_it(
    answer: WireAnswer, first: list[str]
) -> None:
    chunks = ANTHROPIC.stream_chunks(answer, model="m", response_id="r", include_usage=True)
    events = [chunk.split(b"\n", 1)[0].decode().removeprefix("event: ") for chunk in chunks]

    assert events[:4] == first


def test_stream_chunks_are_named_events() -> None:
    chunks = ANTHROPIC.stream_chunks(CALLS, model="m", response_id="r", include_usage=False)

    assert chunks == ANTHROPIC.stream_chunks(CALLS, model="m", response_id="r", include_usage=False)
    for chunk in chunks:
        event, data = chunk.decode().removesuffix("\n\n").split("\n")
        assert json.loads(data.removeprefix("data: "))["type"] == event.removeprefix("event: ")


# --- agentrig's own provider reads it too ------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_the_anthropic_provider_gets_the_scripted_answer(wire: Any, stream: bool) -> None:
    request = InferenceRequest(messages=[Message.user("Weather?")], llm_config=LlmConfig())

    def infer(answer: WireAnswer) -> InferenceResponse:
        client = wire.anthropic(wire.Played(ANTHROPIC, answer))
        return AnthropicProvider(client=client, model="claude-x", stream=stream).infer(request)

    text, calls, refused = infer(TEXT), infer(CALLS), infer(WireAnswer(refusal="No."))

    assert (text.content, text.tool_calls, text.finish_reason) == (TEXT.text, (), "stop")
    assert text.usage == USAGE
    assert (text.model, text.response_id) == (wire.model, wire.response_id)
    assert (calls.content, calls.tool_calls) == (CALLS.text, CALLS.tool_calls)
    assert calls.finish_reason is FinishReason.TOOL_CALLS
    assert (refused.content, refused.finish_reason) == ("No.", FinishReason.CONTENT_FILTER)


@pytest.mark.parametrize(
    ("status", "error_class", "kind", "retryable"),
    [
        (400, "BadRequestError", "invalid_request_error", False),
        (401, "AuthenticationError", "authentication_error", False),
        (404, "NotFoundError", "not_found_error", False),
        (429, "RateLimitError", "rate_limit_error", True),
        (500, "InternalServerError", "api_error", True),
        (529, "OverloadedError", "overloaded_error", True),
    ],
)
def test_error_bodies_raise_the_sdk_error_of_the_status(
    wire: Any, status: int, error_class: str, kind: str, retryable: bool
) -> None:
    body = ANTHROPIC.error_body(status, "scripted failure", param="messages[0]")

    def handler(request: Any) -> Any:
        return wire.json_answer(body, status)

    with pytest.raises(getattr(anthropic, error_class)) as raised:
        create(wire.anthropic(handler))
    assert raised.value.body == {
        "type": "error",
        "error": {"type": kind, "message": "messages[0]: scripted failure"},
    }
    with pytest.raises(ProviderError, match="scripted failure") as mapped:
        AnthropicProvider(client=wire.anthropic(handler), model="claude-x").infer(
            InferenceRequest()
        )
    assert mapped.value.retryable is retryable


# --- requests ------------------------------------------------------------------------------


def test_a_whole_conversation_is_read() -> None:
    body = {
        "model": "claude-x",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": " Use tools."}],
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "s"},
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_a",
                        "name": "weather",
                        "input": {"city": "Paris"},
                    },
                    {"type": "tool_use", "id": "toolu_b", "name": "time", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_a", "content": "sunny"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_b",
                        "content": [{"type": "text", "text": "clock broken"}],
                        "is_error": True,
                    },
                    {"type": "text", "text": "And tomorrow?"},
                ],
            },
        ],
        "tools": [
            {
                "name": "weather",
                "description": "The weather.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
            {"name": "time", "input_schema": {"type": "object"}, "type": "custom"},
            {"type": "web_search_20250305", "name": "web_search"},
        ],
        "stream": True,
        "temperature": 0.5,
    }

    request = ANTHROPIC.parse_request(json.dumps(body).encode())

    assert (request.format, request.model, request.system) == (
        "anthropic",
        "claude-x",
        "Be brief. Use tools.",
    )
    assert summary(request.messages) == [
        ("user", "Weather in Paris?", (), None),
        (
            "assistant",
            "Checking.",
            (("toolu_a", "weather", {"city": "Paris"}), ("toolu_b", "time", {})),
            None,
        ),
        ("tool", "sunny", (), ("toolu_a", "weather", False)),
        ("tool", "clock broken", (), ("toolu_b", "time", True)),
        ("user", "And tomorrow?", (), None),
    ]
    assert [(t.name, t.description) for t in request.tools] == [
        ("weather", "The weather."),
        ("time", ""),
    ]
    assert request.stream is True
    assert request.settings == {"max_tokens": 1024, "temperature": 0.5}


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"\xff\xfe", "body: not valid JSON"),
        (b'{"max_tokens": 1, "messages": []}', "model: missing"),
        (b'{"model": "m", "messages": []}', "max_tokens: missing"),
        (b'{"model": "m", "max_tokens": "1", "messages": []}', "max_tokens: expected an integer"),
        (b'{"model": "m", "max_tokens": 1}', "messages: missing"),
        (
            b'{"model": "m", "max_tokens": 1, "messages": [{"role": "system", "content": "x"}]}',
            "messages[0].role: 'system' is not one of user, assistant",
        ),
        (
            b'{"model": "m", "max_tokens": 1, "messages": [{"role": "user"}]}',
            "messages[0].content: missing",
        ),
        (
            b'{"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": null}]}',
            "messages[0].content: expected a string or an array, got null",
        ),
        (
            b'{"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}',
            "messages[0].content[0].tool_use_id: missing",
        ),
        (
            b'{"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "x"}]}]}',
            "messages[0].content[0].input: expected an object, got a string",
        ),
        (
            b'{"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "", "name": "f"}]}]}',
            "messages[0].content[0].id: empty",
        ),
        (
            b'{"model": "m", "max_tokens": 1, "messages": [], "system": 3}',
            "system: expected a string or an array, got an integer",
        ),
        (
            b'{"model": "m", "max_tokens": 1, "messages": [], "tools": [{"name": "f"}]}',
            "tools[0].input_schema: missing",
        ),
        (
            b'{"model": "m", "max_tokens": 1, "messages": [], "tools": [{"input_schema": {}}]}',
            "tools[0].name: missing",
        ),
    ],
)
def test_a_request_that_cannot_be_read_names_the_field(body: bytes, error: str) -> None:
    with pytest.raises(WireError) as raised:
        ANTHROPIC.parse_request(body)

    assert raised.value.message.startswith(error)


# --- against reality -------------------------------------------------------------------------

ANTHROPIC_CASSETTES = [
    "pydantic-ai/test_anthropic/test_anthropic_mixed_strict_tool_run.yaml",
    "llm-anthropic/test_anthropic/test_tools.yaml",
]


def parsed_by_provider(wire: Any, handler: Callable[[Any], Any], stream: bool) -> InferenceResponse:
    client = wire.anthropic(handler)
    return AnthropicProvider(client=client, model="claude-x", stream=stream).infer(
        InferenceRequest(messages=[Message.user("x")])
    )


def as_answer(response: InferenceResponse) -> WireAnswer:
    """The answer the endpoint would play to say what ``response`` says."""
    return WireAnswer(
        text=response.content,
        tool_calls=response.tool_calls,
        usage=response.usage,
        finish_reason=response.finish_reason,
    )


@pytest.mark.parametrize("relative", ANTHROPIC_CASSETTES)
def test_every_real_answer_and_its_encoding_parse_alike(
    wire: Any, recorded: Callable[[str], list[Any]], relative: str
) -> None:
    for interaction in recorded(relative):
        real = parsed_by_provider(wire, interaction.replay, interaction.streamed)
        answer = as_answer(real)
        if interaction.streamed:
            content = b"".join(
                ANTHROPIC.stream_chunks(
                    answer, model=real.model, response_id=real.response_id, include_usage=True
                )
            )
            ours = parsed_by_provider(wire, lambda _, c=content: wire.event_stream(c), stream=True)
        else:
            body = ANTHROPIC.response_body(answer, model=real.model, response_id=real.response_id)
            ours = parsed_by_provider(wire, lambda _, b=body: wire.json_answer(b), stream=False)

        assert ours.model_dump(exclude={"created_at", "id"}) == real.model_dump(
            exclude={"created_at", "id"}
        )


@pytest.mark.parametrize("relative", ANTHROPIC_CASSETTES)
def test_the_sdk_reads_a_real_answer_and_its_encoding_alike(
    wire: Any, recorded: Callable[[str], list[Any]], relative: str
) -> None:
    for interaction in recorded(relative):
        answer = as_answer(parsed_by_provider(wire, interaction.replay, interaction.streamed))
        if interaction.streamed:
            with wire.anthropic(interaction.replay).messages.stream(
                model="m", max_tokens=10, messages=USER
            ) as stream:
                real = stream.get_final_message()
            played = wire.Played(ANTHROPIC, answer)
            with wire.anthropic(played).messages.stream(
                model="m", max_tokens=10, messages=USER
            ) as stream:
                ours = stream.get_final_message()
        else:
            real = create(wire.anthropic(interaction.replay))
            ours = create(wire.anthropic(wire.Played(ANTHROPIC, answer)))

        def blocks(message: Any) -> list[tuple[Any, ...]]:
            return [
                (
                    b.type,
                    getattr(b, "text", None),
                    getattr(b, "id", None),
                    getattr(b, "input", None),
                )
                for b in message.content
            ]

        assert blocks(ours) == blocks(real)
        assert ours.stop_reason == real.stop_reason
        for field in ("input_tokens", "output_tokens", "cache_read_input_tokens"):
            assert getattr(ours.usage, field) == getattr(real.usage, field)


def test_every_real_request_is_read(recorded: Callable[[str], list[Any]]) -> None:
    for relative in ANTHROPIC_CASSETTES:
        for interaction in recorded(relative):
            request = ANTHROPIC.parse_request(interaction.request_body)
            sent = interaction.request_json()
            assert request.model == sent["model"]
            assert request.stream is bool(sent.get("stream"))
            assert [tool.name for tool in request.tools] == [tool["name"] for tool in sent["tools"]]


def test_real_conversations_are_read_as_sent(recorded: Callable[[str], list[Any]]) -> None:
    strict = recorded("pydantic-ai/test_anthropic/test_anthropic_mixed_strict_tool_run.yaml")[-1]
    parallel = recorded("llm-anthropic/test_anthropic/test_tools.yaml")[-1]

    first, second = (
        ANTHROPIC.parse_request(strict.request_body),
        ANTHROPIC.parse_request(parallel.request_body),
    )

    assert first.system == (
        "Always call `country_source` first, then call `capital_lookup` with that result "
        "before replying."
    )
    assert summary(first.messages) == [
        ("user", "Use the registered tools and respond exactly as `Capital: <city>`.", (), None),
        (
            "assistant",
            "I'll help you find the capital city using the available tools.",
            (("toolu_01Ttepb9joVoQFHP568v7UAL", "country_source", {}),),
            None,
        ),
        ("tool", "Japan", (), ("toolu_01Ttepb9joVoQFHP568v7UAL", "country_source", False)),
        (
            "assistant",
            "",
            (("toolu_011j5uC2Tg3TZJo3nmLtJ8Mm", "capital_lookup", {"country": "Japan"}),),
            None,
        ),
        ("tool", "Tokyo", (), ("toolu_011j5uC2Tg3TZJo3nmLtJ8Mm", "capital_lookup", False)),
    ]
    assert second.system is None
    assert summary(second.messages) == [
        ("user", "Two names for a pet pelican", (), None),
        (
            "assistant",
            " ",
            (
                ("toolu_01LtHJmixrs9NcWQkK8hu8hj", "pelican_name_generator", {}),
                ("toolu_01N8a4jWyf116qKTMqKKmjyt", "pelican_name_generator", {}),
            ),
            None,
        ),
        (
            "tool",
            "Charles",
            (),
            ("toolu_01LtHJmixrs9NcWQkK8hu8hj", "pelican_name_generator", False),
        ),
        ("tool", "Sammy", (), ("toolu_01N8a4jWyf116qKTMqKKmjyt", "pelican_name_generator", False)),
    ]


def event_shapes(events: Iterable[Any]) -> list[str]:
    """Each event's type (with its delta's type), consecutive repeats collapsed."""
    shapes: list[str] = []
    for event in events:
        delta = getattr(event, "delta", None)
        kind = getattr(delta, "type", None) if event.type == "content_block_delta" else None
        shape = f"{event.type}:{kind}" if kind else event.type
        if not shapes or shapes[-1] != shape:
            shapes.append(shape)
    return shapes


def test_a_real_stream_and_its_encoding_have_the_same_shape(
    wire: Any, recorded: Callable[[str], list[Any]]
) -> None:
    for interaction in recorded("llm-anthropic/test_anthropic/test_tools.yaml"):
        answer = as_answer(parsed_by_provider(wire, interaction.replay, stream=True))
        content = b"".join(
            ANTHROPIC.stream_chunks(answer, model="m", response_id="r", include_usage=False)
        )

        real = list(create(wire.anthropic(interaction.replay), stream=True))
        ours = list(create(wire.anthropic(lambda _, c=content: wire.event_stream(c)), stream=True))

        assert event_shapes(ours) == event_shapes(real)


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        (
            {"type": "any", "disable_parallel_tool_use": True},
            ToolChoice(
                mode="required",
                parallel=False,
                said='tool_choice: {"type":"any","disable_parallel_tool_use":true}',
                parallel_said="disable_parallel_tool_use: true",
            ),
        ),
        (
            {"type": "tool", "name": "weather"},
            ToolChoice(
                mode="tool", tool="weather", said='tool_choice: {"type":"tool","name":"weather"}'
            ),
        ),
        ({"type": "auto"}, ToolChoice(said='tool_choice: {"type":"auto"}')),
        ({"type": "none"}, ToolChoice(mode="none", said='tool_choice: {"type":"none"}')),
    ],
)
def test_tool_choice_says_what_the_model_may_answer(
    choice: dict[str, Any], expected: ToolChoice
) -> None:
    body = {"model": "m", "max_tokens": 5, "messages": USER, "tool_choice": choice}

    assert ANTHROPIC.tool_choice(ANTHROPIC.parse_request(json.dumps(body).encode())) == expected
