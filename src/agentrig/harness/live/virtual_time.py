"""Waiting through an injected clock: the ``Sleeper`` seam, the event loop's clock, and an event
loop whose time is virtual, for running live-trial traffic in tests without real waits.

Everything the live-trial traffic control waits for (a free slot aside) goes through a
``Sleeper``. ``LoopSleeper``, the default, reads the running event loop's clock and sleeps with
``asyncio.sleep``: on an ordinary loop that is ``time.monotonic`` and real seconds; on a
``VirtualTimeLoop`` it is virtual time, which jumps to the next timer as soon as every task is
waiting. So the same code runs against real providers and, deterministically and at once, in
tests::

    result = run_in_virtual_time(main())   # main() may sleep for hours: it returns at once

Why not ``agentrig.fakes.FakeClock.sleep``: it moves time after one pass of the event loop in
which no new sleep began, not when every task is blocked, so a task woken by another (a slot
handed over on release) can start its sleep after time has already jumped. Why not the
``looptime`` package: its pytest plugin, once installed, breaks the setup of every fixture in a
suite that does not use pytest-asyncio (looptime 0.9), as this one does not.
"""

from __future__ import annotations

import asyncio
import functools
import selectors
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Executor
from typing import Any, Protocol, TypeVar, TypeVarTuple, runtime_checkable

from agentrig.errors import AgentrigError, InvalidInputError

__all__ = [
    "DEFAULT_GRACE",
    "LoopSleeper",
    "Sleeper",
    "VirtualTimeDeadlock",
    "VirtualTimeLoop",
    "run_in_virtual_time",
]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


@runtime_checkable
class Sleeper(Protocol):
    """A monotonic clock in seconds and a way to wait on it."""

    def now(self) -> float:
        """The current time, in seconds on a monotonic scale (only differences mean anything)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (>= 0) on this clock."""
        ...


class LoopSleeper:
    """The running event loop's clock (``time.monotonic`` on an ordinary loop, virtual time on a
    ``VirtualTimeLoop``) and ``asyncio.sleep``."""

    def now(self) -> float:
        """The running loop's time."""
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep(seconds)``."""
        await asyncio.sleep(seconds)

    def __repr__(self) -> str:
        return "LoopSleeper()"


class VirtualTimeDeadlock(AgentrigError, RuntimeError):
    """Every task of a ``VirtualTimeLoop`` waits, no timer is set and no worker thread runs:
    nothing can ever wake them (in real time the program would hang)."""

    def __init__(self, now: float) -> None:
        self.now = now
        super().__init__(
            f"deadlock at virtual time {now:g}s: every task is waiting, and no timer, I/O or "
            "worker thread can wake any of them"
        )


DEFAULT_GRACE = 1.0
"""Real seconds a ``VirtualTimeLoop`` waits for I/O or another thread when nothing is scheduled
and no worker thread runs, before it calls that a deadlock."""


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock starts at 0 and moves only when every task waits: it then jumps
    straight to the earliest timer (a sleep's end, a timeout), so sleeps end in the order of
    their wake-up times, in no real time.

    Ready callbacks and I/O always run before time moves. Work in worker threads
    (``asyncio.to_thread``, ``run_in_executor``) takes no virtual time, and timers may fire
    while it runs: virtual time is deterministic for code that waits only on the loop. When
    every task waits and nothing is scheduled, the loop raises ``VirtualTimeDeadlock`` rather
    than hang, after waiting ``grace`` real seconds for a thread of some other origin to wake
    it.
    """

    def __init__(self, *, grace: float = DEFAULT_GRACE) -> None:
        self._virtual_now = 0.0
        self._workers = 0
        super().__init__(selector=_VirtualSelector(self, selectors.DefaultSelector()))
        if isinstance(grace, bool) or not isinstance(grace, int | float) or not 0 <= grace < 1e6:
            self.close()
            reason = f"expected real seconds >= 0 and < 1e6, got {grace!r}"
            raise InvalidInputError("VirtualTimeLoop", [("grace", reason)])
        self._grace = float(grace)

    def time(self) -> float:
        """The virtual time, in seconds since the loop was made."""
        return self._virtual_now

    def run_in_executor(
        self, executor: Executor | None, func: Callable[[*Ts], T], *args: *Ts
    ) -> asyncio.Future[T]:
        """``run_in_executor``, counting the work so the loop waits for it rather than call the
        wait a deadlock."""
        future = super().run_in_executor(executor, func, *args)
        self._workers += 1
        future.add_done_callback(self._worker_done)
        return future

    async def shutdown_default_executor(self, *args: Any) -> None:
        """``shutdown_default_executor``, counted as worker-thread work (it waits on a thread)."""
        self._workers += 1
        try:
            await super().shutdown_default_executor(*args)
        finally:
            self._workers -= 1

    def _worker_done(self, _future: asyncio.Future[Any]) -> None:
        self._workers -= 1

    def _advance(self, seconds: float) -> None:
        self._virtual_now += seconds


class _VirtualSelector(selectors.BaseSelector):
    """The loop's selector, polled without blocking: when nothing is ready and the loop asks to
    wait ``timeout`` seconds for the next timer, virtual time moves by ``timeout`` instead."""

    def __init__(self, loop: VirtualTimeLoop, inner: selectors.BaseSelector) -> None:
        self._loop = loop
        self._inner = inner

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._inner.select(0)
        if ready or timeout == 0:
            return ready
        if timeout is not None:  # nothing to run before the next timer: jump to it
            self._loop._advance(timeout)
            return ready
        if self._loop._workers:  # a worker thread will wake the loop
            return self._inner.select(None)
        ready = self._inner.select(self._loop._grace)
        if not ready:
            raise VirtualTimeDeadlock(self._loop.time())
        return ready

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._inner.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.modify(fileobj, events, data)

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._inner.get_map()

    def close(self) -> None:
        self._inner.close()


def run_in_virtual_time(main: Coroutine[Any, Any, T], *, grace: float = DEFAULT_GRACE) -> T:
    """``asyncio.run(main)`` on a fresh ``VirtualTimeLoop`` (``grace``: see there)."""
    with asyncio.Runner(loop_factory=functools.partial(VirtualTimeLoop, grace=grace)) as runner:
        return runner.run(main)
