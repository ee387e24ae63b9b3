"""The reference model of the property state machine: what an agent state should hold, computed
by hand from what the machine did, and the oracle that predicts the scripted tools' outcomes."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentrig import (
    AgentState,
    ExecutionBudget,
    ExecutionStatus,
    Role,
    StopReason,
    ToolCall,
    ToolContext,
    TraceMode,
    Usage,
    runtime_context,
)
from agentrig.errors import AgentStop
from agentrig.fakes import FakeClock, SeededIds, Turn
from agentrig.harness.scenarios.agent_factory import scripted_tool
from agentrig.harness.scenarios.model import ToolSpec

__all__ = ["AgentModel", "ToolOracle", "UnpredictableError"]


class ToolOracle:
    """Predicts tool outcomes with shadow copies of the scripted tools (their own clock)."""

    def __init__(self, specs: Mapping[str, ToolSpec], available: Sequence[str]) -> None:
        self.clock = FakeClock()
        self.available = set(available)
        self.tools = {name: scripted_tool(name, spec, self.clock) for name, spec in specs.items()}
        with runtime_context(clock=self.clock, ids=SeededIds(0)):
            self.context = ToolContext(AgentState(), ToolCall(name="oracle"))

    def outcome(self, name: str, arguments: Mapping[str, Any]) -> tuple[str, float] | None:
        """``("ok" | "error" | "stop", seconds)``, or None for a tool the oracle cannot see."""
        tool = self.tools.get(name)
        if tool is None:
            return None if name in self.available else ("error", 0.0)
        before = self.clock.now()
        try:
            tool.invoke(arguments, self.context)
        except AgentStop:
            kind = "stop"
        except Exception:
            kind = "error"
        else:
            kind = "ok"
        return kind, (self.clock.now() - before).total_seconds()


class UnpredictableError(Exception):
    """The model met something it cannot predict (a tool it does not know)."""


@dataclass
class AgentModel:
    """What an agent state should hold, computed by hand from what the machine did.

    It mirrors the loop's rules (DESIGN D2-D4): budgets checked before the execution and
    before every step, a provider error fails the execution, a stopping tool loses its step,
    tool errors are recorded and the loop goes on, an answer without tool calls ends it, and a
    continuation request lets one more step start despite stop signals that are not binding
    (errors, budget and retry limits and cancellation always bind).
    """

    trace_mode: TraceMode
    budget: ExecutionBudget
    user_texts: list[str] = field(default_factory=list)
    conversation: list[tuple[Role, str | None]] = field(default_factory=list)
    executions: int = 0
    status: ExecutionStatus | None = None
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    signals: list[StopReason] = field(default_factory=list)
    errors: bool = False
    continuation: bool = False
    started_at: datetime | None = None

    @property
    def running(self) -> bool:
        """True while an execution is in progress."""
        return self.status is ExecutionStatus.IN_PROGRESS

    def stop_reason(self) -> StopReason | None:
        """The winning signal's reason (lowest priority number)."""
        return min(self.signals, key=lambda reason: reason.priority) if self.signals else None

    def add_user_message(self, text: str) -> None:
        """A user message was appended."""
        self.user_texts.append(text)
        self.conversation.append((Role.USER, text))

    def drop_execution(self) -> None:
        """``for_next_execution()``: the execution is gone, the session stays."""
        self.status, self.steps, self.usage = None, 0, Usage()
        self.signals, self.errors, self.continuation, self.started_at = [], False, False, None

    def run(
        self, turns: Sequence[Turn], *, limit: int | None, clock: FakeClock, tools: ToolOracle
    ) -> int:
        """Predict one ``iterate()`` call playing ``turns``; returns how many turns it consumes."""
        self._enter(clock.now())
        if self._checkpoint(clock.now()):
            self._finish()
            return 0
        consumed = yielded = 0
        while True:
            if self._checkpoint(clock.now()):
                self._finish()
                return consumed
            self.continuation = False  # a request lets one step start, then it is spent
            turn = turns[consumed] if consumed < len(turns) else None
            consumed += turn is not None
            if self._stops_after_step(self._play(turn, clock, tools)):
                self._finish()
                return consumed
            yielded += 1
            if limit is not None and yielded >= limit:
                return consumed

    def _enter(self, now: datetime) -> None:
        if self.status is not None and self.status.is_terminal():
            self.drop_execution()
        self.executions += 1
        if self.status is None:
            self.status, self.started_at = ExecutionStatus.IN_PROGRESS, now

    def _checkpoint(self, now: datetime) -> bool:
        """The budget guard, then the stop decision at a checkpoint."""
        reason = self._exceeded(now)
        if reason is not None and reason not in self.signals:
            self.signals.append(reason)
        if not self.signals:
            return False
        return not self.continuation or any(reason.is_binding() for reason in self.signals)

    def _exceeded(self, now: datetime) -> StopReason | None:
        budget, usage = self.budget, self.usage
        if budget.max_steps is not None and self.steps >= budget.max_steps:
            return StopReason.STEPS_LIMIT
        if budget.max_tokens is not None and usage.total() >= budget.max_tokens:
            return StopReason.TOKEN_LIMIT
        if budget.max_cost is not None and usage.cost >= budget.max_cost:
            return StopReason.TOKEN_LIMIT
        assert self.started_at is not None
        elapsed = (now - self.started_at).total_seconds()
        if budget.max_seconds is not None and elapsed >= budget.max_seconds:
            return StopReason.TIME_LIMIT
        if budget.deadline is not None and now >= budget.deadline:
            return StopReason.TIME_LIMIT
        return None

    def _play(self, turn: Turn | None, clock: FakeClock, tools: ToolOracle) -> bool | None:
        """One step; returns whether it recorded tool calls (None when the execution ends here)."""
        if turn is not None and turn.latency:
            clock.advance(turn.latency)
        if turn is None or turn.error is not None:
            self.errors = True
            self.signals.append(StopReason.ERROR)
            return None
        failed = False
        for spec in turn.calls:
            outcome = tools.outcome(spec.name, dict(spec.arguments))
            if outcome is None:
                raise UnpredictableError(f"cannot predict a call of tool {spec.name!r}")
            kind, seconds = outcome
            clock.advance(seconds)
            if kind == "stop":  # the step is recorded; the calls after this one do not run
                self._record_step(turn, failed)
                self.signals.append(StopReason.STOP_REQUESTED)
                return None
            failed = failed or kind == "error"
        self._record_step(turn, failed)
        return bool(turn.calls)

    def _record_step(self, turn: Turn, failed: bool) -> None:
        self.steps += 1
        self.usage = self.usage + turn.usage
        self.errors = self.errors or failed
        final = not turn.calls and not failed
        if (self.trace_mode is TraceMode.INLINE or final) and (turn.text or turn.calls):
            self.conversation.append((Role.ASSISTANT, turn.text if final else None))
        if self.trace_mode is TraceMode.INLINE:
            self.conversation.extend((Role.TOOL, None) for _ in turn.calls)

    def _stops_after_step(self, has_calls: bool | None) -> bool:
        """After a step: a failure, a stopping tool, a signal, or an answer without tool calls
        ends the execution."""
        if has_calls is None:
            return True
        stop = bool(self.signals) or not has_calls
        if stop and not self.signals:
            self.signals.append(StopReason.COMPLETED)
        return stop

    def _finish(self) -> None:
        reason = self.stop_reason()
        if self.errors:
            self.status = ExecutionStatus.FAILED
        elif reason is not None and reason.was_force_stopped():
            self.status = ExecutionStatus.STOPPED
        else:
            self.status = ExecutionStatus.COMPLETED

    def mismatches(self, state: AgentState, *, exact: bool) -> Iterator[str]:
        """How ``state`` differs from the model (only the basics unless ``exact``)."""
        users = [m.content for m in state.messages() if m.role is Role.USER]
        if users != self.user_texts:
            yield f"user messages are {users!r}, expected {self.user_texts!r}"
        if state.execution_count != self.executions:
            yield f"execution_count is {state.execution_count}, expected {self.executions}"
        if exact:
            yield from self._exact_mismatches(state)

    def _exact_mismatches(self, state: AgentState) -> Iterator[str]:
        checks: list[tuple[str, object, object]] = [
            ("status", state.status(), self.status),
            ("step count", state.step_count(), self.steps),
            ("total tokens", state.usage().total(), self.usage.total()),
            ("conversation", _conversation(state), self.conversation),
        ]
        if self.status is not None and self.status.is_terminal():
            checks.append(("stop reason", state.last_stop_reason(), self.stop_reason()))
        for what, actual, expected in checks:
            if actual != expected:
                yield f"{what} is {actual!r}, expected {expected!r}"
        if not math.isclose(state.usage().cost, self.usage.cost, abs_tol=1e-9):
            yield f"cost is {state.usage().cost}, expected {self.usage.cost}"


def _conversation(state: AgentState) -> list[tuple[Role, str | None]]:
    """``messages`` as (role, text): text for users and final answers, None for traces."""
    return [
        (m.role, m.content if m.role is Role.USER or not m.is_trace else None)
        for m in state.messages()
    ]
