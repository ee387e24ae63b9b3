"""Choosing scenarios: ``-k`` expressions over names and tags, and ``--shard i/n``."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NoReturn, TypeVar

from agentrig.errors import AgentrigError
from agentrig.harness.scenarios.model import Scenario

_TOKEN = re.compile(r"""\s*(\(|\)|'[^']*'|"[^"]*"|[^\s()]+)""")
_KEYWORDS = {"and", "or", "not"}
T = TypeVar("T")


class SelectionError(AgentrigError):
    """A ``-k`` expression or a ``--shard`` value is malformed."""


def matches(expression: str, scenario: Scenario) -> bool:
    """Whether ``scenario`` matches a ``-k`` expression.

    Words combine with ``and``, ``or``, ``not`` and parentheses; a word matches when it is a
    substring of the name or equals a tag (case-insensitive): ``-k "budget and not inline"``.
    A word in quotes may hold spaces (``-k "'slow path' and not inline"``). An empty expression
    matches everything.
    """
    return _evaluate(expression, lambda word: _word_matches(word, scenario))


def check_expression(expression: str) -> None:
    """Raise ``SelectionError`` when ``expression`` is malformed (without any scenario)."""
    _evaluate(expression, lambda word: False)


def _evaluate(expression: str, word_matches: Callable[[str], bool]) -> bool:
    tokens = _TOKEN.findall(expression)
    if not tokens:
        return True
    parser = _Parser(expression, tokens, word_matches)
    result = parser.expression()
    if parser.position < len(tokens):
        parser.fail(f"unexpected {tokens[parser.position]!r}")
    return result


class _Parser:
    """Recursive descent: ``or`` binds loosest, then ``and``, then ``not``, then parentheses."""

    def __init__(
        self, expression: str, tokens: list[str], word_matches: Callable[[str], bool]
    ) -> None:
        self.source = expression
        self.tokens = tokens
        self.word_matches = word_matches
        self.position = 0

    def fail(self, problem: str) -> NoReturn:
        raise SelectionError(f"invalid -k expression {self.source!r}: {problem}")

    def peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self, keyword: str) -> bool:
        token = self.peek()
        if token is not None and token.lower() == keyword:
            self.position += 1
            return True
        return False

    def expression(self) -> bool:
        result = self.conjunction()
        while self.take("or"):
            right = self.conjunction()
            result = result or right
        return result

    def conjunction(self) -> bool:
        result = self.negation()
        while self.take("and"):
            right = self.negation()
            result = result and right
        return result

    def negation(self) -> bool:
        if self.take("not"):
            return not self.negation()
        return self.primary()

    def primary(self) -> bool:
        token = self.peek()
        if token is None:
            self.fail("it ends where a word or '(' is expected")
        if token == "(":
            self.position += 1
            result = self.expression()
            if not self.take(")"):
                self.fail("a '(' is not closed")
            return result
        if token == ")" or token.lower() in _KEYWORDS:
            self.fail(f"unexpected {token!r} where a word or '(' is expected")
        self.position += 1
        if token[0] in "'\"":
            if len(token) < 2 or token[-1] != token[0]:
                self.fail(f"the quote in {token!r} is not closed")
            token = token[1:-1]
        return self.word_matches(token)


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
    if keyword is not None:
        check_expression(keyword)  # a malformed one is an error even when nothing was loaded
    chosen = [s for s in scenarios if keyword is None or matches(keyword, s)]
    return shard_of(chosen, shard, key=lambda s: s.name)


def shard_of(
    items: Sequence[T], shard: tuple[int, int] | None, *, key: Callable[[T], str]
) -> list[T]:
    """The ``shard`` ``(i, n)`` part of ``items`` (all of them when None), in their order: each
    n-th item, round-robin over the items sorted by ``key`` (unique keys)."""
    if shard is None:
        return list(items)
    index, total = shard
    ordered = sorted(items, key=key)
    mine = {id(item) for position, item in enumerate(ordered) if position % total == index - 1}
    return [item for item in items if id(item) in mine]
