"""``ToolExecution``: one tool call and its outcome."""

from __future__ import annotations

from pydantic import Field, JsonValue, StrictBool

from agentrig import clock
from agentrig._model import FrozenList, JsonData, Serializable, Timestamp
from agentrig.messages import ToolCall
from agentrig.state.usage import ZERO_USAGE, Usage


class ToolExecution(Serializable):
    """A tool call, its JSON value or its error, the text the model saw, and timing.

    ``usage`` is what the tool itself consumed (a subagent's tokens and cost), counted in the
    step's usage. ``stopped`` marks a call cut short by ``AgentStop``: the one that raised it and
    those after it, which did not run. A stop is not a failure, so ``error`` stays None.
    """

    id: str = Field(default_factory=lambda: clock.new_id("tool_execution"))
    tool_call: ToolCall
    value: JsonData = None
    content: str = ""
    error: str | None = None
    error_type: str | None = None
    blocked: StrictBool = False
    stopped: StrictBool = False
    usage: Usage = ZERO_USAGE
    started_at: Timestamp
    completed_at: Timestamp

    @property
    def name(self) -> str:
        """The tool name."""
        return self.tool_call.name

    @property
    def arguments(self) -> dict[str, JsonValue]:
        """The call's arguments."""
        return self.tool_call.arguments

    @property
    def has_error(self) -> bool:
        """True when the call failed (raised, unknown tool, bad arguments or blocked): a
        property, like the fields ``blocked`` and ``stopped`` (``if execution.has_error:``)."""
        return self.error is not None

    def was_blocked(self) -> bool:
        """True when a hook blocked the call."""
        return self.blocked

    def was_stopped(self) -> bool:
        """True when ``AgentStop`` ended the execution at or before this call."""
        return self.stopped

    def error_message(self) -> str:
        """The error text, or ``""`` on success."""
        return self.error or ""

    def duration(self) -> float:
        """Seconds the call took."""
        return (self.completed_at - self.started_at).total_seconds()


class ToolExecutions(FrozenList[ToolExecution]):
    """The tool executions of one step, in call order."""

    __slots__ = ()
    item_type = ToolExecution

    def has_errors(self) -> bool:
        """True when any execution failed."""
        return any(execution.error is not None for execution in self._items)

    def usage(self) -> Usage:
        """Sum of the executions' own usage."""
        total = ZERO_USAGE
        for execution in self._items:
            if execution.usage is not ZERO_USAGE:
                total = total + execution.usage
        return total
