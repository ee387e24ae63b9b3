"""The endpoint as an ASGI application (starlette), for uvicorn or any ASGI server.

Needs the ``serve`` extra: ``pip install './agentrig[serve]'`` from a checkout.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import anyio
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from agentrig.harness.endpoint.service import (
    HANG_LIMIT,
    EndpointReply,
    RequestHandler,
    play_wait,
)


class ConnectionCut(Exception):
    """Raised inside a response body to drop the connection, as a scripted fault asks."""


class _QuietCuts(logging.Filter):
    """Keeps the server's log free of the tracebacks of connections a scenario cut on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _is_cut(record.exc_info[1] if record.exc_info else None)


def _is_cut(error: BaseException | None) -> bool:
    """Whether ``error`` is a :class:`ConnectionCut`, or has one among its causes, contexts and
    the errors of its groups. Each error is looked at once: a chain can loop (starlette raises
    an error from its own context), and the log filter must end whatever it is given."""
    pending, seen = [error], set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ConnectionCut):
            return True
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        else:
            pending.append(current.__cause__ or current.__context__)
    return False


logging.getLogger("uvicorn.error").addFilter(_QuietCuts())


def endpoint_app(endpoint: RequestHandler) -> Starlette:
    """An ASGI app that answers every request with ``endpoint``."""

    async def answer(request: Request) -> Response:
        try:
            body = await request.body()
        except ClientDisconnect:  # the client gave up (a cancelled call): no one to answer
            return Response(status_code=499)
        path = request.url.path
        if request.url.query:  # Gemini names streaming (alt=sse), and may send its key, there
            path = f"{path}?{request.url.query}"
        reply = endpoint.handle(request.method, path, request.headers, body)
        if reply.delay or reply.hang:
            # A server does not know the client's timeout: it waits, and watches for the
            # client giving up (a disconnect), which a reply that never went out tells.
            wait, _ = play_wait(reply, None)
            if await _gives_up(request, HANG_LIMIT if wait is None else wait):
                if reply.delivery is not None:
                    reply.delivery.abandoned()
                return Response(status_code=499)  # no one is left to read it
        if reply.delivery is not None and not reply.paced:  # a paced stream tells as it goes
            reply.delivery.delivered()
        if reply.chunks is None and not reply.drop:
            return Response(reply.body, status_code=reply.status, headers=reply.headers)
        events = _events(reply, request)
        return StreamingResponse(events, status_code=reply.status, headers=reply.headers)

    routes = [Route("/{path:path}", answer, methods=["GET", "POST", "PUT", "DELETE", "PATCH"])]
    app = Starlette(routes=routes)
    app.state.endpoint = endpoint
    return app


async def _gives_up(request: Request, seconds: float) -> bool:
    """Whether the client disconnects within ``seconds`` (its body is read already: the next
    message the server hands the app is the disconnect)."""
    with anyio.move_on_after(seconds):
        while (await request.receive())["type"] != "http.disconnect":
            pass
        return True
    return False


async def _events(reply: EndpointReply, request: Request) -> AsyncIterator[bytes]:
    """The chunks of a streamed reply, ``interval`` seconds apart, then the scripted cut, if
    any. A paced stream tells its delivery when it begins and when its last chunk goes, and
    that it was abandoned when the client disconnects before (seen while it waits, or as the
    server cancelling the stream)."""
    chunks = reply.chunks or ()
    delivery = reply.delivery if reply.paced else None
    try:
        for index, chunk in enumerate(chunks):
            if index and reply.interval and await _gives_up(request, reply.interval):
                if delivery is not None:
                    delivery.abandoned()
                return
            if delivery is not None:
                delivery.sending(index, len(chunks))
            yield chunk
    except BaseException:  # cancelled: the client disconnected mid-stream
        if delivery is not None:
            delivery.abandoned()
        raise
    if reply.drop:
        raise ConnectionCut("a scripted fault cut this connection")
