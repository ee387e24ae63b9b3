"""Fixtures for the real-provider tests: the shared recorded cassettes and a real agent loop."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentState,
    InferenceProvider,
    InferenceResponse,
    LlmConfig,
    UseContextConfig,
    UseLlmConfig,
    runtime_context,
)
from agentrig.drivers import Delta
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


@pytest.fixture
def drained() -> Callable[[Generator[Delta, None, InferenceResponse]], tuple[list[Delta], Any]]:
    """Run an ``infer_stream`` generator to its end: the pieces it handed out, and the response
    it returned."""

    def drain(
        pieces: Generator[Delta, None, InferenceResponse],
    ) -> tuple[list[Delta], InferenceResponse]:
        handed: list[Delta] = []
        while True:
            try:
                handed.append(next(pieces))
            except StopIteration as done:
                return handed, done.value

    return drain
