"""Traffic control for live trials, in virtual time: concurrency caps, request rates, back-off on
rate limits (``Retry-After``, AIMD), retries, the budget, errors and cancellation."""

from __future__ import annotations

import asyncio
import math
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import timedelta
from email.utils import format_datetime
from types import SimpleNamespace
from typing import Any

import pytest

from agentrig import ProviderError, RetryLimitExceededError
from agentrig.errors import InvalidInputError
from agentrig.fakes.clock import FakeClock
from agentrig.harness.live.budget import Budget, BudgetExhausted
from agentrig.harness.live.limits import (
    DEFAULT_CAP,
    DEFAULT_MAX_ATTEMPTS,
    Backoff,
    LimitStats,
    ProviderLimits,
    Slot,
    Traffic,
)
from agentrig.harness.live.rate_limits import RateLimitSignal
from agentrig.harness.live.virtual_time import LoopSleeper, run_in_virtual_time


def now() -> float:
    return asyncio.get_running_loop().time()


def free(_answer: object) -> float:
    return 0.0


class RateLimited(Exception):
    """What a scripted provider raises for a rate-limit answer: an HTTP status and, optionally,
    the seconds of its ``Retry-After``."""

    def __init__(self, status: int = 429, retry_after: float | None = None) -> None:
        self.status_code = status
        self.retry_after = retry_after
        super().__init__(f"HTTP {status}")


class Provider:
    """A scripted provider: ``answer(attempt)`` says how attempt ``attempt`` (0-based, over all
    calls) ends: after ``seconds`` of virtual time, an answer or an error. It records when each
    attempt started and the most attempts in flight at once."""

    def __init__(self, answer: Callable[[int], tuple[float, BaseException | None]]) -> None:
        self.answer = answer
        self.starts: list[float] = []
        self.running = 0
        self.peak = 0

    def call(self, value: Any = None) -> Callable[[], Awaitable[Any]]:
        async def attempt() -> Any:
            index = len(self.starts)
            self.starts.append(now())
            self.running += 1
            self.peak = max(self.peak, self.running)
            try:
                seconds, error = self.answer(index)
                await asyncio.sleep(seconds)
                if error is not None:
                    raise error
                return value
            finally:
                self.running -= 1

        return attempt


def succeeding(seconds: float = 1.0) -> Provider:
    return Provider(lambda _index: (seconds, None))


class TestConcurrency:
    def test_caps_are_reached_and_never_exceeded(self) -> None:
        rng = random.Random(7)
        limits = ProviderLimits({"openai": 3, "anthropic": 2}, default_cap=1)
        traffic = Traffic(limits)
        running: Counter[str] = Counter()
        peak: Counter[str] = Counter()

        def work(provider: str) -> Callable[[], Awaitable[str]]:
            async def attempt() -> str:
                running[provider] += 1
                peak[provider] = max(peak[provider], running[provider])
                await asyncio.sleep(rng.uniform(0.1, 2.0))
                running[provider] -= 1
                return provider

            return attempt

        names = ["openai"] * 40 + ["anthropic"] * 30 + ["groq"] * 10
        rng.shuffle(names)

        async def main() -> list[str]:
            return await asyncio.gather(*(traffic.call(name, work(name), free) for name in names))

        assert run_in_virtual_time(main()) == names
        assert peak == {"openai": 3, "anthropic": 2, "groq": 1}
        stats = traffic.stats()
        assert {name: s.max_in_flight for name, s in stats.items()} == peak
        assert {name: s.calls for name, s in stats.items()} == Counter(names)

    def test_slots_are_kept_busy(self) -> None:
        # 40 one-second calls through 4 slots take exactly 10 seconds: no slot idles.
        provider = succeeding()
        traffic = Traffic(ProviderLimits({"openai": 4}))

        async def main() -> float:
            await asyncio.gather(
                *(traffic.call("openai", provider.call(), free) for _ in range(40))
            )
            return now()

        assert run_in_virtual_time(main()) == 10.0
        assert Counter(provider.starts) == {float(second): 4 for second in range(10)}
        # 4 calls waited 0s, 4 waited 1s, ..., 4 waited 9s
        assert traffic.stats()["openai"].waited == 4 * sum(range(10))

    def test_slots_are_granted_first_come_first_served(self) -> None:
        limits = ProviderLimits({"openai": 1})
        order: list[int] = []

        async def take(index: int) -> None:
            await asyncio.sleep(index * 0.001)  # arrive in index order
            async with limits.slot("openai"):
                order.append(index)
                await asyncio.sleep(1)

        async def main() -> None:
            await asyncio.gather(*(take(index) for index in reversed(range(6))))

        run_in_virtual_time(main())
        assert order == list(range(6))


class TestRequestRate:
    @pytest.mark.parametrize(
        ("burst", "expected"),
        [(1, [0.0, 1.0, 2.0, 3.0, 4.0]), (3, [0.0, 0.0, 0.0, 1.0, 2.0])],
    )
    def test_requests_per_minute_spaces_the_starts(self, burst: int, expected: list[float]) -> None:
        provider = succeeding(0.1)
        limits = ProviderLimits({"openai": 8}, requests_per_minute={"openai": 60}, burst=burst)
        traffic = Traffic(limits)

        async def main() -> None:
            await asyncio.gather(*(traffic.call("openai", provider.call(), free) for _ in range(5)))

        run_in_virtual_time(main())
        assert provider.starts == pytest.approx(expected)

    def test_a_rate_of_uneven_seconds_spaces_the_starts_evenly(self) -> None:
        provider = succeeding(0.1)
        traffic = Traffic(ProviderLimits(requests_per_minute={"openai": 7}))

        async def main() -> None:
            await asyncio.gather(
                *(traffic.call("openai", provider.call(), free) for _ in range(30))
            )

        run_in_virtual_time(main())
        assert provider.starts == pytest.approx([k * 60 / 7 for k in range(30)])

    def test_the_default_rate_applies_to_unnamed_providers(self) -> None:
        provider = succeeding(0.1)
        limits = ProviderLimits(requests_per_minute={"openai": 600}, default_requests_per_minute=30)
        traffic = Traffic(limits)

        async def main() -> None:
            await asyncio.gather(*(traffic.call("groq", provider.call(), free) for _ in range(3)))

        run_in_virtual_time(main())
        assert provider.starts == pytest.approx([0.0, 2.0, 4.0])


class TestRetryAfter:
    def test_the_gate_stays_closed_exactly_until_retry_after(self) -> None:
        # Attempt 0 answers 429 "retry after 2.5 s" at t=1; the others succeed after 1 s.
        provider = Provider(lambda index: (1.0, RateLimited(429, 2.5) if index == 0 else None))
        traffic = Traffic(ProviderLimits({"openai": 4}))  # the 429 cuts it to 2

        async def late_call() -> str:
            await asyncio.sleep(1.5)  # arrives while the gate is closed
            return await traffic.call("openai", provider.call("late"), free)

        async def main() -> list[str]:
            return await asyncio.gather(
                traffic.call("openai", provider.call("first"), free), late_call()
            )

        assert run_in_virtual_time(main()) == ["first", "late"]
        # The retry and the late call both wait for t = 1 + 2.5, and not a moment longer.
        assert provider.starts == [0.0, 3.5, 3.5]

    def test_a_shorter_retry_after_never_reopens_a_gate_closed_for_longer(self) -> None:
        # Three calls answer 429 at t=0.5, 0.6 and 0.7, asking to wait 1, 4 and 0.5 seconds:
        # the gate stays closed until the latest of 1.5, 4.6 and 1.2.
        script = {0: (0.5, RateLimited(429, 1.0)), 1: (0.6, RateLimited(429, 4.0))}
        script[2] = (0.7, RateLimited(429, 0.5))
        provider = Provider(lambda index: script.get(index, (1.0, None)))
        limits = ProviderLimits({"openai": 8})  # the first 429 cuts it to 4: room for all 3
        traffic = Traffic(limits)

        async def main() -> None:
            await asyncio.gather(*(traffic.call("openai", provider.call(), free) for _ in range(3)))

        run_in_virtual_time(main())
        assert provider.starts == pytest.approx([0.0, 0.0, 0.0, 4.6, 4.6, 4.6])
        assert limits.reopens_at("openai") == pytest.approx(4.6)

    def test_without_retry_after_the_gate_backs_off_exponentially_with_seeded_jitter(
        self,
    ) -> None:
        def run(seed: int | None) -> list[float]:
            provider = Provider(lambda index: (0.0, RateLimited(503) if index < 5 else None))
            backoff = Backoff(base=1.0, factor=2.0, max=6.0, jitter=0.5)
            seeded = {} if seed is None else {"seed": seed}
            traffic = Traffic(ProviderLimits({"x": 1}, backoff=backoff, **seeded))

            async def main() -> None:
                await traffic.call("x", provider.call(), free)

            run_in_virtual_time(main())
            return [b - a for a, b in zip(provider.starts, provider.starts[1:], strict=False)]

        assert run(seed=None) == run(seed=0)  # the default seed
        assert run(seed=None) != run(seed=1)
        gaps = run(seed=3)
        full = [1.0, 2.0, 4.0, 6.0, 6.0]  # base * 2**k, capped at max
        for gap, ceiling in zip(gaps, full, strict=True):
            assert ceiling * 0.5 <= gap <= ceiling  # jitter takes at most half
        assert run(seed=3) == gaps  # seeded: the same waits again
        assert run(seed=4) != gaps

    def test_503_and_529_are_rate_limits_counted_by_status(self) -> None:
        answers = [RateLimited(503, 0.0), RateLimited(529, 0.0), RateLimited(429, 0.0), None]
        provider = Provider(lambda index: (0.1, answers[index]))
        traffic = Traffic(ProviderLimits({"anthropic": 2}))

        async def main() -> None:
            await traffic.call("anthropic", provider.call(), free)

        run_in_virtual_time(main())
        stats = traffic.stats()["anthropic"]
        assert stats.rate_limited == {429: 1, 503: 1, 529: 1}
        assert stats.retries == {429: 1, 503: 1, 529: 1}
        assert (stats.calls, stats.attempts, stats.succeeded, stats.gave_up) == (1, 4, 1, 0)

    def test_a_call_rate_limited_on_every_attempt_fails_after_max_attempts(self) -> None:
        last: list[RateLimited] = []

        def answer(_index: int) -> tuple[float, BaseException]:
            last.append(RateLimited(429, 0.5))
            return 0.1, last[-1]

        provider = Provider(answer)
        traffic = Traffic(ProviderLimits({"openai": 2}), max_attempts=3)

        async def main() -> None:
            await traffic.call("openai", provider.call(), free)

        with pytest.raises(RetryLimitExceededError) as raised:
            run_in_virtual_time(main())
        error = raised.value
        assert (error.attempts, error.status_code, error.provider) == (3, 429, "openai")
        assert error.__cause__ is last[-1]
        assert str(error) == (
            "inference failed after 3 attempt(s); no further attempt (openai answered HTTP 429 "
            "(rate limited) to all 3 attempts): HTTP 429"
        )
        stats = traffic.stats()["openai"]
        assert (stats.rate_limited, stats.retries, stats.gave_up) == ({429: 3}, {429: 2}, 1)

    def test_a_retry_after_beyond_the_limit_fails_at_once(self) -> None:
        provider = Provider(lambda _index: (0.1, RateLimited(429, 3600.0)))
        limits = ProviderLimits({"openai": 2}, backoff=Backoff(max_retry_after=300.0))
        traffic = Traffic(limits)

        async def main() -> None:
            await traffic.call("openai", provider.call(), free)

        with pytest.raises(RetryLimitExceededError) as raised:
            run_in_virtual_time(main())
        assert str(raised.value) == (
            "inference failed after 1 attempt(s); no further attempt (openai asked to wait 3600s "
            "(Retry-After), more than backoff.max_retry_after=300s): HTTP 429"
        )
        assert (raised.value.attempts, raised.value.status_code) == (1, 429)
        assert len(provider.starts) == 1
        assert traffic.stats()["openai"].gave_up == 1

    def test_the_default_attempts_lose_no_call_to_30_percent_rate_limits(self) -> None:
        # P(a call meets 20 rate limits in a row) = 0.3**20: the default is documented by it.
        assert DEFAULT_MAX_ATTEMPTS == 20
        assert 0.3**DEFAULT_MAX_ATTEMPTS < 4e-11


class TestAimd:
    @pytest.mark.parametrize(
        ("retry_after", "seen"),
        [
            (None, [8, 4, 2, 1, 1]),  # no Retry-After: the cause is unknown, cut at once
            (0.0, [8, 8, 4, 2, 1]),  # a Retry-After is honoured; cut once the 429s go on
        ],
    )
    def test_each_fresh_rate_limit_cuts_the_concurrency_down_to_one(
        self, retry_after: float | None, seen: list[int]
    ) -> None:
        limits = ProviderLimits({"openai": 8}, decrease=0.5)
        limit_at_attempt: list[int] = []

        def answer(index: int) -> tuple[float, BaseException | None]:
            limit_at_attempt.append(limits.limit("openai"))
            return 0.1, RateLimited(429, retry_after) if index < 4 else None

        provider = Provider(answer)
        traffic = Traffic(limits)

        async def main() -> None:
            await traffic.call("openai", provider.call(), free)

        run_in_virtual_time(main())
        assert limit_at_attempt == seen
        assert traffic.stats()["openai"].min_limit == seen[-1]

    def test_the_default_cut_keeps_seven_tenths(self) -> None:
        limits = ProviderLimits({"openai": 8})
        limit_at_attempt: list[int] = []

        def answer(index: int) -> tuple[float, BaseException | None]:
            limit_at_attempt.append(limits.limit("openai"))
            return 0.1, RateLimited(429, None) if index < 3 else None

        traffic = Traffic(limits)
        run_in_virtual_time(traffic.call("openai", Provider(answer).call(), free))
        assert limit_at_attempt == [8, 5, 3, 2]

    def test_rate_limits_to_calls_sent_before_the_cut_cut_only_once(self) -> None:
        # 8 calls in flight together all answer 429: one cut (to 4), not eight (to 1).
        provider = Provider(lambda index: (1.0, RateLimited(429, None) if index < 8 else None))
        limits = ProviderLimits({"openai": 8}, decrease=0.5)
        traffic = Traffic(limits)

        async def main() -> None:
            await asyncio.gather(*(traffic.call("openai", provider.call(), free) for _ in range(8)))

        run_in_virtual_time(main())
        assert traffic.stats()["openai"].min_limit == 4
        # The 8 retries go 4 at a time at the cut concurrency (after the back-off's jitter).
        starts = Counter(provider.starts)
        assert starts[0.0] == 8
        assert sorted(starts.values()) == [4, 4, 8]

    def test_concurrency_grows_back_one_slot_per_recover_after_successes(self) -> None:
        limits = ProviderLimits({"openai": 4}, recover_after=3, decrease=0.5)
        seen: list[int] = []

        def answer(index: int) -> tuple[float, BaseException | None]:
            seen.append(limits.limit("openai"))
            return 0.1, RateLimited(429, None) if index == 0 else None

        provider = Provider(answer)
        traffic = Traffic(limits)

        async def main() -> None:
            for _ in range(10):
                await traffic.call("openai", provider.call(), free)

        run_in_virtual_time(main())
        # attempt 0 is cut to 2; every 3 successes give one back; never above the cap of 4
        assert seen == [4, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4]
        assert limits.limit("openai") == 4

    def test_attempts_in_flight_follow_the_cut_concurrency(self) -> None:
        provider = Provider(lambda index: (1.0, RateLimited(429, None) if index == 0 else None))
        limits = ProviderLimits({"openai": 8}, recover_after=1000, decrease=0.5)
        traffic = Traffic(limits)

        async def main() -> None:
            await traffic.call("openai", provider.call(), free)  # cut to 4
            provider.peak = 0
            await asyncio.gather(
                *(traffic.call("openai", provider.call(), free) for _ in range(20))
            )

        run_in_virtual_time(main())
        assert provider.peak == 4

    def test_sustained_rate_limits_do_not_hammer_the_api(self) -> None:
        # Every attempt started before t=60 answers 429 after 0.05 s, with no Retry-After; later
        # ones succeed after 1 s. A client retrying at once would send 8 * 60 / 0.05 = 9600
        # attempts by t=60. Here each opening of the gate lets at most `limit` attempts in before
        # the first 429 closes it again (8, then 4, 2, 1, 1, ...), and each opening earns a
        # strike: the gate stays closed at least half of 0.5 * 2**(k-1) (capped at 32) after
        # strike k, i.e. 0.25, 0.5, 1, 2, 4, 8, 16, 16, ... seconds, which add up past 60 after
        # 8 reopenings. So at most 8 + 4 + 2 + 1 * 6 = 20 attempts start before t=60.
        def answer(_index: int) -> tuple[float, BaseException | None]:
            return (0.05, RateLimited(429)) if now() < 60 else (1.0, None)

        provider = Provider(answer)
        limits = ProviderLimits({"openai": 8}, decrease=0.5, recover_after=4)
        traffic = Traffic(limits)

        async def main() -> list[int]:
            return await asyncio.gather(
                *(traffic.call("openai", provider.call(index), free) for index in range(50))
            )

        assert run_in_virtual_time(main()) == list(range(50))
        assert sum(start < 60 for start in provider.starts) <= 20
        stats = traffic.stats()["openai"]
        assert (stats.gave_up, stats.min_limit, stats.limit) == (0, 1, 8)  # and it recovered


class TestThirtyPercentRateLimits:
    """A provider answering 429 to 30% of attempts at random (seeded), no matter the load."""

    N, CAP, P = 400, 8, 0.3

    def run(self, limits: ProviderLimits) -> tuple[Traffic, Provider, list[int], float]:
        rng = random.Random(2026)
        failed = 0

        def answer(_index: int) -> tuple[float, BaseException | None]:
            nonlocal failed
            if rng.random() < self.P:
                failed += 1
                return 0.1, RateLimited(429, 0.0)
            return 1.0, None

        provider = Provider(answer)
        traffic = Traffic(limits)

        async def main() -> tuple[list[int], float]:
            answers = await asyncio.gather(
                *(traffic.call("openai", provider.call(index), free) for index in range(self.N))
            )
            return answers, now()

        answers, makespan = run_in_virtual_time(main())
        assert failed == sum(1 for start in provider.starts) - self.N
        return traffic, provider, answers, makespan

    def test_no_call_is_lost_and_every_429_is_counted(self) -> None:
        traffic, provider, answers, _ = self.run(ProviderLimits({"openai": self.CAP}))
        assert answers == list(range(self.N))
        stats = traffic.stats()["openai"]
        retried = len(provider.starts) - self.N
        assert retried > 0.25 * len(provider.starts)
        assert stats.rate_limited == stats.retries == {429: retried}
        assert (stats.calls, stats.attempts, stats.succeeded, stats.gave_up) == (
            self.N,
            self.N + retried,
            self.N,
            0,
        )
        assert stats.max_in_flight <= self.CAP

    def test_without_back_off_the_slots_never_idle(self) -> None:
        # With no cut (decrease=1) and "retry now" (Retry-After: 0) the limiter must keep every
        # slot busy while calls wait. Greedy scheduling of chains of attempts on CAP slots
        # (Graham's bound) ends by W / CAP + the longest chain, W the attempts' total duration.
        _, provider, answers, makespan = self.run(
            ProviderLimits({"openai": self.CAP}, decrease=1.0)
        )
        assert answers == list(range(self.N))
        retried = len(provider.starts) - self.N
        work = self.N * 1.0 + retried * 0.1
        longest_chain = 1.0 + 0.1 * (DEFAULT_MAX_ATTEMPTS - 1)
        assert makespan <= work / self.CAP + longest_chain
        # hence the slots are busy at least W / (W + CAP * chain) = 94% of the time (W = N plus
        # about N * 0.3 / 0.7 * 0.1): at least 90% of the cap's throughput
        assert work / (self.CAP * makespan) >= 0.9


class TestBudget:
    @pytest.mark.parametrize("seed", range(6))
    def test_overshoot_is_less_than_the_calls_in_flight_when_it_was_reached(
        self, seed: int
    ) -> None:
        rng = random.Random(seed)
        caps = {"openai": 4, "anthropic": 3}
        budget = Budget(usd=5.0)
        traffic = Traffic(ProviderLimits(caps), budget)
        running: dict[int, float] = {}  # call -> its cost, while it runs
        at_crossing: list[float] = []  # the costs running when a charge first reached the budget
        max_cost = 0.6

        def model_call(index: int, cost: float) -> Callable[[], Awaitable[tuple[int, float]]]:
            async def attempt() -> tuple[int, float]:
                running[index] = cost
                await asyncio.sleep(rng.uniform(0.1, 3.0))
                return index, cost

            return attempt

        def cost_of(answer: tuple[int, float]) -> float:
            index, cost = answer
            if not at_crossing and budget.spent + cost >= budget.usd:
                at_crossing.append(sum(running.values()))
            del running[index]
            return cost

        calls = [
            (rng.choice(sorted(caps)), index, rng.uniform(0.0, max_cost)) for index in range(200)
        ]

        async def main() -> list[Any]:
            return await asyncio.gather(
                *(
                    traffic.call(name, model_call(index, cost), cost_of)
                    for name, index, cost in calls
                ),
                return_exceptions=True,
            )

        outcomes = run_in_virtual_time(main())
        answered = [outcome for outcome in outcomes if isinstance(outcome, tuple)]
        refused = [outcome for outcome in outcomes if isinstance(outcome, BudgetExhausted)]
        assert len(answered) + len(refused) == len(calls)
        assert refused, "the budget was never reached: the simulation proves nothing"
        assert budget.spent == pytest.approx(sum(cost for _, cost in answered))
        overshoot = budget.spent - budget.usd
        assert 0 <= overshoot <= at_crossing[0] + 1e-9
        assert overshoot < sum(caps.values()) * max_cost
        assert budget.peak_in_flight <= sum(caps.values())
        assert budget.in_flight == 0
        assert sum(s.refused for s in traffic.stats().values()) == len(refused)
        assert sum(s.cost for s in traffic.stats().values()) == pytest.approx(budget.spent)

    def test_exhaustion_names_the_budget_and_the_figures(self) -> None:
        budget = Budget(usd=0.5, name="nightly live run")
        traffic = Traffic(ProviderLimits(), budget)

        async def main() -> None:
            await traffic.call("openai", succeeding().call(), lambda _: 0.625)
            await traffic.call("openai", succeeding().call(), lambda _: 0.625)

        with pytest.raises(BudgetExhausted) as raised:
            run_in_virtual_time(main())
        error = raised.value
        assert (error.budget, error.usd, error.spent) == ("nightly live run", 0.5, 0.625)
        assert str(error).startswith("nightly live run of $0.5 is exhausted: $0.625 spent")

    def test_a_call_waiting_for_a_slot_is_refused_once_the_budget_is_spent(self) -> None:
        budget = Budget(usd=1.0)
        provider = succeeding()
        traffic = Traffic(ProviderLimits({"openai": 1}), budget)

        async def main() -> list[Any]:
            return await asyncio.gather(
                traffic.call("openai", provider.call("a"), lambda _: 1.0),
                traffic.call("openai", provider.call("b"), lambda _: 1.0),
                return_exceptions=True,
            )

        first, second = run_in_virtual_time(main())
        assert first == "a"
        assert isinstance(second, BudgetExhausted)
        assert len(provider.starts) == 1  # admission comes with the slot: "b" never ran
        assert budget.spent == 1.0


class TestErrors:
    @pytest.mark.parametrize(
        "error",
        [
            ValueError("not a provider failure"),
            ProviderError("HTTP 500", retryable=True, status_code=500),
            ProviderError("HTTP 401", status_code=401),
            ProviderError("no response"),
        ],
        ids=["ValueError", "500", "401", "no-status"],
    )
    def test_other_errors_pass_through_unchanged(self, error: Exception) -> None:
        provider = Provider(lambda _index: (0.5, error))
        budget = Budget(usd=1.0)
        limits = ProviderLimits({"openai": 2})
        traffic = Traffic(limits, budget)

        async def main() -> None:
            await traffic.call("openai", provider.call(), lambda _: 1.0)

        with pytest.raises(type(error)) as raised:
            run_in_virtual_time(main())
        assert raised.value is error
        assert len(provider.starts) == 1
        assert (budget.spent, budget.in_flight) == (0.0, 0)
        assert (limits.in_flight("openai"), limits.limit("openai")) == (0, 2)
        assert limits.reopens_at("openai") == -math.inf

    def test_an_error_of_cost_of_withdraws_the_admission(self) -> None:
        budget = Budget(usd=1.0)
        traffic = Traffic(ProviderLimits(), budget)

        def broken(_answer: object) -> float:
            raise KeyError("usage")

        async def main() -> None:
            await traffic.call("openai", succeeding().call(), broken)

        with pytest.raises(KeyError):
            run_in_virtual_time(main())
        assert (budget.spent, budget.in_flight) == (0.0, 0)

    def test_a_bad_cost_names_the_field_and_withdraws_the_admission(self) -> None:
        budget = Budget(usd=1.0)
        traffic = Traffic(ProviderLimits(), budget)

        async def main() -> None:
            await traffic.call("openai", succeeding().call(), lambda _: -0.5)

        with pytest.raises(InvalidInputError) as raised:
            run_in_virtual_time(main())
        assert raised.value.field == "cost"
        assert (budget.spent, budget.in_flight) == (0.0, 0)
        assert traffic.stats()["openai"].cost == 0.0

    def test_costs_are_counted_without_a_budget(self) -> None:
        traffic = Traffic(ProviderLimits())

        async def main() -> None:
            for _ in range(3):
                await traffic.call("openai", succeeding().call(), lambda _: 0.25)

        run_in_virtual_time(main())
        assert traffic.stats()["openai"].cost == 0.75

    def test_a_sync_provider_in_a_worker_thread(self) -> None:
        attempts: list[float] = []

        def infer() -> str:
            attempts.append(0.0)
            if len(attempts) == 1:
                raise RateLimited(429, 2.0)
            return "answer"

        budget = Budget(usd=1.0)
        traffic = Traffic(ProviderLimits(), budget)

        async def main() -> tuple[str, float]:
            answer = await traffic.call("openai", lambda: asyncio.to_thread(infer), lambda _: 0.25)
            return answer, now()

        assert run_in_virtual_time(main()) == ("answer", 2.0)
        assert len(attempts) == 2
        assert budget.spent == 0.25


class TestCancellation:
    def test_a_task_cancelled_during_its_call_gives_its_slot_to_the_next(self) -> None:
        budget = Budget(usd=10.0)
        limits = ProviderLimits({"openai": 1})
        traffic = Traffic(limits, budget)
        provider = Provider(lambda index: (100.0 if index == 0 else 1.0, None))

        async def main() -> str:
            stuck = asyncio.create_task(traffic.call("openai", provider.call("stuck"), free))
            waiting = asyncio.create_task(traffic.call("openai", provider.call("next"), free))
            await asyncio.sleep(1)
            stuck.cancel()
            with pytest.raises(asyncio.CancelledError):
                await stuck
            return await waiting

        assert run_in_virtual_time(main()) == "next"
        assert provider.starts == [0.0, 1.0]
        assert (limits.in_flight("openai"), budget.in_flight) == (0, 0)

    def test_a_task_cancelled_while_it_waits_leaves_the_queue(self) -> None:
        limits = ProviderLimits({"openai": 1})
        provider = succeeding(2.0)
        traffic = Traffic(limits)

        async def main() -> list[Any]:
            tasks = [
                asyncio.create_task(traffic.call("openai", provider.call(name), free))
                for name in "abc"
            ]
            await asyncio.sleep(1)
            tasks[1].cancel()
            return await asyncio.gather(*tasks, return_exceptions=True)

        a, b, c = run_in_virtual_time(main())
        assert (a, c) == ("a", "c")
        assert isinstance(b, asyncio.CancelledError)
        assert provider.starts == [0.0, 2.0]

    def test_the_head_of_the_queue_cancelled_at_the_closed_gate_hands_on_its_turn(self) -> None:
        answers = [RateLimited(429, 5.0), None]
        provider = Provider(lambda index: (0.5, answers[index] if index < 2 else None))
        limits = ProviderLimits({"openai": 1})
        traffic = Traffic(limits)

        async def main() -> list[Any]:
            first = asyncio.create_task(traffic.call("openai", provider.call("first"), free))
            await asyncio.sleep(0.1)
            second = asyncio.create_task(traffic.call("openai", provider.call("second"), free))
            await asyncio.sleep(1)  # first was rate limited at 0.5 and waits for 5.5
            first.cancel()
            return await asyncio.gather(first, second, return_exceptions=True)

        first, second = run_in_virtual_time(main())
        assert isinstance(first, asyncio.CancelledError)
        assert second == "second"
        assert provider.starts == [0.0, 5.5]

    def test_a_slot_held_directly_is_released_on_cancellation(self) -> None:
        limits = ProviderLimits({"openai": 1})
        entered: list[float] = []

        async def hold(seconds: float) -> None:
            async with limits.slot("openai"):
                entered.append(now())
                await asyncio.sleep(seconds)

        async def main() -> None:
            holder = asyncio.create_task(hold(100))
            await asyncio.sleep(3)
            holder.cancel()
            await asyncio.gather(holder, return_exceptions=True)
            await hold(1)

        run_in_virtual_time(main())
        assert entered == [0.0, 3.0]


class TestConfiguration:
    @pytest.mark.parametrize(
        ("options", "field"),
        [
            ({"caps": {"openai": 0}}, "caps.openai"),
            ({"caps": {"openai": 2.5}}, "caps.openai"),
            ({"caps": {"": 2}}, "caps"),
            ({"default_cap": 0}, "default_cap"),
            ({"requests_per_minute": {"openai": -5}}, "requests_per_minute.openai"),
            ({"default_requests_per_minute": math.inf}, "default_requests_per_minute"),
            ({"burst": 0}, "burst"),
            ({"decrease": 0.0}, "decrease"),
            ({"decrease": 1.5}, "decrease"),
            ({"recover_after": True}, "recover_after"),
            ({"seed": None}, "seed"),
        ],
    )
    def test_bad_limits_name_the_field(self, options: dict[str, Any], field: str) -> None:
        with pytest.raises(InvalidInputError) as raised:
            ProviderLimits(**options)
        assert raised.value.field == field
        assert f"{field}: " in str(raised.value)

    @pytest.mark.parametrize(
        ("options", "field"),
        [
            ({"base": 0}, "base"),
            ({"factor": 0.5}, "factor"),
            ({"max": -1}, "max"),
            ({"jitter": 2}, "jitter"),
            ({"max_retry_after": math.nan}, "max_retry_after"),
        ],
    )
    def test_bad_backoff_names_the_field(self, options: dict[str, Any], field: str) -> None:
        with pytest.raises(InvalidInputError) as raised:
            Backoff(**options)
        assert raised.value.field == field

    def test_bad_traffic_names_the_field(self) -> None:
        with pytest.raises(InvalidInputError, match="max_attempts: must be >= 1, got 0"):
            Traffic(max_attempts=0)
        with pytest.raises(InvalidInputError) as raised:
            Traffic(budget=5.0)  # type: ignore[arg-type]
        assert raised.value.field == "budget"

    def test_a_provider_name_must_be_a_non_empty_string(self) -> None:
        traffic = Traffic()

        async def main() -> None:
            await traffic.call("", succeeding().call(), free)

        with pytest.raises(InvalidInputError, match="provider"):
            run_in_virtual_time(main())


class TestSlots:
    def test_a_slot_says_when_it_was_granted_how_long_it_waited_and_its_epoch(self) -> None:
        limits = ProviderLimits({"openai": 1}, decrease=0.5)
        slots: list[Slot] = []
        held: list[int] = []

        async def take(delay: float) -> None:
            await asyncio.sleep(delay)
            async with limits.slot("openai") as slot:
                slots.append(slot)
                held.append(limits.in_flight("openai"))
                await asyncio.sleep(2.0)

        async def main() -> None:
            await asyncio.gather(take(0.0), take(0.5))
            assert limits.rate_limited(slots[0], RateLimitSignal(429, 1.0)) == 1.0
            await take(0.0)

        assert (limits.in_flight("openai"), limits.in_flight("anthropic")) == (0, 0)
        run_in_virtual_time(main())
        assert slots == [
            Slot("openai", epoch=0, granted_at=0.0, waited=0.0),
            Slot("openai", epoch=0, granted_at=2.0, waited=1.5),
            Slot("openai", epoch=1, granted_at=5.0, waited=1.0),  # the gate reopened at 4 + 1
        ]
        assert held == [1, 1, 1]
        assert limits.in_flight("openai") == 0

    def test_each_cut_starts_an_epoch_and_only_a_rate_limit_of_the_current_one_cuts(
        self,
    ) -> None:
        limits = ProviderLimits({"openai": 8}, decrease=0.5)
        slots: list[Slot] = []

        async def take() -> Slot:
            async with limits.slot("openai") as slot:
                slots.append(slot)
                return slot

        async def main() -> None:
            first = await take()
            limits.rate_limited(first, RateLimitSignal(429, 0.0))  # no second strike: no cut
            limits.rate_limited(await take(), RateLimitSignal(429, None))  # cut to 4
            stale = await take()
            limits.rate_limited(first, RateLimitSignal(429, None))  # sent two cuts ago
            assert limits.limit("openai") == 4
            limits.rate_limited(stale, RateLimitSignal(429, None))  # cut to 2
            await take()

        run_in_virtual_time(main())
        assert [slot.epoch for slot in slots] == [0, 1, 2, 3]
        assert limits.limit("openai") == 2
        assert limits.stats()["openai"].rate_limited == {429: 4}

    def test_a_provider_not_asked_yet_has_its_cap_no_call_and_an_open_gate(self) -> None:
        limits = ProviderLimits({"openai": 3}, default_cap=2)
        assert [limits.limit(name) for name in ("openai", "groq")] == [3, 2]
        assert [limits.cap(name) for name in ("openai", "groq")] == [3, 2]
        assert limits.in_flight("openai") == 0
        assert limits.reopens_at("openai") == -math.inf
        assert limits.stats() == {}
        assert limits.named == frozenset({"openai"})
        assert ProviderLimits().cap("openai") == DEFAULT_CAP


class TestStats:
    def test_a_providers_stats_whole(self) -> None:
        # A's first attempt answers 503 at t=1 (cut to 2, the gate closed for 0.5 s); B's
        # success then gives a slot back, and A's retry at t=1.5 another
        answers: list[BaseException | None] = [RateLimited(503), None, None]
        provider = Provider(lambda index: (1.0, answers[index]))
        limits = ProviderLimits(
            {"anthropic": 4}, default_cap=1, decrease=0.5, backoff=Backoff(jitter=0.0)
        )
        traffic = Traffic(limits, Budget(usd=10.0))

        async def main() -> None:
            await asyncio.gather(
                traffic.call("anthropic", provider.call(), lambda _: 0.5),
                traffic.call("anthropic", provider.call(), lambda _: 0.25),
            )

        run_in_virtual_time(main())
        assert traffic.stats() == {
            "anthropic": LimitStats(
                provider="anthropic",
                cap=4,
                limit=4,
                min_limit=2,
                calls=2,
                attempts=3,
                succeeded=2,
                rate_limited={503: 1},
                retries={503: 1},
                waited=0.5,
                cost=0.75,
                max_in_flight=2,
            )
        }

    def test_calls_refused_by_the_budget_count_and_take_no_slot(self) -> None:
        budget = Budget(usd=0.5)
        traffic = Traffic(ProviderLimits(), budget)

        async def main() -> list[Any]:
            await traffic.call("openai", succeeding().call("paid"), lambda _: 0.5)
            return await asyncio.gather(
                *(traffic.call("groq", succeeding().call(), free) for _ in range(2)),
                return_exceptions=True,
            )

        refusals = run_in_virtual_time(main())
        assert [type(refusal) for refusal in refusals] == [BudgetExhausted] * 2
        stats = traffic.stats()["groq"]
        assert (stats.calls, stats.refused, stats.attempts, stats.max_in_flight) == (2, 2, 0, 0)

    def test_every_call_given_up_is_counted(self) -> None:
        provider = Provider(lambda _index: (0.1, RateLimited(429, 0.0)))
        traffic = Traffic(ProviderLimits({"openai": 2}), max_attempts=2)

        async def main() -> list[Any]:
            return await asyncio.gather(
                *(traffic.call("openai", provider.call(), free) for _ in range(3)),
                return_exceptions=True,
            )

        failures = run_in_virtual_time(main())
        assert [type(failure) for failure in failures] == [RetryLimitExceededError] * 3
        assert traffic.stats()["openai"].gave_up == 3


class TestStrikes:
    def test_a_success_ends_the_strikes(self) -> None:
        # 429s with a Retry-After cut only on a second strike in a row; a success between
        # two of them makes each the first
        answers = [RateLimited(429, 0.0), None, RateLimited(429, 0.0), None]
        provider = Provider(lambda index: (1.0, answers[index]))
        limits = ProviderLimits({"openai": 8}, decrease=0.5)
        traffic = Traffic(limits)

        async def main() -> None:
            for _ in range(2):
                await traffic.call("openai", provider.call(), free)

        run_in_virtual_time(main())
        assert traffic.stats()["openai"].min_limit == 8

    def test_the_back_off_starts_again_after_a_success(self) -> None:
        answers = [RateLimited(429), None, RateLimited(429), None]
        provider = Provider(lambda index: (0.0, answers[index]))
        backoff = Backoff(base=1.0, factor=4.0, jitter=0.0)
        traffic = Traffic(ProviderLimits({"openai": 8}, backoff=backoff))

        async def main() -> None:
            for _ in range(2):
                await traffic.call("openai", provider.call(), free)

        run_in_virtual_time(main())
        assert provider.starts == [0.0, 1.0, 1.0, 2.0]  # 1 s each time, not 4 s the second


class TestBackoff:
    def test_the_delay_grows_by_factor_up_to_max_less_its_jitter(self) -> None:
        backoff = Backoff(base=0.5, factor=3.0, max=10.0, jitter=0.0)
        rng = random.Random(0)
        assert [backoff.delay(strikes, rng) for strikes in (0, 1, 2, 3, 4)] == [
            0.5,
            0.5,
            1.5,
            4.5,
            10.0,
        ]
        jittered = Backoff(base=2.0, jitter=0.25)
        drawn = random.Random(5).random()
        assert jittered.delay(1, random.Random(5)) == 2.0 * (1.0 - 0.25 * drawn)

    @pytest.mark.parametrize(("factor", "strikes"), [(2.0, 10_000), (10.0, 400), (1e300, 3)])
    def test_a_delay_past_any_float_is_the_max(self, factor: float, strikes: int) -> None:
        backoff = Backoff(factor=factor, max=45.0, jitter=0.0)
        assert backoff.delay(strikes, random.Random(0)) == 45.0


class TestRetryAfterBoundary:
    def test_a_retry_after_of_exactly_the_limit_is_waited_for(self) -> None:
        answers = [RateLimited(429, 300.0), None]
        provider = Provider(lambda index: (0.0, answers[index]))
        traffic = Traffic(ProviderLimits(backoff=Backoff(max_retry_after=300.0)))
        run_in_virtual_time(traffic.call("openai", provider.call("late"), free))
        assert provider.starts == [0.0, 300.0]

    def test_a_retry_after_date_is_read_on_the_traffics_clock(self) -> None:
        clock = FakeClock()
        date = format_datetime(clock.now() + timedelta(seconds=7), usegmt=True)

        class Dated(Exception):
            status_code = 429
            response = SimpleNamespace(headers={"retry-after": date})

        answers: list[BaseException | None] = [Dated(), None]
        provider = Provider(lambda index: (0.0, answers[index]))
        traffic = Traffic(ProviderLimits(), clock=clock)
        run_in_virtual_time(traffic.call("openai", provider.call(), free))
        assert provider.starts == [0.0, 7.0]


class TestRequestRateRefill:
    def test_the_bucket_refills_at_the_rate_while_no_call_waits(self) -> None:
        # 30 a minute: a token every 2 s. A call at t=1 finds half a token and waits 1 s for
        # the rest; one at t=7 finds the bucket full (one token: burst=1) and starts at once.
        provider = succeeding(0.1)
        traffic = Traffic(ProviderLimits(requests_per_minute={"openai": 30}))

        async def main() -> None:
            for arrival in (0.0, 1.0, 7.0):
                await asyncio.sleep(max(0.0, arrival - now()))
                await traffic.call("openai", provider.call(), free)

        run_in_virtual_time(main())
        assert provider.starts == pytest.approx([0.0, 2.0, 7.0])


class TestProblems:
    """Every bad setting is named with what is wrong with it, all in one error."""

    @pytest.mark.parametrize(
        ("options", "problems"),
        [
            ({"caps": [4]}, [("caps", "expected a mapping of provider name to value, got list")]),
            (
                {"caps": {"openai": 0, 7: 1, "anthropic": "2"}},
                [
                    ("caps.openai", "must be >= 1, got 0"),
                    ("caps", "provider names must be non-empty strings, got 7"),
                    ("caps.anthropic", "expected a whole number >= 1, got str '2'"),
                ],
            ),
            (
                {"default_cap": 2.0},
                [("default_cap", "expected a whole number >= 1, got float 2.0")],
            ),
            (
                {"requests_per_minute": {"openai": "60", "groq": 0}},
                [
                    (
                        "requests_per_minute.openai",
                        "expected requests per minute (a number > 0), got str",
                    ),
                    ("requests_per_minute.groq", "must be a finite number > 0, got 0"),
                ],
            ),
            (
                {"requests_per_minute": 60},
                [("requests_per_minute", "expected a mapping of provider name to value, got int")],
            ),
            (
                {"default_requests_per_minute": True},
                [
                    (
                        "default_requests_per_minute",
                        "expected requests per minute (a number > 0), got bool",
                    )
                ],
            ),
            (
                {"default_requests_per_minute": -math.inf},
                [("default_requests_per_minute", "must be a finite number > 0, got -inf")],
            ),
            (
                {"burst": 0, "recover_after": -1},
                [
                    ("burst", "must be >= 1, got 0"),
                    ("recover_after", "must be >= 1, got -1"),
                ],
            ),
            ({"decrease": 0}, [("decrease", "must be > 0 and <= 1, got 0")]),
            ({"decrease": 1.25}, [("decrease", "must be > 0 and <= 1, got 1.25")]),
            ({"decrease": "half"}, [("decrease", "expected a number, got str")]),
            ({"decrease": math.nan}, [("decrease", "expected a finite number, got nan")]),
            (
                {"seed": "7"},
                [("seed", "expected an int (the same seed gives the same jitter), got str")],
            ),
            ({"backoff": {"base": 1}}, [("backoff", "expected a Backoff, got dict")]),
            ({"sleeper": 5}, [("sleeper", "expected a Sleeper: now() and async sleep(seconds)")]),
        ],
    )
    def test_bad_limits(self, options: dict[str, Any], problems: list[tuple[str, str]]) -> None:
        with pytest.raises(InvalidInputError) as raised:
            ProviderLimits(**options)
        assert raised.value.what == "ProviderLimits"
        assert raised.value.problems == problems

    @pytest.mark.parametrize(
        ("options", "problems"),
        [
            ({"base": 0.0}, [("base", "must be > 0, got 0.0")]),
            (
                {"factor": 0.5, "max": -1},
                [
                    ("factor", "must be >= 1, got 0.5"),
                    ("max", "must be >= 0, got -1"),
                ],
            ),
            ({"jitter": 1.5}, [("jitter", "must be >= 0 and <= 1, got 1.5")]),
            ({"jitter": -0.1}, [("jitter", "must be >= 0 and <= 1, got -0.1")]),
            (
                {"max_retry_after": math.inf},
                [("max_retry_after", "expected a finite number, got inf")],
            ),
            ({"base": None}, [("base", "expected a number, got NoneType")]),
        ],
    )
    def test_bad_backoff(self, options: dict[str, Any], problems: list[tuple[str, str]]) -> None:
        with pytest.raises(InvalidInputError) as raised:
            Backoff(**options)
        assert raised.value.what == "Backoff"
        assert raised.value.problems == problems

    def test_the_bounds_themselves_are_good(self) -> None:
        Backoff(base=1e-9, factor=1.0, max=0.0, jitter=0.0, max_retry_after=0.0)
        Backoff(jitter=1.0)
        ProviderLimits(
            {"openai": 1}, default_cap=1, burst=1, decrease=1.0, recover_after=1, seed=-3
        )
        ProviderLimits(requests_per_minute={"openai": 0.001}, default_requests_per_minute=1e-9)

    def test_a_sleeper_given_is_the_one_waits_go_through(self) -> None:
        class Counting(LoopSleeper):
            def __init__(self) -> None:
                self.slept: list[float] = []

            async def sleep(self, seconds: float) -> None:
                self.slept.append(seconds)
                await super().sleep(seconds)

        sleeper = Counting()
        limits = ProviderLimits(requests_per_minute={"openai": 60}, sleeper=sleeper)
        assert limits.sleeper is sleeper
        traffic = Traffic(limits)

        async def main() -> None:
            for _ in range(2):
                await traffic.call("openai", succeeding(0.25).call(), free)

        run_in_virtual_time(main())
        assert sleeper.slept == [0.75]
        assert isinstance(ProviderLimits().sleeper, LoopSleeper)

    def test_bad_traffic(self) -> None:
        with pytest.raises(InvalidInputError) as raised:
            Traffic({"openai": 2}, 5.0, max_attempts=1.5)  # type: ignore[arg-type]
        assert raised.value.what == "Traffic"
        assert raised.value.problems == [
            ("max_attempts", "expected a whole number >= 1, got float 1.5"),
            ("limits", "expected ProviderLimits, got dict"),
            ("budget", "expected a Budget, got float"),
        ]

    def test_a_provider_name_is_named_whole(self) -> None:
        assert ProviderLimits().cap("") == DEFAULT_CAP  # a name is checked when a gate is made
        with pytest.raises(InvalidInputError) as raised:
            run_in_virtual_time(Traffic().call("", succeeding().call(), free))
        assert raised.value.what == "provider name"
        assert raised.value.problems == [("provider", "expected a non-empty string: ''")]
