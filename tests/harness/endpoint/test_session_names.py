"""Many agents on one server: each session is named (by the name its client sends in
``x-agentrig-trial``, else by its API key) in every report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from agentrig.harness.endpoint.server import EndpointServer
from agentrig.harness.endpoint.service import ScenarioEndpoint
from agentrig.harness.reporting import write_reports
from agentrig.harness.reporting.terminal import format_scenario_failures
from agentrig.harness.results import SuiteResult
from agentrig.harness.scenarios.loader import load_scenario

from .conftest import WEATHER
from .sdk_agents import SYSTEM, chat_agent

openai = pytest.importorskip("openai")
pytest.importorskip("uvicorn")

REAL_LOOKING = "sk-proj-" + "x" * 40 + "Wxyz"


def _ask(base_url: str, key: str, headers: dict[str, str] | None = None) -> str:
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    with openai.OpenAI(
        api_key=key, base_url=base_url, max_retries=0, default_headers=headers
    ) as client:
        return chat_agent(client, messages)


def test_each_session_is_named_in_every_report(
    tmp_path: Path, write_scenario: Callable[[str], Path]
) -> None:
    scenario = load_scenario(write_scenario(WEATHER.replace("content: sunny", "contains: sunny")))
    endpoint = ScenarioEndpoint([scenario])
    with EndpointServer(endpoint) as server:
        _ask(server.openai_base_url, "alice")
        _ask(server.openai_base_url, REAL_LOOKING)
        # two agents on one key, each naming its own session
        _ask(server.openai_base_url, "shared", {"x-agentrig-trial": "refunds-agent"})
        _ask(server.openai_base_url, "shared", {"x-agentrig-trial": "triage-agent"})
        with openai.OpenAI(api_key="bob", base_url=server.openai_base_url) as client:
            client.chat.completions.create(  # bob's agent asks the wrong model, then stops
                model="gpt-wrong", messages=[{"role": "user", "content": "Weather in Paris?"}]
            )
    results = endpoint.results()
    names = ["alice", "sk-…Wxyz", "refunds-agent", "triage-agent", "bob"]
    assert [result.session for result in results] == names
    assert [result.passed for result in results] == [True, True, True, True, False]
    write_reports(SuiteResult(scenarios=tuple(results), wall_time_s=0.0), tmp_path)

    titles = [f"weather [{name}]" for name in names]
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    assert [case.get("name") for case in junit.iter("testcase")] == titles
    report = json.loads((tmp_path / "report.json").read_text())
    assert [entry["session"] for entry in report["scenarios"]] == names
    html = (tmp_path / "report.html").read_text()
    for title in titles:
        assert f'<span class="name">{title}</span>' in html
    assert len(set(_ids(html))) == len(_ids(html)) == 5  # one card each, anchors unique
    markdown = (tmp_path / "report.md").read_text()
    assert all(f"| weather \\[{name}\\] |" in markdown for name in names)  # [ ] escaped
    assert REAL_LOOKING not in html + markdown + json.dumps(report)
    assert format_scenario_failures(results[-1]).startswith("scenario weather [bob] (")


def _ids(html: str) -> list[str]:
    return [part.split('"', 1)[0] for part in html.split('class="scenario" id="')[1:]]


def test_sessions_named_alike_are_told_apart(write_scenario: Callable[[str], Path]) -> None:
    endpoint = ScenarioEndpoint([load_scenario(write_scenario(WEATHER))])
    first = endpoint.session("key-1", "agent")
    second = endpoint.session("key-2", "agent")
    assert (first.name, second.name) == ("agent", "agent#2")
    assert endpoint.session("key-1", "agent") is first
