"""``ScenarioBudget``: a scenario's ``trials.budget_usd`` admits each call before the run's
control does, charges what it cost after, and gives back the admission of a call that failed."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from agentrig.errors import InvalidInputError
from agentrig.harness.live.budget import Budget, BudgetExhausted
from agentrig.harness.live.limits import ProviderLimits, Traffic
from agentrig.harness.live.scenario_budget import ScenarioBudget

T = TypeVar("T")


class Recording:
    """A run's control that sends each call at once and records how it was asked, with the
    scenario budget's state at that moment."""

    def __init__(self, scenario: Budget | None = None) -> None:
        self.scenario = scenario
        self.calls: list[tuple[str, float, int]] = []
        self.costs: list[float] = []

    async def call(
        self,
        provider: str,
        make_call: Callable[[], Awaitable[T]],
        cost_of: Callable[[T], float],
    ) -> T:
        assert self.scenario is not None
        self.calls.append((provider, self.scenario.spent, self.scenario.in_flight))
        answer = await make_call()
        self.costs.append(cost_of(answer))
        return answer


def _control(usd: float, inner: Any = None) -> tuple[ScenarioBudget, Recording]:
    recording = Recording() if inner is None else inner
    control = ScenarioBudget(recording, usd, "refund")
    if isinstance(recording, Recording):
        recording.scenario = control.budget
    return control, recording


def _answer(cost: float) -> Callable[[], Awaitable[dict[str, float]]]:
    async def make_call() -> dict[str, float]:
        return {"cost": cost}

    return make_call


def _cost(answer: dict[str, float]) -> float:
    return answer["cost"]


def test_a_call_is_admitted_by_the_scenario_then_sent_through_the_run_and_charged() -> None:
    control, run = _control(1.0)

    async def main() -> dict[str, float]:
        return await control.call("anthropic", _answer(0.25), _cost)

    assert asyncio.run(main()) == {"cost": 0.25}
    assert run.calls == [("anthropic", 0.0, 1)]  # admitted (in flight) when the run sends it
    assert run.costs == [0.25]  # the run's control is given the same cost function
    assert (control.budget.spent, control.budget.in_flight) == (0.25, 0)
    assert control.inner is run


def test_once_spent_no_call_reaches_the_run_or_the_model() -> None:
    control, run = _control(0.5)
    made: list[str] = []

    async def make_call() -> dict[str, float]:
        made.append("call")
        return {"cost": 0.5}

    async def main() -> None:
        await control.call("openai", make_call, _cost)
        await control.call("openai", make_call, _cost)

    with pytest.raises(BudgetExhausted) as raised:
        asyncio.run(main())
    assert str(raised.value) == (
        "scenario refund's budget (trials.budget_usd) of $0.5 is exhausted: $0.5 spent, so no "
        "further model call is admitted (calls already running finish and are charged); raise "
        "the budget to run more trials"
    )
    assert (raised.value.budget, raised.value.usd, raised.value.spent) == (
        "scenario refund's budget (trials.budget_usd)",
        0.5,
        0.5,
    )
    assert made == ["call"]
    assert len(run.calls) == 1
    assert (control.budget.refused, control.budget.in_flight) == (1, 0)


def test_calls_in_flight_when_it_is_reached_finish_and_are_charged() -> None:
    control, _ = _control(0.1)
    started = 0
    release = asyncio.Event()

    async def make_call() -> dict[str, float]:
        nonlocal started
        started += 1
        await release.wait()
        return {"cost": 0.08}

    async def main() -> list[Any]:
        calls = [asyncio.create_task(control.call("openai", make_call, _cost)) for _ in range(3)]
        while started < 3:
            await asyncio.sleep(0)
        assert control.budget.peak_in_flight == 3
        release.set()
        results = await asyncio.gather(*calls)
        refused = await asyncio.gather(
            control.call("openai", make_call, _cost), return_exceptions=True
        )
        return [*results, *refused]

    *answers, refused = asyncio.run(main())
    assert answers == [{"cost": 0.08}] * 3
    assert isinstance(refused, BudgetExhausted)
    assert control.budget.spent == pytest.approx(0.24)  # the overshoot: three calls in flight


class Failed(Exception):
    """The provider's answer was an error."""


@pytest.mark.parametrize(
    "error", [Failed("HTTP 500"), asyncio.CancelledError(), KeyboardInterrupt()], ids=repr
)
def test_a_call_that_ends_without_an_answer_gives_its_admission_back(
    error: BaseException,
) -> None:
    control, _ = _control(1.0)

    async def make_call() -> dict[str, float]:
        raise error

    async def main() -> None:
        await control.call("openai", _answer(0.25), _cost)
        await control.call("openai", make_call, _cost)

    with pytest.raises(type(error)) as raised:
        asyncio.run(main())
    assert raised.value is error
    assert (control.budget.spent, control.budget.in_flight) == (0.25, 0)


def test_the_run_refusing_a_call_gives_the_scenario_its_admission_back() -> None:
    run_budget = Budget(0.2, name="the run's budget")
    control, _ = _control(1.0, Traffic(ProviderLimits({}), run_budget))

    async def main() -> None:
        await control.call("openai", _answer(0.2), _cost)
        await control.call("openai", _answer(0.2), _cost)

    with pytest.raises(BudgetExhausted, match=r"^the run's budget of \$0\.2 is exhausted"):
        asyncio.run(main())
    assert (control.budget.spent, control.budget.in_flight, control.budget.refused) == (0.2, 0, 0)
    assert (run_budget.spent, run_budget.refused) == (0.2, 1)


@pytest.mark.parametrize("usd", [-1.0, math.nan, "5"])
def test_a_bad_budget_names_the_field(usd: Any) -> None:
    with pytest.raises(InvalidInputError) as raised:
        ScenarioBudget(Recording(), usd, "refund")
    assert raised.value.field == "usd"
