"""The driver seam: a driver runs one step of the agent (inference plus tool use)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agentrig._frozen import fast_init
from agentrig.continuation import StopSignal
from agentrig.events import EventBus
from agentrig.hooks import HookStack
from agentrig.state import AgentState, TraceMode
from agentrig.tools import ToolExecutor, Tools

RetryCheck = Callable[[AgentState], StopSignal | None]
"""Asked before a retried inference attempt: a ``StopSignal`` means no retry (see
``AgentBuilder.add_retry_check``)."""


@fast_init
@dataclass(frozen=True)  # no slots: fast_init then stores the fields in one write (see there)
class StepRuntime:
    """What the loop lends a driver for one step."""

    tools: Tools
    executor: ToolExecutor
    hooks: HookStack
    events: EventBus
    trace_mode: TraceMode
    step_number: int
    streaming: bool = False
    """True in runs through ``AgentLoop.stream``/``astream``: ask a streaming provider for the
    answer in pieces (``InferenceDelta`` events)."""
    retry_checks: tuple[RetryCheck, ...] = ()
    """Asked before each retried inference attempt; a signal from one means no retry."""
    direct: bool = False
    """True in runs through ``AgentLoop.execute``/``iterate``: the step performs each effect
    with a plain call where it arises (``effect.perform()``) instead of yielding it, so its
    generator yields nothing (see ``agentrig._effects``)."""


@runtime_checkable
class Driver(Protocol):
    """Runs one step: returns the state with the step set via ``state.with_current_step``."""

    def use_tools(self, state: AgentState, runtime: StepRuntime) -> AgentState:
        """Perform one step."""
        ...
