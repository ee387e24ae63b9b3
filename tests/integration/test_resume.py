"""A run saved after a step, loaded by a fresh agent and continued behaves like the run that was
never cut: budgets, the execution buffer, pending signals and continuation requests, subagents,
and ``execution_count`` (one more: it counts entries into the loop, docs/architecture.md)."""

from __future__ import annotations

import copy
import json
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from agentrig import (
    AgentBuilder,
    AgentLoop,
    AgentState,
    ExecutionBudget,
    ExecutionStatus,
    FileSessionStore,
    HookContext,
    HookTrigger,
    Role,
    SessionStore,
    SqliteSessionStore,
    StopReason,
    StopSignal,
    SubagentDefinition,
    Usage,
    UseGuards,
    UseLlmConfig,
    UseSubagents,
    runtime_context,
)
from agentrig.fakes import (
    FakeClock,
    ScriptedLLM,
    ScriptedTool,
    SeededIds,
    ToolReply,
    Turn,
    call,
    calls,
    reply,
)
from agentrig.harness.property import strategies as ars

CHILD_TURNS = 8
"""Text answers scripted for the subagent: more than any drawn script spawns, so it never runs
out (an exhausted script's error names the call number, which a fresh fake restarts)."""


NUMBERS = 8
"""Replies of the ``next_number`` tool, which answers in sequence: more than a script calls it."""


@dataclass(frozen=True)
class Positions:
    """How far a run had played the scripts: the model's turns, the subagent's turns and the
    ``next_number`` tool's replies. A fresh agent built at these positions plays on from there."""

    played: int = 0
    child: int = 0
    numbers: int = 0


def tools(numbers: int = 0) -> list[ScriptedTool]:
    """Fresh scripted tools, as ``ars.DEFAULT_TOOLS`` describes them (return, raise, stop), and
    ``next_number``, whose replies are used in order (positioned after ``numbers`` of them)."""
    return [
        ScriptedTool(
            "lookup",
            [
                ToolReply(raises="limit must be positive", when={"limit": 0}),
                ToolReply(returns={"hits": 1}),
            ],
            params={"query": "string", "limit": "integer?"},
        ),
        ScriptedTool("explode", [ToolReply(raises="boom")]),
        ScriptedTool("halt", [ToolReply(stop="halted by the tool")], params={"why": "string?"}),
        ScriptedTool(
            "next_number", [ToolReply(returns=n) for n in range(NUMBERS)][numbers:], mode="sequence"
        ),
    ]


def keep_going(context: HookContext) -> HookContext | None:
    """Ask to continue past a tool's ``AgentStop`` while the model is still calling tools."""
    state = context.state
    step = state.current_step_or_last()
    stopped = any(s.reason is StopReason.STOP_REQUESTED for s in state.continuation().stop_signals)
    if not stopped or step is None or not step.has_tool_calls():
        return None
    return context.with_state(state.with_execution_continued())


@dataclass(frozen=True)
class Definition:
    """Everything an agent is built from, so that another "process" can build it afresh."""

    script: Sequence[Turn]
    budget: ExecutionBudget = field(default_factory=ExecutionBudget)
    inline: bool = False
    continue_on: tuple[HookTrigger, ...] = ()
    subagents: bool = False
    child_budget: ExecutionBudget = field(default_factory=ExecutionBudget)
    max_retries: int = 1

    def build(self, clock: FakeClock, ids: SeededIds, at: Positions = Positions()) -> Agent:
        """A fresh agent whose fakes start at the positions ``at``."""
        llm = ScriptedLLM(self.script[at.played :], clock=clock)
        child_llm = ScriptedLLM(
            [reply(f"child answer {n}") for n in range(CHILD_TURNS)][at.child :], name="child"
        )
        scripted = tools(at.numbers)
        builder = (
            AgentBuilder.base()
            .with_clock(clock)
            .with_ids(ids)
            .with_capability(UseLlmConfig(llm, max_retries=self.max_retries))
            .with_tools(scripted)
            .with_separated_tool_trace(not self.inline)
        )
        if not self.budget.is_empty():
            builder.with_capability(UseGuards(self.budget))
        if self.subagents:
            helper = SubagentDefinition(
                name="helper", tools=("lookup",), budget=self.child_budget, provider=child_llm
            )
            builder.with_capability(UseSubagents([helper]))
        if self.continue_on:
            builder.add_hook(keep_going, self.continue_on)
        return Agent(builder.build(), llm, child_llm, scripted[-1], at)


@dataclass
class Agent:
    """A built agent, its fakes, and the positions its fakes were built at."""

    loop: AgentLoop
    llm: ScriptedLLM
    child_llm: ScriptedLLM
    numbers: ScriptedTool
    at: Positions

    def positions(self) -> Positions:
        """Where the fakes stand now."""
        used = sum(record.reply is not None for record in self.numbers.calls)
        return Positions(
            self.at.played + len(self.llm.turns) - self.llm.remaining,
            self.at.child + len(self.child_llm.turns) - self.child_llm.remaining,
            self.at.numbers + used,
        )


def begin(clock: FakeClock, ids: SeededIds, text: str = "Hello") -> AgentState:
    with runtime_context(clock=clock, ids=ids):
        return AgentState().with_user_message(text)


def uninterrupted(definition: Definition) -> tuple[list[AgentState], Agent]:
    """Every state the run yields, never cut."""
    clock, ids = FakeClock(), SeededIds(3)
    agent = definition.build(clock, ids)
    return list(agent.loop.iterate(begin(clock, ids))), agent


@dataclass
class Cut:
    """The state yielded after step ``k``, where the first process's fakes stood then, and the
    agent that was running (its fakes moved on since)."""

    state: AgentState
    clock: FakeClock
    ids: SeededIds
    at: Positions
    agent: Agent


def cut_after(
    definition: Definition, k: int, save: Callable[[AgentState], None] = lambda state: None
) -> Cut:
    """Run again, ``save`` each yielded state, and ``break`` out of ``iterate`` after the ``k``-th
    yield (which closes the generator)."""
    clock, ids = FakeClock(), SeededIds(3)
    agent = definition.build(clock, ids)
    yielded = None
    for number, state in enumerate(agent.loop.iterate(begin(clock, ids)), start=1):
        save(state)
        yielded = state
        if number == k:
            break
    assert yielded is not None
    positions = copy.deepcopy((clock, ids))  # the id factory and clock where the run left them
    return Cut(yielded, *positions, agent.positions(), agent)


def resumed(
    definition: Definition, cut: Cut, state: AgentState, ids: SeededIds | None = None
) -> tuple[list[AgentState], Agent]:
    """A fresh agent, its fakes positioned where the cut left them, continues ``state``."""
    agent = definition.build(copy.deepcopy(cut.clock), ids or copy.deepcopy(cut.ids), cut.at)
    return list(agent.loop.iterate(state)), agent


def as_entered_once(state: AgentState) -> dict[str, Any]:
    """``state``'s data with the one documented difference undone: resuming adds one to
    ``execution_count`` (it counts entries into the loop)."""
    data = state.to_dict()
    data["execution_count"] -= 1
    return data


def assert_same_continuation(before: list[AgentState], after: list[AgentState]) -> None:
    assert [as_entered_once(state) for state in after] == [state.to_dict() for state in before]


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def without_ids(states: list[dict[str, Any]]) -> str:
    """The states' JSON with every id replaced by its order of first appearance."""
    seen: dict[str, str] = {}
    text = json.dumps(states)
    return _UUID.sub(lambda match: seen.setdefault(match[0], f"id-{len(seen)}"), text)


class Saver:
    """Saves each yielded state to a session store, as a web service would after every step,
    and loads the last one through a newly opened store, as another process would."""

    def __init__(self, kind: str, directory: Path) -> None:
        self.kind = kind
        self.directory = directory
        self.version = 0

    def _open(self) -> SessionStore:
        if self.kind == "file":
            return FileSessionStore(self.directory / "sessions")
        return SqliteSessionStore(self.directory / "sessions.db")

    def save(self, state: AgentState) -> None:
        if self.kind == "json":
            return
        with closing(self._open()) as store:
            if self.version:
                self.version = store.save(state, expected_version=self.version).version
            else:
                self.version = store.create(state).version

    def load(self, state: AgentState) -> AgentState:
        """``state`` as the other process sees it."""
        if self.kind == "json":
            return AgentState.from_json(state.to_json())
        with closing(self._open()) as store:
            stored = store.load(state.agent_id)
        assert stored.version == self.version
        return stored.state


@contextmanager
def closing(store: SessionStore) -> Iterator[SessionStore]:
    try:
        yield store
    finally:
        if isinstance(store, SqliteSessionStore):
            store.close()


# --- the property ---------------------------------------------------------------------------

SPAWN = calls(("spawn_subagent", {"subagent": "helper", "prompt": "help"}))
HALT = call("halt")
NEXT_NUMBER = call("next_number")
LATENCY = 2.0


@st.composite
def definitions(draw: st.DrawFn) -> Definition:
    """Random agents: tool calls that return, raise or stop, provider errors, latency, guards
    with every kind of limit, subagents, both trace modes and continuation hooks."""
    turns = ars.llm_turns(kinds=("tool_calls", "error"), max_latency=LATENCY)
    middle = draw(
        st.lists(turns | st.sampled_from([SPAWN, HALT, NEXT_NUMBER]), min_size=1, max_size=4)
    )
    final = draw(ars.llm_turns(kinds=("text",), max_latency=LATENCY))
    return Definition(
        script=(*middle, final),
        budget=draw(ars.budgets(max_steps=5, max_tokens=1500, max_seconds=6.0)),
        inline=draw(st.booleans()),
        continue_on=draw(
            st.sampled_from(
                [(), (HookTrigger.AFTER_STEP,), (HookTrigger.AFTER_STEP, HookTrigger.BEFORE_STEP)]
            )
        ),
        subagents=draw(st.booleans()),
        child_budget=draw(st.sampled_from([ExecutionBudget(), ExecutionBudget(max_steps=0)])),
        max_retries=draw(st.sampled_from([1, 2])),
    )


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
)
@given(definition=definitions(), data=st.data(), kind=st.sampled_from(["json", "file", "sqlite"]))
def test_a_run_cut_saved_loaded_and_continued_is_the_uninterrupted_run(
    definition: Definition, data: st.DataObject, kind: str
) -> None:
    states, whole = uninterrupted(definition)
    if len(states) < 2:  # the run ended before its first yield: there is no cut to make
        return
    k = data.draw(st.integers(1, len(states) - 1), label="cut after yield")
    with tempfile.TemporaryDirectory() as directory:
        saver = Saver(kind, Path(directory))
        cut = cut_after(definition, k, saver.save)
        loaded = saver.load(cut.state)
    assert loaded == cut.state

    after, agent = resumed(definition, cut, loaded)
    assert_same_continuation(states[k:], after)
    assert agent.llm.requests == whole.llm.requests[cut.at.played :]
    assert agent.child_llm.requests == whole.child_llm.requests[cut.at.child :]

    # Another process has its own id factory: only the ids differ.
    fresh, _ = resumed(definition, cut, loaded, ids=SeededIds(99))
    assert without_ids([as_entered_once(s) for s in fresh]) == without_ids(
        [state.to_dict() for state in states[k:]]
    )

    # The generator closed by ``break`` leaves a state the same agent continues.
    same_process = list(cut.agent.loop.iterate(cut.state))
    assert_same_continuation(states[k:], same_process)


# --- concrete cases ---------------------------------------------------------------------------


def signal_and_continue_after_step_one(context: HookContext) -> HookContext | None:
    state = context.state
    if state.step_count() != 1:
        return None
    signal = StopSignal(reason=StopReason.STOP_REQUESTED, source="test")
    return context.with_state(state.with_stop_signal(signal).with_execution_continued())


class TestPendingSignals:
    def test_a_signal_pending_at_the_cut_meets_the_next_checkpoint_as_without_the_cut(
        self,
    ) -> None:
        # The tool stops the agent in step 1; a hook asks to continue after the step and again
        # at the next step's checkpoint, so the uninterrupted run goes on to step 2.
        definition = Definition(
            script=(call("halt"), reply("Done anyway.")),
            continue_on=(HookTrigger.AFTER_STEP, HookTrigger.BEFORE_STEP),
        )
        states, _ = uninterrupted(definition)
        assert states[-1].step_count() == 2
        cut = cut_after(definition, 1)
        assert cut.state.continuation().stop_signals  # the tool's stop is pending
        after, _ = resumed(definition, cut, AgentState.from_json(cut.state.to_json()))
        assert after[-1].step_count() == 2
        assert_same_continuation(states[1:], after)

    def test_without_a_second_request_the_pending_signal_stops_at_that_checkpoint(self) -> None:
        definition = Definition(
            script=(call("halt"), reply("never played")), continue_on=(HookTrigger.AFTER_STEP,)
        )
        states, _ = uninterrupted(definition)
        cut = cut_after(definition, 1)
        after, agent = resumed(definition, cut, AgentState.from_json(cut.state.to_json()))
        assert_same_continuation(states[1:], after)
        assert after[-1].last_stop_reason() is StopReason.STOP_REQUESTED
        assert agent.llm.remaining == 1

    def test_a_continuation_request_saved_with_the_state_is_used_by_the_next_checkpoint(
        self,
    ) -> None:
        # A yielded state never holds a request (each step end consumes it); a caller may add
        # one before saving, and the next step's checkpoint uses it, once.
        definition = Definition(
            script=(call("halt"), reply("Going on.")), continue_on=(HookTrigger.AFTER_STEP,)
        )
        cut = cut_after(definition, 1)
        states, _ = uninterrupted(definition)
        assert states[-1].step_count() == 1  # without the request: stopped at the checkpoint
        requested = AgentState.from_json(cut.state.with_execution_continued().to_json())
        assert requested.continuation().is_continuation_requested
        after, _ = resumed(definition, cut, requested)
        assert after[-1].step_count() == 2
        assert after[-1].final_response().to_text() == "Going on."
        assert not after[-1].continuation().is_continuation_requested


LOOKUPS = (
    call("lookup", query="a"),
    call("lookup", query="b"),
    call("lookup", query="c"),
    reply("Found it."),
)


def cut_and_resume(
    definition: Definition, k: int, **build: Any
) -> tuple[list[AgentState], Cut, list[AgentState]]:
    states, _ = uninterrupted(definition)
    cut = cut_after(definition, k)
    after, _ = resumed(definition, cut, AgentState.from_json(cut.state.to_json()), **build)
    return states, cut, after


class TestBudgetsAcrossTheCut:
    def test_max_steps_counts_the_steps_of_the_execution_not_of_the_process(self) -> None:
        definition = Definition(script=LOOKUPS, budget=ExecutionBudget(max_steps=3))
        states, cut, after = cut_and_resume(definition, 2)
        assert cut.state.step_count() == 2
        assert [state.step_count() for state in after] == [3, 3]  # one more step, then stop
        assert after[-1].last_stop_reason() is StopReason.STEPS_LIMIT
        assert_same_continuation(states[2:], after)

    def test_the_token_limit_counts_the_usage_before_the_cut(self) -> None:
        usage = Usage(input_tokens=50, output_tokens=10)
        script = tuple(Turn(text=t.text, calls=t.calls, usage=usage) for t in LOOKUPS)
        definition = Definition(script=script, budget=ExecutionBudget(max_tokens=100))
        states, _, after = cut_and_resume(definition, 1)
        assert after[-1].usage().total() == 120
        assert after[-1].last_stop_reason() is StopReason.TOKEN_LIMIT
        assert_same_continuation(states[1:], after)

    def test_the_time_limit_counts_from_the_executions_stored_start(self) -> None:
        definition = Definition(script=LOOKUPS, budget=ExecutionBudget(max_seconds=60))
        _, cut, _ = cut_and_resume(definition, 1)
        # The other process starts 90 s later: the execution, started before the cut, is over.
        later = copy.deepcopy(cut.clock)
        later.advance(90)
        agent = definition.build(later, copy.deepcopy(cut.ids), cut.at)
        final = agent.loop.execute(AgentState.from_json(cut.state.to_json()))
        assert final.step_count() == 1
        assert final.last_stop_reason() is StopReason.TIME_LIMIT
        assert final.stop_signal() is not None
        assert final.stop_signal().context["elapsed_seconds"] == 90  # type: ignore[union-attr]
        assert final.execution is not None
        assert cut.state.execution is not None
        assert final.execution.started_at == cut.state.execution.started_at
        assert agent.llm.calls == ()

    def test_a_limit_reached_exactly_at_the_cut_stops_the_resumed_run_at_once(self) -> None:
        definition = Definition(script=LOOKUPS, budget=ExecutionBudget(max_steps=2))
        states, _, after = cut_and_resume(definition, 2)
        assert len(after) == 1
        assert after[0].status() is ExecutionStatus.STOPPED
        assert_same_continuation(states[2:], after)


class TestExecutionBuffer:
    def test_the_trace_survives_the_cut_and_is_cleared_at_the_end(self) -> None:
        definition = Definition(script=LOOKUPS)
        states, cut, after = cut_and_resume(definition, 2)
        buffer = cut.state.store().messages_of("execution_buffer")
        assert [m.role for m in buffer] == [Role.ASSISTANT, Role.TOOL] * 2
        assert [m.role for m in cut.state.messages()] == [Role.USER]
        agent = resumed(definition, cut, AgentState.from_json(cut.state.to_json()))[1]
        assert agent.llm.requests[0].messages.to_tuple()[-4:] == buffer.to_tuple()
        final = after[-1]
        assert len(final.store().messages_of("execution_buffer")) == 0
        assert [m.role for m in final.messages()] == [Role.USER, Role.ASSISTANT]
        assert_same_continuation(states[2:], after)

    def test_inline_traces_survive_the_cut_in_messages(self) -> None:
        definition = Definition(script=LOOKUPS, inline=True)
        states, cut, after = cut_and_resume(definition, 1)
        assert [m.role for m in cut.state.messages()] == [Role.USER, Role.ASSISTANT, Role.TOOL]
        assert_same_continuation(states[1:], after)


class TestSubagents:
    def test_a_subagent_runs_inside_one_step_so_a_cut_falls_after_it(self) -> None:
        definition = Definition(script=(SPAWN, SPAWN, reply("Both done.")), subagents=True)
        states, cut, after = cut_and_resume(definition, 1)
        assert cut.at.child == 1  # the child finished before the parent's step ended
        tool_message = cut.state.store().messages_of("execution_buffer").to_tuple()[-1]
        assert tool_message.content == "child answer 0"
        assert after[-1].final_response().to_text() == "Both done."
        assert_same_continuation(states[1:], after)


class TestExecutionCount:
    def test_resuming_adds_one_entry_into_the_loop_and_keeps_the_execution(self) -> None:
        # docs/architecture.md: resuming an in-progress execution adds one to execution_count.
        definition = Definition(script=LOOKUPS)
        states, cut, after = cut_and_resume(definition, 1)
        assert (cut.state.execution_count, states[-1].execution_count) == (1, 1)
        assert after[-1].execution_count == 2
        assert after[-1].execution_id() == cut.state.execution_id()

    def test_the_next_execution_after_a_resumed_one_counts_on(self) -> None:
        definition = Definition(script=(*LOOKUPS[:1], reply("one"), reply("two")))
        _, cut, after = cut_and_resume(definition, 1)
        agent = definition.build(FakeClock(), SeededIds(5), Positions(played=2))
        second = agent.loop.execute(after[-1].with_user_message("again"))
        assert second.execution_count == 3
        assert second.execution_id() != cut.state.execution_id()
