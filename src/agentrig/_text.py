"""Text for messages: one helper that the runtime and every harness stage may use."""

from __future__ import annotations


def clipped(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit - 3`` and
    ``...`` (``limit`` characters in all): a long value quoted in an error message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
