"""``FakeClock`` and ``SeededIds``: time that moves only when told, and reproducible ids."""

from __future__ import annotations

import heapq
import itertools
import math
import random
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from agentrig.clock import current_clock, format_uuid4
from agentrig.errors import InvalidInputError

if TYPE_CHECKING:
    import asyncio

DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)


class FakeClock:
    """A clock that advances only through ``advance()`` or ``set()``; its times are in UTC."""

    def __init__(self, start: datetime = DEFAULT_START) -> None:
        self._now = _aware(start, "start", "FakeClock start")
        self._start = self._now
        self._sleepers: list[tuple[datetime, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._registered = 0  # sleeps registered so far: the waker waits until none arrive
        self._waker: tuple[asyncio.AbstractEventLoop, int] | None = None

    def now(self) -> datetime:
        """The fake current time."""
        return self._now

    @property
    def start(self) -> datetime:
        """The time the clock started at: it never reads an earlier one, so
        ``AgentLoop.check_clock`` takes an earlier time in a state for another clock's."""
        return self._start

    def advance(self, seconds: float) -> datetime:
        """Move forward by ``seconds`` (a finite number >= 0) and return the new time."""
        problem = _seconds_problem(seconds)
        if problem is not None:
            raise InvalidInputError("FakeClock.advance() argument", [("seconds", problem)])
        try:
            self._now += timedelta(seconds=seconds)
        except OverflowError:
            reason = f"{seconds}s from {self._now.isoformat()} goes past the latest date"
            raise InvalidInputError("FakeClock.advance() argument", [("seconds", reason)]) from None
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of fake time on the running event loop; concurrent sleeps overlap.

        Time moves only when every task sleeping on this clock has gone to sleep (no new sleep
        arrived during a pass of the event loop): then it jumps to the earliest wake-up time and
        wakes those sleepers. Three tasks sleeping 1 second together take 1 fake second; the
        same three sleeping one after another take 3.
        """
        problem = _seconds_problem(seconds)
        if problem is not None:
            raise InvalidInputError("FakeClock.sleep() argument", [("seconds", problem)])
        import asyncio  # imported where used: a sync run needs no event loop

        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        wake_at = self._now + timedelta(seconds=seconds)
        heapq.heappush(self._sleepers, (wake_at, next(self._order), waiter))
        self._registered += 1
        if self._waker is None:
            self._waker = (loop, self._registered)
            loop.call_soon(self._wake)
        await waiter

    def _wake(self) -> None:
        assert self._waker is not None
        loop, seen = self._waker
        if seen != self._registered:  # sleepers are still arriving: wait one more pass
            self._waker = (loop, self._registered)
            loop.call_soon(self._wake)
            return
        self._waker = None
        while self._sleepers and self._sleepers[0][2].done():  # cancelled sleepers
            heapq.heappop(self._sleepers)
        if not self._sleepers:
            return
        self._now = max(self._now, self._sleepers[0][0])
        while self._sleepers and self._sleepers[0][0] <= self._now:
            waiter = heapq.heappop(self._sleepers)[2]
            if not waiter.done():
                waiter.set_result(None)
        if self._sleepers:
            self._waker = (loop, self._registered)
            loop.call_soon(self._wake)

    def set(self, moment: datetime) -> None:
        """Jump to ``moment`` (not earlier than now)."""
        moment = _aware(moment, "moment", "FakeClock.set() argument")
        if moment < self._now:
            reason = (
                f"cannot go backwards to {moment.isoformat()} from {self._now.isoformat()}; "
                "use a new FakeClock to start over earlier"
            )
            raise InvalidInputError("FakeClock.set() argument", [("moment", reason)])
        self._now = moment

    def __repr__(self) -> str:
        return f"FakeClock({self._now.isoformat()})"


def is_seconds(value: object) -> bool:
    """True when ``value`` is a duration the fakes accept: a finite number of seconds >= 0."""
    return _seconds_problem(value) is None


def _seconds_problem(seconds: object) -> str | None:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return (
            f"expected a number of seconds, got {type(seconds).__name__} "
            "(pass a timedelta as its .total_seconds())"
        )
    if not math.isfinite(seconds):
        return f"expected a finite number of seconds, got {seconds}"
    if seconds < 0:
        return f"FakeClock cannot go backwards ({seconds}s); use a new FakeClock to start over"
    return None


def _aware(moment: object, field: str, what: str) -> datetime:
    """``moment`` in UTC, or an ``InvalidInputError`` naming ``field``."""
    if not isinstance(moment, datetime):
        reason = f"expected a timezone-aware datetime, got {type(moment).__name__}"
        raise InvalidInputError(what, [(field, reason)])
    if moment.tzinfo is None or moment.utcoffset() is None:
        reason = f"{moment.isoformat()} must be timezone-aware: add tzinfo=datetime.UTC"
        raise InvalidInputError(what, [(field, reason)])
    return moment.astimezone(UTC)


class SeededIds:
    """UUID-shaped ids from a seeded generator: the same seed gives the same ids in the same order."""

    def __init__(self, seed: int = 0) -> None:
        if seed is None:
            reason = "None would seed from the OS, so ids would differ between runs; pass an int"
            raise InvalidInputError("SeededIds seed", [("seed", reason)])
        self.seed = seed
        self._random = random.Random(seed)
        self._count = 0
        # What ``issued`` compares with: the first ``_count`` ids, replayed from the seed when
        # asked, so handing out an id costs only the count.
        self._replay: random.Random | None = None
        self._replayed: set[str] = set()
        self._replayed_count = 0

    def new_id(self, kind: str) -> str:
        """The next id."""
        self._count += 1
        return format_uuid4(self._random.getrandbits(128))

    @property
    def count(self) -> int:
        """How many ids this factory has handed out."""
        return self._count

    def fork(self) -> SeededIds:
        """An independent factory that hands out the ids this one would hand out next (and
        says it issued those this one did): ``AgentLoop.next_request`` runs hooks on one, so
        what they make has the ids of the real step, and asking takes no id from the agent."""
        forked = SeededIds(self.seed)
        forked._random.setstate(self._random.getstate())
        forked._count = self._count
        return forked

    def issued(self, value: str) -> bool:
        """True when this factory has handed out ``value`` (``AgentLoop.check_clock`` takes a
        UUID it did not hand out for an id made elsewhere)."""
        if self._replay is None:
            self._replay = random.Random(self.seed)
        while self._replayed_count < self._count:
            self._replayed.add(format_uuid4(self._replay.getrandbits(128)))
            self._replayed_count += 1
        return value in self._replayed

    def __repr__(self) -> str:
        return f"SeededIds(seed={self.seed})"


def latency_clock(own: FakeClock | None) -> FakeClock | None:
    """The clock a fake's latency moves: its own when given, else the clock the agent runs
    under (the loop's, set while it runs) when that is a ``FakeClock``; else None."""
    if own is not None:
        return own
    running = current_clock()
    return running if isinstance(running, FakeClock) else None
