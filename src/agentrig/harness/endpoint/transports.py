"""In-process transports: give one to an httpx or httpx2 client (the official SDKs take one
through ``http_client=``) and its requests reach the endpoint without a socket.

httpx2 (which the ``openai`` 3.x and ``anthropic`` 2.x SDKs use) and httpx are separate
packages with the same transport interface; each gets its own transport class, made from one
template. A cut stream or dropped connection raises the library's ``RemoteProtocolError``, as a
real broken connection does.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

from agentrig.harness.endpoint.service import EndpointReply, ScenarioEndpoint, play_wait

DROPPED = "agentrig endpoint: the scenario cut this connection (a scripted fault)"
TIMED_OUT = "agentrig endpoint: no answer within the client's read timeout ({timeout})"


def client_gives_up(reply: EndpointReply, request: Any) -> tuple[float, str | None]:
    """For an httpx or httpx2 ``request``: the seconds to wait before ``reply`` (never past the
    client's read timeout), and the message of the client's timeout error when the client gives
    up first (None when it gets the reply; then the reply's delivery is told it was abandoned). A client without a read
    timeout meets a ``timeout`` fault at once: in process, it would wait for ever."""
    timeout = request.extensions.get("timeout")
    read = timeout.get("read") if isinstance(timeout, dict) else None
    wait, gives_up = play_wait(reply, read)
    if not gives_up:
        return wait or 0.0, None
    if reply.delivery is not None:
        reply.delivery.abandoned()
    if wait is None:
        return 0.0, TIMED_OUT.format(timeout="none: it would wait for ever")
    return wait, TIMED_OUT.format(timeout=f"{wait:g} s")


def _paced(reply: EndpointReply, request: Any) -> Iterator[tuple[float, bytes | None]]:
    """The chunks of a streamed ``reply``, each with the seconds to wait before it; the last
    is ``None`` (after the client's read timeout) when the client gives up mid-stream. A paced
    stream tells its delivery when it begins, when its last chunk goes, and when the client
    gave up."""
    chunks = reply.chunks or ()
    delivery = reply.delivery if reply.paced else None
    timeout = request.extensions.get("timeout")
    read = timeout.get("read") if isinstance(timeout, dict) else None
    for index, chunk in enumerate(chunks):
        wait = reply.interval if index else 0.0
        if wait and read is not None and wait > read:
            if delivery is not None:
                delivery.abandoned()
            yield read, None
            return
        if delivery is not None:
            delivery.sending(index, len(chunks))
        yield wait, chunk


@functools.cache
def _transport_class(http: ModuleType) -> type[Any]:
    """A transport class for ``http`` (the httpx or the httpx2 module)."""

    class _Stream(http.SyncByteStream, http.AsyncByteStream):  # type: ignore[name-defined,misc]
        """The events of a streamed answer (``interval`` seconds apart, never past the client's
        read timeout), then the scripted cut, if any."""

        def __init__(self, reply: EndpointReply, request: Any) -> None:
            self._reply = reply
            self._request = request

        def __iter__(self) -> Iterator[bytes]:
            for wait, piece in _paced(self._reply, self._request):
                if wait:
                    time.sleep(wait)
                yield self._after(wait, piece)
            if self._reply.drop:
                raise http.RemoteProtocolError(DROPPED, request=self._request)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for wait, piece in _paced(self._reply, self._request):
                if wait:
                    await asyncio.sleep(wait)
                yield self._after(wait, piece)
            if self._reply.drop:
                raise http.RemoteProtocolError(DROPPED, request=self._request)

        def _after(self, wait: float, piece: bytes | None) -> bytes:
            """``piece`` once its wait is over; the client's timeout error when it gave up."""
            if piece is None:
                raise http.ReadTimeout(
                    TIMED_OUT.format(timeout=f"{wait:g} s"), request=self._request
                )
            return piece

    class EndpointTransport(http.BaseTransport, http.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        """Answers every request with the scenario endpoint, in this process."""

        def __init__(self, endpoint: ScenarioEndpoint) -> None:
            self.endpoint = endpoint

        def _reply(self, request: Any, body: bytes) -> EndpointReply:
            path = request.url.raw_path.decode("ascii")
            # The library's own ``Headers``: the endpoint looks up the few it reads, without
            # regard to case, rather than decoding every header into a dict first.
            return self.endpoint.handle(request.method, path, request.headers, body)

        def _response(self, request: Any, reply: EndpointReply) -> Any:
            if reply.delivery is not None and not reply.paced:  # a paced stream tells as it goes
                reply.delivery.delivered()
            if reply.drop and reply.chunks is None:
                raise http.RemoteProtocolError(DROPPED, request=request)
            if reply.chunks is None:  # a whole body: the response is read already
                return http.Response(
                    reply.status, headers=reply.headers, content=reply.body, request=request
                )
            stream = _Stream(reply, request)
            return http.Response(
                reply.status, headers=reply.headers, stream=stream, request=request
            )

        def handle_request(self, request: Any) -> Any:
            reply = self._reply(request, request.read())
            if reply.delay or reply.hang:  # never past the client's own read timeout
                wait, timed_out = client_gives_up(reply, request)
                time.sleep(wait)
                if timed_out is not None:
                    raise http.ReadTimeout(timed_out, request=request)
            return self._response(request, reply)

        async def handle_async_request(self, request: Any) -> Any:
            reply = self._reply(request, await request.aread())
            if reply.delay or reply.hang:
                wait, timed_out = client_gives_up(reply, request)
                await asyncio.sleep(wait)
                if timed_out is not None:
                    raise http.ReadTimeout(timed_out, request=request)
            return self._response(request, reply)

    EndpointTransport.__qualname__ = EndpointTransport.__name__ = (
        f"EndpointTransport[{http.__name__}]"
    )
    return EndpointTransport


def httpx_transport(endpoint: ScenarioEndpoint) -> Any:
    """A transport for ``httpx.Client`` / ``httpx.AsyncClient`` that answers with ``endpoint``."""
    import httpx

    return _transport_class(httpx)(endpoint)


def httpx2_transport(endpoint: ScenarioEndpoint) -> Any:
    """A transport for ``httpx2.Client`` / ``httpx2.AsyncClient`` (the clients of the ``openai``
    and ``anthropic`` SDKs) that answers with ``endpoint``."""
    import httpx2

    return _transport_class(httpx2)(endpoint)
