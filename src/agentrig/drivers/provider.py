"""The inference seam: one request in, one response out (D9). Real and fake providers plug in here.

A provider answers synchronously (``infer``), asynchronously (``ainfer``) or both. The sync path
(``AgentLoop.execute``) calls ``infer``; the async path (``aexecute``) awaits ``ainfer``, and runs
a provider that has only ``infer`` in a worker thread.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agentrig.state import InferenceRequest, InferenceResponse


@runtime_checkable
class InferenceProvider(Protocol):
    """Answers one inference request. Raise ``ProviderError`` on failure."""

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        """The model's answer to ``request``."""
        ...


@runtime_checkable
class StreamingProvider(Protocol):
    """Answers one inference request in pieces: ``infer_stream`` yields ``Delta``s as they
    arrive and returns the assembled response (the generator's return value), the same
    response ``infer`` gives. ``ainfer_stream`` may do the same on the event loop, as an async
    generator that yields the ``Delta``s and then the response, last; ``astream`` uses it when
    there is one (else it asks ``infer_stream`` on the loop's thread)."""

    def infer_stream(self, request: InferenceRequest) -> Generator[Delta, None, InferenceResponse]:
        """The answer to ``request``, in pieces."""
        ...


@dataclass(frozen=True, slots=True)
class Delta:
    """A piece of a streamed answer: text, a piece of the model's reasoning (Anthropic's
    thinking, a Responses reasoning summary, a compatible server's ``reasoning_content``), or a
    piece of one tool call's JSON arguments (the call's ``index`` among the answer's calls; its
    id and name on its first piece)."""

    text: str = ""
    index: int | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str = ""
    reasoning: str = ""


@runtime_checkable
class AsyncInferenceProvider(Protocol):
    """Answers one inference request on the running event loop. Raise ``ProviderError`` on
    failure."""

    async def ainfer(self, request: InferenceRequest) -> InferenceResponse:
        """The model's answer to ``request``."""
        ...
