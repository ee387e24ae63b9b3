"""A planted bug: hypothesis finds it, shrinks it, and the harness writes the shrunk run as a
scenario file that reproduces the same invariant failure under ``agentrig run``.

The bug is in the driver: once the model has called tools twice in one execution, each step's
tool results also leak into ``messages`` (they belong in the execution buffer).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test
from typer.testing import CliRunner

from agentrig import AgentState, ExecutionBudget, Role, StepRuntime, ToolCallingDriver
from agentrig.fakes import Turn
from agentrig.harness.cli import app
from agentrig.harness.property.profiles import agentrig_settings
from agentrig.harness.property.stateful import AgentMachine
from agentrig.harness.property.strategies import llm_turns, params_of, scripts
from agentrig.harness.results import SuiteResult
from agentrig.harness.runner import run_scenario
from agentrig.harness.scenarios.loader import load_scenario


def tool_calls_so_far(state: AgentState) -> int:
    current = state.current_step()
    steps = (*state.steps(), *((current,) if current is not None else ()))
    return sum(len(step.requested_tool_calls()) for step in steps)


def plant_the_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the model has called tools twice in an execution, tool results leak into messages."""
    original = ToolCallingDriver.use_tools

    def use_tools(self: ToolCallingDriver, state: AgentState, runtime: StepRuntime) -> AgentState:
        state = original(self, state, runtime)
        step = state.current_step()
        if step is None or not step.has_tool_calls() or tool_calls_so_far(state) < 2:
            return state
        leaked = [message for message in step.output_messages if message.role is Role.TOOL]
        return state.with_message_store(state.store().section("messages").append(leaked))

    monkeypatch.setattr(ToolCallingDriver, "use_tools", use_tools)


@pytest.fixture
def leaky_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted bug, for one test."""
    plant_the_bug(monkeypatch)


class LeakHunter(AgentMachine):
    """The default machine narrowed to what this bug can depend on, so shrinking is quick."""

    trace_modes: ClassVar[tuple[Any, ...]] = ("separated",)

    def budget_strategy(self) -> st.SearchStrategy[ExecutionBudget]:
        return st.just(ExecutionBudget())

    def turn_strategy(self) -> st.SearchStrategy[Turn]:
        tools = params_of(self.agent_tools)
        return llm_turns(tools=tools, usage=False, finish_reasons=False, invalid_arguments=False)

    def script_strategy(self) -> st.SearchStrategy[list[Turn]]:
        tools = params_of(self.agent_tools)
        return scripts(tools=tools, max_steps=2, errors=False, invalid_arguments=False)


def invariant_names_in(text: str) -> set[str]:
    return set(re.findall(r"\[([a-z_]+)\] turn", text))


@pytest.fixture(scope="module")
def shrunk(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    """Run the machine with the bug until it fails; return the file it wrote and the invariants
    that failed."""
    folder = tmp_path_factory.mktemp("found")
    hunter = type("LeakHunter", (LeakHunter,), {"failure_dir": folder})
    settings = agentrig_settings(max_examples=80, stateful_step_count=5)
    with pytest.MonkeyPatch.context() as monkeypatch:
        plant_the_bug(monkeypatch)
        with pytest.raises(AssertionError, match="harness invariants failed") as caught:
            run_state_machine_as_test(hunter, settings=settings)
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    (path,) = folder.glob("*.scenario.yaml")
    assert f"agentrig: wrote {path}" in notes
    return path, invariant_names_in(str(caught.value))


def test_the_failure_is_shrunk_to_one_turn_with_two_tool_calls(
    shrunk: tuple[Path, set[str]],
) -> None:
    path, failed = shrunk
    assert path.name == "leak-hunter-clean-messages.scenario.yaml"
    assert failed == {"clean_messages", "tool_calls_paired"}
    scenario = load_scenario(path)
    (turn,) = scenario.turns
    calls = [call for reply in turn.model for call in reply.tool_calls]
    assert len(calls) == 2
    assert len(turn.model) <= 3  # the calls, and at most a final answer
    assert turn.user == ""
    assert scenario.agent.budget is None
    assert path.read_text(encoding="utf-8").startswith("# Written by agentrig's AgentMachine")


@pytest.mark.usefixtures("leaky_driver")
def test_the_scenario_reproduces_the_same_invariant_failure(shrunk: tuple[Path, set[str]]) -> None:
    path, failed = shrunk
    result = run_scenario(load_scenario(path))
    assert not result.passed
    assert {f.invariant for f in result.failures} == failed
    assert {f.kind for f in result.failures} == {"invariant"}


@pytest.mark.usefixtures("leaky_driver")
def test_agentrig_run_reports_it(shrunk: tuple[Path, set[str]], tmp_path: Path) -> None:
    path, failed = shrunk
    reports = tmp_path / "reports"
    outcome = CliRunner().invoke(app, ["run", str(path), "--report-dir", str(reports)])
    assert outcome.exit_code == 1, outcome.output
    for name in failed:
        assert f"[invariant: {name}]" in outcome.output
    report = SuiteResult.from_dict(
        json.loads((reports / "report.json").read_text(encoding="utf-8"))
    )
    assert {f.invariant for f in report.scenarios[0].failures} == failed


def test_without_the_bug_the_same_file_passes(
    shrunk: tuple[Path, set[str]], tmp_path: Path
) -> None:
    path, _ = shrunk
    outcome = CliRunner().invoke(app, ["run", str(path), "--report-dir", str(tmp_path / "r")])
    assert outcome.exit_code == 0, outcome.output
    assert run_scenario(load_scenario(path)).passed
