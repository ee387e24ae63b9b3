"""What a failing ``AgentMachine`` writes: a file that fails the same way under ``agentrig run``,
or one that says plainly, in the file and in the test's output, that it cannot and why."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from textwrap import dedent
from typing import Any, ClassVar

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, run_state_machine_as_test
from typer.testing import CliRunner

from agentrig import AgentBuilder, ExecutionBudget
from agentrig.fakes import Turn
from agentrig.harness.checks.invariant import unregister_invariant
from agentrig.harness.cli import app
from agentrig.harness.property.profiles import agentrig_settings
from agentrig.harness.property.stateful import AgentMachine
from agentrig.harness.property.strategies import DEFAULT_TOOL_SPECS, llm_turns, params_of, scripts
from agentrig.harness.runner import run_scenario
from agentrig.harness.scenarios.loader import load_scenario

_modules = itertools.count()


class Narrow(AgentMachine):
    """The default machine narrowed so that a failure is found and shrunk quickly."""

    trace_modes: ClassVar[tuple[Any, ...]] = ("separated",)

    def budget_strategy(self) -> st.SearchStrategy[ExecutionBudget]:
        return st.just(ExecutionBudget())

    def turn_strategy(self) -> st.SearchStrategy[Turn]:
        tools = params_of(self.agent_tools)
        return llm_turns(tools=tools, usage=False, finish_reasons=False, invalid_arguments=False)

    def script_strategy(self) -> st.SearchStrategy[list[Turn]]:
        tools = params_of(self.agent_tools)
        return scripts(tools=tools, max_steps=2, errors=False, invalid_arguments=False)


def called(machine: AgentMachine, tool: str) -> bool:
    steps = (*machine.state.steps(), *filter(None, [machine.state.current_step()]))
    return any(call.name == tool for step in steps for call in step.requested_tool_calls())


class NeverExplodes(Narrow):
    """A user's machine with its own check, which agentrig run cannot run."""

    @invariant()
    def explode_is_never_called(self) -> None:
        assert not called(self, "explode"), "the agent called explode"


def run_until_it_fails(machine: type[AgentMachine], folder: Path, match: str) -> str:
    """Run ``machine`` writing to ``folder`` until it fails; the notes of the failure."""
    hunter = type(machine.__name__, (machine,), {"failure_dir": folder})
    settings = agentrig_settings(max_examples=80, stateful_step_count=5)
    with pytest.raises(AssertionError, match=match) as caught:
        run_state_machine_as_test(hunter, settings=settings)
    return "\n".join(getattr(caught.value, "__notes__", []))


def test_a_custom_invariant_failure_is_named_and_the_file_says_it_cannot_replay_it(
    tmp_path: Path,
) -> None:
    notes = run_until_it_fails(NeverExplodes, tmp_path, "the agent called explode")
    (path,) = tmp_path.glob("*.scenario.yaml")
    assert path.name == "never-explodes-explode-is-never-called.scenario.yaml"
    text = path.read_text(encoding="utf-8")
    assert "no failure" not in text
    assert "It CANNOT reproduce the failure under agentrig run:" in text
    assert "NeverExplodes.explode_is_never_called, a check of the machine" in text
    assert f"agentrig: wrote {path}; it cannot reproduce the failure: it failed " in notes
    scenario = load_scenario(path)
    assert scenario.description.startswith(
        "Shrunk by NeverExplodes: explode_is_never_called failed: AssertionError: the agent "
        "called explode"
    )
    assert "This file cannot reproduce the failure" in scenario.description
    assert scenario.agent.tools == DEFAULT_TOOL_SPECS  # the tools the machine ran


@pytest.fixture
def user_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module with a user's agent (a real `lookup` whose answers are forbidden) and a harness
    invariant it breaks; its name, on the path."""
    name = f"machine_agent_{next(_modules)}"
    invariant_name = f"no_forbidden_results_{name.rsplit('_', 1)[1]}"
    source = dedent(
        f'''
        import agentrig as ar
        from agentrig.harness.checks.invariant import Invariant, register_invariant


        @ar.tool
        def lookup(query: str, limit: int | None = None) -> str:
            """Looks something up (the real tool, which answers what it must not)."""
            return "forbidden"


        def build():
            return (
                ar.AgentBuilder.base()
                .with_tools([lookup])
                .with_capability(ar.UseContextConfig("You are the real agent."))
            )


        @register_invariant
        class NoForbiddenResults(Invariant):
            name = "{invariant_name}"
            description = "no tool result says forbidden"

            def check(self, observation):
                for step in observation.all_steps():
                    for execution in step.tool_executions:
                        if execution.value == "forbidden":
                            yield "a tool answered forbidden"
        '''
    )
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    unregister_invariant(invariant_name)


def test_a_machine_naming_its_agent_writes_a_file_that_fails_the_same_way(
    tmp_path: Path, user_agent: str
) -> None:
    machine = type("RealLookup", (Narrow,), {"agent_builder": f"{user_agent}:build"})
    folder = tmp_path / "found"
    notes = run_until_it_fails(machine, folder, "harness invariants failed")
    (path,) = folder.glob("*.scenario.yaml")
    assert "cannot reproduce" not in notes
    text = path.read_text(encoding="utf-8")
    assert "CANNOT" not in text
    scenario = load_scenario(path)
    assert scenario.invariants.plugins == (user_agent,)  # in the file, not in a comment
    assert scenario.agent.builder == f"{user_agent}:build"
    # the builder's own prompt stayed: the machine replaces it only when told to
    assert (scenario.agent.system_prompt, scenario.agent.system_prompt_override) == ("", False)
    # As in a fresh process: the invariant is not registered until the file's plugin is imported.
    invariant_name = f"no_forbidden_results_{user_agent.rsplit('_', 1)[1]}"
    unregister_invariant(invariant_name)
    del sys.modules[user_agent]
    result = CliRunner().invoke(app, ["run", str(path), "--report-dir", str(tmp_path / "r")])
    assert result.exit_code == 1, result.output
    assert f"[invariant: {invariant_name}]" in result.output
    # The same turns with the scripted tools pass: the file fails because it names the agent.
    scripted = scenario.agent.model_copy(update={"builder": None})
    assert run_scenario(scenario.model_copy(update={"agent": scripted})).passed


class OwnBuilder(AgentMachine):
    def base_builder(self) -> AgentBuilder:
        return AgentBuilder.base()


def test_a_machine_with_an_unnamed_builder_says_the_file_runs_scripted_tools() -> None:
    machine = OwnBuilder()
    machine.configure(budget=ExecutionBudget(), trace_mode="separated")
    machine.failure, machine.failure_kind = "a violation", "clean_messages"
    (gap,) = machine.replay_gaps()
    assert "OwnBuilder overrides base_builder(), which a file cannot name" in gap
    assert "agent_builder = 'package.module:function'" in gap


def test_a_model_difference_cannot_be_replayed_and_says_so() -> None:
    machine = AgentMachine()
    machine.configure(budget=ExecutionBudget(), trace_mode="separated")
    machine.failure, machine.failure_kind = "steps differ", "model"
    (gap,) = machine.replay_gaps()
    assert "reference model (AgentModel), which agentrig run does not check" in gap


@pytest.fixture
def refund_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A user's agent whose own tool, `refund`, has a planted bug that an invariant catches."""
    name = f"refund_agent_{next(_modules)}"
    invariant_name = f"refunds_are_positive_{name.rsplit('_', 1)[1]}"
    source = dedent(
        f'''
        import agentrig as ar
        from agentrig.harness.checks.invariant import Invariant, register_invariant


        @ar.tool
        def refund(order_id: str, cents: int) -> int:
            """Refund an order (the planted bug: the sign is lost)."""
            return -abs(cents) - 1


        def build():
            return ar.AgentBuilder.base().with_tools([refund])


        @register_invariant
        class RefundsArePositive(Invariant):
            name = "{invariant_name}"

            def check(self, observation):
                for step in observation.all_steps():
                    for execution in step.tool_executions:
                        ran = not execution.has_error and not execution.stopped
                        if execution.name == "refund" and ran and execution.value < 0:
                            yield "a refund went the wrong way"
        '''
    )
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    unregister_invariant(invariant_name)


def test_the_default_strategies_call_the_agents_own_tools_and_find_a_planted_bug(
    refund_agent: str,
) -> None:
    machine = type("RefundMachine", (AgentMachine,), {"agent_builder": f"{refund_agent}:build"})
    assert machine().drawn_tools()["refund"] == {"order_id": "string", "cents": "integer"}
    ci = agentrig_settings(max_examples=25, stateful_step_count=5)  # the CI profile's counts
    with pytest.raises(AssertionError, match="a refund went the wrong way"):  # found, unshrunk
        run_state_machine_as_test(machine, settings=settings(ci, phases=[Phase.generate]))
