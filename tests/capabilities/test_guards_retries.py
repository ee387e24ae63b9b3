"""The time budget bounds the inference retries inside one step: a retry is not attempted once
``max_seconds`` or the ``deadline`` is reached, and the step fails with ``retry_limit``."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentState,
    ExecutionStatus,
    StopReason,
    UseGuards,
    UseLlmConfig,
)
from agentrig.fakes import FakeClock, ScriptedLLM, Turn

BUSY = Turn(error="busy", retryable=True, latency=10.0)
"""An attempt that fails after 10 s of fake time, and may be retried."""


def run(guards: UseGuards | None, clock: FakeClock, *, is_async: bool) -> AgentState:
    llm = ScriptedLLM([BUSY] * 1000)
    builder = (
        AgentBuilder.base().with_clock(clock).with_capability(UseLlmConfig(llm, max_retries=1000))
    )
    if guards is not None:
        builder = builder.with_capability(guards)
    agent = builder.build()
    state = agent.new_state("hi")
    if is_async:
        return asyncio.run(agent.aexecute(state))
    return agent.execute(state)


def attempts(state: AgentState) -> int:
    error = state.errors()[-1]
    return int(error.message.split("after ")[1].split(" attempt")[0])


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize(
    ("limit", "budget"),
    [
        ("max_seconds", lambda clock: {"max_seconds": 30}),
        ("deadline", lambda clock: {"deadline": clock.now() + timedelta(seconds=30)}),
    ],
)
def test_retries_stop_when_the_time_budget_is_reached(
    limit: str, budget: Any, is_async: bool
) -> None:
    clock = FakeClock()
    start = clock.now()
    final = run(UseGuards(**budget(clock)), clock, is_async=is_async)
    # Attempts start at 0, 10 and 20 s; at 30 s the budget is reached and no fourth one starts.
    assert clock.now() - start == timedelta(seconds=30)
    assert final.status() is ExecutionStatus.FAILED
    assert final.last_stop_reason() is StopReason.RETRY_LIMIT
    assert attempts(final) == 3
    message = final.errors()[-1].message
    assert "; no further attempt (" in message
    assert ("Execution time limit" if limit == "max_seconds" else "Deadline") in message
    assert message.endswith(": busy")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_without_a_time_budget_every_retry_is_made(is_async: bool) -> None:
    clock = FakeClock()
    start = clock.now()
    final = run(UseGuards(max_steps=5), clock, is_async=is_async)
    assert clock.now() - start == timedelta(seconds=10_000)
    assert final.last_stop_reason() is StopReason.RETRY_LIMIT
    assert attempts(final) == 1000
    assert "no further attempt" not in final.errors()[-1].message


def test_guards_installed_before_the_provider_bound_its_retries_too() -> None:
    clock = FakeClock()
    agent = (
        AgentBuilder.base()
        .with_clock(clock)
        .with_capability(UseGuards(max_seconds=15))
        .with_capability(UseLlmConfig(ScriptedLLM([BUSY] * 10), max_retries=10))
        .build()
    )
    final = agent.execute(agent.new_state("hi"))
    assert attempts(final) == 2
    assert final.last_stop_reason() is StopReason.RETRY_LIMIT
