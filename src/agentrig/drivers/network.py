"""Where real providers announce that they are about to reach their API.

Real providers (``OpenAIProvider``, ``AnthropicProvider``) send every request inside
:func:`sending`. By default that does nothing. A :class:`RealCallPolicy` installed with
:func:`use_real_call_policy` sees each of those calls and may refuse real network access during
them; agentrig's pytest plugin installs one that blocks every test not marked
``agentrig_real_llm`` (``agentrig.harness.cassettes.network_block``). A policy works at the connection
level, so HTTP cassettes replayed by vcrpy, which answer before any connection is opened, still play.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import ssl


class RealCallPolicy(Protocol):
    """Decides what happens while a real provider sends one request."""

    def sending(self, provider: str) -> AbstractContextManager[None]:
        """A context the provider's SDK call runs in; it may block real connections."""
        ...


_policy: RealCallPolicy | None = None


def sending(provider: str) -> AbstractContextManager[None]:
    """The context a real provider sends its request in (the installed policy's, if any)."""
    return nullcontext() if _policy is None else _policy.sending(provider)


@contextmanager
def use_real_call_policy(policy: RealCallPolicy | None) -> Iterator[None]:
    """Install ``policy`` (None: allow everything) until the block ends; the previous one is
    restored afterwards, so policies nest."""
    global _policy
    previous, _policy = _policy, policy
    try:
        yield
    finally:
        _policy = previous


def shared_ssl_context() -> ssl.SSLContext:
    """The SSL context an HTTP client of agentrig's verifies servers with: httpx's default (the
    system's certificates, or ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set), built once for each
    value of those variables. Each new context loads the certificate bundle again (about 20 ms),
    which a provider built for every trial paid on its first call; a context is safe to share."""
    return _ssl_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _ssl_context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    import httpx2  # imported by the SDKs and the harness that call this, never at start-up

    del cafile, capath  # the cache key: httpx reads them from the environment
    return httpx2.create_ssl_context()
