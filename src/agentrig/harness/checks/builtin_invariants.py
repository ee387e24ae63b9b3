"""The built-in invariants, registered by name when :mod:`agentrig.harness.checks` is imported.

Each is an :class:`~agentrig.harness.checks.invariant.Invariant`: its class name in snake_case
is the ``name`` a scenario's ``invariants: {only: [...], exclude: [...]}`` lists, its docstring
the ``description``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from agentrig import (
    AgentState,
    AgentStepType,
    ExecutionBudget,
    ExecutionStatus,
    InvalidInputError,
    Message,
    Role,
    StepExecution,
    StopReason,
    TraceMode,
)
from agentrig._model import SCHEMA_VERSION, Serializable, json_text
from agentrig._text import clipped
from agentrig.drivers.tool_calling import CORRECTION_KEY
from agentrig.events import (
    AgentEvent,
    AgentExecutionCompleted,
    AgentExecutionStarted,
    AgentExecutionStopped,
    AgentStepCompleted,
    AgentStepStarted,
    ToolCallCompleted,
    ToolCallStarted,
)
from agentrig.harness.checks.invariant import (
    Invariant,
    Observation,
    register_invariant,
    snapshot_of,
)
from agentrig.store import EXECUTION_BUFFER, INFERENCE_ORDER, MESSAGES

__all__ = [
    "BudgetRespected",
    "BufferCleared",
    "BufferHoldsCurrentTrace",
    "CleanMessages",
    "EarlierStatesUnchanged",
    "EventSequence",
    "InferenceView",
    "MetadataTagging",
    "MonotonicCounters",
    "NoUserMessageLost",
    "SerializationRoundTrip",
    "StableExecutionId",
    "StatusTransitions",
    "StepTypeDerivation",
    "StopIsTerminal",
    "SubagentIsolation",
    "ToolCallsPaired",
]


def _describe(message: Message) -> str:
    kind = message.type()
    return f"{message.role.value}/{kind} {clipped(message.content, 40)!r}"


# --- built-in invariants -----------------------------------------------------------------


@register_invariant
class CleanMessages(Invariant):
    """In separated mode, `messages` holds no tool traces: no tool messages, no tool calls, no
    trace tags."""

    def check(self, observation: Observation) -> Iterable[str]:
        if observation.trace_mode is not TraceMode.SEPARATED:
            return
        for index, message in enumerate(observation.state.messages(), start=1):
            if message.is_trace or message.role is Role.TOOL or message.tool_calls:
                yield f"`messages` item {index} is a tool trace: {_describe(message)}"


@register_invariant
class BufferCleared(Invariant):
    """When an execution ends, however it ends, the execution buffer is empty."""

    final_only = True

    def check(self, observation: Observation) -> Iterable[str]:
        left = observation.state.store().messages_of(EXECUTION_BUFFER)
        if left:
            status = observation.state.status()
            yield f"execution ended ({status}) with {len(left)} message(s) left in the execution buffer"


@register_invariant
class BufferHoldsCurrentTrace(Invariant):
    """During an execution the buffer holds exactly the trace messages of its steps, in order."""

    def check(self, observation: Observation) -> Iterable[str]:
        if observation.is_final:
            return
        buffer = observation.state.store().messages_of(EXECUTION_BUFFER)
        if observation.trace_mode is TraceMode.INLINE:
            if buffer:
                yield f"inline mode, yet the execution buffer holds {len(buffer)} message(s)"
            return
        expected = [
            message.id
            for step in observation.all_steps()
            if step.step_type() is not AgentStepType.FINAL_RESPONSE
            for message in step.output_messages
        ]
        actual = [message.id for message in buffer]
        if actual != expected:
            yield (
                f"execution buffer holds {len(actual)} message(s), expected the {len(expected)} "
                "trace message(s) of this execution's steps"
            )


@register_invariant
class InferenceView(Invariant):
    """The model sees summary, buffer, messages, execution_buffer in order, no trace of another
    execution, and what AgentLoop.next_request() said it would."""

    def check(self, observation: Observation) -> Iterable[str]:
        state = observation.state
        expected = [m.id for name in INFERENCE_ORDER for m in state.store().messages_of(name)]
        if [m.id for m in state.messages_for_inference()] != expected:
            yield "messages_for_inference() is not summary + buffer + messages + execution_buffer"
        current = state.execution_id()
        for number, step in enumerate(observation.all_steps(), start=1):
            foreign = [m for m in step.input_messages if m.is_trace and m.execution_id != current]
            if foreign:
                yield f"step {number} sent the model {len(foreign)} trace message(s) of another execution"
        if observation.next_request is not None:
            yield from self._next_request(observation)

    def _next_request(self, observation: Observation) -> Iterator[str]:
        """What ``AgentLoop.next_request`` says the model will see holds no other execution's
        trace, and is what the step from the state before sent: the state the loop yielded
        before, or for the execution's first step the state it started from (the hooks that
        run before a step, ``before_execution`` for the first, are in both)."""
        state = observation.state
        if not observation.is_final:
            current = state.execution_id()
            ahead = observation.request_after(state)
            foreign = [
                m
                for m in (ahead.messages if ahead else ())
                if m.is_trace and m.execution_id != current
            ]
            if foreign:
                yield (
                    f"the next request would send the model {len(foreign)} trace message(s) "
                    "of another execution"
                )
        previous = observation.previous
        if previous is not None:
            number = previous.step_count() + 1
        else:
            previous = observation.initial
            status = previous.status()
            number = 1 if status is None or status.is_terminal() else previous.step_count() + 1
        steps = observation.all_steps()
        if len(steps) < number or not steps[number - 1].input_messages:
            return
        known = {m.id for name in INFERENCE_ORDER for m in previous.store().messages_of(name)}
        # A retry after a refused tool call adds its own messages after the predicted ones.
        sent = _seen(
            (m for m in steps[number - 1].input_messages if CORRECTION_KEY not in m.metadata),
            known,
        )
        request = observation.request_after(previous)
        if request is None:
            yield (
                f"step {number} sent the model {sent}, but next_request() on the state before it "
                "said the step would send nothing"
            )
            return
        predicted = _seen(request.messages, known)
        if sent != predicted:
            yield (
                f"step {number} sent the model {sent}, but next_request() on the state before it "
                f"said {predicted}"
            )


def _seen(messages: Iterable[Message], known: set[str]) -> list[str]:
    """Messages as the model sees them, comparably: a message of the state before the step by
    its id; one made for the request (the system message, one a hook added, whose id depends
    on when it was made) by its role and text."""
    return [
        m.id if m.id in known and m.role is not Role.SYSTEM else f"{m.role.value}: {m.content!r}"
        for m in messages
    ]


@register_invariant
class ToolCallsPaired(Invariant):
    """Every requested tool call has exactly one execution and one tool result, with matching
    ids."""

    def check(self, observation: Observation) -> Iterable[str]:
        for number, step in enumerate(observation.all_steps(), start=1):
            requested = [call.id for call in step.requested_tool_calls()]
            executed = [execution.tool_call.id for execution in step.tool_executions]
            if sorted(requested) != sorted(executed):
                yield f"step {number}: requested calls {requested} but executions for {executed}"
            results = [
                m.tool_result.call_id for m in step.output_messages if m.tool_result is not None
            ]
            if sorted(results) != sorted(requested):
                yield f"step {number}: tool results for {results}, expected one for each of {requested}"
        yield from self._sections(observation.state)

    def _sections(self, state: AgentState) -> Iterator[str]:
        for name in (MESSAGES, EXECUTION_BUFFER):
            called: set[str] = set()
            for message in state.store().messages_of(name):
                called.update(call.id for call in message.tool_calls)
                result = message.tool_result
                if result is not None and result.call_id not in called:
                    yield f"section {name!r}: tool result for {result.call_id!r} has no preceding call"


@register_invariant
class BudgetRespected(Invariant):
    """No step starts after a limit was reached, and a budget stop names the limit that was
    reached."""

    def check(self, observation: Observation) -> Iterable[str]:
        budget = observation.budget
        if budget is None or budget.is_empty():
            return
        state = observation.state
        if budget.max_steps is not None and state.step_count() > budget.max_steps:
            yield f"{state.step_count()} steps ran, max_steps is {budget.max_steps}"
        yield from self._no_step_after_crossing(observation, budget)
        if observation.is_final:
            yield from self._reason_matches(state, budget)

    def _no_step_after_crossing(
        self, observation: Observation, budget: ExecutionBudget
    ) -> Iterator[str]:
        execution = observation.state.execution
        if execution is None:
            return
        starts = [record.started_at for record in execution.step_executions]
        if execution.current_step_started_at is not None:  # the step in progress counts too
            starts.append(execution.current_step_started_at)
        records = execution.step_executions
        tokens, cost = 0, 0.0
        for number, started_at in enumerate(starts, start=1):
            if budget.max_tokens is not None and tokens >= budget.max_tokens:
                yield f"step {number} started after the token limit was reached ({tokens}/{budget.max_tokens})"
            if budget.max_cost is not None and cost >= budget.max_cost:
                yield f"step {number} started after the cost limit was reached ({cost}/{budget.max_cost})"
            elapsed = (started_at - execution.started_at).total_seconds()
            if budget.max_seconds is not None and elapsed >= budget.max_seconds:
                yield f"step {number} started {elapsed}s into the execution, max_seconds is {budget.max_seconds}"
            if budget.deadline is not None and started_at >= budget.deadline:
                yield f"step {number} started after the deadline {budget.deadline.isoformat()}"
            if number <= len(records):
                usage = records[number - 1].usage()
                tokens += usage.total()
                cost += usage.cost

    def _reason_matches(self, state: AgentState, budget: ExecutionBudget) -> Iterator[str]:
        reason = state.last_stop_reason()
        steps_limit = reason is StopReason.STEPS_LIMIT and budget.max_steps is not None
        if steps_limit and state.step_count() != budget.max_steps:
            yield f"stopped for steps_limit after {state.step_count()} steps, max_steps is {budget.max_steps}"
        if reason is StopReason.TOKEN_LIMIT:
            usage = state.usage()
            over_tokens = budget.max_tokens is not None and usage.total() >= budget.max_tokens
            over_cost = budget.max_cost is not None and usage.cost >= budget.max_cost
            if not (over_tokens or over_cost):
                yield f"stopped for token_limit with {usage.total()} tokens and cost {usage.cost}"
        if reason is StopReason.TIME_LIMIT:
            yield from _time_limit_reached(state, budget)
        if (
            reason is not None
            and reason.was_force_stopped()
            and state.status() is ExecutionStatus.COMPLETED
        ):
            yield f"stop reason {reason.value} is a forced stop, yet the status is completed"


def _time_limit_reached(state: AgentState, budget: ExecutionBudget) -> Iterator[str]:
    """A ``time_limit`` stop needs ``max_seconds`` or the deadline reached when it stopped.

    The stop is checked at the execution's end, which is at or after the checkpoint that
    stopped it: a time below every limit then proves the checkpoint was below them too.
    """
    execution = state.execution
    if execution is None or execution.completed_at is None:
        return
    stopped_at = execution.completed_at
    elapsed = (stopped_at - execution.started_at).total_seconds()
    if budget.max_seconds is not None and elapsed >= budget.max_seconds:
        return
    if budget.deadline is not None and stopped_at >= budget.deadline:
        return
    limits = []
    if budget.max_seconds is not None:
        limits.append(f"max_seconds is {budget.max_seconds}")
    if budget.deadline is not None:
        limits.append(f"the deadline is {budget.deadline.isoformat()}")
    unmet = " and ".join(limits) or "the budget has no max_seconds or deadline"
    yield (
        f"stopped for time_limit before step {state.step_count() + 1}, "
        f"{elapsed}s into the execution: {unmet}"
    )


@register_invariant
class StopIsTerminal(Invariant):
    """Only the last state of an execution is terminal, and it has a stop reason."""

    def check(self, observation: Observation) -> Iterable[str]:
        status = observation.state.status()
        terminal = status is not None and status.is_terminal()
        if observation.is_final and not terminal:
            yield f"the final state has non-terminal status {status}"
        if observation.is_final and observation.state.last_stop_reason() is None:
            yield "the final state has no stop reason"
        if not observation.is_final and terminal:
            yield f"an intermediate state already has terminal status {status}"


@register_invariant
class StatusTransitions(Invariant):
    """in_progress during the execution; failed iff errors, stopped iff a forced stop won, else
    completed."""

    def check(self, observation: Observation) -> Iterable[str]:
        state = observation.state
        status = state.status()
        if not observation.is_final:
            if status is not ExecutionStatus.IN_PROGRESS:
                yield f"status is {status} during the execution, expected in_progress"
            return
        expected = _expected_status(state)
        if status is not expected:
            yield f"final status is {status}, expected {expected} from the errors and stop signals"


def _expected_status(state: AgentState) -> ExecutionStatus:
    if state.has_errors():
        return ExecutionStatus.FAILED
    signal = state.continuation().stop_signal()
    if signal is not None and signal.reason.was_force_stopped():
        return ExecutionStatus.STOPPED
    return ExecutionStatus.COMPLETED


@register_invariant
class SerializationRoundTrip(Invariant):
    """from_dict(to_dict(s)) == s and from_json(to_json(s)) == s for every state."""

    def __init__(self) -> None:
        self._read = _ReadRecords()

    def check(self, observation: Observation) -> Iterable[str]:
        state = observation.state
        if len(observation.states) == 1:
            self._read.clear()  # a new execution
        data = observation.serialized
        try:
            via_dict = self._read.read_back(state, state.to_dict() if data is None else data, None)
            via_json = self._read.read_back(
                state, *AgentState._json_body(observation.snapshots[-1])
            )
        except InvalidInputError as error:
            yield f"the state does not read back: {error}"
            return
        if via_dict != state:
            yield "from_dict(to_dict(state)) differs from the state: " + _first_difference(
                state, via_dict
            )
        if via_json != state:
            yield "from_json(to_json(state)) differs from the state: " + _first_difference(
                state, via_json
            )


_Known = tuple[StepExecution, object, StepExecution]


class _ReadRecords:
    """``AgentState._from_dict`` that validates each completed step record once per execution.

    A state holds every completed step record of its execution, the very objects of the state
    before it (each with the messages its step sent), so reading back every state validates
    the same records again and again: O(steps²) per state. Validation is a function of the data
    and the context, so a record whose serialized form equals (``==``) the one read back
    before, with the same context, reads back equal to what it read back then: that earlier
    result is put in the data in its place (validation keeps a record instance as it is). The
    read-back state is still compared with the state in full, so a record changed since is
    caught as before.
    """

    def __init__(self) -> None:
        self._known: dict[tuple[int, int], _Known] = {}

    def clear(self) -> None:
        """Forget the records read so far."""
        self._known.clear()

    def read_back(self, state: AgentState, data: Any, context: dict[str, Any] | None) -> AgentState:
        """``AgentState._from_dict(data, context)``, ``data`` being ``state`` serialized."""
        records, items = _records(state, data)
        key = id(context)
        if records:
            data = _substituted(
                data, items, [self._known.get((key, id(r))) for r in records], records
            )
        result = AgentState._from_dict(data, context)
        read = result.execution.step_executions if result.execution is not None else ()
        if len(read) == len(records):
            for record, item, back in zip(records, items, read, strict=True):
                self._known.setdefault((key, id(record)), (record, item, back))
        return result


def _records(state: AgentState, data: Any) -> tuple[tuple[StepExecution, ...], list[Any]]:
    """The completed step records of ``state`` and their items in ``data`` (none when the data
    does not hold one item per record)."""
    execution = state.execution
    part = data.get("execution") if isinstance(data, dict) else None
    items = part.get("step_executions") if isinstance(part, dict) else None
    if execution is None or not isinstance(items, list):
        return (), []
    records = execution.step_executions.to_tuple()
    return (records, items) if len(records) == len(items) else ((), [])


def _substituted(
    data: dict[str, Any],
    items: list[Any],
    known: list[_Known | None],
    records: tuple[StepExecution, ...],
) -> dict[str, Any]:
    """``data`` with each item read back before replaced by what it read back as (a copy)."""
    kept = list(items)
    changed = False
    for index, (record, entry) in enumerate(zip(records, known, strict=True)):
        if entry is not None and entry[0] is record and entry[1] == items[index]:
            kept[index] = entry[2]
            changed = True
    if not changed:
        return data
    return {**data, "execution": {**data["execution"], "step_executions": kept}}


def _first_difference(expected: AgentState, actual: AgentState) -> str:
    left, right = expected.model_dump(), actual.model_dump()
    path = _diff_path(left, right, "")
    return f"first difference at {path or '<type or identity>'}"


def _diff_path(left: object, right: object, path: str) -> str | None:
    if isinstance(left, dict) and isinstance(right, dict):
        for key in sorted(set(left) | set(right), key=str):
            where = f"{path}.{key}" if path else str(key)
            if (key in left) != (key in right):
                return f"{where} ({'lost in' if key in left else 'added by'} the round trip)"
            found = _diff_path(left[key], right[key], where)
            if found is not None:
                return found
        return None
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        if type(left) is not type(right):
            return f"{path} ({type(left).__name__} vs {type(right).__name__})"
        if len(left) != len(right):
            return f"{path} (length {len(left)} vs {len(right)})"
        for index, (a, b) in enumerate(zip(left, right, strict=True)):
            found = _diff_path(a, b, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    if left != right or type(left) is not type(right):
        return f"{path} ({left!r} vs {right!r})"
    return None


@register_invariant
class EarlierStatesUnchanged(Invariant):
    """States yielded earlier are never mutated by later steps (immutability)."""

    final_only = True

    def check(self, observation: Observation) -> Iterable[str]:
        pairs = zip(observation.states[:-1], observation.snapshots[:-1], strict=True)
        records: dict[int, tuple[StepExecution, object]] = {}
        for index, (state, snapshot) in enumerate(pairs, start=1):
            if _snapshot_now(state, records) != snapshot:
                yield f"yielded state {index} of this execution changed after it was yielded"


def _snapshot_now(state: AgentState, records: dict[int, tuple[StepExecution, object]]) -> str:
    """``snapshot_of(state)`` as of now, serializing each completed step record once (by
    identity, in ``records``) for all the states checked at this moment: the states of an
    execution share their records, so serializing every state whole costs O(steps³)."""
    execution = state.execution
    own = (
        type(state).to_dict is Serializable.to_dict and type(state).to_json is Serializable.to_json
    )
    if execution is None or not own:  # only the form of Serializable's own methods is rebuilt
        return snapshot_of(state)
    try:
        data = {
            "schema_version": SCHEMA_VERSION,
            **state.model_dump(mode="json", exclude={"execution": {"step_executions"}}),
        }
        part = data["execution"]
        items = []
        for record in execution.step_executions:
            known = records.get(id(record))
            if known is None or known[0] is not record:
                known = records[id(record)] = (record, record.model_dump(mode="json"))
            items.append(known[1])
        fields = type(execution).__pydantic_fields__
        data["execution"] = {
            name: items if name == "step_executions" else part[name]
            for name in fields
            if name == "step_executions" or name in part
        }
    except Exception:
        return snapshot_of(state)  # words the failure as the snapshot did
    return json_text(data)


@register_invariant
class MetadataTagging(Invariant):
    """Step output messages carry step_id, execution_id, agent_id, and is_trace exactly on
    non-final steps (a failure recorded after a final answer was routed leaves it untagged)."""

    def check(self, observation: Observation) -> Iterable[str]:
        state = observation.state
        execution_id = state.execution_id()
        for number, step in enumerate(observation.all_steps(), start=1):
            trace = step.step_type() is not AgentStepType.FINAL_RESPONSE
            # A step is tagged when it is set; an error attached later (an after_step hook that
            # raises, say) turns a final answer into an error step without moving its message out
            # of the conversation. Such a step may carry either tagging.
            either = trace and not step.inference_response.tool_calls
            for message in step.output_messages:
                meta = message.metadata
                if meta.get("step_id") != step.id:
                    yield f"step {number}: output message lacks step_id {step.id!r}"
                if meta.get("execution_id") != execution_id:
                    yield f"step {number}: output message has execution_id {meta.get('execution_id')!r}"
                if meta.get("agent_id") != state.agent_id:
                    yield f"step {number}: output message has agent_id {meta.get('agent_id')!r}"
                if trace and not either and meta.get("is_trace") is not True:
                    yield f"step {number} ({step.step_type().value}): output message not tagged is_trace"
                if not trace and "is_trace" in meta:
                    yield f"step {number} (final_response): output message carries is_trace"


@register_invariant
class StepTypeDerivation(Invariant):
    """Each step's type follows from its contents: error, else tool_execution, else
    final_response."""

    def check(self, observation: Observation) -> Iterable[str]:
        for number, step in enumerate(observation.all_steps(), start=1):
            failed = bool(step.errors) or any(e.error is not None for e in step.tool_executions)
            if failed:
                expected = AgentStepType.ERROR
            elif step.inference_response.tool_calls:
                expected = AgentStepType.TOOL_EXECUTION
            else:
                expected = AgentStepType.FINAL_RESPONSE
            if step.step_type() is not expected:
                yield f"step {number} has type {step.step_type().value}, expected {expected.value}"


@register_invariant
class MonotonicCounters(Invariant):
    """Step count grows by one per yielded step; usage, execution count and updated_at never go
    back."""

    def check(self, observation: Observation) -> Iterable[str]:
        state, previous = observation.state, observation.previous
        if state.execution_count != observation.initial.execution_count + 1:
            yield (
                f"execution_count is {state.execution_count}, expected "
                f"{observation.initial.execution_count + 1}"
            )
        if state.created_at != observation.initial.created_at:
            yield "created_at changed"
        if previous is None:
            return
        grown = state.step_count() - previous.step_count()
        allowed = (0, 1) if observation.is_final else (1,)
        if grown not in allowed:
            yield f"step count went from {previous.step_count()} to {state.step_count()}"
        before, after = previous.usage(), state.usage()
        if after.total() < before.total() or after.cost < before.cost:
            yield f"usage went down: {before.total()} -> {after.total()} tokens"
        if previous.updated_at and state.updated_at and state.updated_at < previous.updated_at:
            yield "updated_at went back in time"


@register_invariant
class StableExecutionId(Invariant):
    """The execution id is the same in every state and event of one execution."""

    def check(self, observation: Observation) -> Iterable[str]:
        first = observation.states[0].execution_id()
        if observation.state.execution_id() != first:
            yield f"execution id changed from {first!r} to {observation.state.execution_id()!r}"
        if not observation.is_final:
            # Events arrive ahead of the states the runner observes (it holds a state back until
            # the next one shows whether it was the last): check them once, when all are in.
            return
        for event in observation.own_events():
            if event.execution_id not in (first, None):
                yield f"{event.name} carries execution id {event.execution_id!r}, expected {first!r}"
                break


@register_invariant
class NoUserMessageLost(Invariant):
    """Every user message present when the execution began is still in `messages`, in order."""

    def check(self, observation: Observation) -> Iterable[str]:
        before = [m for m in observation.initial.messages() if m.role is Role.USER]
        now_ids = [m.id for m in observation.state.messages() if m.role is Role.USER]
        missing = [m for m in before if m.id not in now_ids]
        for message in missing:
            yield f"user message {message.content[:40]!r} is no longer in `messages`"
        kept = [m.id for m in before if m.id in now_ids]
        if kept != [i for i in now_ids if i in set(kept)]:
            yield "user messages changed order"


@register_invariant
class SubagentIsolation(Invariant):
    """A parent's store holds no subagent message; it sees only the child's final text as the
    tool result."""

    def check(self, observation: Observation) -> Iterable[str]:
        state = observation.state
        for message in state.store().to_messages():
            owner = message.metadata.get("agent_id")
            if owner is not None and owner != state.agent_id:
                yield f"the store holds a message of agent {owner!r}: {_describe(message)}"
        for number, step in enumerate(observation.all_steps(), start=1):
            for execution in step.tool_executions:
                value = execution.value
                if execution.name != "spawn_subagent" or execution.has_error:
                    continue
                if not isinstance(value, dict) or value.get("response") != execution.content:
                    yield f"step {number}: the parent saw something other than the child's final text"


@register_invariant
class EventSequence(Invariant):
    """Events of an execution are well formed: started first, completed last, steps and tool
    calls paired."""

    final_only = True

    def check(self, observation: Observation) -> Iterable[str]:
        events = observation.own_events()
        if not events:
            return
        if not isinstance(events[0], AgentExecutionStarted):
            yield f"the first event is {events[0].name}, expected AgentExecutionStarted"
        if not isinstance(events[-1], AgentExecutionCompleted):
            yield f"the last event is {events[-1].name}, expected AgentExecutionCompleted"
        stopped = sum(isinstance(event, AgentExecutionStopped) for event in events)
        if stopped != 1:
            yield f"{stopped} AgentExecutionStopped events, expected 1"
        yield from self._steps(events, observation.state.step_count())
        yield from self._tool_calls(events)

    def _steps(self, events: list[AgentEvent], steps: int) -> Iterator[str]:
        started = [e.step_number for e in events if isinstance(e, AgentStepStarted)]
        completed = [e.step_number for e in events if isinstance(e, AgentStepCompleted)]
        if completed != sorted(set(completed)):
            yield f"step completions out of order: {completed}"
        if len(completed) > len(started):
            yield f"{len(completed)} steps completed but only {len(started)} started"
        if completed and completed[-1] > steps:
            yield f"a StepCompleted event names step {completed[-1]}, the state has {steps}"

    def _tool_calls(self, events: list[AgentEvent]) -> Iterator[str]:
        open_calls: list[str] = []
        for event in events:
            if isinstance(event, ToolCallStarted):
                open_calls.append(event.tool_call_id)
            elif isinstance(event, ToolCallCompleted):
                if event.tool_call_id not in open_calls:
                    yield f"ToolCallCompleted for {event.tool_call_id!r} without a start"
                else:
                    open_calls.remove(event.tool_call_id)
        for call_id in open_calls:
            yield f"ToolCallStarted for {call_id!r} never completed"
