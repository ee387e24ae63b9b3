"""The three provider wire formats the endpoint speaks, by name and by request path."""

from __future__ import annotations

from agentrig.harness.endpoint.wire.anthropic import ANTHROPIC
from agentrig.harness.endpoint.wire.base import (
    FormatName,
    WireAnswer,
    WireError,
    WireFormat,
    WireRequest,
)
from agentrig.harness.endpoint.wire.chat import CHAT
from agentrig.harness.endpoint.wire.responses import RESPONSES

FORMATS: dict[FormatName, WireFormat] = {fmt.name: fmt for fmt in (CHAT, RESPONSES, ANTHROPIC)}
"""Every wire format by its name."""

FORMATS_BY_PATH: dict[str, WireFormat] = {fmt.path: fmt for fmt in FORMATS.values()}
"""Every wire format by the path its requests are posted to (``/v1/chat/completions``...)."""

__all__ = [
    "FORMATS",
    "FORMATS_BY_PATH",
    "FormatName",
    "WireAnswer",
    "WireError",
    "WireFormat",
    "WireRequest",
]
