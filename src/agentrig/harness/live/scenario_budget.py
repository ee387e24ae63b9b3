"""A scenario's own budget (``trials.budget_usd``) in front of the run's traffic control."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from agentrig.harness.live.budget import Budget
from agentrig.harness.live.gateway import CallControl

__all__ = ["ScenarioBudget"]

T = TypeVar("T")


class ScenarioBudget:
    """A scenario's own ``trials.budget_usd`` in front of the run's control: each call is
    admitted by it first and charged to it after. It overshoots by less than the cost of the
    scenario's calls in flight when it is reached."""

    def __init__(self, inner: CallControl, usd: float, scenario: str) -> None:
        self.inner = inner
        self.budget = Budget(usd, name=f"scenario {scenario}'s budget (trials.budget_usd)")

    async def call(
        self,
        provider: str,
        make_call: Callable[[], Awaitable[T]],
        cost_of: Callable[[T], float],
    ) -> T:
        """``make_call()``'s answer, admitted by this budget, then by the run's control."""
        self.budget.admit()
        try:
            answer = await self.inner.call(provider, make_call, cost_of)
        except BaseException:
            self.budget.withdraw()
            raise
        self.budget.charge(cost_of(answer))
        return answer
