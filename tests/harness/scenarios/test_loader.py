"""Loading scenario files: the full format, locations, errors, directories, the JSON Schema."""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import live_files
import pytest
import yaml
from hypothesis import event, given

from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.property.profiles import agentrig_settings
from agentrig.harness.scenarios.loader import (
    load_scenario,
    load_scenarios,
    load_suite,
    scenario_json_schema,
)
from agentrig.harness.scenarios.model import (
    CALL_SHORTHAND_PATTERN,
    CancelAfterStep,
    CostExpect,
    MessageExpect,
    Scenario,
    ScenarioModel,
    SourceLocation,
    TextMatch,
    ToolCallSpec,
)
from agentrig.harness.scenarios.yaml_source import load_yaml_file, load_yaml_text

ROOT = Path(__file__).resolve().parents[3]
FULL = Path(__file__).parent / "data" / "full-example.yaml"
DOCS = ROOT / "docs" / "scenario-format.md"


def _write(directory: Path, text: str, name: str = "bad.scenario.yaml") -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _error(tmp_path: Path, text: str) -> ScenarioFileError:
    with pytest.raises(ScenarioFileError) as caught:
        load_scenario(_write(tmp_path, text))
    error = caught.value
    assert error.__cause__ is None
    assert error.__context__ is None or error.__suppress_context__, "a raw traceback leaks"
    return error


def _line(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.startswith(needle))


def _docs_example() -> str:
    text = DOCS.read_text(encoding="utf-8")
    return text.split("## A full example", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]


# --- the full example -------------------------------------------------------------------------


def test_full_example_loads_every_part() -> None:
    scenario = load_scenario(FULL)
    assert scenario.name == "weather-two-cities"
    assert scenario.tags == ("tools", "buffer")
    agent = scenario.agent
    assert agent.budget is not None
    assert agent.budget.max_seconds == 30.0
    assert agent.budget.deadline == datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    weather = agent.tools["get_weather"]
    assert weather.params == {"city": "string", "days": "integer?"}
    assert [reply.outcome for reply in weather.replies] == ["return", "raise", "stop"]
    assert weather.replies[0].return_ == "sunny, 21C"
    assert agent.tools["list_cities"].replies[1].outcome == "return"
    assert agent.subagents["researcher"].model[0].call == ToolCallSpec(
        name="get_weather", args={"city": "Rome"}
    )
    assert [hook.action for hook in agent.hooks] == ["block_tool", "stop", "set_metadata"]
    assert agent.hooks[2].value == {"name": "weather"}
    first, second = scenario.turns
    assert first.cancel == CancelAfterStep(after_step=3)
    assert second.cancel == "before"
    assert first.model[1].tool_calls == (
        ToolCallSpec(name="get_weather", args={"city": "Oslo"}),
        ToolCallSpec(name="get_weather", args={"city": "Rome"}, id="call_7"),
    )
    assert first.model[3].error == "rate limited"
    assert first.model[3].retryable
    expect = first.expect
    assert expect.final_response == TextMatch(contains="Paris is sunny")
    assert expect.messages == (
        MessageExpect(role="user"),
        MessageExpect(role="assistant", contains="Paris"),
    )
    assert expect.sections == {"execution_buffer": (), "summary": ()}
    assert expect.cost == CostExpect(max=0.01)
    assert expect.tool_calls is not None
    assert expect.tool_calls.calls[1] == ToolCallSpec(name="get_weather", args={"city": "Oslo"})
    assert second.expect.final_response == TextMatch(equals="")
    assert scenario.invariants.exclude == ("serialization_round_trip",)


def test_full_example_remembers_where_things_are() -> None:
    scenario = load_scenario(FULL)
    path = str(FULL)
    assert scenario.source == SourceLocation(path, _line(FULL, "name:"), 1)
    first = scenario.turns[0]
    assert first.source == SourceLocation(path, _line(FULL, "  - user: Weather"), 5)
    assert first.model[0].source == SourceLocation(
        path, _line(FULL, "      - call: get_weather"), 9
    )
    assert first.model[2].source is not None
    assert first.model[2].source.line == _line(FULL, "      - say: Paris is sunny")
    assert str(first.model[2].source) == f"{path}:{_line(FULL, '      - say: Paris is sunny')}"
    assert scenario.turns[1].source is not None
    assert scenario.turns[1].source.line == _line(FULL, "  - user: And tomorrow")
    oslo = scenario.agent.tools["get_weather"].replies[1]
    assert oslo.source is not None
    assert oslo.source.line == _line(FULL, "        - when: {city: Oslo}")
    subagent_reply = scenario.agent.subagents["researcher"].model[1]
    assert subagent_reply.source is not None
    assert subagent_reply.source.line == _line(FULL, "        - say: Rome is cloudy")
    status = scenario.locate(("turns", 0, "expect", "status"))
    assert status == SourceLocation(path, _line(FULL, "      status: failed"), 15)
    assert scenario.locate(("turns", 9)) is None


def test_full_example_round_trips_through_yaml(tmp_path: Path) -> None:
    scenario = load_scenario(FULL)
    data = scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert Scenario.model_validate(data) == scenario
    copy = tmp_path / "copy.scenario.yaml"
    copy.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    reloaded = load_scenario(copy)
    assert reloaded == scenario
    assert reloaded.source is not None
    assert reloaded.source.path == str(copy)


def test_the_documented_example_loads(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, _docs_example(), "docs.scenario.yaml"))
    assert scenario.name == "weather-two-cities"
    assert len(scenario.turns) == 2


# --- errors -----------------------------------------------------------------------------------

BAD_STATUS = """
name: weather
turns:
  - user: hi
    expect:
      status: complete
"""


def test_error_message_names_file_line_column_field_and_valid_values(tmp_path: Path) -> None:
    error = _error(tmp_path, BAD_STATUS)
    path = str(tmp_path / "bad.scenario.yaml")
    assert (error.path, error.line, error.column) == (path, 5, 15)
    assert error.field == "turns[0].expect.status"
    assert error.valid == ("completed", "stopped", "failed")
    assert str(error) == (
        f"{path}:5:15: turns[0].expect.status: 'complete' is not one of: "
        "completed, stopped, failed (did you mean 'completed'?)"
    )
    assert error.errors == (error,)


@pytest.mark.parametrize(
    ("text", "field", "line", "column", "reason"),
    [
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                expect:
                  stauts: completed
            """,
            "turns[0].expect.stauts",
            5,
            7,
            "unknown key 'stauts' (did you mean 'status'?); allowed keys: status, stop_reason, "
            "final_response, steps, model_calls, tool_results, tool_calls, messages, sections, usage, cost, errors",
            id="unknown-key",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                expect: {steps: three}
            """,
            "turns[0].expect.steps",
            4,
            21,
            "expected an integer, got the string 'three'",
            id="wrong-type",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: yes
            """,
            "turns[0].user",
            3,
            11,
            "expected a string, got the boolean true (YAML reads yes, no, on, off, true and "
            "false as booleans: quote the text)",
            id="yaml-boolean",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                expect: {final_response: yes}
            """,
            "turns[0].expect.final_response",
            4,
            30,
            "expected a text or a mapping with one of equals, contains, regex, empty, got the "
            "boolean true (YAML reads yes, no, on, off, true and false as booleans: quote the "
            "text)",
            id="yaml-boolean-text-check",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - model: []
            """,
            "turns[0].user",
            3,
            5,
            "missing required key 'user'",
            id="missing-in-list-item",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                expect:
                  tool_calls:
                    mode: strict
            """,
            "turns[0].expect.tool_calls.calls",
            5,
            7,
            "missing required key 'calls'",
            id="missing-in-nested-mapping",
        ),
        pytest.param(
            """
            description: no name
            turns: [{user: hi}]
            """,
            "name",
            1,
            1,
            "missing required key 'name'",
            id="missing-at-top",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                model:
                  - call: get_weather(city=Paris
            """,
            "turns[0].model[0].call",
            5,
            15,
            "malformed call 'get_weather(city=Paris': it must end with ')'",
            id="bad-shorthand",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                model:
                  - calls: ["f(a=1)", "g(Paris)"]
            """,
            "turns[0].model[0].calls[1]",
            5,
            27,
            "malformed call 'g(Paris)': argument 'Paris' has no name: write name=value",
            id="bad-shorthand-in-list",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                expect:
                  tool_calls: {calls: [f(, g()]}
            """,
            "turns[0].expect.tool_calls.calls[0]",
            5,
            28,
            "malformed call 'f(': it must end with ')'",
            id="bad-shorthand-in-expectation",
        ),
        pytest.param(
            """
            name: weather
            agent:
              hooks:
                - on: after_steps
                  action: stop
            turns: [{user: hi}]
            """,
            "agent.hooks[0].on",
            4,
            11,
            "'after_steps' is not one of: before_execution, before_step, "
            "before_inference_request, after_inference_response, before_tool_use, "
            "after_tool_use, after_step, on_stop, after_execution, on_error "
            "(did you mean 'after_step'?)",
            id="bad-enum-in-list",
        ),
        pytest.param(
            """
            name: weather
            agent:
              tools:
                bad name: {replies: [{return: 1}]}
            turns: [{user: hi}]
            """,
            "agent.tools['bad name']",
            4,
            5,
            "'bad name' is not a valid name: use letters, digits, '_' and '-' (at most 64), "
            "starting with a letter or '_'",
            id="bad-mapping-key",
        ),
        pytest.param(
            """
            name: weather
            agent:
              tools:
                t:
                  replies:
                    - return: 1
                      raise: boom
            turns: [{user: hi}]
            """,
            "agent.tools.t.replies[0].raise",
            7,
            18,
            "a tool reply has only one of return, raise or stop (return is set)",
            id="rule-on-a-key",
        ),
        pytest.param(
            """
            name: weather
            agent:
              tools: {t: {replies: [{return: 1}]}}
              subagents:
                r: {tools: [t, nope]}
            turns: [{user: hi}]
            """,
            "agent.subagents.r.tools[1]",
            5,
            20,
            "unknown tool 'nope'; the agent has: t, spawn_subagent",
            id="rule-on-a-list-item",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                cancel: later
            """,
            "turns[0].cancel",
            4,
            13,
            "expected 'before' or a mapping {after_step: N}",
            id="bad-cancel",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                model:
                  - {}
            """,
            "turns[0].model[0]",
            5,
            9,
            "a reply needs at least one of: say, call, calls, error, refuse, fault",
            id="empty-reply",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                model:
                  - {think: just thinking}
            """,
            "turns[0].model[0]",
            5,
            9,
            "a reply needs at least one of: say, call, calls, error, refuse, fault",
            id="think-alone",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                model:
                  - {think: "", say: hi}
            """,
            "turns[0].model[0].think",
            5,
            17,
            "think needs the reasoning text, or {redacted: true} for reasoning that shows no text "
            "(or leave it out)",
            id="empty-think",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                model:
                  - {think: {redacted: false}, say: hi}
            """,
            "turns[0].model[0].think.redacted",
            5,
            28,
            "only redacted: true is a form of think (the model reasoned but shows no text); "
            "write the reasoning text as think: TEXT, or leave think out",
            id="think-redacted-false",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                model:
                  - {think: [hmm], say: hi}
            """,
            "turns[0].model[0].think",
            5,
            10,
            "expected the reasoning text, or {redacted: true} for reasoning that shows no text",
            id="think-not-text",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                model:
                  - {think: {redacted: true, text: hmm}, say: hi}
            """,
            "turns[0].model[0].think.text",
            5,
            34,
            "unknown key 'text'; allowed keys: redacted",
            id="think-unknown-key",
        ),
        pytest.param(
            """
            name: weather
            turns:
              - user: hi
                model:
                  - {think: hmm, error: boom}
            """,
            "turns[0].model[0].think",
            5,
            17,
            "an error reply cannot have think: the provider raises instead",
            id="think-with-error",
        ),
        pytest.param(
            """
            name: Weather Two
            turns: [{user: hi}]
            """,
            "name",
            1,
            7,
            "'Weather Two' is not a valid name: use lowercase letters, digits, '.', '_' and "
            "'-', starting with a letter or digit",
            id="bad-name",
        ),
        pytest.param(
            """
            name: weather
            turns: []
            """,
            "turns",
            2,
            1,
            "a scenario needs turns (or, for a live scenario, user, judge and trials)",
            id="no-turns",
        ),
        pytest.param(
            """
            name: weather
            agent:
              budget: {deadline: "2026-01-01T00:05:00"}
            turns: [{user: hi}]
            """,
            "agent.budget.deadline",
            3,
            22,
            "needs a timezone, such as 2026-01-01T00:05:00Z",
            id="naive-deadline",
        ),
    ],
)
def test_each_kind_of_problem(
    tmp_path: Path, text: str, field: str, line: int, column: int, reason: str
) -> None:
    error = _error(tmp_path, textwrap.dedent(text))
    assert [(problem.field, problem.reason) for problem in error.errors] == [(field, reason)]
    assert (error.path, error.line, error.column) == (
        str(tmp_path / "bad.scenario.yaml"),
        line,
        column,
    )


def test_unknown_keys_list_the_allowed_keys(tmp_path: Path) -> None:
    error = _error(tmp_path, "name: x\nturns: [{user: hi, model: [{say: a, sya: b}]}]\n")
    assert error.field == "turns[0].model[0].sya"
    assert error.valid == (
        "say",
        "think",
        "call",
        "calls",
        "refuse",
        "error",
        "fault",
        "retryable",
        "usage",
        "cost",
        "finish_reason",
        "latency",
        "chunk_latency",
        "repeat",
        "logprobs",
    )


def test_union_tags_do_not_confuse_locations(tmp_path: Path) -> None:
    error = _error(
        tmp_path,
        """
        name: x
        turns:
          - user: hi
            cancel: {after_step: 0, x: 1}
        """,
    )
    assert [(p.field, p.line, p.column) for p in error.errors] == [
        ("turns[0].cancel.after_step", 4, 26),
        ("turns[0].cancel.x", 4, 29),
    ]
    assert error.errors[1].valid == ("after_step",)


def test_a_missing_key_is_not_taken_for_a_key_of_that_name_higher_up(tmp_path: Path) -> None:
    error = _error(
        tmp_path,
        """
        name: x
        turns:
          - user: hi
            model:
              - call: {args: {x: 1}}
        """,
    )
    assert [(p.field, p.line, p.reason) for p in error.errors] == [
        ("turns[0].model[0].call.name", 5, "missing required key 'name'"),
    ]


LIVE = """
name: refund
agent:
  builder: app.agent:build
user:
  persona: Dana
  goal: a refund
  model:
    provider: openai
    name: gpt-4.1-mini
judge:
  criteria:
    - id: refunded
      check: {tool_called: "issue_refund(order_id=A-1029)"}
    - id: polite
      rubric: the agent is polite
  model: {provider: openai, name: gpt-4.1, price: {input: 2, output: 8}}
trials:
  require: {metric: rate, at_least: 0.7}
  max: 30
"""


@pytest.mark.parametrize(
    ("old", "new", "problems"),
    [
        pytest.param(
            "    name: gpt-4.1-mini\n",
            "",
            [("user.model.name", 7, "missing required key 'name'")],
            id="missing-model-name",
        ),
        pytest.param(
            "at_least: 0.7",
            "at_least: 1",
            [("trials.require.at_least", 18, "must be less than 1.0, got the number 1")],
            id="at-least-1",
        ),
        pytest.param(
            "at_least: 0.7",
            "at_least: 0.7, confidence: 1.0, indifference: 0.5",
            [
                ("trials.require.confidence", 18, "must be less than 1.0, got the number 1.0"),
                ("trials.require.indifference", 18, "must be less than 0.5, got the number 0.5"),
            ],
            id="confidence-1",
        ),
        pytest.param(
            "name: gpt-4.1,",
            "name: '',",
            [("judge.model.name", 16, "needs at least 1 character(s), got the string ''")],
            id="empty-model-name",
        ),
        pytest.param(
            "metric: rate",
            "metric: pass^0",
            [
                (
                    "trials.require.metric",
                    18,
                    "'pass^0' is not a metric: write rate, pass^K or pass@K with K a whole number "
                    "from 1 (no sign, no leading zero, no blanks), e.g. pass^4",
                )
            ],
            id="pass^0",
        ),
        pytest.param(
            "    provider: openai\n",
            "    provider: openai\n    api_key_env: 1KEY\n",
            [
                (
                    "user.model.api_key_env",
                    9,
                    "'1KEY' is not an environment variable's name: use letters, digits and '_', "
                    "not starting with a digit",
                )
            ],
            id="api-key-env",
        ),
        pytest.param(
            "  builder: app.agent:build",
            "  adapter: app.agent.reply",
            [
                (
                    "agent.adapter",
                    3,
                    "'app.agent.reply' is not a valid name: write 'package.module:function', a "
                    "dotted module name, a colon and the function that takes the conversation "
                    "and returns the agent's reply",
                )
            ],
            id="adapter-reference",
        ),
        pytest.param(
            "  max: 30",
            "  max: 30\n  budget_usd: '2'",
            [("trials.budget_usd", 20, "expected a number, got the string '2'")],
            id="budget-text",
        ),
        pytest.param(
            "output: 8}",
            "output: true}",
            [("judge.model.price.output", 16, "expected a number, got the boolean true")],
            id="price-boolean",
        ),
        pytest.param(
            "output: 8}",
            "output: 8, cache: x}",
            [
                (
                    "judge.model.price.cache",
                    16,
                    "'cache' is not one of: input, output, cache_read, cache_write (did you "
                    "mean 'cache_read'?)",
                )
            ],
            id="price-unknown-key",
        ),
        pytest.param(
            "  model: {provider: openai, name: gpt-4.1, price: {input: 2, output: 8}}\n",
            "",
            [
                (
                    "judge.model",
                    10,
                    "criterion 'polite' is a rubric: the judge needs a model, e.g. {provider: "
                    "anthropic, name: claude-sonnet-4-5}",
                )
            ],
            id="rubric-without-model",
        ),
        pytest.param(
            "trials:\n  require: {metric: rate, at_least: 0.7}\n  max: 30\n",
            "",
            [("trials", 1, "a live scenario needs trials (it has user, judge)")],
            id="no-trials",
        ),
    ],
)
def test_live_key_errors_name_their_line_field_and_reason(
    tmp_path: Path, old: str, new: str, problems: list[tuple[str, int, str]]
) -> None:
    text = LIVE.lstrip("\n")
    assert old in text
    error = _error(tmp_path, text.replace(old, new, 1))
    assert [(p.field, p.line, p.reason) for p in error.errors] == problems


def test_all_problems_are_reported_at_once_in_file_order(tmp_path: Path) -> None:
    error = _error(
        tmp_path,
        """
        name: x
        tags: [1]
        turns:
          - user: hi
            expect: {status: done, steps: -1}
          - {}
        """,
    )
    path = str(tmp_path / "bad.scenario.yaml")
    assert [(p.line, p.field) for p in error.errors] == [
        (2, "tags[0]"),
        (5, "turns[0].expect.status"),
        (5, "turns[0].expect.steps"),
        (6, "turns[1].user"),
    ]
    lines = str(error).splitlines()
    assert len(lines) == 4
    assert all(line.startswith(f"{path}:") for line in lines)
    assert lines[2] == f"{path}:5:35: turns[0].expect.steps: must be at least 0, got the number -1"
    assert (error.line, error.field) == (2, "tags[0]")


def test_yaml_syntax_errors_become_scenario_file_errors(tmp_path: Path) -> None:
    error = _error(tmp_path, "name: x\nturns:\n  - user: [unclosed\n")
    assert (error.line, error.field) == (4, "")
    assert error.reason.startswith("invalid YAML:")
    assert str(error).startswith(f"{tmp_path / 'bad.scenario.yaml'}:4:")


@pytest.mark.parametrize(
    "text",
    [
        "name: x\nturns:\n  - user: hi\n    model:\n      - say: hello\n     expect:\n"
        "      final_response: hello\n",
        "name: x\nturns:\n  - user: hi\n    model:\n      - say: hello\n        expect:\n"
        "      final_response: hello\n",
    ],
    ids=["key-indented-less", "key-indented-more"],
)
def test_an_indentation_error_says_to_check_the_indentation(tmp_path: Path, text: str) -> None:
    error = _error(tmp_path, text)
    assert error.reason.startswith("invalid YAML:")
    assert error.reason.endswith(
        "check the indentation: the keys of one mapping, and the '-' items of one list, start "
        "in the same column"
    )
    assert error.line is not None


def test_duplicate_keys_are_errors(tmp_path: Path) -> None:
    error = _error(tmp_path, "name: x\nturns: [{user: hi}]\nname: y\n")
    assert (error.line, error.column) == (3, 1)
    assert "first defined on line 1" in error.reason


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [
        (b"", None, "the file is empty; a scenario needs at least name: and turns:"),
        (b"# just a comment\n", None, "the file is empty"),
        (
            b"- name: x\n",
            1,
            "the top level must be a mapping with name:, turns: and so on, not a list",
        ),
        (b"just text\n", 1, "not the value 'just text'"),
        (b"name: caf\xe9\n", 1, "the file is not valid UTF-8 (byte 0xe9); save it as UTF-8"),
    ],
)
def test_files_that_are_not_scenarios(
    tmp_path: Path, content: bytes, line: int | None, reason: str
) -> None:
    path = tmp_path / "odd.scenario.yaml"
    path.write_bytes(content)
    with pytest.raises(ScenarioFileError) as caught:
        load_scenario(path)
    assert caught.value.path == str(path)
    assert caught.value.line == line
    assert reason in caught.value.reason


def test_scenario_file_error_pickles(tmp_path: Path) -> None:
    error = _error(tmp_path, "name: x\ntags: [1, 2]\nturns: [{user: hi}]\n")
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error)
    assert [(p.field, p.line, p.column) for p in copy.errors] == [
        (p.field, p.line, p.column) for p in error.errors
    ]
    assert len(copy.errors) == 2


# --- directories ------------------------------------------------------------------------------


def _scenario_file(directory: Path, relative: str, name: str) -> Path:
    return _write(directory, f"name: {name}\nturns: [{{user: hi}}]\n", relative)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    _scenario_file(root, "b.scenario.yaml", "b")
    _scenario_file(root, "a.scenario.yaml", "a")
    _scenario_file(root, "nested/c.scenario.yaml", "c")
    _scenario_file(root, "failing/x.scenario.yaml", "x")
    _scenario_file(root, "nested/failing/y.scenario.yaml", "y")
    _write(root, "not: a scenario\n", "notes.yaml")
    return root


def _names(scenarios: list[Scenario]) -> list[str]:
    return [scenario.name for scenario in scenarios]


def test_directories_are_searched_in_sorted_order_without_failing(suite: Path) -> None:
    assert _names(load_scenarios([suite])) == ["a", "b", "c"]
    assert _names(load_scenarios(str(suite))) == ["a", "b", "c"]


def test_failing_directories_load_when_named(suite: Path) -> None:
    assert _names(load_scenarios([suite / "failing"])) == ["x"]
    assert _names(load_scenarios(suite / "nested" / "failing" / "y.scenario.yaml")) == ["y"]
    assert _names(load_scenarios([suite / "nested", suite / "failing"])) == ["c", "x"]


def test_a_file_named_twice_loads_once(suite: Path) -> None:
    assert _names(load_scenarios([suite / "b.scenario.yaml", suite])) == ["b", "a", "c"]


def test_a_file_reached_through_symlinks_loads_once(suite: Path, tmp_path: Path) -> None:
    (suite / "nested" / "link.scenario.yaml").symlink_to(suite / "a.scenario.yaml")
    (tmp_path / "elsewhere").symlink_to(suite / "nested", target_is_directory=True)
    files = [suite / "nested" / "c.scenario.yaml", tmp_path / "elsewhere", suite]
    assert _names(load_scenarios(files)) == ["c", "a", "b"]


def test_folders_come_in_the_order_of_their_path_parts(suite: Path) -> None:
    _scenario_file(suite, "nested-2/d.scenario.yaml", "d")  # '-' sorts before '/' as text
    assert _names(load_scenarios([suite])) == ["a", "b", "c", "d"]


def test_explicit_files_need_not_follow_the_suffix(suite: Path) -> None:
    assert _names(load_scenarios([FULL])) == ["weather-two-cities"]


def test_duplicate_names_across_files_name_both(suite: Path) -> None:
    _scenario_file(suite, "nested/again.scenario.yaml", "a")
    with pytest.raises(ScenarioFileError) as caught:
        load_scenarios([suite])
    error = caught.value
    first, second = suite / "a.scenario.yaml", suite / "nested" / "again.scenario.yaml"
    assert (error.path, error.line, error.field) == (str(second), 1, "name")
    assert error.reason == f"duplicate scenario name 'a', also used at {first}:1"


def test_problems_in_several_files_are_gathered(suite: Path) -> None:
    _write(suite, "name: p\nturns: [{user: 1}]\n", "p.scenario.yaml")
    _write(suite, "name: q\nturns: []\n", "nested/q.scenario.yaml")
    with pytest.raises(ScenarioFileError) as caught:
        load_scenarios([suite])
    assert [(Path(p.path).name, p.field) for p in caught.value.errors] == [
        ("q.scenario.yaml", "turns"),
        ("p.scenario.yaml", "turns[0].user"),
    ]


def test_load_suite_keeps_each_bad_file_in_its_place_and_loads_the_rest(suite: Path) -> None:
    _write(suite, "name: p\nturns: [{user: 1}]\n", "p.scenario.yaml")
    _scenario_file(suite, "nested/again.scenario.yaml", "a")
    loaded = load_suite([suite])
    shown = [
        (Path(entry.path).name, entry.field) if isinstance(entry, ScenarioFileError) else entry.name
        for entry in loaded.entries
    ]
    assert shown == [
        "a",
        "b",
        ("again.scenario.yaml", "name"),
        "c",
        ("p.scenario.yaml", "turns[0].user"),
    ]
    assert [scenario.name for scenario in loaded.scenarios] == ["a", "b", "c"]
    assert [error.field for error in loaded.broken] == ["name", "turns[0].user"]


_GENERATIONS = """\
import gc, sys
from agentrig.harness.scenarios.loader import load_suite
hosts = [[]]
# Counts start from zero: a collection the imports left due would otherwise move what loads
# next to the oldest generation on its own, whatever the loader does.
gc.collect()
if sys.argv[2] == "host froze":
    gc.freeze()
scenario = load_suite(sys.argv[1]).scenarios[0]
oldest = any(o is scenario for o in gc.get_objects(generation=2))
thawed = any(o is hosts for o in gc.get_objects())
print(oldest, thawed, gc.isenabled())
"""


def _many_files(root: Path, count: int = 250) -> Path:
    """``count`` files of 20 turns: about 190 objects each, well over ``MANY_YOUNG_OBJECTS``."""
    turns = ", ".join(f"{{user: hi{turn}}}" for turn in range(20))
    for index in range(count):
        _write(root, f"name: s{index}\nturns: [{turns}]\n", f"s{index:03}.scenario.yaml")
    return root


@pytest.mark.parametrize(
    ("files", "host", "shown"),
    [
        ("many", "none", "True True True"),
        ("many", "host froze", "False False True"),
        ("few", "none", "False True True"),
    ],
)
def test_loaded_scenarios_join_the_oldest_generation(
    suite: Path, tmp_path: Path, files: str, host: str, shown: str
) -> None:
    # Made while the collector was off, they would be visited by the next young collections;
    # they are moved to the oldest generation, unless a host froze objects (not ours to thaw)
    # or they are few (then finding out whether a host froze walks more than it saves).
    # In a fresh interpreter: this process's own freezes decide what happens here.
    loaded = _many_files(tmp_path / "many") if files == "many" else suite
    done = subprocess.run(
        [sys.executable, "-c", _GENERATIONS, str(loaded), host],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == shown.split()


_FREED = """\
import gc, sys
from agentrig.harness.scenarios.loader import load_suite
loaded = load_suite(sys.argv[1])
assert loaded.scenarios[0].turns[0].source is not None  # one location asked for, one not
gc.collect()
del loaded
print(gc.collect())
"""


def test_a_dropped_suite_is_freed_without_the_cyclic_collector(suite: Path) -> None:
    # No model points back at its scenario: dropping a suite frees it at once, and leaves the
    # collector nothing to find (a cycle per file would wait for a full collection).
    done = subprocess.run(
        [sys.executable, "-c", _FREED, str(suite)], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["0"]


def test_a_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioFileError, match="cannot read the file"):
        load_scenarios([tmp_path / "nowhere"])


_TOOL = """\
name: values
agent:
  tools:
    f: {replies: [{return: ok}]}
  hooks:
    - {on: after_step, action: set_metadata, key: k, value: VALUE}
turns:
  - user: hi
    model:
      - call: f(x=CALL)
      - call: {name: f, args: {x: MAPPING}}
      - say: done
"""


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param("2024-01-01", "the date 2024-01-01 is not JSON data: quote it", id="date"),
        pytest.param("!!binary aGk=", "bytes are not JSON data", id="binary"),
        pytest.param("{a: [1, 2024-01-01]}", "at a[1]: the date 2024-01-01", id="nested"),
        pytest.param("!!set {a}", "a set is not JSON data", id="set"),
        pytest.param(".nan", "JSON has no NaN or infinity", id="nan"),
        pytest.param("-.inf", "JSON has no NaN or infinity", id="infinity"),
    ],
)
def test_values_that_are_not_json_data_are_errors_at_their_field(
    tmp_path: Path, value: str, problem: str
) -> None:
    text = _TOOL.replace("VALUE", value).replace("MAPPING", value)
    text = text.replace("CALL", "2024-01-01")
    error = _error(tmp_path, text)
    fields = [p.field for p in error.errors]
    assert fields[1:] == ["turns[0].model[0].call", "turns[0].model[1].call.args.x"]
    assert fields[0] == "agent.hooks[0].value"
    assert all(problem in p.reason or "2024-01-01" in p.reason for p in error.errors)
    assert problem in error.errors[0].reason
    assert error.errors[2].line == 11


def test_tool_reply_when_values_must_be_json_data(tmp_path: Path) -> None:
    error = _error(
        tmp_path,
        """
        name: when
        agent:
          tools:
            f:
              replies:
                - {when: {day: 2024-01-01}, return: 1}
                - return: 2
        turns: [{user: hi}]
        """,
    )
    assert error.field == "agent.tools.f.replies[0].when.day"
    assert "quote it" in error.reason


def test_costs_and_latencies_must_be_finite_and_latencies_fit_the_fake_clock(
    tmp_path: Path,
) -> None:
    error = _error(
        tmp_path,
        """
        name: huge
        agent:
          tools:
            f: {replies: [{return: 1, latency: .inf}]}
        turns:
          - user: hi
            model:
              - say: hello
                cost: .inf
                latency: 1.0e+300
        """,
    )
    assert [(p.field, p.reason) for p in error.errors] == [
        ("agent.tools.f.replies[0].latency", "expected a finite number, got the number inf"),
        ("turns[0].model[0].cost", "expected a finite number, got the number inf"),
        ("turns[0].model[0].latency", "must be at most 1000000000.0, got the number 1e+300"),
    ]


# --- JSON Schema ------------------------------------------------------------------------------

_ANNOTATIONS = {"title", "description", "default", "format", "$schema", "$defs", "examples"}


class _Checker:
    """Just enough of a JSON Schema 2020-12 validator for the keywords our schema uses.

    Any other keyword fails the test, so the schema stays within what this checks.
    """

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def errors(self, schema: Any, value: Any, at: str = "$") -> list[str]:
        if isinstance(schema, bool):
            return [] if schema else [f"{at}: not allowed"]
        found: list[str] = []
        for keyword, argument in schema.items():
            check: Callable[..., list[str]] | None = getattr(self, "k_" + keyword.lstrip("$"), None)
            if check is None:
                assert keyword in _ANNOTATIONS, f"unexpected keyword {keyword!r} at {at}"
                continue
            found += check(argument, value, at, schema)
        return found

    def k_ref(self, ref: str, value: Any, at: str, _: Any) -> list[str]:
        assert ref.startswith("#/$defs/"), ref
        return self.errors(self.root["$defs"][ref.removeprefix("#/$defs/")], value, at)

    def k_type(self, kind: str, value: Any, at: str, _: Any) -> list[str]:
        ok = {
            "object": isinstance(value, dict),
            "array": isinstance(value, list),
            "string": isinstance(value, str),
            "boolean": isinstance(value, bool),
            "null": value is None,
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, int | float) and not isinstance(value, bool),
        }[kind]
        return [] if ok else [f"{at}: not {kind}"]

    def k_enum(self, options: list[Any], value: Any, at: str, _: Any) -> list[str]:
        return [] if any(_same(option, value) for option in options) else [f"{at}: not in enum"]

    def k_const(self, option: Any, value: Any, at: str, _: Any) -> list[str]:
        return [] if _same(option, value) else [f"{at}: not {option!r}"]

    def k_pattern(self, pattern: str, value: Any, at: str, _: Any) -> list[str]:
        bad = isinstance(value, str) and not re.search(pattern, value)
        return [f"{at}: does not match {pattern}"] if bad else []

    def k_minimum(self, low: float, value: Any, at: str, _: Any) -> list[str]:
        bad = isinstance(value, int | float) and not isinstance(value, bool) and value < low
        return [f"{at}: below {low}"] if bad else []

    def k_exclusiveMinimum(self, low: float, value: Any, at: str, _: Any) -> list[str]:
        bad = isinstance(value, int | float) and not isinstance(value, bool) and value <= low
        return [f"{at}: not above {low}"] if bad else []

    def k_exclusiveMaximum(self, high: float, value: Any, at: str, _: Any) -> list[str]:
        bad = isinstance(value, int | float) and not isinstance(value, bool) and value >= high
        return [f"{at}: not below {high}"] if bad else []

    def k_minLength(self, low: int, value: Any, at: str, _: Any) -> list[str]:
        return [f"{at}: too short"] if isinstance(value, str) and len(value) < low else []

    def k_maximum(self, high: float, value: Any, at: str, _: Any) -> list[str]:
        bad = isinstance(value, int | float) and not isinstance(value, bool) and value > high
        return [f"{at}: above {high}"] if bad else []

    def k_minItems(self, low: int, value: Any, at: str, _: Any) -> list[str]:
        return [f"{at}: too few items"] if isinstance(value, list) and len(value) < low else []

    def k_minProperties(self, low: int, value: Any, at: str, _: Any) -> list[str]:
        return [f"{at}: too few keys"] if isinstance(value, dict) and len(value) < low else []

    def k_maxProperties(self, high: int, value: Any, at: str, _: Any) -> list[str]:
        return [f"{at}: too many keys"] if isinstance(value, dict) and len(value) > high else []

    def k_required(self, keys: list[str], value: Any, at: str, _: Any) -> list[str]:
        missing = [key for key in keys if isinstance(value, dict) and key not in value]
        return [f"{at}: missing {key}" for key in missing]

    def k_properties(self, properties: dict[str, Any], value: Any, at: str, _: Any) -> list[str]:
        if not isinstance(value, dict):
            return []
        return [
            error
            for key, schema in properties.items()
            if key in value
            for error in self.errors(schema, value[key], f"{at}.{key}")
        ]

    def k_patternProperties(
        self, patterns: dict[str, Any], value: Any, at: str, _: Any
    ) -> list[str]:
        if not isinstance(value, dict):
            return []
        return [
            error
            for pattern, schema in patterns.items()
            for key in value
            if re.search(pattern, key)
            for error in self.errors(schema, value[key], f"{at}.{key}")
        ]

    def k_additionalProperties(
        self, extra: Any, value: Any, at: str, schema: dict[str, Any]
    ) -> list[str]:
        if not isinstance(value, dict):
            return []
        known = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        others = [
            key
            for key in value
            if key not in known and not any(re.search(p, key) for p in patterns)
        ]
        return [error for key in others for error in self.errors(extra, value[key], f"{at}.{key}")]

    def k_items(self, schema: Any, value: Any, at: str, _: Any) -> list[str]:
        if not isinstance(value, list):
            return []
        return [e for i, item in enumerate(value) for e in self.errors(schema, item, f"{at}[{i}]")]

    def k_anyOf(self, options: list[Any], value: Any, at: str, _: Any) -> list[str]:
        passing = [option for option in options if not self.errors(option, value, at)]
        return [] if passing else [f"{at}: matches none of anyOf"]

    def k_oneOf(self, options: list[Any], value: Any, at: str, _: Any) -> list[str]:
        passing = [option for option in options if not self.errors(option, value, at)]
        return [] if len(passing) == 1 else [f"{at}: matches {len(passing)} of oneOf"]

    def k_allOf(self, options: list[Any], value: Any, at: str, _: Any) -> list[str]:
        return [error for option in options for error in self.errors(option, value, at)]

    def k_not(self, schema: Any, value: Any, at: str, _: Any) -> list[str]:
        return [] if self.errors(schema, value, at) else [f"{at}: matches a forbidden form"]


def _same(expected: Any, value: Any) -> bool:
    return type(expected) is type(value) and expected == value


def _json_data(data: Any) -> Any:
    return json.loads(json.dumps(data, default=lambda value: value.isoformat()))


def _examples() -> list[Any]:
    bundled = sorted((ROOT / "scenarios").glob("**/*.scenario.yaml"))
    bundled += sorted((ROOT / "examples" / "live").glob("*.scenario.yaml"))
    return [
        pytest.param(lambda: load_yaml_file(FULL).data, id="full-example"),
        pytest.param(lambda: load_yaml_text(_docs_example()).data, id="docs-example"),
        *(
            pytest.param(
                lambda path=path: load_yaml_file(path).data, id=str(path.relative_to(ROOT))
            )
            for path in bundled
        ),
    ]


@pytest.fixture(scope="module")
def checker() -> _Checker:
    return _Checker(scenario_json_schema())


def test_schema_is_well_formed() -> None:
    schema = scenario_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "agentrig scenario file"
    assert schema["type"] == "object"
    assert schema["required"] == ["name"]
    # turns (a scripted scenario), or user, judge and trials (a live one)
    assert [branch["required"] for branch in schema["oneOf"]] == [
        ["turns"],
        ["user", "judge", "trials"],
    ]
    assert schema["additionalProperties"] is False
    assert json.loads(json.dumps(schema)) == schema
    refs = re.findall(r'"\$ref": "#/\$defs/([^"]+)"', json.dumps(schema))
    assert refs
    assert set(refs) <= set(schema["$defs"])
    for pattern in re.findall(r'"pattern": "((?:[^"\\]|\\.)*)"', json.dumps(schema)):
        re.compile(json.loads(f'"{pattern}"'))


def test_every_field_has_a_description() -> None:
    schema = scenario_json_schema()
    for name, definition in schema["$defs"].items():
        for key, prop in definition.get("properties", {}).items():
            assert prop.get("description"), f"{name}.{key} has no description"


def test_schema_says_the_expected_total_is_input_plus_output() -> None:
    total = scenario_json_schema()["$defs"]["UsageExpect"]["properties"]["total"]
    assert "input + output" in total["description"]


def test_schema_describes_call_shorthand_as_a_pattern_string() -> None:
    defs = scenario_json_schema()["$defs"]
    shorthand = {
        "type": "string",
        "pattern": CALL_SHORTHAND_PATTERN,
        "description": "A call in shorthand: name(arg=value, ...) or name().",
    }
    assert shorthand in defs["ModelReply"]["properties"]["call"]["anyOf"]
    assert shorthand in defs["ToolCallsExpect"]["properties"]["calls"]["items"]["anyOf"]
    assert re.search(CALL_SHORTHAND_PATTERN, "get_weather(city=Paris)")
    assert not re.search(CALL_SHORTHAND_PATTERN, "get_weather")


@pytest.mark.parametrize("read", _examples())
def test_examples_are_valid_for_the_models_and_the_schema(
    checker: _Checker, read: Callable[[], Any]
) -> None:
    data = read()
    Scenario.model_validate(data)
    assert checker.errors(checker.root, _json_data(data)) == []


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d: d.update(colour="red"), id="unknown-key"),
        pytest.param(lambda d: d["turns"][0]["expect"].update(status="complete"), id="bad-enum"),
        pytest.param(
            lambda d: d["turns"][0]["model"][0].update(call="get_weather"), id="no-parens"
        ),
        pytest.param(
            lambda d: d["turns"][0]["model"][0].update(calls=["f()"]), id="call-and-calls"
        ),
        pytest.param(lambda d: d["turns"][0]["model"][2].update(error="x"), id="say-and-error"),
        pytest.param(lambda d: d["turns"][0]["model"].append({"latency": 1}), id="empty-reply"),
        pytest.param(
            lambda d: d["agent"]["tools"]["get_weather"]["replies"][0].update({"raise": "x"}),
            id="two-outcomes",
        ),
        pytest.param(
            lambda d: d["turns"][0]["expect"].update(
                final_response={"contains": "a", "regex": "b"}
            ),
            id="two-text-checks",
        ),
        pytest.param(lambda d: d["agent"]["tools"].update({"bad name": {}}), id="bad-tool-name"),
        pytest.param(lambda d: d["turns"][0].update(cancel="later"), id="bad-cancel"),
        pytest.param(lambda d: d.update(turns=[]), id="no-turns"),
        pytest.param(
            lambda d: d["turns"][0]["model"][0].update(think={"redacted": False}),
            id="think-redacted-false",
        ),
        pytest.param(lambda d: d["turns"][0]["model"][0].update(think={}), id="think-empty-map"),
        pytest.param(
            lambda d: d["turns"][0]["model"][0].update(think={"redacted": True, "text": "x"}),
            id="think-unknown-key",
        ),
        pytest.param(lambda d: d["turns"][0]["model"][0].update(think=["x"]), id="think-list"),
        pytest.param(
            lambda d: d["turns"][0].update(mixture=[{"weight": 1, "model": [{"say": "x"}]}]),
            id="model-and-mixture",
        ),
        pytest.param(
            lambda d: _mixture(d, [{"weight": 0, "model": [{"say": "x"}]}]), id="zero-weight"
        ),
        pytest.param(
            lambda d: _mixture(d, [{"weight": -1, "model": [{"say": "x"}]}]), id="negative-weight"
        ),
        pytest.param(lambda d: _mixture(d, []), id="empty-mixture"),
        pytest.param(lambda d: _mixture(d, [{"weight": 1, "model": []}]), id="empty-branch"),
        pytest.param(
            lambda d: _mixture(d, [{"weight": 1, "labl": "x", "model": [{"say": "x"}]}]),
            id="branch-unknown-key",
        ),
        pytest.param(lambda d: d["turns"][0].update(seed=1.5), id="seed-not-integer"),
        pytest.param(lambda d: d["turns"][0]["model"][2].update(repeat="yes"), id="repeat-text"),
        pytest.param(lambda d: _logprobs(d, {"logprob": 0.5}), id="positive-logprob"),
        pytest.param(lambda d: _logprobs(d, {"top": {"a": 0.1}}), id="positive-top-logprob"),
        pytest.param(
            lambda d: d["turns"][0]["model"][0].update(logprobs=[{"token": "x", "logprob": -1}]),
            id="logprobs-without-say",
        ),
        pytest.param(lambda d: d["turns"][0]["model"][2].update(logprobs=[]), id="no-logprobs"),
    ],
)
def test_schema_rejects_what_the_models_reject(
    checker: _Checker, change: Callable[[dict[str, Any]], None]
) -> None:
    data = _json_data(load_yaml_file(FULL).data)
    change(data)
    assert checker.errors(checker.root, data)
    with pytest.raises(ValueError, match="validation error"):
        Scenario.model_validate(data)


# --- the live keys: the schema accepts exactly what the models accept ------------------------


def _model_accepts(data: Any) -> bool:
    try:
        Scenario.model_validate(data)
    except ValueError:
        return False
    return True


@agentrig_settings(max_examples=30)
@given(data=live_files.live_scenarios())
def test_the_schema_accepts_every_valid_live_scenario(
    checker: _Checker, data: dict[str, Any]
) -> None:
    assert _model_accepts(data)
    assert checker.errors(checker.root, _json_data(data)) == []


@agentrig_settings(max_examples=50)
@given(case=live_files.broken_live_scenarios())
def test_the_schema_rejects_each_live_defect_it_can_state(
    checker: _Checker, case: live_files.Broken
) -> None:
    event(case.kind)
    assert not _model_accepts(case.data)
    if case.schema_tells:  # else a rule JSON Schema cannot state: only the models see it
        assert checker.errors(checker.root, case.data), case.kind


LIVE_DATA = yaml.safe_load(LIVE)


def _live(change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    data = json.loads(json.dumps(LIVE_DATA))
    change(data)
    return data


@pytest.mark.parametrize(
    ("data", "valid"),
    [
        pytest.param(_live(lambda d: None), True, id="as-written"),
        pytest.param(
            _live(lambda d: d["judge"]["criteria"][0]["check"].update(said=None)),
            True,
            id="check-with-a-null-key",
        ),
        pytest.param(
            _live(lambda d: d["judge"]["criteria"][0]["check"].update(tool_called=None)),
            False,
            id="check-of-nulls",
        ),
        pytest.param(
            _live(
                lambda d: d["judge"]["criteria"][0].update(
                    check={"said": {"contains": "refund", "regex": None}}
                )
            ),
            True,
            id="text-match-with-a-null-key",
        ),
        pytest.param(
            _live(
                lambda d: d["judge"]["criteria"][0].update(
                    check={"said": {"contains": None, "regex": None}}
                )
            ),
            False,
            id="text-match-of-nulls",
        ),
        pytest.param(
            _live(lambda d: d["judge"]["criteria"][0].update(rubric=None)),
            True,
            id="criterion-with-a-null-rubric",
        ),
        pytest.param(
            _live(lambda d: d["judge"]["criteria"][0].update(never=None, check=None)),
            False,
            id="criterion-of-nulls",
        ),
        pytest.param(
            _live(lambda d: d["judge"]["criteria"][0].update(votes=3)),
            False,
            id="votes-on-a-check",
        ),
        pytest.param(
            _live(lambda d: d["judge"]["criteria"][1].update(check=None, votes=3)),
            True,
            id="votes-on-a-rubric",
        ),
        pytest.param(
            _live(lambda d: d["judge"]["model"]["price"].pop("output")),
            False,
            id="price-without-output",
        ),
        pytest.param(
            _live(lambda d: d["judge"]["model"]["price"].update(cache_read=0.5)),
            True,
            id="price-with-cache-read",
        ),
        pytest.param(
            _live(lambda d: d["judge"]["model"].update(price=None)),
            True,
            id="null-price",
        ),
        pytest.param(_live(lambda d: d["judge"].update(model=None)), False, id="null-judge-model"),
        pytest.param(
            _live(lambda d: d["judge"]["criteria"].pop(1) and d["judge"].update(model=None)),
            True,
            id="null-judge-model-without-rubric",
        ),
        pytest.param(_live(lambda d: d["user"].pop("model")), False, id="user-without-model"),
        pytest.param(
            _live(lambda d: d["user"].pop("model") and d["user"].update(opening="hi")),
            False,
            id="user-with-an-opening-without-model",
        ),
        pytest.param(
            _live(
                lambda d: (
                    d["user"].pop("model") and d["user"].update(opening="hi", stop={"max_turns": 1})
                )
            ),
            True,
            id="one-scripted-turn-without-model",
        ),
        pytest.param(
            _live(
                lambda d: (
                    d["user"].pop("model") and d["user"].update(opening="", stop={"max_turns": 1})
                )
            ),
            False,
            id="empty-opening-without-model",
        ),
        pytest.param(
            _live(lambda d: d["user"].update(knows={"order_id": "  "})),
            False,
            id="blank-fact",
        ),
        pytest.param(
            _live(lambda d: d["user"].update(knows={"order id": "A-1"})),
            False,
            id="fact-not-a-name",
        ),
        pytest.param(
            _live(lambda d: d["judge"]["criteria"][1].update(rubric=" ")),
            False,
            id="blank-rubric",
        ),
        pytest.param(_live(lambda d: d.update(user=None)), False, id="null-user"),
        pytest.param(_live(lambda d: d.update(turns=[])), False, id="live-with-no-turns"),
        pytest.param(
            _live(lambda d: d.update(turns=[{"user": "hi"}], user=None, judge=None, trials=None)),
            True,
            id="scripted-with-null-live-keys",
        ),
        pytest.param(
            _live(lambda d: d["agent"].update(adapter="app.agent:reply")),
            False,
            id="builder-and-adapter",
        ),
        pytest.param(
            _live(lambda d: d["agent"].update(adapter=None)),
            True,
            id="builder-and-null-adapter",
        ),
        pytest.param(_live(lambda d: d["agent"].pop("builder")), False, id="no-agent"),
        pytest.param(
            _live(lambda d: d["agent"].update(tools={"t": {"replies": [{"return": 1}]}})),
            False,
            id="scripted-tools",
        ),
    ],
)
def test_the_schema_and_the_models_agree_on_the_live_keys(
    checker: _Checker, data: dict[str, Any], valid: bool
) -> None:
    assert _model_accepts(data) is valid
    assert (checker.errors(checker.root, data) == []) is valid


def _mixture(data: dict[str, Any], branches: list[Any]) -> None:
    """Replace the first turn's model with a ``mixture`` of ``branches``."""
    del data["turns"][0]["model"]
    data["turns"][0]["mixture"] = branches


def _logprobs(data: dict[str, Any], entry: dict[str, Any]) -> None:
    """Give the first turn's text reply one token spelling its text, changed by ``entry``."""
    reply = data["turns"][0]["model"][2]
    reply["logprobs"] = [{"token": reply["say"], "logprob": -0.5, **entry}]


def test_an_alias_bomb_in_a_pairs_value_is_an_error_not_a_hang(
    tmp_path: Path, bounded: Callable[..., Any]
) -> None:
    lines = [
        "name: bomb",
        "agent:",
        "  tools:",
        "    t:",
        "      params: {x: string}",
        "      replies:",
        "        - return:",
        "            a0: &a0 !!pairs [{k: v}, {k: v}]",
    ]
    lines += [
        f"            a{i}: &a{i} !!pairs [{{k: *a{i - 1}}}, {{k: *a{i - 1}}}]"
        for i in range(1, 30)
    ]
    lines += ["turns:", "  - user: hi", "    model:", "      - say: ok"]
    path = _write(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(ScenarioFileError, match="aliases expand") as caught:
        bounded(lambda: load_scenario(path))
    assert caught.value.line is not None


@pytest.mark.parametrize("field", ["name", "description"])
def test_an_integer_too_large_to_show_names_its_line(tmp_path: Path, field: str) -> None:
    path = tmp_path / "huge.scenario.yaml"
    text = "name: huge\nturns:\n  - user: hi\n    model: [{say: hello}]\n"
    text = text.replace("name: huge", f"name: huge\n{field}: 0x{'f' * 3572}", 1)
    if field == "name":
        text = text.replace("name: huge\n", "", 1)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioFileError, match="an integer of more than 4300 digits") as raised:
        load_scenario(path)
    assert raised.value.line == (1 if field == "name" else 2)


def test_a_null_where_text_belongs_is_named_null(tmp_path: Path) -> None:
    error = _error(tmp_path, "name: n\nturns:\n  - user: null\n    model: [{say: x}]\n")

    assert [(problem.field, problem.reason) for problem in error.errors] == [
        ("turns[0].user", "expected a string, got null")
    ]


def _every_model(
    value: Any, path: tuple[str | int, ...]
) -> list[tuple[Any, tuple[str | int, ...]]]:
    """Every scenario model in ``value`` with its YAML path, through every field."""
    if isinstance(value, ScenarioModel):
        found = [(value, path)]
        for name, field in type(value).model_fields.items():
            found += _every_model(getattr(value, name), (*path, field.alias or name))
        return found
    if isinstance(value, tuple | list):
        return [pair for i, item in enumerate(value) for pair in _every_model(item, (*path, i))]
    if isinstance(value, dict):
        return [pair for k, item in value.items() for pair in _every_model(item, (*path, k))]
    return []


@pytest.mark.parametrize(
    "file",
    [FULL, *sorted(ROOT.glob("scenarios/**/*.scenario.yaml"))],
    ids=lambda file: file.name,
)
def test_every_model_is_where_the_yaml_puts_it(file: Path) -> None:
    # Locations are looked up when first asked for: they must be those of a full parse.
    try:
        scenario = load_scenario(file)
    except ScenarioFileError:
        pytest.skip("a file meant not to load")
    full = load_yaml_file(file)
    models = _every_model(scenario, ())
    assert len(models) > 3
    for model, path in models[1:]:
        where = full.location(path)
        assert model.source == (None if where is None else SourceLocation(str(file), *where))
    assert scenario.source == SourceLocation(str(file), *full.key_locations[("name",)])
    assert scenario.locate(("turns", 0)) == SourceLocation(str(file), *full.location(("turns", 0)))


def test_locations_survive_pickling_and_copies() -> None:
    # A scenario sent to a worker process, or copied, still says where each part was written;
    # a model validated outside the loader has no location.
    scenario = load_scenario(FULL)
    reply = SourceLocation(str(FULL), _line(FULL, "      - say: Paris is sunny"), 9)
    status = SourceLocation(str(FULL), _line(FULL, "      status: failed"), 15)
    unpickled = pickle.loads(pickle.dumps(scenario))
    assert unpickled == scenario
    assert unpickled.turns[0].model[2].source == reply
    assert unpickled.locate(("turns", 0, "expect", "status")) == status
    assert unpickled.source == scenario.source
    copied = scenario.model_copy(update={"description": "changed"})
    assert copied.source == scenario.source
    assert copied.locate(("turns", 0, "expect", "status")) == status
    assert scenario.turns[0].model[2].model_copy(deep=True).source == reply
    again = Scenario.model_validate(scenario.model_dump(by_alias=True, exclude_unset=True))
    assert again.source is None
    assert again.turns[0].model[2].source is None
    assert again.locate(("turns", 0)) is None
