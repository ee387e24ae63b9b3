"""Hand-built suite results shared by the reporting tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pytest

from agentrig.harness.live_results import (
    CriterionRecord,
    LiveCost,
    LiveResult,
    MetricRecord,
    TrialRecord,
)
from agentrig.harness.results import (
    Failure,
    InvariantOutcome,
    ScenarioResult,
    SuiteResult,
    TranscriptEntry,
    TurnResult,
)

XSS = "<script>alert(1)</script>"
PWN_SCRIPT = "<script>document.body.setAttribute('data-pwned', 'script')</script>"
PWN_IMG = "<img src=x onerror=\"document.body.setAttribute('data-pwned', 'img')\">"


class Payloads(NamedTuple):
    """Markup hidden in the suite's text; a report must show it as text, never run it."""

    xss: str = XSS
    pwn_script: str = PWN_SCRIPT
    pwn_img: str = PWN_IMG


def _weather(wall: float) -> ScenarioResult:
    transcript = (
        TranscriptEntry(
            turn=1, step=None, kind="system", role="system", text="You answer weather."
        ),
        TranscriptEntry(turn=1, step=None, kind="user", role="user", text="Weather in Paris?"),
        TranscriptEntry(
            turn=1,
            step=1,
            kind="tool_call",
            role="assistant",
            text="",
            name="get_weather",
            args={"units": "C", "city": "Paris"},
        ),
        TranscriptEntry(
            turn=1, step=1, kind="tool_result", role="tool", text="sunny, 21C", name="get_weather"
        ),
        TranscriptEntry(
            turn=1,
            step=2,
            kind="tool_result",
            role="tool",
            text="service unavailable",
            name="get_weather",
            is_error=True,
            section="retry",
        ),
        TranscriptEntry(turn=1, step=3, kind="assistant", role="assistant", text="Paris is sunny."),
        TranscriptEntry(turn=1, step=3, kind="stop", role=None, text="end_turn"),
    )
    turn = TurnResult(
        index=1,
        user="Weather in Paris?",
        status="completed",
        stop_reason="end_turn",
        steps=3,
        final_response="Paris is sunny.",
        usage={"output": 8, "input": 40},
        cost=0.00012,
    )
    return ScenarioResult(
        name="weather-two-cities",
        file="scenarios/weather.scenario.yaml",
        line=3,
        tags=("tools", "buffer"),
        description="Two cities, one tool error.",
        passed=True,
        turns=(turn,),
        failures=(),
        transcript=transcript,
        wall_time_s=wall,
        invariants=(InvariantOutcome(name="tool_calls_paired", checks=4, failures=0),),
    )


def _budget(wall: float) -> ScenarioResult:
    turns = tuple(
        TurnResult(
            index=i,
            user=f"question {i}",
            status=status,
            stop_reason=reason,
            steps=2,
            final_response="",
            usage={},
            cost=0.0,
        )
        for i, status, reason in [(1, "completed", "end_turn"), (2, "stopped", "max_steps")]
    )
    failures = (
        Failure(
            kind="expectation",
            message="stop reason differs | see\nturn 2",
            turn=2,
            step=2,
            field="stop_reason",
            expected="end_turn",
            observed="max_steps",
            location="scenarios/budget/limits.scenario.yaml:17",
        ),
        Failure(
            kind="invariant",
            message="budget exceeded",
            turn=2,
            step=2,
            invariant="budget_respected",
            expected={"max_steps": 2},
            observed={"steps": 3},
        ),
    )
    return ScenarioResult(
        name="budget-exceeded",
        file="scenarios/budget/limits.scenario.yaml",
        line=1,
        tags=("budget",),
        description="Steps run out.",
        passed=False,
        turns=turns,
        failures=failures,
        transcript=(),
        wall_time_s=wall,
        invariants=(InvariantOutcome(name="budget_respected", checks=5, failures=1),),
    )


def _xss(wall: float) -> ScenarioResult:
    transcript = (
        TranscriptEntry(turn=1, step=None, kind="user", role="user", text=XSS),
        TranscriptEntry(turn=1, step=1, kind="assistant", role="assistant", text=PWN_IMG),
    )
    return ScenarioResult(
        name="xss-probe",
        file="scenarios/xss.scenario.yaml",
        line=None,
        tags=("security", "pipe|tag"),
        description=f"{PWN_SCRIPT} {PWN_IMG} {XSS}",
        passed=False,
        turns=(),
        transcript=transcript,
        invariants=(),
        wall_time_s=wall,
        failures=(Failure(kind="error", message=f"crashed: {XSS}", observed=XSS),),
    )


def build_suite(walls: tuple[float, float, float, float] = (2.5, 0.5, 1.25, 0.75)) -> SuiteResult:
    """Three scenarios (one passing, two failing) with the given suite and scenario wall times."""
    scenarios = (_weather(walls[1]), _budget(walls[2]), _xss(walls[3]))
    return SuiteResult(scenarios=scenarios, wall_time_s=walls[0])


@pytest.fixture
def suite() -> SuiteResult:
    """The standard three-scenario suite."""
    return build_suite()


@pytest.fixture
def payloads() -> Payloads:
    """The markup placed in the ``xss-probe`` scenario."""
    return Payloads()


@pytest.fixture
def make_suite() -> Callable[..., SuiteResult]:
    """``build_suite`` itself, to vary wall times."""
    return build_suite


# --- live scenarios -------------------------------------------------------------------------

LONG_TRANSCRIPT = tuple(f"USER: message {i}" for i in range(75))
FENCE_TRANSCRIPT = ("USER: show code", "AGENT: ```python\nprint(1)\n```", f"AGENT: {XSS}")


def _trial(
    index: int,
    status: str,
    *,
    attempt: int = 0,
    counted: bool | None = None,
    reason: str = "",
    set_aside: str | None = None,
    transcript: tuple[str, ...] = (),
    replayed: bool = False,
    cost: float = 0.001,
) -> TrialRecord:
    default = {"success": "every criterion met", "failure": "refund: the amount is wrong"}
    criteria = (
        CriterionRecord(
            id="refund",
            kind="rubric",
            outcome="met" if status == "success" else "not_met",
            detail="the agent refunded $40" if status == "success" else f"refunded $400 {XSS}",
            votes=("met", "met", "not_met") if status == "success" else ("not_met",) * 3,
        ),
    )
    shown = transcript or (
        () if status == "success" else (f"USER: refund order {index}", "AGENT: done")
    )
    return TrialRecord(
        index=index,
        attempt=attempt,
        seed=1000 + 10 * index + attempt,
        status=status,  # type: ignore[arg-type]
        counted=status != "set_aside" if counted is None else counted,
        reason=reason or default.get(status, "set aside"),
        set_aside=set_aside,
        criteria=() if status == "set_aside" else criteria,
        cost={"judge": cost / 2, "agent": cost * 2, "user": cost},
        calls={"user": 2, "judge": 3, "agent": 2},
        replayed=replayed,
        transcript=shown,
    )


def _metrics(*rows: tuple[str, float | None, float, float]) -> tuple[MetricRecord, ...]:
    return tuple(MetricRecord(metric=m, value=v, low=lo, high=hi) for m, v, lo, hi in rows)


def live_pass() -> LiveResult:
    """19 of 20 trials succeed against rate >= 0.8; one failure, one trial set aside and run
    again, five replayed."""
    records = [_trial(i, "success", replayed=i < 5) for i in range(20) if i != 7]
    records.append(_trial(7, "failure"))
    records.append(
        _trial(12, "set_aside", set_aside="user_mistake:empty_message", reason="empty message")
    )
    records = [
        r.model_copy(update={"attempt": 1}) if r.index == 12 and r.status == "success" else r
        for r in records
    ]
    records.sort(key=lambda r: (r.index, r.attempt))
    return LiveResult(
        verdict="PASS",
        reason="the exact 95% interval [0.751, 0.999] lies above the threshold 0.800",
        metric="rate",
        at_least=0.8,
        confidence=0.95,
        threshold=0.8,
        decided_by="sequential",
        trials=20,
        successes=19,
        rate=0.95,
        wilson=(0.7639, 0.9911),
        exact=(0.7513, 0.9987),
        metrics=_metrics(
            ("rate", 0.95, 0.7513, 0.9987),
            ("pass^1", 0.95, 0.7513, 0.9987),
            ("pass@1", 0.95, 0.7513, 0.9987),
            ("pass^3", 0.85, 0.4241, 0.9961),
            ("pass@3", 1.0, 0.9857, 1.0),
        ),
        cost=LiveCost(agent=0.042, user=0.021, judge=0.0105, total=0.0735, per_success=0.0735 / 19),
        set_aside={"user_mistake:empty_message": 1},
        discarded=0,
        model_calls={"user": 30, "judge": 63, "agent": 28},
        replayed_trials=5,
        records=tuple(records),
    )


def live_fail() -> LiveResult:
    """3 of 10 against pass^3 >= 0.9: five failures (one long, one with backticks and markup),
    two trials set aside, one discarded; pass^20 cannot be estimated from 10 trials."""
    outcomes = ["success", "failure", "failure", "success", "failure", "failure", "success"]
    outcomes += ["failure", "failure", "failure"]
    transcripts = {1: LONG_TRANSCRIPT, 2: FENCE_TRANSCRIPT}
    records = [  # trials 4 and 9 run again after being set aside
        _trial(i, status, attempt=int(i in (4, 9)), transcript=transcripts.get(i, ()))
        for i, status in enumerate(outcomes)
    ]
    records += [
        _trial(4, "set_aside", attempt=0, set_aside="infrastructure", reason="HTTP 529"),
        _trial(9, "set_aside", attempt=0, set_aside="user_mistake:empty_message"),
        _trial(10, "failure", counted=False),
    ]
    return LiveResult(
        verdict="FAIL",
        reason="the exact 95% interval [0.067, 0.652] lies below the threshold 0.965",
        metric="pass^3",
        at_least=0.9,
        confidence=0.95,
        threshold=0.9 ** (1 / 3),
        decided_by="interval",
        trials=10,
        successes=3,
        rate=0.3,
        wilson=(0.1078, 0.6032),
        exact=(0.0667, 0.6525),
        metrics=_metrics(
            ("rate", 0.3, 0.0667, 0.6525),
            ("pass^3", 1 / 120, 0.0003, 0.2778),
            ("pass@3", 0.7083, 0.1870, 0.9573),
            ("pass^20", None, 0.0, 0.0002),
            ("pass@20", None, 0.7490, 1.0),
        ),
        cost=LiveCost(agent=0.026, user=0.013, judge=0.0065, total=0.0455, per_success=0.0455 / 3),
        set_aside={"user_mistake:empty_message": 1, "infrastructure": 1},
        discarded=1,
        model_calls={"agent": 26, "user": 26, "judge": 39},
        replayed_trials=0,
        records=tuple(sorted(records, key=lambda r: (r.index, r.attempt))),
    )


def live_inconclusive() -> LiveResult:
    """Stopped by the budget after 4 counted trials (2 successes) against rate >= 0.7."""
    records = [_trial(i, s) for i, s in enumerate(["success", "failure", "success", "failure"])]
    records.append(_trial(4, "set_aside", set_aside="budget", reason="the budget is spent"))
    return LiveResult(
        verdict="INCONCLUSIVE",
        reason="partial: the budget is spent after 4 counted trial(s); the exact 95% interval "
        "[0.068, 0.932] contains the threshold 0.700",
        partial="the budget is spent",
        metric="rate",
        at_least=0.7,
        confidence=0.95,
        threshold=0.7,
        decided_by="interval",
        trials=4,
        successes=2,
        rate=0.5,
        wilson=(0.15, 0.85),
        exact=(0.0676, 0.9324),
        metrics=_metrics(("rate", 0.5, 0.0676, 0.9324)),
        cost=LiveCost(agent=0.01, user=0.005, judge=0.0025, total=0.0175, per_success=0.00875),
        set_aside={"budget": 1},
        discarded=0,
        model_calls={"agent": 10, "user": 10, "judge": 15},
        replayed_trials=0,
        records=tuple(records),
    )


def live_no_success() -> LiveResult:
    """0 of 6 against pass@2 >= 0.9: no cost per success."""
    return LiveResult(
        verdict="FAIL",
        reason="the exact 90% interval [0.000, 0.393] lies below the threshold 0.684",
        metric="pass@2",
        at_least=0.9,
        confidence=0.9,
        threshold=1 - 0.1**0.5,
        decided_by="sequential",
        trials=6,
        successes=0,
        rate=0.0,
        wilson=(0.0, 0.3109),
        exact=(0.0, 0.3930),
        metrics=_metrics(("rate", 0.0, 0.0, 0.393), ("pass@2", 0.0, 0.0, 0.6314)),
        cost=LiveCost(agent=0.0, user=0.0, judge=0.0, total=0.0, per_success=None),
        set_aside={},
        discarded=0,
        model_calls={},
        replayed_trials=6,
        records=tuple(_trial(i, "failure", replayed=True, cost=0.0) for i in range(6)),
    )


def live_scenario(name: str, live: LiveResult, wall: float = 3.5) -> ScenarioResult:
    """A live scenario's result, as the live suite runner builds it."""
    failures: tuple[Failure, ...] = ()
    if live.verdict != "PASS":
        failures = (
            Failure(
                kind="verdict",
                message=f"{live.verdict}: {live.reason}",
                field="trials.require",
                expected=f"{live.metric} >= {live.at_least}",
                observed=f"{live.successes}/{live.trials} successes",
                location=f"scenarios/live/{name}.scenario.yaml:9",
            ),
        )
    return ScenarioResult(
        name=name,
        file=f"scenarios/live/{name}.scenario.yaml",
        line=1,
        tags=("live",),
        description="",
        passed=not failures,
        turns=(),
        failures=failures,
        invariants=(),
        transcript=(),
        wall_time_s=wall,
        live=live,
    )


def build_live_suite(walls: tuple[float, ...] = (9.0, 0.5, 1.5, 2.5, 3.5, 4.5)) -> SuiteResult:
    """A scripted scenario that passes, then live ones: PASS, FAIL, INCONCLUSIVE (partial) and a
    FAIL without any success."""
    scenarios = (
        _weather(walls[1]),
        live_scenario("refund-pass", live_pass(), walls[2]),
        live_scenario("refund-fail", live_fail(), walls[3]),
        live_scenario("refund-budget", live_inconclusive(), walls[4]),
        live_scenario("refund-never", live_no_success(), walls[5]),
    )
    return SuiteResult(scenarios=scenarios, wall_time_s=walls[0])


@pytest.fixture
def live_suite() -> SuiteResult:
    """The live suite: one scripted scenario and four live ones."""
    return build_live_suite()
