"""``ExecutionBudget``: per-execution limits on steps, tokens, seconds, cost and a deadline (D4)."""

from __future__ import annotations

from datetime import datetime
from typing import Self

from pydantic import AwareDatetime, Field

from agentrig import clock
from agentrig._model import Serializable
from agentrig.errors import InvalidInputError


class ExecutionBudget(Serializable):
    """Resource limits for one execution; ``None`` means unlimited. ``UseGuards`` enforces them."""

    max_steps: int | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    max_seconds: float | None = Field(default=None, ge=0)
    max_cost: float | None = Field(default=None, ge=0)
    deadline: AwareDatetime | None = None

    @classmethod
    def unlimited(cls) -> Self:
        """A budget with no limits."""
        return cls()

    def is_empty(self) -> bool:
        """True when no limit is set."""
        return (
            self.max_steps is None
            and self.max_tokens is None
            and self.max_seconds is None
            and self.max_cost is None
            and self.deadline is None
        )

    def is_exhausted(self, at: datetime | None = None) -> bool:
        """True when a limit is zero or the deadline is at or before ``at`` (default: now)."""
        if at is not None and at.tzinfo is None:
            reason = "needs timezone info, as the deadline has: e.g. datetime.now(UTC)"
            raise InvalidInputError("time to check the budget at", [("at", reason)])
        limits = (self.max_steps, self.max_tokens, self.max_seconds, self.max_cost)
        if any(limit is not None and limit <= 0 for limit in limits):
            return True
        return self.deadline is not None and self.deadline <= (at or clock.now())
