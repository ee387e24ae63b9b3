"""``agentrig run`` with plugins and worker processes: crashes, dead workers, Ctrl-C."""

from __future__ import annotations

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
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    marks = tmp_path / "marks"  # a file per scenario whose check started
    marks.mkdir()
    # The first scenarios pass at once; the later ones block for ten minutes. However busy the
    # machine, the suite cannot end before the Ctrl-C, and ends within the timeout below only
    # if the Ctrl-C stops the blocked workers instead of waiting for them.
    invariant_plugin(
        plugins,
        "audit_plugin_gated",
        "audit_gated",
        f"import time; marks = {str(marks)!r}; n = len(os.listdir(marks)); "
        "open(os.path.join(marks, f'{os.getpid()}-{time.monotonic_ns()}'), 'x').close(); "
        "time.sleep(0 if n < 4 else 600)",
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), *sys.path])}
    # Ctrl-C as at a terminal, even when this test runs in a background job (which ignores it)
    main = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    command = [sys.executable, "-c", main + "from agentrig.harness.cli import main; main()"]
    arguments = [str(suite(tmp_path / "s", 40)), "-n", "2", "--plugin", "audit_plugin_gated"]
    process = subprocess.Popen(
        [*command, "run", *arguments, "--report-dir", str(tmp_path / "r")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # its own process group: Ctrl-C reaches the workers too
    )
    try:
        assert _wait_for(lambda: len(os.listdir(marks)) > 4), "no scenario blocked"
        os.killpg(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    text = " ".join(output.decode().split())
    assert process.returncode == 130, text
    assert "Traceback" not in text
    reported = re.search(r"interrupted: (\d+) of 40 scenario\(s\) ran: \1 passed, 0 failed", text)
    assert reported is not None, text
    assert int(reported.group(1)) <= 5  # only scenarios that did not block (4, or 5 in a race)
    assert _wait_for(lambda: _live_members(process.pid) == []), _live_members(process.pid)


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
