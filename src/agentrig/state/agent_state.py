"""``AgentState``: the single immutable value an agent execution revolves around (seed 002)."""

from __future__ import annotations

from typing import Any, NoReturn, Self

from pydantic import Field, JsonValue, StrictInt, model_validator

from agentrig import clock
from agentrig._model import Serializable, Timestamp, _new_object, _set_record_dict
from agentrig._text import clipped
from agentrig.continuation import ExecutionContinuation, StopReason, StopSignal
from agentrig.errors import InvalidInputError
from agentrig.messages import (
    AGENT_ID_KEY,
    EXECUTION_ID_KEY,
    NO_TRACES,
    STEP_ID_KEY,
    TRACE_KEY,
    Message,
    Messages,
    Role,
)
from agentrig.state.context import AgentContext
from agentrig.state.execution import ExecutionState
from agentrig.state.inference import LlmConfig
from agentrig.state.status import AgentStepType, ExecutionStatus, TraceMode
from agentrig.state.step import AgentStep, StepError, StepExecution, StepExecutions
from agentrig.state.usage import Usage
from agentrig.store import EXECUTION_BUFFER, INFERENCE_ORDER, MESSAGES, MessageStore

# Hot-path enum constants: see "Enum members on the hot path" in docs/architecture.md.
_SEPARATED = TraceMode.SEPARATED


class AgentState(Serializable):
    """Identity, session context and the (nullable) execution in progress.

    Every ``with_*`` method returns a new state and bumps ``updated_at``. Times and ids come from
    the current runtime context (``agentrig.clock``), so they are deterministic under the harness.

    Gotcha (seed 002): mutators that need an execution create a fresh one, with a new id, when
    there is none. Two separate calls on the same execution-less state therefore produce two
    different execution ids. Chain the calls instead:
    ``state.with_current_step(step).with_stop_signal(signal)``.
    """

    agent_id: str = Field(default_factory=lambda: clock.new_id("agent"))
    parent_agent_id: str | None = None
    created_at: Timestamp = Field(default_factory=clock.now)
    updated_at: Timestamp | None = None
    execution_count: StrictInt = Field(default=0, ge=0)
    llm_config: LlmConfig | None = None
    context: AgentContext = Field(default_factory=AgentContext)
    execution: ExecutionState | None = None

    @model_validator(mode="after")
    def _default_updated_at(self) -> Self:
        if self.updated_at is None:
            object.__setattr__(self, "updated_at", self.created_at)
        return self

    @classmethod
    def empty(cls, **fields: Any) -> Self:
        """A new state with no messages and no execution."""
        return cls(**fields)

    # --- mutators -------------------------------------------------------------------------

    def _with(self, **changes: Any) -> Self:
        """A copy with internal, already-typed ``changes`` and a new ``updated_at``."""
        if "updated_at" not in changes:
            changes["updated_at"] = clock.now()
        # ``_replace`` inlined: every state transition of the loop comes through here.
        new = _new_object(type(self))
        _set_record_dict(new, {**self.__dict__, **changes})
        return new

    def _with_checked(self, **changes: Any) -> Self:
        """Like ``_with`` for values that come from callers: validated."""
        changes.setdefault("updated_at", clock.now())
        return self.evolve(**changes)

    def _ensure_execution(self) -> ExecutionState:
        return self.execution if self.execution is not None else ExecutionState.fresh()

    def with_user_message(self, message: str | Message) -> Self:
        """A state with a user message appended to ``messages``."""
        if isinstance(message, str):
            message = Message(role=Role.USER, content=message)
        _require(message, Message, "message")
        return self._with(context=self.context.with_appended(message))

    def with_messages(self, messages: Messages) -> Self:
        """A state whose ``messages`` section is replaced."""
        _require(messages, Messages, "messages")
        return self._with(context=self.context.with_messages(messages))

    def with_message_store(self, store: MessageStore) -> Self:
        """A state with the whole store replaced."""
        _require(store, MessageStore, "store")
        return self._with(context=self.context._replace(store=store))

    def with_system_prompt(self, prompt: str) -> Self:
        """A state with the system prompt set."""
        return self._with(context=self.context.evolve(system_prompt=prompt))

    def with_response_format(self, response_format: dict[str, JsonValue] | None) -> Self:
        """A state with the response format set."""
        return self._with(context=self.context.evolve(response_format=response_format))

    def with_metadata(self, key: str, value: JsonValue) -> Self:
        """A state with context metadata ``key`` set."""
        metadata = {**self.context.metadata, key: value}
        return self._with(context=self.context.evolve(metadata=metadata))

    def with_llm_config(self, config: LlmConfig | None) -> Self:
        """A state with the LLM config set."""
        if config is None or type(config) is LlmConfig:  # validated already
            return self._with(llm_config=config)
        return self._with_checked(llm_config=config)

    def with_execution(self, execution: ExecutionState | None) -> Self:
        """A state with the execution replaced."""
        return self._with_checked(execution=execution)

    def with_execution_status(self, status: ExecutionStatus) -> Self:
        """A state whose execution has ``status`` (an execution is created if missing)."""
        if status not in _STATUSES:
            _reject("status", f"{status!r} is not one of: {', '.join(_STATUSES)}")
        return self._with(
            execution=self._ensure_execution()._replace(status=ExecutionStatus(status))
        )

    def with_execution_count(self, count: int) -> Self:
        """A state with the execution counter set."""
        if type(count) is int and count >= 0:  # the loop's case: nothing to validate
            return self._with(execution_count=count)
        return self._with_checked(execution_count=count)

    def with_step_started(self) -> Self:
        """A state whose execution records the start time of the next step."""
        now = clock.now()
        return self._with(execution=self._ensure_execution().with_step_started(now), updated_at=now)

    def with_current_step(
        self, step: AgentStep, *, trace_mode: TraceMode = TraceMode.SEPARATED
    ) -> Self:
        """Set the step in progress, tag its output messages and route them (D1).

        Each output message gets ``step_id``, ``execution_id``, ``agent_id``, and
        ``is_trace=True`` unless the step is a final response. Traces go to the execution buffer
        in separated mode and to ``messages`` in inline mode; the rest goes to ``messages``.
        """
        if type(step) is not AgentStep:  # the loop's case, checked without a call
            _require(step, AgentStep, "step")
        execution = self._ensure_execution()
        if not step.output_messages:
            return self._with(execution=execution.with_current_step(step))
        is_trace = step.step_type() is not AgentStepType.FINAL_RESPONSE
        execution_id = execution.execution_id
        traces = frozenset((execution_id,)) if is_trace else NO_TRACES
        outputs = step.output_messages
        if not _all_tagged(outputs, step.id, execution_id, self.agent_id, is_trace):
            retagged = tuple(self._tag(m, step.id, execution_id, is_trace) for m in outputs)
            step = step._replace(output_messages=Messages._tagged(retagged, traces))
        elif outputs.trace_executions != traces:
            step = step._replace(output_messages=Messages._tagged(outputs.to_tuple(), traces))
        return self._with_tagged_step(execution, step, is_trace, trace_mode)

    def __repr__(self) -> str:
        """A one-line summary; the whole state is ``to_json()`` (or ``debug()``). A long run's
        full repr runs to megabytes, and Python 3.11's ``asyncio.run`` formats its result with
        it once per call."""
        status = self.status()
        why = ""
        if status is ExecutionStatus.FAILED:
            errors = self.errors()
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            first = clipped(errors[0].message, 120) if errors else "no error recorded"
            reason = self.last_stop_reason()
            stop = f", stop_reason={reason.value}" if reason is not None else ""
            why = f"{stop}, error={first!r}{more}"
        return (
            f"AgentState(agent_id={self.agent_id!r}, execution_count={self.execution_count}, "
            f"status={_value(status)}, steps={self.step_count()}, "
            f"messages={len(self.messages())}{why})"
        )

    def with_tagged_step(
        self, step: AgentStep, *, is_trace: bool, trace_mode: TraceMode = TraceMode.SEPARATED
    ) -> Self:
        """``with_current_step`` for a driver that tagged the step's output messages itself.

        For a state with an execution in progress and a step whose output messages (not empty)
        a driver built with ``message_tags(step.id, execution_id, agent_id, is_trace)`` for this
        state, and ``Messages._tagged`` with the trace executions that implies (``is_trace``:
        the step is not a final response). The tags are not checked again, which saves the
        state a pass over the messages every step; wrong tags are the driver's bug. Any other
        step goes through ``with_current_step``.
        """
        execution = self.execution
        if execution is None or not step.output_messages:
            return self.with_current_step(step, trace_mode=trace_mode)
        return self._with_tagged_step(execution, step, is_trace, trace_mode)

    def _with_tagged_step(
        self, execution: ExecutionState, step: AgentStep, is_trace: bool, trace_mode: TraceMode
    ) -> Self:
        """``with_tagged_step`` once the execution is known (``with_current_step`` ends here)."""
        section = EXECUTION_BUFFER if is_trace and trace_mode is _SEPARATED else MESSAGES
        store = self.context.store._appended(section, step.output_messages)
        return self._with(
            execution=execution.with_current_step(step),
            context=self.context._replace(store=store),
        )

    def _tag(self, message: Message, step_id: str, execution_id: str, is_trace: bool) -> Message:
        tags = message_tags(step_id, execution_id, self.agent_id, is_trace)
        return message._replace(metadata={**message.metadata, **tags})

    def with_current_step_completed(self) -> Self:
        """Archive the step in progress into ``step_executions`` (no-op without one)."""
        if self.execution is None:
            return self
        now = clock.now()
        execution = self.execution.with_current_step_completed(now)
        if execution is self.execution:
            return self
        return self._with(execution=execution, updated_at=now)

    def with_stop_signal(self, signal: StopSignal) -> Self:
        """Add a stop signal to the execution (an execution is created if missing)."""
        _require(signal, StopSignal, "signal")
        return self._with(execution=self._ensure_execution().with_signal(signal))

    def with_execution_continued(self) -> Self:
        """Ask the loop to continue once despite stop signals."""
        return self._with(execution=self._ensure_execution().with_continuation_requested())

    def with_failure(self, error: BaseException) -> Self:
        """Record ``error``: status failed, the step in progress archived with the error."""
        return self._with(execution=self._ensure_execution().failed(error))

    def with_execution_completed(self) -> Self:
        """Set the terminal status: failed, stopped or completed (D3)."""
        return self._with(execution=self._ensure_execution().completed())

    def with_execution_buffer_cleared(self) -> Self:
        """A state with an empty execution buffer."""
        store = self.context.store.section(EXECUTION_BUFFER).clear()
        if store is self.context.store:
            return self
        return self._with(context=self.context._replace(store=store))

    def for_next_execution(self) -> Self:
        """Session data kept, execution dropped, execution buffer cleared."""
        store = self.context.store.section(EXECUTION_BUFFER).clear()
        return self._with(execution=None, context=self.context._replace(store=store))

    # --- accessors ------------------------------------------------------------------------

    def messages(self) -> Messages:
        """The ``messages`` section: the conversation."""
        return self.context.messages()

    def store(self) -> MessageStore:
        """The whole message store."""
        return self.context.store

    def metadata(self) -> dict[str, JsonValue]:
        """Context metadata."""
        return self.context.metadata

    def system_prompt(self) -> str:
        """The system prompt."""
        return self.context.system_prompt

    def messages_for_inference(self) -> Messages:
        """``summary``, ``buffer``, ``messages`` and ``execution_buffer``, in that order."""
        return self.context.store._select(INFERENCE_ORDER)

    def status(self) -> ExecutionStatus | None:
        """The execution status, or None between executions."""
        return self.execution.status if self.execution is not None else None

    def execution_id(self) -> str | None:
        """The current execution's id, if any."""
        return self.execution.execution_id if self.execution is not None else None

    def step_count(self) -> int:
        """Steps in the current execution, the one in progress included."""
        return self.execution.step_count() if self.execution is not None else 0

    def step_executions(self) -> StepExecutions:
        """Completed steps with timing."""
        return self.execution.step_executions if self.execution is not None else StepExecutions()

    def steps(self) -> tuple[AgentStep, ...]:
        """Completed steps."""
        return self.step_executions().steps()

    def current_step(self) -> AgentStep | None:
        """The step in progress."""
        return self.execution.current_step if self.execution is not None else None

    def current_step_or_last(self) -> AgentStep | None:
        """The step in progress, else the last completed one."""
        return self.current_step() or self.last_step()

    def last_step_execution(self) -> StepExecution | None:
        """The last completed step with timing."""
        return self.step_executions().last()

    def last_step(self) -> AgentStep | None:
        """The last completed step."""
        last = self.last_step_execution()
        return last.step if last is not None else None

    def last_step_type(self) -> AgentStepType | None:
        """Type of the last completed step."""
        step = self.last_step()
        return step.step_type() if step is not None else None

    def continuation(self) -> ExecutionContinuation:
        """The execution's continuation (empty between executions)."""
        if self.execution is None:
            return ExecutionContinuation()
        return self.execution.continuation

    def stop_signal(self) -> StopSignal | None:
        """The winning stop signal of the execution, or of its last step on a tie (seed 002)."""
        candidates = [self.continuation().stop_signal()]
        last = self.last_step_execution()
        if last is not None:
            candidates.insert(0, last.continuation.stop_signal())
        best: StopSignal | None = None
        for signal in candidates:
            if signal is not None and (best is None or signal.outranks(best)):
                best = signal
        return best

    def last_stop_reason(self) -> StopReason | None:
        """Why the execution stopped (or is about to)."""
        signal = self.stop_signal()
        return signal.reason if signal is not None else None

    def should_stop(self) -> bool:
        """The execution's verdict; True when there is no execution."""
        return self.execution.should_stop() if self.execution is not None else True

    def usage(self) -> Usage:
        """Usage of the current execution."""
        return self.execution.usage() if self.execution is not None else Usage()

    def errors(self) -> tuple[StepError, ...]:
        """Every error of the current execution."""
        return self.execution.all_errors() if self.execution is not None else ()

    def has_errors(self) -> bool | None:
        """Whether the execution recorded errors; None between executions."""
        return self.execution.has_errors() if self.execution is not None else None

    def execution_duration(self) -> float | None:
        """Seconds since the execution started (until it completed)."""
        return self.execution.total_duration() if self.execution is not None else None

    def has_final_response(self) -> bool:
        """True when the latest step is a final response with non-blank text."""
        step = self.current_step_or_last()
        return (
            step is not None
            and step.step_type() is AgentStepType.FINAL_RESPONSE
            and bool(step.output_messages.to_text().strip())
        )

    def final_response(self) -> Messages:
        """The final response messages; empty when the execution did not end on one."""
        step = self.current_step_or_last()
        if step is None or not self.has_final_response():
            return Messages()
        return step.output_messages

    def current_response(self) -> Messages:
        """The final response, else the latest step's output if it has text."""
        if self.has_final_response():
            return self.final_response()
        step = self.current_step_or_last()
        if step is not None and step.output_messages.to_text().strip():
            return step.output_messages
        return Messages()

    def debug(self) -> dict[str, Any]:
        """A summary for logs and test assertions."""
        return {
            "status": self.status(),
            "execution_count": self.execution_count,
            "has_execution": self.execution is not None,
            "execution_id": self.execution_id(),
            "steps": self.step_count(),
            "continuation": self.continuation().explain(),
            "has_errors": bool(self.has_errors()),
            "errors": [str(error) for error in self.errors()],
            "usage": self.usage().summary(),
        }


_STATUSES = tuple(status.value for status in ExecutionStatus)


def message_tags(
    step_id: str, execution_id: str, agent_id: str, is_trace: bool
) -> dict[str, JsonValue]:
    """The metadata entries ``AgentState.with_current_step`` adds to a step's output messages.

    A driver that builds its messages with these entries already in place (after its own) saves
    the state a copy of every message.
    """
    tags: dict[str, JsonValue] = {
        STEP_ID_KEY: step_id,
        EXECUTION_ID_KEY: execution_id,
        AGENT_ID_KEY: agent_id,
    }
    if is_trace:
        tags[TRACE_KEY] = True
    return tags


def _all_tagged(
    messages: Messages, step_id: str, execution_id: str, agent_id: str, is_trace: bool
) -> bool:
    """True when every message already carries exactly the tags ``_tag`` would add."""
    for message in messages:
        metadata = message.metadata
        if (
            metadata.get(STEP_ID_KEY) != step_id
            or metadata.get(EXECUTION_ID_KEY) != execution_id
            or metadata.get(AGENT_ID_KEY) != agent_id
            or (metadata.get(TRACE_KEY) is True) is not is_trace
        ):
            return False
    return True


def _require(value: object, kind: type, field: str) -> None:
    """Reject a caller's value of the wrong type, naming the parameter."""
    if not isinstance(value, kind):
        _reject(field, f"expected {kind.__name__}, got {type(value).__name__}")


def _reject(field: str, reason: str) -> NoReturn:
    raise InvalidInputError("AgentState", [(field, reason)])


def _value(member: ExecutionStatus | None) -> str | None:
    """A status's value for a repr (None stays None)."""
    return member.value if member is not None else None
