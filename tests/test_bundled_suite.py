"""The bundled suite: scenarios/ passes, scenarios/failing/ is reported as failing, precisely."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.harness.cli import app
from agentrig.harness.scenarios.loader import load_scenarios

SCENARIOS = Path(__file__).parents[1] / "scenarios"

# What each deliberately wrong scenario must be reported as: (failure kind, field or text).
EXPECTED_FAILURES = {
    "failing-wrong-status": ("expectation", "expect.status"),
    "failing-wrong-final-response": ("expectation", "expect.final_response"),
    "failing-wrong-tool-trajectory": ("expectation", "expect.tool_calls"),
    "failing-script-runs-out": ("script", "was not scripted"),
    "failing-unused-scripted-reply": ("script", "was never used"),
    "failing-unknown-tool-not-listed": ("script", "which the agent does not have"),
    "failing-wrong-message-roles": ("expectation", "expect.messages"),
    "failing-wrong-stop-reason-and-steps": ("expectation", "expect.steps"),
    "failing-wrong-second-turn-messages": ("expectation", "expect.messages"),
}


def run_cli(path: Path, report_dir: Path) -> tuple[int, dict[str, dict[str, object]]]:
    result = CliRunner().invoke(app, ["run", str(path), "--report-dir", str(report_dir), "-q"])
    report = json.loads((report_dir / "report.json").read_text())
    return result.exit_code, {s["name"]: s for s in report["scenarios"]}


def test_the_bundled_suite_passes_and_covers_every_feature(tmp_path: Path) -> None:
    code, scenarios = run_cli(SCENARIOS, tmp_path)
    failed = {name: s["failures"] for name, s in scenarios.items() if not s["passed"]}
    assert code == 0, failed
    assert len(scenarios) >= 40
    tags = {tag for s in scenarios.values() for tag in s["tags"]}
    features = {"budgets", "buffer", "cancellation", "hooks", "multi-turn", "retries"}
    features |= {"stop-reasons", "subagents", "tools", "trace-modes", "usage"}
    assert features <= tags
    seeds = {f"seed-001-case-{n}" for n in range(1, 6)} | {
        f"seed-004-item-{n}" for n in range(1, 7)
    }
    assert seeds <= tags, seeds - tags
    reasons = {turn["stop_reason"] for s in scenarios.values() for turn in s["turns"]}
    assert reasons >= {
        "completed", "steps_limit", "token_limit", "time_limit", "retry_limit",
        "finish_reason", "user_requested", "stop_requested", "error",
    }  # fmt: skip


def test_the_failing_folder_is_excluded_by_default() -> None:
    names = {scenario.name for scenario in load_scenarios(SCENARIOS)}
    assert not names & set(EXPECTED_FAILURES)


def test_every_deliberately_wrong_scenario_is_reported_as_it_should(tmp_path: Path) -> None:
    code, scenarios = run_cli(SCENARIOS / "failing", tmp_path)
    assert code == 1
    assert set(scenarios) == set(EXPECTED_FAILURES)
    for name, (kind, needle) in EXPECTED_FAILURES.items():
        failures = scenarios[name]["failures"]
        assert isinstance(failures, list)
        matching = [
            f for f in failures
            if f["kind"] == kind and (needle in (f.get("field") or "") or needle in f["message"])
        ]  # fmt: skip
        assert matching, f"{name}: expected a {kind} failure about {needle!r}, got {failures}"
        assert all(
            str(f["location"]).startswith("scenarios/failing/") or "failing" in str(f["location"])
            for f in matching
        )


@pytest.mark.parametrize("path", sorted(SCENARIOS.rglob("*.scenario.yaml")), ids=lambda p: p.name)
def test_every_bundled_file_references_the_schema(path: Path) -> None:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    depth = len(path.relative_to(SCENARIOS).parts) - 1
    assert first == f"# yaml-language-server: $schema={'../' * depth}scenario.schema.json"
