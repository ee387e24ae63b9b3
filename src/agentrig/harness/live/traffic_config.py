"""``traffic_from_config``: the live run's traffic control from a plain mapping (a YAML or JSON
section), every problem named by its field::

    caps: {openai: 8, anthropic: 4}
    default_cap: 4
    requests_per_minute: {openai: 500}
    max_attempts: 20
    backoff: {base: 0.5, max: 32}
    budget_usd: 25
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any, TypeVar

from agentrig.clock import Clock
from agentrig.errors import InvalidInputError
from agentrig.harness.live.budget import Budget
from agentrig.harness.live.limits import Backoff, ProviderLimits, Traffic
from agentrig.harness.live.virtual_time import Sleeper

__all__ = ["TRAFFIC_KEYS", "traffic_from_config"]

_LIMITS_KEYS = (
    "caps",
    "default_cap",
    "requests_per_minute",
    "default_requests_per_minute",
    "burst",
    "decrease",
    "recover_after",
    "seed",
)
_BACKOFF_KEYS = tuple(f.name for f in fields(Backoff))
TRAFFIC_KEYS = (*_LIMITS_KEYS, "backoff", "max_attempts", "budget_usd")
"""The keys ``traffic_from_config`` takes; each is the keyword of the same name of
``ProviderLimits``, ``Traffic`` or ``Backoff`` (``budget_usd``: ``Budget(usd=...)``)."""

_WHAT = "live traffic configuration"
X = TypeVar("X")


def traffic_from_config(
    config: Mapping[str, Any],
    *,
    sleeper: Sleeper | None = None,
    clock: Clock | None = None,
) -> Traffic:
    """The ``Traffic`` ``config`` describes (absent keys take their defaults; no
    ``budget_usd``: no budget). Raises ``InvalidInputError`` listing every problem, each with
    its field (``caps.openai``, ``backoff.base``, an unknown key)."""
    if not isinstance(config, Mapping):
        raise InvalidInputError(_WHAT, [("", f"expected a mapping, got {type(config).__name__}")])
    problems = _unknown(config, TRAFFIC_KEYS, "")
    raw_backoff = config.get("backoff")
    backoff: Backoff | None = None
    if raw_backoff is not None:
        if not isinstance(raw_backoff, Mapping):
            problems.append(("backoff", f"expected a mapping, got {type(raw_backoff).__name__}"))
        else:
            problems += _unknown(raw_backoff, _BACKOFF_KEYS, "backoff.")
            known = {key: raw_backoff[key] for key in _BACKOFF_KEYS if key in raw_backoff}
            backoff = _built(lambda: Backoff(**known), problems, "backoff.")
    options = {key: config[key] for key in _LIMITS_KEYS if key in config}
    limits = _built(
        lambda: ProviderLimits(**options, backoff=backoff, sleeper=sleeper), problems, ""
    )
    budget: Budget | None = None
    if config.get("budget_usd") is not None:
        budget = _built(lambda: Budget(config["budget_usd"]), problems, "budget_")
    attempts = {"max_attempts": config["max_attempts"]} if "max_attempts" in config else {}
    traffic = _built(lambda: Traffic(limits, budget, clock=clock, **attempts), problems, "")
    if problems or traffic is None:
        raise InvalidInputError(_WHAT, _unique(problems))
    return traffic


def _unknown(
    given: Mapping[Any, Any], known: tuple[str, ...], prefix: str
) -> list[tuple[str, str]]:
    return [
        (f"{prefix}{key}", f"unknown key; expected one of: {', '.join(known)}")
        for key in given
        if key not in known
    ]


def _built(make: Callable[[], X], problems: list[tuple[str, str]], prefix: str) -> X | None:
    try:
        return make()
    except InvalidInputError as error:
        problems += [(f"{prefix}{name}", reason) for name, reason in error.problems]
        return None


def _unique(problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(dict.fromkeys(problems))
