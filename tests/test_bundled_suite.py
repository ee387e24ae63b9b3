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


DESIGN_CASES = {
    # The design's test cases for the execution buffer and delegation, and the scenarios that
    # play them (the cases' numbers are the design seeds' own: seed 001 cases, seed 004 items).
    "001-1 / 004-1: one tool call, then the answer": ["buffer-single-tool-call"],
    "001-2 / 004-2: several tool calls": ["buffer-multiple-tool-calls"],
    "001-3 / 004-5: an interrupted execution": [
        "buffer-interrupted-by-cancellation",
        "buffer-interrupted-by-provider-error",
        "buffer-interrupted-by-step-limit",
        "multi-turn-resume-after-stop",
    ],
    "001-4 / 004-4: a subagent": ["subagent-parent-sees-only-response", "subagent-success"],
    "001-5: the next turn": ["multi-turn-resume-after-stop", "multi-turn-three-turns-accumulate"],
    "004-3: no tool calls": ["buffer-no-tool-calls"],
    "004-6: inline mode": ["trace-mode-inline-conversation", "trace-mode-inline-resume-after-stop"],
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
    covering = {case: set(names) - set(scenarios) for case, names in DESIGN_CASES.items()}
    assert not any(covering.values()), covering
    assert all(scenarios[name]["passed"] for names in DESIGN_CASES.values() for name in names)
    assert not {tag for tag in tags if tag.startswith("seed-")}, "internal tags are not for users"
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
