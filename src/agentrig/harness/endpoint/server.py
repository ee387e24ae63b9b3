"""A live endpoint on loopback: uvicorn serving the endpoint's ASGI app from a background thread.

Needs the ``serve`` extra: ``pip install 'agentrig[serve]'``.
"""

from __future__ import annotations

import threading
import time
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

        self.endpoint = endpoint
        config = uvicorn.Config(
            endpoint_app(endpoint), host=host, port=port, log_level="warning", lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="agentrig-endpoint")
        self.host = host
        self.port = port

    def start(self, timeout: float = 10.0) -> EndpointServer:
        """Start serving; raise ``EndpointServerError`` if it is not up within ``timeout`` s."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise EndpointServerError(
                    f"the endpoint could not start on {self.host}:{self.port} (is the port free?)"
                )
            time.sleep(0.01)
        sockets = self._server.servers[0].sockets
        self.port = sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        """Stop serving and wait for the server thread."""
        self._server.should_exit = True
        if self._thread.is_alive():
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
