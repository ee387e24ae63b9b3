"""``agentrig run`` with plugins and worker processes: crashes, dead workers, Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from textwrap import dedent

import pytest
from typer.testing import CliRunner

from agentrig.harness.checks.invariant import unregister_invariant
from agentrig.harness.cli import app
from agentrig.harness.errors import SuiteError
from agentrig.harness.scenarios.loader import load_scenarios
from agentrig.harness.suites.suite import run_suite

runner = CliRunner()

SCENARIO = """\
name: {name}
turns:
  - user: hi
    model: [{{say: hello}}]
    expect: {{status: completed, final_response: hello}}
"""

INVARIANT = """\
import os
from agentrig.harness.checks.invariant import Invariant, register_invariant

@register_invariant
class {cls}(Invariant):
    name = "{name}"
    description = "test plugin"
    final_only = True

    def check(self, observation):
        {body}
        return ()
"""


def suite(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        name = f"case-{index:02d}"
        (folder / f"{name}.scenario.yaml").write_text(SCENARIO.format(name=name), "utf-8")
    return folder


def invariant_plugin(folder: Path, module: str, name: str, body: str) -> None:
    """Write ``folder/module.py`` registering an invariant ``name`` whose check runs ``body``."""
    text = INVARIANT.format(cls=name.title().replace("_", ""), name=name, body=body)
    (folder / f"{module}.py").write_text(text, "utf-8")


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, [str(arg) for arg in args])
    return result.exit_code, result.output


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder for plugin modules, cleaned from ``sys.path`` and ``sys.modules`` afterwards."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield folder
    for name in set(sys.modules) - before:
        if name.startswith("audit_plugin"):
            del sys.modules[name]


def test_a_plugin_in_the_current_folder_is_found(
    tmp_path: Path, plugin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    invariant_plugin(plugin_dir, "audit_plugin_here", "audit_here", "pass")
    monkeypatch.chdir(plugin_dir)
    try:
        code, output = invoke(
            "run", suite(tmp_path / "s", 1), "--plugin", "audit_plugin_here", "--report-dir", "r"
        )
    finally:
        unregister_invariant("audit_here")
    assert code == 0, output
    assert "1 passed" in output


def test_a_plugin_that_is_nowhere_says_how_to_make_it_importable(tmp_path: Path) -> None:
    code, output = invoke("run", suite(tmp_path / "s", 1), "--plugin", "audit_plugin_missing")
    assert code == 2
    flat = " ".join(output.split())
    assert "cannot import plugin module 'audit_plugin_missing'" in flat
    assert "PYTHONPATH" in flat


def test_a_plugin_whose_own_import_is_missing_names_that_import(
    tmp_path: Path, plugin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (plugin_dir / "audit_plugin_needs.py").write_text("import no_such_dependency\n")
    monkeypatch.syspath_prepend(str(plugin_dir))
    code, output = invoke("run", suite(tmp_path / "s", 1), "--plugin", "audit_plugin_needs")
    assert code == 2
    flat = " ".join(output.split())
    assert "plugin module 'audit_plugin_needs' failed to import: ModuleNotFoundError" in flat
    assert "install 'no_such_dependency'" in flat
    assert "PYTHONPATH" not in flat


def test_a_plugin_that_fails_only_in_a_worker_is_a_clear_error(
    tmp_path: Path, plugin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (plugin_dir / "audit_plugin_worker.py").write_text(
        dedent(
            """\
            import multiprocessing
            if multiprocessing.current_process().name != "MainProcess":
                raise RuntimeError("no database in workers")
            """
        ),
        "utf-8",
    )
    monkeypatch.syspath_prepend(str(plugin_dir))
    code, output = invoke(
        "run", suite(tmp_path / "s", 2), "-n", "2", "--plugin", "audit_plugin_worker",
        "--report-dir", tmp_path / "r",
    )  # fmt: skip
    flat = " ".join(output.split())
    assert code == 2, output
    assert "Traceback" not in output
    assert "in a worker process: plugin module 'audit_plugin_worker' failed to import" in flat
    assert "RuntimeError: no database in workers" in flat


def test_a_dead_worker_fails_the_scenarios_it_took_and_the_report_is_written(
    tmp_path: Path, plugin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    invariant_plugin(plugin_dir, "audit_plugin_killer", "audit_killer", "os._exit(13)")
    monkeypatch.syspath_prepend(str(plugin_dir))
    code, output = invoke(
        "run", suite(tmp_path / "s", 3), "-n", "2", "--plugin", "audit_plugin_killer",
        "--report-dir", tmp_path / "r", "--report", "json",
    )  # fmt: skip
    unregister_invariant("audit_killer")
    flat = " ".join(output.split())
    assert code == 1, output
    assert "Traceback" not in output
    assert "a worker process died" in flat
    assert "--workers 1" in flat
    assert (tmp_path / "r" / "report.json").is_file()


def test_ctrl_c_stops_promptly_says_what_ran_and_leaves_no_worker(tmp_path: Path) -> None:
    # The first scenarios pass at once; the later ones block for ten minutes. However busy the
    # machine, the suite cannot end before the Ctrl-C, and ends within the timeout below only
    # if the Ctrl-C stops the blocked workers instead of waiting for them.
    marks, env = _marking_plugin(tmp_path, "audit_plugin_gated", 4, "time.sleep(600)")
    # Ctrl-C as at a terminal, even when this test runs in a background job (which ignores it)
    main = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    command = [sys.executable, "-c", main + "from agentrig.harness.cli import main; main()"]
    arguments = [str(suite(tmp_path / "s", 40)), "-n", "2", "--plugin", "audit_plugin_gated"]
    # in its own process group: Ctrl-C reaches the workers too
    process = _started([*command, "run", *arguments, "--report-dir", str(tmp_path / "r")], env)
    text = _output_once_stopped(process, marks, 4, lambda pid: os.killpg(pid, signal.SIGINT))
    assert process.returncode == 130, text
    assert "Traceback" not in text
    reported = re.search(
        r"interrupted by Ctrl-C \(SIGINT\): (\d+) of 40 scenario\(s\) ran: \1 passed, 0 failed",
        text,
    )
    assert reported is not None, text
    assert int(reported.group(1)) <= 5  # only scenarios that did not block (4, or 5 in a race)
    assert _wait_for(lambda: _live_members(process.pid) == []), _live_members(process.pid)


@pytest.mark.parametrize(
    ("stop", "workers"),
    [(signal.SIGTERM, 1), (signal.SIGHUP, 1), (signal.SIGTERM, 2)],
    ids=["sigterm", "sighup", "sigterm-to-the-group-with-workers"],
)
def test_a_stopping_signal_reports_what_finished_and_marks_the_rest(
    tmp_path: Path, stop: signal.Signals, workers: int
) -> None:
    # The first three scenarios pass at once; from the fourth on each check waits for a file
    # that never comes: the run cannot end before the signal, whatever the machine's speed.
    never = 'while not os.path.exists(os.path.join(marks, "go")): time.sleep(0.05)'
    marks, env = _marking_plugin(tmp_path, "audit_plugin_blocking", 3, never)
    command = [sys.executable, "-c", "from agentrig.harness.cli import main; main()"]
    count = 12 if workers > 1 else 6
    reports = tmp_path / "r"
    arguments = [
        str(suite(tmp_path / "s", count)),
        "-n",
        str(workers),
        "--report-dir",
        str(reports),
    ]
    # in its own process group, as a CI job's
    process = _started([*command, "run", *arguments, "--plugin", "audit_plugin_blocking"], env)
    send = os.killpg if workers > 1 else os.kill  # a CI runner stops the whole job
    text = _output_once_stopped(process, marks, 3, lambda pid: send(pid, stop))
    assert process.returncode == 128 + stop, text
    assert "Traceback" not in text
    reported = re.search(
        rf"interrupted by {stop.name}: (\d+) of {count} scenario\(s\) ran: \1 passed, 0 failed; "
        rf"reports in {re.escape(str(reports))}/ \(the (\d+) not finished as errors\)",
        text,
    )
    assert reported is not None, text
    finished, unfinished = int(reported.group(1)), int(reported.group(2))
    assert finished + unfinished == count
    # In one process the first three pass and the fourth blocks. Workers take scenarios in
    # parallel and report them in order: a blocked one holds back those after it, so fewer may
    # come in (as many as five checks may have started before one saw three marks).
    assert finished == 3 if workers == 1 else finished <= 5
    assert "worker process died" not in text  # the workers did not die before the main process
    data = json.loads((reports / "report.json").read_text())
    outcomes = [(s["passed"], [f["message"] for f in s["failures"]]) for s in data["scenarios"]]
    not_finished = (
        f"not finished: the run was interrupted by {stop.name} before this scenario's result "
        "came in"
    )
    assert outcomes == [(True, [])] * finished + [(False, [not_finished])] * unfinished
    junit = (reports / "junit.xml").read_text()
    assert f'tests="{count}" failures="0" errors="{unfinished}"' in junit
    assert _wait_for(lambda: _live_members(process.pid) == []), _live_members(process.pid)


def _marking_plugin(
    tmp_path: Path, module: str, blocked_from: int, block: str
) -> tuple[Path, dict[str, str]]:
    """A plugin ``module`` whose invariant leaves a file in the returned folder for each
    scenario it checks, then runs the statement ``block`` from the ``blocked_from``-th on
    (counted from 0); and the environment that finds the plugin."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    marks = tmp_path / "marks"
    marks.mkdir()
    invariant_plugin(
        plugins,
        module,
        module.replace("_plugin", ""),
        f"import time; marks = {str(marks)!r}; n = len(os.listdir(marks)); "
        "open(os.path.join(marks, f'{os.getpid()}-{time.monotonic_ns()}'), 'x').close(); "
        f"exec({block!r}) if n >= {blocked_from} else None",
    )
    return marks, {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), *sys.path])}


def _started(command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``command`` running in a process group of its own, its output collected."""
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )


def _output_once_stopped(
    process: subprocess.Popen[bytes], marks: Path, started: int, stop: Callable[[int], None]
) -> str:
    """Once more than ``started`` checks began (files in ``marks``), ``stop(pid)``; then the
    process's output, its whitespace flattened (the group is killed if it outlives the wait)."""
    try:
        assert _wait_for(lambda: len(os.listdir(marks)) > started), "no scenario blocked"
        stop(process.pid)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return " ".join(output.decode().split())


def _wait_for(condition: Callable[[], bool], seconds: float = 120) -> bool:
    """Whether ``condition`` holds within ``seconds`` (a loaded machine may take long; a
    passing run never waits the whole time)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _live_members(group: int) -> list[str]:
    """Processes of the group that are still alive (zombies waiting for init do not count)."""
    listed = subprocess.run(
        ["ps", "-eo", "pgid=,stat=,pid="], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    return [
        line for line in listed if line.split()[:1] == [str(group)] and "Z" not in line.split()[1]
    ]


@pytest.mark.parametrize(
    ("stop", "said"), [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl-C (SIGINT)")]
)
def test_a_stopping_signal_while_loading_says_so_and_writes_no_report(
    tmp_path: Path, stop: signal.Signals, said: str
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    loading = tmp_path / "loading"
    # A plugin whose import takes as long as the test wants: the run is still loading.
    (plugins / "slow_plugin.py").write_text(
        f"import pathlib, time\npathlib.Path({str(loading)!r}).touch()\ntime.sleep(600)\n",
        "utf-8",
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), *sys.path])}
    # Ctrl-C as at a terminal, even when this test runs in a background job (which ignores it)
    main = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    command = [sys.executable, "-c", main + "from agentrig.harness.cli import main; main()"]
    reports = tmp_path / "r"
    arguments = [str(suite(tmp_path / "s", 2)), "--plugin", "slow_plugin", "--report-dir"]
    process = _started([*command, "run", *arguments, str(reports)], env)
    try:
        assert _wait_for(loading.exists), "the plugin never started loading"
        os.kill(process.pid, stop)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    text = " ".join(output.decode().split())
    assert process.returncode == 128 + stop, text
    assert "Traceback" not in text
    assert (
        f"interrupted by {said} while loading the scenarios: none ran; no reports written" in text
    )
    assert not reports.exists()


def test_a_file_that_changed_its_scenario_while_the_suite_ran_is_a_clear_error(
    tmp_path: Path,
) -> None:
    # Workers load each file again (and keep no scenario once run): one that now holds another
    # scenario is named, not run under the old name.
    folder = suite(tmp_path / "s", 2)
    scenarios = load_scenarios(folder)
    (folder / "case-01.scenario.yaml").write_text(SCENARIO.format(name="renamed"), "utf-8")
    with pytest.raises(SuiteError, match=r"case-01\.scenario\.yaml changed while the suite ran"):
        run_suite(scenarios, workers=2)
