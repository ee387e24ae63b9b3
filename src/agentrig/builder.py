"""``AgentBuilder``: composes capabilities, tools, hooks, a driver and a compiler into an
``AgentLoop`` (seed 003). New behaviour comes as a capability, not as a builder keyword."""

from __future__ import annotations

import copy as _copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, Self, runtime_checkable

from agentrig.clock import Clock, IdFactory, SystemClock, UuidIds
from agentrig.compilers import ContextCompiler, ConversationWithCurrentToolTrace
from agentrig.drivers.base import Driver, RetryCheck
from agentrig.errors import ConfigurationError
from agentrig.events import EventBus
from agentrig.hooks import Hook, HookStack, HookTrigger
from agentrig.loop import AgentLoop
from agentrig.state import TraceMode
from agentrig.tools import Tool, Tools


@runtime_checkable
class AgentCapability(Protocol):
    """A packaged feature: it installs tools, hooks, a compiler wrapper or a driver."""

    def install(self, builder: AgentBuilder) -> None:
        """Add this capability to ``builder``."""
        ...


@dataclass(frozen=True, slots=True)
class BuildContext:
    """What a deferred tool factory receives at ``build()`` time."""

    tools: Tools
    driver: Driver
    events: EventBus
    trace_mode: TraceMode
    clock: Clock
    ids: IdFactory


ToolFactory = Callable[[BuildContext], Tool]


class AgentBuilder:
    """A fluent, mutable builder; ``build()`` snapshots it into an immutable ``AgentLoop``."""

    def __init__(self) -> None:
        self._tools = Tools()
        self._factories: list[ToolFactory] = []
        self._hooks = HookStack()
        self._driver: Driver | None = None
        self._compiler: ContextCompiler | None = None
        self._events = EventBus()
        self._trace_mode = TraceMode.SEPARATED
        self._clock: Clock = SystemClock()
        self._ids: IdFactory = UuidIds()
        self._capabilities: list[AgentCapability] = []
        self._retry_checks: list[RetryCheck] = []

    @classmethod
    def base(cls) -> Self:
        """An empty builder."""
        return cls()

    def copy(self) -> Self:
        """A builder with the same settings, to change without changing this one.

        Tools, hooks and capabilities are copied; the event bus is shared, so a listener
        subscribed through either reaches agents built from both.
        """
        twin = _copy.copy(self)
        twin._factories = list(self._factories)
        twin._capabilities = list(self._capabilities)
        twin._retry_checks = list(self._retry_checks)
        return twin

    def with_capability(self, capability: AgentCapability) -> Self:
        """Install ``capability`` now (capabilities are installed in the order given)."""
        if isinstance(capability, type) or not callable(getattr(capability, "install", None)):
            raise ConfigurationError(
                f"{capability!r} is not a capability: pass an object with an install(builder) "
                "method, such as UseLlmConfig(provider) or UseGuards(max_steps=...)"
            )
        capability.install(self)
        self._capabilities.append(capability)
        return self

    def with_tools(
        self, tools: Tools | Iterable[Tool | Callable[..., Any]] | Mapping[str, Any]
    ) -> Self:
        """Add tools: a list of typed functions or ``Tool`` objects, or a mapping of names to
        them (``{"add": lambda a, b: a + b}``, for functions whose name will not do); a later
        tool with the same name wins."""
        if isinstance(tools, Mapping):
            tools = Tools(tools)
        elif not isinstance(tools, Tools):
            tools = Tools(_checked_tools(tools))
        self._tools = self._tools.merged(tools)
        return self

    def add_tool_factory(self, factory: ToolFactory) -> Self:
        """Add a tool created at ``build()``, seeing the tools collected so far and the driver."""
        self._factories.append(factory)
        return self

    def add_hook(
        self,
        hook: Hook,
        triggers: HookTrigger | str | Iterable[HookTrigger | str],
        priority: int = 0,
        name: str | None = None,
    ) -> Self:
        """Register ``hook`` on ``triggers``; higher priority runs first."""
        self._hooks = self._hooks.with_hook(hook, triggers, priority, name)
        return self

    def add_retry_check(self, check: RetryCheck) -> Self:
        """Ask ``check`` before each retried inference attempt of a step: a ``StopSignal`` it
        returns means no retry, and the step fails with ``RetryLimitExceededError`` naming the
        signal. ``UseGuards`` adds one for its time limits (``max_seconds``, ``deadline``)."""
        if not callable(check):
            raise ConfigurationError(
                f"{check!r} is not a retry check: pass a function of the state returning a "
                "StopSignal (no retry) or None"
            )
        self._retry_checks.append(check)
        return self

    def with_driver(self, driver: Driver) -> Self:
        """Use ``driver`` for steps."""
        if not isinstance(driver, Driver):
            raise ConfigurationError(
                f"{driver!r} is not a driver (an object with use_tools(state, runtime)): pass "
                "ToolCallingDriver(provider), or install UseLlmConfig(provider) instead"
            )
        self._driver = driver
        return self

    def driver(self) -> Driver | None:
        """The driver set so far."""
        return self._driver

    def with_context_compiler(self, compiler: ContextCompiler) -> Self:
        """Use ``compiler`` to prepare messages before each inference."""
        if compiler is not None and (
            isinstance(compiler, type) or not isinstance(compiler, ContextCompiler)
        ):
            raise ConfigurationError(
                f"{compiler!r} is not a context compiler (an instance with compile(state)): pass "
                "e.g. ConversationWithCurrentToolTrace(), or get_compiler(name) for a registered one"
            )
        self._compiler = compiler
        return self

    def context_compiler(self) -> ContextCompiler | None:
        """The compiler set so far (capabilities read it, wrap it and set it back)."""
        return self._compiler

    def with_events(self, events: EventBus) -> Self:
        """Deliver events to ``events``."""
        self._events = events
        return self

    def event_bus(self) -> EventBus:
        """The event bus."""
        return self._events

    def hook_stack(self) -> HookStack:
        """The hooks registered so far."""
        return self._hooks

    def tools(self) -> Tools:
        """The tools registered so far (factories excluded)."""
        return self._tools

    def with_separated_tool_trace(self, enabled: bool = True) -> Self:
        """Keep tool traces in the execution buffer (default) or, with False, inline in messages."""
        self._trace_mode = TraceMode.SEPARATED if enabled else TraceMode.INLINE
        return self

    def with_clock(self, clock: Clock) -> Self:
        """Read time from ``clock`` (a ``FakeClock`` in tests)."""
        self._clock = clock
        return self

    def with_ids(self, ids: IdFactory) -> Self:
        """Create ids with ``ids`` (``SeededIds`` in tests)."""
        self._ids = ids
        return self

    def capabilities(self) -> tuple[AgentCapability, ...]:
        """Capabilities installed so far."""
        return tuple(self._capabilities)

    def build(self) -> AgentLoop:
        """Resolve the compiler, driver and tool factories into an ``AgentLoop``."""
        if self._driver is None:
            raise ConfigurationError(
                "no driver: call with_driver(ToolCallingDriver(provider)) or install "
                "UseLlmConfig(provider=...) before build()"
            )
        compiler = self._compiler or ConversationWithCurrentToolTrace()
        driver = self._driver
        with_compiler = getattr(driver, "with_message_compiler", None)
        if callable(with_compiler):
            driver = with_compiler(compiler)
        tools = self._tools
        for factory in self._factories:
            context = BuildContext(
                tools, driver, self._events, self._trace_mode, self._clock, self._ids
            )
            tools = tools.with_tools(factory(context))
        return AgentLoop(
            driver=driver,
            tools=tools,
            hooks=self._hooks,
            events=self._events,
            trace_mode=self._trace_mode,
            clock=self._clock,
            ids=self._ids,
            retry_checks=tuple(self._retry_checks),
        )


def _checked_tools(tools: object) -> list[Tool | Callable[..., Any]]:
    """``tools`` as a list, or a ``ConfigurationError`` that says how to pass them."""
    if isinstance(tools, Tool) or (callable(tools) and not isinstance(tools, Iterable)):
        name = getattr(tools, "name", None) or getattr(tools, "__name__", "tool")
        raise ConfigurationError(
            f"with_tools takes a list of tools, got the single tool {name!r}: "
            f"write with_tools([{name}])"
        )
    if not isinstance(tools, Iterable) or isinstance(tools, str | bytes):
        raise ConfigurationError(
            f"with_tools takes a list of typed functions or Tool objects, got {tools!r}"
        )
    items = list(tools)
    for index, item in enumerate(items):
        if not (isinstance(item, Tool) or callable(item)):
            raise ConfigurationError(
                f"with_tools: {item!r} (tools[{index}]) is not a tool: pass a typed function "
                "or a Tool object"
            )
    return items
