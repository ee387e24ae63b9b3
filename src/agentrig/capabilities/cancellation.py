"""``UseCooperativeCancellation``: stop at the next checkpoint once a source is cancelled."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from agentrig.continuation import StopReason, StopSignal
from agentrig.errors import ConfigurationError, InvalidInputError
from agentrig.hooks import HookContext, HookTrigger

if TYPE_CHECKING:
    from agentrig.builder import AgentBuilder

CANCELLATION_PRIORITY = 250


@runtime_checkable
class CancellationSource(Protocol):
    """Answers whether the execution should be cancelled."""

    def stop_signal(self) -> StopSignal | None:
        """A ``user_requested`` signal once cancelled, else None."""
        ...


class CancellationToken:
    """A thread-safe cancellation source: call ``cancel()`` from anywhere."""

    def __init__(self) -> None:
        self._cancelled = threading.Event()
        self._message = ""

    def cancel(self, message: str = "") -> None:
        """Request cancellation; ``message`` says why."""
        if not isinstance(message, str):
            reason = f"expected text, got {type(message).__name__}"
            raise InvalidInputError("CancellationToken.cancel() argument", [("message", reason)])
        self._message = message
        self._cancelled.set()

    def reset(self) -> None:
        """Clear a previous cancellation."""
        self._cancelled.clear()
        self._message = ""

    @property
    def is_cancelled(self) -> bool:
        """True once cancelled."""
        return self._cancelled.is_set()

    def stop_signal(self) -> StopSignal | None:
        """A ``user_requested`` signal once cancelled."""
        if not self._cancelled.is_set():
            return None
        return StopSignal.user_requested(self._message, source="CancellationToken")


class UseCooperativeCancellation:
    """Check ``source`` before the execution and before every step (priority 250).

    Cancelling before execution stops with 0 steps; cancelling during a step stops after it.
    """

    def __init__(self, source: CancellationSource) -> None:
        if isinstance(source, type) or not isinstance(source, CancellationSource):
            raise ConfigurationError(
                "UseCooperativeCancellation needs a CancellationSource (an object with "
                f"stop_signal()), got {source!r}: e.g. token = CancellationToken(), then "
                "UseCooperativeCancellation(token) and token.cancel() to stop"
            )
        self.source = source

    def install(self, builder: AgentBuilder) -> None:
        """Register the cancellation hook."""
        builder.add_hook(
            self._check,
            (HookTrigger.BEFORE_EXECUTION, HookTrigger.BEFORE_STEP),
            CANCELLATION_PRIORITY,
            "guard:cooperative_cancellation",
        )

    def _check(self, context: HookContext) -> HookContext | None:
        signal = self.source.stop_signal()
        if signal is None:
            return None
        if not isinstance(signal, StopSignal):
            raise ConfigurationError(
                f"cancellation source {self.source!r}: stop_signal() returned "
                f"{type(signal).__name__}; it must return None or a StopSignal, e.g. "
                "StopSignal.user_requested(message)"
            )
        present = context.state.continuation().stop_signals
        if any(existing.reason is StopReason.USER_REQUESTED for existing in present):
            return None
        return context.with_state(context.state.with_stop_signal(signal))
