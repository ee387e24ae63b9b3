"""Live trials on a Dask cluster: the same verdict and report as in one process, the cache
written here alone, the caps and budgets held across the workers, a worker killed mid-run
costing nothing, an interrupted run ending with a partial verdict."""

from __future__ import annotations

import asyncio
import os
import signal
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import refund_app
import scale_app
from distributed import Client

from agentrig.harness.live.budget import Budget
from agentrig.harness.live.limits import ProviderLimits, Traffic
from agentrig.harness.live.run import LiveRun, run_live_scenario
from agentrig.harness.live.suite import live_scenario_result
from agentrig.harness.live.trial import TrialOutcome, TrialSetup
from agentrig.harness.live_results import LiveResult
from agentrig.harness.reporting import write_reports
from agentrig.harness.results import SuiteResult
from agentrig.harness.scale.cluster import DaskExecutor, dask_client
from agentrig.harness.scale.control import ClusterLimits
from agentrig.harness.scale.trials import DaskTrials
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import Scenario

SCENARIO = """
name: refund
agent: {builder: "refund_app:build"}
user:
  persona: Dana, terse
  goal: a refund for her broken mug
  knows: {order_id: A-1029}
  stop: {max_turns: 3, not_before_tool: [issue_refund]}
  model: {provider: openai, name: gpt-4.1-mini}
judge:
  criteria:
    - {id: refunded, check: {tool_called: "issue_refund(order_id=A-1029)"}}
    - {id: polite, rubric: the agent never blames the customer}
  model: {provider: openai, name: gpt-4.1}
trials: {TRIALS}
"""


def scenario(tmp_path: Path, trials: str) -> Scenario:
    path = tmp_path / "refund.scenario.yaml"
    path.write_text(textwrap.dedent(SCENARIO).replace("{TRIALS}", trials))
    return load_scenario(path)


def run(loaded: Scenario, client: Client | None = None, **options: object) -> LiveResult:
    """``loaded``'s trials, in this process or (``client``) on its cluster."""
    limits = options.pop("limits", None)
    live = LiveRun(models=options.pop("models", scale_app.models()), run_id="r", **options)  # type: ignore[arg-type]
    trials = None
    if client is not None:
        trials = live.launcher = DaskTrials(client, limits)  # type: ignore[arg-type]
    try:
        return asyncio.run(run_live_scenario(loaded, live))
    finally:
        if trials is not None:
            trials.close()


def reports(loaded: Scenario, result: LiveResult, folder: Path) -> dict[str, str]:
    """Every report of a suite of ``loaded`` alone, its wall times set to 0."""
    suite = SuiteResult(scenarios=(live_scenario_result(loaded, result, 0.0),), wall_time_s=0.0)
    written = write_reports(suite, folder, ["junit", "json", "markdown", "html"])
    return {path.name: path.read_text(encoding="utf-8") for path in written}


def test_a_dask_run_reports_what_a_local_run_does(
    tmp_path: Path, cluster: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 0.7)
    loaded = scenario(
        tmp_path, "{require: {metric: rate, at_least: 0.6}, max: 24, sequential: false, seed: 5}"
    )
    here = run(loaded)
    there = run(loaded, cluster)
    assert there == here
    assert 0 < here.successes < here.trials == 24
    assert reports(loaded, there, tmp_path / "dask") == reports(loaded, here, tmp_path / "local")


def test_a_sequential_verdict_is_the_same_whatever_runs_the_trials(
    tmp_path: Path, cluster: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 0.9)
    loaded = scenario(
        tmp_path, "{require: {metric: rate, at_least: 0.6}, max: 60, seed: 3, concurrency: 8}"
    )
    here, there = run(loaded), run(loaded, cluster)
    assert (there.verdict, there.trials, there.successes) == (
        here.verdict,
        here.trials,
        here.successes,
    )
    counted = [(r.index, r.status) for r in there.records if r.counted]
    assert counted == [(r.index, r.status) for r in here.records if r.counted]


def test_this_process_alone_writes_the_cache_and_a_second_run_replays_it(
    tmp_path: Path, cluster: Client
) -> None:
    loaded = scenario(
        tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 6, sequential: false}"
    )
    cache = tmp_path / "cache"
    first = run(loaded, cluster, cache_dir=str(cache))
    kept = sorted(p.parent.name for p in cache.rglob("outcome.json"))
    assert kept == [f"trial-{i}.0" for i in sorted(range(6), key=str)]
    again = run(loaded, cluster, cache_dir=str(cache))
    assert again.replayed_trials == 6
    assert again.model_calls == {"agent": 0, "user": 0, "judge": 0}
    locally = run(loaded, cache_dir=str(cache))  # a local run replays what the cluster ran
    assert locally.replayed_trials == 6
    assert (
        (again.verdict, again.successes)
        == (locally.verdict, locally.successes)
        == (
            first.verdict,
            first.successes,
        )
    )


def test_a_providers_cap_holds_across_the_workers(tmp_path: Path, cluster: Client) -> None:
    loaded = scenario(
        tmp_path,
        "{require: {metric: rate, at_least: 0.5}, max: 12, sequential: false, concurrency: 12}",
    )
    result = run(
        loaded, cluster, models=scale_app.models(delay=0.02), limits=ClusterLimits({"openai": 3})
    )
    assert result.trials == 12
    assert len(scale_app.WORKERS) == 2  # both workers made calls
    assert scale_app.IN_FLIGHT["most"] == 3  # 12 trials at once, 3 calls in flight in all


def spent_on(
    client: Client, loaded: Scenario, limits: ClusterLimits, delay: float = 0.0
) -> tuple[LiveResult, dict[str, float]]:
    """``loaded``'s trials on ``client``'s cluster, with what each budget saw spent."""
    live = LiveRun(models=scale_app.models(delay), run_id="r")
    trials = live.launcher = DaskTrials(client, limits)
    try:
        return asyncio.run(run_live_scenario(loaded, live)), trials.spent()
    finally:
        trials.close()


# Every call goes through the budgets under a lease: the agent's (its provider "function") and
# the user's and judge's ("openai"), so at most 2 x CAP calls are in flight when a budget is
# reached, each costing at most an agent call.
CAP = 4
OVERSHOOT = 2 * CAP * refund_app.AGENT_CALL_COST


def test_the_runs_budget_holds_across_the_workers(tmp_path: Path, cluster: Client) -> None:
    loaded = scenario(
        tmp_path,
        "{require: {metric: rate, at_least: 0.5}, max: 40, sequential: false, concurrency: 16}",
    )
    limits = ClusterLimits({}, default_cap=CAP, budget_usd=0.002)
    result, spent = spent_on(cluster, loaded, limits)
    assert result.partial == "the budget is spent"
    assert 0.002 <= spent["run"] < 0.002 + OVERSHOOT
    # the report counts what the budget did, trials stopped half-way included (summed in
    # another order, so equal to rounding)
    assert result.cost.total == pytest.approx(spent["run"], rel=1e-12)


def test_a_scenarios_budget_holds_across_the_workers(tmp_path: Path, cluster: Client) -> None:
    loaded = scenario(
        tmp_path,
        "{require: {metric: rate, at_least: 0.5}, max: 40, sequential: false, concurrency: 16, "
        "budget_usd: 0.002}",
    )
    result, spent = spent_on(cluster, loaded, ClusterLimits({}, default_cap=CAP))
    assert result.partial == "the budget is spent"
    assert 0.002 <= spent["scenario/refund"] < 0.002 + OVERSHOOT
    assert "run" not in spent


def test_trials_stopped_at_the_verdict_are_in_the_cost_as_in_a_local_run(
    tmp_path: Path, cluster: Client
) -> None:
    # 12 trials at once, each call 20 ms: the verdict comes with trials half-way through
    loaded = scenario(
        tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 60, seed: 3, concurrency: 12}"
    )
    budget = Budget(100.0, name="local")
    traffic = Traffic(ProviderLimits({}), budget)
    live = LiveRun(control=traffic, models=scale_app.models(delay=0.02), run_id="r")
    here = asyncio.run(run_live_scenario(loaded, live))
    there, spent = spent_on(cluster, loaded, ClusterLimits({}, budget_usd=100.0), delay=0.02)
    for where, result, paid in (("local", here, budget.spent), ("dask", there, spent["run"])):
        ended = sum(sum(record.cost.values()) for record in result.records)
        sent = sum(sum(record.calls.values()) for record in result.records)
        assert result.cost.total > ended, where  # the stopped trials' calls are in the cost
        assert sum(result.model_calls.values()) > sent, where  # and in the calls
        assert result.cost.total == pytest.approx(paid, rel=1e-9), where  # each call paid, once


def test_a_trial_run_again_after_its_worker_died_has_a_session_of_its_own(
    tmp_path: Path,
) -> None:
    loaded = scenario(
        tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 6, sequential: false}"
    )
    live = LiveRun(models=scale_app.models(delay=0.05), run_id="r")

    async def a_worker_dies(client: Client) -> LiveResult:
        task = asyncio.ensure_future(run_live_scenario(loaded, live))
        while not scale_app.SESSIONS and not task.done():  # a trial has begun
            await asyncio.sleep(0.01)
        worker, _ = scale_app.SESSIONS[0]
        await asyncio.to_thread(client.run_on_scheduler, _remove_worker, worker)
        return await task

    with dask_client(DaskExecutor(), workers=2, threads_per_worker=4, processes=False) as client:
        trials = live.launcher = DaskTrials(client)
        try:
            result = asyncio.run(a_worker_dies(client))
        finally:
            trials.close()
    assert sorted((r.index, r.attempt) for r in result.records) == [(i, 0) for i in range(6)]
    died = scale_app.SESSIONS[0][0]
    trials_of_dead = {key.split("/", 1)[1] for worker, key in scale_app.SESSIONS if worker == died}
    assert trials_of_dead  # trials were under way on the worker that died, and ran again:
    for trial in trials_of_dead:  # each start in a session of its own, the re-run's named so
        # (a thread worker removed mid-start may still begin its trial: either may be first)
        keys = sorted(key for _, key in scale_app.SESSIONS if key.endswith(f"/{trial}"))
        assert keys == [f"r.rerun-1/{trial}", f"r/{trial}"], keys
    keys = [key for _, key in scale_app.SESSIONS]
    assert len(set(keys)) == len(keys)


async def _remove_worker(address: str, dask_scheduler: Any) -> None:
    await dask_scheduler.remove_worker(address, stimulus_id="test-worker-died", close=True)


def test_cancelling_the_run_cancels_the_cluster_work_and_keeps_a_partial_verdict(
    tmp_path: Path, cluster: Client
) -> None:
    loaded = scenario(
        tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 200, sequential: false}"
    )
    live = LiveRun(models=scale_app.models(delay=0.05), run_id="r")
    launcher = DaskTrials(cluster)
    finished: list[int] = []

    async def counted(setup: TrialSetup, index: int, attempt: int) -> TrialOutcome:
        outcome = await launcher(setup, index, attempt)
        finished.append(index)
        return outcome

    live.launcher = counted

    async def interrupted() -> LiveResult:
        task = asyncio.ensure_future(run_live_scenario(loaded, live))
        while 0 not in finished or len(finished) < 2:  # trial 0 decided, others in flight
            await asyncio.sleep(0.02)
        task.cancel()  # what Ctrl-C does to `agentrig run --live`
        return await task

    result = asyncio.run(interrupted())
    assert result.partial == "interrupted"
    assert 0 < result.trials < 200
    deadline = time.monotonic() + 5
    while _trial_tasks(cluster) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _trial_tasks(cluster) == 0


def _trial_tasks(client: Client) -> int:
    def count(dask_scheduler: object) -> int:
        tasks = dask_scheduler.tasks  # type: ignore[attr-defined]
        return sum(1 for key in tasks if str(key).startswith("agentrig-trial-"))

    return int(client.run_on_scheduler(count))


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_no_trial_and_records_none_twice(tmp_path: Path) -> None:
    loaded = scenario(
        tmp_path,
        "{require: {metric: rate, at_least: 0.5}, max: 40, sequential: false, concurrency: 8}",
    )
    held = tmp_path / "held"  # the worker running the first trial past the tenth to begin
    with dask_client(DaskExecutor(), workers=2, threads_per_worker=4) as client:
        pids = client.run(os.getpid)
        killed: list[str] = []  # the trials the killed worker held
        killer = threading.Thread(target=_kill_when_held, args=(client, pids, held, killed))
        killer.start()
        result = run(loaded, client, models=scale_app.models(held=str(held)))
        killer.join()
        index = int(held.read_text().split()[1])
        # a worker died with trials in hand, the held one among them, at least ten begun
        assert [key for key in killed if f"-{index}.0-" in key]
        assert set(client.run(os.getpid).values()) != set(pids.values())  # replaced
    indices = [(r.index, r.attempt) for r in result.records]
    assert sorted(indices) == [(i, 0) for i in range(40)]
    assert (result.trials, result.successes, result.verdict) == (40, 40, "PASS")


def _kill_when_held(client: Client, pids: dict[str, int], held: Path, killed: list[str]) -> None:
    """Kill the worker process whose id ``held`` gives, once written, taking the keys of the
    trials it holds."""
    deadline = time.monotonic() + scale_app.HOLD_S
    while time.monotonic() < deadline:
        mark = held.read_text().split() if held.exists() else []
        if len(mark) == 2:  # written whole
            [worker] = [worker for worker, pid in pids.items() if pid == int(mark[0])]
            killed.extend(str(key) for key in client.processing()[worker])
            os.kill(int(mark[0]), signal.SIGKILL)
            return
        time.sleep(0.01)
