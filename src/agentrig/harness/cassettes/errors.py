"""Errors of record and replay: ``CassetteError`` and the errors below it, ``CassetteFileError``
(an invalid cassette file: a ``DataFileError``, as an invalid scenario file is) and
``ReplayedProviderError`` (a ``ProviderError``). Where they sit in agentrig's one error tree is
drawn in :mod:`agentrig.errors`.

A replay miss is deliberately *not* a ``ProviderError``: code that catches provider failures
(fallbacks, retries) must not swallow it. The loop still records it as the step's error, and
``assert_complete()`` raises it again so a test fails with the diff.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from agentrig.errors import AgentrigError, ProviderError
from agentrig.harness.errors import DataFileError

__all__ = [
    "CassetteConversionError",
    "CassetteError",
    "CassetteFileError",
    "CassetteMismatchError",
    "CassetteNotFoundError",
    "ReplayedProviderError",
    "UnusedInteractionsError",
]


class CassetteError(AgentrigError):
    """Root of the record and replay errors."""


class CassetteFileError(DataFileError):
    """A cassette file could not be read, parsed or validated; ``str()`` lists every problem as
    ``path:line:column: field: reason``."""


class CassetteNotFoundError(CassetteError):
    """Replay needs a cassette file that does not exist."""

    def __init__(self, path: str, mode: str) -> None:
        self.path = path
        self.mode = mode
        super().__init__(
            f"cassette {path} does not exist and record mode {mode!r} does not record; "
            "record it with mode 'once' (pytest: --agentrig-record-mode=once) and a provider "
            "to record from"
        )


class CassetteMismatchError(CassetteError):
    """A live request matches no recorded interaction.

    ``request_number`` counts the requests made to the provider (from 1); ``nearest`` is the
    number of the most similar recorded interaction (None for an empty cassette) and ``diff`` a
    unified diff from it to the live request, both as normalized YAML.
    """

    def __init__(
        self, path: str, request_number: int, nearest: int | None, diff: str, reason: str
    ) -> None:
        self.path = path
        self.request_number = request_number
        self.nearest = nearest
        self.diff = diff
        self.reason = reason
        lines = [f"cassette {path}: request {request_number} {reason}"]
        if nearest is not None:
            lines.append(f"nearest recorded interaction: {nearest}; diff (recorded -> live):")
            lines.append(diff.rstrip("\n"))
        lines.append(
            "fix the code under test, or re-record: mode 'new_episodes' adds the new request, "
            "mode 'all' records everything again (pytest: --agentrig-record-mode=...)"
        )
        super().__init__("\n".join(lines))


class UnusedInteractionsError(CassetteError):
    """Recorded interactions were never played; ``unused`` holds ``(number, summary)`` pairs."""

    def __init__(self, path: str, unused: Sequence[tuple[int, str]]) -> None:
        self.path = path
        self.unused = tuple(unused)
        listed = "\n".join(f"  {number}: {summary}" for number, summary in self.unused)
        super().__init__(
            f"cassette {path}: {len(self.unused)} recorded interaction(s) never played:\n{listed}\n"
            "the code made fewer requests than recorded; fix it, or re-record with mode 'all'"
        )


class CassetteConversionError(CassetteError):
    """A cassette that cannot be turned into a scenario; ``interaction`` is 1-based or None."""

    def __init__(self, path: str, interaction: int | None, reason: str) -> None:
        self.path = path
        self.interaction = interaction
        self.reason = reason
        where = f" interaction {interaction}" if interaction is not None else ""
        super().__init__(f"cannot convert cassette {path}{where}: {reason}")


class ReplayedProviderError(ProviderError):
    """A provider failure recorded in a cassette, raised again on replay.

    ``error_type`` is the class name of the original error; ``status_code``, ``provider`` and
    ``failed_generation`` are the original's. Made as an instance of a subclass named after the
    original class (``error_type``), so that what a run records of the error (its type name, in
    the step's error and the stop signal's source) is the same whether the run was recorded or
    replayed.
    """

    def __new__(cls, message: str, *, error_type: str, **fields: Any) -> ReplayedProviderError:
        named = _replayed_class(error_type) if cls is ReplayedProviderError else cls
        return super().__new__(named, message)

    def __init__(
        self,
        message: str,
        *,
        error_type: str,
        retryable: bool = False,
        status_code: int | None = None,
        provider: str = "",
        failed_generation: str | None = None,
    ) -> None:
        self.error_type = error_type
        super().__init__(
            message,
            retryable=retryable,
            status_code=status_code,
            provider=provider,
            failed_generation=failed_generation,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # The subclass is made at run time: rebuild it by name (pickling across processes).
        fields: dict[str, Any] = {
            "error_type": self.error_type,
            "retryable": self.retryable,
            "status_code": self.status_code,
            "provider": self.provider,
            "failed_generation": self.failed_generation,
        }
        return (functools.partial(ReplayedProviderError, **fields), (str(self),))


@functools.lru_cache(maxsize=256)
def _replayed_class(error_type: str) -> type[ReplayedProviderError]:
    if error_type == ReplayedProviderError.__name__:
        return ReplayedProviderError
    named = type(error_type, (ReplayedProviderError,), {"__doc__": ReplayedProviderError.__doc__})
    named.__module__ = __name__
    return named
