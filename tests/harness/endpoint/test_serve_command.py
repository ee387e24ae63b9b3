"""``agentrig serve SCENARIO -- COMMAND``: serve, run the agent command with the endpoint in its
environment, stop, report, and exit with the verdict (for CI)."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.harness.cli import app

from .conftest import WEATHER

pytest.importorskip("openai")
pytest.importorskip("uvicorn")

CONVERSATION = """\
import json, os, sys

assert os.environ["AGENTRIG_SCENARIO"] == "weather"
messages = [{"role": "system", "content": "You answer weather questions."},
            {"role": "user", "content": "Weather in Paris?"}]
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
"""

# the official SDK reads OPENAI_BASE_URL and OPENAI_API_KEY: the agent is not changed for the test
ON_THE_SDK = """\
import openai

client = openai.OpenAI(max_retries=0)

def create(messages):
    return client.chat.completions.create(
        model=MODEL, messages=messages, tools=tools).choices[0].message.model_dump(exclude_none=True)
"""

# The same requests on the standard library, from the same variables, for the tests whose point
# is the verdict, not the SDK: each agent importing openai cost 0.6 CPU s.
ON_THE_STANDARD_LIBRARY = """\
import urllib.request

def create(messages):
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=json.dumps({"model": MODEL, "messages": messages, "tools": tools}).encode(),
        headers={"content-type": "application/json",
                 "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(request) as answer:
        message = json.load(answer)["choices"][0]["message"]
    return {name: value for name, value in message.items() if value is not None}
"""

LOOP = """\
while True:
    message = create(messages)
    messages.append(message)
    if not message.get("tool_calls"):
        break
    for call in message["tool_calls"]:
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": "sunny"})
print("agent says:", message["content"])
sys.exit(EXIT)
"""


def _serve_running(
    tmp_path: Path,
    write_scenario: Callable[[str], Path],
    model: str,
    exit_code: int = 0,
    *,
    sdk: bool = False,
) -> tuple[int, str]:
    scenario = write_scenario(WEATHER)
    agent = tmp_path / "agent.py"
    client = ON_THE_SDK if sdk else ON_THE_STANDARD_LIBRARY
    script = CONVERSATION + client + LOOP
    agent.write_text(script.replace("MODEL", repr(model)).replace("EXIT", str(exit_code)))
    reports = tmp_path / "reports"
    outcome = CliRunner().invoke(
        app,
        ["serve", str(scenario), "--report-dir", str(reports), "--", sys.executable, str(agent)],
    )
    return outcome.exit_code, " ".join(outcome.output.split())  # as one line, unwrapped


def test_a_passing_agent_exits_0_with_the_reports(
    tmp_path: Path, write_scenario: Callable[[str], Path]
) -> None:
    code, output = _serve_running(tmp_path, write_scenario, "gpt-test", sdk=True)
    assert code == 0, output
    assert "running" in output
    assert "for weather" in output
    assert "1 passed, 0 failed" in output
    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    [scenario] = report["scenarios"]
    assert (scenario["name"], scenario["session"], scenario["passed"]) == (
        "weather",
        "weather",
        True,
    )
    junit = ET.parse(tmp_path / "reports" / "junit.xml").getroot()
    assert [case.get("name") for case in junit.iter("testcase")] == ["weather [weather]"]


def test_a_broken_agent_exits_1_with_the_diff(
    tmp_path: Path, write_scenario: Callable[[str], Path]
) -> None:
    code, output = _serve_running(tmp_path, write_scenario, "gpt-wrong")
    assert code == 1, output
    assert "requests 1 and 2: model_named: the request asks for model 'gpt-wrong'" in output


def test_an_agent_that_exits_with_an_error_fails_its_scenario(
    tmp_path: Path, write_scenario: Callable[[str], Path]
) -> None:
    code, output = _serve_running(tmp_path, write_scenario, "gpt-test", exit_code=3)
    assert code == 1, output
    assert "exited with status 3" in output
    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    [failure] = report["scenarios"][0]["failures"]
    assert failure["kind"] == "error"
    assert failure["message"].startswith("the agent command `")


def test_a_command_that_cannot_start_or_is_missing(
    tmp_path: Path, write_scenario: Callable[[str], Path]
) -> None:
    scenario = str(write_scenario(WEATHER))
    reports = str(tmp_path / "reports")
    missing = CliRunner().invoke(
        app, ["serve", scenario, "--report-dir", reports, "--", str(tmp_path / "no-such-agent")]
    )
    said = " ".join(missing.output.split())
    assert missing.exit_code == 1
    assert "could not be started" in said
    assert "turn 1 was never reached" in said
    empty = CliRunner().invoke(app, ["serve", scenario, "--"])
    assert empty.exit_code == 2
    assert "give the agent's command after --" in empty.output
