"""Block real LLM calls: the policy agentrig's pytest plugin installs in every test not marked
``agentrig_real_llm``.

While a real provider sends (``agentrig.drivers.network.sending``), opening a connection raises
``RealLlmCallBlockedError``. The check sits in the HTTP connection pools (httpcore2 and httpcore,
whichever the SDKs loaded, sync and async), below vcrpy's patch of the transport, so a replayed HTTP cassette never
reaches it; only a request that would really leave the machine does. A request to this machine
(a loopback address or ``localhost``: ``agentrig serve``, a local model server) is no real LLM
call, and passes.
"""

from __future__ import annotations

import ipaddress
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from agentrig.drivers.network import use_real_call_policy
from agentrig.errors import RealLlmCallBlockedError

_POOL_MODULES = ("httpcore2", "httpcore")
_sending: ContextVar[str | None] = ContextVar("agentrig_real_call_sending", default=None)
_answered_here: ContextVar[frozenset[str]] = ContextVar(
    "agentrig_answered_here", default=frozenset()
)


@contextmanager
def answered_in_process(hosts: Iterable[str]) -> Iterator[None]:
    """Within the block, a request to one of ``hosts`` is answered in this process (the scenario
    endpoint's ``intercept()`` routes them with respx), so it is no real call: the block lets it
    through, whichever of the two patched the connection pools first."""
    token = _answered_here.set(_answered_here.get() | {host.lower() for host in hosts})
    try:
        yield
    finally:
        _answered_here.reset(token)


class _Refused(BaseException):
    """Carries the refusal from the connection pool to ``sending``. A ``BaseException``, like
    ``KeyboardInterrupt``, so that SDK retry loops (``except Exception``) neither wrap it as a
    connection error nor sleep through their back-off retrying it."""

    def __init__(self, error: RealLlmCallBlockedError) -> None:
        super().__init__(str(error))
        self.error = error


class RealCallBlocker:
    """A ``RealCallPolicy`` that refuses real connections; ``blocked`` lists every refusal as
    ``(provider, url)``, so a caller can report it even when the agent loop caught the error."""

    def __init__(self) -> None:
        self.blocked: list[tuple[str, str]] = []
        self._undo: list[tuple[type[Any], str, Any, Any]] = []

    @contextmanager
    def sending(self, provider: str) -> Iterator[None]:
        """Refuse connections while ``provider`` sends."""
        self._patch_pools()
        token = _sending.set(provider)
        try:
            yield
        except _Refused as refused:
            raise refused.error from None
        finally:
            _sending.reset(token)

    def _patch_pools(self) -> None:
        patched = {(pool, method) for pool, method, _, _ in self._undo}
        for name in _POOL_MODULES:
            module = sys.modules.get(name)
            for cls, method, guard in (
                ("ConnectionPool", "handle_request", self._guard),
                ("AsyncConnectionPool", "handle_async_request", self._async_guard),
            ):
                pool = getattr(module, cls, None)
                if pool is not None and (pool, method) not in patched:
                    original = pool.__dict__[method]
                    guarded = guard(original)
                    self._undo.append((pool, method, original, guarded))
                    setattr(pool, method, guarded)

    def _refuse(self, request: Any) -> None:
        """Refuse ``request`` if a real provider is sending (an SDK's own calls pass)."""
        provider = _sending.get()
        if provider is None:
            return
        url = request.url
        host = url.host.decode()
        if _is_loopback(host) or host.lower() in _answered_here.get():
            return
        port = f":{url.port}" if url.port is not None else ""
        target = f"{url.scheme.decode()}://{url.host.decode()}{port}{url.target.decode()}"
        self.blocked.append((provider, target))
        raise _Refused(RealLlmCallBlockedError(provider, target))

    def _guard(self, real: Any) -> Any:
        def handle_request(pool: Any, request: Any) -> Any:
            self._refuse(request)
            return real(pool, request)

        return handle_request

    def _async_guard(self, real: Any) -> Any:
        async def handle_async_request(pool: Any, request: Any) -> Any:
            self._refuse(request)
            return await real(pool, request)

        return handle_async_request

    def close(self) -> None:
        """Put the connection pools back as they were. A pool whose method is no longer the
        guard was patched again over it (respx's mock, ``intercept()``) and already put back by
        that patch's owner: putting the guarded method back would leave the mock in place."""
        while self._undo:
            pool, method, original, guarded = self._undo.pop()
            if pool.__dict__.get(method) is guarded:
                setattr(pool, method, original)


def _is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine: ``localhost`` or a loopback address."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@contextmanager
def block_real_llm_calls() -> Iterator[RealCallBlocker]:
    """Block real LLM calls until the block ends; yields the blocker (see ``blocked``)."""
    blocker = RealCallBlocker()
    try:
        with use_real_call_policy(blocker):
            yield blocker
    finally:
        blocker.close()
