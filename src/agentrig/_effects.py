"""One loop, two drivers: step logic written once as generators of effects (sans-IO).

The loop and the tool-calling driver describe a step as a generator that *yields* what it needs
done from outside — ask the provider (``Infer``), run the step's tool calls (``RunTools``), run a
driver's step (``UseTools``) — and receives the result (or has the error raised at the ``yield``).
``run_sync`` performs each effect with a plain call; ``run_async`` awaits it. Everything else (hooks,
events, the state changes) runs in the generator, so both paths share it line for line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from agentrig.drivers.provider import AsyncInferenceProvider, InferenceProvider
from agentrig.errors import ConfigurationError

if TYPE_CHECKING:
    from agentrig.drivers.base import Driver, StepRuntime
    from agentrig.messages import ToolCall
    from agentrig.state import AgentState, InferenceRequest, InferenceResponse, ToolExecutions
    from agentrig.tools import ToolExecutor

T = TypeVar("T")


class Effect(Protocol):
    """Something a step needs done outside its generator: performed by a call or awaited."""

    def perform(self) -> Any:
        """Do it synchronously (the ``execute``/``iterate`` path)."""
        ...

    async def aperform(self) -> Any:
        """Do it on the running event loop (the ``aexecute``/``aiterate`` path)."""
        ...


Effects = Generator[Effect, Any, T]
"""A step (or part of one) as a generator: yields effects, receives their results, returns T."""


def run_sync(effects: Effects[T]) -> T:
    """Drive ``effects`` to the end, performing each effect with a plain call."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = effects.send(value) if error is None else effects.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            value, error = effect.perform(), None
        except BaseException as raised:  # raised at the generator's ``yield``, where it belongs
            value, error = None, raised


async def run_async(effects: Effects[T]) -> T:
    """Drive ``effects`` to the end, awaiting each effect."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = effects.send(value) if error is None else effects.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            value, error = await effect.aperform(), None
        except BaseException as raised:
            value, error = None, raised


@dataclass(frozen=True, slots=True)
class Infer:
    """Ask ``provider`` for its answer to ``request``.

    The async path awaits ``provider.ainfer`` when the provider has one, and otherwise runs
    ``provider.infer`` in a worker thread (context variables copied). The sync path calls
    ``infer``; a provider that has only ``ainfer`` is run on a private event loop.
    """

    provider: InferenceProvider | AsyncInferenceProvider
    request: InferenceRequest

    def perform(self) -> InferenceResponse:
        # ``getattr`` rather than ``isinstance`` against the protocols: a runtime-checkable
        # protocol check costs microseconds, and this runs every step.
        infer = getattr(self.provider, "infer", None)
        if infer is not None:
            return cast("InferenceResponse", infer(self.request))
        ainfer = cast("AsyncInferenceProvider", self.provider).ainfer
        return cast("InferenceResponse", run_coroutine(ainfer(self.request), "the provider"))

    async def aperform(self) -> InferenceResponse:
        ainfer = getattr(self.provider, "ainfer", None)
        if ainfer is not None:
            return cast("InferenceResponse", await ainfer(self.request))
        infer = cast("InferenceProvider", self.provider).infer
        return await asyncio.to_thread(infer, self.request)


@dataclass(frozen=True, slots=True)
class RunTools:
    """Run the tool calls of a step: in order (sync path) or concurrently (async path)."""

    executor: ToolExecutor
    calls: tuple[ToolCall, ...]
    state: AgentState
    step_number: int

    def perform(self) -> tuple[ToolExecutions, AgentState]:
        return self.executor.execute(self.calls, self.state, self.step_number)

    async def aperform(self) -> tuple[ToolExecutions, AgentState]:
        return await self.executor.aexecute(self.calls, self.state, self.step_number)


@dataclass(frozen=True, slots=True)
class UseTools:
    """Run one step of ``driver``: ``use_tools``, or awaited ``ause_tools`` in the async path
    (a driver without it runs in a worker thread, context variables copied)."""

    driver: Driver
    state: AgentState
    runtime: StepRuntime

    def perform(self) -> AgentState:
        return self.driver.use_tools(self.state, self.runtime)

    async def aperform(self) -> AgentState:
        ause_tools = getattr(self.driver, "ause_tools", None)
        if ause_tools is not None:
            return await ause_tools(self.state, self.runtime)  # type: ignore[no-any-return]
        return await asyncio.to_thread(self.driver.use_tools, self.state, self.runtime)


def in_event_loop() -> bool:
    """True when this thread is running an asyncio event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_coroutine(coroutine: Any, what: str) -> Any:
    """Run ``coroutine`` to completion on a private event loop (the sync path meeting ``async``
    code). Refused inside a running event loop, where it would have to block that loop."""
    if in_event_loop():
        coroutine.close()
        raise ConfigurationError(
            f"{what} is async and was called from synchronous code running inside an event "
            "loop, which cannot wait for it there: use 'await agent.aexecute(state)'"
        )
    return asyncio.run(coroutine)
