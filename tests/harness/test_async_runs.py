"""The async path runs every bundled scenario to the same final states as the sync path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.harness.cli import app
from agentrig.harness.runner import final_states, run_scenario
from agentrig.harness.scenarios.loader import load_scenarios
from agentrig.harness.scenarios.model import Scenario

SCENARIOS = Path(__file__).parents[2] / "scenarios"
ALL = load_scenarios(SCENARIOS)
BUNDLED = [s for s in ALL if "failing" not in s.tags]


IDS_DRAWN_IN_ANOTHER_ORDER = {
    # a hook blocks the second call before the first one ran: its record draws its id first
    "tool-blocked-by-hook",
    # the subagents run together, so their states draw ids interleaved
    "subagent-fan-out",
}
"""Scenarios whose async run draws the same ids in another order (see docs/async.md)."""

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def ids_renamed(text: str) -> str:
    """``text`` with each distinct id replaced by its rank of first appearance."""
    seen: dict[str, str] = {}
    return UUID.sub(lambda match: seen.setdefault(match.group(), f"id-{len(seen)}"), text)


@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.name)
def test_the_async_path_ends_in_the_same_states(scenario: Scenario) -> None:
    sync = [state.to_json() for state in final_states(scenario)]
    async_ = [state.to_json() for state in final_states(scenario, use_async=True)]
    assert len(sync) == len(scenario.turns)
    if scenario.name in IDS_DRAWN_IN_ANOTHER_ORDER:
        assert async_ != sync  # else it belongs with the others
        assert [ids_renamed(s) for s in async_] == [ids_renamed(s) for s in sync]
    else:
        assert async_ == sync


def test_a_scenario_run_through_the_async_path_passes() -> None:
    result = run_scenario(BUNDLED[0], use_async=True)
    assert result.passed, result.failures


def test_agentrig_run_async_runs_the_suite_through_the_async_path(tmp_path: Path) -> None:
    runner = CliRunner()
    outcome = runner.invoke(
        app, ["run", str(SCENARIOS), "--async", "--report-dir", str(tmp_path), "-q", "-k", "hooks"]
    )
    report = json.loads((tmp_path / "report.json").read_text())
    assert outcome.exit_code == 0, outcome.output
    assert report["scenarios"]
    assert all(s["passed"] for s in report["scenarios"])
