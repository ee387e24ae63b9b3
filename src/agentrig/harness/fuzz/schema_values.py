"""Values of a JSON Schema drawn by hypothesis: the endpoint's generator
(:func:`~agentrig.harness.endpoint.schema_values.value_of`, which ``model: auto`` runs on a
seeded random) with hypothesis making every choice, so that a failure shrinks."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import hypothesis.strategies as st

from agentrig.harness.endpoint.schema_values import value_of

__all__ = ["HypothesisChooser", "values_of"]

T = TypeVar("T")


class HypothesisChooser:
    """The choices of :func:`value_of`, drawn from hypothesis strategies (made once for each
    set of bounds: building a strategy costs more than drawing from it)."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self.draw = draw

    def integer(self, low: int, high: int) -> int:
        """``st.integers``."""
        value: int = self.draw(_integers(low, high))
        return value

    def number(self, low: float, high: float) -> float:
        """``st.floats``, finite."""
        value: float = self.draw(_floats(low, high))
        return value

    def text(self, low: int, high: int) -> str:
        """``st.text``."""
        value: str = self.draw(_texts(low, high))
        return value

    def matching(self, pattern: str) -> str | None:
        """``st.from_regex``, whole; None for a pattern Python's ``re`` cannot read."""
        strategy = _matching(pattern)
        if strategy is None:
            return None
        value: str = self.draw(strategy)
        return value

    def choice(self, options: Sequence[T]) -> T:
        """``st.sampled_from``."""
        drawn = tuple(options)
        try:
            hash(drawn)
        except TypeError:  # options that do not hash (lists, dicts): made each time
            strategy = st.sampled_from(drawn)
        else:
            strategy = _sampled(drawn)
        value: T = self.draw(strategy)
        return value


@functools.lru_cache(maxsize=1024)
def _integers(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


@functools.lru_cache(maxsize=1024)
def _floats(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(low, high, allow_nan=False, allow_infinity=False)


@functools.lru_cache(maxsize=1024)
def _texts(low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(min_size=low, max_size=high)


@functools.lru_cache(maxsize=1024)
def _sampled(options: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(options)


@functools.lru_cache(maxsize=256)
def _matching(pattern: str) -> st.SearchStrategy[str] | None:
    try:
        strategy = st.from_regex(pattern, fullmatch=True)
        strategy.validate()
    except Exception:
        return None
    return strategy


def values_of(schema: Any) -> st.SearchStrategy[Any]:
    """Values of ``schema``, each choice drawn by hypothesis."""

    @st.composite
    def drawn(draw: st.DrawFn) -> Any:
        return value_of(schema, HypothesisChooser(draw))

    return drawn()
