"""Fixtures for the real-provider tests: the shared recorded cassettes and a real agent loop."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentState,
    InferenceProvider,
    LlmConfig,
    UseContextConfig,
    UseLlmConfig,
    runtime_context,
)
from agentrig.fakes import FakeClock, SeededIds

REAL_CASSETTES = Path(__file__).resolve().parents[3] / "shared" / "cassettes" / "real"
"""Cassettes other projects recorded against the real APIs (read in place, never copied)."""


@pytest.fixture
def real_cassette() -> Callable[[str], Path]:
    """The path of a shared real cassette; skips the test when the shared folder is absent."""
    pytest.importorskip("vcr")

    def find(relative: str) -> Path:
        path = REAL_CASSETTES / relative
        if not path.is_file():
            pytest.skip(f"shared cassette {relative} not available")
        return path

    return find


@pytest.fixture
def run_agent() -> Callable[..., AgentState]:
    """Run one user turn through the real loop with ``provider`` and real tools."""

    def run(
        provider: InferenceProvider,
        user: str,
        tools: Iterable[Callable[..., Any]] = (),
        *,
        system: str = "",
        llm_config: LlmConfig | None = None,
    ) -> AgentState:
        clock, ids = FakeClock(), SeededIds(0)
        builder = (
            AgentBuilder.base()
            .with_clock(clock)
            .with_ids(ids)
            .with_capability(UseLlmConfig(provider, llm_config=llm_config))
            .with_capability(UseContextConfig(system_prompt=system))
            .with_tools(list(tools))
        )
        with runtime_context(clock=clock, ids=ids):
            state = AgentState().with_user_message(user)
        return builder.build().execute(state)

    return run
