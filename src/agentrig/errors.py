"""Errors raised by agentrig.

Every error agentrig raises derives from one root, so ``except AgentrigError`` catches them all::

    AgentrigError
    ├── InvalidInputError          bad data: a message, a budget, a state dict, tool arguments
    │   └── InvalidToolArgumentsError
    ├── ToolError                  a tool call that could not run (the model sees it as a failed result)
    │   ├── ToolNotFoundError
    │   ├── ToolExecutionError
    │   └── ToolBlockedError
    ├── SubagentError              spawn_subagent failures (the parent model sees a failed result)
    │   ├── SubagentNotFoundError
    │   ├── SubagentDepthExceededError
    │   └── SubagentFailedError
    ├── HookContractViolationError a hook changed a field its trigger does not allow
    ├── ConfigurationError         a builder or loop that cannot work as configured
    ├── ProviderError              an inference provider failed
    │   └── RetryLimitExceededError
    ├── MissingDependencyError     an optional extra is not installed
    └── AgentStop                  raised by tools, hooks or drivers to stop the execution
                                   (not a failure: it ends with reason ``stop_requested``)

Errors carry their context as attributes and say what to do next in their message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentrig.continuation import StopSignal


class AgentrigError(Exception):
    """Root of every error agentrig raises."""


class InvalidInputError(AgentrigError, ValueError):
    """Input data is invalid; ``field`` names the offending field path (``""`` for the whole value).

    ``problems`` lists every ``(field, reason)`` found, so a caller can fix all of them in one pass.
    """

    def __init__(self, what: str, problems: list[tuple[str, str]]) -> None:
        self.what = what
        self.problems = problems
        self.field = problems[0][0] if problems else ""
        lines = [f"{field or '<root>'}: {reason}" for field, reason in problems]
        super().__init__(f"invalid {what}: " + "; ".join(lines))


class InvalidToolArgumentsError(InvalidInputError):
    """Arguments given to a tool do not match its parameters."""

    def __init__(self, tool: str, problems: list[tuple[str, str]]) -> None:
        self.tool = tool
        super().__init__(f"arguments for tool '{tool}'", problems)


class ToolError(AgentrigError):
    """A tool call that could not produce a value."""


class ToolNotFoundError(ToolError):
    """The model called a tool the agent does not have."""

    def __init__(self, name: str, available: list[str]) -> None:
        self.name = name
        self.available = available
        names = ", ".join(sorted(available)) or "(none)"
        super().__init__(f"Tool '{name}' not found. Available tools: {names}")


class ToolExecutionError(ToolError):
    """A tool raised while running; the original exception is ``__cause__``."""

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        super().__init__(message)


class ToolBlockedError(ToolError):
    """A ``before_tool_use`` hook blocked the call."""


class SubagentError(AgentrigError):
    """A subagent could not be spawned or failed."""


class SubagentNotFoundError(SubagentError):
    """No subagent with that name is defined."""

    def __init__(self, name: str, available: list[str]) -> None:
        self.name = name
        self.available = available
        names = ", ".join(sorted(available)) or "(none)"
        super().__init__(f"Subagent '{name}' not found. Available subagents: {names}")


class SubagentDepthExceededError(SubagentError):
    """Spawning would exceed ``SubagentPolicy.max_depth``."""

    def __init__(self, name: str, max_depth: int) -> None:
        self.name = name
        self.max_depth = max_depth
        super().__init__(f"Maximum nesting depth ({max_depth}) reached for subagent '{name}'.")


class SubagentFailedError(SubagentError):
    """The child execution ended with status failed."""


class HookContractViolationError(AgentrigError):
    """A hook changed a field that its trigger does not let it change."""

    def __init__(self, hook: str, field: str, trigger: str, allowed: tuple[str, ...]) -> None:
        self.hook = hook
        self.field = field
        self.trigger = trigger
        super().__init__(
            f"Hook '{hook}' cannot change '{field}' on trigger '{trigger}'; "
            f"it may change only: {', '.join(allowed)}."
        )


class ConfigurationError(AgentrigError):
    """The agent cannot be built or run as configured."""


class ProviderError(AgentrigError):
    """An inference provider failed; ``retryable`` says whether another attempt may succeed."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        self.retryable = retryable
        super().__init__(message)


class RetryLimitExceededError(ProviderError):
    """Every inference attempt failed."""

    def __init__(self, attempts: int, last: BaseException) -> None:
        self.attempts = attempts
        super().__init__(f"inference failed after {attempts} attempt(s): {last}")


class MissingDependencyError(AgentrigError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, package: str, extra: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(f"{package} is not installed: pip install 'agentrig[{extra}]'")


class AgentStop(AgentrigError):
    """Raise anywhere in a step (tool, hook, driver) to stop the execution with ``stop_requested``."""

    def __init__(
        self,
        message: str = "",
        *,
        context: dict[str, Any] | None = None,
        source: str | None = None,
    ) -> None:
        self.stop_message = message
        self.context = dict(context or {})
        self.source = source
        super().__init__(message or "stop_requested")

    def to_signal(self) -> StopSignal:
        """The ``stop_requested`` signal this exception stands for."""
        from agentrig.continuation import StopReason, StopSignal

        return StopSignal(
            reason=StopReason.STOP_REQUESTED,
            message=self.stop_message,
            context=self.context,
            source=self.source,
        )
