"""Stateful property testing of the real agent loop.

:class:`AgentMachine` is a hypothesis ``RuleBasedStateMachine``. Its rules drive a real agent
(``AgentBuilder`` + ``ToolCallingDriver`` + scripted tools, a ``ScriptedLLM`` per rule, on a
``FakeClock`` with ``SeededIds``): add a user message, run one step with a drawn model answer,
run to the end with a drawn script, raise a stop signal, request continuation, serialize and
restore, start the next execution. After every rule its invariants check every state the loop
yielded with the harness invariants, and compare the state with
:class:`~agentrig.harness.property.reference_model.AgentModel`, a simple model of what it should
hold. Use it as a test::

    TestAgentLoop = AgentMachine.TestCase

Subclass it to test your own agent: name it with ``agent_builder = "package.module:function"``
(or override :meth:`AgentMachine.base_builder`) to add tools, hooks and capabilities, and set
``agent_tools`` for scripted tools. Set ``failure_dir`` and the shrunk failing run is written
there as a ``*.scenario.yaml`` file that ``agentrig run`` replays; when the replay cannot fail
the same way (the failure is the machine's own check, or its agent cannot be named), the file and
the test's output say so and why.
"""

from __future__ import annotations

import re
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NoReturn

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.errors import InvalidArgument
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from agentrig import (
    AgentBuilder,
    AgentState,
    ExecutionBudget,
    ExecutionStatus,
    StopReason,
    StopSignal,
    TraceMode,
    runtime_context,
)
from agentrig.errors import InvalidInputError
from agentrig.fakes import FakeClock, ScriptedLLM, ScriptedToolError, SeededIds, Turn
from agentrig.harness.checks.invariant import (
    InvariantChecker,
    Violation,
    invariant_names,
    select_invariants,
)
from agentrig.harness.checks.watch import is_terminal, run_checked, watch
from agentrig.harness.property.play import build_spec_agent
from agentrig.harness.property.reference_model import AgentModel, ToolOracle, UnpredictableError
from agentrig.harness.property.strategies import (
    DEFAULT_TOOL_SPECS,
    budgets,
    llm_turns,
    params_of,
    scripts,
    texts,
)
from agentrig.harness.scenarios.agent_factory import ScenarioAgent
from agentrig.harness.scenarios.model import (
    SCENARIO_NAME_PATTERN,
    AgentSpec,
    CancelAfterStep,
    Expectation,
    ModelReply,
    Scenario,
    ScenarioTurn,
    ToolSpec,
    TraceModeName,
)
from agentrig.harness.scenarios.user_agent import builder_prompt, resolve_builder
from agentrig.harness.scenarios.writer import budget_spec, reply_from_turn, write_scenario

__all__ = ["AgentMachine"]

_SIGNAL_REASONS = (StopReason.USER_REQUESTED, StopReason.STOP_REQUESTED, StopReason.FINISH_REASON)


@dataclass
class _TurnRecord:
    """One user turn as a scenario file will replay it."""

    user: str
    replies: list[ModelReply] = field(default_factory=list)
    unknown_tools: list[str] = field(default_factory=list)
    tool_errors: list[str] = field(default_factory=list)
    """Errors of other failed tool calls (wrong arguments, a tool of the builder that raised),
    which a scenario turn must list under ``expect.errors`` to pass."""
    cancel_after: int | None = None
    steps: int = 0
    finished: bool = False


def _is_final_run() -> bool:
    """True while hypothesis replays the minimal failing example."""
    try:
        return bool(current_build_context().is_final)
    except InvalidArgument:
        return False


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower().strip("-_.") or "agent-machine"


_STRATEGIES: dict[tuple[type, str], st.SearchStrategy[Any]] = {}


def _strategy(machine: AgentMachine, method: str) -> st.SearchStrategy[Any]:
    """``machine.<method>()``, built once per machine class (strategies are immutable)."""
    key = (type(machine), method)
    if key not in _STRATEGIES:
        _STRATEGIES[key] = getattr(machine, method)()
    return _STRATEGIES[key]


class AgentMachine(RuleBasedStateMachine):
    """A state machine over the real agent loop, checked by the harness invariants and a model.

    Class attributes configure it; the ``*_strategy`` methods (called once per class) give what
    the rules draw, and :meth:`base_builder` the agent under test.
    """

    agent_tools: ClassVar[Mapping[str, ToolSpec]] = DEFAULT_TOOL_SPECS
    """Scripted tools, as a scenario file declares them (the model predicts their outcomes)."""
    system_prompt: ClassVar[str] = "You are the agent under test."
    trace_modes: ClassVar[tuple[TraceModeName, ...]] = ("separated", "inline")
    checked_invariants: ClassVar[tuple[str, ...] | None] = None
    """Harness invariants to check (None: all registered)."""
    max_calls: ClassVar[int] = 2
    """Most tool calls in one model answer."""
    max_latency: ClassVar[float] = 2.0
    """Most seconds a model answer takes on the fake clock."""
    exact_model: ClassVar[bool | None] = None
    """Compare steps, status, usage and messages with the model (None: unless ``base_builder``
    is overridden, since the model cannot predict your tools and hooks)."""
    failure_dir: ClassVar[str | Path | None] = None
    """Where to write the shrunk failing run as a scenario file (None: do not write)."""
    agent_builder: ClassVar[str | None] = None
    """The agent under test as ``"package.module:function"``, a function returning an
    ``AgentBuilder``: :meth:`base_builder` makes it, and a written failure names it
    (``agent.builder``) so that ``agentrig run`` replays the same agent. A machine that overrides
    :meth:`base_builder` without it writes files that run the scripted tools only (they say so)."""

    def __init__(self) -> None:
        super().__init__()
        self.agent: ScenarioAgent | None = None
        with runtime_context(clock=FakeClock(), ids=SeededIds(0)):
            self.state = AgentState()  # replaced by configure(), which runs first
        self.model = AgentModel(TraceMode.SEPARATED, ExecutionBudget())
        self.violations: list[Violation] = []
        self.records: list[_TurnRecord] = []
        self.unrepresentable: list[str] = []
        self.failure = ""
        """What failed (empty while nothing did)."""
        self.failure_kind = ""
        """``model``, ``loop-error``, the name of the first failing harness invariant, or the
        name of the machine's own invariant or rule that failed."""
        self.failing_check = ""
        """The machine's own invariant or rule that failed (a subclass's ``@invariant``), if
        that is what failed: ``agentrig run`` cannot run it."""
        self._spec = AgentSpec()
        self._builder_prompt: str | None = None
        self._builder_tools: set[str] = set()
        self._pending = False
        self._checker: InvariantChecker | None = None
        self._oracle: ToolOracle | None = None

    # --- customisation ------------------------------------------------------------------------

    def base_builder(self) -> AgentBuilder:
        """The agent under test before the harness adds its scripted model, tools and budget:
        the one ``agent_builder`` names, else a bare ``AgentBuilder``."""
        if self.agent_builder is not None:
            return resolve_builder(self.agent_builder)
        return AgentBuilder.base()

    def budget_strategy(self) -> st.SearchStrategy[ExecutionBudget]:
        """Budgets to try."""
        return budgets()

    def trace_mode_strategy(self) -> st.SearchStrategy[TraceModeName]:
        """Trace modes to try (``trace_modes``, the first one preferred when shrinking)."""
        return st.sampled_from(self.trace_modes)

    def turn_strategy(self) -> st.SearchStrategy[Turn]:
        """Model answers for :meth:`step`: tool calls two times in three, else text or errors."""
        options: dict[str, Any] = {
            "tools": params_of(self.agent_tools),
            "max_calls": self.max_calls,
            "unknown_tools": True,
            "max_latency": self.max_latency,
        }
        return llm_turns(kinds=("tool_calls",), **options) | llm_turns(**options)

    def script_strategy(self) -> st.SearchStrategy[list[Turn]]:
        """Scripts for :meth:`run_to_end`: half of them without provider errors."""
        options: dict[str, Any] = {
            "tools": params_of(self.agent_tools),
            "max_steps": 3,
            "max_calls": self.max_calls,
            "unknown_tools": True,
            "max_latency": self.max_latency,
        }
        return scripts(errors=False, **options) | scripts(**options)

    def can_request_continuation(self) -> bool:
        """Whether :meth:`request_continuation` may run now (an execution is in progress)."""
        return self.running

    # --- state ----------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True while an execution is in progress."""
        return self.state.status() is ExecutionStatus.IN_PROGRESS

    @property
    def exact(self) -> bool:
        """Whether the full model comparison is on."""
        if self.exact_model is not None:
            return self.exact_model
        return not self._own_agent

    @property
    def _own_agent(self) -> bool:
        """Whether the agent is the user's (``agent_builder`` or an overridden ``base_builder``)."""
        overridden = type(self).base_builder is not AgentMachine.base_builder
        return overridden or self.agent_builder is not None

    def _built(self) -> ScenarioAgent:
        assert self.agent is not None, "the configure() rule runs first"
        return self.agent

    # --- rules ----------------------------------------------------------------------------------

    @initialize(
        budget=st.runner().flatmap(lambda machine: _strategy(machine, "budget_strategy")),
        trace_mode=st.runner().flatmap(lambda machine: _strategy(machine, "trace_mode_strategy")),
    )
    def configure(self, budget: ExecutionBudget, trace_mode: TraceModeName) -> None:
        """Build the agent: scripted tools, this budget and trace mode, on a fake clock."""
        self._spec = AgentSpec(
            system_prompt=self.system_prompt,
            trace_mode=trace_mode,
            budget=budget_spec(budget),
            tools=dict(self.agent_tools),
        )
        builder = self.base_builder()
        self._builder_prompt = builder_prompt(builder)
        self._builder_tools = set(builder.tools().names())
        agent = build_spec_agent(self._spec, builder=builder)
        self.agent = agent
        self._checker = watch(agent, select_invariants(self.checked_invariants))
        self._oracle = ToolOracle(self.agent_tools, agent.loop.tools.names())
        self.model = AgentModel(TraceMode(trace_mode), agent.budget)
        with runtime_context(clock=agent.clock, ids=agent.ids):
            self.state = AgentState()

    @precondition(lambda self: not self.running and not self._pending)
    @rule(user=texts(max_size=12))
    def start_turn(self, user: str) -> None:
        """The user says something (a new turn)."""
        agent = self._built()
        with runtime_context(clock=agent.clock, ids=agent.ids):
            self.state = self.state.with_user_message(user)
        self.model.add_user_message(user)
        self.records.append(_TurnRecord(user))
        self._pending = True

    @precondition(lambda self: self.running or self._pending)
    @rule(turn=st.runner().flatmap(lambda machine: _strategy(machine, "turn_strategy")))
    def step(self, turn: Turn) -> None:
        """Run one step (resuming the execution) with the model answering ``turn``."""
        self._advance([turn], limit=1)

    @precondition(lambda self: self.running or self._pending)
    @rule(script=st.runner().flatmap(lambda machine: _strategy(machine, "script_strategy")))
    def run_to_end(self, script: list[Turn]) -> None:
        """Run (or resume) the execution to its end with the model playing ``script``."""
        self._advance(script, limit=None)

    @precondition(lambda self: self.running)
    @rule(reason=st.sampled_from(_SIGNAL_REASONS))
    def raise_stop_signal(self, reason: StopReason) -> None:
        """Add a stop signal between two steps (``user_requested`` is what cancelling does)."""
        agent = self._built()
        signal = StopSignal(reason=reason, message="raised by AgentMachine", source="AgentMachine")
        with runtime_context(clock=agent.clock, ids=agent.ids):
            self.state = self.state.with_stop_signal(signal)
        self.model.signals.append(reason)
        record = self.records[-1]
        if reason is not StopReason.USER_REQUESTED:
            self.unrepresentable.append(f"a {reason.value} stop signal raised between steps")
        elif record.cancel_after is None:
            record.cancel_after = record.steps

    @precondition(lambda self: self.can_request_continuation())
    @rule()
    def request_continuation(self) -> None:
        """Ask the loop to continue once despite stop signals."""
        agent = self._built()
        with runtime_context(clock=agent.clock, ids=agent.ids):
            self.state = self.state.with_execution_continued()
        self.model.continuation = True
        self.unrepresentable.append("a continuation request between steps")

    @rule(via_json=st.booleans())
    def serialize_and_restore(self, via_json: bool) -> None:
        """Replace the state with its serialized and restored copy (it must be equal)."""
        state = self.state
        restored = (
            AgentState.from_json(state.to_json())
            if via_json
            else AgentState.from_dict(state.to_dict())
        )
        assert restored == state, "the restored state differs from the state"
        self.state = restored

    @precondition(lambda self: not self.running and not self._pending and self.state.execution)
    @rule()
    def start_next_execution(self) -> None:
        """``for_next_execution()``: drop the finished execution, keep the session."""
        agent = self._built()
        with runtime_context(clock=agent.clock, ids=agent.ids):
            self.state = self.state.for_next_execution()
        self.model.drop_execution()

    # --- invariants -----------------------------------------------------------------------------

    @invariant()
    def harness_invariants_hold(self) -> None:
        """Every harness invariant held for every state the loop yielded."""
        if self.violations:
            first, more = self.violations[0], len(self.violations) - 1
            summary = str(first) + (f" (and {more} more)" if more else "")
            self._fail(
                first.invariant, summary, "harness invariants failed:\n" + _listing(self.violations)
            )

    @invariant()
    def state_matches_model(self) -> None:
        """The state holds what the model says (the basics always; everything when exact)."""
        problems = list(self.model.mismatches(self.state, exact=self.exact))
        if problems:
            details = "the state differs from the model:\n" + "\n".join(problems)
            self._fail("model", problems[0], details)

    def _fail(self, kind: str, summary: str, details: str) -> NoReturn:
        self.failure, self.failure_kind = summary, kind
        raise AssertionError(details)

    def teardown(self) -> None:
        """On hypothesis's final replay of a failing example, write it as a scenario file."""
        if self.failure_dir is None or not _is_final_run():
            return
        # teardown runs in hypothesis's `finally`: the failure, if any, is still propagating.
        self._record_failure(sys.exc_info()[1])
        path = self.write_failure(Path(self.failure_dir))
        if path is None:
            note("agentrig: the failing run has no turn to write as a scenario file")
            return
        gaps = self.replay_gaps()
        why = f"; it cannot reproduce the failure: {'; '.join(gaps)}" if gaps else ""
        note(f"agentrig: wrote {path}{why}")

    def _record_failure(self, error: BaseException | None) -> None:
        """Name a failure that did not go through the machine's own checks: a subclass's
        ``@invariant`` or ``@rule`` raised ``error``."""
        if self.failure or not isinstance(error, Exception):
            return
        check = _failing_method(error, self)
        self.failing_check = check or ""
        self.failure_kind = check or type(error).__name__
        detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        self.failure = f"{check} failed: {detail}" if check else detail

    def replay_gaps(self) -> list[str]:
        """Why the written scenario file cannot fail the way this run did under ``agentrig
        run`` (empty when it can)."""
        gaps = []
        name = type(self).__name__
        if self.failing_check:
            gaps.append(
                f"it failed {name}.{self.failing_check}, a check of the machine that agentrig "
                "run does not run (write the check as a harness Invariant registered with "
                "@register_invariant in an importable module: the machine checks it too, and "
                "agentrig run --plugin MODULE replays it)"
            )
        elif self.failure_kind == "model":
            gaps.append(
                "it is a difference from the machine's reference model (AgentModel), which "
                "agentrig run does not check"
            )
        elif not self.failure:
            gaps.append("the machine recorded no failure")
        if self._own_agent and self.agent_builder is None:
            gaps.append(
                f"{name} overrides base_builder(), which a file cannot name, so the file runs "
                "the scripted tools only (set agent_builder = 'package.module:function' on the "
                "machine and the file names the same agent)"
            )
        return gaps

    # --- driving --------------------------------------------------------------------------------

    def _advance(self, script: Sequence[Turn], *, limit: int | None) -> None:
        agent, checker = self._built(), self._checker
        assert checker is not None
        assert self._oracle is not None
        record = self.records[-1]
        llm = ScriptedLLM(script, clock=agent.clock, name=f"turn {len(self.records)}")
        agent.script.current = llm
        model_clock = FakeClock(agent.clock.now())
        before = len(checker.violations)
        try:
            predicted = self.model.run(script, limit=limit, clock=model_clock, tools=self._oracle)
        except UnpredictableError:
            predicted = None
        run = run_checked(agent.loop, checker, len(self.records), self.state, limit=limit)
        if run.error is not None:
            self.failure, self.failure_kind = f"the loop raised {run.error!r}", "loop-error"
            raise run.error
        self.violations.extend(checker.violations[before:])
        self.state = run.states[-1]
        self._pending = False
        consumed = len(script) - llm.remaining
        self._record(record, script[:consumed])
        if predicted is not None and predicted != consumed and self.exact:
            summary = f"the loop played {consumed} model answer(s), the model expected {predicted}"
            self._fail("model", summary, summary)

    def _record(self, record: _TurnRecord, played: Sequence[Turn]) -> None:
        known = set(self._built().loop.tools.names())
        # A call after a stopping tool never runs, so only list the errors the loop recorded.
        recorded = [error.message for error in self.state.errors()]
        for turn in played:
            record.replies.append(reply_from_turn(turn))
            record.unknown_tools.extend(
                call.name
                for call in turn.calls
                if call.name not in known
                and any(_not_found(call.name) in message for message in recorded)
            )
        record.tool_errors.extend(
            execution.error
            for step in self.state.steps()
            for execution in step.tool_executions
            if execution.error is not None
            and not execution.blocked
            and execution.error_type not in _LISTED_ELSEWHERE
        )
        record.steps = self.state.step_count()
        record.finished = is_terminal(self.state)

    # --- writing the run as a scenario ----------------------------------------------------------

    def to_scenario(self, *, name: str | None = None) -> Scenario | None:
        """This run as a scenario (None when it ran no turn); see ``unrepresentable`` for the
        rules a scenario file cannot express."""
        if name is not None and not re.fullmatch(SCENARIO_NAME_PATTERN, name):
            reason = f"{name!r} is not a valid name: use lowercase letters, digits, '.', '_', '-'"
            raise InvalidInputError("to_scenario(name=...)", [("", reason)])
        turns = [_scenario_turn(r) for r in self.records if r.replies or r.finished]
        if not turns:
            return None
        note_text = (
            " It also used what a scenario cannot express: " + "; ".join(self.unrepresentable)
            if self.unrepresentable
            else ""
        )
        kind = _kebab(self.failure_kind.replace("_", "-")) if self.failure_kind else ""
        gaps = self.replay_gaps() if self.failure else []
        gap_text = f" This file cannot reproduce the failure: {'; '.join(gaps)}." if gaps else ""
        failure = self.failure.rstrip(".") or "no failure recorded"
        return Scenario(
            name=name or "-".join(filter(None, (_kebab(type(self).__name__), kind))),
            description=f"Shrunk by {type(self).__name__}: {failure}.{gap_text}{note_text}",
            tags=("agent-machine",),
            agent=self._written_agent(),
            turns=tuple(turns),
        )

    def _written_agent(self) -> AgentSpec:
        """The agent as a scenario writes it. With an agent of the user's, a scripted tool its
        builder lacks is marked ``scripted: true``, so that a replay on the same builder plays it
        rather than failing for a tool the builder does not have; with ``agent_builder``, the
        file names that builder (and sets ``system_prompt_override`` when the machine's prompt
        replaced the builder's, as it did in the run)."""
        if not self._own_agent:
            return self._spec
        tools = {
            name: spec
            if name in self._builder_tools
            else spec.model_copy(update={"scripted": True})
            for name, spec in self._spec.tools.items()
        }
        update: dict[str, Any] = {"tools": tools}
        if self.agent_builder is not None:
            update["builder"] = self.agent_builder
            if self._builder_prompt is not None and self._spec.prompt_text.strip():
                update["system_prompt_override"] = True
        fields = {**self._spec.model_dump(by_alias=True, exclude_unset=True), **update}
        return AgentSpec.model_validate(fields)

    def _plugin_module(self) -> str | None:
        """The module ``agentrig run`` must import (``--plugin``) to check the failing harness
        invariant, when it is not one of agentrig's own."""
        if self.failing_check or self.failure_kind not in invariant_names():
            return None
        module = type(select_invariants([self.failure_kind])[0]).__module__
        return None if module.startswith("agentrig.") else module

    def write_failure(self, directory: str | Path) -> Path | None:
        """Write :meth:`to_scenario` to ``directory/<name>.scenario.yaml``, where the name is the
        machine's class and the kind of failure (``my-machine-clean-messages``); returns the
        path (None when the run has no turn to write)."""
        scenario = self.to_scenario()
        if scenario is None:
            return None
        header = "Written by agentrig's AgentMachine from a shrunk failing example."
        gaps = self.replay_gaps() if self.failure else []
        if gaps:
            header += "\nIt CANNOT reproduce the failure under agentrig run:"
            header += "".join(f"\n- {gap}" for gap in gaps)
        plugin = self._plugin_module()
        if plugin is not None:
            header += f"\nReplay it with the module that registers {self.failure_kind}:"
            header += f"\n  agentrig run --plugin {plugin} <this file>"
        return write_scenario(
            scenario, path=Path(directory) / f"{scenario.name}.scenario.yaml", header=header
        )


def _failing_method(error: BaseException, machine: AgentMachine) -> str | None:
    """The machine's method the error came from: the outermost frame of the traceback that runs
    on ``machine``, other than hypothesis's own driving of invariants."""
    for frame, _ in traceback.walk_tb(error.__traceback__):
        if frame.f_locals.get("self") is machine and frame.f_code.co_name != "check_invariants":
            return frame.f_code.co_name
    return None


def _scenario_turn(record: _TurnRecord) -> ScenarioTurn:
    fields: dict[str, Any] = {"user": record.user, "model": tuple(record.replies)}
    cancel = record.cancel_after
    if cancel is None and not record.finished and record.steps:
        cancel = record.steps
    if cancel:
        fields["cancel"] = CancelAfterStep(after_step=cancel)
    unknown = [_not_found(name) for name in record.unknown_tools]
    if unknown or record.tool_errors:
        fields["expect"] = Expectation(errors=tuple(dict.fromkeys([*unknown, *record.tool_errors])))
    return ScenarioTurn(**fields)


_LISTED_ELSEWHERE = (ScriptedToolError.__name__, "ToolNotFoundError")
"""Tool errors a written turn needs not list again: a scripted tool's own ``raise`` reply is
intended, and a call of an unknown tool is listed by its tool's name."""


def _not_found(name: str) -> str:
    """The error the loop records for a call of a tool the agent lacks."""
    return f"Tool '{name}' not found"


def _listing(violations: Sequence[Violation]) -> str:
    return "\n".join(f"  {violation}" for violation in violations)
