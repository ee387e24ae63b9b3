"""``traffic_from_config``: the traffic control from a mapping, every problem named by field."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from email.utils import format_datetime
from types import SimpleNamespace

import pytest

from agentrig.errors import InvalidInputError
from agentrig.fakes.clock import FakeClock
from agentrig.harness.live.budget import Budget
from agentrig.harness.live.traffic_config import TRAFFIC_KEYS, traffic_from_config
from agentrig.harness.live.virtual_time import LoopSleeper, run_in_virtual_time


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
    assert raised.value.what == "live traffic configuration"
    message = str(raised.value)
    assert "concurency: unknown key; expected one of: " + ", ".join(TRAFFIC_KEYS) in message
    assert "caps.openai: must be >= 1, got 0" in message


@pytest.mark.parametrize(
    ("config", "kind"), [(None, "NoneType"), ([("caps", {})], "list"), ("caps: 3", "str")]
)
def test_a_configuration_must_be_a_mapping(config: object, kind: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        traffic_from_config(config)  # type: ignore[arg-type]
    assert raised.value.problems == [("", f"expected a mapping, got {kind}")]
    assert str(raised.value) == (
        f"invalid live traffic configuration: <root>: expected a mapping, got {kind}"
    )


def test_backoff_must_be_a_mapping() -> None:
    with pytest.raises(InvalidInputError) as raised:
        traffic_from_config({"backoff": 2})
    assert str(raised.value) == (
        "invalid live traffic configuration: backoff: expected a mapping, got int"
    )


def test_the_sleeper_given_is_the_one_the_limits_wait_on() -> None:
    sleeper = LoopSleeper()
    assert traffic_from_config({}, sleeper=sleeper).limits.sleeper is sleeper


def test_a_retry_after_date_is_read_on_the_clock_given() -> None:
    # A rate limit asking to wait until a date 7 s after the clock's now: retried 7 s later
    # (on the system clock the date would be long past, and the retry immediate).
    clock = FakeClock()
    date = format_datetime(clock.now() + timedelta(seconds=7), usegmt=True)

    class Dated(Exception):
        status_code = 429
        response = SimpleNamespace(headers={"retry-after": date})

    traffic = traffic_from_config({}, clock=clock)
    starts: list[float] = []

    async def call() -> str:
        starts.append(asyncio.get_running_loop().time())
        if len(starts) == 1:
            raise Dated
        return "answer"

    assert run_in_virtual_time(traffic.call("openai", call, lambda _answer: 0.0)) == "answer"
    assert starts == [0.0, 7.0]
