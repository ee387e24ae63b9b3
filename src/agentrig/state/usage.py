"""Token and cost accounting."""

from __future__ import annotations

from pydantic import Field, StrictInt

from agentrig._model import Serializable


class Usage(Serializable):
    """Tokens and cost of one or more inference calls. ``total()`` is input plus output tokens."""

    input_tokens: StrictInt = Field(default=0, ge=0)
    output_tokens: StrictInt = Field(default=0, ge=0)
    cache_read_tokens: StrictInt = Field(default=0, ge=0)
    cache_write_tokens: StrictInt = Field(default=0, ge=0)
    reasoning_tokens: StrictInt = Field(default=0, ge=0)
    cost: float = Field(default=0.0, ge=0)

    def total(self) -> int:
        """Input plus output tokens (what ``max_tokens`` budgets count)."""
        return self.input_tokens + self.output_tokens

    def is_zero(self) -> bool:
        """True when nothing was used."""
        return self is _ZERO or self.__dict__ == _ZERO_FIELDS

    def __add__(self, other: Usage) -> Usage:
        if other is _ZERO:  # the usual case (no usage reported), without a call
            return self
        if other.is_zero():
            return self
        if self.is_zero():
            return other
        return Usage._trusted(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cost=self.cost + other.cost,
        )

    def summary(self) -> dict[str, int | float]:
        """The counters as a flat dict, with ``total``."""
        data: dict[str, int | float] = dict(self.__dict__)
        data["total"] = self.total()
        return data


_ZERO = Usage()
_ZERO_FIELDS = dict(_ZERO.__dict__)
ZERO_USAGE = _ZERO
"""The shared empty usage (usage values are immutable)."""
