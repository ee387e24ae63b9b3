"""Injected time and identity: the ``Clock`` and ``IdFactory`` seams (DESIGN D10).

State objects are immutable values, yet their mutators stamp times and create ids (seed 002). They
read both from the *current runtime context*, which the loop sets around every step from the
clock and id factory it was built with. Outside a loop the system defaults apply, unless code runs
inside ``runtime_context(clock=..., ids=...)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """A source of timezone-aware UTC datetimes."""

    def now(self) -> datetime:
        """The current time."""
        ...


@runtime_checkable
class IdFactory(Protocol):
    """A source of unique ids; ``kind`` names what the id is for (agent, execution, step, ...)."""

    def new_id(self, kind: str) -> str:
        """A new id."""
        ...


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        """The current UTC time."""
        return datetime.now(UTC)

    def __repr__(self) -> str:
        return "SystemClock()"


class UuidIds:
    """Random UUID4 ids."""

    def new_id(self, kind: str) -> str:
        """A random UUID4 string."""
        return format_uuid4(int.from_bytes(os.urandom(16)))

    def __repr__(self) -> str:
        return "UuidIds()"


def format_uuid4(bits: int) -> str:
    """128 random bits as a version-4 UUID string (version and variant bits set)."""
    bits = (bits & ~(0xF000 << 64) & ~(0xC000 << 48)) | (0x4000 << 64) | (0x8000 << 48)
    text = f"{bits:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


_SYSTEM_CLOCK = SystemClock()
_UUID_IDS = UuidIds()
_clock: ContextVar[Clock] = ContextVar("agentrig_clock", default=_SYSTEM_CLOCK)
_ids: ContextVar[IdFactory] = ContextVar("agentrig_ids", default=_UUID_IDS)


def current_clock() -> Clock:
    """The clock of the current runtime context."""
    return _clock.get()


def current_ids() -> IdFactory:
    """The id factory of the current runtime context."""
    return _ids.get()


def now() -> datetime:
    """The current time from the current runtime context."""
    return _clock.get().now()


def new_id(kind: str) -> str:
    """A new id from the current runtime context."""
    return _ids.get().new_id(kind)


@contextmanager
def runtime_context(*, clock: Clock | None = None, ids: IdFactory | None = None) -> Iterator[None]:
    """Make state mutators inside the block read time from ``clock`` and ids from ``ids``."""
    clock_token = _clock.set(clock) if clock is not None else None
    ids_token = _ids.set(ids) if ids is not None else None
    try:
        yield
    finally:
        if ids_token is not None:
            _ids.reset(ids_token)
        if clock_token is not None:
            _clock.reset(clock_token)
