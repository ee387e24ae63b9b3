"""``Budget``: one spending limit in USD shared by every trial of a live run.

Before each model call a trial asks ``admit()``; after it, ``charge(cost)`` (or ``withdraw()``
when the call ended with nothing to charge). Admission is refused once the amount spent reaches
the budget; calls already admitted still finish and are charged. So the run overshoots by less
than the cost of the calls that were in flight when the budget was reached: with admission taken
inside a concurrency slot (as ``Traffic.call`` does), at most one call per slot.
"""

from __future__ import annotations

import math

from agentrig.errors import AgentrigError, ConfigurationError, InvalidInputError

__all__ = ["Budget", "BudgetExhausted", "format_usd"]


def format_usd(amount: float) -> str:
    """``amount`` as dollars to the millionth, without trailing zeros: ``$5``, ``$0.000125``."""
    text = f"{amount:.6f}".rstrip("0").rstrip(".")  # pragma: no mutate ("XX.XX" strips alike)
    return f"${text}"


class BudgetExhausted(AgentrigError):
    """A model call was refused: the live run's budget is spent. ``budget`` names it, ``usd`` is
    its limit and ``spent`` what had been charged when the call was refused."""

    def __init__(self, budget: str, usd: float, spent: float) -> None:
        self.budget = budget
        self.usd = usd
        self.spent = spent
        super().__init__(
            f"{budget} of {format_usd(usd)} is exhausted: {format_usd(spent)} spent, so no "
            "further model call is admitted (calls already running finish and are charged); "
            "raise the budget to run more trials"
        )


class Budget:
    """A spending limit of ``usd`` dollars (finite, >= 0) for all trials, named ``name`` in
    messages. Use it from the event loop's thread only (it takes no lock)."""

    def __init__(self, usd: float, *, name: str = "live budget") -> None:
        problem = _amount_problem(usd)
        if problem is not None:
            raise InvalidInputError("Budget", [("usd", problem)])
        if not isinstance(name, str) or not name:
            raise InvalidInputError("Budget", [("name", "expected a non-empty string")])
        self._usd = float(usd)
        self._name = name
        self._spent = 0.0
        self._in_flight = 0
        self._peak_in_flight = 0
        self._refused = 0

    @property
    def usd(self) -> float:
        """The limit, in USD."""
        return self._usd

    @property
    def name(self) -> str:
        """The name messages give the budget."""
        return self._name

    @property
    def spent(self) -> float:
        """USD charged so far."""
        return self._spent

    @property
    def remaining(self) -> float:
        """USD left before admission stops (0 once spent reaches the limit)."""
        return max(0.0, self._usd - self._spent)

    @property
    def exhausted(self) -> bool:
        """Whether admission is refused: spent >= the limit."""
        return self._spent >= self._usd

    @property
    def in_flight(self) -> int:
        """Calls admitted and not yet charged or withdrawn."""
        return self._in_flight

    @property
    def peak_in_flight(self) -> int:
        """The most calls ever in flight at once."""
        return self._peak_in_flight

    @property
    def refused(self) -> int:
        """How many admissions were refused."""
        return self._refused

    def check(self) -> None:
        """Raise ``BudgetExhausted`` when admission would be refused, admitting nothing."""
        if self.exhausted:
            self._refused += 1
            raise BudgetExhausted(self._name, self._usd, self._spent)

    def admit(self) -> None:
        """Admit one model call, or raise ``BudgetExhausted`` once spent >= the limit."""
        self.check()
        self._in_flight += 1
        self._peak_in_flight = max(self._peak_in_flight, self._in_flight)

    def charge(self, cost: float) -> None:
        """Charge an admitted call ``cost`` USD (finite, >= 0)."""
        problem = _amount_problem(cost)
        if problem is not None:
            raise InvalidInputError("Budget.charge() argument", [("cost", problem)])
        self._settle("charge")
        self._spent += float(cost)

    def withdraw(self) -> None:
        """End an admitted call that has nothing to charge (it failed, or was cancelled)."""
        self._settle("withdraw")

    def _settle(self, what: str) -> None:
        if self._in_flight == 0:
            raise ConfigurationError(
                f"Budget.{what}() with no admitted call in flight: call admit() before each "
                f"model call and {what}() once after it"
            )
        self._in_flight -= 1

    def __repr__(self) -> str:
        return (
            f"Budget({self._name!r}, usd={format_usd(self._usd)}, "
            f"spent={format_usd(self._spent)}, in_flight={self._in_flight})"
        )


def _amount_problem(amount: object) -> str | None:
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        return f"expected a number of USD, got {type(amount).__name__}"
    if not math.isfinite(amount):
        return f"expected a finite number of USD, got {amount}"
    if amount < 0:
        return f"must be >= 0, got {amount}"
    return None
