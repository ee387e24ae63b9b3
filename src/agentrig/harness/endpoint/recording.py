"""Record-through: the endpoint forwards every request to a real provider (or any compatible
server), relays its answer unchanged, and records the exchange in an agentrig cassette, scrubbed
of secrets, that ``agentrig convert`` turns into a scenario.

Each conversation gets a cassette of its own (:class:`~agentrig.harness.endpoint.conversations.
Conversations`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agentrig.harness.endpoint.conversations import Conversations
from agentrig.harness.endpoint.service import JSON, EndpointReply

_FORWARDED = (
    "authorization",
    "x-api-key",
    "anthropic-version",
    "anthropic-beta",
    "x-goog-api-key",
    "openai-organization",
    "openai-project",
    "content-type",
    "accept",
)


class RecordThrough:
    """Forwards requests to ``upstream`` and records each exchange, one cassette per
    conversation: the first at ``path``, the next ones beside it (``paths``)."""

    def __init__(self, upstream: str, path: str | Path, *, timeout: float = 600.0) -> None:
        import httpx2

        from agentrig.drivers.network import shared_ssl_context

        self.upstream = upstream.rstrip("/")
        self.path = Path(path)
        self._client = httpx2.Client(timeout=timeout, verify=shared_ssl_context())
        self.conversations = Conversations(self.path)

    @property
    def paths(self) -> list[Path]:
        """The cassettes written so far, one per conversation, in the order they began."""
        return self.conversations.paths

    @property
    def recorded(self) -> int:
        """The model calls recorded so far."""
        return self.conversations.recorded

    def close(self) -> None:
        """Close the connections to the upstream."""
        self._client.close()

    def __enter__(self) -> RecordThrough:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def handle(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> EndpointReply:
        """Forward one request and relay the answer; record it when it is a model call."""
        forwarded = {
            name.lower(): value for name, value in headers.items() if name.lower() in _FORWARDED
        }
        upstream = self._client.request(method, self._target(path), headers=forwarded, content=body)
        answer = upstream.read()
        reply_headers = {"content-type": upstream.headers.get("content-type", JSON)}
        for name in ("retry-after", "request-id", "x-request-id"):
            if name in upstream.headers:
                reply_headers[name] = upstream.headers[name]
        if method == "POST":
            self.conversations.record(
                path, body, upstream.status_code, dict(upstream.headers), answer
            )
        return EndpointReply(upstream.status_code, reply_headers, answer)

    def _target(self, path: str) -> str:
        # An upstream given with its /v1 (as OpenAI base URLs are) is not given a second one.
        if self.upstream.endswith("/v1") and path.startswith("/v1/"):
            path = path[3:]
        return self.upstream + path
