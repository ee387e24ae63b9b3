"""Run a scenario agent's loop under an :class:`~agentrig.harness.checks.invariant.InvariantChecker`.

The scenario runner, :func:`~agentrig.harness.property.play.play` and the property state machine
all drive the loop this way: :func:`watch` gives a checker the agent's events, and
:func:`run_checked` iterates one execution, checking every state the loop yields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentrig import AgentLoop, AgentState, InferenceRequest
from agentrig.harness.checks.invariant import Invariant, InvariantChecker, serialize
from agentrig.harness.scenarios.agent_factory import ScenarioAgent

__all__ = ["CheckedRun", "is_terminal", "run_checked", "watch"]


def watch(agent: ScenarioAgent, invariants: Sequence[Invariant]) -> InvariantChecker:
    """A checker of ``agent``'s executions with ``invariants``, fed the agent's events until
    ``agent.close()``."""
    checker = InvariantChecker(
        invariants,
        trace_mode=agent.loop.trace_mode,
        budget=agent.budget,
        next_request=_next_request_of(agent.loop),
    )
    agent.detach.append(agent.loop.events.wiretap(checker.record_event))
    return checker


def _next_request_of(loop: AgentLoop) -> Callable[[AgentState], InferenceRequest | None] | None:
    """``loop.next_request`` when its driver can answer it."""
    return loop.next_request if hasattr(loop.driver, "next_request") else None


def is_terminal(state: AgentState) -> bool:
    """Whether the execution of ``state`` has ended (completed, stopped or failed)."""
    status = state.status()
    return status is not None and status.is_terminal()


@dataclass
class CheckedRun:
    """What :func:`run_checked` saw: the states the loop yielded, and the error that ended the
    iteration early (None when the loop ran to the end or to the limit)."""

    states: list[AgentState] = field(default_factory=list)
    error: Exception | None = None


def run_checked(
    loop: AgentLoop,
    checker: InvariantChecker,
    number: int,
    state: AgentState,
    *,
    limit: int | None = None,
    states: Iterator[AgentState] | None = None,
) -> CheckedRun:
    """Iterate execution ``number`` (1-based) from ``state`` until it ends or ``limit`` states
    were yielded, checking each yielded state; an error the loop raises is returned, not raised.

    A state is checked once the loop has gone on past it, against the snapshot taken when it
    was yielded, so that ``earlier_states_unchanged`` also catches a mutation by the next step.
    The last state is checked as final when the execution ended. ``states`` replaces
    ``loop.iterate(state)`` (the async path, or the states of a stream).
    """
    checker.begin(number, state)
    run = CheckedRun()
    snapshot = ""
    serialized: dict[str, Any] | None = None
    iterator = loop.iterate(state) if states is None else states
    try:
        while limit is None or len(run.states) < limit:
            try:
                item = next(iterator)
            except StopIteration:
                break
            except Exception as error:
                run.error = error
                return run
            if run.states:
                checker.observe(
                    run.states[-1], is_final=False, snapshot=snapshot, serialized=serialized
                )
            run.states.append(item)
            serialized, snapshot = serialize(item)
            if not is_terminal(item):
                checker.foresee(item)  # while the loop waits here, as the next step will find it
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()  # a generator cut at the limit: leave the execution where it is
    if run.states:
        last = run.states[-1]
        checker.observe(last, is_final=is_terminal(last), snapshot=snapshot, serialized=serialized)
    return run
