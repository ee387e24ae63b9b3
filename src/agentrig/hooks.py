"""Hooks: ten lifecycle triggers, a context per call, and a priority-ordered ``HookStack`` (D6)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Self

from agentrig import clock
from agentrig._frozen import fast_init
from agentrig._tool_signature import is_async_callable
from agentrig.continuation import StopReason, StopSignal
from agentrig.errors import ConfigurationError, HookContractViolationError, InvalidInputError
from agentrig.events import HookExecuted
from agentrig.messages import ToolCall
from agentrig.state import AgentState, InferenceRequest, InferenceResponse, StepError, ToolExecution

if TYPE_CHECKING:
    from agentrig.events import EventBus


class HookTrigger(StrEnum):
    """When a hook runs."""

    BEFORE_EXECUTION = "before_execution"
    BEFORE_STEP = "before_step"
    BEFORE_INFERENCE_REQUEST = "before_inference_request"
    AFTER_INFERENCE_RESPONSE = "after_inference_response"
    BEFORE_TOOL_USE = "before_tool_use"
    AFTER_TOOL_USE = "after_tool_use"
    AFTER_STEP = "after_step"
    ON_STOP = "on_stop"
    AFTER_EXECUTION = "after_execution"
    ON_ERROR = "on_error"


_ALWAYS = ("state", "metadata")
MUTABLE_FIELDS: dict[HookTrigger, tuple[str, ...]] = {
    HookTrigger.BEFORE_EXECUTION: _ALWAYS,
    HookTrigger.BEFORE_STEP: _ALWAYS,
    HookTrigger.BEFORE_INFERENCE_REQUEST: (*_ALWAYS, "inference_request"),
    HookTrigger.AFTER_INFERENCE_RESPONSE: (*_ALWAYS, "inference_response"),
    HookTrigger.BEFORE_TOOL_USE: (
        *_ALWAYS,
        "tool_call",
        "is_tool_execution_blocked",
        "tool_execution",
        "errors",
    ),
    HookTrigger.AFTER_TOOL_USE: (*_ALWAYS, "tool_execution"),
    HookTrigger.AFTER_STEP: _ALWAYS,
    HookTrigger.ON_STOP: _ALWAYS,
    HookTrigger.AFTER_EXECUTION: _ALWAYS,
    HookTrigger.ON_ERROR: (*_ALWAYS, "errors"),
}
"""The fields a hook may change on each trigger."""

_CONTEXT_FIELDS = (
    "trigger",
    "state",
    "metadata",
    "tool_call",
    "is_tool_execution_blocked",
    "tool_execution",
    "errors",
    "inference_request",
    "inference_response",
)


@fast_init
@dataclass(frozen=True, slots=True)
class HookContext:
    """What a hook sees and may change. Each trigger allows changing only some fields."""

    trigger: HookTrigger
    state: AgentState
    metadata: dict[str, Any] = field(default_factory=dict)
    tool_call: ToolCall | None = None
    is_tool_execution_blocked: bool = False
    tool_execution: ToolExecution | None = None
    errors: tuple[StepError, ...] = ()
    inference_request: InferenceRequest | None = None
    inference_response: InferenceResponse | None = None

    def with_state(self, state: AgentState) -> Self:
        """A context with ``state`` replaced."""
        return dataclasses.replace(self, state=state)

    def with_metadata_entry(self, key: str, value: Any) -> Self:
        """A context with a metadata entry set."""
        return dataclasses.replace(self, metadata={**self.metadata, key: value})

    def with_tool_call(self, tool_call: ToolCall) -> Self:
        """A context with the tool call replaced (before_tool_use)."""
        return dataclasses.replace(self, tool_call=tool_call)

    def with_tool_execution(self, execution: ToolExecution) -> Self:
        """A context with the tool execution replaced (before/after_tool_use).

        In ``before_tool_use`` an execution marked ``blocked`` blocks the call and is recorded
        as its result, as ``block_tool_execution`` does.
        """
        return dataclasses.replace(self, tool_execution=execution)

    def with_error(self, error: StepError) -> Self:
        """A context with an error added.

        In ``before_tool_use`` the call is then not run: the model sees the error as the call's
        failed result, as for a block. In ``on_error`` the error is recorded in the execution's
        errors. Other triggers ignore the errors.
        """
        return dataclasses.replace(self, errors=(*self.errors, error))

    def with_inference_request(self, request: InferenceRequest) -> Self:
        """A context with the inference request replaced."""
        return dataclasses.replace(self, inference_request=request)

    def with_inference_response(self, response: InferenceResponse) -> Self:
        """A context with the inference response replaced."""
        return dataclasses.replace(self, inference_response=response)

    def blocks_the_call(self) -> bool:
        """True when ``before_tool_use`` hooks left the call blocked: the flag is set, the tool
        execution they supplied is a blocked one, or they added an error."""
        execution = self.tool_execution
        return (
            self.is_tool_execution_blocked
            or bool(self.errors)
            or (execution is not None and execution.blocked)
        )

    def stop(
        self,
        reason: StopReason | str = StopReason.STOP_REQUESTED,
        message: str = "",
        *,
        source: str | None = None,
    ) -> Self:
        """Ask the loop to stop: a context whose state carries a stop signal (any trigger).

        ``ctx.stop("stop_requested", message="enough")`` is the short form of
        ``ctx.with_state(ctx.state.with_stop_signal(StopSignal(reason=..., message=...)))``.
        ``reason`` is a :class:`StopReason` or its value; an unknown one raises
        :class:`~agentrig.errors.InvalidInputError` listing the valid values. The loop stops at its
        next checkpoint, as for any stop signal.
        """
        signal = StopSignal(reason=_stop_reason(reason), message=message, source=source)
        return dataclasses.replace(self, state=self.state.with_stop_signal(signal))

    def block_tool_execution(self, message: str = "") -> Self:
        """Block the tool call (before_tool_use): the model sees ``message`` as a failed result."""
        call = self.tool_call
        reason = message or f"Tool execution blocked by before_tool_use hook: {call}"
        blocked = None
        if call is not None:
            at = clock.now()
            blocked = ToolExecution(
                tool_call=call,
                content=f"Error in tool call: {reason}",
                error=reason,
                error_type="ToolBlockedError",
                blocked=True,
                started_at=at,
                completed_at=at,
            )
        return dataclasses.replace(
            self,
            is_tool_execution_blocked=True,
            tool_execution=blocked,
            errors=(*self.errors, StepError(message=reason, type="ToolBlockedError")),
        )


Hook = Callable[[HookContext], "HookContext | None"]
"""A hook takes the context and returns a changed one, or None to leave it unchanged."""


@dataclass(frozen=True, slots=True)
class RegisteredHook:
    """A hook with its triggers, priority and name."""

    hook: Hook
    triggers: frozenset[HookTrigger]
    priority: int
    name: str


class HookStack:
    """An immutable, priority-ordered set of hooks. Higher priority runs first; ties keep order."""

    __slots__ = ("_events", "_hooks", "by_trigger")

    def __init__(
        self, hooks: Iterable[RegisteredHook] = (), events: EventBus | None = None
    ) -> None:
        ordered = sorted(hooks, key=lambda registered: -registered.priority)
        self._hooks: tuple[RegisteredHook, ...] = tuple(ordered)
        self._events = events
        self.by_trigger: Mapping[HookTrigger, tuple[RegisteredHook, ...]] = {
            trigger: tuple(h for h in self._hooks if trigger in h.triggers)
            for trigger in HookTrigger
        }
        """The hooks of each trigger, in run order; read-only (the stack is immutable):
        ``hooks_for`` as a mapping, for the loop's per-step checks (a subscript costs a
        fraction of a method call). A plain dict, so a stack copies and pickles."""

    def with_hook(
        self,
        hook: Hook,
        triggers: HookTrigger | str | Iterable[HookTrigger | str],
        priority: int = 0,
        name: str | None = None,
    ) -> HookStack:
        """A stack with ``hook`` added for ``triggers``."""
        if not callable(hook):
            raise ConfigurationError(
                f"hook {hook!r} is not callable: pass a function taking a HookContext"
            )
        if is_async_callable(hook):
            raise ConfigurationError(
                f"hook {hook!r} is an async function, but hooks are synchronous in both paths "
                "(they run between awaits, in a fixed order): define it with 'def'; do slow "
                "work in an async tool"
            )
        if not isinstance(priority, int | float):
            raise ConfigurationError(f"hook priority must be a number, got {priority!r}")
        registered = RegisteredHook(
            hook=hook,
            triggers=_triggers(triggers),
            priority=priority,
            name=name or str(getattr(hook, "__name__", type(hook).__name__)),
        )
        return HookStack((*self._hooks, registered), self._events)

    def with_events(self, events: EventBus | None) -> HookStack:
        """A stack that reports each hook run to ``events``."""
        return HookStack(self._hooks, events)

    @property
    def hooks(self) -> tuple[RegisteredHook, ...]:
        """All hooks, in run order."""
        return self._hooks

    def hooks_for(self, trigger: HookTrigger) -> tuple[RegisteredHook, ...]:
        """Hooks that run on ``trigger``, in run order."""
        return self.by_trigger[trigger]

    def __len__(self) -> int:
        return len(self._hooks)

    def intercept(self, context: HookContext) -> HookContext:
        """Run every hook registered for the context's trigger; each sees the previous output."""
        events = self._events
        for registered in self.by_trigger[context.trigger]:
            result = registered.hook(context)
            if result is not None and result is not context:
                _check_contract(registered.name, context, result)
                context = result
            if events is not None and events.listened and events.wants(HookExecuted):
                events.dispatch(
                    HookExecuted.of(
                        context.state, trigger=context.trigger.value, hook_name=registered.name
                    )
                )
        return context


_VALID = ", ".join(trigger.value for trigger in HookTrigger)


def _triggers(triggers: HookTrigger | str | Iterable[HookTrigger | str]) -> frozenset[HookTrigger]:
    if isinstance(triggers, str):
        return frozenset({_trigger(triggers)})
    parsed = frozenset(_trigger(trigger) for trigger in triggers)
    if not parsed:
        reason = f"a hook needs at least one trigger (it would never run); use some of: {_VALID}"
        raise InvalidInputError("hook triggers", [("triggers", reason)])
    return parsed


def _trigger(trigger: HookTrigger | str) -> HookTrigger:
    try:
        return HookTrigger(trigger)
    except ValueError:
        reason = f"{trigger!r} is not a hook trigger; use one of: {_VALID}"
        raise InvalidInputError("hook trigger", [("triggers", reason)]) from None


_REASONS = ", ".join(reason.value for reason in StopReason)


def _stop_reason(reason: StopReason | str) -> StopReason:
    try:
        return StopReason(reason)
    except ValueError:
        problem = f"{reason!r} is not a stop reason; use one of: {_REASONS}"
        raise InvalidInputError("stop reason", [("reason", problem)]) from None


def _check_contract(name: str, before: HookContext, after: HookContext) -> None:
    if not isinstance(after, HookContext):
        raise TypeError(
            f"Hook '{name}' returned {type(after).__name__}, expected HookContext or None"
        )
    allowed = MUTABLE_FIELDS[before.trigger]
    for field_name in _CONTEXT_FIELDS:
        if field_name in allowed:
            _check_type(name, field_name, getattr(before, field_name), getattr(after, field_name))
            continue
        if getattr(before, field_name) is not getattr(after, field_name):
            if getattr(before, field_name) == getattr(after, field_name):
                continue
            raise HookContractViolationError(name, field_name, before.trigger.value, allowed)


_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "state": (AgentState,),
    "metadata": (dict,),
    "tool_call": (ToolCall, type(None)),
    "is_tool_execution_blocked": (bool,),
    "tool_execution": (ToolExecution, type(None)),
    "errors": (tuple,),
    "inference_request": (InferenceRequest, type(None)),
    "inference_response": (InferenceResponse, type(None)),
}
"""What each context field must hold; a hook's wrong value would otherwise fail deep in the loop."""


def _check_type(name: str, field_name: str, before: object, after: object) -> None:
    if after is before or isinstance(after, _FIELD_TYPES[field_name]):
        return
    expected = _FIELD_TYPES[field_name][0].__name__
    raise TypeError(
        f"Hook '{name}' set '{field_name}' to {type(after).__name__}, expected {expected}"
    )
