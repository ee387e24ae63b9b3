"""Text for messages: one helper that the runtime and every harness stage may use."""

from __future__ import annotations


def clipped(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit - 3`` and
    ``...`` (``limit`` characters in all): a long value quoted in an error message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


_PLURALS = {"reply": "replies"}


def unit_for(count: int, unit: str) -> str:
    """``unit`` in the singular for 1, else in the plural: ``turn``/``turns``,
    ``reply``/``replies``."""
    return unit if count == 1 else _PLURALS.get(unit, unit + "s")


def counted(count: int, unit: str) -> str:
    """``"1 reply"``, ``"2 replies"``: a count and its unit, singular or plural."""
    return f"{count} {unit_for(count, unit)}"
