"""Token and cost accounting."""

from __future__ import annotations

import sys

from pydantic import Field, StrictInt

from agentrig._model import Serializable

MAX_TOKENS = 10**15
"""The largest token count a usage holds: far beyond any real run, and a count of more
digits than JSON readers take would make a state that cannot be read back."""
MAX_COST = sys.float_info.max
"""The largest cost a usage holds (finite, so a state carrying it can be saved)."""


class Usage(Serializable):
    """Tokens and cost of one or more inference calls. ``total()`` is input plus output tokens."""

    input_tokens: StrictInt = Field(default=0, ge=0, le=MAX_TOKENS)
    output_tokens: StrictInt = Field(default=0, ge=0, le=MAX_TOKENS)
    cache_read_tokens: StrictInt = Field(default=0, ge=0, le=MAX_TOKENS)
    cache_write_tokens: StrictInt = Field(default=0, ge=0, le=MAX_TOKENS)
    reasoning_tokens: StrictInt = Field(default=0, ge=0, le=MAX_TOKENS)
    cost: float = Field(default=0.0, ge=0, allow_inf_nan=False)

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
        # Sums saturate at the limits: a budget still sees a cost over its limit, and the
        # state stays valid (an infinite cost cannot be saved or put in a stop signal).
        cost = self.cost + other.cost
        return Usage._trusted(
            input_tokens=min(self.input_tokens + other.input_tokens, MAX_TOKENS),
            output_tokens=min(self.output_tokens + other.output_tokens, MAX_TOKENS),
            cache_read_tokens=min(self.cache_read_tokens + other.cache_read_tokens, MAX_TOKENS),
            cache_write_tokens=min(self.cache_write_tokens + other.cache_write_tokens, MAX_TOKENS),
            reasoning_tokens=min(self.reasoning_tokens + other.reasoning_tokens, MAX_TOKENS),
            cost=cost if cost <= MAX_COST else MAX_COST,
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
