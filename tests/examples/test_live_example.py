"""examples/live/ as a folder: ``agentrig run`` plays the scripts ``agentrig serve`` serves
(the agent's model, the simulated user's, the judge's) on agentrig's runtime, as it does the
bundled endpoint scenarios, and leaves the live scenario for ``--live``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentrig.harness.live.run import requirement_of
from agentrig.harness.live.stats import Outcome, Requirement, SequentialTest
from agentrig.harness.scenarios.loader import load_scenario

EXAMPLE = Path(__file__).parents[2] / "examples" / "live"


def test_agentrig_run_on_the_example_folder_passes_its_model_scripts(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    done = subprocess.run(
        [sys.executable, "-c", "from agentrig.harness.cli import main; main()", "run", "."],
        cwd=project,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        capture_output=True,
        text=True,
        timeout=120,  # a repeating tool call used to loop here for ever
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 live scenario(s) not run: add --live" in done.stderr
    report = json.loads((project / "reports" / "report.json").read_text())
    ran = {s["name"]: s["passed"] for s in report["scenarios"]}
    assert ran == {"refund-model": True, "refund-user": True, "refund-judge": True}


def test_agentrig_run_on_the_live_scenario_alone_says_so_and_exits_4(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    shutil.rmtree(project / "models")  # the folder then holds the live scenario alone
    done = subprocess.run(
        [sys.executable, "-c", "from agentrig.harness.cli import main; main()", "run", "."],
        cwd=project,
        env={k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 4, done.stdout + done.stderr  # nothing ran, and nothing spent
    assert "1 live scenario(s) not run: add --live to run their trials" in done.stderr
    assert "Traceback" not in done.stderr


def verdict_chances(requirement: Requirement, rate: float, max_trials: int) -> dict[Outcome, float]:
    """The chance of each verdict of the truncated sequential test at a true ``rate``, summed
    exactly over every count of successes (no simulation)."""
    test = SequentialTest(requirement, max_trials)
    chances = dict.fromkeys(Outcome, 0.0)
    alive = {0: 1.0}
    for n in range(1, max_trials + 1):
        following: dict[int, float] = {}
        for c, chance in alive.items():
            following[c + 1] = following.get(c + 1, 0.0) + chance * rate
            following[c] = following.get(c, 0.0) + chance * (1 - rate)
        alive = {}
        for c, chance in following.items():
            decision = test.decide(c, n)
            if decision is None:
                alive[c] = chance
            else:
                chances[decision] += chance
    return chances


@pytest.mark.parametrize(
    ("at_least", "verdict", "at_most_one_in"),
    [
        (0.6, Outcome.PASS, 100_000),  # with max: 60 it was INCONCLUSIVE in 3.7% of runs
        (0.95, Outcome.FAIL, 1_000),  # 0.8**38: a PASS on 38 first successes in a row
    ],
)
def test_the_example_gives_the_verdict_docs_live_promises_all_but_surely(
    at_least: float, verdict: Outcome, at_most_one_in: int
) -> None:
    # docs/live.md: the example PASSes (rate >= 0.6), and FAILs once raised to 0.95; the agent's
    # true rate is the weight of the branch of its model's mixture that refunds
    scenario = load_scenario(EXAMPLE / "refund.scenario.yaml")
    assert scenario.trials is not None
    model = load_scenario(EXAMPLE / "models" / "agent.scenario.yaml")
    [rate] = [b.weight for t in model.turns for b in t.mixture or () if b.label == "refunds"]
    assert rate == 0.8
    requirement = requirement_of(scenario)
    if at_least != requirement.at_least:
        requirement = Requirement(requirement.metric, at_least)
    chances = verdict_chances(requirement, rate, scenario.trials.max)
    assert 1 - chances[verdict] < 1 / at_most_one_in, chances
