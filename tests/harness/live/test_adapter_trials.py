"""An adapter agent's model calls through the trial's gate (``current_trial().http_client()``):
capped, budgeted, costed at ``agent.price``, recorded with the trial; and the recorded trial
converts to a scenario that ``agentrig run`` plays back to the adapter through the scenario
endpoint, ending as the trial did. The agent here is a plain openai-SDK loop; the scenario
endpoint on loopback plays its model, the simulated user and the judge (examples/live/models)."""

from __future__ import annotations

import json
import shutil
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

EXAMPLE = Path(__file__).parents[3] / "examples" / "live"

AGENT = """\
import json

from openai import AsyncOpenAI

from agentrig.harness.live import current_trial

TOOLS = [{"type": "function", "function": {
    "name": "issue_refund",
    "description": "Refund an order that arrived damaged.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"], "additionalProperties": False},
}}]


async def reply(conversation):
    client = AsyncOpenAI(http_client=current_trial().http_client(), max_retries=0)
    messages = [{"role": "system", "content": "You handle refunds for a shop."}, *conversation]
    made = []
    while True:
        answer = await client.chat.completions.create(
            model="gpt-4.1-mini", messages=messages, tools=TOOLS
        )
        message = answer.choices[0].message
        if not message.tool_calls:
            return {"content": message.content or "", "tool_calls": made}
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)
            made.append({"name": call.function.name, "arguments": arguments})
            result = f"refund for {arguments['order_id']} issued"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
"""

# The agent's model (models/agent.scenario.yaml) at 0.4 and 1.6 USD per million tokens: it asks
# for the order (120 in, 12 out), then refunds (a call, 160/18, and the answer, 200/14) or
# refuses (160/9).
ASKS = 120 * 0.4 + 12 * 1.6
REFUNDS = ASKS + 160 * 0.4 + 18 * 1.6 + 200 * 0.4 + 14 * 1.6
REFUSES = ASKS + 160 * 0.4 + 9 * 1.6
CALLS = {"success": 3, "failure": 2}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The example with the SDK agent as its adapter (deciding sooner: ``decide_sooner``), the
    endpoint serving its models."""
    folder = tmp_path / "project"
    shutil.copytree(EXAMPLE, folder)
    decide_sooner(folder)
    (folder / "sdk_agent.py").write_text(AGENT)
    scenario = folder / "refund.scenario.yaml"
    text = scenario.read_text()
    adapter = 'agent: {adapter: "sdk_agent:reply", price: {input: 0.4, output: 1.6}}'
    scenario.write_text(text.replace('agent: {builder: "refund_agent:build"}', adapter))
    endpoint = ScenarioEndpoint(load_scenarios([folder / "models"]))
    with EndpointServer(endpoint) as server:
        monkeypatch.chdir(folder)
        monkeypatch.syspath_prepend(str(folder))
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "refund-model")
        monkeypatch.setenv("REFUND_USER_KEY", "refund-user")
        monkeypatch.setenv("REFUND_JUDGE_KEY", "refund-judge")
        yield folder


def run_live(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        app,
        ["run", "--live", "refund.scenario.yaml", "--report-dir", "reports", "-q", *args],
    )
    assert "Traceback" not in result.output, result.output
    report = json.loads(Path("reports/report.json").read_text())
    return result.exit_code, report["scenarios"][0]


def trial_folders(status: str) -> list[Path]:
    return [
        path.parent
        for path in sorted(Path(".agentrig/cache").glob("*/*/trial-*/outcome.json"))
        if json.loads(path.read_text())["status"] == status
    ]


@pytest.mark.slow
def test_an_adapters_calls_are_costed_counted_and_recorded_by_the_gate(project: Path) -> None:
    code, scenario = run_live("--run-id", "gate")
    assert code == 0, scenario["failures"]
    live = scenario["live"]
    assert live["verdict"] == "PASS"
    for record in live["records"]:
        expected = REFUNDS if record["status"] == "success" else REFUSES
        assert record["cost"]["agent"] * 1e6 == pytest.approx(expected), record
        assert record["calls"]["agent"] == CALLS[record["status"]], record
    for status in ("success", "failure"):
        folder = trial_folders(status)[0]
        cassette = (folder / "agent.cassette.yaml").read_text()
        assert cassette.count("- request:") == CALLS[status]
    # a second run replays the adapter's replies: no model call, each trial costing the same
    # (the run's total differs: the first paid for trials cancelled once the verdict came)
    code, again = run_live("--run-id", "gate")
    assert code == 0
    assert again["live"]["model_calls"]["agent"] == 0
    assert (again["live"]["trials"], again["live"]["successes"]) == (
        live["trials"],
        live["successes"],
    )
    replayed = {r["index"]: r["cost"]["agent"] for r in again["live"]["records"] if r["counted"]}
    ran = {r["index"]: r["cost"]["agent"] for r in live["records"] if r["counted"]}
    assert replayed == pytest.approx(ran)


@pytest.mark.slow
def test_an_adapter_trial_converts_to_a_scenario_agentrig_run_plays_to_the_adapter(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _ = run_live("--run-id", "convert")
    assert code == 0
    monkeypatch.delenv("OPENAI_BASE_URL")  # in CI: no endpoint, no model
    runner = CliRunner()
    for status in ("success", "failure"):
        target = f"{status}.scenario.yaml"
        converted = runner.invoke(app, ["convert", str(trial_folders(status)[0]), "-o", target])
        assert converted.exit_code == 0, converted.output
        assert "adapter: sdk_agent:reply" in Path(target).read_text()
        ran = runner.invoke(app, ["run", target, "--report-dir", f"reports-{status}", "-q"])
        assert ran.exit_code == (0 if status == "success" else 1), ran.output
        report = json.loads(Path(f"reports-{status}/report.json").read_text())
        failures = report["scenarios"][0]["failures"]
        if status == "success":
            assert failures == []
        else:  # fails as the trial did: the refund the judge checked for was never made
            assert [f["kind"] for f in failures] == ["expectation"], failures
            assert "issue_refund" in json.dumps(failures)


def test_a_spent_budget_stops_an_adapters_model_calls(project: Path) -> None:
    code, scenario = run_live("--no-cache", "--budget-usd", "0.0005", "--run-id", "budget")
    live = scenario["live"]
    assert live["partial"] == "the budget is spent", live
    assert live["cost"]["agent"] > 0
    assert code in (1, 3)


def test_a_builder_trial_has_no_http_client() -> None:
    from agentrig.errors import ConfigurationError
    from agentrig.harness.live.trial import TrialContext

    with pytest.raises(
        ConfigurationError, match=r"only an agent\.adapter trial has an HTTP client"
    ):
        TrialContext("s", 0, 1, 0).http_client()
