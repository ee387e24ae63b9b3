"""Every model call of a live trial passes one gate: answered from the trial's cassette when it
was recorded before, else sent through the run's traffic control (caps, 429 back-off, budget)
and recorded; its usage is charged to the role that made it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

from agentrig.drivers import InferenceProvider
from agentrig.drivers.provider import AsyncInferenceProvider
from agentrig.errors import ProviderError
from agentrig.harness.cassettes.model import Cassette, CassetteMetadata, Interaction
from agentrig.harness.cassettes.normalize import (
    normalize_request,
    record_error,
    record_response,
)
from agentrig.harness.cassettes.providers import ReplayProvider
from agentrig.harness.live.budget import BudgetExhausted
from agentrig.state import InferenceRequest, InferenceResponse, Usage
from agentrig.state.usage import ZERO_USAGE

__all__ = [
    "CallControl",
    "Ledger",
    "RoleName",
    "RoleProvider",
    "Unlimited",
    "access_denied_status",
    "is_infrastructure_error",
    "is_infrastructure_status",
    "limit_name",
    "provider_name_of",
]

RoleName = Literal["agent", "user", "judge"]
T = TypeVar("T")

_INFRASTRUCTURE_STATUSES = frozenset({408, 409, 429})
"""Besides every 5xx: a timeout, a conflict, a rate limit."""
_ACCESS_STATUSES = frozenset({401, 403})


class CallControl(Protocol):
    """What a model call is sent through: admission to the budget, a concurrency slot of its
    provider, retries on rate limits; ``cost_of`` says what the answer cost."""

    async def call(
        self,
        provider: str,
        make_call: Callable[[], Awaitable[T]],
        cost_of: Callable[[T], float],
    ) -> T:
        """The answer of ``make_call()``, sent under this control."""
        ...


def provider_name_of(provider: object) -> str:
    """An agent's provider as the run names it: its ``name`` (``openai``, ``anthropic``), or
    its class's name."""
    name = getattr(provider, "name", "")  # pragma: no mutate (only its truth is read)
    return str(name or type(provider).__name__)


def limit_name(provider: str) -> str:
    """The name under which ``provider``'s calls share a cap (``--limit``): one provider's APIs
    share its rate limits, so ``openai-responses`` is capped as ``openai``."""
    return "openai" if provider == "openai-responses" else provider


class Unlimited:
    """Sends every call at once, with no cap, retry or budget."""

    async def call(
        self,
        provider: str,
        make_call: Callable[[], Awaitable[T]],
        cost_of: Callable[[T], float],
    ) -> T:
        """``make_call()``'s answer."""
        return await make_call()


def is_infrastructure_error(error: BaseException) -> bool:
    """Whether ``error`` is the infrastructure's failure (a rate limit, an overloaded or
    failing server, a timeout, a dropped connection) rather than the agent's."""
    if not isinstance(error, ProviderError):
        return False
    if error.status_code is not None:
        return is_infrastructure_status(error.status_code)
    return error.retryable


def is_infrastructure_status(status: int) -> bool:
    """Whether an HTTP ``status`` is the infrastructure's failure: 408, 409, 429 or any 5xx."""
    return status in _INFRASTRUCTURE_STATUSES or status >= 500


def access_denied_status(error: BaseException) -> int | None:
    """The HTTP status (401 or 403) when ``error`` says a model refused its credentials:
    the run's setup, which no retry cures and no agent caused; None otherwise. Read from the
    ``status_code`` of the error or of one of its causes (agentrig's ``ProviderError`` and the
    SDKs' errors have one)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        status = getattr(current, "status_code", None)
        if isinstance(status, int) and not isinstance(status, bool):
            return status if status in _ACCESS_STATUSES else None
        current = current.__cause__ or current.__context__
    return None


@dataclass
class Ledger:
    """What one trial's model calls cost, by role, and the calls actually sent."""

    usage: dict[str, Usage] = field(
        default_factory=lambda: {"agent": ZERO_USAGE, "user": ZERO_USAGE, "judge": ZERO_USAGE}
    )
    sent: dict[str, int] = field(default_factory=lambda: {"agent": 0, "user": 0, "judge": 0})
    replayed: dict[str, int] = field(default_factory=lambda: {"agent": 0, "user": 0, "judge": 0})
    infrastructure_errors: list[ProviderError] = field(default_factory=list)
    access_errors: list[ProviderError] = field(default_factory=list)
    """Calls refused for their credentials (HTTP 401, 403): the agent loop records errors in
    its state, the trial reads them here."""
    refused: BudgetExhausted | None = None
    """The budget's refusal of a call, when one was refused (the agent loop records errors in
    its state: the trial reads it here)."""

    def charge(self, role: RoleName, usage: Usage, *, replayed: bool = False) -> None:
        """Add one answered call of ``role``: sent, or ``replayed`` from a recording."""
        self.usage[role] = self.usage[role] + usage
        (self.replayed if replayed else self.sent)[role] += 1

    def cost(self, role: RoleName) -> float:
        """What ``role``'s calls cost."""
        return self.usage[role].cost

    def add(self, other: Ledger) -> None:
        """Add ``other``'s usage and calls to this ledger."""
        for role in ("agent", "user", "judge"):
            self.usage[role] = self.usage[role] + other.usage[role]
            self.sent[role] += other.sent[role]
            self.replayed[role] += other.replayed[role]


class RoleProvider:
    """The provider a role of a trial talks to: replays ``replay`` when given (the trial was
    recorded before), else asks ``inner`` under ``control`` and records each interaction
    (unless ``record`` is false: a run without a cache keeps none)."""

    def __init__(
        self,
        inner: InferenceProvider | AsyncInferenceProvider | None,
        *,
        role: RoleName,
        provider_name: str,
        control: CallControl,
        ledger: Ledger,
        replay: Cassette | None = None,
        record: bool = True,
    ) -> None:
        self.inner = inner
        self.record = record
        self.role: RoleName = role
        self.provider_name = provider_name
        self.limit_name = limit_name(provider_name)
        self.control = control
        self.ledger = ledger
        self._replay = None if replay is None else ReplayProvider(replay, path=f"<{role}>")
        self.interactions: list[Interaction] = []

    def cassette(self, model: str = "") -> Cassette:
        """What this role was asked and answered in this trial, as a cassette."""
        metadata = CassetteMetadata(provider=self.provider_name, model=model)
        return Cassette(metadata=metadata, interactions=tuple(self.interactions))

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Only replays answer synchronously: a live trial runs on the event loop."""
        if self._replay is None:
            raise RuntimeError("a live trial's provider is asked through ainfer")
        return self._replayed(request)

    async def ainfer(self, request: InferenceRequest) -> InferenceResponse:
        """The answer to ``request``: replayed, or asked and recorded."""
        if self._replay is not None:
            return self._replayed(request)
        inner = self.inner
        if inner is None:
            raise RuntimeError(f"the {self.role} has no model to ask")
        ask: Callable[[], Awaitable[InferenceResponse]]
        if hasattr(inner, "ainfer"):
            ask = lambda: inner.ainfer(request)  # noqa: E731
        else:
            ask = lambda: asyncio.to_thread(inner.infer, request)  # noqa: E731
        recorded = normalize_request(request) if self.record else None
        try:
            response: InferenceResponse = await self.control.call(
                self.limit_name, ask, lambda answer: answer.usage.cost
            )
        except ProviderError as error:
            if recorded is not None:
                self.interactions.append(Interaction(request=recorded, error=record_error(error)))
            if is_infrastructure_error(error):
                self.ledger.infrastructure_errors.append(error)
            elif access_denied_status(error) is not None:
                self.ledger.access_errors.append(error)
            raise
        except BudgetExhausted as error:
            self.ledger.refused = error
            raise
        if recorded is not None:
            self.interactions.append(
                Interaction(request=recorded, response=record_response(response))
            )
        self.ledger.charge(self.role, response.usage)
        return response

    def _replayed(self, request: InferenceRequest) -> InferenceResponse:
        assert self._replay is not None
        response: InferenceResponse = self._replay.infer(request)
        self.ledger.charge(self.role, response.usage, replayed=True)
        return response
