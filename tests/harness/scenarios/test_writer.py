"""Writing scenarios: YAML text that the loader reads back equal, readable, and runnable."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentrig import ExecutionBudget, Usage
from agentrig.errors import InvalidInputError
from agentrig.fakes import CallSpec, Turn, call, calls, fail, reply
from agentrig.harness.runner import run_scenario
from agentrig.harness.scenarios.agent_factory import to_turn
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import (
    AgentSpec,
    BudgetSpec,
    Expectation,
    ModelReply,
    Scenario,
    ScenarioTurn,
    ToolCallSpec,
    ToolReplySpec,
    ToolSpec,
)
from agentrig.harness.scenarios.writer import (
    budget_spec,
    reply_from_turn,
    scenario_from_script,
    scenario_to_yaml,
    write_scenario,
)

ECHO = {
    "echo": ToolSpec(
        params={"text": "string"}, replies=(ToolReplySpec.model_validate({"return": "pong"}),)
    )
}


def roundtrip(scenario: Scenario, folder: Path) -> Scenario:
    return load_scenario(write_scenario(scenario, path=folder / "x.scenario.yaml"))


class TestScenarioToYaml:
    def test_only_what_was_set_is_written_and_calls_use_the_shorthand(self) -> None:
        scenario = scenario_from_script(
            name="echo-once",
            user="ping",
            script=[call("echo", text="ping"), reply("pong")],
            agent=AgentSpec(tools=ECHO),
        )
        assert scenario_to_yaml(scenario) == (
            "name: echo-once\n"
            "agent:\n"
            "  tools:\n"
            "    echo:\n"
            "      params:\n"
            "        text: string\n"
            "      replies:\n"
            "      - return: pong\n"
            "turns:\n"
            "- user: ping\n"
            "  model:\n"
            "  - call: echo(text=ping)\n"
            "  - say: pong\n"
        )

    def test_the_header_becomes_a_comment(self) -> None:
        scenario = Scenario(name="s", turns=(ScenarioTurn(user="hi"),))
        text = scenario_to_yaml(scenario, header="line one\nline two")
        assert text.startswith("# line one\n# line two\nname: s\n")

    def test_the_shorthand_is_used_only_when_it_reads_back_exactly(self, tmp_path: Path) -> None:
        exact = ToolCallSpec(name="f", args={"n": 1.0, "flag": True, "text": "a, (b)"})
        odd_key = ToolCallSpec(name="f", args={"my-key": 1})
        with_id = ToolCallSpec(name="f", id="call_1")
        scenario = Scenario(
            name="s",
            turns=(ScenarioTurn(user="", model=(ModelReply(calls=(exact, odd_key, with_id)),)),),
        )
        text = scenario_to_yaml(scenario)
        assert '- f(n=1.0, flag=true, text="a, (b)")' in text
        assert "- name: f\n      args:\n        my-key: 1\n" in text
        assert "- name: f\n      id: call_1\n" in text
        assert roundtrip(scenario, tmp_path) == scenario

    def test_a_return_of_null_is_kept(self, tmp_path: Path) -> None:
        tools = {"noop": ToolSpec(replies=(ToolReplySpec.model_validate({"return": None}),))}
        scenario = Scenario(name="s", agent=AgentSpec(tools=tools), turns=(ScenarioTurn(user=""),))
        assert "- return: null" in scenario_to_yaml(scenario)
        assert roundtrip(scenario, tmp_path) == scenario

    @pytest.mark.parametrize(
        "text",
        [
            "a\x85b",
            "line\u2028sep",
            "\ufeffbom",
            "tab\tand\nnewline",
            "true",
            "0x1F",
            "- item",
            "x: y",
            "  ",
        ],
    )
    def test_tricky_text_reads_back_unchanged(self, text: str, tmp_path: Path) -> None:
        scenario = Scenario(
            name="s",
            description=text,
            turns=(ScenarioTurn(user=text, model=(ModelReply(say=text),)),),
        )
        assert roundtrip(scenario, tmp_path) == scenario

    def test_every_part_of_a_full_scenario_reads_back(self, tmp_path: Path) -> None:
        deadline = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
        scenario = Scenario(
            name="full",
            tags=("a", "b"),
            agent=AgentSpec(
                system_prompt="You help.",
                trace_mode="inline",
                budget=BudgetSpec(max_steps=3, max_cost=0.5, deadline=deadline),
                tools=ECHO,
            ),
            turns=(
                ScenarioTurn(
                    user="hi",
                    model=(ModelReply(calls=(ToolCallSpec(name="echo", args={"text": "x"}),) * 2),),
                    expect=Expectation(status="completed", steps=2, errors=("boom",)),
                ),
                ScenarioTurn(user="bye", cancel="before"),
            ),
        )
        assert roundtrip(scenario, tmp_path) == scenario

    def test_rejects_what_is_not_a_scenario(self) -> None:
        with pytest.raises(InvalidInputError, match="expected a Scenario, got dict"):
            scenario_to_yaml({"name": "x"})  # type: ignore[arg-type]


class TestWriteScenario:
    def test_writes_utf8_and_creates_folders(self, tmp_path: Path) -> None:
        scenario = Scenario(name="s", turns=(ScenarioTurn(user="héllo ✓"),))
        path = write_scenario(scenario, path=tmp_path / "deep" / "s.scenario.yaml")
        assert path.read_text(encoding="utf-8") == "name: s\nturns:\n- user: héllo ✓\n"

    def test_the_file_name_must_be_one_agentrig_run_finds(self, tmp_path: Path) -> None:
        scenario = Scenario(name="s", turns=(ScenarioTurn(user=""),))
        with pytest.raises(InvalidInputError, match=r"must end in \.scenario\.yaml"):
            write_scenario(scenario, path=tmp_path / "s.yaml")


class TestReplies:
    @pytest.mark.parametrize(
        "turn",
        [
            reply("done"),
            call("echo", text="hi"),
            calls(("echo", {"text": "a"}), ("echo", {"text": "b"}), text="two"),
            fail("down", retryable=True),
            Turn(text="x", usage=Usage(input_tokens=3, reasoning_tokens=2, cost=0.25)),
            Turn(
                calls=(CallSpec("echo", {"text": "t"}, id="c1"),),
                finish_reason="length",
                latency=1.5,
            ),
            Turn(text="x", reasoning="I think."),
            Turn(calls=(CallSpec("echo"),), redacted_reasoning=True),
        ],
    )
    def test_reply_from_turn_inverts_to_turn(self, turn: Turn) -> None:
        assert to_turn(reply_from_turn(turn)) == turn

    def test_redacted_reasoning_is_written_as_think_redacted(self, tmp_path: Path) -> None:
        scenario = scenario_from_script(
            name="s", user="hi", script=[reply("ok", redacted_reasoning=True)]
        )
        path = write_scenario(scenario, path=tmp_path / "s.scenario.yaml")
        assert "redacted: true" in path.read_text()
        [written] = load_scenario(path).turns[0].model
        assert written.think_redacted
        assert written.think_text == ""

    def test_an_invalid_turn_is_refused_with_its_problem(self) -> None:
        with pytest.raises(InvalidInputError, match="a turn needs text, tool calls or an error"):
            reply_from_turn(Turn())

    def test_a_bad_scenario_name_is_refused(self) -> None:
        with pytest.raises(InvalidInputError, match="is not a scenario name"):
            scenario_from_script(name="Bad Name", user="", script=[reply("x")])


class TestBudgetSpec:
    def test_an_empty_budget_is_no_budget(self) -> None:
        assert budget_spec(ExecutionBudget()) is None

    def test_limits_carry_over(self) -> None:
        budget = ExecutionBudget(max_steps=2, max_seconds=1.5)
        assert budget_spec(budget) == BudgetSpec(max_steps=2, max_seconds=1.5)


def test_a_written_script_runs_under_the_runner(tmp_path: Path) -> None:
    scenario = scenario_from_script(
        name="echo-twice",
        user="ping",
        script=[call("echo", text="a"), call("echo", text="b"), reply("pong")],
        agent=AgentSpec(tools=ECHO),
    )
    result = run_scenario(roundtrip(scenario, tmp_path))
    assert result.passed, result.failures
    assert [t.steps for t in result.turns] == [3]
