"""Record-through: the endpoint forwards every request to a real provider (or any compatible
server), relays its answer unchanged, and records the exchange in an agentrig cassette, scrubbed
of secrets, that ``agentrig convert`` turns into a scenario.

The provider's answer is read into agentrig's terms by agentrig's own provider for that API,
replaying the exact bytes the upstream sent, so the cassette holds what an agentrig run against
the same upstream would have recorded.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentrig import __version__
from agentrig.drivers.provider import InferenceProvider
from agentrig.errors import ProviderError
from agentrig.harness.cassettes import RecordingProvider
from agentrig.harness.cassettes.convert import RECORDED_THROUGH
from agentrig.harness.cassettes.model import Cassette, CassetteMetadata
from agentrig.harness.endpoint.service import JSON, EndpointReply
from agentrig.harness.endpoint.wire import FORMATS, WireError, WireFormat, format_for_path
from agentrig.harness.endpoint.wire.base import WireRequest
from agentrig.messages import Message, Messages, Role
from agentrig.state import InferenceRequest, LlmConfig

_FORWARDED = (
    "authorization",
    "x-api-key",
    "anthropic-version",
    "anthropic-beta",
    "openai-organization",
    "openai-project",
    "content-type",
    "accept",
)
# The answer is read (decoded) before it is replayed to agentrig's provider: the headers that
# describe the bytes on the wire no longer hold for it (a gzip-encoded answer, as the real APIs
# send, would be decoded a second time).
_WIRE_ENCODING = ("content-encoding", "content-length", "transfer-encoding")


class RecordThrough:
    """Forwards requests to ``upstream`` and records each exchange to the cassette at ``path``."""

    def __init__(self, upstream: str, path: str | Path, *, timeout: float = 600.0) -> None:
        import httpx2

        self.upstream = upstream.rstrip("/")
        self.path = Path(path)
        self._client = httpx2.Client(timeout=timeout)
        self._lock = threading.Lock()
        self._recorder: RecordingProvider | None = None
        self.recorded = 0

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
        fmt = format_for_path(path.split("?", 1)[0])
        if method == "POST" and fmt is not None:
            self._record(fmt, body, upstream.status_code, dict(upstream.headers), answer)
        return EndpointReply(upstream.status_code, reply_headers, answer)

    def _target(self, path: str) -> str:
        # An upstream given with its /v1 (as OpenAI base URLs are) is not given a second one.
        if self.upstream.endswith("/v1") and path.startswith("/v1/"):
            path = path[3:]
        return self.upstream + path

    def _record(
        self, fmt: WireFormat, body: bytes, status: int, headers: dict[str, str], answer: bytes
    ) -> None:
        try:
            request = fmt.parse_request(body)
        except WireError:
            return  # the upstream answered it; there is no model call to record
        decoded = {k: v for k, v in headers.items() if k.lower() not in _WIRE_ENCODING}
        provider = _replaying_provider(fmt, request, status, decoded, answer)
        with self._lock:
            if self._recorder is None:
                metadata = CassetteMetadata(agentrig=__version__, recorded_with=RECORDED_THROUGH)
                self._recorder = RecordingProvider(
                    provider, path=self.path, cassette=Cassette(metadata=metadata)
                )
            self._recorder.inner = provider
            with contextlib.suppress(ProviderError):  # recorded as the interaction's error
                self._recorder.infer(_inference_request(request))
            self.recorded += 1


def _inference_request(request: WireRequest) -> InferenceRequest:
    messages = list(request.messages)
    if request.system:
        messages.insert(0, Message(role=Role.SYSTEM, content=request.system))
    return InferenceRequest(
        messages=Messages(messages),
        tools=request.tools,
        llm_config=LlmConfig(model=request.model, provider=request.format),
    )


def _replaying_provider(
    fmt: WireFormat, request: WireRequest, status: int, headers: dict[str, str], answer: bytes
) -> InferenceProvider:
    """agentrig's provider for ``fmt``, whose HTTP client answers with the upstream's bytes."""
    import httpx2

    def canned(_: Any) -> Any:
        return httpx2.Response(status, headers=headers, content=answer)

    client = httpx2.Client(transport=httpx2.MockTransport(canned))
    options: dict[str, Any] = {"model": request.model, "stream": request.stream}
    if fmt is FORMATS["anthropic"]:
        import anthropic

        from agentrig.drivers import AnthropicProvider

        messages_sdk = anthropic.Anthropic(
            api_key="recorded",
            base_url="http://upstream.invalid",
            http_client=client,
            max_retries=0,
        )
        return AnthropicProvider(client=messages_sdk, **options)
    import openai

    sdk = openai.OpenAI(
        api_key="recorded", base_url="http://upstream.invalid/v1", http_client=client, max_retries=0
    )
    if fmt is FORMATS["responses"]:
        from agentrig import drivers

        responses_provider = getattr(drivers, "OpenAIResponsesProvider", None)
        if responses_provider is None:
            raise NotImplementedError("recording the Responses API needs OpenAIResponsesProvider")
        provider: InferenceProvider = responses_provider(client=sdk, **options)
        return provider
    from agentrig.drivers import OpenAIProvider

    return OpenAIProvider(client=sdk, **options)
