"""``dask_session``: the cluster opened, its workers checked, the live trials sent to it while
inside, and nothing left behind."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agentrig.errors import ConfigurationError
from agentrig.harness.live.run import LiveRun
from agentrig.harness.scale.cluster import DaskExecutor
from agentrig.harness.scale.session import dask_session
from agentrig.harness.scale.trials import DaskTrials
from agentrig.harness.scenarios.loader import load_scenario

LIVE = """
name: refund
agent: {builder: "refund_app:build"}
user: {persona: Dana, goal: a refund, model: {provider: openai, name: u}}
judge:
  criteria: [{id: refunded, check: {tool_called: issue_refund}}]
trials: {require: {metric: rate, at_least: 0.5}}
"""


def test_live_trials_go_to_the_cluster_while_inside(tmp_path: Path) -> None:
    path = tmp_path / "refund.scenario.yaml"
    path.write_text(textwrap.dedent(LIVE))
    live = LiveRun()
    with dask_session(
        DaskExecutor(), [load_scenario(path)], live=live, workers=1, processes=False
    ) as client:
        assert isinstance(live.launcher, DaskTrials)
        assert live.launcher.client is client
        assert client.scheduler_info()["workers"]
    assert live.launcher is None
    assert client.status == "closed"


def test_a_worker_missing_a_plugin_stops_the_session_before_anything_runs() -> None:
    live = LiveRun()
    with (
        pytest.raises(ConfigurationError, match="'no_such_plugin_mod'"),
        dask_session(
            DaskExecutor(), [], plugins=["no_such_plugin_mod"], live=live, processes=False
        ),
    ):
        pytest.fail("the session opened")
    assert live.launcher is None
