"""Run scenarios: build the agent, play each turn, check expectations and invariants, report."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import TypeVar

from agentrig import AgentBuilder, AgentState, runtime_context
from agentrig.errors import AgentrigError
from agentrig.harness.checks.expectations import check_expectation
from agentrig.harness.checks.invariants import InvariantChecker, select_invariants, snapshot_of
from agentrig.harness.reporting.transcript import turn_transcript
from agentrig.harness.results import (
    Failure,
    InvariantOutcome,
    ScenarioResult,
    SuiteResult,
    TranscriptEntry,
    TurnResult,
)
from agentrig.harness.scenarios.agent_factory import ScenarioAgent, build_agent
from agentrig.harness.scenarios.model import CancelAfterStep, Scenario, Turn

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
        for end in range(len(path), 0, -1):
            location = self.scenario.locate(path[:end])
            if location is not None:
                return str(location)
        return _file_of(self.scenario)

    def fail(self, kind: str, message: str, path: FieldPath = (), **extra: object) -> None:
        self.failures.append(
            Failure(kind=kind, message=message, location=self.where(path), **extra)
        )


def run_scenario(
    scenario: Scenario, *, builder: AgentBuilder | None = None, use_async: bool = False
) -> ScenarioResult:
    """Run every turn of ``scenario`` against one agent state and return the outcome.

    With ``builder``, the agent is the one built in Python (its tools and hooks), driven by the
    scenario's scripted model and checked against its expectations. With ``use_async``, each
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
    try:
        agent = build_agent(scenario, base=builder)
    except AgentrigError as error:
        failure = _build_failure(scenario, error)
        return _result(scenario, [failure], [], [], [], time.perf_counter() - started), ()
    try:
        run = _start(scenario, agent)
    except AgentrigError as error:
        agent.close()
        failure = _invariants_failure(scenario, error)
        return _result(scenario, [failure], [], [], [], time.perf_counter() - started), ()
    run.use_async = use_async
    run.streaming = scenario.agent.stream is not None if streaming is None else streaming
    try:
        with runtime_context(clock=run.agent.clock, ids=run.agent.ids):
            state = AgentState()
        for number, turn in enumerate(scenario.turns, start=1):
            state = _run_turn(run, number, turn, state)
            run.finals.append(state)
    finally:
        agent.close()
    _check_scripts_used(run)
    if run.streaming and streaming is None:
        _check_same_as_plain(run, builder, use_async)
    outcomes = [
        InvariantOutcome(
            name=name, checks=run.checker.checks[name], failures=run.checker.failures[name]
        )
        for name in run.checker.checks
    ]
    result = _result(
        scenario, run.failures, run.turns, outcomes, run.transcript, time.perf_counter() - started
    )
    return result, tuple(run.finals)


def preflight(scenario: Scenario) -> Failure | None:
    """What would stop a loaded ``scenario`` before its first turn, found without running it:
    invariant names that are not registered (plugins may register more). None when it can start."""
    selection = scenario.invariants
    try:
        select_invariants(selection.only, selection.exclude or ())
    except AgentrigError as error:
        return _invariants_failure(scenario, error)
    return None


def _build_failure(scenario: Scenario, error: AgentrigError) -> Failure:
    return Failure(
        kind="error", message=f"the agent could not be built: {error}", location=_file_of(scenario)
    )


def _invariants_failure(scenario: Scenario, error: AgentrigError) -> Failure:
    where = scenario.locate(("invariants",))
    return Failure(
        kind="error",
        message=f"the invariants could not be selected: {error}",
        location=str(where) if where is not None else _file_of(scenario),
    )


def _start(scenario: Scenario, agent: ScenarioAgent) -> _Run:
    selection = scenario.invariants
    invariants = select_invariants(selection.only, selection.exclude or ())
    from agentrig import TraceMode

    checker = InvariantChecker(
        invariants, trace_mode=TraceMode(scenario.agent.trace_mode), budget=agent.budget
    )
    agent.detach.append(agent.loop.events.wiretap(checker.record_event))
    return _Run(scenario, agent, checker)


def _run_turn(run: _Run, number: int, turn: Turn, state: AgentState) -> AgentState:
    agent = run.agent
    agent.script.start_turn(number, turn.model)
    agent.cancellation.reset()
    agent.cancel_after[0] = (
        turn.cancel.after_step if isinstance(turn.cancel, CancelAfterStep) else None
    )
    if turn.cancel == "before":
        agent.cancellation.cancel("cancelled before the turn")
    with runtime_context(clock=agent.clock, ids=agent.ids):
        state = state.with_user_message(turn.user)
    final = _iterate(run, number, state)
    _check_turn(run, number, turn, final)
    return final


def _iterate(run: _Run, number: int, state: AgentState) -> AgentState:
    run.checker.begin(number, state)
    previous: AgentState | None = None
    snapshot = ""
    try:
        states = _states(run, state)
        for yielded in states:
            if previous is not None:
                checked = run.checker.observe(previous, is_final=False, snapshot=snapshot)
                _record_violations(run, checked)
            previous, snapshot = yielded, snapshot_of(yielded)
    except Exception as error:
        run.fail(
            "error",
            f"turn {number}: the agent loop raised {type(error).__name__}: {error}",
            ("turns", number - 1),
            turn=number,
        )
        return previous or state
    assert previous is not None
    _record_violations(run, run.checker.observe(previous, is_final=True, snapshot=snapshot))
    return previous


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


def _record_violations(run: _Run, violations: Iterable[object]) -> None:
    from agentrig.harness.checks.invariants import Violation

    for violation in violations:
        assert isinstance(violation, Violation)
        run.fail(
            "invariant",
            f"turn {violation.turn}, step {violation.step}: {violation.message}",
            ("turns", violation.turn - 1),
            turn=violation.turn,
            step=violation.step or None,
            invariant=violation.invariant,
        )


def _check_turn(run: _Run, number: int, turn: Turn, final: AgentState) -> None:
    base: FieldPath = ("turns", number - 1)
    script = run.agent.script.current
    for call in script.overruns:
        run.fail(
            "script",
            f"turn {number}: model call {call} was not scripted (the turn scripts "
            f"{len(script.turns)} reply(ies)); add a reply or check why the agent did not stop",
            (*base, "model"),
            turn=number,
        )
    for unused in range(len(script.turns) - script.remaining + 1, len(script.turns) + 1):
        run.fail(
            "script",
            f"turn {number}: scripted model reply {unused} was never used",
            (*base, "model", unused - 1),
            turn=number,
        )
    _check_tool_scripts(run, number, turn, final)
    for mismatch in check_expectation(turn.expect, final):
        why = _recorded_errors(final) if mismatch.field == "status" else ""
        run.fail(
            "expectation",
            f"turn {number}: expect.{mismatch.field}: {mismatch.message}{why}",
            (*base, "expect", *mismatch.path),
            turn=number,
            field=f"expect.{mismatch.field}",
            expected=mismatch.expected,
            observed=mismatch.observed,
        )
    run.turns.append(_turn_result(number, turn, final))
    run.transcript.extend(turn_transcript(number, turn.user, final))


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


def _check_tool_scripts(run: _Run, number: int, turn: Turn, final: AgentState) -> None:
    """Calls the scripts do not cover are scenario mistakes, unless expected as errors."""
    expected_errors = turn.expect.errors or ()
    available = ", ".join(run.agent.loop.tools.names()) or "none"
    for step_number, step in enumerate(final.steps(), start=1):
        for execution in step.tool_executions:
            template = _SCRIPT_ERRORS.get(execution.error_type or "")
            error = execution.error or ""
            if template is None or any(wanted in error for wanted in expected_errors):
                continue
            problem = template.format(tool=execution.name, tools=available, error=error)
            run.fail(
                "script",
                f"turn {number}, step {step_number}: {problem}; "
                "list the error under expect.errors if this is intended",
                ("turns", number - 1, "model"),
                turn=number,
                step=step_number,
            )


def _check_scripts_used(run: _Run) -> None:
    for name, script in run.agent.subagent_scripts.items():
        path: FieldPath = ("agent", "subagents", name, "model")
        for call in script.overruns:
            run.fail(
                "script",
                f"subagent {name}: model call {call} was not scripted "
                f"({len(script.turns)} reply(ies) scripted)",
                path,
            )
        for unused in range(len(script.turns) - script.remaining + 1, len(script.turns) + 1):
            run.fail(
                "script",
                f"subagent {name}: scripted model reply {unused} was never used",
                (*path, unused - 1),
            )
    for name, tool in run.agent.tools.items():
        if tool.mode.value != "sequence":
            continue
        for unused in tool.unused_replies():
            run.fail(
                "script",
                f"tool {name}: scripted reply {unused} was never used",
                ("agent", "tools", name, "replies", unused - 1),
            )


def _turn_result(number: int, turn: Turn, final: AgentState) -> TurnResult:
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
        failures=tuple(failures),
        invariants=tuple(invariants),
        transcript=tuple(transcript),
        wall_time_s=wall_time,
    )


# --- suites -------------------------------------------------------------------------------

Progress = Callable[[ScenarioResult], None]


def run_suite(
    scenarios: Sequence[Scenario],
    *,
    workers: int = 1,
    plugins: Sequence[str] = (),
    progress: Progress | None = None,
    use_async: bool = False,
) -> SuiteResult:
    """Run ``scenarios`` (in worker processes when ``workers > 1``), keeping their order; with
    ``use_async``, through the async path."""
    started = time.perf_counter()
    if workers <= 1 or len(scenarios) < 2:
        results = []
        for scenario in scenarios:
            result = run_scenario(scenario, use_async=use_async)
            if progress is not None:
                progress(result)
            results.append(result)
    else:
        results = _run_parallel(scenarios, workers, plugins, progress, use_async)
    return SuiteResult(scenarios=tuple(results), wall_time_s=time.perf_counter() - started)


def _run_parallel(
    scenarios: Sequence[Scenario],
    workers: int,
    plugins: Sequence[str],
    progress: Progress | None,
    use_async: bool,
) -> list[ScenarioResult]:
    tasks = [(str(s.source.path) if s.source else "", s.name) for s in scenarios]
    if any(not path for path, _ in tasks):
        raise AgentrigError(
            "parallel runs need scenarios loaded from files; run them with workers=1"
        )
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=get_context("spawn"),
        initializer=_init_worker,
        initargs=(tuple(plugins),),
    )
    size = max(1, len(tasks) // (workers * 8))
    starts = range(0, len(tasks), size)
    results: list[ScenarioResult] = []
    try:
        with _sigint_held():  # the workers start here
            futures = [
                pool.submit(_run_chunk, tasks[start : start + size], use_async) for start in starts
            ]
        for start, future in zip(starts, futures, strict=True):
            try:
                outcomes = future.result()
            except BrokenProcessPool:
                outcomes = [_worker_died(s) for s in scenarios[start : start + size]]
            for outcome in outcomes:
                if isinstance(outcome, str):  # the worker could not start: a usage error
                    raise AgentrigError(outcome)
                if progress is not None:
                    progress(outcome)
                results.append(outcome)
    except BaseException:  # Ctrl-C or a usage error: stop now, do not finish the queue
        _stop(pool)
        raise
    pool.shutdown()
    return results


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Hold Ctrl-C back while workers start: they inherit the blocked signal, so a Ctrl-C never
    interrupts them mid-import with a traceback, and this process gets it when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: the workers' own handler must do
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers (they ignore Ctrl-C: see _init_worker)."""
    processes = list(getattr(pool, "_processes", None) or {})  # no public way before 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for pid in processes:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    pool.shutdown(wait=True)


def _worker_died(scenario: Scenario) -> ScenarioResult:
    failure = Failure(
        kind="error",
        message="a worker process died abruptly (killed, out of memory, os._exit or a crash in "
        "native code) before this scenario finished; run again with --workers 1 to find the "
        "scenario that causes it",
        location=_file_of(scenario),
    )
    return _result(scenario, [failure], [], [], [], 0.0)


_LOADED: dict[str, dict[str, Scenario]] = {}
_WORKER_PROBLEM: list[str] = []


def _init_worker(plugins: tuple[str, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    try:
        load_plugins(plugins)
    except AgentrigError as error:  # raising here would only break the pool, without a reason
        _WORKER_PROBLEM.append(f"in a worker process: {error}")


def _run_chunk(
    tasks: Sequence[tuple[str, str]], use_async: bool = False
) -> list[ScenarioResult | str]:
    """Run ``(path, name)`` tasks in a worker; a plugin problem comes back as its message."""
    from agentrig.harness.scenarios.loader import load_scenario

    if _WORKER_PROBLEM:
        return [_WORKER_PROBLEM[0]]
    results: list[ScenarioResult | str] = []
    for path, name in tasks:
        if path not in _LOADED:
            scenario = load_scenario(Path(path))
            _LOADED[path] = {scenario.name: scenario}
        results.append(run_scenario(_LOADED[path][name], use_async=use_async))
    return results


def load_plugins(modules: Iterable[str]) -> None:
    """Import modules that register invariants or report writers."""
    for module in modules:
        try:
            _import_plugin(module)
        except ModuleNotFoundError as error:
            raise AgentrigError(
                f"cannot import plugin module {module!r}: {error}; give its dotted import name, "
                "and run agentrig from the folder that holds it or add that folder to PYTHONPATH"
            ) from error
        except AgentrigError:
            raise
        except Exception as error:  # the plugin's own code failed: say where, not a traceback
            raise AgentrigError(
                f"plugin module {module!r} failed to import: {_plugin_failure(error)}; "
                "fix the module and run again"
            ) from error


def _import_plugin(module: str) -> None:
    """Import ``module``; like ``python -m``, the current folder is searched too."""
    import importlib

    try:
        importlib.import_module(module)
    except ModuleNotFoundError as error:
        here = os.getcwd()
        top = module.partition(".")[0]
        if error.name != top or here in sys.path or "" in sys.path:
            raise
        sys.path.insert(0, here)  # kept: spawned workers inherit it and import the module too
        try:
            importlib.import_module(module)
        except ModuleNotFoundError:
            sys.path.remove(here)
            raise


def _plugin_failure(error: Exception) -> str:
    if isinstance(error, SyntaxError):
        return f"{error.msg} ({error.filename}, line {error.lineno})"
    frames = traceback.extract_tb(error.__traceback__)
    last = f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{last}"
