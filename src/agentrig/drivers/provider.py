"""The inference seam: one request in, one response out (D9). Real and fake providers plug in here.

A provider answers synchronously (``infer``), asynchronously (``ainfer``) or both. The sync path
(``AgentLoop.execute``) calls ``infer``; the async path (``aexecute``) awaits ``ainfer``, and runs
a provider that has only ``infer`` in a worker thread.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from agentrig.state import InferenceRequest, InferenceResponse


@runtime_checkable
class InferenceProvider(Protocol):
    """Answers one inference request. Raise ``ProviderError`` on failure."""

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        """The model's answer to ``request``."""
        ...


@runtime_checkable
class AsyncInferenceProvider(Protocol):
    """Answers one inference request on the running event loop. Raise ``ProviderError`` on
    failure."""

    async def ainfer(self, request: InferenceRequest) -> InferenceResponse:
        """The model's answer to ``request``."""
        ...
