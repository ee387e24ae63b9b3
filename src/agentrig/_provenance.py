"""What ``AgentLoop.check_clock`` looks for: times and ids in a state that the agent's clock and
id factory cannot have made.

The rule, for a state checked against an agent's clock and ids:

- a time later than the clock reads now is foreign (the clock has not reached it);
- a time earlier than the clock's ``start`` is foreign, for a clock that has one (``FakeClock``:
  it never reads a time before the one it started at);
- a UUID-shaped id the id factory says it did not hand out is foreign, for a factory that can
  say (one with ``issued(id) -> bool``: ``SeededIds``). The ids checked are those the runtime
  makes: the agent id, message ids, the execution id, step ids and tool execution ids. Ids a
  user chose (``"support-bot"``) and ids a provider made (tool-call ids) are not checked.

The system clock has no start and random UUIDs cannot say what they handed out: on them only a
time ahead of the clock is caught.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime

from agentrig.clock import Clock, IdFactory
from agentrig.state import AgentState

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_LISTED_IDS = 10
"""Foreign ids named one by one; more are counted in one last problem."""
_ADVICE = "make it with agent.new_state(text) and continue it with agent.continue_with(state, text)"


def foreign_times(state: AgentState, clock: Clock) -> list[tuple[str, str]]:
    """``(field, reason)`` for each time of ``state`` that ``clock`` cannot have read."""
    now = clock.now()
    start = getattr(clock, "start", None)
    if not isinstance(start, datetime):
        start = None
    problems: list[tuple[str, str]] = []
    for name, at in _timestamps(state):
        if at > now:
            reason = (
                f"{at.isoformat()} is later than the agent's clock {clock!r} reads "
                f"({now.isoformat()})"
            )
        elif start is not None and at < start:
            reason = (
                f"{at.isoformat()} is earlier than the agent's clock {clock!r} started "
                f"({start.isoformat()})"
            )
        else:
            continue
        problems.append((name, f"{reason}: the state was made on another clock; {_ADVICE}"))
    return problems


def foreign_ids(state: AgentState, ids: IdFactory) -> list[tuple[str, str]]:
    """``(field, reason)`` for each UUID in ``state`` that ``ids`` did not hand out, when it can
    say (see the module's rule); each id once, at its first place."""
    issued: Callable[[str], bool] | None = getattr(ids, "issued", None)
    if not callable(issued):
        return []
    problems: list[tuple[str, str]] = []
    seen: set[str] = set()
    unlisted = 0
    for name, value in _ids(state):
        if value in seen or not _UUID.fullmatch(value) or issued(value):
            continue
        seen.add(value)
        if len(problems) == _LISTED_IDS:
            unlisted += 1
            continue
        problems.append(
            (
                name,
                f"{value} was not handed out by the agent's ids {ids!r}: the state was made "
                "with other ids (random ones, outside the agent, or another agent's: a new "
                f"factory of the same seed would hand it out again); {_ADVICE}",
            )
        )
    if unlisted:
        problems.append(("", f"and {unlisted} more id(s) not handed out by {ids!r}"))
    return problems


def _timestamps(state: AgentState) -> Iterator[tuple[str, datetime]]:
    """The state's own times and its messages', each named by its field path."""
    yield "created_at", state.created_at
    if state.updated_at is not None:
        yield "updated_at", state.updated_at
    store = state.store()
    for section in store.section_names():
        for index, message in enumerate(store.messages_of(section)):
            yield f"context.store.{section}[{index}].created_at", message.created_at


def _ids(state: AgentState) -> Iterator[tuple[str, str]]:
    """The ids the runtime makes, each named by its field path."""
    yield "agent_id", state.agent_id
    store = state.store()
    for section in store.section_names():
        for index, message in enumerate(store.messages_of(section)):
            yield f"context.store.{section}[{index}].id", message.id
    execution = state.execution
    if execution is None:
        return
    yield "execution.execution_id", execution.execution_id
    for number, record in enumerate(execution.step_executions):
        where = f"execution.step_executions[{number}]"
        yield f"{where}.id", record.id
        for index, tool_execution in enumerate(record.step.tool_executions):
            yield f"{where}.step.tool_executions[{index}].id", tool_execution.id
    step = execution.current_step
    if step is not None:
        yield "execution.current_step.id", step.id
        for index, tool_execution in enumerate(step.tool_executions):
            yield f"execution.current_step.tool_executions[{index}].id", tool_execution.id
