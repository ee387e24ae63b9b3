"""Every worker is checked when a run starts: a worker that cannot import a plugin or an agent,
or lacks a role model's API key, fails the run at once, naming the worker and what it lacks."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from distributed import Client

from agentrig.errors import ConfigurationError
from agentrig.harness.live.run import LiveRun, RoleModels
from agentrig.harness.scale.cluster import DaskExecutor, dask_client
from agentrig.harness.scale.workers import WorkerNeeds, check_workers, needs_of
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.user_agent import resolve_reference

LIVE = """
name: refund
agent: {builder: "refund_app:build"}
user:
  persona: Dana
  goal: a refund
  model: {provider: openai, name: u, api_key_env: SCALE_USER_KEY}
judge:
  criteria: [{id: refunded, check: {tool_called: issue_refund}}]
trials: {require: {metric: rate, at_least: 0.5}}
"""


def test_the_needs_are_the_plugins_the_agents_found_here_and_the_keys_set_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "refund.scenario.yaml"
    path.write_text(textwrap.dedent(LIVE))
    live = load_scenario(path)
    lost = live.model_copy(update={"agent": live.agent.model_copy(update={"builder": "gone:b"})})
    monkeypatch.setenv("SCALE_USER_KEY", "k")
    needs = needs_of([live, lost], ["my_plugin"], LiveRun())
    assert needs == WorkerNeeds(("my_plugin",), ("refund_app:build",), ("SCALE_USER_KEY",))
    overridden = LiveRun(models=RoleModels(user=lambda context: None))  # type: ignore[arg-type,return-value]
    assert needs_of([live], [], overridden).keys == ()
    assert needs_of([live], []).keys == ()  # a scripted run reads no key


def test_a_worker_that_cannot_import_a_plugin_is_named(cluster: Client) -> None:
    with pytest.raises(ConfigurationError) as caught:
        check_workers(cluster, WorkerNeeds(plugins=("no_such_plugin_mod",)))
    lines = str(caught.value).splitlines()
    workers = sorted(cluster.scheduler_info()["workers"])
    assert [line.split(": ")[0] for line in lines[:-1]] == [f"Dask worker {w}" for w in workers]
    assert all("'no_such_plugin_mod'" in line for line in lines[:-1])
    assert "PYTHONPATH" in lines[-1]


def test_workers_that_have_everything_pass(cluster: Client) -> None:
    check_workers(cluster, WorkerNeeds(("json",), ("refund_app:build",), ()))


@pytest.mark.slow
def test_worker_processes_missing_a_module_or_a_key_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with dask_client(DaskExecutor(), workers=1) as client:
        # Only this process gets the module's folder and the key, after the worker started.
        (tmp_path / "late_agent.py").write_text("def build():\n    return None\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setenv("SCALE_LATE_KEY", "k")
        needs = WorkerNeeds(references=("late_agent:build",), keys=("SCALE_LATE_KEY",))
        assert resolve_reference("late_agent:build", "here") is not None  # found here
        with pytest.raises(ConfigurationError) as caught:
            check_workers(client, needs)
        (worker,) = client.scheduler_info()["workers"]
    problems = str(caught.value).splitlines()
    assert problems[0].startswith(f"Dask worker {worker}: agent 'late_agent:build': ")
    assert "cannot import module 'late_agent'" in problems[0]
    assert (
        problems[1]
        == f"Dask worker {worker}: SCALE_LATE_KEY is not set: a role model reads its API key from it"
    )
