"""In process, a fuzzed agent's waits take no wall time: while it runs, ``time.sleep``,
``asyncio.sleep`` and anyio's sleep return at once (yielding as a sleep of 0 does).

What the agent waits for in process is the SDK's retry back-off (half a second and more after a
dropped connection or a timeout, which carry no ``Retry-After``), a ``Retry-After`` itself, and
the endpoint's own wait for the client's read timeout before a ``timeout`` fault raises the
client's timeout error. None of them changes what the agent sees, only how long it takes: an
example that took seconds takes milliseconds. A timer (``asyncio.wait_for``, a client's
timeout) is no sleep and still fires at its time, so nothing fires early. Over a live server
(a command, ``live=True``) time passes as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Iterator
from typing import Any

from agentrig.harness.endpoint.handle import EndpointHandle

__all__ = ["agent_waits", "skipped_waits"]

_sleep = time.sleep
_async_sleep = asyncio.sleep
_skipping = 0
"""How many ``skipped_waits`` are open. The replacements read it on every call, so a module
that bound one of them by name while it was in place (``from asyncio import sleep``, imported
during a run) sleeps for real again once the run is over."""


def _maybe_sleep(seconds: float) -> None:
    _sleep(0 if _skipping else seconds)


async def _maybe_async_sleep(delay: float, result: Any = None) -> Any:
    return await _async_sleep(0 if _skipping else delay, result)


def _places() -> list[tuple[object, str, object]]:
    """Where the sleeps are looked up: ``time``, ``asyncio``, and anyio's asyncio backend
    (which binds ``asyncio.sleep`` by name) when it is loaded."""
    places: list[tuple[object, str, object]] = [
        (time, "sleep", _maybe_sleep),
        (asyncio, "sleep", _maybe_async_sleep),
        (asyncio.tasks, "sleep", _maybe_async_sleep),
    ]
    backend = sys.modules.get("anyio._backends._asyncio")
    if backend is not None:
        places.append((backend, "sleep", _maybe_async_sleep))
    return places


@contextlib.contextmanager
def skipped_waits() -> Iterator[None]:
    """Make every sleep of this process return at once until the block ends."""
    global _skipping
    places = _places()
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in places]
    for owner, name, replacement in places:
        setattr(owner, name, replacement)
    _skipping += 1
    try:
        yield
    finally:
        _skipping -= 1
        if not _skipping:
            for owner, name, original in saved:
                setattr(owner, name, original)


def agent_waits(ep: EndpointHandle) -> contextlib.AbstractContextManager[None]:
    """Skipped waits for an agent on ``ep`` in process; real ones over a live server."""
    return contextlib.nullcontext() if ep.live else skipped_waits()
