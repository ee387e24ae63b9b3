"""``pytest --agentrig-scenarios --agentrig-executor``: the collected scenarios run on a Dask
cluster, a bad executor is a usage error."""

from __future__ import annotations

import os
from textwrap import dedent

import pytest

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
