"""``agentrig fuzz``: a 'module:function' agent or a command, the exit status, the written
scenario and its replay."""

from __future__ import annotations

import importlib
import shlex
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import settings
from typer.testing import CliRunner

from agentrig.errors import ConfigurationError
from agentrig.harness.cli import app
from agentrig.harness.fuzz.command import FuzzOptions, run_command

AGENT = """
import openai
from openai import OpenAI


def {name}(ep, prompt):
    with OpenAI(base_url=ep.openai_base_url, api_key=ep.api_key,
                http_client=ep.httpx2_client(), max_retries=0) as client:
        try:
            message = client.chat.completions.create(
                model="m", messages=[{{"role": "user", "content": prompt}}]
            ).choices[0].message
        except openai.APIError:
            return "unavailable"
    return {answer}
"""

COMMAND = """
import json, os, sys, urllib.request

# OPENAI_BASE_URL and OPENAI_API_KEY name the endpoint. The agent speaks HTTP itself, as one in
# another language would: the openai SDK's import (0.5 CPU s) in each of the runs of a fuzz
# (the probe, the examples, the shrink, the replay) was most of what this test spent.
prompt = sys.stdin.read()
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "m", "messages": [{"role": "user", "content": prompt}]}).encode(),
    headers={
        "authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
        "content-type": "application/json",
    },
)
with urllib.request.urlopen(request) as response:
    message = json.load(response)["choices"][0]["message"]
print(message["content"].upper())
"""


def _module(folder: Path, module: str, name: str, answer: str) -> None:
    (folder / f"{module}.py").write_text(AGENT.format(name=name, answer=answer))


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    yield tmp_path
    for module in [name for name in sys.modules if name.startswith("cli_agent_")]:
        del sys.modules[module]


@pytest.mark.slow
def test_a_failure_exits_1_with_the_written_file_and_the_replay_command(here):
    _module(here, "cli_agent_refusal", "agent", "message.content.upper()")
    result = CliRunner().invoke(
        app,
        [
            "fuzz",
            "cli_agent_refusal:agent",
            "--prompt",
            "Hi",
            "--reply",
            "text",
            "--reply",
            "refusal",
            "--fault",
            "none",
            "--max-examples",
            "30",
            "--no-database",
            "--seed",
            "1",
        ],
    )
    assert result.exit_code == 1, result.output
    assert "AttributeError: 'NoneType' object has no attribute 'upper'" in result.output
    written = here / ".agentrig/fuzz/fuzz-cli_agent_refusal-agent.scenario.yaml"
    assert written.exists()
    command = "agentrig fuzz --replay .agentrig/fuzz/fuzz-cli_agent_refusal-agent.scenario.yaml"
    assert command in result.output
    replayed = CliRunner().invoke(app, command.split()[1:])
    assert replayed.exit_code == 1
    assert "no attribute 'upper'" in replayed.output


def test_no_failure_exits_0_naming_the_offered_tools(here):
    _module(here, "cli_agent_fine", "agent", "message.content or message.refusal")
    result = CliRunner().invoke(
        app,
        ["fuzz", "cli_agent_fine:agent", "--prompt", "Hi", "--max-examples", "10", "--no-database"],
    )
    assert result.exit_code == 0, result.output
    assert "fuzzed 10 examples (the agent offers no tools): no property broke" in result.output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["fuzz", "nowhere_at_all:agent", "--prompt", "Hi"], "cannot import module"),
        (["fuzz", "--prompt", "Hi"], "give the agent (TARGET) and --prompt"),
        (["fuzz", "x:y", "--prompt", "Hi", "--fault", "flood"], "unknown kind 'flood'"),
        (["fuzz", "x:y", "--prompt", "Hi", "--raises", "builtins:len"], "names no exception"),
    ],
)
def test_usage_errors_exit_2_saying_what_is_wrong(here, arguments, message):
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 2
    assert message in result.output.replace("\n", " ")


@pytest.mark.slow
def test_a_command_target_runs_against_a_live_endpoint(here):
    (here / "agent_command.py").write_text(textwrap.dedent(COMMAND))
    result = CliRunner().invoke(
        app,
        [
            "fuzz",
            f"{sys.executable} agent_command.py",
            "--prompt",
            "Hi",
            "--reply",
            "refusal",
            "--fault",
            "none",
            "--max-examples",
            "3",
            "--no-database",
        ],
    )
    assert result.exit_code == 1, result.output
    assert "exited with status 1" in result.output
    assert "AttributeError" in result.output
    # the script plays to the command again: it names no adapter, and the replay names the command
    (written,) = (here / ".agentrig/fuzz").iterdir()
    assert "agent" not in yaml.safe_load(written.read_text())
    replay = (
        f"agentrig fuzz '{sys.executable} agent_command.py' --replay .agentrig/fuzz/{written.name}"
    )
    assert replay in result.output
    replayed = CliRunner().invoke(app, shlex.split(replay)[1:])
    assert replayed.exit_code == 1
    assert "no attribute 'upper'" in replayed.output


RECORDER = """
import json
import openai
from openai import OpenAI

TOOLS = {tools}
SEEN = []  # per run of the agent: what it was given and what it got


def agent(ep, prompt):
    got = []
    SEEN.append({{"live": ep.live, "prompt": prompt, "got": got}})
    messages = [{{"role": "user", "content": prompt}}]
    with OpenAI(base_url=ep.openai_base_url, api_key=ep.api_key, timeout=0.5,
                http_client=ep.httpx2_client(), max_retries=0) as client:
        for _ in range(50):
            try:
                message = client.chat.completions.create(
                    model="m", messages=messages, **({{"tools": TOOLS}} if TOOLS else {{}})
                ).choices[0].message
            except openai.APIStatusError as error:
                got.append(error.status_code)
                return "unavailable"
            except openai.APIError as error:
                got.append(type(error).__name__)
                return "unavailable"
            messages.append(message.model_dump(exclude_none=True))
            if "loop" in prompt:
                got.append("asked")
                continue
            if not message.tool_calls:
                got.append("refusal" if message.refusal else "text: " + (message.content or ""))
                if message.refusal and "crash" in prompt:
                    raise KeyError("refused")
                return message.content or message.refusal or ""
            if "drop" in prompt:
                return "dropped the calls"
            for call in message.tool_calls:
                try:
                    valid = isinstance(json.loads(call.function.arguments), dict)
                except ValueError:
                    valid = False
                got.append(call.function.name + ("" if valid else ": not a JSON object"))
                messages.append({{"role": "tool", "tool_call_id": call.id, "content": "done"}})
    return "gave up"
"""
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOL_LIST = [
    {"type": "function", "function": {"name": name, "parameters": WEATHER}}
    for name in ("get_weather", "get_time")
]


def recorder(folder: Path, *, tools: bool = True) -> tuple[str, list[dict[str, Any]]]:
    """A 'module:function' agent that records what each run was given and got."""
    module = "cli_agent_recorder" if tools else "cli_agent_plain"
    (folder / f"{module}.py").write_text(RECORDER.format(tools=TOOL_LIST if tools else []))
    sys.path.insert(0, str(folder))
    try:
        seen: list[dict[str, Any]] = importlib.import_module(module).SEEN
    finally:
        sys.path.remove(str(folder))
    return f"{module}:agent", seen


def fuzzed(target: str, prompt: str = "Hi", **options: Any) -> tuple[int, list[str]]:
    said: list[str] = []
    settings = {"max_examples": 3, "database": None, "seed": 1, **options}
    return run_command(FuzzOptions(target, prompt=prompt, **settings), said.append), said


def examples(seen: list[dict[str, Any]]) -> list[list[Any]]:
    """What each example's run got (the probe's run, first, left out)."""
    return [run["got"] for run in seen[1:]]


def test_fuzzing_says_how_many_examples_passed_and_which_tools_the_agent_offers(here):
    target, seen = recorder(here)
    assert fuzzed(target) == (
        0,
        ["fuzzed 3 examples (the agent offers get_weather, get_time): no property broke"],
    )
    assert len(seen) == 4  # the probe, then 3 examples
    assert {(run["prompt"], run["live"]) for run in seen} == {("Hi", False)}
    plain, _ = recorder(here, tools=False)
    assert fuzzed(plain, max_examples=2) == (
        0,
        ["fuzzed 2 examples (the agent offers no tools): no property broke"],
    )


def test_the_kinds_given_narrow_what_the_model_does(here):
    target, seen = recorder(here)
    code, _ = fuzzed(
        target,
        tools=["get_time"],
        replies=["call"],
        arguments=["not_json"],
        faults=["none"],
        max_steps=1,
        max_examples=6,
    )
    assert code == 0
    got = examples(seen)
    assert all(len(run) <= 2 for run in got)  # one drawn answer at most, then the last
    calls = [item for run in got for item in run if not str(item).startswith("text")]
    assert calls
    assert set(calls) == {"get_time: not a JSON object"}, got


def test_faults_given_are_the_only_ones_played(here):
    target, seen = recorder(here)
    code, _ = fuzzed(target, replies=["text"], faults=["rate_limit"], max_examples=6)
    assert code == 0
    errors = {item for run in examples(seen) for item in run if not str(item).startswith("text")}
    assert errors == {429}


def test_unnarrowed_faults_are_the_defaults_for_where_the_agent_runs(here):
    target, seen = recorder(here)
    assert fuzzed(target, replies=["text"], max_examples=10)[0] == 0
    assert "APITimeoutError" in {item for run in examples(seen) for item in run}
    seen.clear()
    assert fuzzed(target, replies=["text"], max_examples=10, live=True)[0] == 0
    assert {run["live"] for run in seen} == {True}
    assert "APITimeoutError" not in {item for run in examples(seen) for item in run}


def test_a_failure_says_it_and_writes_the_script_in_the_folder_and_the_database(here):
    target, _ = recorder(here)
    code, said = fuzzed(
        target,
        "crash",
        replies=["refusal"],
        faults=["none"],
        folder=here / "found",
        database=here / "db",
        seed=None,  # hypothesis keeps no failure of a seeded run
    )
    assert code == 1
    (written,) = (here / "found").iterdir()
    (message,) = said
    assert message.startswith("agentrig fuzz: a generated script breaks the agent (example 1")
    assert f"Written to {written};" in message
    assert "KeyError: 'refused'" in message
    assert any((here / "db").rglob("*"))


def test_the_documented_errors_and_every_call_answered_are_the_properties_asked_for(here):
    target, _ = recorder(here)
    refusals = {"replies": ["refusal"], "faults": ["none"], "max_examples": 2}
    assert fuzzed(target, "crash", raises=["builtins:KeyError"], **refusals)[0] == 0
    assert fuzzed(target, "crash", raises=["builtins:ValueError"], **refusals)[0] == 1
    calls = {"replies": ["call"], "faults": ["none"], "max_examples": 2}
    assert fuzzed(target, "drop", **calls)[0] == 0
    code, said = fuzzed(target, "drop", answers_every_call=True, **calls)
    assert code == 1
    assert "answers_every_tool_call: the agent returned without answering" in said[0]


def test_a_raises_reference_that_is_no_exception_class_is_refused(here):
    with pytest.raises(ConfigurationError) as refused:
        fuzzed("x:y", raises=["builtins:len"])
    assert str(refused.value) == "--raises 'builtins:len' names no exception class"
    with pytest.raises(ConfigurationError) as refused:
        fuzzed(None, prompt=None)  # type: ignore[arg-type]
    assert str(refused.value) == (
        "agentrig fuzz: give the agent (TARGET) and --prompt, or --replay FILE"
    )


def test_a_seed_draws_the_same_scripts_again_and_none_draws_others(here):
    target, seen = recorder(here)
    fuzzed(target, replies=["text"], faults=["none"])
    first = examples(seen)
    seen.clear()
    fuzzed(target, replies=["text"], faults=["none"])
    assert examples(seen) == first
    seen.clear()
    fuzzed(target, replies=["text"], faults=["none"], seed=None)
    assert examples(seen) != first


def test_a_replay_plays_the_file_with_the_options_given(here):
    target, seen = recorder(here)
    refusals = {"replies": ["refusal"], "faults": ["none"], "folder": here}
    assert fuzzed(target, "crash", **refusals)[0] == 1
    (path,) = here.glob("*.scenario.yaml")
    seen.clear()

    def replayed(agent: str | None = None, **options: Any) -> tuple[int, list[str]]:
        said: list[str] = []
        return run_command(FuzzOptions(agent, replay=path, **options), said.append), said

    code, said = replayed()
    assert code == 1
    assert said[0].startswith(f"agentrig fuzz: the script of {path}")
    assert seen[-1]["prompt"] == "crash"
    assert replayed(raises=["builtins:KeyError"]) == (0, [f"replayed {path}: no property broke"])
    assert replayed(prompt="crash loop", max_model_calls=2, live=True)[0] == 1
    assert seen[-1] == {"live": True, "prompt": "crash loop", "got": ["asked", "asked", 400]}
    plain, plain_seen = recorder(here, tools=False)  # another agent than the file's
    assert replayed(plain)[0] == 1
    assert [run["prompt"] for run in plain_seen] == ["crash"]


def test_the_endpoint_refuses_requests_past_max_model_calls(here):
    target, seen = recorder(here)
    code, said = fuzzed(target, "loop", max_model_calls=2, faults=["none"], max_examples=1)
    assert code == 1
    assert "the agent made 3 model calls, more than 2" in said[0]
    assert len(seen) >= 2  # the probe, then the example (and its replays while shrinking)
    assert all(run["got"] == ["asked", "asked", 400] for run in seen)


def test_a_raises_reference_that_cannot_be_resolved_is_named(here):
    with pytest.raises(ConfigurationError) as refused:
        fuzzed("x:y", raises=["nowhere_at_all:Error"])
    assert str(refused.value).startswith(
        "--raises 'nowhere_at_all:Error': cannot import module 'nowhere_at_all'"
    )


def test_each_run_draws_anew_whatever_the_active_profile(here):
    target, seen = recorder(here)
    previous = settings.get_current_profile_name()
    settings.register_profile("agentrig-derandomized", derandomize=True)
    settings.load_profile("agentrig-derandomized")
    try:
        fuzzed(target, replies=["text"], faults=["none"], seed=None)
        first = examples(seen)
        seen.clear()
        fuzzed(target, replies=["text"], faults=["none"], seed=None)
    finally:
        settings.load_profile(previous)
    assert examples(seen) != first
