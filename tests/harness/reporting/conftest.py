"""Hand-built suite results shared by the reporting tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pytest

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
