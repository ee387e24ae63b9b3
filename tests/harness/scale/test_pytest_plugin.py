"""``pytest --agentrig-scenarios --agentrig-executor``: the collected scenarios run on a Dask
cluster, live trials (``--agentrig-live``) too, with the report of a local run; a bad executor
is a usage error."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from agentrig.harness.endpoint.server import EndpointServer
from agentrig.harness.endpoint.service import ScenarioEndpoint
from agentrig.harness.scenarios.loader import load_scenarios

SCENARIO = """\
name: {name}
agent: {{builder: "pid_agent:build"}}
turns:
  - user: hi
    model: [{{say: hello}}]
    expect: {{status: completed, final_response: hello}}
"""

AGENT = """\
import os

from agentrig import AgentBuilder


def build():
    with open(os.path.join(os.path.dirname(__file__), "built-in"), "a") as pids:
        pids.write(f"{os.getpid()}\\n")
    return AgentBuilder.base()
"""


def project(pytester: pytest.Pytester, count: int) -> None:
    pytester.syspathinsert()
    (pytester.path / "pid_agent.py").write_text(dedent(AGENT))
    for index in range(count):
        name = f"case-{index}"
        (pytester.path / f"{name}.scenario.yaml").write_text(SCENARIO.format(name=name))


def test_an_unknown_executor_is_a_usage_error(pytester: pytest.Pytester) -> None:
    project(pytester, 1)
    result = pytester.runpytest_inprocess("--agentrig-scenarios", "--agentrig-executor", "ray")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentrig-executor*'ray': write local, dask, or dask://*"])


@pytest.mark.slow
def test_the_scenarios_run_on_a_local_cluster(pytester: pytest.Pytester) -> None:
    project(pytester, 3)
    result = pytester.runpytest_inprocess("--agentrig-scenarios", "--agentrig-executor", "dask")
    result.assert_outcomes(passed=3)
    built_in = (pytester.path / "built-in").read_text().split()
    assert len(built_in) == 3
    assert str(os.getpid()) not in built_in  # each agent was built in a worker process
    here = pytester.runpytest_inprocess("--agentrig-scenarios")
    here.assert_outcomes(passed=3)
    assert (pytester.path / "built-in").read_text().split()[3:] == [str(os.getpid())] * 3


EXAMPLE = Path(__file__).parents[3] / "examples" / "live"


def live_report(pytester: pytest.Pytester, name: str, *executor: str) -> dict[str, Any]:
    """The JSON report of the example's trials run as a pytest item, against an endpoint of
    its own (every run has the same run id, so the same sessions' draws), wall times out."""
    endpoint = ScenarioEndpoint(load_scenarios([pytester.path / "models"]))
    with EndpointServer(endpoint) as server:
        os.environ["OPENAI_BASE_URL"] = server.openai_base_url
        result = pytester.runpytest_inprocess(
            "--agentrig-scenarios",
            "--agentrig-live",
            "--agentrig-live-run-id",
            "same",
            "--agentrig-live-cache",
            f"cache-{name}",
            "--agentrig-report-dir",
            name,
            *executor,
            "refund.scenario.yaml",
        )
    result.assert_outcomes(passed=1)
    report: dict[str, Any] = json.loads((pytester.path / name / "report.json").read_text())
    stripped: dict[str, Any] = _without_wall_times(report)
    return stripped


def _without_wall_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_wall_times(v) for k, v in value.items() if k != "wall_time_s"}
    if isinstance(value, list):
        return [_without_wall_times(item) for item in value]
    return value


@pytest.mark.slow
def test_live_trials_under_the_dask_executor_report_as_a_local_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True)
    scenario = pytester.path / "refund.scenario.yaml"
    # ten trials, all run (every trial's record is compared), and a rate they decide
    text = scenario.read_text().replace("  max: 150\n", "  max: 10\n  sequential: false\n")
    text = text.replace("at_least: 0.6", "at_least: 0.3")
    scenario.write_text(text)
    pytester.syspathinsert()  # the agent's module, for this process and the workers
    monkeypatch.setenv("OPENAI_BASE_URL", "")
    for variable, key in [
        ("OPENAI_API_KEY", "refund-model"),
        ("REFUND_USER_KEY", "refund-user"),
        ("REFUND_JUDGE_KEY", "refund-judge"),
    ]:
        monkeypatch.setenv(variable, key)
    local = live_report(pytester, "local")
    dask = live_report(pytester, "dask", "--agentrig-executor", "dask")
    live = local["scenarios"][0]["live"]
    assert (live["verdict"], live["trials"]) == ("PASS", 10)
    assert live["model_calls"]["agent"] > 0
    assert dask == local
