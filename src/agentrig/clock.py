"""Injected time and identity: the ``Clock`` and ``IdFactory`` seams (DESIGN D10).

State objects are immutable values, yet their mutators stamp times and create ids (seed 002). They
read both from the *current runtime context*, which the loop sets around every step from the
clock and id factory it was built with. Outside a loop the system defaults apply, unless code runs
inside ``runtime_context(clock=..., ids=...)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """A source of timezone-aware UTC datetimes.

    A clock may also have a ``start`` datetime, the earliest time it reads (``FakeClock`` has):
    ``AgentLoop.check_clock`` then takes an earlier time in a state for another clock's."""

    def now(self) -> datetime:
        """The current time."""
        ...


@runtime_checkable
class IdFactory(Protocol):
    """A source of unique ids; ``kind`` names what the id is for (agent, execution, step, ...).

    A factory may also have ``issued(id) -> bool``, saying whether it handed ``id`` out
    (``SeededIds`` has): ``AgentLoop.check_clock`` then takes a UUID it did not hand out for an
    id made elsewhere. And ``fork()``, an independent factory handing out the same ids next
    (``SeededIds`` has): ``AgentLoop.next_request`` runs the hooks on one."""

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
    """Random UUID4 ids (from ``os.urandom``, read in batches: one system call per 256 ids)."""

    def new_id(self, kind: str) -> str:
        """A random UUID4 string."""
        try:
            return next(_pool)
        except StopIteration:
            return _refill()

    def __repr__(self) -> str:
        return "UuidIds()"


_VERSION_CLEAR = ~(0xF000 << 64) & ~(0xC000 << 48)
_VERSION_SET = (0x4000 << 64) | (0x8000 << 48)


def format_uuid4(bits: int) -> str:
    """128 random bits as a version-4 UUID string (version and variant bits set)."""
    text = f"{(bits & _VERSION_CLEAR) | _VERSION_SET:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


_BATCH = 256
_pool: Iterator[str] = iter(())
_RECORD = 37
"""Bytes per id in a batch: 36 characters (8-4-4-4-12 hex digits and dashes) and a space."""
_COLUMNS = tuple(
    digit + (digit >= 8) + (digit >= 12) + (digit >= 16) + (digit >= 20) for digit in range(32)
)
"""Where each of an id's 32 hex digits goes in its record, past the dashes before it."""
_VARIANT_DIGIT = bytes.maketrans(b"0123456789abcdef", b"89ab89ab89ab89ab")
"""The variant digit (bits 10xx) for each random hex digit."""


def _uuid4_batch(count: int) -> list[str]:
    """``count`` random UUID4 strings from one ``os.urandom`` call, formatted in C.

    The batch is one buffer of ``count`` records. Each of the 32 digit columns is copied into
    place with one strided slice assignment; so are the dashes, the version digit (4) and the
    variant digit (8, 9, a or b, by ``translate``). No Python code runs per id.
    """
    digits = os.urandom(16 * count).hex().encode()
    out = bytearray(b" " * (_RECORD * count))
    for digit, column in enumerate(_COLUMNS):
        out[column::_RECORD] = digits[digit::32]
    for dash in (8, 13, 18, 23):
        out[dash::_RECORD] = b"-" * count
    out[14::_RECORD] = b"4" * count
    out[19::_RECORD] = out[19::_RECORD].translate(_VARIANT_DIGIT)
    return out.decode().split()


def _refill() -> str:
    # ``next`` on a list iterator is atomic, so threads never share an id; a thread that loses a
    # refill race only discards unused random ids.
    global _pool
    batch = iter(_uuid4_batch(_BATCH))
    first = next(batch)
    _pool = batch
    return first


def _forget_pool() -> None:
    # A forked child must not replay the ids its parent has yet to hand out.
    global _pool
    _pool = iter(())


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


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
    current = _clock.get()
    if type(current) is SystemClock:  # inlined: state mutators call this several times a step
        return _datetime_now(UTC)
    return current.now()


def new_id(kind: str) -> str:
    """A new id from the current runtime context."""
    ids = _ids.get()
    if type(ids) is UuidIds:  # inlined, as in ``now``
        try:
            return next(_pool)
        except StopIteration:
            return _refill()
    return ids.new_id(kind)


_datetime_now = datetime.now


def runtime_context(
    *, clock: Clock | None = None, ids: IdFactory | None = None
) -> AbstractContextManager[None]:
    """Make state mutators inside the block read time from ``clock`` and ids from ``ids``."""
    return _RuntimeScope(clock, ids)


class _RuntimeScope:
    """The context manager behind ``runtime_context`` (a class: the loop enters one per step, and
    this is cheaper than a generator-based context manager).

    It can be entered again after each exit (the loop reuses one per run), but not while it is
    entered."""

    __slots__ = ("_clock", "_clock_token", "_ids", "_ids_token")

    def __init__(self, clock: Clock | None, ids: IdFactory | None) -> None:
        self._clock = clock
        self._ids = ids
        self._clock_token: Token[Clock] | None = None
        self._ids_token: Token[IdFactory] | None = None

    def __enter__(self) -> None:
        # The system clock and UUID ids hold no state of their own: when the context already
        # reads from one, setting another changes nothing but costs a context copy per step.
        clock, ids = self._clock, self._ids
        if clock is not None and not (
            type(clock) is SystemClock and type(_clock.get()) is SystemClock
        ):
            self._clock_token = _clock.set(clock)
        if ids is not None and not (type(ids) is UuidIds and type(_ids.get()) is UuidIds):
            self._ids_token = _ids.set(ids)

    def __exit__(self, *exc_info: object) -> None:
        if self._ids_token is not None:
            _ids.reset(self._ids_token)
            self._ids_token = None
        if self._clock_token is not None:
            _clock.reset(self._clock_token)
            self._clock_token = None
