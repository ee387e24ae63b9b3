"""Ctrl-C and worker processes: held back while workers start, ignored by the workers; and
the signals that stop a long-running command cleanly."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

__all__ = [
    "Interrupted",
    "ignore_sigint",
    "interrupted_by_signals",
    "leave_stop_signals_to_parent",
    "sigint_held",
    "stopped_by_signals",
    "stopping_signal",
]

_STOPPING = ("SIGINT", "SIGTERM", "SIGHUP")
_KILLING = ("SIGTERM", "SIGHUP")


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread as Ctrl-C raises ``KeyboardInterrupt`` (of
    which it is a kind, so that whatever handles Ctrl-C handles it too)."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.name = signal.Signals(number).name
        super().__init__(self.name)


def stopping_signal(interrupt: KeyboardInterrupt) -> tuple[str, int]:
    """The name and number of the signal behind ``interrupt`` (SIGINT for a plain Ctrl-C)."""
    if isinstance(interrupt, Interrupted):
        return interrupt.name, interrupt.number
    return "SIGINT", int(signal.SIGINT)


def interrupted_by_signals() -> contextlib.AbstractContextManager[None]:
    """Raise :class:`Interrupted` on SIGTERM (``kill``, a CI job's timeout) or SIGHUP while
    inside, so that a command handles them as it handles Ctrl-C. The previous handlers come back
    on leaving. Outside the main thread it does nothing."""

    def on_signal(number: int, frame: FrameType | None) -> None:
        raise Interrupted(number)

    return _handled(_KILLING, on_signal)


def leave_stop_signals_to_parent() -> None:
    """In a worker: ignore SIGTERM and SIGHUP while the process that started it lives (it stops
    the pool and reports what finished; a worker killed first would pass for one that crashed).
    Orphaned, a worker ends on them as usual."""
    parent = os.getppid()

    def on_signal(number: int, frame: FrameType | None) -> None:
        if os.getppid() != parent:
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)

    for name in _KILLING:
        number = getattr(signal, name, None)
        if number is not None:
            signal.signal(number, on_signal)


@contextlib.contextmanager
def sigint_held() -> Iterator[None]:
    """Hold Ctrl-C back while workers start: they inherit the blocked signal, so a Ctrl-C never
    interrupts them mid-import with a traceback, and this process gets it when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: the workers' own handler must do
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def ignore_sigint() -> None:
    """In a worker: leave Ctrl-C to the main process, which stops the pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def stopped_by_signals(stop: threading.Event) -> contextlib.AbstractContextManager[None]:
    """Set ``stop`` on Ctrl-C (SIGINT), SIGTERM or SIGHUP while inside, so that a command that
    serves until stopped ends cleanly and writes what it owes. SIGINT is caught even when the
    process was started with it ignored (``cmd &`` in a script), and ``kill PID`` stops it as
    cleanly as Ctrl-C. The previous handlers come back on leaving. Outside the main thread
    (where handlers cannot be set) it does nothing."""

    def on_signal(number: int, frame: FrameType | None) -> None:
        stop.set()

    return _handled(_STOPPING, on_signal)


@contextlib.contextmanager
def _handled(
    names: tuple[str, ...], handler: Callable[[int, FrameType | None], None]
) -> Iterator[None]:
    """``handler`` for each of the signals ``names`` (those the platform has) while inside, the
    previous handlers back on leaving; nothing outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for name in names:
        number = getattr(signal, name, None)
        if number is not None:
            previous[number] = signal.signal(number, handler)
    try:
        yield
    finally:
        for number, replaced in previous.items():
            signal.signal(number, replaced)
