"""Enums of the state model."""

from __future__ import annotations

from enum import StrEnum


class ExecutionStatus(StrEnum):
    """Lifecycle of one execution (D3). ``AgentState.status()`` is None between executions."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    STOPPED = "stopped"
    FAILED = "failed"

    def is_terminal(self) -> bool:
        """True for completed, stopped and failed."""
        return self in (ExecutionStatus.COMPLETED, ExecutionStatus.STOPPED, ExecutionStatus.FAILED)


class AgentStepType(StrEnum):
    """What a step was; derived from its contents, never stored."""

    TOOL_EXECUTION = "tool_execution"
    FINAL_RESPONSE = "final_response"
    ERROR = "error"


class TraceMode(StrEnum):
    """Where a step's trace messages go (D1)."""

    SEPARATED = "separated"
    """Traces go to the ``execution_buffer`` section, cleared when the execution ends (default)."""
    INLINE = "inline"
    """Everything goes to ``messages``; the default compiler hides earlier executions' traces."""


class FinishReason(StrEnum):
    """Why the model stopped generating."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"
    OTHER = "other"
