"""A live endpoint on loopback: uvicorn serving the endpoint's ASGI app from a background thread.

Needs the ``serve`` extra: ``pip install './agentrig[serve]'`` from a checkout.
"""

from __future__ import annotations

import os
import socket
import threading
from types import TracebackType

from agentrig.errors import AgentrigError
from agentrig.harness.endpoint.extras import require_extra
from agentrig.harness.endpoint.service import ProviderBaseUrls, RequestHandler


class EndpointServerError(AgentrigError):
    """The live endpoint could not start (the port is taken, the address is not local...)."""


class EndpointServer(ProviderBaseUrls):
    """Runs ``endpoint`` on ``host:port`` (``port=0``: a free port) until ``stop()``.

    Use as a context manager; ``openai_base_url`` and ``anthropic_base_url`` are what to give the
    SDKs once it has started.
    """

    def __init__(self, endpoint: RequestHandler, *, host: str = "127.0.0.1", port: int = 0) -> None:
        require_extra("serve")
        import uvicorn

        from agentrig.harness.endpoint.asgi import endpoint_app
        from agentrig.harness.endpoint.prompt_server import PromptServer

        self.endpoint = endpoint
        config = uvicorn.Config(
            endpoint_app(endpoint),
            host=host,
            port=port,
            log_level="warning",
            lifespan="off",
            # a reply still waiting (a timeout fault) does not hold the server up as it stops
            timeout_graceful_shutdown=1,
        )
        self._server = PromptServer(config)
        self._thread: threading.Thread | None = None
        self.host = host
        self.port = port

    def start(self, timeout: float = 10.0) -> EndpointServer:
        """Start serving; raise ``EndpointServerError``, with the reason, if the address cannot
        be listened on or the server is not up within ``timeout`` s."""
        listening = listening_socket(self.host, self.port)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [listening]}, name="agentrig-endpoint"
        )
        self._thread.start()
        # woken as soon as the server is up (a 10 ms poll waited 5 ms a start on average)
        if not self._server.ready.wait(timeout) or not self._server.started:
            self.stop()
            listening.close()
            raise EndpointServerError(
                f"the endpoint could not start on {self.host}:{self.port} within {timeout} s"
            )
        self.port = listening.getsockname()[1]
        return self

    def stop(self) -> None:
        """Stop serving and wait for the server thread."""
        self._server.stop()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=10)

    @property
    def base_url(self) -> str:
        """``http://host:port``: the Anthropic SDK's base URL."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def __enter__(self) -> EndpointServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port`` (port 0: any free one), as ``EndpointServer``
    serves on; ``EndpointServerError`` says why not (the port is taken, the address is not this
    machine's, the name does not resolve).

    It is made from the address's own protocol (TCP), as asyncio makes its servers' sockets:
    asyncio turns Nagle's algorithm off only on connections of a socket whose protocol says TCP,
    and with it on, each answer waited for the client's delayed acknowledgement (about 40 ms a
    model call over loopback instead of about 1.5)."""
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )[0]
        listening = socket.socket(family, kind, protocol)
    except OSError as error:  # socket.gaierror is one too
        raise _cannot_start(host, port, error) from None
    try:
        if os.name != "nt":  # a port just freed (TIME_WAIT) may be taken again, as uvicorn does
            listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(address)
        listening.listen(_BACKLOG)
    except OSError as error:
        listening.close()
        raise _cannot_start(host, port, error) from None
    return listening


_BACKLOG = 2048  # uvicorn's default


def _cannot_start(host: str, port: int, error: OSError) -> EndpointServerError:
    reason = error.strerror or str(error)
    return EndpointServerError(f"the endpoint could not start on {host}:{port}: {reason}")
