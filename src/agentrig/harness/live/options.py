"""The options of a live run (``agentrig run --live``, ``--agentrig-live``) made into the
:class:`~agentrig.harness.live.run.LiveRun` the runner takes: one traffic control for the whole
run (per-provider caps, 429 back-off, the run's budget), the cache folder, the trial cap; and
each scenario's own ``trials.budget_usd`` on top of the run's."""

from __future__ import annotations

import os
from collections.abc import Iterable

from agentrig.errors import InvalidInputError
from agentrig.harness.live.budget import Budget
from agentrig.harness.live.limits import ProviderLimits, Traffic
from agentrig.harness.live.run import LiveRun

__all__ = ["DEFAULT_PROVIDER_CAP", "live_run_options", "parse_limits"]

DEFAULT_PROVIDER_CAP = 8
"""Calls in flight at once to a provider ``--limit`` does not name."""


def parse_limits(items: Iterable[str]) -> dict[str, int]:
    """``["openai=8", "anthropic=4"]`` as ``{"openai": 8, "anthropic": 4}``; an item that is
    not ``PROVIDER=N`` with N >= 1 is an ``InvalidInputError`` naming it."""
    caps: dict[str, int] = {}
    problems: list[tuple[str, str]] = []
    for item in items:
        name, sep, number = item.partition("=")
        name = name.strip()
        if not sep or not name or not number.strip().isdigit() or int(number) < 1:
            problems.append((item, "write PROVIDER=N with N >= 1, e.g. openai=8"))
            continue
        caps[name] = int(number)
    if problems:
        raise InvalidInputError("--limit", problems)
    return caps


def live_run_options(
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    budget_usd: float | None = None,
    limits: Iterable[str] = (),
    max_trials: int | None = None,
    run_id: str | None = None,
) -> LiveRun:
    """The run these options describe."""
    budget = (
        None if budget_usd is None else Budget(budget_usd, name="the run's budget (--budget-usd)")
    )
    traffic = Traffic(
        ProviderLimits(parse_limits(limits), default_cap=DEFAULT_PROVIDER_CAP), budget
    )
    run = LiveRun(
        control=traffic,
        cache_dir=None if cache_dir is None else os.fspath(cache_dir),
        max_trials=max_trials,
    )
    if run_id is not None:
        if not run_id or "/" in run_id or not run_id.isprintable():
            raise InvalidInputError("--run-id", [(run_id, "use a name without '/'")])
        run.run_id = run_id
    return run
