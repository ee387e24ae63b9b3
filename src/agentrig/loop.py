"""``AgentLoop``: the stateless step loop. It yields one state per step and a final state."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Generator, Iterator
from contextlib import AbstractContextManager
from typing import Any, cast

from agentrig._effects import Effect, Infer, Resumed, UseTools, in_event_loop, step_of
from agentrig._provenance import foreign_ids, foreign_times
from agentrig.clock import Clock, IdFactory, SystemClock, UuidIds, runtime_context
from agentrig.continuation import StopReason, StopSignal
from agentrig.drivers.base import Driver, RetryCheck, StepRuntime
from agentrig.errors import (
    AgentStop,
    ConfigurationError,
    EventListenerError,
    ForeignClockError,
    StepInterrupted,
)
from agentrig.events import (
    AgentEvent,
    AgentExecutionCompleted,
    AgentExecutionFailed,
    AgentExecutionStarted,
    AgentExecutionStopped,
    AgentStepCompleted,
    AgentStepStarted,
    ContinuationEvaluated,
    EventBus,
    StopSignalReceived,
    TokenUsageReported,
)
from agentrig.hooks import HookContext, HookStack, HookTrigger
from agentrig.messages import Message
from agentrig.state import AgentState, ExecutionStatus, InferenceRequest, StepError, TraceMode
from agentrig.tools import ToolExecutor, Tools

LOOP_SOURCE = "AgentLoop"

# Hot-path enum constants: see "Enum members on the hot path" in docs/architecture.md.
_BEFORE_STEP = HookTrigger.BEFORE_STEP
_AFTER_STEP = HookTrigger.AFTER_STEP
_BEFORE_INFERENCE_REQUEST = HookTrigger.BEFORE_INFERENCE_REQUEST


class AgentLoop:
    """Runs an agent: before-execution, then steps until the state says stop, then the end.

    The loop holds no per-run data: everything lives in the ``AgentState`` it is given and yields.
    ``iterate()`` yields the state after every step that did not end the loop, then the final
    state. Entering with a finished state starts a new execution; entering with an in-progress
    one resumes it (D3).
    """

    def __init__(
        self,
        *,
        driver: Driver,
        tools: Tools | None = None,
        hooks: HookStack | None = None,
        events: EventBus | None = None,
        tool_executor: ToolExecutor | None = None,
        trace_mode: TraceMode = TraceMode.SEPARATED,
        clock: Clock | None = None,
        ids: IdFactory | None = None,
        retry_checks: tuple[RetryCheck, ...] = (),
    ) -> None:
        self.driver = driver
        self.tools = tools or Tools()
        self.events = events or EventBus()
        self.hooks = (hooks or HookStack()).with_events(self.events)
        self.executor = tool_executor or ToolExecutor(self.tools, self.hooks, self.events)
        self.trace_mode = trace_mode
        self.clock = clock or SystemClock()
        self.ids = ids or UuidIds()
        self.retry_checks = retry_checks

    def _scope(self) -> AbstractContextManager[None]:
        return runtime_context(clock=self.clock, ids=self.ids)

    # --- states on the agent's clock and ids -----------------------------------------------

    def new_state(self, message: str | Message | None = None, **fields: Any) -> AgentState:
        """A fresh state (``AgentState(**fields)``) holding ``message`` as its first user
        message, stamped by this agent's clock and ids: with a ``FakeClock`` and ``SeededIds``,
        runs from it are byte-identical, as no time or id comes from the system."""
        with self._scope():
            state = AgentState(**fields)
            return state if message is None else state.with_user_message(message)

    def continue_with(self, state: AgentState, message: str | Message) -> AgentState:
        """``state`` with the user's next ``message`` appended, stamped by this agent's clock
        and ids; a finished state then starts a new execution when run."""
        with self._scope():
            return state.with_user_message(message)

    def check_clock(self, state: AgentState) -> AgentState:
        """``state`` unchanged when its times and ids can come from this agent's clock and ids;
        otherwise a :class:`~agentrig.errors.ForeignClockError` naming each that cannot.

        A state made outside the agent (``AgentState()`` rather than ``agent.new_state()``)
        takes the system clock's time and a random id: running it would mix two clocks, and
        runs would no longer be byte-identical. The rule: a time is foreign when it is later
        than the clock reads, or earlier than the clock's ``start`` (``FakeClock.start``); an
        id the runtime makes (agent, message, execution, step and tool execution ids) is
        foreign when it is a UUID the id factory says it did not hand out (``SeededIds.issued``).
        Ids a user or a provider chose are not checked; on the system clock and random UUIDs
        only a time ahead of the clock is caught. Checking moves neither the clock nor the ids.
        """
        problems = [*foreign_times(state, self.clock), *foreign_ids(state, self.ids)]
        if problems:
            raise ForeignClockError(problems)
        return state

    def next_request(self, state: AgentState, *, hooks: bool = True) -> InferenceRequest | None:
        """What the model will see next: the request the next step from ``state`` would send,
        as the driver compiles it (system prompt first, then the compiler's messages: in inline
        mode without other executions' traces; the tools, response format and LLM config),
        after the hooks that run before it change the state and the request; None when the
        next step would send nothing (a hook stops the run, or fails, first).

        From a fresh or finished state, the next step is the first of a new execution: the
        ``before_execution`` hooks run, then ``before_step`` and ``before_inference_request``.
        From a state in progress (one ``iterate`` yielded), it is the next step of that
        execution: ``before_step`` and ``before_inference_request`` only (running such a state
        with ``execute`` again runs ``before_execution`` first, which this leaves out).

        The hooks run on the state value, which is immutable: ``state`` is not changed, and
        nothing they do to the state outlives the answer. They read the agent's clock and
        report no events (``HookExecuted``). Ids (of the system message, of what a hook makes)
        come from a fork of the agent's id factory when it has ``fork()`` (``SeededIds``: the
        very ids the step will take), else from a throwaway source; asking takes no id from
        the agent. What a hook does outside the state it returns (counting its calls, writing a
        file, moving a ``FakeClock``) it does again here: pass ``hooks=False`` for the request
        the driver builds from ``state`` alone. Raises ``ConfigurationError`` for a driver
        without ``next_request(state, tools)``.
        """
        preview = getattr(self.driver, "next_request", None)
        if preview is None:
            raise ConfigurationError(
                f"the driver {self.driver!r} cannot say what it would send: it has no "
                "next_request(state, tools) method (ToolCallingDriver has)"
            )
        stack = self.hooks.with_events(None) if hooks else HookStack()
        fork = getattr(self.ids, "fork", None)
        ids: IdFactory = fork() if callable(fork) else _PREVIEW_IDS
        with runtime_context(clock=self.clock, ids=ids):
            ready = _before_request(state, stack)
            if ready is None:
                return None
            request: InferenceRequest = preview(ready, self.tools)
            if not stack.by_trigger[_BEFORE_INFERENCE_REQUEST]:
                return request
            context = _hooked(
                stack, HookContext(_BEFORE_INFERENCE_REQUEST, ready, inference_request=request)
            )
        if context is None:
            return None
        return context.inference_request or request

    def execute(self, state: AgentState) -> AgentState:
        """Run to the end and return the final state."""
        final = state
        for yielded in self.iterate(state):
            final = yielded
        return final

    def iterate(self, state: AgentState) -> Iterator[AgentState]:
        """Yield the state after each step, then the final state.

        Refused at once inside a running event loop (the run would block it): use ``aiterate``.
        """
        if in_event_loop():
            raise ConfigurationError(
                "AgentLoop.execute()/iterate() was called inside a running event loop, which it "
                "would block: use 'await agent.aexecute(state)' or "
                "'async for state in agent.aiterate(state)'"
            )
        # Direct: the run performs its effects where they arise, so it yields only states.
        return cast("Iterator[AgentState]", self._run(state, direct=True))

    async def aexecute(self, state: AgentState) -> AgentState:
        """Run to the end on the running event loop and return the final state."""
        final = state
        async for yielded in self.aiterate(state):
            final = yielded
        return final

    async def aiterate(self, state: AgentState) -> AsyncIterator[AgentState]:
        """Yield the same states as ``iterate``, running providers and tools on the event loop:
        the tool calls of a step run concurrently (see ``ToolExecutor.aexecute``)."""
        # The send/throw bookkeeping of ``Resumed``, inline: this loop runs twice a step on the
        # async path, where ``Resumed``'s method calls cost about 1% of the step.
        run = self._run(state)
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                item = run.send(value) if error is None else run.throw(error)
            except StopIteration:
                return
            if isinstance(item, AgentState):
                value, error = None, None
                yield item
                continue
            try:
                value, error = await item.aperform(), None
            except BaseException as raised:  # raised at the run's ``yield``, where it belongs
                value, error = None, raised

    def stream(self, state: AgentState) -> Iterator[AgentEvent | AgentState]:
        """Run to the end, yielding the run's events as they happen (a streaming provider's
        answer in ``InferenceDelta`` pieces among them) and, like ``iterate``, the state after
        each step; the last item is the final state.

        The events are those of this agent and its subagents, as a ``wiretap`` on the loop's bus
        sees them during the run; the final state is the one ``execute`` returns. While a step's
        events are handed out, the step is under way: its runtime context (the agent's clock and
        ids) is the current one. Stopping early ends the run without recording the step. Refused inside
        a running event loop, as ``execute`` is: use ``astream``.
        """
        if in_event_loop():
            raise ConfigurationError(
                "AgentLoop.stream() was called inside a running event loop, which it would "
                "block: use 'async for item in agent.astream(state)'"
            )
        return self._stream(state)

    def _stream(self, state: AgentState) -> Iterator[AgentEvent | AgentState]:
        # ``astream`` is this loop with ``await``s (and ``async for`` over the answer's pieces):
        # a generator cannot await, so the two stay apart; ``Resumed`` and ``_Heard`` hold what
        # they share.
        heard = _Heard(self.events, state.agent_id)
        run = Resumed(self._run(state, streaming=True))
        try:
            for item in run:
                yield from heard.drained()
                if isinstance(item, AgentState):
                    yield item
                    continue
                try:
                    if isinstance(item, Infer):
                        pieces = Resumed(item.pieces())
                        for _ in pieces:  # a piece was dispatched as an event: hand it out
                            yield from heard.drained()
                        run.resolve(pieces.returned)
                    else:
                        run.resolve(item.perform())
                except BaseException as raised:
                    run.fail(raised)
                yield from heard.drained()
            yield from heard.drained()
        finally:  # a consumer that stops early ends the run here, in its own context
            run.close()
            heard.close()

    async def astream(self, state: AgentState) -> AsyncIterator[AgentEvent | AgentState]:
        """``stream`` on the running event loop: the events as they happen, the state after
        each step, and last the final state (the one ``aexecute`` returns)."""
        heard = _Heard(self.events, state.agent_id)
        run = Resumed(self._run(state, streaming=True))
        try:
            for item in run:
                for event in heard.drained():
                    yield event
                if isinstance(item, AgentState):
                    yield item
                    continue
                try:
                    if isinstance(item, Infer):
                        pieces = item.apieces()
                        try:
                            async for piece in pieces:  # ticks, then the response
                                run.resolve(piece)
                                for event in heard.drained():
                                    yield event
                        finally:  # closed here, in this task, when the consumer stops early
                            await pieces.aclose()
                    else:
                        run.resolve(await item.aperform())
                except BaseException as raised:
                    run.fail(raised)
                for event in heard.drained():
                    yield event
            for event in heard.drained():
                yield event
        finally:  # a consumer that stops early ends the run here, in its own context
            run.close()
            heard.close()

    def _run(
        self, state: AgentState, *, streaming: bool = False, direct: bool = False
    ) -> Generator[Effect | AgentState, Any, None]:
        """The run, written once for both paths: yields effects to perform and states to hand
        to the caller (outside the runtime scope, which never spans a state's yield). With
        ``direct`` (``execute``/``iterate``), it performs the effects itself and yields only
        states."""
        scope = self._scope()  # entered around each phase, never across a state; reusable
        driver_step = step_of(self.driver)  # decided once per run, not per step
        with scope:
            state, stop_now = self._before_execution(state)
            if stop_now:
                state = self._evaluated(state, should_stop=True)
                state = self._on_stop(state)
        while not stop_now:  # a step; its driver part inline, where it may yield effects
            with scope:
                step_number = state.step_count() + 1
                state, runtime, stop_now = self._begin_step(state, step_number, streaming, direct)
                if runtime is not None:
                    try:
                        if driver_step is not None:
                            state = yield from driver_step(state, runtime)
                        else:
                            use_tools = UseTools(self.driver, state, runtime)
                            state = use_tools.perform() if direct else (yield use_tools)
                    except EventListenerError:
                        raise
                    except Exception as error:
                        state = self._step_failed(state, error, started=True)
                    state = self._after_step(state, step_number)
                if not stop_now:
                    state, stop_now = self._end_step(state)
            if not stop_now:
                yield state
        with scope:
            final = self._finish(state)
        yield final

    # --- phases ---------------------------------------------------------------------------

    def _before_execution(self, state: AgentState) -> tuple[AgentState, bool]:
        """Start or resume the execution; returns the state and whether it stops before a step."""
        state = _entered(state)
        if self.events.wants(AgentExecutionStarted):
            self.events.dispatch(
                AgentExecutionStarted.of(
                    state,
                    message_count=len(state.messages()),
                    available_tools=self.tools.names(),
                )
            )
        # Signals carried into a resumed execution meet the next step's checkpoint, where a hook
        # may still ask to continue, as they would have had the run not been cut; only what the
        # before-execution hooks add stops it here.
        carried = len(state.continuation().stop_signals)
        state = self._guarded(HookTrigger.BEFORE_EXECUTION, state)
        continuation = state.continuation()
        return state, continuation.should_stop() and len(continuation.stop_signals) > carried

    def _begin_step(
        self, state: AgentState, step_number: int, streaming: bool, direct: bool
    ) -> tuple[AgentState, StepRuntime | None, bool]:
        """The start of a step: ``AgentStepStarted`` and the before-step hooks. Returns the
        state, the runtime for the driver (None when the step does not reach the driver) and
        whether the loop stops now (a before-step hook stopped it: the stop is recorded)."""
        try:
            if self.events.listened and self.events.wants(AgentStepStarted):
                self.events.dispatch(
                    AgentStepStarted.of(
                        state, step_number=step_number, message_count=len(state.messages())
                    )
                )
            state = self._intercept(_BEFORE_STEP, state)
            if state.continuation().should_stop():
                state = self._evaluated(state, should_stop=True)
                return self._on_stop(state), None, True
            state = state.with_step_started()
        except EventListenerError:
            raise
        except Exception as error:
            return self._step_failed(state, error, started=False), None, False
        # Positional, in the order of StepRuntime's fields: a call by keyword matches each
        # keyword to its parameter, a cost paid every step.
        runtime = StepRuntime(
            self.tools,
            self.executor,
            self.hooks,
            self.events,
            self.trace_mode,
            step_number,
            streaming,
            self.retry_checks,
            direct,
        )
        return state, runtime, False

    def _step_failed(self, state: AgentState, error: Exception, *, started: bool) -> AgentState:
        """``state`` with the step's error (or stop request) recorded; a ``started`` step that
        the error cut short is archived with it."""
        if isinstance(error, AgentStop):
            if started and error.step is not None and state.current_step() is None:
                state = state.with_current_step(error.step, trace_mode=self.trace_mode)
            return self._stop_requested(state, error)
        if isinstance(error, StepInterrupted):  # the step is archived with the error
            if started and error.step is not None and state.current_step() is None:
                state = state.with_current_step(error.step, trace_mode=self.trace_mode)
            return self._on_error(state, error.error)
        return self._on_error(state, error)

    def _end_step(self, state: AgentState) -> tuple[AgentState, bool]:
        """The end of a step: whether the loop stops (then the stop is recorded); returns the
        state with the step completed and that answer."""
        if state.should_stop():
            if not state.continuation().stop_signals:
                state = state.with_stop_signal(
                    StopSignal._trusted(reason=StopReason.COMPLETED, source=LOOP_SOURCE)
                )
            state = self._evaluated(state, should_stop=True)
            state = self._on_stop(state)
            return state.with_current_step_completed(), True
        state = self._evaluated(state, should_stop=False)
        return state.with_current_step_completed(), False

    def _after_step(self, state: AgentState, step_number: int) -> AgentState:
        state = self._guarded(_AFTER_STEP, state)
        events = self.events
        if not events.listened or not (
            events.wants(AgentStepCompleted) or events.wants(TokenUsageReported)
        ):
            return state
        step = state.current_step()
        if step is None and state.step_count() == step_number:
            step = state.last_step()  # the step failed and was archived with its error
        if step is None:
            return state
        if self.events.wants(AgentStepCompleted):
            errors = step.all_errors()
            self.events.dispatch(
                AgentStepCompleted.of(
                    state,
                    step_number=step_number,
                    step_type=step.step_type().value,
                    has_tool_calls=step.has_tool_calls(),
                    error_count=len(errors),
                    error_messages=tuple(error.message for error in errors),
                    usage=step.usage(),
                    finish_reason=step.finish_reason(),
                )
            )
        if self.events.wants(TokenUsageReported):
            usage = step.usage()
            if not usage.is_zero():
                self.events.dispatch(
                    TokenUsageReported.of(state, step_number=step_number, usage=usage)
                )
        return state

    def _finish(self, state: AgentState) -> AgentState:
        state = state.with_current_step_completed().with_execution_buffer_cleared()
        state = self._guarded(HookTrigger.AFTER_EXECUTION, state)
        state = state.with_execution_completed()
        if self.events.wants(AgentExecutionCompleted):
            self.events.dispatch(
                AgentExecutionCompleted.of(
                    state,
                    status=str(state.status()),
                    total_steps=state.step_count(),
                    usage=state.usage(),
                    errors=tuple(error.message for error in state.errors()),
                    final_response=state.final_response().to_text(),
                )
            )
        return state

    def _on_stop(self, state: AgentState) -> AgentState:
        state = self._guarded(HookTrigger.ON_STOP, state)
        if self.events.wants(AgentExecutionStopped):
            signal = state.stop_signal() or StopSignal(reason=StopReason.COMPLETED)
            self.events.dispatch(
                AgentExecutionStopped.of(
                    state,
                    stop_reason=signal.reason.value,
                    stop_message=signal.message,
                    source=signal.source,
                    total_steps=state.step_count(),
                    stop_context=dict(signal.context),
                )
            )
        return state

    def _on_error(self, state: AgentState, error: Exception) -> AgentState:
        state = state.with_failure(error)
        if self.hooks.hooks_for(HookTrigger.ON_ERROR):
            try:
                given = state.errors()
                context = self.hooks.intercept(
                    HookContext(HookTrigger.ON_ERROR, state, errors=given)
                )
                state = _with_errors_added(context.state, given, context.errors)
            except EventListenerError:
                raise
            except Exception as hook_error:
                state = state.with_failure(hook_error)
        if self.events.wants(AgentExecutionFailed):
            self.events.dispatch(
                AgentExecutionFailed.of(
                    state,
                    error=str(error),
                    error_type=type(error).__name__,
                    steps_completed=state.step_count(),
                )
            )
        return state

    def _stop_requested(self, state: AgentState, stop: AgentStop) -> AgentState:
        if self.events.wants(StopSignalReceived):
            self.events.dispatch(
                StopSignalReceived.of(
                    state,
                    reason=StopReason.STOP_REQUESTED.value,
                    message=stop.stop_message,
                    source=stop.source,
                    context=dict(stop.context),
                )
            )
        return state.with_stop_signal(StopSignal.requested_by(stop))

    def _evaluated(self, state: AgentState, *, should_stop: bool) -> AgentState:
        if self.events.listened and self.events.wants(ContinuationEvaluated):
            reason = state.last_stop_reason() if should_stop else None
            self.events.dispatch(
                ContinuationEvaluated.of(
                    state,
                    step_number=state.step_count(),
                    should_stop=should_stop,
                    stop_reason=reason.value if reason else None,
                    explanation=state.continuation().explain(),
                )
            )
        return state

    # --- hooks ----------------------------------------------------------------------------

    def _intercept(self, trigger: HookTrigger, state: AgentState) -> AgentState:
        if not self.hooks.by_trigger[trigger]:
            return state
        return self.hooks.intercept(HookContext(trigger, state)).state

    def _guarded(self, trigger: HookTrigger, state: AgentState) -> AgentState:
        """Run hooks for ``trigger``, turning AgentStop and errors into state."""
        if not self.hooks.by_trigger[trigger]:
            return state  # no hook: nothing can fail (and no try to set up, most steps)
        try:
            return self.hooks.intercept(HookContext(trigger, state)).state
        except EventListenerError:
            raise
        except AgentStop as stop:
            return self._stop_requested(state, stop)
        except Exception as error:
            return self._on_error(state, error)


def _entered(state: AgentState) -> AgentState:
    """``state`` as an execution starts or resumes from it: a finished one gives way to a new
    execution; the count goes up and the status is in progress."""
    status = state.status()
    if status is not None and status.is_terminal():
        state = state.for_next_execution()
    state = state.with_execution_count(state.execution_count + 1)
    return state.with_execution_status(ExecutionStatus.IN_PROGRESS)


def _before_request(state: AgentState, hooks: HookStack) -> AgentState | None:
    """The state the driver builds the next request from, as the loop prepares it (see
    ``AgentLoop.next_request``), or None when the loop would stop before the step."""
    status = state.status()
    if status is None or status.is_terminal():  # the next step starts an execution
        state = _entered(state)
        carried = len(state.continuation().stop_signals)
        context = _hooked(hooks, HookContext(HookTrigger.BEFORE_EXECUTION, state))
        if context is None:
            return None
        continuation = context.state.continuation()
        if continuation.should_stop() and len(continuation.stop_signals) > carried:
            return None
        state = context.state
    context = _hooked(hooks, HookContext(_BEFORE_STEP, state))
    if context is None or context.state.continuation().should_stop():
        return None
    return context.state.with_step_started()


def _hooked(hooks: HookStack, context: HookContext) -> HookContext | None:
    """``context`` after the hooks of its trigger, or None when one stops the run or fails
    (the loop would then send nothing)."""
    if not hooks.by_trigger[context.trigger]:
        return context
    try:
        return hooks.intercept(context)
    except Exception:  # AgentStop included: the run stops, or fails, before the request
        return None


class _Heard:
    """The events of agent ``agent_id`` and of its subagents, heard on ``events`` (a wiretap)
    until ``close``, for a stream to hand out."""

    def __init__(self, events: EventBus, agent_id: str) -> None:
        self._agent_id = agent_id
        self._heard: deque[AgentEvent] = deque()
        self.close = events.wiretap(self._hear)

    def _hear(self, event: AgentEvent) -> None:
        if event.agent_id == self._agent_id or event.parent_agent_id == self._agent_id:
            self._heard.append(event)

    def drained(self) -> Iterator[AgentEvent]:
        """The events heard so far, oldest first, each handed out once."""
        heard = self._heard
        while heard:
            yield heard.popleft()


def _with_errors_added(
    state: AgentState, given: tuple[StepError, ...], errors: tuple[StepError, ...]
) -> AgentState:
    """``state`` with the errors an ``on_error`` hook added to the ``given`` ones recorded."""
    added = tuple(error for error in errors if error not in given)
    execution = state.execution
    if not added or execution is None:
        return state
    return state.with_execution(execution.evolve(errors=(*execution.errors, *added)))


class _PreviewIds:
    """The ids of what ``next_request`` makes when the agent's id factory cannot fork: fixed,
    so asking takes none from the agent."""

    def new_id(self, kind: str) -> str:
        return f"next-request-{kind}"


_PREVIEW_IDS = _PreviewIds()
