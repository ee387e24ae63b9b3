"""Run a scenario: build the agent, play each turn, check expectations and invariants.

A suite of scenarios (in worker processes too) is run by :mod:`agentrig.harness.suites`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from agentrig import AgentBuilder, AgentState
from agentrig._text import counted
from agentrig.errors import AgentrigError, SubagentFailedError
from agentrig.events import AgentExecutionCompleted, SubagentCompleted, ToolCallCompleted
from agentrig.fakes import ScriptedLLM, ScriptedToolError
from agentrig.harness.checks.expectations import check_expectation
from agentrig.harness.checks.invariant import (
    Invariant,
    InvariantChecker,
    Violation,
    invariant_names,
    select_invariants,
)
from agentrig.harness.checks.watch import run_checked, watch
from agentrig.harness.endpoint.invariant_names import ENDPOINT_INVARIANT_NAMES
from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.reporting.transcript import turn_transcript
from agentrig.harness.results import (
    Failure,
    InvariantOutcome,
    ScenarioResult,
    TranscriptEntry,
    TurnResult,
)
from agentrig.harness.scenarios.agent_factory import ScenarioAgent, build_agent
from agentrig.harness.scenarios.drift import tool_drift
from agentrig.harness.scenarios.loader import SCENARIO_SUFFIX
from agentrig.harness.scenarios.mixture import RUNTIME_SESSION_KEY
from agentrig.harness.scenarios.model import (
    SPAWN_SUBAGENT_TOOL,
    CancelAfterStep,
    Scenario,
    ScenarioTurn,
)
from agentrig.harness.scenarios.script_calls import script_call_problems
from agentrig.harness.scenarios.user_agent import named_builder, prompt_conflict
from agentrig.harness.suites.plugins import load_plugins
from agentrig.state.status import ExecutionStatus

FieldPath = tuple[str | int, ...]
T = TypeVar("T")


@dataclass
class _Run:
    """Everything gathered while one scenario runs."""

    scenario: Scenario
    agent: ScenarioAgent
    checker: InvariantChecker
    failures: list[Failure] = field(default_factory=list)
    turns: list[TurnResult] = field(default_factory=list)
    transcript: list[TranscriptEntry] = field(default_factory=list)
    use_async: bool = False
    streaming: bool = False
    finals: list[AgentState] = field(default_factory=list)

    def where(self, path: FieldPath) -> str | None:
        """Where ``path`` was written, else its nearest written parent, else the file."""
        return self.scenario.nearest_location(path)

    def fail(self, kind: str, message: str, path: FieldPath = (), **extra: object) -> None:
        self.failures.append(
            Failure(kind=kind, message=message, location=self.where(path), **extra)
        )


def run_scenario(
    scenario: Scenario, *, builder: AgentBuilder | None = None, use_async: bool = False
) -> ScenarioResult:
    """Run every turn of ``scenario`` against one agent state and return the outcome.

    With ``builder`` (or the one the file's ``agent.builder`` names), the agent is the one built
    in Python (its tools and hooks), driven by the scenario's scripted model and checked against
    its expectations. With ``use_async``, each
    turn runs through ``AgentLoop.aiterate`` (the async path) instead of ``iterate``.
    """
    return _play(scenario, builder, use_async)[0]


def final_states(
    scenario: Scenario, *, use_async: bool = False, streaming: bool | None = None
) -> tuple[AgentState, ...]:
    """The final state of each turn of ``scenario`` (run as ``run_scenario`` runs it), to
    compare the sync and the async path; ``streaming=False`` runs a streaming scenario plainly."""
    return _play(scenario, None, use_async, streaming)[1]


def _play(
    scenario: Scenario,
    builder: AgentBuilder | None,
    use_async: bool,
    streaming: bool | None = None,
) -> tuple[ScenarioResult, tuple[AgentState, ...]]:
    started = time.perf_counter()
    if scenario.is_live:
        message = (
            "a live scenario (user, judge, trials) runs its trials against real models: run it "
            "with agentrig run --live, or in pytest with --agentrig-live"
        )
        return _refused(scenario, message, ("user",), started), ()
    if scenario.agent.adapter is not None and builder is None:
        from agentrig.harness.live.adapter_replay import fuzzed_agent_problem, run_adapter_scenario

        problem = fuzzed_agent_problem(scenario)
        if problem is not None:
            return _refused(scenario, problem, ("agent", "adapter"), started), ()
        return run_adapter_scenario(scenario), ()
    auto = next((i for i, turn in enumerate(scenario.turns) if turn.is_auto), None)
    if auto is not None:
        message = (
            "model: auto reads the tools each request offers: serve the scenario to the agent "
            "with agentrig serve or the agentrig_endpoint fixture (agentrig's own runtime plays "
            "scripted replies only)"
        )
        return _refused(scenario, message, ("turns", auto, "model"), started), ()
    try:
        builder = named_builder(scenario) if builder is None else builder
    except AgentrigError as error:
        return _refused(scenario, str(error), ("agent", "builder"), started), ()
    conflict = prompt_conflict(scenario, builder)
    if conflict is not None:
        return _refused(scenario, conflict, ("agent", "system_prompt"), started), ()
    try:
        agent = build_agent(scenario, base=builder)
    except AgentrigError as error:
        message = f"the agent could not be built: {error}"
        return failed_result(scenario, message, wall_time=time.perf_counter() - started), ()
    if builder is not None:
        drift = _drift_failures(scenario, agent)
        if drift:
            agent.close()
            return _result(scenario, drift, [], [], [], time.perf_counter() - started), ()
    try:
        run = _start(scenario, agent)
    except AgentrigError as error:
        agent.close()
        failure = _invariants_failure(scenario, error)
        return _result(scenario, [failure], [], [], [], time.perf_counter() - started), ()
    run.use_async = use_async
    run.streaming = scenario.agent.stream is not None if streaming is None else streaming
    try:
        state = run.agent.loop.new_state()
        for number, turn in enumerate(scenario.turns, start=1):
            try:
                state = _run_turn(run, number, turn, state)
                run.finals.append(state)
            except Exception as error:  # a bad scenario fails alone, never the whole suite
                where = ("turns", number - 1)
                message = f"turn {number}: {type(error).__name__}: {error}"
                run.fail("error", message, where, turn=number)
                break
    finally:
        agent.close()
    _check_scripts_used(run)
    outcomes = [
        InvariantOutcome(
            name=name, checks=run.checker.checks[name], failures=run.checker.failures[name]
        )
        for name in run.checker.checks
    ]
    if run.streaming and streaming is None:
        _check_same_as_plain(run, builder, use_async)
    result = _result(
        scenario, run.failures, run.turns, outcomes, run.transcript, time.perf_counter() - started
    )
    return result, tuple(run.finals)


def _refused(scenario: Scenario, message: str, path: FieldPath, started: float) -> ScenarioResult:
    """The result of a scenario that cannot run the user's agent: one error at ``path``."""
    failure = Failure(kind="error", message=message, location=scenario.nearest_location(path))
    return _result(scenario, [failure], [], [], [], time.perf_counter() - started)


def preflight(scenario: Scenario) -> Failure | None:
    """What would stop a loaded ``scenario`` before its first turn, found without running it:
    invariant names that are not registered (plugins may register more) nor checked by the
    scenario endpoint. None when it can start."""
    try:
        _selected_invariants(scenario)
    except AgentrigError as error:
        return _invariants_failure(scenario, error)
    return None


def _selected_invariants(scenario: Scenario) -> list[Invariant]:
    """The runtime invariants ``scenario.invariants`` selects, once the modules its
    ``plugins`` names are imported (they register invariants). The names of the scenario
    endpoint's invariants (``history_grows``...) are accepted and left out: a file played by
    both names the invariants of either, and each player checks its own."""
    load_plugins(scenario.invariants.plugins)  # a PluginError names the module and why
    registered = set(invariant_names())

    def own(names: Sequence[str]) -> list[str]:
        return [n for n in names if n in registered or n not in ENDPOINT_INVARIANT_NAMES]

    selection = scenario.invariants
    only = None if selection.only is None else own(selection.only)
    return select_invariants(only, own(selection.exclude or ()))


def static_failures(scenario: Scenario) -> list[Failure]:
    """What would fail ``scenario`` on the agent it runs, found by building that agent without
    running a turn: a builder its ``agent.builder`` names that cannot be imported or made, a
    ``system_prompt`` that would replace the builder's, tool drift (see
    ``tool_drift_failures``), and scripted calls the agent's tools would refuse (a tool it lacks,
    an argument the tool does not take or lacks; see ``script_call_problems``). A builder given
    only in Python, or by the pytest fixture, is not known here: the scenario's own agent is
    checked."""
    if scenario.is_live:
        return _live_builder_failures(scenario)
    try:
        builder = named_builder(scenario)
    except AgentrigError as error:
        where = scenario.nearest_location(("agent", "builder"))
        return [Failure(kind="error", message=str(error), location=where)]
    if builder is not None:
        conflict = prompt_conflict(scenario, builder)
        if conflict is not None:
            where = scenario.nearest_location(("agent", "system_prompt"))
            return [Failure(kind="error", message=conflict, location=where)]
    try:
        agent = build_agent(scenario, base=builder)
    except AgentrigError as error:
        return [Failure(kind="error", message=f"the agent could not be built: {error}")]
    agent.close()
    drift = _drift_failures(scenario, agent) if builder is not None else []
    return drift + _script_call_failures(scenario, agent)


def _live_builder_failures(scenario: Scenario) -> list[Failure]:
    """A live scenario's ``agent.builder`` that cannot be imported or made."""
    try:
        named_builder(scenario)
    except AgentrigError as error:
        where = scenario.nearest_location(("agent", "builder"))
        return [Failure(kind="error", message=str(error), location=where)]
    return []


def _script_call_failures(scenario: Scenario, agent: ScenarioAgent) -> list[Failure]:
    return [
        Failure(
            kind="script", message=problem.message, location=scenario.nearest_location(problem.path)
        )
        for problem in script_call_problems(scenario, agent.loop.tools)
    ]


def tool_drift_failures(scenario: Scenario, builder: AgentBuilder) -> list[Failure]:
    """The tools of ``scenario`` that do not describe ``builder``'s own, found without running
    it: a tool the builder lacks, or params that differ from the real tool's (tools marked
    ``scripted: true`` excepted). ``run_scenario(scenario, builder=builder)`` fails with these
    before its first turn. A builder that cannot be built gives one failure of kind ``error``."""
    try:
        agent = build_agent(scenario, base=builder)
    except AgentrigError as error:
        return [Failure(kind="error", message=f"the agent could not be built: {error}")]
    agent.close()
    return _drift_failures(scenario, agent)


def _drift_failures(scenario: Scenario, agent: ScenarioAgent) -> list[Failure]:
    """The scenario tools that do not describe the built agent's own tools, as script failures
    at each tool."""
    return [
        Failure(
            kind="script",
            message=drift.message,
            field=f"agent.tools.{drift.tool}",
            expected=drift.declared,
            observed=drift.actual,
            location=scenario.nearest_location(drift.path),
        )
        for drift in tool_drift(scenario, agent.loop.tools, agent.tools)
    ]


def failed_result(scenario: Scenario, message: str, *, wall_time: float = 0.0) -> ScenarioResult:
    """The result of ``scenario`` when it could not run: one failure of kind ``error``, located at
    the scenario's file."""
    failure = Failure(kind="error", message=message, location=_file_of(scenario))
    return _result(scenario, [failure], [], [], [], wall_time)


def unloadable_result(error: ScenarioFileError) -> ScenarioResult:
    """The result of a scenario file that did not load: one failure of kind ``error`` per
    problem (its field and reason, located at its ``file:line``), named after the file."""
    failures = [
        Failure(
            kind="error",
            message=f"the file could not be loaded: {problem.field + ': ' if problem.field else ''}"
            f"{problem.reason}",
            field=problem.field or None,
            location=f"{problem.path}:{problem.line}" if problem.line else problem.path,
        )
        for problem in error.errors
    ]
    name = Path(error.path).name
    for suffix in (SCENARIO_SUFFIX, ".yaml", ".yml"):
        name = name.removesuffix(suffix)
    return ScenarioResult(
        name=name or error.path,
        file=error.path,
        line=error.line,
        tags=(),
        description="",
        passed=False,
        turns=(),
        failures=tuple(failures),
        invariants=(),
        transcript=(),
        wall_time_s=0.0,
    )


def _invariants_failure(scenario: Scenario, error: AgentrigError) -> Failure:
    where = scenario.locate(("invariants",))
    return Failure(
        kind="error",
        message=f"the invariants could not be selected: {error}",
        location=str(where) if where is not None else _file_of(scenario),
    )


def _start(scenario: Scenario, agent: ScenarioAgent) -> _Run:
    return _Run(scenario, agent, watch(agent, _selected_invariants(scenario)))


def _run_turn(run: _Run, number: int, turn: ScenarioTurn, state: AgentState) -> AgentState:
    agent = run.agent
    agent.script.start_turn(number, run.scenario.replies_for(number, RUNTIME_SESSION_KEY))
    agent.cancellation.reset()
    agent.cancel_after[0] = (
        turn.cancel.after_step if isinstance(turn.cancel, CancelAfterStep) else None
    )
    if turn.cancel == "before":
        agent.cancellation.cancel("cancelled before the turn")
    state = agent.loop.continue_with(state, turn.user)
    final = _iterate(run, number, state)
    _check_turn(run, number, turn, final)
    return final


def _iterate(run: _Run, number: int, state: AgentState) -> AgentState:
    before = len(run.checker.violations)
    states = _states(run, state)
    checked = run_checked(run.agent.loop, run.checker, number, state, states=states)
    for (turn, invariant, message), steps in _persisting(run.checker.violations[before:]):
        run.fail(
            "invariant",
            f"turn {turn}, {_steps_text(steps)}: {message}",
            ("turns", turn - 1),
            turn=turn,
            step=steps[0] or None,
            invariant=invariant,
        )
    if checked.error is not None:
        error = checked.error
        run.fail(
            "error",
            f"turn {number}: the agent loop raised {type(error).__name__}: {error}",
            ("turns", number - 1),
            turn=number,
        )
    return checked.states[-1] if checked.states else state


def _persisting(
    violations: Sequence[Violation],
) -> list[tuple[tuple[int, str, str], list[int]]]:
    """The violations grouped by turn, invariant and message, each with the steps it was seen
    at, in the order first seen: a violation that persists over steps is reported once."""
    grouped: dict[tuple[int, str, str], list[int]] = {}
    for violation in violations:
        steps = grouped.setdefault((violation.turn, violation.invariant, violation.message), [])
        if violation.step not in steps:
            steps.append(violation.step)
    return list(grouped.items())


def _steps_text(steps: Sequence[int]) -> str:
    """``step 2``, ``steps 2-6`` (a run of three or more), ``steps 2 and 3``, ``steps 2, 4
    and 7``."""
    if len(steps) == 1:
        return f"step {steps[0]}"
    if len(steps) > 2 and list(steps) == list(range(steps[0], steps[0] + len(steps))):
        return f"steps {steps[0]}-{steps[-1]}"
    return f"steps {', '.join(map(str, steps[:-1]))} and {steps[-1]}"


def _states(run: _Run, state: AgentState) -> Iterator[AgentState]:
    """The states of the turn's run: ``iterate``, ``aiterate``, or the states among a
    ``stream``'s (``astream``'s) items when the scenario streams."""
    loop = run.agent.loop
    if not run.streaming:
        return _stepped(loop.aiterate(state)) if run.use_async else loop.iterate(state)
    items = _stepped(loop.astream(state)) if run.use_async else loop.stream(state)
    return (item for item in items if isinstance(item, AgentState))


def _stepped(states: AsyncIterator[T]) -> Iterator[T]:
    """The states of an async iterator, one at a time, each taken on a private event loop (one
    loop for the whole run), so the checks between them stay synchronous."""

    async def following() -> T:
        return await anext(states)

    import asyncio  # imported where used: the sync path runs without it

    with asyncio.Runner() as runner:
        while True:
            try:
                yield runner.run(following())
            except StopAsyncIteration:
                return


def _check_same_as_plain(run: _Run, builder: AgentBuilder | None, use_async: bool) -> None:
    """A streamed scenario must end each turn in the state its plain run ends in."""
    plain = _play(run.scenario, builder, use_async, False)[1]
    for number, (streamed, expected) in enumerate(zip(run.finals, plain, strict=False), start=1):
        if streamed.to_json() != expected.to_json():
            run.fail(
                "expectation",
                f"turn {number}: the streamed run (stream: {run.scenario.agent.stream}) ended in "
                "another state than the plain run; the pieces of an answer must rebuild it",
                ("agent", "stream"),
                turn=number,
            )


def _check_turn(run: _Run, number: int, turn: ScenarioTurn, final: AgentState) -> None:
    base: FieldPath = ("turns", number - 1)
    script = run.agent.script.current
    overrun = (
        f"(the turn scripts {counted(len(script.turns), 'reply')}); "
        "add a reply or check why the agent did not stop"
    )
    script_path = run.scenario.script_path(number, RUNTIME_SESSION_KEY)
    _check_model_script(run, script, f"turn {number}", overrun, script_path, turn=number)
    _check_tool_scripts(run, number, turn, final)
    # A turn that failed says why beside each expectation it missed (``observed: ""`` alone
    # hides a provider error that ended the run); a status mismatch says it in any case.
    failed = final.status() is ExecutionStatus.FAILED
    for mismatch in check_expectation(turn.expect, final):
        why = _recorded_errors(final) if failed or mismatch.field == "status" else ""
        run.fail(
            "expectation",
            f"turn {number}: expect.{mismatch.field}: {mismatch.message}{why}",
            (*base, "expect", *mismatch.path),
            turn=number,
            field=f"expect.{mismatch.field}",
            expected=mismatch.expected,
            observed=mismatch.observed,
        )
    branch = _branch_entry(run.scenario, number)
    run.turns.append(_turn_result(number, turn, final, branch))
    if branch is not None:
        run.transcript.append(branch)
    run.transcript.extend(turn_transcript(number, turn.user, final))


def _branch_entry(scenario: Scenario, number: int) -> TranscriptEntry | None:
    """The transcript entry naming the ``mixture`` branch turn ``number`` plays (a run draws
    with ``RUNTIME_SESSION_KEY``); None for a turn without a mixture."""
    spec = scenario.turns[number - 1]
    branch = scenario.branch_for(number, RUNTIME_SESSION_KEY)
    if spec.mixture is None or branch is None:
        return None
    name = spec.mixture[branch].name(branch)
    return TranscriptEntry.of_branch(number, name, branch + 1, spec.branch_shares())


def _recorded_errors(final: AgentState, shown: int = 3) -> str:
    """`` (errors: a; b)``: why a turn failed, for a status the scenario did not expect."""
    messages = [error.message for error in final.errors()]
    if not messages:
        return ""
    more = f"; and {len(messages) - shown} more" if len(messages) > shown else ""
    label = "error" if len(messages) == 1 else "errors"
    return f" ({label}: {'; '.join(messages[:shown])}{more})"


_SCRIPT_ERRORS = {
    "ToolNotFoundError": "the script calls tool '{tool}', which the agent does not have (it has: {tools})",
    "ScriptExhaustedError": "tool '{tool}' was called more times than its sequence of replies: {error}",
    "UnexpectedToolCallError": "no scripted reply of tool '{tool}' matches the call: {error}",
}


def _check_tool_scripts(run: _Run, number: int, turn: ScenarioTurn, final: AgentState) -> None:
    """Every failed tool call fails the turn unless ``expect.errors`` lists it: calls the scripts
    do not cover (script failures), and calls with wrong arguments or of a tool that raised
    (expectation failures). A scripted tool's own ``raise`` reply and a hook's block are
    intended by the scenario and pass, and so does a spawn whose subagent failed through its
    own ``raise`` replies only; a subagent's other failed calls fail its spawn, and so the turn."""
    expected_errors = turn.expect.errors or ()
    available = ", ".join(run.agent.loop.tools.names()) or "none"
    script_path = run.scenario.script_path(number, RUNTIME_SESSION_KEY)
    call_paths: dict[str, FieldPath] | None = None  # worked out at the first failure
    subagents: _SubagentFailures | None = None  # read off the events at the first failure
    for step_number, step in enumerate(final.steps(), start=1):
        for execution in step.tool_executions:
            error = execution.error
            if error is None or execution.blocked:
                continue
            subagents = subagents or _SubagentFailures(run)
            if subagents.intended(execution.name, execution.error_type, execution.tool_call.id):
                continue
            if any(wanted in error for wanted in expected_errors):
                continue
            template = _SCRIPT_ERRORS.get(execution.error_type or "")
            if template is not None:
                kind = "script"
                problem = template.format(tool=execution.name, tools=available, error=error)
            else:
                kind = "expectation"
                problem = f"the call of tool '{execution.name}' failed: {error}"
            if call_paths is None:
                call_paths = _call_paths(run, number, script_path)
            run.fail(
                kind,
                f"turn {number}, step {step_number}: {problem}; "
                "list the error under expect.errors if this is intended",
                call_paths.get(execution.tool_call.id, script_path),
                turn=number,
                step=step_number,
                **(
                    # compared as lists: the errors the turn lists, and this one it does not
                    {
                        "field": "expect.errors",
                        "expected": list(expected_errors),
                        "observed": [error],
                    }
                    if kind == "expectation"
                    else {}
                ),
            )


def _call_paths(run: _Run, number: int, script_path: FieldPath) -> dict[str, FieldPath]:
    """Where each tool call the model made in turn ``number`` was scripted, by its id: the
    ``call:`` (or ``calls:`` item) of the reply that answered it. Request N of the turn is
    answered by reply N (the last one again once a ``repeat: true`` reply plays on)."""
    replies = run.scenario.replies_for(number, RUNTIME_SESSION_KEY)
    paths: dict[str, FieldPath] = {}
    for index, call in enumerate(run.agent.script.current.calls):
        if call.response is None or not replies:
            continue
        at = min(index, len(replies) - 1)
        single = replies[at].call is not None
        for position, tool_call in enumerate(call.response.tool_calls):
            where = ("call",) if single else ("calls", position)
            paths.setdefault(tool_call.id, (*script_path, at, *where))
    return paths


class _SubagentFailures:
    """Which failed calls the scenario wrote, with what the turn's events tell of its
    subagents (a subagent's state is its own): which spawning call made which subagent, the
    failed calls each made, and the errors each ended with."""

    def __init__(self, run: _Run) -> None:
        self.scripted = run.agent.tools
        self.child_of: dict[str, str] = {}
        self.failed_calls: dict[str, list[ToolCallCompleted]] = {}
        self.errors_of: dict[str, tuple[str, ...]] = {}
        for event in run.checker.events:
            if isinstance(event, SubagentCompleted):
                self.child_of[event.tool_call_id] = event.subagent_id
            elif isinstance(event, ToolCallCompleted) and not event.success:
                self.failed_calls.setdefault(event.agent_id, []).append(event)
            elif isinstance(event, AgentExecutionCompleted):
                self.errors_of[event.agent_id] = event.errors

    def intended(self, tool: str, error_type: str | None, call_id: str) -> bool:
        """Whether a failed call of ``tool`` is one the scenario wrote: a ``raise`` reply of
        its own scripted tool, or a spawn whose subagent's every error is such a call of its
        own (a call a hook blocked is the caller's to pass)."""
        if error_type == ScriptedToolError.__name__:
            return tool in self.scripted
        if tool != SPAWN_SUBAGENT_TOOL or error_type != SubagentFailedError.__name__:
            return False
        child = self.child_of.get(call_id)
        errors = self.errors_of.get(child or "")
        if child is None or not errors:
            return False
        calls = self.failed_calls.get(child, [])
        return all(
            any(
                call.error == error and self.intended(call.tool, call.error_type, call.tool_call_id)
                for call in calls
            )
            for error in errors
        )


def _check_scripts_used(run: _Run) -> None:
    for name, script in run.agent.subagent_scripts.items():
        overrun = f"({counted(len(script.turns), 'reply')} scripted)"
        path: FieldPath = ("agent", "subagents", name, "model")
        _check_model_script(run, script, f"subagent {name}", overrun, path)
    for name, tool in run.agent.tools.items():
        if tool.mode.value != "sequence":
            continue
        for unused in tool.unused_replies():
            run.fail(
                "script",
                f"tool {name}: scripted reply {unused} was never used",
                ("agent", "tools", name, "replies", unused - 1),
            )


def _check_model_script(
    run: _Run, script: ScriptedLLM, who: str, overrun: str, path: FieldPath, **extra: object
) -> None:
    """Calls past the end of a scripted model and replies it never played, as script failures
    at ``path`` (the model's replies)."""
    if script.looped:
        message = (
            f"{who}: the repeating reply {len(script.turns)} calls a tool and answered "
            f"{script.repeat_limit} more model calls: the agent loops on it; end the script with "
            "a reply that does not call a tool, or give the agent a step budget"
        )
        run.fail("script", message, (*path, len(script.turns) - 1), **extra)
    for call in script.overruns[1:] if script.looped else script.overruns:
        run.fail("script", f"{who}: model call {call} was not scripted {overrun}", path, **extra)
    for unused in range(len(script.turns) - script.remaining + 1, len(script.turns) + 1):
        message = f"{who}: scripted model reply {unused} was never used"
        run.fail("script", message, (*path, unused - 1), **extra)


def _turn_result(
    number: int, turn: ScenarioTurn, final: AgentState, branch: TranscriptEntry | None
) -> TurnResult:
    status, reason, usage = final.status(), final.last_stop_reason(), final.usage()
    return TurnResult(
        index=number,
        user=turn.user,
        status=status.value if status else None,
        stop_reason=reason.value if reason else None,
        steps=final.step_count(),
        final_response=final.final_response().to_text(),
        usage={key: int(value) for key, value in usage.summary().items() if key != "cost"},
        cost=usage.cost,
        branch=branch.name if branch is not None else None,
    )


def _file_of(scenario: Scenario) -> str | None:
    return str(scenario.source) if scenario.source is not None else None


def _result(
    scenario: Scenario,
    failures: Sequence[Failure],
    turns: Sequence[TurnResult],
    invariants: Sequence[InvariantOutcome],
    transcript: Sequence[TranscriptEntry],
    wall_time: float,
) -> ScenarioResult:
    source = scenario.source
    return ScenarioResult(
        name=scenario.name,
        file=source.path if source is not None else "",
        line=source.line if source is not None else None,
        tags=scenario.tags,
        description=scenario.description,
        passed=not failures,
        turns=tuple(turns),
        failures=_in_file_order(failures, source.path if source is not None else ""),
        invariants=tuple(invariants),
        transcript=tuple(transcript),
        wall_time_s=wall_time,
    )


def _in_file_order(failures: Sequence[Failure], path: str) -> tuple[Failure, ...]:
    """``failures`` ordered by the line of ``path`` each points at (stable: those at one line,
    or at none, keep the order they were found in; those elsewhere come last)."""

    def line(failure: Failure) -> tuple[int, int]:
        where, _, number = (failure.location or "").rpartition(":")
        if where == path and number.isdigit():
            return 0, int(number)
        return 1, 0

    return tuple(sorted(failures, key=line))
