"""Stop signals and continuation: the values that explain why the loop goes on or stops."""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from pydantic import Field, StrictBool

from agentrig._model import FrozenList, JsonObject, Serializable
from agentrig.errors import AgentStop


class StopReason(StrEnum):
    """Why an execution stopped. Lower ``priority`` wins when several signals are present (D2)."""

    ERROR = "error"
    STOP_REQUESTED = "stop_requested"
    STEPS_LIMIT = "steps_limit"
    TOKEN_LIMIT = "token_limit"
    TIME_LIMIT = "time_limit"
    RETRY_LIMIT = "retry_limit"
    FINISH_REASON = "finish_reason"
    USER_REQUESTED = "user_requested"
    COMPLETED = "completed"
    UNKNOWN = "unknown"

    @property
    def priority(self) -> int:
        """0 (error) is the highest priority, 9 (unknown) the lowest."""
        return _PRIORITY[self]

    def was_force_stopped(self) -> bool:
        """False only for natural endings: ``completed`` and ``finish_reason``."""
        return self not in (StopReason.COMPLETED, StopReason.FINISH_REASON)

    def is_binding(self) -> bool:
        """True when no continuation request can override it: errors, budget and retry limits,
        and the user's cancellation (DESIGN D4: budgets are enforced)."""
        return self in _BINDING


_PRIORITY = {reason: index for index, reason in enumerate(StopReason)}
_BINDING = frozenset(
    {
        StopReason.ERROR,
        StopReason.STEPS_LIMIT,
        StopReason.TOKEN_LIMIT,
        StopReason.TIME_LIMIT,
        StopReason.RETRY_LIMIT,
        StopReason.USER_REQUESTED,
    }
)


class StopSignal(Serializable):
    """A request to stop, with its reason, a message, context and the name of its source."""

    reason: StopReason
    message: str = ""
    context: JsonObject = Field(default_factory=dict)
    source: str | None = None

    @classmethod
    def user_requested(cls, message: str = "", source: str | None = None) -> Self:
        """A ``user_requested`` signal, as cancellation produces."""
        return cls(reason=StopReason.USER_REQUESTED, message=message, source=source)

    @classmethod
    def requested_by(cls, stop: AgentStop) -> Self:
        """The ``stop_requested`` signal an :class:`~agentrig.errors.AgentStop` stands for."""
        return cls(
            reason=StopReason.STOP_REQUESTED,
            message=stop.stop_message,
            context=stop.context,
            source=stop.source,
        )

    def outranks(self, other: StopSignal) -> bool:
        """True when this signal has a strictly higher priority than ``other``."""
        return self.reason.priority < other.reason.priority

    def __str__(self) -> str:
        return f"{self.reason.value}: {self.message}" if self.message else self.reason.value


class StopSignals(FrozenList[StopSignal]):
    """An insertion-ordered list of stop signals."""

    __slots__ = ()
    item_type = StopSignal

    def highest(self) -> StopSignal | None:
        """The signal with the highest priority; on a tie, the first inserted."""
        best: StopSignal | None = None
        for signal in self:
            if best is None or signal.outranks(best):
                best = signal
        return best

    def has_any(self) -> bool:
        """True when there is at least one signal."""
        return bool(self)

    def __str__(self) -> str:
        return " | ".join(str(signal) for signal in self)


class ExecutionContinuation(Serializable):
    """Stop signals gathered during an execution, and whether a hook asked to continue anyway.

    A continuation request overrides the signals for one evaluation: it is reset when the step is
    archived, while the signals stay for the whole execution (D2). It cannot override a binding
    signal (an error, a budget limit, the user's cancellation): budgets are enforced (D4).
    """

    stop_signals: StopSignals = Field(default_factory=StopSignals)
    is_continuation_requested: StrictBool = False

    def should_stop(self) -> bool:
        """True when there is a binding signal, or a signal and no continuation request."""
        if not self.stop_signals.to_tuple():  # a plain call: twice a step, cheaper than bool()
            return False
        if not self.is_continuation_requested:
            return True
        return any(signal.reason.is_binding() for signal in self.stop_signals)

    def stop_signal(self) -> StopSignal | None:
        """The winning signal."""
        return self.stop_signals.highest()

    def with_signal(self, signal: StopSignal) -> Self:
        """A copy with ``signal`` added."""
        return self._replace(stop_signals=self.stop_signals.appended(signal))

    def with_continuation_requested(self, requested: bool = True) -> Self:
        """A copy with the continuation flag set to ``requested``."""
        if requested == self.is_continuation_requested:
            return self
        return self._replace(is_continuation_requested=requested)

    def explain(self) -> str:
        """A one-line human summary."""
        requested = "Yes" if self.is_continuation_requested else "No"
        if not self.stop_signals:
            return f"No Stop Signals; Continuation Requested: {requested}"
        return f"Stop Signals: {self.stop_signals}; Continuation Requested: {requested}"
