"""The provider wire formats the endpoint speaks, by name and by request path."""

from __future__ import annotations

from agentrig.harness.endpoint.wire._common import CREATED, json_bytes
from agentrig.harness.endpoint.wire.anthropic import ANTHROPIC
from agentrig.harness.endpoint.wire.base import (
    FormatName,
    WireAnswer,
    WireError,
    WireFormat,
    WireRequest,
)
from agentrig.harness.endpoint.wire.chat import CHAT
from agentrig.harness.endpoint.wire.gemini import GEMINI
from agentrig.harness.endpoint.wire.responses import RESPONSES

FORMATS: dict[FormatName, WireFormat] = {
    fmt.name: fmt for fmt in (CHAT, RESPONSES, ANTHROPIC, GEMINI)
}
"""Every wire format by its name."""

FORMATS_BY_PATH: dict[str, WireFormat] = {fmt.path: fmt for fmt in FORMATS.values()}
"""Every wire format by the path its requests are posted to (``/v1/chat/completions``...)."""


RESPONSE_ID_PREFIX: dict[FormatName, str] = {
    "chat": "chatcmpl-agentrig-",
    "responses": "resp_agentrig_",
    "anthropic": "msg_agentrig_",
    "gemini": "agentrig-gemini-",
}
"""What the id of an answer starts with, in each format."""


def response_id(fmt: FormatName, number: str) -> str:
    """The id an answer carries in format ``fmt`` (a Responses client sends it back as
    ``previous_response_id``)."""
    return RESPONSE_ID_PREFIX[fmt] + number


def format_for_path(path: str) -> WireFormat | None:
    """The format whose requests go to ``path``: its own path, that path behind a prefix
    (``/openai/v1/responses``) or without its ``/v1`` (``/chat/completions``), a Gemini
    ``.../models/MODEL:generateContent``; None if none (``WireFormat.matches``)."""
    found = FORMATS_BY_PATH.get(path)
    if found is not None:
        return found
    return next((fmt for fmt in FORMATS.values() if fmt.matches(path)), None)


__all__ = [
    "CREATED",
    "FORMATS",
    "FORMATS_BY_PATH",
    "RESPONSE_ID_PREFIX",
    "FormatName",
    "WireAnswer",
    "WireError",
    "WireFormat",
    "WireRequest",
    "format_for_path",
    "json_bytes",
    "response_id",
]
