"""Pool workers forked from the worker server: what they have before their first scenario, the
environment they run in, and a server that outlives a SIGTERM sent to the whole group."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentrig.harness.scenarios.loader import load_scenarios
from agentrig.harness.suites.suite import run_suite
from agentrig.harness.suites.worker_server import SERVER_VARIABLE
from agentrig.harness.suites.worker_start import POOL_MODULES, start_worker_server

pytestmark = pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(),
    reason="no fork server here (Windows): workers are spawned",
)

SCENARIO = """\
name: case-{index}
turns:
  - user: hi
    model: [{{say: hello}}]
    expect: {{status: completed, final_response: hello}}
"""

# Imported by each worker before its first scenario: it writes down what the worker has then.
PROBE = """\
import gc, json, os, signal, sys
record = {{
    "late": os.environ.get("AGENTRIG_POOL_LATE"),
    "server_named": {variable!r} in os.environ,
    "imported": [name for name in {modules!r} if name not in sys.modules],
    "sigint_ignored": signal.getsignal(signal.SIGINT) == signal.SIG_IGN,
    "frozen": gc.get_freeze_count(),
    "parent": os.getppid(),
}}
with open(os.path.join({folder!r}, str(os.getpid())), "w") as out:
    json.dump(record, out)
"""


@pytest.fixture
def probed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder where each worker of a pool run with plugin ``pool_probe`` leaves its record."""
    records = tmp_path / "records"
    records.mkdir()
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    text = PROBE.format(variable=SERVER_VARIABLE, modules=POOL_MODULES, folder=str(records))
    (plugins / "pool_probe.py").write_text(text, "utf-8")
    monkeypatch.syspath_prepend(str(plugins))
    yield records
    sys.modules.pop("pool_probe", None)


def _run_in_two_workers(folder: Path, records: Path) -> list[dict[str, Any]]:
    """Run two scenarios on two workers; each worker's record."""
    folder.mkdir(exist_ok=True)
    for index in range(2):
        (folder / f"case-{index}.scenario.yaml").write_text(SCENARIO.format(index=index), "utf-8")
    result = run_suite(load_scenarios(folder), workers=2, plugins=["pool_probe"])
    assert [s.passed for s in result.scenarios] == [True, True]
    found = [json.loads(path.read_text("utf-8")) for path in sorted(records.iterdir())]
    for path in records.iterdir():
        path.unlink()
    return found


def test_pool_workers_start_with_their_modules_and_this_process_environment(
    tmp_path: Path, probed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as `agentrig run --workers 2` starts it, before the run
    assert start_worker_server() == "forkserver"
    monkeypatch.setenv("AGENTRIG_POOL_LATE", "set after the worker server started")
    records = _run_in_two_workers(tmp_path / "s", probed)
    assert len(records) == 2
    for record in records:
        # the environment of now, not the one the server started with
        assert record["late"] == "set after the worker server started"
        assert record["server_named"] is False
        # forked from the server: runner, loader and command imported, Ctrl-C ignored, the
        # imports frozen, all before the worker began (a spawned one has none of it yet)
        assert record["imported"] == []
        assert record["sigint_ignored"] is True
        assert record["frozen"] > 0
        assert record["parent"] != os.getpid()


def test_the_worker_server_outlives_a_sigterm_while_this_process_lives(
    tmp_path: Path, probed: Path
) -> None:
    start_worker_server()
    [server] = {record["parent"] for record in _run_in_two_workers(tmp_path / "s", probed)}
    assert server != os.getpid()  # not this process (a spawned worker's parent)
    # A signal to the whole group (a CI runner stopping the job) is this process's to handle:
    # the server ignores it, and the next pool's workers are forked from it still (a server
    # that ended would be started again: another parent, or no worker at all).
    os.kill(server, signal.SIGTERM)
    os.kill(server, signal.SIGHUP)
    again = _run_in_two_workers(tmp_path / "s", probed)
    assert {record["parent"] for record in again} == {server}
