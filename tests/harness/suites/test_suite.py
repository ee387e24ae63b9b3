"""Suites: every scenario in order, in this process or in worker processes."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from agentrig.harness.errors import SuiteError
from agentrig.harness.results import normalized
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import Scenario
from agentrig.harness.suites.suite import run_suite

TOOL_AGENT = """\
    name: adder
    agent:
      budget: {max_steps: 5}
      tools:
        add:
          params: {a: integer, b: integer}
          replies:
            - return: 3
    turns:
      - user: add 1 and 2
        model:
          - call: add(a=1, b=2)
          - say: it is 3
        expect:
          status: completed
          final_response: it is 3
          steps: 2
          messages: [user, assistant]
"""


def scenario_file(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / name
    path.write_text(dedent(text), encoding="utf-8")
    return path


def test_run_suite_in_two_workers_matches_one_worker(tmp_path: Path) -> None:
    paths = [
        scenario_file(
            tmp_path, TOOL_AGENT.replace("name: adder", f"name: adder-{i}"), f"s{i}.scenario.yaml"
        )
        for i in range(4)
    ]
    scenarios = [load_scenario(p) for p in paths]
    one = normalized(run_suite(scenarios, workers=1))
    two = normalized(run_suite(scenarios, workers=2))
    assert one == two
    assert [s.name for s in two.scenarios] == [f"adder-{i}" for i in range(4)]


def test_parallel_runs_of_scenarios_built_in_python_say_what_to_do() -> None:
    scenarios = [
        Scenario.model_validate({"name": name, "turns": [{"user": "hi", "model": [{"say": "x"}]}]})
        for name in ("one", "two")
    ]
    with pytest.raises(SuiteError, match="loaded from files; run them with workers=1"):
        run_suite(scenarios, workers=2)
