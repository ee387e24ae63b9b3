"""Telling a rate-limit failure from any other: its HTTP status, and how long the server asked
the client to wait (``Retry-After``).

A provider's failure reaches the live-trial runner as agentrig's ``ProviderError`` (with
``status_code``), raised ``from`` the SDK's own error, whose HTTP response carries the headers;
or as an SDK or HTTP-client error directly. Both are read without importing any SDK: the status
from ``status_code`` (or ``response.status_code``), the wait from a ``retry_after`` attribute
(seconds) or the response's ``retry-after-ms`` / ``retry-after`` headers, along the chain of
causes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any

from agentrig.clock import Clock, SystemClock

__all__ = ["RATE_LIMIT_STATUSES", "RateLimitSignal", "rate_limit_of"]

RATE_LIMIT_STATUSES = frozenset({429, 503, 529})
"""Rate limited (429), service unavailable (503) and overloaded (529, Anthropic's): answers that
say "less, later" rather than "this request is wrong"."""

_DEPTH = 8
"""How far along ``__cause__`` to look: SDK errors wrap an HTTP error, agentrig's wrap those."""


@dataclass(frozen=True)
class RateLimitSignal:
    """A rate-limit failure: its HTTP ``status`` and the seconds the server asked to wait
    (``retry_after``; None when it sent no usable ``Retry-After``, ``math.inf`` for a wait too
    large to represent)."""

    status: int
    retry_after: float | None = None


def rate_limit_of(error: BaseException, clock: Clock | None = None) -> RateLimitSignal | None:
    """The rate-limit signal ``error`` carries, or None when it is some other failure.

    ``clock`` turns a ``Retry-After`` given as an HTTP date into seconds (the system clock by
    default).
    """
    status = _first(error, _status_of)
    if status not in RATE_LIMIT_STATUSES:
        return None
    return RateLimitSignal(status, _first(error, lambda e: _retry_after_of(e, clock)))


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(seen) < _DEPTH and current not in seen:
        seen.append(current)
        current = current.__cause__
    return seen


def _first(error: BaseException, read: Any) -> Any:
    for link in _chain(error):
        value = read(link)
        if value is not None:
            return value
    return None


def _status_of(error: BaseException) -> int | None:
    for holder in (error, getattr(error, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int) and not isinstance(status, bool):
            return status
    return None


def _retry_after_of(error: BaseException, clock: Clock | None) -> float | None:
    given = getattr(error, "retry_after", None)
    if isinstance(given, int | float) and not isinstance(given, bool):
        return _seconds(float(given))
    headers = getattr(getattr(error, "response", None), "headers", None)
    if headers is None or not hasattr(headers, "get"):
        return None
    milliseconds = _number(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return _seconds(milliseconds / 1000)
    value = headers.get("retry-after")
    if not isinstance(value, str):
        return None
    seconds = _number(value)
    if seconds is not None:
        return _seconds(seconds)
    return _until_date(value, clock or SystemClock())


def _number(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _seconds(value: float) -> float | None:
    if math.isnan(value):
        return None
    return max(0.0, value)  # inf stays inf: a wait the caller will not make


def _until_date(value: str, clock: Clock) -> float | None:
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:  # "-0000": UTC, source unknown (RFC 5322)
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - clock.now()).total_seconds())
