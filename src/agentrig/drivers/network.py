"""Where real providers announce that they are about to reach their API.

Real providers (``OpenAIProvider``, ``AnthropicProvider``) send every request inside
:func:`sending`. By default that does nothing. A :class:`RealCallPolicy` installed with
:func:`use_real_call_policy` sees each of those calls and may refuse real network access during
them; agentrig's pytest plugin installs one that blocks every test not marked
``agentrig_real_llm`` (``agentrig.harness.cassettes.network_block``). A policy works at the connection
level, so HTTP cassettes replayed by vcrpy, which answer before any connection is opened, still play.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Protocol


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
