"""The failure a fuzzing run reports: the scenario file that replays it, the command, the
message."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrig.harness.fuzz import FuzzFailure
from agentrig.harness.fuzz.failure import replay_command, scenario_name, write_failure
from agentrig.harness.fuzz.target import CommandTarget, FunctionTarget
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import AgentSpec, ModelReply, Scenario, ScenarioTurn
from agentrig.harness.scenarios.writer import scenario_to_yaml

PATH = Path("fuzz/fuzz-agents-weather.scenario.yaml")
COMMAND = "agentrig fuzz agents:weather --replay fuzz/fuzz-agents-weather.scenario.yaml"


def script(user: str = "Weather in Paris?", adapter: str | None = None) -> Scenario:
    turn = ScenarioTurn(user=user, model=(ModelReply(call="get_weather(city=Paris)"),))
    return Scenario(name="fuzz-agents-weather", agent=AgentSpec(adapter=adapter), turns=(turn,))


def agent(ep: object, prompt: str) -> str:
    return prompt


def shown(scenario: Scenario) -> list[str]:
    return ["", "The script:", *("  " + line for line in scenario_to_yaml(scenario).splitlines())]


def test_a_failure_lists_the_problems_the_script_and_where_it_was_written():
    failure = FuzzFailure(
        ["raises_only: the agent raised KeyError", "terminates_within: 6 model calls"],
        scenario=script(),
        path=PATH,
        command=COMMAND,
    )
    assert isinstance(failure, AssertionError)  # pytest reports it as a failed test
    assert failure.problems == (
        "raises_only: the agent raised KeyError",
        "terminates_within: 6 model calls",
    )
    assert (failure.path, failure.command, failure.found_at, failure.runs) == (
        PATH,
        COMMAND,
        None,
        None,
    )
    assert not failure.replayed
    assert str(failure).splitlines() == [
        "agentrig fuzz: a generated script breaks the agent:",
        "  - raises_only: the agent raised KeyError",
        "  - terminates_within: 6 model calls",
        *shown(script()),
        "",
        f"Written to {PATH}; replay it with:",
        f"  {COMMAND}",
    ]


def test_a_fuzzing_failure_says_which_example_found_it():
    failure = FuzzFailure(["p"], scenario=script(), path=PATH, command=COMMAND, found_at=3, runs=41)
    assert (failure.found_at, failure.runs) == (3, 41)
    assert str(failure).splitlines()[0] == (
        "agentrig fuzz: a generated script breaks the agent (example 3, shrunk in 41 runs in all):"
    )


def test_a_replayed_failure_names_its_file_and_does_not_show_the_script_again():
    failure = FuzzFailure(["p"], scenario=script(), path=PATH, command=COMMAND, replayed=True)
    assert failure.replayed
    assert str(failure).splitlines() == [
        f"agentrig fuzz: the script of {PATH} breaks the agent:",
        "  - p",
        "",
        "Replay it with:",
        f"  {COMMAND}",
    ]


@pytest.mark.parametrize(("path", "command"), [(None, COMMAND), (PATH, "")])
def test_a_failure_without_a_file_or_a_command_offers_no_replay(path, command):
    failure = FuzzFailure(["p"], scenario=script(), path=path, command=command)
    assert str(failure).splitlines() == [
        "agentrig fuzz: a generated script breaks the agent:",
        "  - p",
        *shown(script()),
    ]


def test_a_script_up_to_3000_characters_is_shown_a_longer_one_is_not():
    padding = 3_000 - len(scenario_to_yaml(script("a")))
    longest = script("a" * (1 + padding))
    assert len(scenario_to_yaml(longest)) == 3_000
    assert "The script:" in str(FuzzFailure(["p"], scenario=longest, path=PATH, command=COMMAND))
    too_long = script("a" * (2 + padding))
    assert str(FuzzFailure(["p"], scenario=too_long, path=PATH, command=COMMAND)).splitlines() == [
        "agentrig fuzz: a generated script breaks the agent:",
        "  - p",
        "",
        f"Written to {PATH}; replay it with:",
        f"  {COMMAND}",
    ]


@pytest.mark.parametrize(
    ("reference", "given", "name"),
    [
        ("agents:weather", None, "fuzz-agents-weather"),
        ("My_Pkg.Agents:Run Agent!", None, "fuzz-my_pkg.agents-run-agent"),
        ("._agents:weather_.", None, "fuzz-agents-weather"),
        ("!!!", None, "fuzz-agent"),
        (None, None, "fuzz-agent"),
        (None, "", "fuzz-agent"),
        ("agents:weather", "mine", "mine"),
        ("a" * 100, None, "fuzz-" + "a" * 75),
    ],
)
def test_the_scenarios_are_named_after_the_target(reference, given, name):
    assert scenario_name(FunctionTarget(agent, reference), given) == name


def test_a_command_targets_scenarios_are_named_after_its_command_line():
    assert scenario_name(CommandTarget(("python", "bot.py"))) == "fuzz-python-bot.py"


@pytest.mark.parametrize(
    ("target", "adapter", "prompt", "command"),
    [
        (
            FunctionTarget(agent, "agents:weather"),
            None,
            "Weather in Paris?",
            "agentrig fuzz agents:weather --replay 'fuzz/a b.scenario.yaml'",
        ),
        # the file names its function: the command need not
        (
            FunctionTarget(agent, "agents:weather"),
            "agents:weather",
            "Weather in Paris?",
            "agentrig fuzz --replay 'fuzz/a b.scenario.yaml'",
        ),
        (
            FunctionTarget(agent),
            None,
            "Weather in Paris?",
            "agentrig fuzz MODULE:FUNCTION --replay 'fuzz/a b.scenario.yaml'",
        ),
        # a command is named even when the file names an adapter
        (
            CommandTarget(("python", "bot.py")),
            "agents:weather",
            "Weather in Paris?",
            "agentrig fuzz 'python bot.py' --replay 'fuzz/a b.scenario.yaml'",
        ),
        (
            FunctionTarget(agent, "agents:weather"),
            None,
            "Rain in Oslo?",
            "agentrig fuzz agents:weather --replay 'fuzz/a b.scenario.yaml' --prompt 'Rain in Oslo?'",
        ),
    ],
)
def test_the_replay_command_says_only_what_the_file_does_not(target, adapter, prompt, command):
    path = Path("fuzz/a b.scenario.yaml")
    assert replay_command(target, path, prompt, script(adapter=adapter)) == command


def test_a_written_failure_loads_back_with_the_problems_and_command_in_its_header(tmp_path):
    seen: list[Path] = []

    def command_of(path: Path) -> str:
        seen.append(path)
        return f"agentrig fuzz agents:weather --replay {path}"

    problems = ["raises_only: the agent raised KeyError\n  line 2\n  line 3\n  line 4", "p2"]
    path, command = write_failure(script(), problems, tmp_path / "fuzz", command_of)
    assert path == tmp_path / "fuzz" / "fuzz-agents-weather.scenario.yaml"
    assert seen == [path]
    assert command == f"agentrig fuzz agents:weather --replay {path}"
    text = path.read_text()
    assert text.startswith(
        "# Written by agentrig fuzz: a generated script that breaks the agent.\n"
        "#   - raises_only: the agent raised KeyError\n"
        "#   -   line 2\n"
        "#   -   line 3\n"
        "#   - p2\n"
        f"# Replay: {command}\n"
    )
    assert load_scenario(path).turns == script().turns


def test_a_failure_that_cannot_be_written_still_has_its_command(tmp_path):
    blocked = tmp_path / "fuzz"
    blocked.write_text("a file where the folder should be")
    path, command = write_failure(script(), ["p"], blocked, lambda at: f"replay {at.name}")
    assert (path, command) == (None, "replay fuzz-agents-weather.scenario.yaml")
