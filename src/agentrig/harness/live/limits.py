"""Traffic control for live trials: per-provider concurrency caps and request rates, back-off on
rate limits, retries, and the shared budget, behind one call the trial runner wraps around every
model call::

    traffic = Traffic(ProviderLimits({"openai": 8, "anthropic": 4}), Budget(usd=20.0))
    response = await traffic.call("openai", lambda: provider.ainfer(request), cost_of)

``Traffic.call`` waits for a slot of the provider (its concurrency cap, its gate, its request
rate), asks the budget to admit the call, makes it, and charges its cost. A rate-limit answer
(HTTP 429, 503 or 529) closes the provider's gate until its ``Retry-After`` (or an exponential,
jittered back-off), halves the provider's concurrency, and the call is tried again; every other
error passes through unchanged. Concurrency comes back one slot per ``recover_after``
successes (AIMD, as TCP's congestion window).

All waiting but for a free slot goes through a ``Sleeper`` (the running loop's clock by
default), so the whole of it runs in virtual time in tests (``virtual_time``).
"""

from __future__ import annotations

import asyncio
import math
import random
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

from agentrig.clock import Clock
from agentrig.errors import InvalidInputError, RetryLimitExceededError
from agentrig.harness.live.budget import Budget, BudgetExhausted
from agentrig.harness.live.rate_limits import RateLimitSignal, rate_limit_of
from agentrig.harness.live.virtual_time import LoopSleeper, Sleeper

__all__ = [
    "DEFAULT_CAP",
    "DEFAULT_MAX_ATTEMPTS",
    "Backoff",
    "LimitStats",
    "ProviderLimits",
    "Slot",
    "Traffic",
]

T = TypeVar("T")

DEFAULT_CAP = 4
"""Concurrent calls allowed to a provider no cap names."""

DEFAULT_MAX_ATTEMPTS = 20
"""Attempts per call before a rate limit fails it. With 30% of answers rate limits, each
independent, a call fails with probability 0.3**20 = 3.5e-11: about one lost call in 29
billion, so a run of a million calls loses none with probability 0.99997."""

DEFAULT_DECREASE = 0.7
"""How much a provider's concurrency is kept on a 429 that goes on (AIMD's multiplicative cut):
0.7 of it, as TCP CUBIC keeps; halving settles far below the cap when 429s come at random."""
DEFAULT_RECOVER_AFTER = 1
"""Successes that give back one slot of concurrency lost to rate limits."""

_SOON = 1e-6
"""Seconds of wait too short to sleep: float sums seldom land exactly on a reopening time or a
whole token, and a sleep shorter than the clock's resolution would not move it."""


def _worth_sleeping(seconds: float) -> bool:
    return seconds > _SOON  # pragma: no mutate (>=: a wait of exactly _SOON is as short)


@dataclass(frozen=True)
class Backoff:
    """How long a provider's gate stays closed after a rate-limit answer.

    With ``Retry-After``: exactly that long, up to ``max_retry_after`` seconds (a call asked to
    wait longer fails at once instead: a quota that comes back tomorrow will not come back in
    this run). Without: ``base * factor**(strikes - 1)`` seconds, at most ``max``, of which the
    fraction ``jitter`` is random (drawn from the limits' seeded generator), where ``strikes``
    counts the rate limits in a row, none of them answering a call sent after the previous one.
    """

    base: float = 0.5
    factor: float = 2.0
    max: float = 32.0
    jitter: float = 0.5
    max_retry_after: float = 600.0

    def __post_init__(self) -> None:
        problems = [
            *_number_problems("base", self.base, low=0.0, low_open=True),
            *_number_problems("factor", self.factor, low=1.0),
            *_number_problems("max", self.max, low=0.0),
            *_number_problems("jitter", self.jitter, low=0.0, high=1.0),
            *_number_problems("max_retry_after", self.max_retry_after, low=0.0),
        ]
        if problems:
            raise InvalidInputError("Backoff", problems)

    def delay(self, strikes: int, rng: random.Random) -> float:
        """Seconds to keep the gate closed after ``strikes`` (>= 1) rate limits in a row."""
        try:
            full = min(self.max, self.base * self.factor ** (max(strikes, 1) - 1))
        except OverflowError:  # a power past any float is past the max
            full = self.max
        return full * (1.0 - self.jitter * rng.random())


@dataclass(frozen=True)
class Slot:
    """One granted attempt at a provider: ``waited`` seconds in the queue; ``epoch`` is how many
    times the provider's concurrency had been cut when it was granted."""

    provider: str
    epoch: int
    granted_at: float
    waited: float


@dataclass(frozen=True)
class LimitStats:
    """What the traffic control did for one provider, for the report.

    ``calls`` made through ``Traffic.call`` and ``attempts`` sent (slots granted: calls plus
    retries); ``succeeded`` attempts; ``rate_limited``: every rate-limit answer by HTTP status,
    and ``retries`` those that were tried again; ``gave_up``: calls failed by rate limits (out
    of attempts, or asked to wait too long); ``refused``: calls the budget refused; ``waited``:
    seconds attempts spent waiting for a slot, summed; ``cost``: USD charged for the answers
    (what ``cost_of`` said, budget or not); ``max_in_flight``: the most attempts at
    once; ``limit``: the concurrency now, ``min_limit`` the lowest it fell to, ``cap`` the
    configured one.
    """

    provider: str
    cap: int
    limit: int
    min_limit: int
    calls: int = 0
    attempts: int = 0
    succeeded: int = 0
    rate_limited: Mapping[int, int] = field(default_factory=dict)
    retries: Mapping[int, int] = field(default_factory=dict)
    gave_up: int = 0
    refused: int = 0
    waited: float = 0.0
    cost: float = 0.0
    max_in_flight: int = 0


class _Gate:
    """One provider's state: the queue for its slots, its concurrency, gate and token bucket."""

    def __init__(self, name: str, cap: int, rate: float | None, burst: int, now: float) -> None:
        self.name = name
        self.cap = cap
        self.limit = cap
        self.in_flight = 0
        self.queue: deque[asyncio.Future[None]] = deque()  # head first
        self.wakeup: asyncio.Future[None] | None = None  # the head waits here for capacity
        self.closed_until = -math.inf
        self.epoch = 0  # concurrency cuts so far
        self.strikes = 0  # rate limits in a row, one per epoch
        self.successes = 0  # pragma: no mutate (towards the next slot back: each cut zeroes it)
        self.rate = rate  # tokens per second, None for no request rate limit
        self.burst = burst
        self.tokens = float(burst)
        self.refilled_at = now
        self.calls = 0
        self.attempts = 0
        self.succeeded = 0
        self.rate_limited: Counter[int] = Counter()
        self.retries: Counter[int] = Counter()
        self.gave_up = 0
        self.refused = 0
        self.waited = 0.0
        self.cost = 0.0
        self.max_in_flight = 0
        self.min_limit = cap

    def token_wait(self, now: float) -> float:
        """Seconds until the bucket holds a token (refilling it to ``now`` first)."""
        if self.rate is None:
            return 0.0
        self.tokens = min(float(self.burst), self.tokens + (now - self.refilled_at) * self.rate)
        self.refilled_at = now
        wait = (1.0 - self.tokens) / self.rate
        return wait if _worth_sleeping(wait) else 0.0

    def wake(self) -> None:
        if self.wakeup is not None and not self.wakeup.done():
            self.wakeup.set_result(None)

    def leave(self, turn: asyncio.Future[None]) -> None:
        """Take ``turn`` out of the queue; when it was the head, the next in line becomes it."""
        was_head = self.queue[0] is turn
        self.queue.remove(turn)
        if was_head and self.queue and not self.queue[0].done():
            self.queue[0].set_result(None)

    def stats(self) -> LimitStats:
        return LimitStats(
            provider=self.name,
            cap=self.cap,
            limit=self.limit,
            min_limit=self.min_limit,
            calls=self.calls,
            attempts=self.attempts,
            succeeded=self.succeeded,
            rate_limited=MappingProxyType(dict(sorted(self.rate_limited.items()))),
            retries=MappingProxyType(dict(sorted(self.retries.items()))),
            gave_up=self.gave_up,
            refused=self.refused,
            waited=self.waited,
            cost=self.cost,
            max_in_flight=self.max_in_flight,
        )


class ProviderLimits:
    """Per-provider concurrency caps and request rates, with AIMD back-off on rate limits.

    ``caps`` maps a provider name to the most calls in flight at once (>= 1); providers it does
    not name get ``default_cap``. ``requests_per_minute`` (and ``default_requests_per_minute``
    for the others; None: no limit) meters starts through a token bucket holding ``burst``
    tokens. A provider's effective concurrency starts at its cap, is multiplied by ``decrease``
    (halved by default; rounded down, to no less than 1; 1.0 never cuts) on a rate limit
    answering a call sent since the last cut, and grows back by one per ``recover_after``
    successes. ``backoff`` says how long a rate limit closes the provider's gate, drawing its
    jitter from ``random.Random(seed)``. Waits go through ``sleeper``.

    Slots are granted first come, first served, per provider. Use one ``ProviderLimits`` from
    one event loop.
    """

    def __init__(
        self,
        caps: Mapping[str, int] | None = None,
        *,
        default_cap: int = DEFAULT_CAP,
        requests_per_minute: Mapping[str, float] | None = None,
        default_requests_per_minute: float | None = None,
        burst: int = 1,
        decrease: float = DEFAULT_DECREASE,
        recover_after: int = DEFAULT_RECOVER_AFTER,
        backoff: Backoff | None = None,
        seed: int = 0,
        sleeper: Sleeper | None = None,
    ) -> None:
        problems = [
            *_per_provider_problems("caps", caps, _count_problem),
            *_prefixed("default_cap", _count_problem(default_cap)),
            *_per_provider_problems("requests_per_minute", requests_per_minute, _rate_problem),
            *(
                _prefixed("default_requests_per_minute", _rate_problem(default_requests_per_minute))
                if default_requests_per_minute is not None
                else []
            ),
            *_prefixed("burst", _count_problem(burst)),
            *_number_problems("decrease", decrease, low=0.0, high=1.0, low_open=True),
            *_prefixed("recover_after", _count_problem(recover_after)),
            *_prefixed("seed", _seed_problem(seed)),
        ]
        if backoff is not None and not isinstance(backoff, Backoff):
            problems.append(("backoff", f"expected a Backoff, got {type(backoff).__name__}"))
        if sleeper is not None and not isinstance(sleeper, Sleeper):
            problems.append(("sleeper", "expected a Sleeper: now() and async sleep(seconds)"))
        if problems:
            raise InvalidInputError("ProviderLimits", problems)
        self._caps = dict(caps or {})
        self._default_cap = default_cap
        self._rpm = {name: float(rpm) for name, rpm in (requests_per_minute or {}).items()}
        self._default_rpm = default_requests_per_minute
        self._burst = burst
        self._decrease = float(decrease)
        self._recover_after = recover_after
        self._backoff = backoff or Backoff()
        self._random = random.Random(seed)
        self._sleeper: Sleeper = sleeper or LoopSleeper()
        self._gates: dict[str, _Gate] = {}

    @property
    def sleeper(self) -> Sleeper:
        """What every wait goes through."""
        return self._sleeper

    @property
    def backoff(self) -> Backoff:
        """How long rate limits close a provider's gate."""
        return self._backoff

    @property
    def named(self) -> frozenset[str]:
        """The providers given a cap of their own."""
        return frozenset(self._caps)

    def cap(self, provider: str) -> int:
        """The configured concurrency cap of ``provider``."""
        return self._caps.get(provider, self._default_cap)

    def limit(self, provider: str) -> int:
        """The concurrency ``provider`` has now: its cap, less what rate limits took."""
        gate = self._gates.get(provider)
        return self.cap(provider) if gate is None else gate.limit

    def in_flight(self, provider: str) -> int:
        """Slots of ``provider`` held now."""
        gate = self._gates.get(provider)
        return 0 if gate is None else gate.in_flight

    def reopens_at(self, provider: str) -> float:
        """The sleeper's time ``provider``'s gate reopens at (``-inf``: it is open)."""
        gate = self._gates.get(provider)
        return -math.inf if gate is None else gate.closed_until

    def stats(self) -> dict[str, LimitStats]:
        """Each provider's ``LimitStats``, by name, for the providers used so far."""
        return {name: gate.stats() for name, gate in sorted(self._gates.items())}

    @asynccontextmanager
    async def slot(self, provider: str) -> AsyncIterator[Slot]:
        """Wait for a slot of ``provider`` and hold it for the block: its gate open, a call
        free under its concurrency, a token of its request rate. A task cancelled while it
        waits or while it holds the slot gives it up."""
        gate = self._gate(provider)
        granted = await self._acquire(gate)
        try:
            yield granted
        finally:
            gate.in_flight -= 1
            gate.wake()

    def rate_limited(self, slot: Slot, signal: RateLimitSignal) -> float:
        """React to the rate-limit answer ``signal`` to the attempt in ``slot``: count it; when
        the attempt was sent since the provider's last cut, cut its concurrency (by
        ``decrease``) and count a strike; close its gate for the ``Retry-After`` (at most
        ``backoff.max_retry_after``) or else the back-off. Returns the seconds the gate stays
        closed from now."""
        gate = self._gate(slot.provider)
        gate.rate_limited[signal.status] += 1
        if slot.epoch == gate.epoch:
            gate.epoch += 1
            gate.strikes += 1
            # A Retry-After is the server saying when to come back: the gate honours it, and
            # concurrency is cut only when the 429s go on (a second strike with no success
            # between). Without one the cause is unknown: cut at once.
            if signal.retry_after is None or gate.strikes >= 2:
                gate.limit = max(1, math.floor(gate.limit * self._decrease))
                gate.min_limit = min(gate.min_limit, gate.limit)
                gate.successes = 0
        if signal.retry_after is not None:
            delay = min(signal.retry_after, self._backoff.max_retry_after)
        else:
            delay = self._backoff.delay(gate.strikes, self._random)
        gate.closed_until = max(gate.closed_until, self._sleeper.now() + delay)
        return delay

    def succeeded(self, slot: Slot) -> None:
        """Count a success of the attempt in ``slot``: strikes end, and every
        ``recover_after``-th success gives a slot of concurrency back, up to the cap."""
        gate = self._gate(slot.provider)
        gate.succeeded += 1
        gate.strikes = 0
        if gate.limit >= gate.cap:  # back at the cap: its successes were zeroed as it got there
            return
        gate.successes += 1
        if gate.successes >= self._recover_after:
            gate.successes = 0
            gate.limit += 1
            gate.wake()

    def _gate(self, provider: str) -> _Gate:
        gate = self._gates.get(provider)
        if gate is None:
            if not isinstance(provider, str) or not provider:
                raise InvalidInputError(
                    "provider name", [("provider", f"expected a non-empty string: {provider!r}")]
                )
            rpm = self._rpm.get(provider, self._default_rpm)
            rate = None if rpm is None else rpm / 60.0
            now = self._sleeper.now()
            gate = self._gates[provider] = _Gate(
                provider, self.cap(provider), rate, self._burst, now
            )
        return gate

    async def _acquire(self, gate: _Gate) -> Slot:
        loop = asyncio.get_running_loop()
        began = self._sleeper.now()
        turn: asyncio.Future[None] = loop.create_future()
        gate.queue.append(turn)
        try:
            if gate.queue[0] is not turn:
                await turn  # the previous head hands the turn on as it leaves
            while True:
                now = self._sleeper.now()
                if _worth_sleeping(gate.closed_until - now):
                    await self._sleeper.sleep(gate.closed_until - now)
                elif gate.in_flight >= gate.limit:
                    gate.wakeup = loop.create_future()
                    await gate.wakeup
                elif (wait := gate.token_wait(now)) > 0:
                    await self._sleeper.sleep(wait)
                else:
                    break
        finally:
            gate.leave(turn)
        if gate.rate is not None:
            gate.tokens -= 1.0
        gate.in_flight += 1
        gate.attempts += 1
        gate.max_in_flight = max(gate.max_in_flight, gate.in_flight)
        waited = now - began
        gate.waited += waited
        return Slot(gate.name, gate.epoch, now, waited)


class Traffic:
    """The one entry point the live-trial runner wraps around every model call: ``limits``
    (per provider), ``budget`` (shared; None for no limit), and up to ``max_attempts`` attempts
    per call while the answers are rate limits. ``clock`` turns a ``Retry-After`` given as an
    HTTP date into seconds (the system clock by default)."""

    def __init__(
        self,
        limits: ProviderLimits | None = None,
        budget: Budget | None = None,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        clock: Clock | None = None,
    ) -> None:
        problems = list(_prefixed("max_attempts", _count_problem(max_attempts)))
        if limits is not None and not isinstance(limits, ProviderLimits):
            problems.append(("limits", f"expected ProviderLimits, got {type(limits).__name__}"))
        if budget is not None and not isinstance(budget, Budget):
            problems.append(("budget", f"expected a Budget, got {type(budget).__name__}"))
        if problems:
            raise InvalidInputError("Traffic", problems)
        self._limits = limits or ProviderLimits()
        self._budget = budget
        self._max_attempts = max_attempts
        self._clock = clock

    @property
    def limits(self) -> ProviderLimits:
        """The per-provider limits."""
        return self._limits

    @property
    def budget(self) -> Budget | None:
        """The shared budget, if any."""
        return self._budget

    @property
    def max_attempts(self) -> int:
        """Attempts per call before a rate limit fails it."""
        return self._max_attempts

    def stats(self) -> dict[str, LimitStats]:
        """Each provider's ``LimitStats``, by name."""
        return self._limits.stats()

    async def call(
        self,
        provider: str,
        make_call: Callable[[], Awaitable[T]],
        cost_of: Callable[[T], float],
    ) -> T:
        """Make one model call to ``provider`` under the limits and the budget; its answer.

        ``make_call()`` makes a fresh awaitable for each attempt (for a sync provider:
        ``lambda: asyncio.to_thread(provider.infer, request)``); ``cost_of(answer)`` is its
        cost in USD. Each attempt waits for a slot, is admitted by the budget (else
        ``BudgetExhausted``), and is charged when it succeeds. A rate-limit answer is retried
        after the gate reopens, up to ``max_attempts`` attempts, then fails as
        ``RetryLimitExceededError`` (its ``status_code`` the last answer's); so does one asking
        to wait longer than ``limits.backoff.max_retry_after``. Any other error passes through
        unchanged, with nothing charged.
        """
        gate = self._limits._gate(provider)
        gate.calls += 1
        attempt = 0
        while True:
            attempt += 1
            self._check_budget(gate)
            async with self._limits.slot(provider) as slot:
                self._admit(gate)
                try:
                    answer = await make_call()
                except Exception as error:
                    self._withdraw()
                    signal = rate_limit_of(error, self._clock)
                    if signal is None:
                        raise
                    self._limits.rate_limited(slot, signal)
                    if attempt >= self._max_attempts or _too_long(signal, self._limits):
                        gate.gave_up += 1
                        raise _gave_up(provider, attempt, error, signal, self._limits) from error
                    gate.retries[signal.status] += 1
                    continue
                except BaseException:  # cancelled: the slot is given up on the way out
                    self._withdraw()
                    raise
                self._charge(gate, answer, cost_of)
                self._limits.succeeded(slot)
                return answer

    def _check_budget(self, gate: _Gate) -> None:
        if self._budget is not None:
            try:
                self._budget.check()
            except BudgetExhausted:
                gate.refused += 1
                raise

    def _admit(self, gate: _Gate) -> None:
        if self._budget is not None:
            try:
                self._budget.admit()
            except BudgetExhausted:
                gate.refused += 1
                raise

    def _withdraw(self) -> None:
        if self._budget is not None:
            self._budget.withdraw()

    def _charge(self, gate: _Gate, answer: T, cost_of: Callable[[T], float]) -> None:
        try:
            cost = cost_of(answer)
            if self._budget is not None:
                self._budget.charge(cost)
        except BaseException:
            self._withdraw()
            raise
        gate.cost += cost

    def __repr__(self) -> str:
        return f"Traffic(max_attempts={self._max_attempts}, budget={self._budget!r})"


def _too_long(signal: RateLimitSignal, limits: ProviderLimits) -> bool:
    return signal.retry_after is not None and signal.retry_after > limits.backoff.max_retry_after


def _gave_up(
    provider: str,
    attempts: int,
    error: Exception,
    signal: RateLimitSignal,
    limits: ProviderLimits,
) -> RetryLimitExceededError:
    if _too_long(signal, limits):
        why = (
            f"{provider} asked to wait {signal.retry_after:g}s (Retry-After), more than "
            f"backoff.max_retry_after={limits.backoff.max_retry_after:g}s"
        )
    else:
        why = f"{provider} answered HTTP {signal.status} (rate limited) to all {attempts} attempts"
    failed = RetryLimitExceededError(attempts, error, stopped_by=why)
    failed.status_code = signal.status
    failed.provider = provider
    return failed


def _prefixed(name: str, problem: str | None) -> list[tuple[str, str]]:
    return [] if problem is None else [(name, problem)]


def _count_problem(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"expected a whole number >= 1, got {type(value).__name__} {value!r}"
    if value < 1:
        return f"must be >= 1, got {value}"
    return None


def _rate_problem(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"expected requests per minute (a number > 0), got {type(value).__name__}"
    if not math.isfinite(value) or value <= 0:
        return f"must be a finite number > 0, got {value}"
    return None


def _seed_problem(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"expected an int (the same seed gives the same jitter), got {type(value).__name__}"
    return None


def _per_provider_problems(
    name: str, values: object, problem_of: Callable[[object], str | None]
) -> Iterable[tuple[str, str]]:
    if values is None:
        return
    if not isinstance(values, Mapping):
        yield name, f"expected a mapping of provider name to value, got {type(values).__name__}"
        return
    for provider, value in values.items():
        if not isinstance(provider, str) or not provider:
            yield name, f"provider names must be non-empty strings, got {provider!r}"
            continue
        problem = problem_of(value)
        if problem is not None:
            yield f"{name}.{provider}", problem


def _number_problems(
    name: str,
    value: object,
    *,
    low: float,
    high: float = math.inf,
    low_open: bool = False,
) -> Iterable[tuple[str, str]]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        yield name, f"expected a number, got {type(value).__name__}"
    elif not math.isfinite(value):
        yield name, f"expected a finite number, got {value}"
    elif value < low or (low_open and value == low) or value > high:
        bound = f"> {low:g}" if low_open else f">= {low:g}"
        if high < math.inf:
            bound += f" and <= {high:g}"
        yield name, f"must be {bound}, got {value}"
