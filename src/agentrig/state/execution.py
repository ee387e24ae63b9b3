"""``ExecutionState``: the transient data of one execution."""

from __future__ import annotations

from datetime import datetime
from typing import Self

from pydantic import Field

from agentrig import clock
from agentrig._model import Serializable, Timestamp
from agentrig.continuation import ExecutionContinuation, StopReason, StopSignal
from agentrig.errors import RetryLimitExceededError
from agentrig.state.status import ExecutionStatus
from agentrig.state.step import AgentStep, StepError, StepExecution, StepExecutions
from agentrig.state.usage import ZERO_USAGE, Usage

# Hot-path enum constants: see "Enum members on the hot path" in docs/architecture.md.
_FAILED = ExecutionStatus.FAILED


class ExecutionState(Serializable):
    """Id, status, timing, completed steps, continuation and the step in progress.

    ``completed_usage`` is the running total of the completed steps, kept so that budgets are
    checked in O(1) per step; ``errors`` holds errors raised outside any step.
    """

    execution_id: str
    status: ExecutionStatus = ExecutionStatus.IN_PROGRESS
    started_at: Timestamp
    completed_at: Timestamp | None = None
    step_executions: StepExecutions = Field(default_factory=StepExecutions)
    continuation: ExecutionContinuation = Field(default_factory=ExecutionContinuation)
    current_step_started_at: Timestamp | None = None
    current_step: AgentStep | None = None
    completed_usage: Usage = ZERO_USAGE
    errors: tuple[StepError, ...] = ()

    @classmethod
    def fresh(cls) -> Self:
        """A new in-progress execution with a new id from the current id factory."""
        return cls._trusted(
            execution_id=clock.new_id("execution"),
            started_at=clock.now(),
            continuation=ExecutionContinuation._trusted(),
        )

    def should_stop(self) -> bool:
        """Stop when failed or on signals (unless continuation was requested); continue while
        tools are called."""
        if self.status is _FAILED or self.continuation.should_stop():
            return True
        if self.continuation.is_continuation_requested:
            return False
        return not (self.current_step is not None and self.current_step.has_tool_calls())

    def step_count(self) -> int:
        """Completed steps, plus one if a step is in progress."""
        # ``to_tuple()``, a plain call: twice a step, cheaper than ``len()`` through ``__len__``
        return len(self.step_executions.to_tuple()) + (self.current_step is not None)

    def usage(self) -> Usage:
        """Usage of every step, the one in progress included."""
        if self.current_step is None:
            return self.completed_usage
        return self.completed_usage + self.current_step.usage()

    def all_errors(self) -> tuple[StepError, ...]:
        """Errors of the execution, of every completed step and of the step in progress."""
        errors = list(self.errors)
        for execution in self.step_executions:
            errors.extend(execution.step.all_errors())
        if self.current_step is not None:
            errors.extend(self.current_step.all_errors())
        return tuple(errors)

    def has_errors(self) -> bool:
        """True when anything failed during the execution."""
        if self.errors or (self.current_step is not None and self.current_step.has_errors()):
            return True
        return any(execution.step.has_errors() for execution in self.step_executions)

    def total_duration(self) -> float:
        """Seconds from start to completion (or to now)."""
        return ((self.completed_at or clock.now()) - self.started_at).total_seconds()

    def with_step_started(self, at: datetime | None = None) -> Self:
        """Mark the start time of the next step (``at``, default now)."""
        continuation = self.continuation
        if continuation.is_continuation_requested:
            continuation = continuation.with_continuation_requested(False)
        return self._replace(current_step_started_at=at or clock.now(), continuation=continuation)

    def with_current_step(self, step: AgentStep) -> Self:
        """Set the step in progress."""
        return self._replace(current_step=step)

    def with_signal(self, signal: StopSignal) -> Self:
        """Add a stop signal."""
        return self._replace(continuation=self.continuation.with_signal(signal))

    def with_continuation_requested(self) -> Self:
        """Ask the loop to continue once despite signals."""
        return self._replace(continuation=self.continuation.with_continuation_requested(True))

    def with_current_step_completed(self, at: datetime | None = None) -> Self:
        """End the step at ``at`` (default now): archive the step in progress, if any, and reset
        the continuation request.

        The request is reset even when the step was aborted before it was recorded, so that it
        never outlives the one evaluation it was made for.
        """
        if self.current_step is None:
            if not self.continuation.is_continuation_requested:
                return self
            return self._replace(continuation=self.continuation.with_continuation_requested(False))
        step = self.current_step
        now = at or clock.now()
        continuation = self.continuation
        if continuation.is_continuation_requested:
            continuation = continuation.with_continuation_requested(False)
        record = StepExecution._trusted(
            id=step.id,
            step=step,
            continuation=continuation,
            started_at=self.current_step_started_at or now,
            completed_at=now,
        )
        return self._replace(
            step_executions=self.step_executions.appended(record),
            current_step=None,
            current_step_started_at=None,
            continuation=continuation,
            completed_usage=self.completed_usage + step.usage(),
        )

    def failed(self, error: BaseException) -> Self:
        """Record ``error``: status failed, a stop signal naming it, the step in progress archived.

        Earlier stop signals are kept (the original runtime dropped them).
        """
        record = StepError.of(error)
        state = self
        if self.current_step is not None:
            state = self._replace(current_step=self.current_step.with_error(record))
        else:
            state = self._replace(errors=(*self.errors, record))
        reason = (
            StopReason.RETRY_LIMIT
            if isinstance(error, RetryLimitExceededError)
            else StopReason.ERROR
        )
        signal = StopSignal(reason=reason, message=record.message, source=record.type)
        state = state.with_signal(signal).with_current_step_completed()
        return state._replace(status=_FAILED, completed_at=clock.now())

    def completed(self) -> Self:
        """Archive the step in progress and set the terminal status (D3)."""
        state = self.with_current_step_completed()
        return state._replace(status=state._terminal_status(), completed_at=clock.now())

    def _terminal_status(self) -> ExecutionStatus:
        if self.status is _FAILED or self.has_errors():
            return _FAILED
        winner = self.continuation.stop_signal()
        if winner is not None and winner.reason.was_force_stopped():
            return ExecutionStatus.STOPPED
        return ExecutionStatus.COMPLETED
