"""Properties of the runtime and the harness, over drawn scripts, budgets and scenarios.

Serializers round-trip (states, budgets, scenarios, reports); the loop respects every budget
limit, ends every execution with an empty buffer (and clean messages in separated mode),
pairs tool calls with results, and ends any script with a terminal status and a stop reason.
Counts are small under the default ``agentrig-ci`` profile; ``--agentrig-deep`` scales them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrig import (
    AgentState,
    ExecutionBudget,
    ExecutionStatus,
    Role,
    StepExecutions,
    StopReason,
    ToolExecutions,
    TraceMode,
    Usage,
)
from agentrig.fakes import CallSpec, Turn, call, reply
from agentrig.harness.checks.invariant import Violation
from agentrig.harness.property import strategies as ars
from agentrig.harness.property.play import Playback, play
from agentrig.harness.property.profiles import (
    CI_PROFILE,
    DEEP_FACTOR,
    DEEP_PROFILE,
    agentrig_settings,
    register_profiles,
)
from agentrig.harness.results import SuiteResult
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import AgentSpec, Scenario
from agentrig.harness.scenarios.writer import budget_spec, scenario_to_yaml, write_scenario
from agentrig.harness.suites.suite import run_suite
from agentrig.store import EXECUTION_BUFFER

# --- serializers ------------------------------------------------------------------------------


@agentrig_settings(max_examples=25)
@given(state=ars.agent_states())
def test_every_state_the_loop_produces_round_trips(state: AgentState) -> None:
    assert AgentState.from_dict(state.to_dict()) == state
    assert AgentState.from_json(state.to_json()) == state
    assert AgentState.from_json(state.to_json()).to_json() == state.to_json()


@agentrig_settings(max_examples=25)
@given(budget=ars.budgets())
def test_budgets_round_trip(budget: ExecutionBudget) -> None:
    assert ExecutionBudget.from_dict(budget.to_dict()) == budget
    assert ExecutionBudget.from_json(budget.to_json()) == budget


@agentrig_settings(max_examples=20)
@given(scenario=ars.scenarios(expectations=True))
def test_scenarios_round_trip_through_yaml_files(
    scenario: Scenario, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = write_scenario(scenario, path=tmp_path_factory.mktemp("s") / "drawn.scenario.yaml")
    loaded = load_scenario(path)
    assert loaded == scenario
    assert scenario_to_yaml(loaded) == path.read_text(encoding="utf-8")


unique_scenarios = st.lists(
    ars.scenarios(max_turns=2, expectations=True),
    min_size=1,
    max_size=3,
    unique_by=lambda scenario: scenario.name,
)


@agentrig_settings(max_examples=10)
@given(scenarios=unique_scenarios)
def test_reports_of_drawn_runs_round_trip(scenarios: list[Scenario]) -> None:
    result = run_suite(scenarios)
    assert SuiteResult.from_dict(result.to_dict()) == result
    assert SuiteResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


# --- the loop ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """A drawn agent and what happened when its turns were played."""

    trace_mode: TraceMode
    budget: ExecutionBudget
    turns: list[tuple[str, list[Turn]]]
    playback: Playback


@st.composite
def runs(draw: st.DrawFn) -> Run:
    trace_mode = draw(st.sampled_from(TraceMode))
    budget = draw(ars.budgets(max_steps=4, max_tokens=900, max_cost=0.6))
    script = ars.scripts(max_steps=4, max_latency=2.0, unknown_tools=True)
    turns = draw(st.lists(st.tuples(ars.texts(), script), min_size=1, max_size=2))
    agent = AgentSpec(
        trace_mode=trace_mode.value, budget=budget_spec(budget), tools=ars.DEFAULT_TOOL_SPECS
    )
    return Run(trace_mode, budget, turns, play(agent=agent, turns=turns))


def finals(run: Run) -> list[AgentState]:
    return [execution[-1] for execution in run.playback.executions]


def harness_invariants_hold(run: Run) -> None:
    assert run.playback.violations == ()


def never_more_steps_than_max_steps(run: Run) -> None:
    limit = run.budget.max_steps
    for state in run.playback.all_states():
        assert limit is None or state.step_count() <= limit
    for final in finals(run):
        if final.last_stop_reason() is StopReason.STEPS_LIMIT:
            assert final.step_count() == limit


def no_step_starts_after_a_token_cost_or_time_limit_was_crossed(run: Run) -> None:
    budget = run.budget
    for final in finals(run):
        assert final.execution is not None
        tokens, cost = 0, 0.0
        for record in final.step_executions():
            elapsed = (record.started_at - final.execution.started_at).total_seconds()
            assert budget.max_tokens is None or tokens < budget.max_tokens
            assert budget.max_cost is None or cost < budget.max_cost
            assert budget.max_seconds is None or elapsed < budget.max_seconds
            assert budget.deadline is None or record.started_at < budget.deadline
            tokens, cost = tokens + record.usage().total(), cost + record.usage().cost


def every_execution_ends_with_an_empty_buffer_and_clean_messages(run: Run) -> None:
    for final in finals(run):
        assert final.store().messages_of(EXECUTION_BUFFER).to_tuple() == ()
        if run.trace_mode is TraceMode.SEPARATED:
            for message in final.messages():
                assert message.role in (Role.USER, Role.ASSISTANT)
                assert not message.is_trace
                assert not message.tool_calls


def tool_calls_are_paired_with_results(run: Run) -> None:
    for final in finals(run):
        for step in final.steps():
            requested = [call.id for call in step.requested_tool_calls()]
            executed = [execution.tool_call.id for execution in step.tool_executions]
            results = [
                m.tool_result.call_id for m in step.output_messages if m.tool_result is not None
            ]
            assert len(set(requested)) == len(requested)
            assert executed == requested
            assert results == requested


def any_script_completes_or_stops_with_a_stop_reason(run: Run) -> None:
    for final in finals(run):
        status, reason = final.status(), final.last_stop_reason()
        assert reason is not None
        if status is ExecutionStatus.COMPLETED:
            assert not reason.was_force_stopped()
        elif status is ExecutionStatus.STOPPED:
            assert reason.was_force_stopped()
        else:
            assert status is ExecutionStatus.FAILED
            assert final.has_errors()


LOOP_PROPERTIES = (
    harness_invariants_hold,
    never_more_steps_than_max_steps,
    no_step_starts_after_a_token_cost_or_time_limit_was_crossed,
    every_execution_ends_with_an_empty_buffer_and_clean_messages,
    tool_calls_are_paired_with_results,
    any_script_completes_or_stops_with_a_stop_reason,
)


@agentrig_settings(max_examples=50)
@given(run=runs())
def test_loop_properties_hold_on_drawn_runs(run: Run) -> None:
    """Each property is a function above; a failure names it in its traceback."""
    for check in LOOP_PROPERTIES:
        check(run)


# --- the checks can fail ----------------------------------------------------------------------


def played(turns: list[tuple[str, list[Turn]]], *, inline: bool = False) -> Playback:
    mode = "inline" if inline else "separated"
    return play(agent=AgentSpec(trace_mode=mode, tools=ars.DEFAULT_TOOL_SPECS), turns=turns)


TWO_STEPS = [("hi", [call("lookup", query="x"), reply("found")])]


def without_tool_executions(playback: Playback) -> Playback:
    final = playback.final
    assert final.execution is not None
    first, *rest = final.step_executions()
    step = first.step.evolve(tool_executions=ToolExecutions())
    records = StepExecutions([first.evolve(step=step), *rest])
    broken = final.with_execution(final.execution.evolve(step_executions=records))
    return Playback(((broken,),), ())


BROKEN_RUNS = {
    "harness_invariants_hold": lambda: Run(
        TraceMode.SEPARATED,
        ExecutionBudget(),
        [],
        Playback(played(TWO_STEPS).executions, (Violation("clean_messages", 1, 1, "planted"),)),
    ),
    "never_more_steps_than_max_steps": lambda: Run(
        TraceMode.SEPARATED, ExecutionBudget(max_steps=1), [], played(TWO_STEPS)
    ),
    "no_step_starts_after_a_token_cost_or_time_limit_was_crossed": lambda: Run(
        TraceMode.SEPARATED,
        ExecutionBudget(max_tokens=50),
        [],
        played(
            [
                (
                    "hi",
                    [
                        Turn(
                            calls=(CallSpec("lookup", {"query": "x"}),),
                            usage=Usage(input_tokens=60),
                        ),
                        reply("ok"),
                    ],
                )
            ]
        ),
    ),
    "every_execution_ends_with_an_empty_buffer_and_clean_messages": lambda: Run(
        TraceMode.SEPARATED, ExecutionBudget(), [], played(TWO_STEPS, inline=True)
    ),
    "tool_calls_are_paired_with_results": lambda: Run(
        TraceMode.SEPARATED, ExecutionBudget(), [], without_tool_executions(played(TWO_STEPS))
    ),
    "any_script_completes_or_stops_with_a_stop_reason": lambda: Run(
        TraceMode.SEPARATED,
        ExecutionBudget(),
        [],
        Playback(((played(TWO_STEPS).all_states()[0],),), ()),
    ),
}


@pytest.mark.parametrize("check", LOOP_PROPERTIES, ids=lambda check: check.__name__)
def test_each_loop_property_rejects_a_run_that_breaks_it(check: Callable[[Run], None]) -> None:
    with pytest.raises(AssertionError):
        check(BROKEN_RUNS[check.__name__]())


def test_the_unbroken_runs_pass_every_check() -> None:
    run = Run(TraceMode.SEPARATED, ExecutionBudget(max_steps=2), TWO_STEPS, played(TWO_STEPS))
    for check in LOOP_PROPERTIES:
        check(run)


# --- the docs and the profiles ----------------------------------------------------------------

DOCS = Path(__file__).parents[3] / "docs"


def test_the_documented_examples_run(pytester: pytest.Pytester) -> None:
    page = (DOCS / "property-testing.md").read_text(encoding="utf-8")
    examples = re.findall(r"```python\n(.*?)```", page, re.DOTALL)
    assert len(examples) == 3
    for number, example in enumerate(examples):
        pytester.makepyfile(**{f"test_example_{number}": example})
    pytester.runpytest().assert_outcomes(passed=3)


PROFILE_CHECK = """
from hypothesis import settings

from agentrig.harness.property.profiles import DEEP_FACTOR, agentrig_settings


def test_profile():
    chosen = agentrig_settings(max_examples=5, stateful_step_count=10)
    assert settings.get_current_profile_name() == {name!r}
    assert chosen.max_examples == {examples}
    assert chosen.derandomize is {derandomized}
"""


@pytest.mark.parametrize(
    ("options", "name", "examples", "derandomized"),
    [
        (("--agentrig-deep",), DEEP_PROFILE, 5 * DEEP_FACTOR, False),
        (("--hypothesis-profile", DEEP_PROFILE), DEEP_PROFILE, 5 * DEEP_FACTOR, False),
    ],
)
def test_the_deep_option_scales_example_counts(
    pytester: pytest.Pytester,
    options: tuple[str, ...],
    name: str,
    examples: int,
    derandomized: bool,
) -> None:
    pytester.makepyfile(
        test_profile=PROFILE_CHECK.format(name=name, examples=examples, derandomized=derandomized)
    )
    previous = settings.get_current_profile_name()
    try:
        pytester.runpytest(*options).assert_outcomes(passed=1)
    finally:
        settings.load_profile(previous)


def test_the_deep_profile_keeps_a_failure_database_and_the_ci_one_does_not() -> None:
    register_profiles()
    assert settings.get_profile(DEEP_PROFILE).database is not None
    assert settings.get_profile(CI_PROFILE).database is None


def test_without_the_option_the_ci_counts_apply(pytester: pytest.Pytester) -> None:
    name = settings.get_current_profile_name()
    deep = name == DEEP_PROFILE
    check = PROFILE_CHECK.format(
        name=name, examples=5 * DEEP_FACTOR if deep else 5, derandomized=not deep
    )
    pytester.makepyfile(test_profile=check)
    pytester.runpytest().assert_outcomes(passed=1)
    assert settings.get_current_profile_name() == name
