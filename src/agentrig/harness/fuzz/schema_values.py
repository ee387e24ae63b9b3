"""Values of a JSON Schema drawn by hypothesis: the endpoint's generator
(:func:`~agentrig.harness.endpoint.schema_values.value_of`, which ``model: auto`` runs on a
seeded random) with hypothesis making every choice, so that a failure shrinks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import hypothesis.strategies as st

from agentrig.harness.endpoint.schema_values import value_of

__all__ = ["HypothesisChooser", "values_of"]

T = TypeVar("T")


class HypothesisChooser:
    """The choices of :func:`value_of`, drawn from hypothesis strategies."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self.draw = draw

    def integer(self, low: int, high: int) -> int:
        """``st.integers``."""
        value: int = self.draw(st.integers(low, high))
        return value

    def number(self, low: float, high: float) -> float:
        """``st.floats``, finite."""
        value: float = self.draw(st.floats(low, high, allow_nan=False, allow_infinity=False))
        return value

    def text(self, low: int, high: int) -> str:
        """``st.text``."""
        value: str = self.draw(st.text(min_size=low, max_size=high))
        return value

    def matching(self, pattern: str) -> str | None:
        """``st.from_regex``, whole; None for a pattern Python's ``re`` cannot read."""
        try:
            strategy = st.from_regex(pattern, fullmatch=True)
            strategy.validate()
        except Exception:
            return None
        value: str = self.draw(strategy)
        return value

    def choice(self, options: Sequence[T]) -> T:
        """``st.sampled_from``."""
        value: T = self.draw(st.sampled_from(options))
        return value


def values_of(schema: Any) -> st.SearchStrategy[Any]:
    """Values of ``schema``, each choice drawn by hypothesis."""

    @st.composite
    def drawn(draw: st.DrawFn) -> Any:
        return value_of(schema, HypothesisChooser(draw))

    return drawn()
