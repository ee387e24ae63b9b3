"""Scripted suites on a Dask cluster: one task per scenario, results back in order, reports
equal to a local run's but for wall times, a worker killed mid-suite costing nothing, Ctrl-C
cancelling what has not finished."""

from __future__ import annotations

import gc
import os
import signal
import time
from pathlib import Path

import pytest
from distributed import Client

from agentrig.errors import ConfigurationError
from agentrig.harness.reporting import write_reports
from agentrig.harness.results import ScenarioResult, SuiteResult
from agentrig.harness.scale.cluster import DaskExecutor, dask_client
from agentrig.harness.scale.suite import run_suite_on_dask
from agentrig.harness.scenarios.loader import load_suite
from agentrig.harness.scenarios.model import Scenario
from agentrig.harness.suites.suite import run_suite

BUNDLED = Path(__file__).parents[3] / "scenarios"


def bundled(*folders: str) -> list[Scenario]:
    return list(load_suite([BUNDLED / folder for folder in folders]).scenarios)


def without_wall_times(result: SuiteResult) -> SuiteResult:
    scenarios = tuple(s.model_copy(update={"wall_time_s": 0.0}) for s in result.scenarios)
    return SuiteResult(scenarios=scenarios, wall_time_s=0.0)


def reports(result: SuiteResult, folder: Path) -> dict[str, str]:
    written = write_reports(
        without_wall_times(result), folder, ["junit", "json", "markdown", "html"]
    )
    return {path.name: path.read_text(encoding="utf-8") for path in written}


def test_a_dask_run_writes_the_reports_a_local_run_does(tmp_path: Path, cluster: Client) -> None:
    scenarios = bundled("tools", "stop-reasons")
    here = run_suite(scenarios)
    there = run_suite_on_dask(cluster, scenarios)
    assert [s.name for s in there.scenarios] == [s.name for s in scenarios]
    assert reports(there, tmp_path / "dask") == reports(here, tmp_path / "local")
    assert len(here.scenarios) > 10


def test_progress_hears_each_result_once_and_the_suite_keeps_the_scenarios_order(
    cluster: Client,
) -> None:
    scenarios = bundled("tools", "budgets")
    heard: list[str] = []
    result = run_suite_on_dask(cluster, scenarios, progress=lambda one: heard.append(one.name))
    assert sorted(heard) == sorted(s.name for s in scenarios)
    assert [one.name for one in result.scenarios] == [s.name for s in scenarios]


def test_results_stream_in_with_the_collector_off_and_it_is_back_on_after(
    cluster: Client,
) -> None:
    collecting: list[bool] = []
    result = run_suite_on_dask(
        cluster, bundled("tools"), progress=lambda one: collecting.append(gc.isenabled())
    )
    assert all(one.passed for one in result.scenarios)
    assert collecting == [False] * len(result.scenarios)
    assert gc.isenabled()


def test_ctrl_c_cancels_what_has_not_finished(cluster: Client) -> None:
    scenarios = bundled("tools") * 3
    heard: list[ScenarioResult] = []

    def interrupt(result: ScenarioResult) -> None:
        heard.append(result)
        if len(heard) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_suite_on_dask(cluster, scenarios, progress=interrupt)
    assert len(heard) == 3
    assert gc.isenabled()  # the collector, off while results came in, is back on
    deadline = time.monotonic() + 5
    while _scenario_tasks(cluster) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _scenario_tasks(cluster) == 0


def _scenario_tasks(client: Client) -> int:
    def count(dask_scheduler: object) -> int:
        tasks = dask_scheduler.tasks  # type: ignore[attr-defined]
        return sum(1 for key in tasks if str(key).startswith("agentrig-scenario-"))

    return int(client.run_on_scheduler(count))


def test_a_plugin_a_worker_cannot_import_fails_the_run_naming_it(cluster: Client) -> None:
    with pytest.raises(ConfigurationError, match=r"in a Dask worker: .*'no_such_plugin_mod'"):
        run_suite_on_dask(cluster, bundled("tools")[:2], plugins=["no_such_plugin_mod"])


@pytest.mark.slow
def test_a_worker_killed_mid_suite_loses_no_scenario_and_reports_none_twice() -> None:
    tools = bundled("tools")
    scenarios = tools * 10  # one task each; the scheduler sends all of them at once
    here = [result.passed for result in run_suite(tools).scenarios] * 10
    heard: list[str] = []
    with dask_client(DaskExecutor(), workers=2, short_tasks=True) as client:
        pids = client.run(os.getpid)

        def kill_one_when_busy(result: ScenarioResult) -> None:
            heard.append(result.name)
            if len(heard) == 20:  # the others are queued on both workers
                held = {worker: keys for worker, keys in client.processing().items() if keys}
                assert len(held) == 2
                os.kill(pids[min(held)], signal.SIGKILL)

        result = run_suite_on_dask(client, scenarios, progress=kill_one_when_busy)
        assert set(client.run(os.getpid).values()) != set(pids.values())  # one was replaced
        # off while each scenario ran, the workers' collector is on between them
        assert set(client.run(gc.isenabled).values()) == {True}
    assert len(heard) == len(scenarios)  # each result heard once
    assert [s.name for s in result.scenarios] == [s.name for s in scenarios]
    assert [s.passed for s in result.scenarios] == here
