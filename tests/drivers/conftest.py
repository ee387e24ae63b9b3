"""Fixtures for the real-provider tests: the shared recorded cassettes and a real agent loop."""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
