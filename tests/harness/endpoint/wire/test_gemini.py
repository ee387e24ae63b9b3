"""The Gemini wire format against the official ``google-genai`` SDK: what the SDK reads of each
answer, and what the format reads of each request the SDK (or a framework on it) sends."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from agentrig.harness.endpoint.wire._common import ANONYMOUS_CALL, adopt_call_ids, message
from agentrig.harness.endpoint.wire.base import WireAnswer, WireError
from agentrig.harness.endpoint.wire.gemini import GEMINI, json_schema_of, standard_base64
from agentrig.messages import Role, ToolCall
from agentrig.state import Usage
from agentrig.state.status import FinishReason

genai = pytest.importorskip("google.genai")
types = genai.types

USAGE = Usage(input_tokens=40, output_tokens=9, cache_read_tokens=10, reasoning_tokens=3)
TEXT = WireAnswer(text="It is sunny in Paris, 21 °C.", usage=USAGE)
CALLS = WireAnswer(
    text="Let me check.",
    tool_calls=(
        ToolCall(id="call_a", name="weather", arguments={"city": "Paris", "days": [1, 2]}),
        ToolCall(id="call_b", name="time", arguments={}),
    ),
    usage=USAGE,
)
SEAL = base64.b64encode(b"agentrig reasoning \xfb\xff 1").decode()  # with + and / in it
REASONED = WireAnswer(
    reasoning="The user wants the weather.",
    tool_calls=(ToolCall(id="call_a", name="weather", arguments={"city": "Paris"}),),
    seal=SEAL,
)


def generate(client: Any, **config: Any) -> Any:
    return client.models.generate_content(
        model="gemini-x",
        contents="Weather in Paris?",
        config=types.GenerateContentConfig(**config) if config else None,
    )


def streamed(client: Any) -> list[Any]:
    return list(client.models.generate_content_stream(model="gemini-x", contents="Weather?"))


def body(**members: Any) -> bytes:
    return json.dumps(
        {"contents": [{"role": "user", "parts": [{"text": "q"}]}], **members}
    ).encode()


def read(data: object, target: str = "/v1beta/models/gemini-x:generateContent") -> Any:
    return GEMINI.read(target, json.dumps(data).encode())


# --- the SDK reads what the format writes ------------------------------------------------


def test_a_text_answer_parses_into_the_sdk_response(wire: Any) -> None:
    response = generate(wire.gemini(wire.Played(GEMINI, TEXT)))

    assert response.text == TEXT.text
    assert (response.response_id, response.model_version) == (wire.response_id, wire.model)
    assert response.candidates[0].finish_reason == types.FinishReason.STOP
    usage = response.usage_metadata
    assert (usage.prompt_token_count, usage.cached_content_token_count) == (40, 10)
    assert (usage.candidates_token_count, usage.thoughts_token_count) == (6, 3)
    assert usage.total_token_count == 49


def test_text_and_parallel_calls_parse_into_the_sdk_response(wire: Any) -> None:
    response = generate(wire.gemini(wire.Played(GEMINI, CALLS)))

    parts = response.candidates[0].content.parts
    assert parts[0].text == "Let me check."
    assert [(c.id, c.name, c.args) for c in response.function_calls] == [
        ("call_a", "weather", {"city": "Paris", "days": [1, 2]}),
        ("call_b", "time", {}),
    ]
    assert response.candidates[0].finish_reason == types.FinishReason.STOP


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (WireAnswer(text="cut", finish_reason=FinishReason.LENGTH), "MAX_TOKENS"),
        (WireAnswer(refusal="I can't help with that."), "SAFETY"),
        (WireAnswer(text="x", finish_reason=FinishReason.CONTENT_FILTER), "SAFETY"),
        (WireAnswer(text="x", finish_reason=FinishReason.OTHER), "OTHER"),
        (WireAnswer(text="x", finish_reason=FinishReason.ERROR), "OTHER"),
        (CALLS, "STOP"),
    ],
)
def test_finish_reasons_use_the_api_words(wire: Any, answer: WireAnswer, expected: str) -> None:
    response = generate(wire.gemini(wire.Played(GEMINI, answer)))

    assert response.candidates[0].finish_reason == types.FinishReason(expected)


def test_reasoning_comes_as_a_thought_and_seals_the_first_call(wire: Any) -> None:
    response = generate(wire.gemini(wire.Played(GEMINI, REASONED)))

    thought, called = response.candidates[0].content.parts
    assert (thought.thought, thought.text) == (True, "The user wants the weather.")
    assert called.function_call.name == "weather"
    assert called.thought_signature == base64.b64decode(SEAL)
    assert response.text is None  # a thought is not the answer's text


def test_redacted_reasoning_sends_the_signature_alone(wire: Any) -> None:
    answer = WireAnswer(text="Sunny.", reasoning="hidden", redacted=True, seal=SEAL)
    response = generate(wire.gemini(wire.Played(GEMINI, answer)))

    (part,) = response.candidates[0].content.parts
    assert (part.text, part.thought, part.thought_signature) == (
        "Sunny.",
        None,
        base64.b64decode(SEAL),
    )


def test_reasoning_without_text_or_calls_still_hands_its_signature_over(wire: Any) -> None:
    answer = WireAnswer(reasoning="hm", seal=SEAL)
    response = generate(wire.gemini(wire.Played(GEMINI, answer)))

    thought, sealed = response.candidates[0].content.parts
    assert thought.thought
    assert sealed.thought_signature == base64.b64decode(SEAL)


def _merged(parts: list[Any]) -> list[tuple[Any, ...]]:
    """Parts as tuples, runs of text (or of thought) joined, as a client accumulates them."""
    found: list[list[Any]] = []
    for part in parts:
        kind = "call" if part.function_call else ("thought" if part.thought else "text")
        if found and kind != "call" and found[-1][0] == kind and not part.thought_signature:
            found[-1][1] += part.text or ""
            continue
        call = part.function_call
        found.append(
            [
                kind,
                part.text or "",
                call and (call.id, call.name, call.args),
                part.thought_signature,
            ]
        )
    return [tuple(entry) for entry in found if entry[1] or entry[2] or entry[3]]


@pytest.mark.parametrize(
    "answer",
    [TEXT, CALLS, REASONED, WireAnswer(), WireAnswer(text="ok", reasoning="r", seal=SEAL)],
    ids=["text", "tools", "reasoned", "empty", "reasoned-text"],
)
def test_a_streamed_answer_accumulates_to_the_plain_one(wire: Any, answer: WireAnswer) -> None:
    client = wire.gemini(wire.Played(GEMINI, answer))
    plain = generate(client)

    chunks = streamed(client)

    parts = [part for chunk in chunks for part in chunk.candidates[0].content.parts or ()]
    assert _merged(parts) == _merged(plain.candidates[0].content.parts)
    assert chunks[-1].candidates[0].finish_reason == plain.candidates[0].finish_reason
    assert all(chunk.candidates[0].finish_reason is None for chunk in chunks[:-1])
    assert chunks[-1].usage_metadata == plain.usage_metadata
    assert {chunk.response_id for chunk in chunks} == {plain.response_id}
    assert {chunk.model_version for chunk in chunks} == {plain.model_version} == {wire.model}


def test_a_stream_sends_text_word_by_word_and_calls_whole() -> None:
    events = GEMINI.stream_chunks(CALLS, model="m", response_id="r", include_usage=False)

    assert all(event.startswith(b"data: ") and event.endswith(b"\r\n\r\n") for event in events)
    chunks = [json.loads(event[6:]) for event in events]
    parts = [chunk["candidates"][0]["content"]["parts"] for chunk in chunks]
    assert parts == [
        [{"text": "Let"}],
        [{"text": " me"}],
        [{"text": " check."}],
        [
            {
                "functionCall": {
                    "id": "call_a",
                    "name": "weather",
                    "args": {"city": "Paris", "days": [1, 2]},
                }
            },
            {"functionCall": {"id": "call_b", "name": "time", "args": {}}},
        ],
    ]
    assert chunks[0]["usageMetadata"] == {
        "promptTokenCount": 40,
        "totalTokenCount": 40,
        "cachedContentTokenCount": 10,
    }


def test_the_async_client_reads_plain_and_streamed_answers(wire: Any) -> None:
    client = wire.gemini(wire.Played(GEMINI, CALLS), asynchronous=True)

    async def run() -> tuple[Any, list[Any]]:
        plain = await client.aio.models.generate_content(model="gemini-x", contents="q")
        chunks = [
            c
            async for c in await client.aio.models.generate_content_stream(
                model="gemini-x", contents="q"
            )
        ]
        return plain, chunks

    plain, chunks = asyncio.run(run())

    assert [c.name for c in plain.function_calls] == ["weather", "time"]
    assert [c.name for chunk in chunks for c in chunk.function_calls or ()] == ["weather", "time"]


@pytest.mark.parametrize(
    ("status", "error", "name"),
    [
        (400, "ClientError", "INVALID_ARGUMENT"),
        (401, "ClientError", "UNAUTHENTICATED"),
        (404, "ClientError", "NOT_FOUND"),
        (429, "ClientError", "RESOURCE_EXHAUSTED"),
        (418, "ClientError", "INVALID_ARGUMENT"),
        (500, "ServerError", "INTERNAL"),
        (503, "ServerError", "UNAVAILABLE"),
        (529, "ServerError", "INTERNAL"),
    ],
)
def test_error_bodies_raise_the_sdk_error_of_the_status(
    wire: Any, status: int, error: str, name: str
) -> None:
    def answer(_: Any) -> Any:
        return wire.json_answer(GEMINI.error_body(status, "it broke", param="contents"), status)

    with pytest.raises(getattr(genai.errors, error)) as raised:
        generate(wire.gemini(answer))

    assert (raised.value.code, raised.value.status, raised.value.message) == (
        status,
        name,
        "it broke",
    )
    violations = raised.value.details["error"]["details"][0]["fieldViolations"]
    assert violations == [{"field": "contents", "description": "it broke"}]


# --- the format reads what the SDK writes ------------------------------------------------


def test_the_sdk_request_is_read_with_its_model_system_tools_and_settings(wire: Any) -> None:
    played = wire.Played(GEMINI, TEXT)
    declaration = types.FunctionDeclaration(
        name="get_weather",
        description="Current weather.",
        parameters=types.Schema(
            type="OBJECT",
            properties={
                "city": types.Schema(type="STRING"),
                "days": types.Schema(type="ARRAY", items=types.Schema(type="INTEGER")),
                "unit": types.Schema(type="STRING", nullable=True, enum=["C", "F"]),
            },
            required=["city"],
        ),
    )
    generate(
        wire.gemini(played),
        system_instruction="You answer weather questions.",
        temperature=0.2,
        tools=[types.Tool(function_declarations=[declaration])],
        tool_config=types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(mode="ANY")
        ),
    )

    (request,) = played.requests
    assert (request.format, request.model, request.stream) == ("gemini", "gemini-x", False)
    assert request.system == "You answer weather questions."
    assert [(m.role, m.content) for m in request.messages] == [(Role.USER, "Weather in Paris?")]
    (tool,) = request.tools
    assert (tool.name, tool.description) == ("get_weather", "Current weather.")
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "array", "items": {"type": "integer"}},
            "unit": {"type": ["string", "null"], "enum": ["C", "F"]},
        },
        "required": ["city"],
    }
    assert request.settings["generationConfig"] == {"temperature": 0.2}
    assert request.settings["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert request.seals_reasoning


def test_a_streamed_sdk_request_is_read_as_a_stream(wire: Any) -> None:
    played = wire.Played(GEMINI, TEXT)

    streamed(wire.gemini(played))

    assert [(r.model, r.stream) for r in played.requests] == [("gemini-x", True)]


def test_a_whole_conversation_is_read() -> None:
    signature = base64.urlsafe_b64encode(base64.b64decode(SEAL)).decode().rstrip("=")
    request = read(
        {
            "system_instruction": {"parts": [{"text": "Be brief. "}, {"text": "Be kind."}]},
            "contents": [
                {"parts": [{"text": "Weather in Paris and Oslo?"}]},
                {
                    "role": "model",
                    "parts": [
                        {"text": "thinking...", "thought": True},
                        {"text": "Checking."},
                        {
                            "functionCall": {
                                "id": "a",
                                "name": "weather",
                                "args": {"city": "Paris"},
                            },
                            "thoughtSignature": signature,
                        },
                        {"function_call": {"name": "weather", "args": {"city": "Oslo"}}},
                    ],
                },
                {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "id": "a",
                                "name": "weather",
                                "response": {"output": "sunny"},
                            }
                        },
                        {"function_response": {"name": "weather", "response": {"error": "down"}}},
                    ],
                },
                {"role": "user", "parts": [{"text": "Thanks. "}, {"text": "And Rome?"}]},
            ],
        }
    )

    assert request.system == "Be brief. Be kind."
    user, model, paris, oslo, thanks = request.messages
    assert (user.role, user.content) == (Role.USER, "Weather in Paris and Oslo?")
    assert (model.role, model.content) == (Role.ASSISTANT, "Checking.")
    assert [(c.id, c.name, c.arguments) for c in model.tool_calls] == [
        ("a", "weather", {"city": "Paris"}),
        (f"{ANONYMOUS_CALL}1", "weather", {"city": "Oslo"}),
    ]
    assert model.provider_data == {"reasoning_seal": SEAL}  # URL-safe and unpadded, read back
    results = [
        (m.tool_result.call_id, m.tool_result.tool_name, m.content, m.tool_result.is_error)
        for m in (paris, oslo)
    ]
    assert results == [
        ("a", "weather", "sunny", False),
        (f"{ANONYMOUS_CALL}1", "weather", "down", True),
    ]
    assert (thanks.role, thanks.content) == (Role.USER, "Thanks. And Rome?")
    assert request.anonymous_calls


@pytest.mark.parametrize(
    ("response", "content"),
    [
        ({"result": "sunny"}, "sunny"),
        ({"return_value": {"temp": 21}}, '{"temp":21}'),
        ({"temp": 21, "sky": "clear"}, '{"temp":21,"sky":"clear"}'),
        ({"output": ["a", 1]}, '["a",1]'),
        (None, ""),
    ],
)
def test_a_function_response_is_read_as_its_text(response: Any, content: str) -> None:
    call = {"functionCall": {"id": "c", "name": "f", "args": {}}}
    answered = {"functionResponse": {"id": "c", "name": "f", "response": response}}
    request = read(
        {
            "contents": [
                {"role": "user", "parts": [{"text": "q"}]},
                {"role": "model", "parts": [call]},
                {"role": "user", "parts": [answered]},
            ]
        }
    )

    assert request.messages[-1].content == content
    assert not request.anonymous_calls


def test_declarations_with_a_json_schema_are_taken_as_they_are() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    request = read(
        {
            "contents": [{"parts": [{"text": "q"}]}],
            "tools": [
                {"functionDeclarations": [{"name": "f", "parametersJsonSchema": schema}]},
                {"function_declarations": [{"name": "g"}]},
                {"googleSearch": {}},
            ],
        }
    )

    assert [(t.name, t.parameters) for t in request.tools] == [
        ("f", schema),
        ("g", {"type": "object", "properties": {}}),
    ]


def test_a_gemini_schema_reads_as_json_schema() -> None:
    schema = {
        "type": "OBJECT",
        "nullable": True,
        "propertyOrdering": ["a"],
        "properties": {"a": {"anyOf": [{"type": "STRING"}, {"type": "NUMBER", "nullable": True}]}},
    }

    assert json_schema_of(schema) == {
        "type": ["object", "null"],
        "propertyOrdering": ["a"],
        "properties": {"a": {"anyOf": [{"type": "string"}, {"type": ["number", "null"]}]}},
    }


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({}, "contents: missing"),
        ({"contents": {}}, "contents: expected an array, got an object"),
        ({"contents": [{"role": "system", "parts": []}]}, "contents[0].role: 'system' is not one"),
        ({"contents": [{"role": "user"}]}, "contents[0].parts: missing"),
        ({"contents": [{"parts": [{"text": 1}]}]}, "contents[0].parts[0].text: expected a string"),
        (
            {"contents": [{"role": "model", "parts": [{"functionCall": {"args": {}}}]}]},
            "contents[0].parts[0].functionCall.name: missing",
        ),
        (
            {"contents": [{"role": "model", "parts": [{"functionCall": {"name": ""}}]}]},
            "contents[0].parts[0].functionCall.name: empty",
        ),
        (
            {
                "contents": [
                    {"role": "model", "parts": [{"functionCall": {"name": "f", "args": []}}]}
                ]
            },
            "contents[0].parts[0].functionCall.args: expected an object",
        ),
        (
            {"contents": [{"parts": [{"functionResponse": {"name": "f", "response": "x"}}]}]},
            "contents[0].parts[0].functionResponse.response: expected an object",
        ),
        (
            {"contents": [], "systemInstruction": {"parts": [{"text": 2}]}},
            "systemInstruction.parts[0].text: expected a string",
        ),
        (
            {"contents": [], "tools": [{"functionDeclarations": [{}]}]},
            "tools[0].functionDeclarations[0].name: missing",
        ),
    ],
)
def test_a_request_that_cannot_be_read_names_the_field(data: object, error: str) -> None:
    with pytest.raises(WireError) as raised:
        read(data)

    assert raised.value.message.startswith(error)


def test_a_stream_is_server_sent_events_with_alt_sse_else_one_json_array() -> None:
    target = "/v1beta/models/gemini-x:streamGenerateContent"
    with pytest.raises(WireError) as raised:
        read({"contents": []}, f"{target}?alt=proto")
    assert (raised.value.param, raised.value.message) == (
        "alt",
        "alt: 'proto' is not a stream the agentrig endpoint sends; use alt=sse (server-sent "
        "events, as the SDKs ask) or leave alt out (one JSON array)",
    )

    request = read({"contents": []}, f"{target}?key=k&alt=sse")
    assert (request.model, request.stream, request.json_array) == ("gemini-x", True, False)
    for query in ("", "?alt=json", "?key=k"):
        request = read({"contents": []}, f"{target}{query}")
        assert (request.stream, request.json_array) == (True, True)
    assert not read({"contents": []}, "/v1beta/models/gemini-x:generateContent").json_array


def test_a_json_array_stream_frames_the_events_as_elements() -> None:
    events = [b'data: {"a":1}\r\n\r\n', b'data: {"b":2}\r\n\r\n']
    assert GEMINI.json_array(events, closed=True) == [b'[{"a":1}', b'\n,\r\n{"b":2}', b"\n]"]
    assert GEMINI.json_array(events[:1], closed=False) == [b'[{"a":1}']
    assert GEMINI.json_array([], closed=True) == [b"[]"]


def test_the_model_is_read_from_any_base_path() -> None:
    target = "/v1/projects/p/locations/l/publishers/google/models/gemini-pro:generateContent"

    assert read({"contents": []}, target).model == "gemini-pro"
    with pytest.raises(WireError, match="path"):
        read({"contents": []}, "/v1beta/models/gemini-x:countTokens")


def test_a_thought_signature_is_read_in_the_standard_alphabet() -> None:
    raw = b"\xfb\xff\xfe seal"
    assert standard_base64(base64.urlsafe_b64encode(raw).decode().rstrip("=")) == (
        base64.b64encode(raw).decode()
    )
    assert standard_base64("not base64!") == "not base64!"


# --- calls sent back without their ids ---------------------------------------------------


def _anonymous_turn() -> tuple[Any, ...]:
    request = read(
        {
            "contents": [
                {"parts": [{"text": "q"}]},
                {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"name": "weather", "args": {"city": "Paris"}}},
                        {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
                    ],
                },
                {
                    "parts": [
                        {"functionResponse": {"name": "weather", "response": {"output": "1"}}},
                        {"functionResponse": {"name": "weather", "response": {"output": "2"}}},
                    ]
                },
            ]
        }
    )
    return request, request.messages


def test_results_without_ids_answer_the_calls_of_their_name_in_order() -> None:
    _, (_, model, first, second) = _anonymous_turn()

    ids = [call.id for call in model.tool_calls]
    assert [first.tool_result.call_id, second.tool_result.call_id] == ids
    assert len(set(ids)) == 2


def test_calls_without_ids_adopt_those_of_the_calls_they_repeat() -> None:
    request, messages = _anonymous_turn()
    answered = message(
        Role.ASSISTANT,
        tool_calls=(
            ToolCall(id="call_1", name="weather", arguments={"city": "Paris"}),
            ToolCall(id="call_2", name="weather", arguments={"city": "Oslo"}),
        ),
    )

    adopted = adopt_call_ids(request, (messages[0], answered))

    _, model, first, second = adopted.messages
    assert [call.id for call in model.tool_calls] == ["call_1", "call_2"]
    assert [first.tool_result.call_id, second.tool_result.call_id] == ["call_1", "call_2"]


def test_calls_that_repeat_no_call_keep_their_placeholders() -> None:
    request, messages = _anonymous_turn()
    other = message(Role.ASSISTANT, tool_calls=(ToolCall(id="x", name="time", arguments={}),))

    assert adopt_call_ids(request, (messages[0], other)) is request
    assert adopt_call_ids(request, ()) is request


@pytest.mark.parametrize(
    ("members", "shown"),
    [
        ({}, False),
        ({"generationConfig": {"thinkingConfig": {"includeThoughts": True}}}, True),
        ({"generation_config": {"thinking_config": {"include_thoughts": True}}}, True),
        ({"generationConfig": {"thinking_config": {"includeThoughts": True}}}, True),
        ({"generationConfig": {"thinkingConfig": {"includeThoughts": False}}}, False),
    ],
)
def test_thoughts_are_shown_when_asked_under_either_name(
    members: dict[str, Any], shown: bool
) -> None:
    assert GEMINI.parse_request(body(**members)).reasoning_shown is shown


def test_the_system_instruction_is_its_text_without_thoughts_and_the_body_names_no_model() -> None:
    instruction = {"parts": [{"text": "Be brief."}, {"text": "(hidden)", "thought": True}]}

    request = GEMINI.parse_request(body(systemInstruction=instruction))

    assert request.system == "Be brief."
    assert request.model == ""  # it is in the path


def test_the_model_list_and_an_error_are_in_googles_shape() -> None:
    assert GEMINI.models_body(["gemini-x"]) == {
        "models": [
            {
                "name": "models/gemini-x",
                "displayName": "gemini-x",
                "supportedGenerationMethods": ["generateContent", "streamGenerateContent"],
            }
        ]
    }
    assert GEMINI.error_body(429, "slow down") == {
        "error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}
    }
