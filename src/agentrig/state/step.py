"""``AgentStep`` (what happened in one driver call) and ``StepExecution`` (when, and the verdict)."""

from __future__ import annotations

from typing import Self

from pydantic import Field

from agentrig import clock
from agentrig._model import FrozenList, Serializable, Timestamp
from agentrig.continuation import ExecutionContinuation
from agentrig.messages import Messages, ToolCall
from agentrig.state.inference import InferenceResponse
from agentrig.state.status import AgentStepType, FinishReason
from agentrig.state.tool_execution import ToolExecutions
from agentrig.state.usage import Usage


class StepError(Serializable):
    """An error recorded in a step or an execution: its message and exception type name."""

    message: str
    type: str = "Exception"

    @classmethod
    def of(cls, error: BaseException) -> Self:
        """The record of ``error``."""
        return cls(message=str(error) or type(error).__name__, type=type(error).__name__)

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


class AgentStep(Serializable):
    """An immutable snapshot of one step.

    ``errors`` holds the step's own errors; ``all_errors()`` adds its failed tool executions.
    The step type is derived from the contents (seed 002).
    """

    id: str = Field(default_factory=lambda: clock.new_id("step"))
    input_messages: Messages = Field(default_factory=Messages)
    output_messages: Messages = Field(default_factory=Messages)
    inference_response: InferenceResponse = Field(default_factory=InferenceResponse)
    tool_executions: ToolExecutions = Field(default_factory=ToolExecutions)
    errors: tuple[StepError, ...] = ()

    def step_type(self) -> AgentStepType:
        """Error if anything failed, else tool execution if tools were requested, else final."""
        if self.errors or self.tool_executions.has_errors():
            return AgentStepType.ERROR
        if self.inference_response.tool_calls:
            return AgentStepType.TOOL_EXECUTION
        return AgentStepType.FINAL_RESPONSE

    def all_errors(self) -> tuple[StepError, ...]:
        """Failed tool executions first, then the step's own errors."""
        tool_errors = tuple(
            StepError(message=execution.error, type=execution.error_type or "ToolError")
            for execution in self.tool_executions
            if execution.error is not None
        )
        return tool_errors + self.errors

    def has_errors(self) -> bool:
        """True when the step or one of its tool executions failed."""
        return bool(self.errors) or self.tool_executions.has_errors()

    def has_tool_calls(self) -> bool:
        """True when the model requested tool calls."""
        return bool(self.inference_response.tool_calls)

    def requested_tool_calls(self) -> tuple[ToolCall, ...]:
        """Tool calls the model asked for."""
        return self.inference_response.tool_calls

    def executed_tool_calls(self) -> tuple[ToolCall, ...]:
        """Tool calls that were executed (or blocked), in order."""
        return tuple(execution.tool_call for execution in self.tool_executions)

    def usage(self) -> Usage:
        """Inference usage plus what the tools consumed (subagents)."""
        return self.inference_response.usage + self.tool_executions.usage()

    def finish_reason(self) -> FinishReason | None:
        """The model's finish reason."""
        return self.inference_response.finish_reason

    def with_error(self, error: StepError) -> Self:
        """A copy with ``error`` added (same id)."""
        return self.evolve(errors=(*self.errors, error))


class StepExecution(Serializable):
    """A completed step with its timing and the continuation at completion time."""

    id: str
    step: AgentStep
    continuation: ExecutionContinuation = Field(default_factory=ExecutionContinuation)
    started_at: Timestamp
    completed_at: Timestamp

    def duration(self) -> float:
        """Seconds the step took."""
        return (self.completed_at - self.started_at).total_seconds()

    def usage(self) -> Usage:
        """The step's usage."""
        return self.step.usage()


class StepExecutions(FrozenList[StepExecution]):
    """Completed steps, oldest first."""

    __slots__ = ()
    item_type = StepExecution

    def steps(self) -> tuple[AgentStep, ...]:
        """The steps themselves."""
        return tuple(execution.step for execution in self)
