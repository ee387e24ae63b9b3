"""The OpenAI Responses wire format against the official ``openai`` SDK and real recorded
sessions (agentrig has no Responses provider of its own)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from agentrig.harness.endpoint.wire.base import TokenLogprobs, ToolChoice, WireAnswer, WireError
from agentrig.harness.endpoint.wire.responses import RESPONSES, ResponsesFormat
from agentrig.messages import Message, ToolCall
from agentrig.state import Usage
from agentrig.state.status import FinishReason

openai = pytest.importorskip("openai")

USAGE = Usage(input_tokens=30, output_tokens=7, cache_read_tokens=4, reasoning_tokens=2)
TEXT = WireAnswer(text="It is sunny in Paris, 21 °C.", usage=USAGE)
CALLS = WireAnswer(
    text="Let me check.",
    tool_calls=(
        ToolCall(id="call_a", name="weather", arguments={"city": "Paris", "days": [1, 2]}),
        ToolCall(id="call_b", name="time", arguments={}),
    ),
    usage=USAGE,
)


def summary(messages: Iterable[Message]) -> list[tuple[Any, ...]]:
    """Messages as comparable tuples (ids and times left out)."""
    return [
        (
            message.role.value,
            message.content,
            tuple((call.id, call.name, call.arguments) for call in message.tool_calls),
            None
            if message.tool_result is None
            else (message.tool_result.call_id, message.tool_result.tool_name),
        )
        for message in messages
    ]


def outputs(response: Any) -> list[tuple[Any, ...]]:
    """The output items of an SDK ``Response`` as comparable tuples."""
    found: list[tuple[Any, ...]] = []
    for item in response.output:
        if item.type == "message":
            parts = tuple(
                (part.type, getattr(part, "text", None) or getattr(part, "refusal", None))
                for part in item.content
            )
            found.append(("message", item.role, item.status, parts))
        elif item.type == "function_call":
            found.append(
                ("function_call", item.call_id, item.name, json.loads(item.arguments), item.status)
            )
    return found


def create(client: Any, **options: Any) -> Any:
    return client.responses.create(model="gpt-x", input="Weather in Paris?", **options)


def streamed(client: Any) -> tuple[list[Any], Any]:
    """The events of a streamed request and the response the SDK assembles from them."""
    with client.responses.stream(model="gpt-x", input="Weather in Paris?") as stream:
        events = list(stream)
        return events, stream.get_final_response()


# --- the SDK reads what the format writes ------------------------------------------------


def test_a_text_answer_parses_into_the_sdk_response(wire: Any) -> None:
    response = create(wire.openai(wire.Played(RESPONSES, TEXT)))

    assert (response.id, response.model, response.status) == (
        wire.response_id,
        wire.model,
        "completed",
    )
    assert response.output_text == TEXT.text
    assert outputs(response) == [
        ("message", "assistant", "completed", (("output_text", TEXT.text),))
    ]
    assert response.usage.input_tokens == 30
    assert response.usage.output_tokens == 7
    assert response.usage.total_tokens == 37
    assert response.usage.input_tokens_details.cached_tokens == 4
    assert response.usage.output_tokens_details.reasoning_tokens == 2


def test_text_and_parallel_function_calls_parse_into_output_items(wire: Any) -> None:
    response = create(wire.openai(wire.Played(RESPONSES, CALLS)))

    assert outputs(response) == [
        ("message", "assistant", "completed", (("output_text", "Let me check."),)),
        ("function_call", "call_a", "weather", {"city": "Paris", "days": [1, 2]}, "completed"),
        ("function_call", "call_b", "time", {}, "completed"),
    ]
    assert [item.id for item in response.output] == [
        f"msg_{wire.response_id}",
        f"fc_{wire.response_id}_0",
        f"fc_{wire.response_id}_1",
    ]


def test_a_refusal_is_a_refusal_part(wire: Any) -> None:
    response = create(wire.openai(wire.Played(RESPONSES, WireAnswer(refusal="No."))))

    assert outputs(response) == [("message", "assistant", "completed", (("refusal", "No."),))]
    assert response.status == "completed"


@pytest.mark.parametrize(
    ("finish", "reason"),
    [(FinishReason.LENGTH, "max_output_tokens"), (FinishReason.CONTENT_FILTER, "content_filter")],
)
def test_a_cut_answer_is_incomplete_with_its_reason(
    wire: Any, finish: FinishReason, reason: str
) -> None:
    answer = WireAnswer(text="cut", finish_reason=finish)

    response = create(wire.openai(wire.Played(RESPONSES, answer)))
    events = list(create(wire.openai(wire.Played(RESPONSES, answer)), stream=True))

    assert (response.status, response.incomplete_details.reason) == ("incomplete", reason)
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == reason


@pytest.mark.parametrize(
    "answer",
    [TEXT, CALLS, WireAnswer(refusal="No."), WireAnswer()],
    ids=["text", "tools", "refusal", "empty"],
)
def test_a_streamed_answer_assembles_to_the_plain_one(wire: Any, answer: WireAnswer) -> None:
    client = wire.openai(wire.Played(RESPONSES, answer))
    plain = create(client)

    events, final = streamed(client)

    assert final.id == plain.id
    assert outputs(final) == outputs(plain)
    assert final.output_text == plain.output_text
    assert final.usage == plain.usage
    assert final.status == plain.status
    text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert text == answer.text


def test_the_async_client_reads_plain_and_streamed_answers(wire: Any) -> None:
    client = wire.async_openai(wire.Played(RESPONSES, CALLS))

    async def run() -> tuple[Any, Any]:
        plain = await client.responses.create(model="gpt-x", input="Weather?")
        async with client.responses.stream(model="gpt-x", input="Weather?") as stream:
            return plain, await stream.get_final_response()

    plain, streamed = asyncio.run(run())

    assert outputs(streamed) == outputs(plain)
    assert [item.type for item in plain.output] == ["message", "function_call", "function_call"]


def test_stream_events_follow_the_api_sequence(wire: Any) -> None:
    client = wire.openai(wire.Played(RESPONSES, CALLS))

    events = list(create(client, stream=True))

    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [event.sequence_number for event in events] == list(range(len(events)))
    message = kinds[2 : kinds.index("response.output_item.done") + 1]
    assert message[:2] == ["response.output_item.added", "response.content_part.added"]
    assert message[-3:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    arguments = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert [(e.item_id, json.loads(e.arguments)) for e in arguments] == [
        (f"fc_{wire.response_id}_0", {"city": "Paris", "days": [1, 2]}),
        (f"fc_{wire.response_id}_1", {}),
    ]


def test_the_encoding_is_deterministic_and_created_at_is_a_parameter() -> None:
    chunks = RESPONSES.stream_chunks(CALLS, model="m", response_id="r", include_usage=False)

    assert chunks == RESPONSES.stream_chunks(CALLS, model="m", response_id="r", include_usage=False)
    body = ResponsesFormat(created=7).response_body(TEXT, model="m", response_id="r")
    assert body["created_at"] == 7


@pytest.mark.parametrize(
    ("status", "error_class", "kind"),
    [
        (400, "BadRequestError", "invalid_request_error"),
        (401, "AuthenticationError", "invalid_request_error"),
        (429, "RateLimitError", "requests"),
        (500, "InternalServerError", "server_error"),
    ],
)
def test_error_bodies_raise_the_sdk_error_of_the_status(
    wire: Any, status: int, error_class: str, kind: str
) -> None:
    body = RESPONSES.error_body(status, "scripted failure", param="input[0]")

    with pytest.raises(getattr(openai, error_class)) as raised:
        create(wire.openai(lambda _: wire.json_answer(body, status)))
    assert (raised.value.type, raised.value.param) == (kind, "input[0]")
    assert raised.value.body["message"] == "scripted failure"


# --- requests ------------------------------------------------------------------------------


def test_a_whole_conversation_is_read() -> None:
    body = {
        "model": "gpt-x",
        "instructions": "Be brief.",
        "input": [
            {"role": "developer", "content": "Use tools."},
            {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_a",
                "name": "weather",
                "arguments": '{"city":"Paris"}',
                "status": "completed",
            },
            {"type": "function_call", "call_id": "call_b", "name": "time", "arguments": ""},
            {"type": "function_call_output", "call_id": "call_a", "output": "sunny"},
            {
                "type": "function_call_output",
                "call_id": "call_b",
                "output": [{"type": "input_text", "text": "noon"}],
            },
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "No more."}]},
            {"role": "user", "content": "Tomorrow?"},
        ],
        "tools": [
            {
                "type": "function",
                "name": "weather",
                "description": "The weather.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                "strict": True,
            },
            {"type": "function", "name": "time", "description": None, "parameters": None},
            {"type": "web_search"},
        ],
        "stream": True,
        "store": False,
        "reasoning": {"effort": "low"},
    }

    request = RESPONSES.parse_request(json.dumps(body).encode())

    assert (request.format, request.model, request.system) == (
        "responses",
        "gpt-x",
        "Be brief.\n\nUse tools.",
    )
    assert summary(request.messages) == [
        ("user", "Weather in Paris?", (), None),
        (
            "assistant",
            "Checking.",
            (("call_a", "weather", {"city": "Paris"}), ("call_b", "time", {})),
            None,
        ),
        ("tool", "sunny", (), ("call_a", "weather")),
        ("tool", "noon", (), ("call_b", "time")),
        ("assistant", "No more.", (), None),
        ("user", "Tomorrow?", (), None),
    ]
    assert [(t.name, t.description, t.parameters) for t in request.tools] == [
        ("weather", "The weather.", {"type": "object", "properties": {"city": {"type": "string"}}}),
        ("time", "", {}),
    ]
    assert [t.strict for t in request.tools] == [True, False]
    assert request.stream is True
    assert request.settings == {"store": False, "reasoning": {"effort": "low"}}


def test_an_input_string_is_one_user_message() -> None:
    request = RESPONSES.parse_request(b'{"model": "m", "input": "hi"}')

    assert summary(request.messages) == [("user", "hi", (), None)]
    assert request.system is None


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"", "body: not valid JSON"),
        (b'{"input": "x"}', "model: missing"),
        (b'{"model": "m"}', "input: missing"),
        (b'{"model": "m", "input": 3}', "input: expected a string or an array, got an integer"),
        (b'{"model": "m", "input": [{"content": "x"}]}', "input[0].role: missing"),
        (
            b'{"model": "m", "input": [{"role": "tool", "content": "x"}]}',
            "input[0].role: 'tool' is not one of",
        ),
        (
            b'{"model": "m", "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}',
            "input[0].call_id: missing",
        ),
        (
            b'{"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]}',
            "input[0].arguments: expected a string, got an object",
        ),
        (
            b'{"model": "m", "input": [{"type": "function_call_output", "call_id": "c"}]}',
            "input[0].output: missing",
        ),
        (
            b'{"model": "m", "input": [{"role": "user", "content": [{"type": "input_text"}]}]}',
            "input[0].content[0].text: missing",
        ),
        (b'{"model": "m", "input": "x", "instructions": 1}', "instructions: expected a string"),
        (
            b'{"model": "m", "input": "x", "tools": [{"type": "function", "function": {"name": "f"}}]}',
            "tools[0].name: missing",
        ),
    ],
)
def test_a_request_that_cannot_be_read_names_the_field(body: bytes, error: str) -> None:
    with pytest.raises(WireError) as raised:
        RESPONSES.parse_request(body)

    assert raised.value.message.startswith(error)


# --- against reality -------------------------------------------------------------------------

RESPONSES_CASSETTES = [
    "pydantic-ai/test_openai_responses/test_openai_responses_model_simple_response_with_tool_call.yaml",
    "llm/test_openai_responses/test_responses_tool_use_streaming.yaml",
]


def as_answer(response: Any) -> WireAnswer:
    """The answer the endpoint would play to say what the SDK ``response`` says."""
    calls = tuple(
        ToolCall(id=item.call_id, name=item.name, arguments=json.loads(item.arguments))
        for item in response.output
        if item.type == "function_call"
    )
    usage = response.usage
    return WireAnswer(
        text=response.output_text,
        tool_calls=calls,
        usage=Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.input_tokens_details.cached_tokens,
            reasoning_tokens=usage.output_tokens_details.reasoning_tokens,
        ),
    )


@pytest.mark.parametrize("relative", RESPONSES_CASSETTES)
def test_the_sdk_reads_a_real_answer_and_its_encoding_alike(
    wire: Any, recorded: Callable[[str], list[Any]], relative: str
) -> None:
    for interaction in recorded(relative):
        client = wire.openai(interaction.replay)
        real = streamed(client)[1] if interaction.streamed else create(client)
        answer = as_answer(real)
        if interaction.streamed:
            chunks = RESPONSES.stream_chunks(
                answer, model=real.model, response_id=real.id, include_usage=False
            )
            content = b"".join(chunks)
            ours = streamed(wire.openai(lambda _, c=content: wire.event_stream(c)))[1]
        else:
            body = RESPONSES.response_body(answer, model=real.model, response_id=real.id)
            ours = create(wire.openai(lambda _, b=body: wire.json_answer(b)))

        assert outputs(ours) == outputs(real)
        assert (ours.id, ours.model, ours.status) == (real.id, real.model, real.status)
        assert ours.output_text == real.output_text
        assert ours.usage == real.usage


def test_a_real_streamed_answer_and_its_encoding_have_the_same_event_types(
    wire: Any, recorded: Callable[[str], list[Any]]
) -> None:
    for interaction in recorded(RESPONSES_CASSETTES[1]):
        real_events, real = streamed(wire.openai(interaction.replay))
        content = b"".join(
            RESPONSES.stream_chunks(
                as_answer(real), model=real.model, response_id=real.id, include_usage=False
            )
        )

        our_events, _ = streamed(wire.openai(lambda _, c=content: wire.event_stream(c)))

        def distinct(events: list[Any]) -> list[str]:
            kinds: list[str] = []
            for event in events:
                if not kinds or kinds[-1] != event.type:
                    kinds.append(event.type)
            return kinds

        assert distinct(our_events) == distinct(real_events)


def test_a_real_error_body_and_ours_raise_alike(
    wire: Any, recorded: Callable[[str], list[Any]]
) -> None:
    (interaction,) = recorded(
        "pydantic-ai/test_openai_responses/test_openai_responses_model_http_error.yaml"
    )
    real_error = json.loads(interaction.response_body)["error"]
    ours = RESPONSES.error_body(400, real_error["message"], param=real_error["param"])

    raised = []
    for body in (json.loads(interaction.response_body), ours):
        with pytest.raises(openai.BadRequestError) as error:
            create(wire.openai(lambda _, b=body: wire.json_answer(b, 400)))
        raised.append(error.value)

    real, mine = raised
    assert (mine.message, mine.type, mine.param) == (real.message, real.type, real.param)


def test_every_real_request_is_read(recorded: Callable[[str], list[Any]]) -> None:
    for relative in [
        *RESPONSES_CASSETTES,
        "pydantic-ai/test_openai_responses/test_openai_responses_model_http_error.yaml",
    ]:
        for interaction in recorded(relative):
            request = RESPONSES.parse_request(interaction.request_body)
            sent = interaction.request_json()
            assert request.model == sent["model"]
            assert request.stream is bool(sent.get("stream"))
            assert [tool.name for tool in request.tools] == [
                tool["name"] for tool in sent.get("tools", ())
            ]


def test_real_conversations_are_read_as_sent(recorded: Callable[[str], list[Any]]) -> None:
    plain = recorded(RESPONSES_CASSETTES[0])[-1]
    stream = recorded(RESPONSES_CASSETTES[1])[-1]

    first, second = (RESPONSES.parse_request(i.request_body) for i in (plain, stream))

    assert summary(first.messages) == [
        ("user", "What is the capital of PotatoLand?", (), None),
        (
            "assistant",
            "",
            (("call_YfwRsW8sUxDKipwyhWTzOXCA", "get_capital", {"country": "PotatoLand"}),),
            None,
        ),
        ("tool", "Potato City", (), ("call_YfwRsW8sUxDKipwyhWTzOXCA", "get_capital")),
    ]
    assert first.settings == {"tool_choice": "auto"}
    assert summary(second.messages) == [
        ("user", "What is 1231 * 2331? Use the multiply tool.", (), None),
        (
            "assistant",
            "",
            (("call_sVidsfFJ6zlzRpelrPkTPlpd", "multiply", {"a": 1231, "b": 2331}),),
            None,
        ),
        ("tool", "2869461", (), ("call_sVidsfFJ6zlzRpelrPkTPlpd", "multiply")),
    ]
    assert second.settings == {
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "low"},
        "store": False,
    }


def sent_events(chunks: Iterable[bytes]) -> list[dict[str, Any]]:
    """The data of each server-sent event."""
    return [json.loads(chunk.split(b"\ndata: ", 1)[1]) for chunk in chunks]


def test_streamed_log_probabilities_go_a_token_a_delta_without_bytes() -> None:
    logprobs = (
        TokenLogprobs("Sun", -0.25, top=(("Sun", -0.25), ("Rain", -1.5))),
        TokenLogprobs("ny.", -0.5),
    )
    answer = WireAnswer(text="Sunny.", logprobs=logprobs, logprobs_top=2)

    chunks = RESPONSES.stream_chunks(answer, model="m", response_id="r", include_usage=True)
    events = sent_events(chunks)

    added = [event["part"] for event in events if event["type"] == "response.content_part.added"]
    assert added == [{"type": "output_text", "annotations": [], "logprobs": [], "text": ""}]
    deltas = [event for event in events if event["type"] == "response.output_text.delta"]
    assert [(delta["delta"], delta["logprobs"]) for delta in deltas] == [
        (
            "Sun",
            [
                {
                    "token": "Sun",
                    "logprob": -0.25,
                    "top_logprobs": [
                        {"token": "Sun", "logprob": -0.25},
                        {"token": "Rain", "logprob": -1.5},
                    ],
                }
            ],
        ),
        ("ny.", [{"token": "ny.", "logprob": -0.5, "top_logprobs": []}]),
    ]


def test_an_assistant_message_after_encrypted_reasoning_carries_its_seal() -> None:
    request = RESPONSES.parse_request(
        json.dumps(
            {
                "model": "m",
                "input": [
                    {"role": "user", "content": "x"},
                    {"type": "reasoning", "summary": [], "encrypted_content": "e"},
                    {"role": "assistant", "content": "hi"},
                    {"role": "user", "content": "y"},
                ],
            }
        ).encode()
    )

    assert [message.provider_data for message in request.messages] == [
        {},
        {"reasoning_seal": "e"},
        {},
    ]


def test_a_function_call_without_its_call_id_is_named() -> None:
    body = {
        "model": "m",
        "input": [{"type": "function_call", "call_id": "", "name": "f", "arguments": "{}"}],
    }
    with pytest.raises(WireError) as raised:
        RESPONSES.parse_request(json.dumps(body).encode())

    assert (raised.value.message, raised.value.param) == (
        "input[0].call_id: empty",
        "input[0].call_id",
    )


def test_tool_choice_names_a_function_and_the_parallel_setting() -> None:
    body = {
        "model": "m",
        "input": "x",
        "tool_choice": {"type": "function", "name": "weather"},
        "parallel_tool_calls": False,
    }

    assert RESPONSES.tool_choice(RESPONSES.parse_request(json.dumps(body).encode())) == ToolChoice(
        mode="tool",
        tool="weather",
        parallel=False,
        said='tool_choice: {"type":"function","name":"weather"}',
        parallel_said="parallel_tool_calls: false",
    )
