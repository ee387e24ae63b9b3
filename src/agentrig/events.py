"""Typed events and the ``EventBus`` that delivers them (subscribe by type, or ``wiretap`` all).

Events are built only when someone listens (``EventBus.wants``), so an unobserved loop pays
nothing for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self, TypeVar

from agentrig import clock
from agentrig._tool_signature import is_async_callable
from agentrig.errors import ConfigurationError, EventListenerError
from agentrig.state import AgentState, Usage

E = TypeVar("E", bound="AgentEvent")
Listener = Callable[[Any], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentEvent:
    """Base of every event: which agent and execution it concerns, and when."""

    agent_id: str
    parent_agent_id: str | None
    execution_id: str | None
    at: datetime

    @classmethod
    def of(cls, state: AgentState, **fields: Any) -> Self:
        """An event about ``state``, stamped with the current time."""
        return cls(
            agent_id=state.agent_id,
            parent_agent_id=state.parent_agent_id,
            execution_id=state.execution_id(),
            at=clock.now(),
            **fields,
        )

    @property
    def name(self) -> str:
        """The event's class name."""
        return type(self).__name__


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentExecutionStarted(AgentEvent):
    """An execution began."""

    message_count: int
    available_tools: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentStepStarted(AgentEvent):
    """A step is about to run (also emitted when the checkpoint then cancels it)."""

    step_number: int
    message_count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentStepCompleted(AgentEvent):
    """A step ran."""

    step_number: int
    step_type: str | None
    has_tool_calls: bool
    error_count: int
    error_messages: tuple[str, ...]
    usage: Usage
    finish_reason: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenUsageReported(AgentEvent):
    """Usage of one step (emitted when non-zero)."""

    step_number: int
    usage: Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class ContinuationEvaluated(AgentEvent):
    """The loop decided whether to go on."""

    step_number: int
    should_stop: bool
    stop_reason: str | None
    explanation: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StopSignalReceived(AgentEvent):
    """An ``AgentStop`` was caught."""

    reason: str
    message: str
    source: str | None
    context: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentExecutionStopped(AgentEvent):
    """The loop is stopping; carries the winning stop signal (``stop_context`` is its context)."""

    stop_reason: str
    stop_message: str
    source: str | None
    total_steps: int
    stop_context: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentExecutionCompleted(AgentEvent):
    """An execution ended (whatever its status)."""

    status: str
    total_steps: int
    usage: Usage
    errors: tuple[str, ...]
    final_response: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentExecutionFailed(AgentEvent):
    """An exception was caught during an execution."""

    error: str
    error_type: str
    steps_completed: int


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceRequestStarted(AgentEvent):
    """A request is being sent to the provider."""

    step_number: int
    message_count: int
    model: str


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceResponseReceived(AgentEvent):
    """The provider answered."""

    step_number: int
    usage: Usage
    finish_reason: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceDelta(AgentEvent):
    """A piece of the answer a streaming provider is sending, as it arrives: some text, some of
    the model's reasoning (``reasoning``: thinking the answer keeps in ``reasoning_content``),
    or a piece of a tool call's JSON arguments (``tool_call_index`` says which call; its id and
    name come with its first piece). Only runs through ``AgentLoop.stream``/``astream`` ask for them;
    the step records the assembled answer, as a plain run does."""

    step_number: int
    text: str = ""
    tool_call_index: int | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    arguments: str = ""
    reasoning: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEvent(AgentEvent):
    """Something about one tool call in step ``step_number``: subscribe to it to hear every
    kind (started, completed, blocked)."""

    step_number: int
    tool: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted(ToolCallEvent):
    """A tool call is about to run."""

    args: dict[str, Any]
    tool_call_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallCompleted(ToolCallEvent):
    """A tool call finished; a failed one says why (``error``) and the kind of error
    (``error_type``, as its ``ToolExecution`` records it; the stop's class for a tool that
    stopped the run)."""

    tool_call_id: str
    success: bool
    error: str | None
    error_type: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallBlocked(ToolCallEvent):
    """A hook blocked a tool call."""

    args: dict[str, Any]
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HookExecuted(AgentEvent):
    """A hook ran."""

    trigger: str
    hook_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentSpawning(AgentEvent):
    """A subagent is about to run."""

    subagent_name: str
    prompt: str
    depth: int
    max_depth: int
    tool_call_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentCompleted(AgentEvent):
    """A subagent finished; ``usage`` is what it consumed, ``tool_call_id`` the spawning call
    (as in its ``SubagentSpawning``)."""

    subagent_name: str
    subagent_id: str
    status: str | None
    steps: int
    usage: Usage
    tool_call_id: str = ""


@dataclass
class EventBus:
    """Delivers events to listeners: by type (subclasses included) or to every ``wiretap``.

    A child bus forwards everything it receives to its parent too.
    """

    parent: EventBus | None = None
    _wiretaps: list[Listener] = field(default_factory=list)
    _by_type: dict[type[AgentEvent], list[Listener]] = field(default_factory=dict)
    _routes: dict[type[AgentEvent], tuple[Listener, ...]] = field(default_factory=dict)
    listened: bool = field(default=False, init=False, repr=False, compare=False)
    """False while no listener can receive anything (no listener here, no parent); read-only.
    The loop's per-step code reads it before asking ``wants``: when nobody listens, which is
    the usual case, an attribute read costs a fraction of the call."""

    def __post_init__(self) -> None:
        self.listened = self.parent is not None or bool(self._wiretaps or self._by_type)

    def wiretap(self, listener: Callable[[AgentEvent], None]) -> Callable[[], None]:
        """Receive every event; returns a function that unsubscribes."""
        _check_listener(listener)
        self._wiretaps.append(listener)
        self._routes.clear()
        self.listened = True
        return self._unsubscriber(self._wiretaps, listener)

    def subscribe(self, event_type: type[E], listener: Callable[[E], None]) -> Callable[[], None]:
        """Receive events of ``event_type`` and its subclasses; returns an unsubscribe function."""
        _check_listener(listener)
        listeners = self._by_type.setdefault(event_type, [])
        listeners.append(listener)
        self._routes.clear()
        self.listened = True
        return self._unsubscriber(listeners, listener)

    def child(self) -> EventBus:
        """A bus whose events also reach this one."""
        return EventBus(parent=self)

    def wants(self, event_type: type[AgentEvent]) -> bool:
        """True when some listener (here or in a parent) would receive ``event_type``."""
        if not self.listened:
            return False  # nobody listens at all: the common case of an unobserved loop
        route = self._routes.get(event_type)
        if route is None:
            route = self._route(event_type)
        if route:
            return True
        return self.parent is not None and self.parent.wants(event_type)

    def dispatch(self, event: AgentEvent) -> None:
        """Deliver ``event`` to its listeners, then to the parent bus.

        A listener's exception is raised as ``EventListenerError``, which the loop lets through.
        """
        for listener in self._route(type(event)):
            try:
                listener(event)
            except EventListenerError:
                raise
            except Exception as error:
                raise EventListenerError(type(event).__name__, _name(listener), error) from error
        if self.parent is not None:
            self.parent.dispatch(event)

    def _route(self, event_type: type[AgentEvent]) -> tuple[Listener, ...]:
        route = self._routes.get(event_type)
        if route is None:
            typed = (
                [
                    listener
                    for base in event_type.__mro__
                    for listener in self._by_type.get(base, ())
                ]
                if self._by_type
                else ()
            )
            route = (*self._wiretaps, *typed)
            self._routes[event_type] = route
        return route

    def _unsubscriber(self, listeners: list[Listener], listener: Listener) -> Callable[[], None]:
        """Removes this one registration, once: calling it again must not remove another
        registration of the same listener."""
        registered = [listener]

        def unsubscribe() -> None:
            if registered:
                registered.clear()
                listeners.remove(listener)  # equal entries are the same listener: any one will do
                self._routes.clear()
                self.listened = self.parent is not None or bool(
                    self._wiretaps or any(self._by_type.values())
                )

        return unsubscribe


def _check_listener(listener: Listener) -> None:
    if is_async_callable(listener):
        raise ConfigurationError(
            f"listener {_name(listener)} is an async function, but listeners are called "
            "synchronously in both paths: define it with 'def' (hand the event to a queue for "
            "async work, e.g. asyncio.Queue.put_nowait)"
        )


def _name(listener: Listener) -> str:
    """``module.qualname`` of a function or method, else its repr."""
    qualname = getattr(listener, "__qualname__", None)
    module = getattr(listener, "__module__", None)
    if qualname is None:
        return repr(listener)
    return f"{module}.{qualname}" if module else qualname
