"""``agentrig run --live`` offline, as docs/live.md shows it: the scenario endpoint plays the
agent's model (a mixture that refunds in 80% of sessions; 60% where a test decides sooner),
the simulated user and the judge, over the openai SDK on loopback; the agent is
examples/live/refund_agent.py, unchanged."""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from sooner import decide_sooner
from typer.testing import CliRunner

from agentrig.harness.cli import app
from agentrig.harness.endpoint.server import EndpointServer
from agentrig.harness.endpoint.service import ScenarioEndpoint
from agentrig.harness.scenarios.loader import load_scenarios

EXAMPLE = Path(__file__).parents[3] / "examples" / "live"


def serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, sooner: bool
) -> Iterator[tuple[Path, ScenarioEndpoint]]:
    """The example copied to a project folder (``sooner``: rewritten to decide in fewer
    trials), the endpoint serving its models, the keys set."""
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    if sooner:
        decide_sooner(project)
    endpoint = ScenarioEndpoint(load_scenarios([project / "models"]))
    with EndpointServer(endpoint) as server:
        monkeypatch.chdir(project)
        monkeypatch.syspath_prepend(str(project))
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "refund-model")
        monkeypatch.setenv("REFUND_USER_KEY", "refund-user")
        monkeypatch.setenv("REFUND_JUDGE_KEY", "refund-judge")
        yield project, endpoint


@pytest.fixture
def offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, ScenarioEndpoint]]:
    """The example as docs/live.md runs it, served offline."""
    yield from serve(tmp_path, monkeypatch, sooner=False)


@pytest.fixture
def sooner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, ScenarioEndpoint]]:
    """The example rewritten to decide in fewer trials (``decide_sooner``), served offline."""
    yield from serve(tmp_path, monkeypatch, sooner=True)


def run_live(*args: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--live",
            "refund.scenario.yaml",
            "--report-dir",
            "reports",
            "-q",
            "--run-id",
            "offline",
            *args,
        ],
    )
    report = json.loads(Path("reports/report.json").read_text())
    return result.exit_code, report["scenarios"][0]


@pytest.mark.slow
def test_the_offline_run_passes_and_a_second_run_replays_it_with_no_model_call(
    offline: tuple[Path, ScenarioEndpoint],
) -> None:
    _, endpoint = offline
    code, scenario = run_live()
    assert code == 0, scenario["failures"]
    live = scenario["live"]
    assert live["verdict"] == "PASS"
    assert live["model_calls"]["agent"] > 0
    # every request the endpoint was sent passed its wire checks; the only sessions left
    # unfinished are those of trials cancelled once the verdict was reached
    results = endpoint.results()
    assert results
    broken = [f for r in results for f in r.failures if f.kind == "invariant"]
    assert broken == []
    unfinished = [f.message for r in results for f in r.failures]
    assert all("never reached" in m or "was never used" in m for m in unfinished), unfinished
    sessions = len(results)

    code, again = run_live()
    assert code == 0
    assert again["live"]["model_calls"] == {"agent": 0, "user": 0, "judge": 0}
    assert (again["live"]["verdict"], again["live"]["trials"], again["live"]["successes"]) == (
        live["verdict"],
        live["trials"],
        live["successes"],
    )
    assert len(endpoint.results()) == sessions  # the endpoint was not asked again


def test_a_requirement_above_the_agents_rate_fails(offline: tuple[Path, ScenarioEndpoint]) -> None:
    project, _ = offline
    text = (project / "refund.scenario.yaml").read_text()
    (project / "refund.scenario.yaml").write_text(text.replace("at_least: 0.6", "at_least: 0.95"))
    code, scenario = run_live("--no-cache", "--max-trials", "200")
    assert code == 1
    assert scenario["live"]["verdict"] == "FAIL"
    assert scenario["live"]["successes"] < scenario["live"]["trials"]


@pytest.mark.slow
def test_live_scenarios_run_as_pytest_items_only_when_asked(
    sooner: tuple[Path, ScenarioEndpoint], pytester: pytest.Pytester
) -> None:
    project, _ = sooner
    pytester.chdir()
    shutil.copytree(project, pytester.path, dirs_exist_ok=True)
    skipped = pytester.runpytest_inprocess("--agentrig-scenarios", "refund.scenario.yaml", "-q")
    skipped.assert_outcomes(skipped=1)
    ran = pytester.runpytest_inprocess(
        "--agentrig-scenarios",
        "--agentrig-live",
        "--agentrig-live-run-id",
        "items",
        "refund.scenario.yaml",
        "-q",
    )
    ran.assert_outcomes(passed=1)
    strict = (
        (pytester.path / "refund.scenario.yaml")
        .read_text()
        .replace("at_least: 0.3", "at_least: 0.95")
    )
    (pytester.path / "refund.scenario.yaml").write_text(strict)
    failed = pytester.runpytest_inprocess(
        "--agentrig-scenarios",
        "--agentrig-live",
        "--agentrig-live-cache",
        "fresh",
        "--agentrig-live-run-id",
        "items-strict",  # sessions of their own on the endpoint, the same draws every time
        "-q",
        "refund.scenario.yaml",
    )
    failed.assert_outcomes(failed=1)
    assert "FAIL" in failed.stdout.str()


def test_ctrl_c_mid_run_writes_the_reports_with_a_partial_verdict_and_exits_130(
    offline: tuple[Path, ScenarioEndpoint],
) -> None:
    project, _ = offline
    # a requirement at the agent's true rate (0.8) takes the sequential test long to decide
    text = (project / "refund.scenario.yaml").read_text()
    (project / "refund.scenario.yaml").write_text(text.replace("at_least: 0.6", "at_least: 0.8"))
    command = ["run", "--live", "refund.scenario.yaml", "--max-trials", "200"]
    process = subprocess.Popen(
        [sys.executable, "-c", "from agentrig.harness.cli import main; main()", *command],
        cwd=project,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 60
    while len(list(project.glob(".agentrig/cache/*/*/trial-*/outcome.json"))) < 3:
        assert process.poll() is None, process.communicate()[0]
        assert time.monotonic() < deadline, "no trial finished in 60 s"
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    output = process.communicate(timeout=60)[0]
    assert process.returncode == 130, output
    assert "Traceback" not in output
    assert "interrupted by Ctrl-C (SIGINT): 1 of 1 scenario(s) ran" in output
    assert "not finished as errors" not in output  # the scenario ended, with a partial verdict
    report = json.loads((project / "reports" / "report.json").read_text())
    live = report["scenarios"][0]["live"]
    assert live["partial"] == "interrupted"
    assert live["verdict"] in ("INCONCLUSIVE", "PASS", "FAIL")
    assert live["reason"].startswith("partial: interrupted after ")
    assert len(live["records"]) >= 3
    junit = (project / "reports" / "junit.xml").read_text()
    assert "partial: interrupted" in junit


@pytest.mark.slow
def test_a_recorded_trial_converts_to_a_ci_scenario_that_ends_as_it_did_live(
    sooner: tuple[Path, ScenarioEndpoint], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, scenario = run_live()
    assert code == 0, scenario
    folders = {
        outcome: next(
            path.parent
            for path in sorted(Path(".agentrig/cache").glob("*/*/trial-*/outcome.json"))
            if json.loads(path.read_text())["status"] == outcome
        )
        for outcome in ("success", "failure")
    }
    # in CI: no endpoint, and a key variable the builder reads but no model call uses
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    runner = CliRunner()
    for outcome, folder in folders.items():
        target = f"{outcome}.scenario.yaml"
        converted = runner.invoke(app, ["convert", str(folder), "-o", target])
        assert converted.exit_code == 0, converted.output
        ran = runner.invoke(app, ["run", target, "--report-dir", f"reports-{outcome}", "-q"])
        assert ran.exit_code == (0 if outcome == "success" else 1), ran.output
        if outcome == "failure":
            report = json.loads(Path("reports-failure/report.json").read_text())
            [failure] = report["scenarios"][0]["failures"]
            assert "missing issue_refund(order_id='A-1029')" in failure["message"], failure
    monkeypatch.delenv("OPENAI_API_KEY")
    unset = runner.invoke(app, ["run", "success.scenario.yaml", "--report-dir", "r"])
    assert unset.exit_code == 1
    assert "set OPENAI_API_KEY" in unset.output.replace("\n", " ")  # what docs/live.md quotes


@pytest.mark.slow
def test_a_live_run_leaves_no_connection_open(sooner: tuple[Path, ScenarioEndpoint]) -> None:
    # trials cancelled once the verdict is reached close their clients too: nothing is left
    # for the garbage collector to find open (what it finds is said as a ResourceWarning).
    # What earlier tests in this process left is collected first: this run's own is checked.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        code, scenario = run_live("--no-cache")
        gc.collect()
    assert code == 0, scenario
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []
