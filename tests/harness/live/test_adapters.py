"""The adapters of examples/live/ (pydantic-ai, the OpenAI Agents SDK, LangGraph), each the
agent of the example's live scenario, run offline as docs/live.md shows: the scenario endpoint on
loopback plays the agent's model, the simulated user and the judge; the adapters reach it
through OPENAI_BASE_URL and tell the trials apart by the ``x-agentrig-trial`` header."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sooner import decide_sooner
from typer.testing import CliRunner

from agentrig.harness.cli import app
from agentrig.harness.endpoint.server import EndpointServer
from agentrig.harness.endpoint.service import ScenarioEndpoint
from agentrig.harness.scenarios.loader import load_scenarios

ROOT = Path(__file__).parents[3]
EXAMPLE = ROOT / "examples" / "live"
DOC = ROOT / "docs" / "live.md"

ADAPTERS = {
    "pydantic_ai": "refund_pydantic_ai",
    "agents": "refund_openai_agents",
    "langgraph": "refund_langgraph",
}
"""The framework each example needs (its import name), and the example's module."""

# USD of the agent's replies in one trial, from the usage models/agent.scenario.yaml scripts at
# gpt-4.1-mini's prices (0.4 and 1.6 per million tokens): it asks for the order (120 in, 12 out),
# then refunds (a call, 160/18, and the answer, 200/14) or refuses (160/9).
ASKS = 120 * 0.4 + 12 * 1.6
REFUNDS = ASKS + 160 * 0.4 + 18 * 1.6 + 200 * 0.4 + 14 * 1.6
REFUSES = ASKS + 160 * 0.4 + 9 * 1.6


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, ScenarioEndpoint, dict[str, str]]]:
    """The example copied to a project folder (deciding sooner: ``decide_sooner``), the
    endpoint serving its models, and the
    environment docs/live.md exports (the frameworks' clients read OPENAI_BASE_URL and
    OPENAI_API_KEY)."""
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    decide_sooner(project)
    endpoint = ScenarioEndpoint(load_scenarios([project / "models"]))
    with EndpointServer(endpoint) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.openai_base_url,
            "OPENAI_API_KEY": "refund-model",
            "REFUND_USER_KEY": "refund-user",
            "REFUND_JUDGE_KEY": "refund-judge",
            "OPENAI_AGENTS_DISABLE_TRACING": "1",  # no trace upload to the OpenAI platform
        }
        yield project, endpoint, env


# a run id of its own: which sessions refund is drawn from the trial keys, the same each time
COMMAND = ["run", "--live", "refund.scenario.yaml", "--report-dir", "reports", "-q"]
COMMAND += ["--run-id", "adapters"]


def run_live(project: Path, env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """``agentrig run --live refund.scenario.yaml`` in a process of its own, as a user runs it
    (the frameworks' HTTP clients outlive the run's event loop there, not in the tests')."""
    done = subprocess.run(
        [sys.executable, "-c", "from agentrig.harness.cli import main; main()", *COMMAND],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1, 3), done.stdout + done.stderr
    return done.returncode, live_report(project)


def replay_here(
    project: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, dict[str, Any]]:
    """The same command again, in this process: every trial comes from the cache, so no
    framework client is made (a fresh interpreter spent its time importing the framework)."""
    monkeypatch.chdir(project)
    modules = set(sys.modules)
    try:
        result = CliRunner().invoke(app, COMMAND, env=env)
    finally:
        for name in set(sys.modules) - modules:  # the example's modules: each test has a copy
            if str(getattr(sys.modules[name], "__file__", "")).startswith(str(project)):
                del sys.modules[name]
    assert result.exit_code in (0, 1, 3), result.output
    return result.exit_code, live_report(project)


def live_report(project: Path) -> dict[str, Any]:
    """The live part of the run's JSON report."""
    report = json.loads((project / "reports" / "report.json").read_text())
    live: dict[str, Any] = report["scenarios"][0]["live"]
    return live


@pytest.mark.slow
@pytest.mark.parametrize("framework", sorted(ADAPTERS))
def test_an_adapter_agent_is_measured_offline_and_replayed(
    served: tuple[Path, ScenarioEndpoint, dict[str, str]],
    framework: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip(framework, reason="needs the frameworks extra")
    project, endpoint, env = served
    scenario = project / "refund.scenario.yaml"
    text = scenario.read_text()
    agent = f'agent: {{adapter: "{ADAPTERS[framework]}:reply", price: {{input: 0.4, output: 1.6}}}}'
    scenario.write_text(re.sub(r"^agent: .*$", agent, text, count=1, flags=re.M))

    code, live = run_live(project, env)
    assert (code, live["verdict"]) == (0, "PASS"), live["reason"]
    # the agent's model (a mixture: 60% of sessions refund) is the only source of failures,
    # and every trial's cost is the usage of the calls that passed the trial's gate, at
    # agent.price: 2 calls a refusing trial, 3 a refunding one
    calls = 0
    for record in live["records"]:
        calls += 3 if record["status"] == "success" else 2
        assert record["status"] in ("success", "failure"), record
        expected = REFUNDS if record["status"] == "success" else REFUSES
        assert record["cost"]["agent"] * 1e6 == pytest.approx(expected), record
    assert any(r["status"] == "failure" for r in live["records"])
    assert live["model_calls"]["agent"] >= calls
    # every request the endpoint was sent passed its wire checks (the system prompt, the tools
    # as declared, a history that only grows): one session per trial
    broken = [f for r in endpoint.results() for f in r.failures if f.kind == "invariant"]
    assert broken == []

    code, replayed = replay_here(project, env, monkeypatch)
    assert code == 0
    assert replayed["model_calls"] == {"agent": 0, "user": 0, "judge": 0}
    assert (replayed["trials"], replayed["successes"]) == (live["trials"], live["successes"])


@pytest.mark.parametrize("module", sorted(ADAPTERS.values()))
def test_docs_live_shows_each_adapter_example_as_it_is(module: str) -> None:
    code = (EXAMPLE / f"{module}.py").read_text()
    body = code[code.index("from __future__ import annotations") :]
    assert body in DOC.read_text(), f"docs/live.md no longer shows examples/live/{module}.py"
