"""A tiny harness for the invariant tests: a real agent run turn by turn under a checker."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agentrig import (
    AgentBuilder,
    AgentCapability,
    AgentLoop,
    AgentState,
    AgentStep,
    AllSections,
    Driver,
    ExecutionBudget,
    HookContext,
    HookTrigger,
    StepRuntime,
    ToolCallingDriver,
    TraceMode,
    runtime_context,
)
from agentrig.events import (
    AgentEvent,
)
from agentrig.fakes import (
    FakeClock,
    ScriptedLLM,
    ScriptedTool,
    SeededIds,
    ToolReply,
    Turn,
)
from agentrig.harness.checks.invariant import (
    Invariant,
    InvariantChecker,
    Violation,
)


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def weather_tool() -> ScriptedTool:
    return ScriptedTool(
        "weather",
        [
            ToolReply(when={"city": "Paris"}, returns="sunny"),
            ToolReply(when={"city": "Oslo"}, raises="service unavailable"),
        ],
        params={"city": "string"},
    )


Hook = Callable[[HookContext], HookContext | None]


class Agent:
    """A loop under an ``InvariantChecker``; ``say()`` plays one user turn like the runner."""

    def __init__(
        self,
        script: Iterable[Turn | str],
        *,
        tools: Sequence[Any] = (lookup,),
        capabilities: Sequence[AgentCapability] = (),
        hooks: Sequence[tuple[Hook, HookTrigger]] = (),
        inline: bool = False,
        budget: ExecutionBudget | None = None,
        invariants: Sequence[Invariant] | None = None,
        wrap_driver: Callable[[ToolCallingDriver], Driver] | None = None,
        loop_class: type[AgentLoop] = AgentLoop,
        compiler: AllSections | None = None,
        drop_event: Callable[[AgentEvent], bool] | None = None,
        initial: Callable[[AgentState], AgentState] | None = None,
    ) -> None:
        self.clock = FakeClock()
        self.ids = SeededIds(3)
        self.llm = ScriptedLLM(script, clock=self.clock)
        driver: Driver = ToolCallingDriver(self.llm)
        if wrap_driver is not None:
            driver = wrap_driver(ToolCallingDriver(self.llm))
        builder = (
            AgentBuilder.base()
            .with_clock(self.clock)
            .with_ids(self.ids)
            .with_driver(driver)
            .with_tools(list(tools))
            .with_separated_tool_trace(not inline)
        )
        if compiler is not None:
            builder.with_context_compiler(compiler)
        for capability in capabilities:
            builder.with_capability(capability)
        for hook, trigger in hooks:
            builder.add_hook(hook, trigger)
        built = builder.build()
        self.loop = loop_class(
            driver=built.driver,
            tools=built.tools,
            hooks=built.hooks,
            events=built.events,
            trace_mode=built.trace_mode,
            clock=self.clock,
            ids=self.ids,
        )
        mode = TraceMode.INLINE if inline else TraceMode.SEPARATED
        self.checker = InvariantChecker(
            invariants,
            trace_mode=mode,
            budget=budget,
            next_request=self.loop.next_request if hasattr(driver, "next_request") else None,
        )

        def tap(event: AgentEvent) -> None:
            if drop_event is None or not drop_event(event):
                self.checker.record_event(event)

        self.loop.events.wiretap(tap)
        with runtime_context(clock=self.clock, ids=self.ids):
            self.state = AgentState()
            if initial is not None:
                self.state = initial(self.state)
        self.turns = 0
        self.yielded: list[AgentState] = []

    def say(self, text: str) -> AgentState:
        """One turn, observed as the runner observes it."""
        self.turns += 1
        with runtime_context(clock=self.clock, ids=self.ids):
            state = self.state.with_user_message(text)
        self.checker.begin(self.turns, state)
        previous: AgentState | None = None
        for yielded in self.loop.iterate(state):
            self.yielded.append(yielded)
            if previous is not None:
                self.checker.observe(previous, is_final=False)
            status = yielded.status()
            if status is None or not status.is_terminal():
                self.checker.foresee(yielded)  # while the loop waits here
            previous = yielded
        assert previous is not None
        self.checker.observe(previous, is_final=True)
        self.state = previous
        return previous

    @property
    def violations(self) -> list[Violation]:
        return self.checker.violations

    def of(self, name: str) -> list[Violation]:
        """Violations of invariant ``name``."""
        return [v for v in self.checker.violations if v.invariant == name]


def assert_violation(agent: Agent, name: str, *, turn: int, step: int, contains: str) -> Violation:
    """The first violation of ``name`` says what broke (``contains``) at ``turn``/``step``."""
    found = agent.of(name)
    assert found, f"expected a {name} violation, got {[str(v) for v in agent.violations]}"
    first = found[0]
    assert first.invariant == name
    assert (first.turn, first.step) == (turn, step), str(first)
    assert contains in first.message, str(first)
    assert str(first).startswith(f"[{name}] turn {turn}, step {step}: ")
    return first


class Wrapping:
    """Base of the broken drivers: delegate to the real driver, then tamper with the step."""

    def __init__(self, inner: ToolCallingDriver) -> None:
        self.inner = inner

    def use_tools(self, state: AgentState, runtime: StepRuntime) -> AgentState:
        after = self.inner.use_tools(state, runtime)
        step = after.current_step()
        assert step is not None
        return self.tamper(state, after, step, runtime)

    def tamper(
        self, before: AgentState, after: AgentState, step: AgentStep, runtime: StepRuntime
    ) -> AgentState:
        raise NotImplementedError


class ForceRouting(Wrapping):
    """A driver that routes the step's messages with another trace mode than the loop's."""

    def __init__(self, inner: ToolCallingDriver, mode: TraceMode) -> None:
        super().__init__(inner)
        self.mode = mode

    def use_tools(self, state: AgentState, runtime: StepRuntime) -> AgentState:
        return self.inner.use_tools(state, dataclasses.replace(runtime, trace_mode=self.mode))
