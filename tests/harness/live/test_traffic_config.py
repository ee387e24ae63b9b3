"""``traffic_from_config``: the traffic control from a mapping, every problem named by field."""

from __future__ import annotations

import pytest

from agentrig.errors import InvalidInputError
from agentrig.harness.live.budget import Budget
from agentrig.harness.live.traffic_config import TRAFFIC_KEYS, traffic_from_config


def test_a_full_configuration() -> None:
    traffic = traffic_from_config(
        {
            "caps": {"openai": 8, "anthropic": 4},
            "default_cap": 2,
            "requests_per_minute": {"openai": 500},
            "burst": 3,
            "decrease": 0.7,
            "recover_after": 5,
            "seed": 9,
            "backoff": {"base": 0.25, "max": 8, "max_retry_after": 120},
            "max_attempts": 12,
            "budget_usd": 25,
        }
    )
    limits = traffic.limits
    assert (limits.cap("openai"), limits.cap("anthropic"), limits.cap("groq")) == (8, 4, 2)
    assert (limits.backoff.base, limits.backoff.max, limits.backoff.max_retry_after) == (
        0.25,
        8,
        120,
    )
    assert traffic.max_attempts == 12
    assert isinstance(traffic.budget, Budget)
    assert traffic.budget.usd == 25


def test_an_empty_configuration_takes_the_defaults() -> None:
    traffic = traffic_from_config({})
    assert traffic.budget is None
    assert traffic.limits.cap("openai") == 4


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(InvalidInputError) as raised:
        traffic_from_config(
            {
                "caps": {"openai": 0},
                "concurency": 3,
                "backoff": {"base": -1, "jitters": 0.1},
                "budget_usd": -5,
                "max_attempts": 0,
            }
        )
    fields = [field for field, _ in raised.value.problems]
    assert fields == [
        "concurency",
        "backoff.jitters",
        "backoff.base",
        "caps.openai",
        "budget_usd",
        "max_attempts",
    ]
    message = str(raised.value)
    assert message.startswith("invalid live traffic configuration: ")
    assert "concurency: unknown key; expected one of: " + ", ".join(TRAFFIC_KEYS) in message
    assert "caps.openai: must be >= 1, got 0" in message


@pytest.mark.parametrize(
    ("config", "kind"), [(None, "NoneType"), ([("caps", {})], "list"), ("caps: 3", "str")]
)
def test_a_configuration_must_be_a_mapping(config: object, kind: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        traffic_from_config(config)  # type: ignore[arg-type]
    assert str(raised.value) == (
        f"invalid live traffic configuration: <root>: expected a mapping, got {kind}"
    )
    assert (raised.value.what, raised.value.field) == ("live traffic configuration", "")


def test_backoff_must_be_a_mapping() -> None:
    with pytest.raises(InvalidInputError) as raised:
        traffic_from_config({"backoff": 2})
    assert raised.value.problems == [("backoff", "expected a mapping, got int")]


def test_the_sleeper_and_the_clock_given_are_the_ones_the_traffic_waits_on() -> None:
    """A Retry-After given as a date is read on the clock given, and waited on the sleeper."""
    import asyncio
    from datetime import UTC, datetime

    from agentrig.fakes import FakeClock

    class Sleeps:
        def __init__(self) -> None:
            self.time, self.waits = 0.0, list[float]()

        def now(self) -> float:
            return self.time

        async def sleep(self, seconds: float) -> None:
            self.waits.append(seconds)
            self.time += seconds

    class Limited(Exception):
        status_code = 429

        class response:  # an SDK error's response, read for its headers
            headers = {"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}

    sleeps = Sleeps()
    clock = FakeClock(datetime(2026, 10, 21, 7, 27, 30, tzinfo=UTC))
    traffic = traffic_from_config({}, sleeper=sleeps, clock=clock)
    assert traffic.limits.sleeper is sleeps
    answers: list[object] = [Limited(), "ok"]

    async def make_call() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return str(answer)

    assert asyncio.run(traffic.call("openai", make_call, lambda _: 0.0)) == "ok"
    assert sleeps.waits == [30.0]
