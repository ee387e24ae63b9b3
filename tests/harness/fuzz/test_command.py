"""``agentrig fuzz``: a 'module:function' agent or a command, the exit status, the written
scenario and its replay."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.harness.cli import app

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
import os, sys
from openai import OpenAI

prompt = sys.stdin.read()
with OpenAI() as client:  # OPENAI_BASE_URL and OPENAI_API_KEY name the endpoint
    message = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": prompt}]
    ).choices[0].message
print(message.content.upper())
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
