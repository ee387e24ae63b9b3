"""Choosing scenarios: ``-k`` expressions over names and tags, and ``--shard i/n``."""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentrig.errors import AgentrigError
from agentrig.harness.scenario_model import Scenario

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")
_KEYWORDS = {"and", "or", "not"}


class SelectionError(AgentrigError):
    """A ``-k`` expression or a ``--shard`` value is malformed."""


def matches(expression: str, scenario: Scenario) -> bool:
    """Whether ``scenario`` matches a ``-k`` expression.

    Words combine with ``and``, ``or``, ``not`` and parentheses; a word matches when it is a
    substring of the name or equals a tag (case-insensitive): ``-k "budget and not inline"``.
    """
    tokens = _TOKEN.findall(expression)
    parts: list[str] = []
    for token in tokens:
        if token in ("(", ")") or token.lower() in _KEYWORDS:
            parts.append(token.lower())
        else:
            parts.append(str(_word_matches(token, scenario)))
    try:
        return bool(eval(" ".join(parts) or "True", {"__builtins__": {}}, {}))
    except SyntaxError:
        raise SelectionError(f"invalid -k expression: {expression!r}") from None


def _word_matches(word: str, scenario: Scenario) -> bool:
    lowered = word.lower()
    return lowered in scenario.name.lower() or lowered in (tag.lower() for tag in scenario.tags)


def parse_shard(value: str) -> tuple[int, int]:
    """``"i/n"`` as ``(i, n)`` with 1 <= i <= n."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", value)
    if match is None:
        raise SelectionError(f"--shard must look like i/n (e.g. 1/4), got {value!r}")
    index, total = int(match[1]), int(match[2])
    if not 1 <= index <= total:
        raise SelectionError(f"--shard {value}: i must be between 1 and n")
    return index, total


def select(
    scenarios: Sequence[Scenario],
    *,
    keyword: str | None = None,
    shard: tuple[int, int] | None = None,
) -> list[Scenario]:
    """Scenarios matching ``keyword``, then the ``shard`` part of them (round-robin by name)."""
    chosen = [s for s in scenarios if keyword is None or matches(keyword, s)]
    if shard is None:
        return chosen
    index, total = shard
    ordered = sorted(chosen, key=lambda s: s.name)
    mine = {s.name for position, s in enumerate(ordered) if position % total == index - 1}
    return [s for s in chosen if s.name in mine]
