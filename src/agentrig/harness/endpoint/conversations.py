"""Model calls seen on the wire, sorted into conversations and recorded as agentrig cassettes.

A scenario replays one conversation, so each conversation gets a cassette of its own: the
first is written to the path given, the next ones beside it (``session.cassette.yaml``, then
``session-2.cassette.yaml``, ...). A request continues the conversation whose last request it
repeats from the start (a Responses request with ``previous_response_id``, the one that got that
answer); any other request starts a new one, as another run of the agent, a second agent, or a
subagent sharing the provider does.

The provider's answer is read into agentrig's terms by agentrig's own provider for that API,
replaying the exact bytes the upstream sent, so the cassette holds what an agentrig run against
the same upstream would have recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrig import __version__
from agentrig.drivers.pricing import PriceTable
from agentrig.drivers.provider import InferenceProvider
from agentrig.errors import ProviderError
from agentrig.harness.cassettes import RecordingProvider
from agentrig.harness.cassettes.convert import RECORDED_THROUGH
from agentrig.harness.cassettes.model import Cassette, CassetteMetadata
from agentrig.harness.endpoint.history import repeated_prefix
from agentrig.harness.endpoint.wire import FORMATS, WireError, WireFormat, format_for_path
from agentrig.harness.endpoint.wire.base import WireRequest
from agentrig.harness.endpoint.wire.gemini_answers import GeminiAnswer
from agentrig.messages import Message, Messages, Role
from agentrig.state import InferenceRequest, InferenceResponse, LlmConfig

__all__ = ["Conversations"]

# The answer is read (decoded) before it is replayed to agentrig's provider: the headers that
# describe the bytes on the wire no longer hold for it (a gzip-encoded answer, as the real APIs
# send, would be decoded a second time).
_WIRE_ENCODING = ("content-encoding", "content-length", "transfer-encoding")


@dataclass
class _Conversation:
    """One conversation being recorded: its cassette, and what its next request must repeat."""

    recorder: RecordingProvider
    sent: tuple[Message, ...] = ()
    """The messages of its last request (the system prompt first, when there is one)."""
    answered: str = ""
    """The response id of its last answer."""


class Conversations:
    """Model calls seen on the wire, sorted into conversations, each recorded as a cassette
    (written to ``path``, then beside it, when a path is given; else kept in memory). Each
    answer is read by agentrig's own provider for its API, priced by ``prices``."""

    def __init__(self, path: str | Path | None = None, *, prices: PriceTable | None = None) -> None:
        self.path = None if path is None else Path(path)
        self.prices = prices
        self._lock = threading.Lock()
        self._conversations: list[_Conversation] = []
        self.recorded = 0

    @property
    def paths(self) -> list[Path]:
        """The cassettes written so far, one per conversation, in the order they began."""
        return [Path(c.recorder.path) for c in self._conversations if c.recorder.path]

    @property
    def cassettes(self) -> list[Cassette]:
        """Each conversation's cassette, in the order they began."""
        return [c.recorder.cassette for c in self._conversations]

    def record(
        self, path: str, body: bytes, status: int, headers: Mapping[str, str], answer: bytes
    ) -> InferenceResponse | None:
        """Record one exchange (a request to ``path`` of a model API, and the upstream's
        answer); the answer as agentrig reads it, or None when it is not a model call or the
        answer is an error (recorded as the interaction's error)."""
        fmt = format_for_path(path.split("?", 1)[0])
        if fmt is None:
            return None
        try:
            request = fmt.read(path, body)
        except WireError:
            return None  # the upstream answered it; there is no model call to record
        decoded = {k: v for k, v in headers.items() if k.lower() not in _WIRE_ENCODING}
        provider = _replaying_provider(fmt, request, status, decoded, answer, self.prices)
        inference = _inference_request(request)
        sent = tuple(inference.messages)
        with self._lock:
            conversation = self._conversation_of(request, sent, provider)
            conversation.recorder.inner = provider
            conversation.sent = sent
            self.recorded += 1
            try:
                response = conversation.recorder.infer(inference)
            except ProviderError:  # recorded as the interaction's error
                return None
            conversation.answered = response.response_id
            return response

    def _conversation_of(
        self, request: WireRequest, sent: tuple[Message, ...], provider: InferenceProvider
    ) -> _Conversation:
        """The conversation ``request`` goes on with, or a new one with a cassette of its own.

        With ``previous_response_id``, the one that got that answer. Else the one whose last
        request ``request`` repeats from the start and goes on from (the longest, if several);
        else the one whose last request it repeats whole (a retry, as after an error); else
        none: another run of the agent, another agent, or a subagent."""
        previous = request.settings.get("previous_response_id")
        if isinstance(previous, str) and previous:
            for conversation in self._conversations:
                if conversation.answered == previous:
                    return conversation
        goes_on: _Conversation | None = None
        retried: _Conversation | None = None
        for conversation in self._conversations:
            length = len(conversation.sent)
            if not length or repeated_prefix(conversation.sent, sent) < length:
                continue
            if length == len(sent):
                retried = conversation
            elif goes_on is None or length > len(goes_on.sent):
                goes_on = conversation
        found = goes_on or retried
        if found is not None:
            return found
        metadata = CassetteMetadata(agentrig=__version__, recorded_with=RECORDED_THROUGH)
        path = None if self.path is None else _numbered(self.path, len(self._conversations) + 1)
        recorder = RecordingProvider(provider, path=path, cassette=Cassette(metadata=metadata))
        self._conversations.append(_Conversation(recorder))
        return self._conversations[-1]


def _numbered(path: Path, number: int) -> Path:
    """``path`` for the first conversation; ``NAME-N.SUFFIXES`` beside it for the ``number``-th
    (``session.cassette.yaml``: ``session-2.cassette.yaml``)."""
    if number == 1:
        return path
    stem, dot, suffixes = path.name.partition(".")
    return path.with_name(f"{stem}-{number}{dot}{suffixes}")


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
    fmt: WireFormat,
    request: WireRequest,
    status: int,
    headers: dict[str, str],
    answer: bytes,
    prices: PriceTable | None = None,
) -> InferenceProvider:
    """agentrig's provider for ``fmt``, whose HTTP client answers with the upstream's bytes
    (for Gemini, which agentrig has no provider for, a reader of the answer)."""
    if fmt is FORMATS["gemini"]:
        return GeminiAnswer(status, answer, streamed=request.stream)
    import httpx2

    def canned(_: Any) -> Any:
        return httpx2.Response(status, headers=headers, content=answer)

    client = httpx2.Client(transport=httpx2.MockTransport(canned))
    options: dict[str, Any] = {"model": request.model, "stream": request.stream, "prices": prices}
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
