"""``ExecutionBudget`` as a value (enforcement is tested in capabilities/test_guards.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentrig import ExecutionBudget, InvalidInputError, runtime_context
from agentrig.fakes import FakeClock

NOON = datetime(2026, 1, 1, 12, tzinfo=UTC)


def test_unlimited_is_empty_and_never_exhausted() -> None:
    budget = ExecutionBudget.unlimited()
    assert budget == ExecutionBudget()
    assert budget.is_empty()
    assert not budget.is_exhausted(at=NOON)


@pytest.mark.parametrize(
    "limits",
    [
        {"max_steps": 3},
        {"max_tokens": 10},
        {"max_seconds": 1.5},
        {"max_cost": 0.25},
        {"deadline": NOON},
    ],
)
def test_any_limit_makes_it_non_empty(limits: dict[str, object]) -> None:
    assert not ExecutionBudget(**limits).is_empty()


@pytest.mark.parametrize("field", ["max_steps", "max_tokens", "max_seconds", "max_cost"])
def test_a_zero_limit_is_exhausted(field: str) -> None:
    assert ExecutionBudget(**{field: 0}).is_exhausted(at=NOON)
    assert not ExecutionBudget(**{field: 1}).is_exhausted(at=NOON)


def test_deadline_is_exhausted_at_or_after_it() -> None:
    budget = ExecutionBudget(deadline=NOON)
    assert not budget.is_exhausted(at=NOON - timedelta(seconds=1))
    assert budget.is_exhausted(at=NOON)
    assert budget.is_exhausted(at=NOON + timedelta(seconds=1))


def test_a_naive_time_to_check_against_is_rejected() -> None:
    budget = ExecutionBudget(deadline=NOON)
    with pytest.raises(InvalidInputError, match="timezone") as raised:
        budget.is_exhausted(at=datetime(2026, 1, 1, 13))
    assert raised.value.field == "at"
    assert str(raised.value) == (
        "invalid time to check the budget at: at: needs timezone info, as the deadline has: "
        "e.g. datetime.now(UTC)"
    )
    with pytest.raises(InvalidInputError, match="timezone"):  # whatever the answer would be
        ExecutionBudget(max_steps=0).is_exhausted(at=datetime(2026, 1, 1, 13))


def test_is_exhausted_defaults_to_the_injected_clock() -> None:
    budget = ExecutionBudget(deadline=NOON)
    with runtime_context(clock=FakeClock(NOON - timedelta(hours=1))):
        assert not budget.is_exhausted()
    with runtime_context(clock=FakeClock(NOON)):
        assert budget.is_exhausted()


@pytest.mark.parametrize("field", ["max_steps", "max_tokens", "max_seconds", "max_cost"])
def test_negative_limits_raise_naming_the_field(field: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        ExecutionBudget(**{field: -1})
    assert raised.value.field == field
    assert field in str(raised.value)


def test_naive_deadline_is_rejected() -> None:
    with pytest.raises(InvalidInputError) as raised:
        ExecutionBudget(deadline=datetime(2026, 1, 1))
    assert raised.value.field == "deadline"


def test_wrong_type_is_rejected() -> None:
    with pytest.raises(InvalidInputError) as raised:
        ExecutionBudget(max_steps="many")
    assert raised.value.field == "max_steps"


def test_every_problem_is_listed() -> None:
    with pytest.raises(InvalidInputError) as raised:
        ExecutionBudget(max_steps=-1, max_cost=-2)
    assert [field for field, _ in raised.value.problems] == ["max_steps", "max_cost"]


def test_round_trip() -> None:
    budget = ExecutionBudget(
        max_steps=3, max_tokens=10, max_seconds=1.5, max_cost=0.2, deadline=NOON
    )
    assert ExecutionBudget.from_dict(budget.to_dict()) == budget
    assert ExecutionBudget.from_json(budget.to_json()) == budget
    assert budget.to_dict()["schema_version"] == 1
