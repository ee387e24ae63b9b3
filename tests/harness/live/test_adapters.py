"""The adapters of examples/live/ (pydantic-ai, the OpenAI Agents SDK, LangGraph), each the
agent of the example's live scenario, run offline as docs/live.md shows: the scenario endpoint on
loopback plays the agent's model, the simulated user and the judge; the adapters reach it
through OPENAI_BASE_URL and tell the trials apart by the ``x-agentrig-trial`` header."""

from __future__ import annotations

import gc
import json
import os
import re
import shutil
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

GROUPS = {"pydantic_ai": "pydantic-ai", "agents": "openai-agents", "langgraph": "langgraph"}
"""The xdist group of each framework's tests (tests/examples/endpoint/): the run here goes to
the worker that imports the framework for those (1.3-2 CPU s each), not to another that would
import it again."""

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


def run_here(
    project: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, dict[str, Any]]:
    """``agentrig run --live refund.scenario.yaml`` as docs/live.md runs it, in this process: a
    process of its own would import the framework again (about 2 CPU s of the 2.5 each run
    took), where this worker imported it once for all its tests. What the run leaves (its tasks,
    the framework's objects) is collected before the test ends, under its warning filters."""
    monkeypatch.chdir(project)
    modules = set(sys.modules)
    try:
        result = CliRunner().invoke(app, COMMAND, env=env)
    finally:
        for name in set(sys.modules) - modules:  # the example's modules: each run imports them
            if str(getattr(sys.modules[name], "__file__", "")).startswith(str(project)):
                del sys.modules[name]
        gc.collect()
    assert result.exit_code in (0, 1, 3), result.output
    return result.exit_code, live_report(project)


def live_report(project: Path) -> dict[str, Any]:
    """The live part of the run's JSON report."""
    report = json.loads((project / "reports" / "report.json").read_text())
    live: dict[str, Any] = report["scenarios"][0]["live"]
    return live


@pytest.mark.slow
@pytest.mark.parametrize(
    "framework",
    [pytest.param(name, marks=pytest.mark.xdist_group(GROUPS[name])) for name in sorted(ADAPTERS)],
)
# The Agents SDK runs each turn as a task of a coroutine: a trial cancelled at the verdict before
# that task started leaves the coroutine unawaited (the SDK's; a run's own process exits before
# collecting it, this one collects it in run_here).
@pytest.mark.filterwarnings("ignore:coroutine 'run_single_turn' was never awaited:RuntimeWarning")
def test_an_adapter_agent_is_measured_offline_and_replayed(
    served: tuple[Path, ScenarioEndpoint, dict[str, str]],
    framework: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = pytest.importorskip(framework, reason="needs the frameworks extra")
    if framework == "agents":  # as OPENAI_AGENTS_DISABLE_TRACING does in a process of its own:
        module.set_tracing_disabled(True)  # the SDK read it once, maybe before this test
    project, endpoint, env = served
    scenario = project / "refund.scenario.yaml"
    text = scenario.read_text()
    agent = f'agent: {{adapter: "{ADAPTERS[framework]}:reply", price: {{input: 0.4, output: 1.6}}}}'
    scenario.write_text(re.sub(r"^agent: .*$", agent, text, count=1, flags=re.M))

    code, live = run_here(project, env, monkeypatch)
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

    code, replayed = run_here(project, env, monkeypatch)  # every trial from the cache
    assert code == 0
    assert replayed["model_calls"] == {"agent": 0, "user": 0, "judge": 0}
    assert (replayed["trials"], replayed["successes"]) == (live["trials"], live["successes"])


@pytest.mark.parametrize("module", sorted(ADAPTERS.values()))
def test_docs_live_shows_each_adapter_example_as_it_is(module: str) -> None:
    code = (EXAMPLE / f"{module}.py").read_text()
    body = code[code.index("from __future__ import annotations") :]
    assert body in DOC.read_text(), f"docs/live.md no longer shows examples/live/{module}.py"
