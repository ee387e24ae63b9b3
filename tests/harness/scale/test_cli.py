"""``agentrig run --executor``: usage errors, a run on a local Dask cluster, and Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from textwrap import dedent

import pytest
from typer.testing import CliRunner

from agentrig.harness.cli import app
from agentrig.harness.endpoint.server import EndpointServer
from agentrig.harness.endpoint.service import ScenarioEndpoint
from agentrig.harness.scale import cluster as cluster_module
from agentrig.harness.scenarios.loader import load_scenarios

runner = CliRunner()

SCENARIO = """\
name: {name}
turns:
  - user: hi
    model: [{{say: hello}}]
    expect: {{status: completed, final_response: hello}}
"""


def suite(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        name = f"case-{index:02d}"
        (folder / f"{name}.scenario.yaml").write_text(SCENARIO.format(name=name), "utf-8")
    return folder


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, ["run", *map(str, args)])
    return result.exit_code, " ".join(result.output.split())


def test_an_unknown_executor_is_a_usage_error(tmp_path: Path) -> None:
    code, output = invoke(suite(tmp_path, 1), "--executor", "ray")
    assert code == 2
    assert "--executor: 'ray': write local, dask, or dask://HOST:PORT" in output


def test_workers_with_a_running_scheduler_is_a_usage_error(tmp_path: Path) -> None:
    code, output = invoke(suite(tmp_path, 1), "--executor", "dask://127.0.0.1:8786", "-n", "2")
    assert code == 2
    assert "--workers sizes a local cluster" in output


def test_a_scheduler_that_does_not_answer_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    # nothing listens there: no answer comes, however long it waits
    monkeypatch.setattr(cluster_module, "CONNECT_TIMEOUT", 0.01)
    code, output = invoke(suite(tmp_path, 1), "--executor", f"dask://127.0.0.1:{port}")
    assert code == 2
    assert f"no Dask scheduler answered at tcp://127.0.0.1:{port}" in output
    assert not (Path.cwd() / "reports" / "never").exists()


@pytest.mark.slow
def test_a_run_on_a_local_cluster_reports_as_a_local_run(tmp_path: Path) -> None:
    scenarios = suite(tmp_path / "s", 5)
    code, output = invoke(
        scenarios, "--executor", "dask", "-n", "1", "--report-dir", tmp_path / "d"
    )
    assert code == 0, output
    assert "5 passed, 0 failed" in output
    assert invoke(scenarios, "--report-dir", tmp_path / "l")[0] == 0
    dask, local = (json.loads((tmp_path / r / "report.json").read_text()) for r in ("d", "l"))
    for report in (dask, local):
        report.pop("wall_time_s")
        for scenario in report["scenarios"]:
            scenario.pop("wall_time_s")
    assert dask == local


BLOCKING_PLUGIN = """\
import os, time
from agentrig.harness.checks.invariant import Invariant, register_invariant

@register_invariant
class Blocking(Invariant):
    name = "blocking"
    description = "checks three scenarios, then blocks"
    final_only = True

    def check(self, observation):
        marks = {marks!r}
        # one of three places taken atomically: two workers checking at once cannot both
        # take the third (counting the marks first let four scenarios pass)
        for place in range(3):
            try:
                open(os.path.join(marks, f"passed-{{place}}"), "x").close()
                return ()
            except FileExistsError:
                pass
        open(os.path.join(marks, f"blocked-{{os.getpid()}}-{{time.monotonic_ns()}}"), "x").close()
        time.sleep(600)
"""


@pytest.mark.slow
def test_ctrl_c_cancels_the_cluster_and_still_writes_the_reports(tmp_path: Path) -> None:
    plugins, marks = tmp_path / "plugins", tmp_path / "marks"
    plugins.mkdir()
    marks.mkdir()
    (plugins / "blocking_plugin.py").write_text(dedent(BLOCKING_PLUGIN.format(marks=str(marks))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), *sys.path])}
    env["TTY_COMPATIBLE"] = "1"  # the progress line, as at a terminal: "3/12" once 3 came back
    main = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    command = [sys.executable, "-c", main + "from agentrig.harness.cli import main; main()"]
    arguments = [suite(tmp_path / "s", 12), "--executor", "dask", "-n", "2"]
    arguments += ["--plugin", "blocking_plugin", "--report-dir", tmp_path / "r"]
    process = subprocess.Popen(
        [*command, "run", *map(str, arguments)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # Ctrl-C at a terminal reaches the whole group
    )
    output = bytearray()
    reader = threading.Thread(target=_read_all, args=(process, output))
    reader.start()
    try:
        deadline = time.monotonic() + 120
        # both workers blocked, and the three passed results back in this process
        while len(os.listdir(marks)) < 5 or " 3/12 " not in _shown(output):
            assert time.monotonic() < deadline, _shown(output)
            time.sleep(0.01)
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        reader.join(timeout=60)  # the output's end: its last holder (the worker server) gone
        assert process.stdout is not None
        process.stdout.close()
    text = " ".join(_shown(output).split())
    assert process.returncode == 130, text
    assert "Traceback" not in text
    assert "interrupted by Ctrl-C (SIGINT): 3 of 12 scenario(s) ran: 3 passed, 0 failed" in text
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert [s["name"] for s in report["scenarios"]] == [f"case-{i:02d}" for i in range(12)]
    assert sum(s["passed"] for s in report["scenarios"]) == 3  # in whatever order they ran


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
"""A terminal's control sequence (the progress line's)."""


def _shown(output: bytearray) -> str:
    """``output`` as a terminal shows it, but on one line."""
    return _ANSI.sub("", output.decode(errors="replace")).replace("\r", " ")


def _read_all(process: subprocess.Popen[bytes], into: bytearray) -> None:
    """``process``'s output into ``into`` as it comes, to its end."""
    assert process.stdout is not None
    while chunk := process.stdout.read1():
        into += chunk


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """examples/live copied to a project folder, the keys set (the local cluster's worker
    processes inherit the folder, the path and the environment)."""
    project = tmp_path / "project"
    shutil.copytree(Path(__file__).parents[3] / "examples" / "live", project)
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.setenv("OPENAI_API_KEY", "refund-model")
    monkeypatch.setenv("REFUND_USER_KEY", "refund-user")
    monkeypatch.setenv("REFUND_JUDGE_KEY", "refund-judge")
    return project


def live_verdict(monkeypatch: pytest.MonkeyPatch, *args: str) -> dict[str, object]:
    """One run of the example's trials, against an endpoint of its own (one run's sessions
    are not another's: every run here has the same --run-id, so the same sessions' draws)."""
    endpoint = ScenarioEndpoint(load_scenarios([Path("models")]))
    with EndpointServer(endpoint) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        result = runner.invoke(
            app, ["run", "--live", "refund.scenario.yaml", "-q", "--run-id", "same", *args]
        )
    assert result.exit_code == 0, result.output
    report = json.loads((Path(args[args.index("--report-dir") + 1]) / "report.json").read_text())
    live: dict[str, object] = report["scenarios"][0]["live"]
    return live


@pytest.mark.slow
def test_live_trials_on_a_local_cluster_reach_the_local_verdict_and_replay(
    offline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a requirement well under the agent's rate (0.8): decided in a few rounds of trials
    scenario = offline / "refund.scenario.yaml"
    scenario.write_text(scenario.read_text().replace("at_least: 0.6", "at_least: 0.3"))
    local = live_verdict(monkeypatch, "--report-dir", "local", "--cache", "local-cache")
    dask = live_verdict(monkeypatch, "--executor", "dask", "-n", "1", "--report-dir", "dask")
    assert local["verdict"] == "PASS"
    assert (dask["verdict"], dask["trials"], dask["successes"]) == (
        local["verdict"],
        local["trials"],
        local["successes"],
    )
    assert list((offline / ".agentrig" / "cache").rglob("outcome.json"))  # written here
    again = live_verdict(monkeypatch, "--executor", "dask", "-n", "1", "--report-dir", "again")
    assert again["model_calls"] == {"agent": 0, "user": 0, "judge": 0}
    assert (again["verdict"], again["trials"]) == (dask["verdict"], dask["trials"])
