"""The inference seam: one request in, one response out (D9). Real and fake providers plug in here."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from agentrig.state import InferenceRequest, InferenceResponse


@runtime_checkable
class InferenceProvider(Protocol):
    """Answers one inference request. Raise ``ProviderError`` on failure."""

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        """The model's answer to ``request``."""
        ...
