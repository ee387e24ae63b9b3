"""The gate an adapter agent's model calls pass in a live trial, as agentrig's own agents' do:
each call of the agent's SDK (through ``current_trial().http_client()``) waits for its
provider's concurrency slot, is admitted by the budget, is retried by agentrig's back-off when
rate limited, is costed from its usage (``agent.price``), and is recorded as a cassette of the
trial, which ``agentrig convert`` turns into a scenario.

The clients are ``httpx2`` clients, the HTTP client of the ``openai`` and ``anthropic`` SDKs
(and so of the frameworks built on them): pass one as the SDK's ``http_client``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from agentrig.drivers.network import shared_ssl_context
from agentrig.drivers.pricing import ModelPrice, PriceTable
from agentrig.errors import ConfigurationError, RetryLimitExceededError
from agentrig.harness.cassettes.model import Cassette
from agentrig.harness.live.budget import BudgetExhausted
from agentrig.harness.live.gateway import CallControl, Ledger, limit_name
from agentrig.harness.live.rate_limits import RATE_LIMIT_STATUSES
from agentrig.harness.live.roles import TRIAL_HEADER, close_clients
from agentrig.harness.scenarios.price import Price
from agentrig.state import Usage
from agentrig.state.usage import ZERO_USAGE

__all__ = ["AdapterGate", "ModelClients", "adapter_prices"]

_ANTHROPIC_PATHS = ("/v1/messages", "/messages")
_HEADERS = "latin-1"  # pragma: no mutate (HTTP headers' codec: any spelling of it is the same)


@dataclass(frozen=True, slots=True)
class _Answer:
    """What the upstream answered: the bytes as sent (still encoded) and what agentrig read of
    them (None when it is not a model call)."""

    status: int
    headers: list[tuple[bytes, bytes]]
    raw: bytes
    usage: Usage | None


class _RateLimited(Exception):
    """A rate-limit answer, raised so that the traffic control backs off and retries it (its
    ``status_code`` and ``response.headers`` are read as an SDK error's are)."""

    def __init__(self, answer: _Answer) -> None:
        # its message is read by no one: Traffic retries it or relays the answer
        super().__init__(f"HTTP {answer.status}")  # pragma: no mutate
        self.status_code = answer.status
        self.answer = answer
        headers = {k.decode(_HEADERS).lower(): v.decode(_HEADERS) for k, v in answer.headers}
        self.response = _HeadersOnly(headers)


@dataclass(frozen=True, slots=True)
class _HeadersOnly:
    headers: dict[str, str]


def adapter_prices(price: Price | None) -> PriceTable | None:
    """``agent.price`` as the price of every model the adapter asks."""
    if price is None:
        return None
    return PriceTable({"": ModelPrice.model_validate(price)})


class ModelClients(Protocol):
    """Where an adapter's model SDK sends its requests: ``current_trial().http_client()``."""

    def http_client(self, **options: Any) -> Any:
        """An ``httpx2.AsyncClient``."""
        ...

    def sync_http_client(self, **options: Any) -> Any:
        """An ``httpx2.Client``."""
        ...


class AdapterGate:
    """One trial's gate for an adapter's model calls. ``http_client()`` and
    ``sync_http_client()`` make the clients its SDK sends through; ``cassettes`` are its
    conversations; ``usage`` what the calls made since ``mark()`` cost."""

    def __init__(
        self,
        *,
        key: str,
        control: CallControl,
        ledger: Ledger,
        prices: PriceTable | None,
        loop: asyncio.AbstractEventLoop,
        transport: Any = None,
    ) -> None:
        from agentrig.harness.endpoint.conversations import Conversations

        self.key = key
        self.control = control
        self.ledger = ledger
        self.conversations = Conversations(prices=prices)
        self.calls = 0
        self._usages: list[Usage] = []
        self._mark = 0  # pragma: no mutate (a slice from None is from 0)
        self._loop = loop
        self._transport = transport
        """What the calls go out through (an httpx2 transport): the network by default."""
        self._clients: list[Any] = []

    def http_client(self, **options: Any) -> Any:
        """An ``httpx2.AsyncClient`` whose requests pass this gate (``options`` go to it)."""
        import httpx2

        inner = self._transport or httpx2.AsyncHTTPTransport(verify=shared_ssl_context())
        client = httpx2.AsyncClient(transport=_async_transport()(self, inner), **options)
        self._clients.append(client)
        return client

    def sync_http_client(self, **options: Any) -> Any:
        """An ``httpx2.Client`` whose requests pass this gate, for an adapter that runs in a
        worker thread (a sync adapter function)."""
        import httpx2

        inner = self._transport or httpx2.HTTPTransport(verify=shared_ssl_context())
        client = httpx2.Client(transport=_sync_transport()(self, inner), **options)
        self._clients.append(client)
        return client

    @property
    def cassettes(self) -> list[Cassette]:
        """The recorded conversations, in the order they began."""
        return self.conversations.cassettes

    def mark(self) -> None:
        """Start counting the calls of one reply of the agent."""
        self._mark = len(self._usages)

    def since_mark(self) -> Usage | None:
        """What the calls since ``mark()`` used, or None when none passed the gate."""
        usages = self._usages[self._mark :]
        if not usages:
            return None
        total = ZERO_USAGE
        for usage in usages:
            total = total + usage
        return total

    async def aclose(self) -> None:
        """Close the clients this gate made."""
        await close_clients(tuple(self._clients))
        self._clients.clear()

    async def exchange(
        self,
        method: str,
        path: str,
        body: bytes,
        forward: Callable[[], Awaitable[_Answer]],
    ) -> _Answer:
        """Send one request under the trial's traffic control and record it; its answer. A
        rate-limit answer agentrig gave up retrying (or a control that does not retry let
        through) is passed on, for the SDK to handle."""
        provider = "anthropic" if path.partition("?")[0].endswith(_ANTHROPIC_PATHS) else "openai"

        async def attempt() -> _Answer:
            answer = await forward()
            if answer.status in RATE_LIMIT_STATUSES:
                raise _RateLimited(answer)
            return self._recorded(method, path, body, answer)

        try:
            return await self.control.call(limit_name(provider), attempt, _cost)
        except BudgetExhausted as error:
            self.ledger.refused = error
            raise
        except (RetryLimitExceededError, _RateLimited) as error:
            limited = _rate_limited_in(error)
            if limited is None:
                raise
            return self._recorded(method, path, body, limited.answer)

    def _recorded(self, method: str, path: str, body: bytes, answer: _Answer) -> _Answer:
        """``answer``, recorded and charged when it answers a model call."""
        if method != "POST":
            return answer
        headers = {k.decode(_HEADERS): v.decode(_HEADERS) for k, v in answer.headers}
        response = self.conversations.record(path, body, answer.status, headers, _decoded(answer))
        if response is None:
            return answer
        self.calls += 1
        self._usages.append(response.usage)
        self.ledger.charge("agent", response.usage)
        return _Answer(answer.status, answer.headers, answer.raw, response.usage)


def _cost(answer: _Answer) -> float:
    return 0.0 if answer.usage is None else answer.usage.cost


def _rate_limited_in(error: BaseException) -> _RateLimited | None:
    current: BaseException | None = error
    while current is not None:
        if isinstance(current, _RateLimited):
            return current
        current = current.__cause__
    return None


def _decoded(answer: _Answer) -> bytes:
    """The answer's body without its content encoding (gzip, as the real APIs send)."""
    import httpx2

    response = httpx2.Response(
        answer.status,  # pragma: no mutate (not read: only the body is decoded)
        headers=answer.headers,
        content=answer.raw,
    )
    return response.read()


_ENCODING_HEADERS = (b"content-encoding", b"content-length", b"transfer-encoding")


def _read_already(response: Any) -> _Answer:
    """A response whose body was read (and decoded) before it came back: the decoded body,
    without the headers that described the encoded one."""
    headers = [(k, v) for k, v in response.headers.raw if k.lower() not in _ENCODING_HEADERS]
    return _Answer(response.status_code, headers, response.content, None)


@functools.cache
def _async_transport() -> type[Any]:
    """The transport class of ``http_client()`` (made once: httpx2 is imported on first use)."""
    import httpx2

    class GateTransport(httpx2.AsyncBaseTransport):
        def __init__(self, gate: AdapterGate, inner: Any) -> None:
            self.gate = gate
            self.inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            request.headers[TRIAL_HEADER] = self.gate.key
            body = await request.aread()

            async def forward() -> _Answer:
                response = await self.inner.handle_async_request(request)
                try:
                    raw = b"".join([chunk async for chunk in response.aiter_raw()])
                except httpx2.StreamConsumed:  # read (and decoded) already, as a mock's is
                    return _read_already(response)
                finally:
                    await response.aclose()
                return _Answer(response.status_code, list(response.headers.raw), raw, None)

            answer = await self.gate.exchange(
                request.method, request.url.raw_path.decode(), body, forward
            )
            return httpx2.Response(answer.status, headers=answer.headers, content=answer.raw)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return GateTransport


@functools.cache
def _sync_transport() -> type[Any]:
    """The transport class of ``sync_http_client()`` (made once)."""
    import httpx2

    class GateTransport(httpx2.BaseTransport):
        def __init__(self, gate: AdapterGate, inner: Any) -> None:
            self.gate = gate
            self.inner = inner

        def handle_request(self, request: Any) -> Any:
            request.headers[TRIAL_HEADER] = self.gate.key
            body = request.read()

            def send() -> _Answer:
                response = self.inner.handle_request(request)
                try:
                    raw = b"".join(response.iter_raw())
                except httpx2.StreamConsumed:  # read (and decoded) already, as a mock's is
                    return _read_already(response)
                finally:
                    response.close()
                return _Answer(response.status_code, list(response.headers.raw), raw, None)

            async def forward() -> _Answer:
                return await asyncio.to_thread(send)

            path = request.url.raw_path.decode()
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is self.gate._loop:
                raise ConfigurationError(
                    "current_trial().sync_http_client() is for adapters that run in a worker "
                    "thread (a sync function): an async adapter uses http_client()"
                )
            future = asyncio.run_coroutine_threadsafe(
                self.gate.exchange(request.method, path, body, forward), self.gate._loop
            )
            answer = future.result()
            return httpx2.Response(answer.status, headers=answer.headers, content=answer.raw)

        def close(self) -> None:
            self.inner.close()

    return GateTransport
