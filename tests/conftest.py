"""Shared fixtures for the runtime tests: a fake clock, seeded ids and an agent factory."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

from agentrig import (
    AgentBuilder,
    AgentCapability,
    AgentLoop,
    AgentState,
    EventBus,
    HookTrigger,
    InferenceProvider,
    Tool,
    UseLlmConfig,
    runtime_context,
)
from agentrig.fakes import FakeClock, SeededIds

R = TypeVar("R")

HANG_BOUND_S = 60.0
"""How long a call may take before ``within_bound`` calls it a hang: far beyond any honest run
on a busy machine, far below the hours a hang takes. Not a speed check."""

HookSpec = tuple[Callable[..., Any], HookTrigger | str | Iterable[HookTrigger | str], int]


class MakeAgent(Protocol):
    def __call__(
        self,
        llm: InferenceProvider,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *capabilities: AgentCapability,
        hooks: Iterable[HookSpec] = (),
        events: EventBus | None = None,
        inline: bool = False,
        max_retries: int = 1,
    ) -> AgentLoop: ...


class Start(Protocol):
    def __call__(self, text: str = ..., **fields: Any) -> AgentState: ...


class Bounded(Protocol):
    def __call__(self, call: Callable[[], R], seconds: float = ...) -> R: ...


@pytest.fixture
def bounded() -> Bounded:
    """``bounded(call)``: see :func:`within_bound`."""
    return within_bound


def within_bound(call: Callable[[], R], seconds: float = HANG_BOUND_S) -> R:
    """``call()``'s result (or its exception), failing the test if it has not returned after
    ``seconds``: a regression test of a hang fails instead of hanging the suite. The call runs
    in a daemon thread, left behind if it hangs."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:
            outcome.append((False, error))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if not outcome:
        pytest.fail(f"still running after {seconds:.0f} s: a hang", pytrace=False)
    returned, value = outcome[0]
    if not returned:
        raise value
    return value  # type: ignore[no-any-return]


REAL_CASSETTES = Path(__file__).resolve().parents[2] / "shared" / "cassettes" / "real"
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
def clock() -> FakeClock:
    """Time that moves only when a turn, a tool or the test advances it."""
    return FakeClock()


@pytest.fixture
def ids() -> SeededIds:
    """Reproducible ids."""
    return SeededIds(7)


@pytest.fixture
def make_agent(clock: FakeClock, ids: SeededIds) -> MakeAgent:
    """Build an ``AgentLoop`` on the real driver, executor and hooks around a fake provider."""

    def make(
        llm: InferenceProvider,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *capabilities: AgentCapability,
        hooks: Iterable[HookSpec] = (),
        events: EventBus | None = None,
        inline: bool = False,
        max_retries: int = 1,
    ) -> AgentLoop:
        builder = (
            AgentBuilder.base()
            .with_clock(clock)
            .with_ids(ids)
            .with_capability(UseLlmConfig(llm, max_retries=max_retries))
            .with_tools(list(tools))
            .with_separated_tool_trace(not inline)
        )
        if events is not None:
            builder.with_events(events)
        for capability in capabilities:
            builder.with_capability(capability)
        for hook, triggers, priority in hooks:
            builder.add_hook(hook, triggers, priority)
        return builder.build()

    return make


@pytest.fixture
def start(clock: FakeClock, ids: SeededIds) -> Start:
    """A fresh state holding one user message, created on the test's clock and ids."""

    def make(text: str = "Hello", **fields: Any) -> AgentState:
        with runtime_context(clock=clock, ids=ids):
            return AgentState(**fields).with_user_message(text)

    return make
