"""The options of a live run (``agentrig run --live``, ``--agentrig-live``) made into the
:class:`~agentrig.harness.live.run.LiveRun` the runner takes: one traffic control for the whole
run (per-provider caps, 429 back-off, the run's budget), the cache folder, the trial cap; and
each scenario's own ``trials.budget_usd`` on top of the run's."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from agentrig.errors import InvalidInputError
from agentrig.harness.live.budget import Budget
from agentrig.harness.live.limits import ProviderLimits, Traffic
from agentrig.harness.live.run import LiveRun

__all__ = ["DEFAULT_PROVIDER_CAP", "live_run_options", "parse_limits"]

DEFAULT_PROVIDER_CAP = 8
"""Calls in flight at once to a provider ``--limit`` does not name."""


_COUNT = re.compile(r"[0-9]{1,9}")
"""A cap: ASCII digits (``int`` also reads ``١٢``, and fails on ``²``), at most 999,999,999."""


def parse_limits(items: Iterable[str]) -> dict[str, int]:
    """``["openai=8", "anthropic=4"]`` as ``{"openai": 8, "anthropic": 4}`` (a provider named
    twice: the last wins); an item that is not ``PROVIDER=N`` with N a whole number from 1 to
    999,999,999 is an ``InvalidInputError`` naming it."""
    caps: dict[str, int] = {}
    problems: list[tuple[str, str]] = []
    for item in items:
        name, sep, number = item.partition("=")
        name, number = name.strip(), number.strip()
        if not sep or not name or not _COUNT.fullmatch(number) or int(number) < 1:
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
    cache_option: str = "--cache",
) -> LiveRun:
    """The run these options describe. A bad one is an ``InvalidInputError`` naming its option
    (``cache_option`` names the cache folder's): a budget that is not a finite number of USD,
    a cache folder that is a file or cannot be made."""
    problems: list[tuple[str, str]] = []
    budget = None
    if budget_usd is not None:
        try:
            budget = Budget(budget_usd, name="the run's budget (--budget-usd)")
        except InvalidInputError as error:
            reasons = [reason for _, reason in error.problems]
            # the first problems found: "=" would do the same
            problems += [("--budget-usd", reason) for reason in reasons]  # pragma: no mutate
    if cache_dir is not None:
        problem = _folder_problem(Path(cache_dir))
        if problem is not None:
            problems.append((cache_option, problem))
    if problems:
        raise InvalidInputError("option", problems)
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


def _folder_problem(folder: Path) -> str | None:
    """Why trials cannot be kept in ``folder`` (made when missing), or None: checked before any
    trial runs, so that no trial's recording is lost."""
    if folder.exists():
        if not folder.is_dir():
            return f"{folder} is not a folder: name a folder for the trials (made if missing)"
        if not os.access(folder, os.W_OK | os.X_OK):
            return f"{folder} is not writable: name a folder the trials can be kept in"
        return None
    # the default is not reached: every path's parents end with "." or "/", which exist
    parent = next((p for p in folder.parents if p.exists()), Path("."))  # pragma: no mutate
    if not parent.is_dir():
        return f"{folder} cannot be made: {parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{folder} cannot be made: {parent} is not writable"
    return None
