"""Capture the providers' default hosts with respx, so agents that build their own SDK clients
(with ``api.openai.com`` hard-coded) reach the endpoint unchanged.

The ``openai`` and ``anthropic`` SDKs send through httpx2, which respx reaches only through
pytest-httpx2's ``httpcore2`` mocker; clients on plain httpx (``google-genai``'s default) go
through respx's ``httpcore`` mocker. Both are installed for the duration.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from agentrig.harness.endpoint.extras import require_extra
from agentrig.harness.endpoint.service import ScenarioEndpoint
from agentrig.harness.endpoint.transports import client_gives_up


@contextlib.contextmanager
def intercepted(endpoint: ScenarioEndpoint, api_key: str, hosts: Sequence[str]) -> Iterator[None]:
    """Answer every request to ``hosts`` with ``endpoint`` as the session ``api_key``."""
    require_extra("intercept")
    import httpx
    import pytest_httpx2._plugin  # noqa: F401  (registers respx's httpcore2 mocker)
    import respx

    def answer(request: httpx.Request) -> httpx.Response:
        headers = dict(request.headers)
        # The agent's own key (often a placeholder) is replaced by the session's.
        headers.pop("x-api-key", None)
        headers.pop("x-goog-api-key", None)
        headers["authorization"] = f"Bearer {api_key}"
        reply = endpoint.handle(
            request.method, request.url.raw_path.decode(), headers, request.content
        )
        if reply.delay or reply.hang:  # latency is not waited here; a timeout is met at once
            _, timed_out = client_gives_up(reply, request)
            if timed_out is not None:
                raise httpx.ReadTimeout(timed_out, request=request)
        if reply.delivery is not None:
            reply.delivery.delivered()
        if reply.drop:
            raise httpx.RemoteProtocolError(
                "agentrig endpoint: a scripted fault cut this connection", request=request
            )
        body = b"".join(reply.chunks) if reply.chunks is not None else reply.body
        return httpx.Response(reply.status, headers=reply.headers, content=body)

    with contextlib.ExitStack() as stack:
        for using in ("httpcore2", "httpcore"):
            router: Any = stack.enter_context(
                respx.mock(using=using, assert_all_called=False, assert_all_mocked=False)
            )
            for host in hosts:
                router.route(host=host).mock(side_effect=answer)
            router.route().pass_through()
        yield
