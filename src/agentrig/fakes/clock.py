"""``FakeClock`` and ``SeededIds``: time that moves only when told, and reproducible ids."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from agentrig.clock import format_uuid4

DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)


class FakeClock:
    """A clock that advances only through ``advance()`` or ``set()``."""

    def __init__(self, start: datetime = DEFAULT_START) -> None:
        if start.tzinfo is None:
            raise ValueError("FakeClock start must be timezone-aware")
        self._now = start

    def now(self) -> datetime:
        """The fake current time."""
        return self._now

    def advance(self, seconds: float) -> datetime:
        """Move forward by ``seconds`` (>= 0) and return the new time."""
        if seconds < 0:
            raise ValueError(f"FakeClock cannot go backwards ({seconds}s)")
        self._now += timedelta(seconds=seconds)
        return self._now

    def set(self, moment: datetime) -> None:
        """Jump to ``moment`` (not earlier than now)."""
        if moment < self._now:
            raise ValueError(f"FakeClock cannot go backwards to {moment.isoformat()}")
        self._now = moment

    def __repr__(self) -> str:
        return f"FakeClock({self._now.isoformat()})"


class SeededIds:
    """UUID-shaped ids from a seeded generator: the same seed gives the same ids in the same order."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._random = random.Random(seed)

    def new_id(self, kind: str) -> str:
        """The next id."""
        return format_uuid4(self._random.getrandbits(128))

    def __repr__(self) -> str:
        return f"SeededIds(seed={self.seed})"
