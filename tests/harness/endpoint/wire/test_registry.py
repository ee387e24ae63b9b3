"""The registry of wire formats: by name, by path."""

from __future__ import annotations

import pytest

from agentrig.harness.endpoint.wire import FORMATS, FORMATS_BY_PATH, format_for_path, json_bytes


def test_every_format_is_registered_by_name_and_path() -> None:
    assert {name: fmt.path for name, fmt in FORMATS.items()} == {
        "chat": "/v1/chat/completions",
        "responses": "/v1/responses",
        "anthropic": "/v1/messages",
        "gemini": "/v1beta/models/{model}:generateContent",
    }
    assert all(FORMATS_BY_PATH[fmt.path] is fmt for fmt in FORMATS.values())


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/v1/chat/completions", "chat"),
        ("/chat/completions", "chat"),
        ("/openai/v1/responses/", "responses"),
        ("/session-7/v1/messages", "anthropic"),
        ("/messages", "anthropic"),
        ("/v1beta/models/gemini-2.5-flash:generateContent", "gemini"),
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent", "gemini"),
        ("/v1/projects/p/locations/l/publishers/google/models/g:generateContent", "gemini"),
        ("/v1beta/models/gemini-2.5-flash:countTokens", None),
        ("/v1beta/models", None),
        ("/v1/models", None),
        ("/v1/threads/t/messages", None),
    ],
)
def test_a_path_finds_its_format(path: str, name: str | None) -> None:
    found = format_for_path(path)

    assert (found.name if found is not None else None) == name


def test_json_bytes_is_compact_utf8() -> None:
    assert json_bytes({"a": [1, "é"]}) == '{"a":[1,"é"]}'.encode()
