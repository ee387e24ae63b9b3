"""Ctrl-C and worker processes: held back while workers start, ignored by the workers."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

__all__ = ["ignore_sigint", "sigint_held"]


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
