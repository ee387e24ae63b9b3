"""What a live scenario's run reports: the verdict with its intervals and metrics, the costs by
role, the trials set aside and why, and each trial. Plain data, part of every report (as
:mod:`~agentrig.harness.results`, which holds it)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue

__all__ = [
    "CriterionRecord",
    "LiveCost",
    "LiveResult",
    "MetricRecord",
    "TrialRecord",
]

VerdictName = Literal["PASS", "FAIL", "INCONCLUSIVE"]


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MetricRecord(_Data):
    """A metric's estimate from the counted trials and its interval (None when ``k`` exceeds
    the trials)."""

    metric: str
    value: float | None
    low: float | None
    high: float | None


class LiveCost(_Data):
    """USD spent, by role, over every trial run (counted, set aside or discarded)."""

    agent: float
    user: float
    judge: float
    total: float
    per_success: float | None
    """The total over the counted successes (None without a success)."""


class CriterionRecord(_Data):
    """How a criterion was decided in one trial."""

    id: str
    kind: str
    outcome: str
    detail: str
    votes: tuple[str, ...] = ()


class TrialRecord(_Data):
    """One trial: how it ended, whether it counts toward the verdict, what it cost."""

    index: int
    attempt: int
    seed: int
    status: Literal["success", "failure", "set_aside"]
    counted: bool
    reason: str
    set_aside: str | None = None
    criteria: tuple[CriterionRecord, ...] = ()
    cost: dict[str, float]
    calls: dict[str, int]
    replayed: bool
    transcript: tuple[str, ...] = ()
    """The conversation, for failed and set-aside trials (empty for successes)."""


class LiveResult(_Data):
    """A live scenario's verdict and everything it was drawn from."""

    verdict: VerdictName
    reason: str
    partial: str | None = None
    """Why the trials stopped before a verdict could be reached (the budget, an interrupt, too
    many trials set aside); None when they ran as planned."""
    metric: str
    at_least: float
    confidence: float
    threshold: float
    """The success rate the requirement implies (pass^k >= x: x ** (1 / k))."""
    decided_by: Literal["sequential", "interval"]
    trials: int
    """Trials counted toward the verdict."""
    successes: int
    rate: float | None
    wilson: tuple[float, float]
    exact: tuple[float, float]
    metrics: tuple[MetricRecord, ...]
    cost: LiveCost
    set_aside: dict[str, int]
    """Trials set aside, by why (``user_mistake:empty_message``, ``infrastructure``, ...)."""
    discarded: int
    """Trials that finished after the verdict was reached (run, paid, not counted)."""
    model_calls: dict[str, int]
    """Model calls sent by role (replayed ones not included)."""
    replayed_trials: int
    records: tuple[TrialRecord, ...]
    extra: dict[str, JsonValue] = {}
