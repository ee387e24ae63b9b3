"""Whatever a request body holds, reading it either succeeds or raises ``WireError``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentrig.harness.endpoint.wire import FORMATS, WireError, WireFormat

hypothesis = pytest.importorskip("hypothesis")
st = pytest.importorskip("hypothesis.strategies")
# Example counts for the default run; ``pytest --agentrig-deep`` runs 20 times as many.
fuzz_settings = pytest.importorskip("agentrig.harness.property.profiles").agentrig_settings

KEYS = [
    "model",
    "messages",
    "role",
    "content",
    "type",
    "text",
    "tool_calls",
    "tool_call_id",
    "function",
    "name",
    "arguments",
    "tools",
    "parameters",
    "stream",
    "stream_options",
    "include_usage",
    "input",
    "instructions",
    "call_id",
    "output",
    "system",
    "max_tokens",
    "id",
    "input_schema",
    "tool_use_id",
    "is_error",
    "refusal",
    "include",
    "encrypted_content",
    "summary",
    "thinking",
    "signature",
    "reasoning_content",
    "contents",
    "parts",
    "systemInstruction",
    "functionCall",
    "functionResponse",
    "functionDeclarations",
    "parametersJsonSchema",
    "args",
    "response",
    "thought",
    "thoughtSignature",
]
ROLES = ["user", "assistant", "system", "developer", "tool", "model"]
TYPES = [
    "text",
    "function",
    "message",
    "input_text",
    "output_text",
    "function_call",
    "function_call_output",
    "reasoning",
    "refusal",
    "tool_use",
    "tool_result",
    "image",
    "thinking",
    "redacted_thinking",
    "reasoning.encrypted_content",
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(ROLES + TYPES)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), children, max_size=6)
    ),
    max_leaves=40,
)


def read(fmt: WireFormat, body: bytes) -> None:
    """Read ``body``; a refusal must name a field and say what is wrong with it."""
    refused: WireError | None = None
    try:
        fmt.parse_request(body)
    except WireError as error:
        refused = error
    if refused is not None:
        field, _, reason = refused.message.partition(": ")
        assert field
        assert reason


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=FORMATS.keys())
@fuzz_settings(max_examples=25)
@hypothesis.given(data=json_values)
def test_any_json_is_read_or_refused_with_a_wire_error(fmt: WireFormat, data: Any) -> None:
    read(fmt, json.dumps(data).encode())


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=FORMATS.keys())
@fuzz_settings(max_examples=25)
@hypothesis.given(
    model=scalars,
    conversation=st.lists(json_values, max_size=4),
    extra=st.dictionaries(st.sampled_from(KEYS), json_values, max_size=3),
)
def test_any_conversation_is_read_or_refused_with_a_wire_error(
    fmt: WireFormat, model: Any, conversation: list[Any], extra: dict[str, Any]
) -> None:
    for key in ("messages", "input"):
        body = {"model": model, "max_tokens": 10, key: conversation, **extra}
        read(fmt, json.dumps(body).encode())


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=FORMATS.keys())
@fuzz_settings(max_examples=25)
@hypothesis.given(body=st.binary(max_size=64))
def test_any_bytes_are_read_or_refused_with_a_wire_error(fmt: WireFormat, body: bytes) -> None:
    read(fmt, body)


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=FORMATS.keys())
@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"model": "m", "messages": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    ],
    ids=["deep-array", "deep-messages"],
)
def test_deep_nesting_is_refused_with_a_wire_error(fmt: WireFormat, body: bytes) -> None:
    read(fmt, body)


# Valid bodies of each format; the test below breaks one member at a time.
VALID: dict[str, dict[str, Any]] = {
    "chat": {
        "model": "m",
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": [{"type": "text", "text": "u"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": "r"},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "stream": True,
        "stream_options": {"include_usage": True},
    },
    "responses": {
        "model": "m",
        "instructions": "s",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "u"}]},
            {"type": "reasoning", "id": "rs", "summary": [], "encrypted_content": "e"},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "r"},
        ],
        "tools": [{"type": "function", "name": "f", "parameters": {}}],
        "stream": True,
        "include": ["reasoning.encrypted_content"],
    },
    "anthropic": {
        "model": "m",
        "max_tokens": 10,
        "system": [{"type": "text", "text": "s"}],
        "messages": [
            {"role": "user", "content": "u"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "t", "signature": "sig"},
                    {"type": "tool_use", "id": "c", "name": "f", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "c",
                        "content": [{"type": "text", "text": "r"}],
                    }
                ],
            },
        ],
        "tools": [{"name": "f", "input_schema": {}}],
        "stream": True,
    },
    "gemini": {
        "systemInstruction": {"parts": [{"text": "s"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "u"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "t", "thought": True},
                    {
                        "functionCall": {"id": "c", "name": "f", "args": {}},
                        "thoughtSignature": "c2ln",
                    },
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "c", "name": "f", "response": {"output": "r"}}}
                ],
            },
        ],
        "tools": [
            {"functionDeclarations": [{"name": "f", "parameters": {"type": "OBJECT"}}]},
            {"googleSearch": {}},
        ],
    },
}


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every member path inside ``value`` (keys and indexes)."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(paths(item, (*prefix, index)))
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of ``value`` with the member at ``path`` set to ``new`` (``DELETE``: removed)."""
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    head, rest = path[0], path[1:]
    if rest or new is not DELETE:
        copy[head] = replaced(value[head], rest, new)
    else:
        del copy[head]
    return copy


DELETE = object()


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=FORMATS.keys())
def test_the_valid_bodies_are_read(fmt: WireFormat) -> None:
    request = fmt.parse_request(json.dumps(VALID[fmt.name]).encode())

    assert [message.role.value for message in request.messages] == ["user", "assistant", "tool"]
    assert request.system == "s"
    sealed = {
        "chat": {},
        "responses": {"reasoning_seal": "e"},
        "anthropic": {"reasoning_seal": "sig"},
        "gemini": {"reasoning_seal": "c2ln"},
    }
    assert request.messages[1].provider_data == sealed[fmt.name]
    assert request.seals_reasoning is (fmt.name != "chat")


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=FORMATS.keys())
@fuzz_settings(max_examples=50)
@hypothesis.given(data=st.data())
def test_a_valid_body_with_one_member_broken_is_read_or_refused_with_a_wire_error(
    fmt: WireFormat, data: Any
) -> None:
    body = VALID[fmt.name]
    path = data.draw(st.sampled_from(paths(body)))
    new = data.draw(st.just(DELETE) | json_values)

    read(fmt, json.dumps(replaced(body, path, new)).encode())
