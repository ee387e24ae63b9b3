"""Work the endpoint does once for every session alike: what depends only on the scenario and
the request's own values (the same for every session of a scenario) is worked out once and
remembered, not on every model call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_REMEMBERED: dict[tuple[Any, ...], tuple[object, Any]] = {}
_KEPT = 1024


def remembered(key: tuple[Any, ...], keep: object, work: Callable[[], T]) -> T:
    """``work()``, or its result of an earlier call with the same ``key``. ``keep`` is held with
    the result, so that an ``id()`` in ``key`` is not reused while it is remembered. The first
    item of ``key`` names the kind of work, so that two kinds never share a key. When
    ``_KEPT`` results are held, all are forgotten."""
    found = _REMEMBERED.get(key)
    if found is None:
        if len(_REMEMBERED) >= _KEPT:
            _REMEMBERED.clear()
        found = _REMEMBERED[key] = (keep, work())
    result: T = found[1]
    return result


def forget() -> None:
    """Forget every result remembered so far (the next sessions work everything out again)."""
    _REMEMBERED.clear()
