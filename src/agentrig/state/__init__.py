"""The state model: ``AgentState`` and everything it holds (seed 002)."""

from agentrig.state.agent_state import AgentState, message_tags
from agentrig.state.context import AgentContext
from agentrig.state.execution import ExecutionState
from agentrig.state.inference import InferenceRequest, InferenceResponse, LlmConfig, ToolSchema
from agentrig.state.status import AgentStepType, ExecutionStatus, FinishReason, TraceMode
from agentrig.state.step import AgentStep, StepError, StepExecution, StepExecutions
from agentrig.state.tool_execution import ToolExecution, ToolExecutions
from agentrig.state.usage import Usage

__all__ = [
    "AgentContext",
    "AgentState",
    "AgentStep",
    "AgentStepType",
    "ExecutionState",
    "ExecutionStatus",
    "FinishReason",
    "InferenceRequest",
    "InferenceResponse",
    "LlmConfig",
    "StepError",
    "StepExecution",
    "StepExecutions",
    "ToolExecution",
    "ToolExecutions",
    "ToolSchema",
    "TraceMode",
    "Usage",
    "message_tags",
]
