"""One loop, two drivers: step logic written once as generators of effects (sans-IO).

The loop and the tool-calling driver describe a step as a generator that *yields* what it needs
done from outside — ask the provider (``Infer``), run the step's tool calls (``RunTools``), run a
driver's step (``UseTools``) — and receives the result (or has the error raised at the ``yield``).
``run_sync`` performs each effect with a plain call; ``run_async`` awaits it. Everything else (hooks,
events, the state changes) runs in the generator, so both paths share it line for line.

The sync path (``execute``/``iterate``, ``StepRuntime.direct``) drives no effects at all: each
yield site reads ``effect.perform() if direct else (yield effect)`` (or calls what ``perform``
would call, such as ``infer_now``), so the step performs the effect where it arises and its
generator runs to the end in one go; the streaming and async paths yield the same effects.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from agentrig.errors import ConfigurationError
from agentrig.events import EventBus, InferenceDelta

if TYPE_CHECKING:
    from agentrig.drivers.base import Driver, StepRuntime
    from agentrig.drivers.provider import AsyncInferenceProvider, Delta, InferenceProvider
    from agentrig.messages import ToolCall
    from agentrig.state import AgentState, InferenceRequest, InferenceResponse, ToolExecutions
    from agentrig.tools import ToolExecutor

T = TypeVar("T")
Y = TypeVar("Y")
F = TypeVar("F", bound=Callable[..., Any])


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


class Resumed(Generic[Y, T]):
    """A generator driven from outside: each ``next()`` resumes it with what it is owed (the
    value ``resolve`` set, sent in; or the error ``fail`` set, raised at its ``yield``) and
    returns what it yields next; when it returns, iteration stops and ``returned`` holds its
    value. The send/throw bookkeeping of the runners of effects (``run_sync``, ``run_async``,
    the loop's ``stream`` and ``astream``; ``aiterate`` keeps it inline, see there)."""

    __slots__ = ("_error", "_generator", "_value", "returned")

    def __init__(self, generator: Generator[Y, Any, T]) -> None:
        self._generator = generator
        self._value: Any = None
        self._error: BaseException | None = None
        self.returned: T | None = None

    def __iter__(self) -> Resumed[Y, T]:
        return self

    def __next__(self) -> Y:
        value, error = self._value, self._error
        self._value = self._error = None
        try:
            if error is None:
                return self._generator.send(value)
            return self._generator.throw(error)
        except StopIteration as done:
            self.returned = done.value
            raise

    def resolve(self, value: Any) -> None:
        """Send ``value`` in at the next resumption: the result of what it yielded."""
        self._value = value

    def fail(self, error: BaseException) -> None:
        """Raise ``error`` at its ``yield`` at the next resumption, where the effect failed."""
        self._error = error

    def perform(self, effect: Effect) -> None:
        """``effect.perform()``, its result (or error) owed at the next resumption."""
        try:
            self._value = effect.perform()
        except BaseException as raised:  # raised at the generator's ``yield``, where it belongs
            self._error = raised

    async def aperform(self, effect: Effect) -> None:
        """``perform``, awaiting ``effect.aperform()`` (its twin: plain code cannot await)."""
        try:
            self._value = await effect.aperform()
        except BaseException as raised:
            self._error = raised

    def close(self) -> None:
        """Close the generator (its ``finally`` blocks run here)."""
        self._generator.close()


def run_sync(effects: Effects[T]) -> T:
    """Drive ``effects`` to the end, performing each effect with a plain call."""
    run = Resumed(effects)
    for effect in run:
        run.perform(effect)
    return cast(T, run.returned)


async def run_async(effects: Effects[T]) -> T:
    """Drive ``effects`` to the end, awaiting each effect."""
    run = Resumed(effects)
    for effect in run:
        await run.aperform(effect)
    return cast(T, run.returned)


# Effects are plain slotted records (not frozen): built a few times a step and never changed,
# they skip the frozen dataclass's ``object.__setattr__`` per field.


@dataclass(slots=True)
class Infer:
    """Ask ``provider`` for its answer to ``request``.

    The async path awaits ``provider.ainfer`` when the provider has one, and otherwise runs
    ``provider.infer`` in a worker thread (context variables copied). The sync path calls
    ``infer``; a provider that has only ``ainfer`` is run on a private event loop.
    """

    provider: InferenceProvider | AsyncInferenceProvider
    request: InferenceRequest
    deltas: DeltaEvents | None = None
    """Set in runs through ``stream``/``astream``: where the pieces of a streamed answer go."""

    def pieces(self) -> Generator[None, None, InferenceResponse]:
        """``perform``, asking a streaming provider for the answer in pieces: each piece is
        dispatched as an ``InferenceDelta`` event, then a tick is yielded (the stream runner
        hands the events out there); returns the assembled response."""
        infer_stream = getattr(self.provider, "infer_stream", None)
        if self.deltas is None or infer_stream is None:
            return self.perform()
        pieces = infer_stream(self.request)
        try:
            while True:
                try:
                    delta = next(pieces)
                except StopIteration as done:
                    return cast("InferenceResponse", done.value)
                self.deltas.dispatch(delta)
                yield None
        finally:  # a consumer that stops early closes the provider's stream here, in its context
            pieces.close()

    async def apieces(self) -> AsyncGenerator[InferenceResponse | None, None]:
        """``pieces`` for the async path: ticks, then the response as the last item. A provider
        with ``ainfer_stream`` streams on the event loop; one with only ``infer_stream`` is
        asked for its pieces on the loop's thread (the fakes, which do no I/O)."""
        if self.deltas is None:
            yield await self.aperform()
            return
        ainfer_stream = getattr(self.provider, "ainfer_stream", None)
        if ainfer_stream is not None:
            async for item in self._apieces(ainfer_stream(self.request), self.deltas):
                yield item
            return
        if getattr(self.provider, "infer_stream", None) is None:
            yield await self.aperform()
            return
        pieces = self.pieces()
        try:
            while True:
                try:
                    next(pieces)
                except StopIteration as done:
                    yield done.value
                    return
                yield None
        finally:
            pieces.close()

    async def _apieces(
        self, stream: AsyncIterator[Delta | InferenceResponse], deltas: DeltaEvents
    ) -> AsyncGenerator[InferenceResponse | None, None]:
        # Imported here: the drivers package imports this module (its tool-calling driver).
        from agentrig.drivers.provider import Delta

        try:
            async for piece in stream:
                if isinstance(piece, Delta):
                    deltas.dispatch(piece)
                    yield None
                else:
                    yield piece
                    return
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        raise ConfigurationError(
            f"{type(self.provider).__name__}.ainfer_stream ended without the response: an "
            "async streaming provider yields its Delta pieces, then the InferenceResponse last"
        )

    def perform(self) -> InferenceResponse:
        return infer_now(self.provider, self.request)

    async def aperform(self) -> InferenceResponse:
        ainfer = getattr(self.provider, "ainfer", None)
        if ainfer is not None:
            return cast("InferenceResponse", await ainfer(self.request))
        infer = cast("InferenceProvider", self.provider).infer
        import asyncio  # imported where used: the sync path runs without it

        return await asyncio.to_thread(infer, self.request)


def infer_now(
    provider: InferenceProvider | AsyncInferenceProvider, request: InferenceRequest
) -> InferenceResponse:
    """``Infer(provider, request).perform()`` without the effect: ``provider.infer(request)``,
    or an ``ainfer``-only provider run on a private event loop."""
    # An attribute read rather than ``isinstance`` against the protocols: a runtime-checkable
    # protocol check costs microseconds, and this runs every step.
    try:
        infer = provider.infer  # type: ignore[union-attr]  # no cast(): a call, every step
    except AttributeError:
        ainfer = cast("AsyncInferenceProvider", provider).ainfer
    else:
        response: InferenceResponse = infer(request)
        return response
    return cast("InferenceResponse", run_coroutine(ainfer(request), "the provider"))


@dataclass(slots=True)
class DeltaEvents:
    """Turns a streaming provider's pieces into ``InferenceDelta`` events on the bus."""

    events: EventBus
    state: AgentState
    step_number: int

    def dispatch(self, delta: Delta) -> None:
        """Dispatch ``delta`` as an ``InferenceDelta`` about the step."""
        if self.events.wants(InferenceDelta):
            self.events.dispatch(
                InferenceDelta.of(
                    self.state,
                    step_number=self.step_number,
                    text=delta.text,
                    tool_call_index=delta.index,
                    tool_call_id=delta.call_id,
                    tool_name=delta.name,
                    arguments=delta.arguments,
                    reasoning=delta.reasoning,
                )
            )


@dataclass(slots=True)
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


@dataclass(slots=True)
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
        import asyncio

        return await asyncio.to_thread(self.driver.use_tools, self.state, self.runtime)


def runs_step(use_tools: F) -> F:
    """Mark a driver's ``use_tools`` as nothing but ``run_sync(self.step(state, runtime))``: the
    loop then runs the driver's ``step`` generator itself (one runner, not two nested). A
    subclass or a patch that replaces ``use_tools`` drops the mark, and the loop calls it."""
    use_tools._runs_step = True  # type: ignore[attr-defined]
    return use_tools


def step_of(driver: Driver) -> Callable[[AgentState, StepRuntime], Effects[AgentState]] | None:
    """The driver's ``step`` generator function when its ``use_tools`` only runs it."""
    if getattr(type(driver).use_tools, "_runs_step", False):
        return driver.step  # type: ignore[attr-defined,no-any-return]
    return None


def in_event_loop() -> bool:
    """True when this thread is running an asyncio event loop."""
    # No event loop runs before asyncio is imported, and the sync path does not import it
    # (about 20 ms of every start-up, with the ssl module it brings).
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return False
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
    import asyncio

    return asyncio.run(coroutine)
