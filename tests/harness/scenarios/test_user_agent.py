"""A scenario running the user's agent: ``agent.builder`` and the builder's system prompt."""

from __future__ import annotations

import itertools
from pathlib import Path
from textwrap import dedent

import pytest
from typer.testing import CliRunner

import agentrig as ar
from agentrig.harness import load_scenario, run_scenario
from agentrig.harness.cli import app
from agentrig.harness.runner import final_states
from agentrig.harness.scenarios.user_agent import resolve_builder

_modules = itertools.count()

AGENT_MODULE = """\
import agentrig as ar


@ar.tool
def get_weather(city: str) -> str:
    \"\"\"Current weather (the real tool).\"\"\"
    return f"real weather in {city}"


def build():
    return ar.AgentBuilder.base().with_tools([get_weather])PROMPT


BUILDER = build()


def broken():
    raise ValueError("no database")


def not_a_builder():
    return "a builder"
"""

SCENARIO = """\
name: weather
agent:
  builder: "{reference}"
  trace_mode: inline{agent_extra}
  tools:
    get_weather:
      params: {{city: string}}
      replies: [{{return: scripted weather}}]
turns:
  - user: Weather in Paris?
    model:
      - call: get_weather(city=Paris)
      - say: Sunny.
    expect:
      messages: [user, assistant, {{role: tool, contains: real weather in Paris}}, assistant]
"""


@pytest.fixture
def agent_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A user's agent module on the path, under a fresh name (modules stay imported)."""
    name = f"user_agent_{next(_modules)}"
    (tmp_path / f"{name}.py").write_text(AGENT_MODULE.replace("PROMPT", ""), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def scenario_file(tmp_path: Path, reference: str, agent_extra: str = "") -> Path:
    path = tmp_path / "weather.scenario.yaml"
    text = SCENARIO.format(reference=reference, agent_extra=agent_extra)
    path.write_text(text, encoding="utf-8")
    return path


def messages_of(tmp_path: Path, reference: str) -> list[str]:
    result = run_scenario(load_scenario(scenario_file(tmp_path, reference)))
    return [failure.message for failure in result.failures]


def test_the_file_names_the_builder_whose_tools_replace_the_scripted_ones(
    tmp_path: Path, agent_module: str
) -> None:
    assert messages_of(tmp_path, f"{agent_module}:build") == []


def test_the_builder_may_be_an_agent_builder_object(tmp_path: Path, agent_module: str) -> None:
    assert messages_of(tmp_path, f"{agent_module}:BUILDER") == []


def test_a_builder_given_in_python_wins_over_the_file(tmp_path: Path, agent_module: str) -> None:
    scripted_only = ar.AgentBuilder.base()
    path = scenario_file(tmp_path, f"{agent_module}:build")
    result = run_scenario(load_scenario(path), builder=scripted_only)
    assert not result.passed
    assert "the agent built in Python has no tool" in result.failures[0].message


def test_agentrig_run_uses_the_builder_the_file_names(
    tmp_path: Path, agent_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = scenario_file(tmp_path, f"{agent_module}:build")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", str(path), "--report-dir", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "1 passed" in result.output


def validate(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(path)])
    return result.exit_code, " ".join(result.output.split())


def test_agentrig_validate_builds_the_named_agent_and_finds_tool_drift(
    tmp_path: Path, agent_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = scenario_file(tmp_path, f"{agent_module}:build")
    assert validate(path) == (0, "1 scenario file(s) valid")
    path.write_text(path.read_text().replace("{city: string}", "{town: string}"))
    code, output = validate(path)
    assert code == 2
    assert f"error: {path}:6: tool 'get_weather': the scenario's params differ" in output
    assert "parameter 'town' is not a parameter of the real tool" in output


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        (
            "get_wether(city=Paris)",
            "turn 1, reply 1: the script calls tool 'get_wether', which the agent does not have "
            "(did you mean 'get_weather'?) (it has: get_weather)",
        ),
        (
            "get_weather(town=Paris)",
            "turn 1, reply 1: the call of tool 'get_weather' passes 'town', which the tool does "
            "not take (it takes: city)",
        ),
        (
            "get_weather()",
            "turn 1, reply 1: the call of tool 'get_weather' lacks 'city', which the tool requires",
        ),
    ],
)
def test_agentrig_validate_checks_the_scripted_calls_against_the_named_agents_tools(
    tmp_path: Path, agent_module: str, monkeypatch: pytest.MonkeyPatch, call: str, problem: str
) -> None:
    monkeypatch.chdir(tmp_path)
    path = scenario_file(tmp_path, f"{agent_module}:build")
    path.write_text(path.read_text().replace("call: get_weather(city=Paris)", f"call: {call}"))
    code, output = validate(path)
    assert code == 2
    assert f"error: {path}:12: {problem}" in output
    assert not run_scenario(load_scenario(path)).passed  # what validate foresaw


def test_validate_leaves_a_call_the_turn_lists_under_expect_errors_to_the_run(
    tmp_path: Path, agent_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = scenario_file(tmp_path, f"{agent_module}:build")
    text = path.read_text().replace("call: get_weather(city=Paris)", "call: search(q=Paris)")
    text = (
        text.split("    expect:")[0] + "    expect:\n      errors: [\"Tool 'search' not found\"]\n"
    )
    path.write_text(text)
    assert validate(path) == (0, "1 scenario file(s) valid")
    assert run_scenario(load_scenario(path)).passed


def test_a_mistyped_builder_name_gets_a_did_you_mean(
    tmp_path: Path, agent_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, output = validate(scenario_file(tmp_path, f"{agent_module}:biuld"))
    assert code == 2
    assert f"module {agent_module!r} has no 'biuld' (did you mean 'build'?)" in output


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        (":broken", "raised ValueError: no database"),
        (":build", "agent.system_prompt would replace the system prompt"),
    ],
)
def test_agentrig_validate_reports_a_named_builder_that_cannot_run_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: str, problem: str
) -> None:
    module = prompted_module(tmp_path, monkeypatch, "You are the support agent.").split(":")[0]
    prompt = "\n  system_prompt: You answer weather questions."
    path = scenario_file(tmp_path, module + reference, prompt)
    code, output = validate(path)
    assert code == 2
    assert problem in output
    line = 3 if reference == ":broken" else 5
    assert f"error: {path}:{line}: " in output


@pytest.mark.parametrize(
    ("attribute", "problem"),
    [
        ("missing", "has no 'missing'"),
        ("broken", "raised ValueError: no database"),
        ("not_a_builder", "returned str 'a builder', not an AgentBuilder"),
    ],
)
def test_a_builder_that_cannot_be_made_fails_the_scenario_at_its_line(
    tmp_path: Path, agent_module: str, attribute: str, problem: str
) -> None:
    result = run_scenario(load_scenario(scenario_file(tmp_path, f"{agent_module}:{attribute}")))
    (failure,) = result.failures
    assert f"builder '{agent_module}:{attribute}'" in failure.message
    assert problem in failure.message
    assert failure.location == f"{tmp_path / 'weather.scenario.yaml'}:3"


def test_a_module_that_cannot_be_imported_says_so(tmp_path: Path) -> None:
    (failure,) = run_scenario(
        load_scenario(scenario_file(tmp_path, "no_such_agent:build"))
    ).failures
    assert "cannot import module 'no_such_agent'" in failure.message
    assert "PYTHONPATH" in failure.message


def test_a_module_whose_own_import_is_missing_names_that_import_not_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module was found: advice to run from its folder would send the user the wrong way."""
    name = f"user_agent_{next(_modules)}"
    (tmp_path / f"{name}.py").write_text("import no_such_dependency\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    (failure,) = run_scenario(load_scenario(scenario_file(tmp_path, f"{name}:build"))).failures
    assert f"module '{name}' failed to import: ModuleNotFoundError: No module named" in (
        failure.message
    )
    assert f"({tmp_path / name}.py, line 1)" in failure.message
    assert "install 'no_such_dependency'" in failure.message
    assert "PYTHONPATH" not in failure.message


def test_a_malformed_reference_is_a_file_error_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(ar.AgentrigError, match=r"agent\.builder: .*'package\.module:function'"):
        load_scenario(scenario_file(tmp_path, "just a name"))


@pytest.mark.parametrize(
    ("reference", "hint"),
    [
        ("my_agent.agent.build", "e.g. 'my_agent.agent:build'"),  # a dot where the colon goes
        ("my_agent.agent", "e.g. 'my_agent:agent'"),  # the module alone
        ("my_agent.agent:", "write 'package.module:function'"),
        ("my agent:build", "write 'package.module:function'"),
    ],
)
def test_a_malformed_reference_given_in_python_is_a_configuration_error_with_a_hint(
    reference: str, hint: str
) -> None:
    """``AgentMachine.agent_builder`` is no scenario file: nothing checked the reference before."""
    with pytest.raises(ar.ConfigurationError) as raised:
        resolve_builder(reference)
    message = str(raised.value)
    assert f"builder {reference!r} is not a reference" in message
    assert hint in message


# --- the system prompt ---------------------------------------------------------------------


def prompted_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prompt: str) -> str:
    name = f"user_agent_{next(_modules)}"
    text = AGENT_MODULE.replace("PROMPT", f".with_capability(ar.UseContextConfig({prompt!r}))")
    (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{name}:build"


def test_a_scenario_prompt_may_not_silently_replace_the_builders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = prompted_module(tmp_path, monkeypatch, "You are the support agent.")
    path = scenario_file(tmp_path, reference, "\n  system_prompt: You answer weather questions.")
    result = run_scenario(load_scenario(path))
    (failure,) = result.failures
    assert failure.message.startswith("agent.system_prompt would replace the system prompt")
    assert "'You are the support agent.'" in failure.message
    assert "system_prompt_override: true" in failure.message
    assert failure.location == f"{path}:5"
    assert result.turns == ()  # refused before it ran


def test_system_prompt_override_replaces_the_builders_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = prompted_module(tmp_path, monkeypatch, "You are the support agent.")
    extra = "\n  system_prompt: You answer weather questions.\n  system_prompt_override: true"
    scenario = load_scenario(scenario_file(tmp_path, reference, extra))
    assert run_scenario(scenario).passed
    (final,) = final_states(scenario)
    assert final.context.system_prompt == "You answer weather questions."


def test_without_a_scenario_prompt_the_builders_prompt_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = prompted_module(tmp_path, monkeypatch, "You are the support agent.")
    scenario = load_scenario(scenario_file(tmp_path, reference))
    (final,) = final_states(scenario)
    assert final.context.system_prompt == "You are the support agent."


def test_a_builder_without_a_prompt_takes_the_scenarios(tmp_path: Path, agent_module: str) -> None:
    extra = "\n  system_prompt: You answer weather questions."
    scenario = load_scenario(scenario_file(tmp_path, f"{agent_module}:build", extra))
    assert run_scenario(scenario).passed
    (final,) = final_states(scenario)
    assert final.context.system_prompt == "You answer weather questions."


def test_the_same_rule_holds_for_a_builder_given_in_python(tmp_path: Path) -> None:
    path = tmp_path / "plain.scenario.yaml"
    path.write_text(
        dedent(
            """\
            name: plain
            agent:
              system_prompt: Scenario prompt.
            turns:
              - user: hi
                model: [{say: hello}]
            """
        ),
        encoding="utf-8",
    )
    builder = ar.AgentBuilder.base().with_capability(ar.UseContextConfig("Builder prompt."))
    (failure,) = run_scenario(load_scenario(path), builder=builder).failures
    assert "would replace the system prompt the agent's builder sets" in failure.message
    assert failure.location == f"{path}:3"
    assert run_scenario(load_scenario(path)).passed  # scripted only: the scenario's prompt


def test_system_prompt_override_needs_a_prompt(tmp_path: Path) -> None:
    path = tmp_path / "bad.scenario.yaml"
    path.write_text(
        "name: bad\nagent:\n  system_prompt_override: true\nturns:\n  - user: hi\n",
        encoding="utf-8",
    )
    with pytest.raises(ar.AgentrigError, match=r":3:\d+: agent.system_prompt_override: .*needs"):
        load_scenario(path)
