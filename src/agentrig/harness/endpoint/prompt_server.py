"""uvicorn's server, stopping as soon as it is asked to (``EndpointServer`` runs one).

uvicorn looks at ``should_exit`` every 0.1 s and, once it is set, pauses another 0.1 s before it
closes the connections, then polls them every 0.1 s: about 0.15 s a stop, paid by every test
and tool that starts and stops a live endpoint. Here the stop wakes the server at once, and the
connections are watched every few milliseconds; the steps and the grace period are uvicorn's.
Who starts one waits on :attr:`PromptServer.ready` instead of polling ``started``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading

import uvicorn

_TICK_S = 1.0
"""How often the server wakes while it serves: uvicorn refreshes its ``Date`` header every
tenth 0.1 s tick, here every tick."""

_POLL_S = 0.005
"""How often the stop looks whether the connections have closed."""


class PromptServer(uvicorn.Server):
    """``uvicorn.Server`` whose :meth:`stop` (from any thread) ends it without uvicorn's ticks."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self.ready = threading.Event()
        """Set once the server has started (``started``), or has ended without starting."""

    def run(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's ``run``; :attr:`ready` is set when it ends, whatever happened."""
        try:
            super().run(sockets)
        finally:
            self.ready.set()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's ``startup``; :attr:`ready` is set when it returns or fails."""
        try:
            await super().startup(sockets=sockets)
        finally:
            self.ready.set()

    def stop(self) -> None:
        """Ask the server to stop; its thread ends as soon as the connections have closed (or
        after ``timeout_graceful_shutdown`` s, the replies still running cancelled)."""
        self.should_exit = True
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing to wake
                loop.call_soon_threadsafe(stopping.set)

    async def main_loop(self) -> None:
        """Serve until :meth:`stop` (or ``should_exit``, looked at every ``_TICK_S``)."""
        self._stopping = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        ticks = 0
        while not await self.on_tick(ticks):
            ticks += 10  # on_tick refreshes the Date header on multiples of 10
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), _TICK_S)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's steps: stop listening, ask each connection to close (an idle one closes,
        one answering closes after its reply), wait for them up to
        ``timeout_graceful_shutdown`` s, then cancel the replies still running."""
        for server in self.servers:
            server.close()
        for listening in sockets or ():
            listening.close()
        state = self.server_state
        for connection in list(state.connections):
            connection.shutdown()
        loop = asyncio.get_running_loop()
        grace = self.config.timeout_graceful_shutdown
        deadline = None if grace is None else loop.time() + grace
        while (state.connections or state.tasks) and not self.force_exit:
            if deadline is not None and loop.time() >= deadline:
                for task in state.tasks:
                    task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
                break
            await asyncio.sleep(_POLL_S)
        else:
            for server in self.servers:
                await server.wait_closed()
        if not self.force_exit:
            await self.lifespan.shutdown()
