"""``Budget``: admission until the amount spent reaches the limit, charges, withdrawals."""

from __future__ import annotations

import math
from typing import Any

import pytest

from agentrig.errors import ConfigurationError, InvalidInputError
from agentrig.harness.live.budget import Budget, BudgetExhausted, format_usd


def test_admission_stops_once_spent_reaches_the_limit() -> None:
    budget = Budget(usd=1.0)
    budget.admit()
    budget.admit()
    assert budget.in_flight == 2
    budget.charge(0.75)
    assert (budget.spent, budget.remaining, budget.exhausted) == (0.75, 0.25, False)
    budget.admit()
    budget.charge(0.25)  # spent == limit: refused from now on
    assert budget.exhausted
    with pytest.raises(BudgetExhausted):
        budget.admit()
    budget.charge(0.5)  # the call admitted before still finishes and is charged
    assert (budget.spent, budget.remaining, budget.in_flight) == (1.5, 0.0, 0)
    assert (budget.peak_in_flight, budget.refused) == (2, 1)


def test_a_withdrawn_call_costs_nothing() -> None:
    budget = Budget(usd=1.0)
    budget.admit()
    budget.withdraw()
    assert (budget.spent, budget.in_flight) == (0.0, 0)


def test_check_refuses_without_admitting() -> None:
    budget = Budget(usd=0.0)
    with pytest.raises(BudgetExhausted, match=r"live budget of \$0 is exhausted: \$0 spent"):
        budget.check()
    assert budget.in_flight == 0


@pytest.mark.parametrize("what", ["charge", "withdraw"])
def test_settling_a_call_never_admitted_is_an_error(what: str) -> None:
    budget = Budget(usd=1.0)
    with pytest.raises(ConfigurationError, match=rf"Budget.{what}\(\) with no admitted call"):
        getattr(budget, what)(*([0.1] if what == "charge" else []))


@pytest.mark.parametrize("usd", [-0.01, math.nan, math.inf, "5", None, True])
def test_a_bad_limit_names_the_field(usd: object) -> None:
    with pytest.raises(InvalidInputError) as raised:
        Budget(usd=usd)  # type: ignore[arg-type]
    assert raised.value.field == "usd"


def test_a_bad_name_names_the_field() -> None:
    with pytest.raises(InvalidInputError) as raised:
        Budget(usd=1.0, name="")
    assert raised.value.field == "name"


@pytest.mark.parametrize("cost", [-1.0, math.nan, math.inf, "0.1"])
def test_a_bad_cost_names_the_field_and_keeps_the_admission(cost: object) -> None:
    budget = Budget(usd=1.0)
    budget.admit()
    with pytest.raises(InvalidInputError) as raised:
        budget.charge(cost)  # type: ignore[arg-type]
    assert raised.value.field == "cost"
    assert budget.in_flight == 1


@pytest.mark.parametrize(
    ("amount", "text"),
    [(5, "$5"), (5.0, "$5"), (0.000125, "$0.000125"), (12.5, "$12.5"), (0.0000001, "$0")],
)
def test_format_usd(amount: float, text: str) -> None:
    assert format_usd(amount) == text


def test_every_refusal_is_counted() -> None:
    budget = Budget(usd=0.1)
    budget.admit()
    budget.charge(0.1)
    for _ in range(2):
        with pytest.raises(BudgetExhausted):
            budget.check()
    with pytest.raises(BudgetExhausted):
        budget.admit()
    assert (budget.refused, budget.in_flight, budget.peak_in_flight) == (3, 0, 1)


def test_an_exhausted_budget_says_what_it_is_what_was_spent_and_what_to_do() -> None:
    budget = Budget(usd=0.25, name="the nightly run's budget")
    budget.admit()
    budget.charge(0.2625)
    with pytest.raises(BudgetExhausted) as raised:
        budget.admit()
    assert str(raised.value) == (
        "the nightly run's budget of $0.25 is exhausted: $0.2625 spent, so no further model call "
        "is admitted (calls already running finish and are charged); raise the budget to run "
        "more trials"
    )
    assert (raised.value.budget, raised.value.usd, raised.value.spent) == (
        "the nightly run's budget",
        0.25,
        0.2625,
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Budget(usd=1.0, name=""), "invalid Budget: name: expected a non-empty string"),
        (
            lambda: Budget(usd=1.0, name=5),  # type: ignore[arg-type]
            "invalid Budget: name: expected a non-empty string",
        ),
        (lambda: Budget(usd=-1), "invalid Budget: usd: must be >= 0, got -1"),
        (
            lambda: Budget(usd=math.inf),
            "invalid Budget: usd: expected a finite number of USD, got inf",
        ),
        (
            lambda: Budget(usd="5"),  # type: ignore[arg-type]
            "invalid Budget: usd: expected a number of USD, got str",
        ),
        (lambda: Budget(usd=True), "invalid Budget: usd: expected a number of USD, got bool"),
        (
            lambda: Budget(usd=1.0).charge(-0.5),
            "invalid Budget.charge() argument: cost: must be >= 0, got -0.5",
        ),
    ],
)
def test_bad_input_is_refused_with_its_whole_message(make: Any, message: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        make()
    assert str(raised.value) == message


def test_repr_shows_the_name_the_limit_what_was_spent_and_the_calls_in_flight() -> None:
    budget = Budget(usd=1.5, name="the run's budget")
    budget.admit()
    budget.charge(0.25)
    budget.admit()
    assert repr(budget) == 'Budget("the run\'s budget", usd=$1.5, spent=$0.25, in_flight=1)'


def test_a_new_budget_has_spent_and_admitted_nothing() -> None:
    budget = Budget(usd=2)
    assert (budget.usd, budget.name, budget.spent, budget.remaining) == (2.0, "live budget", 0, 2)
    assert (budget.in_flight, budget.peak_in_flight, budget.refused) == (0, 0, 0)
    assert not budget.exhausted
