"""``--executor``: read, refused with the option named, and a scheduler that does not answer."""

from __future__ import annotations

import gc
import os
import signal
import socket
import sys
import threading
import time
from typing import Any

import pytest

from agentrig.errors import ConfigurationError, InvalidInputError, MissingDependencyError
from agentrig.harness.scale import cluster as cluster_module
from agentrig.harness.scale.cluster import (
    LIVE_WORKER_MODULES,
    WORKER_MODULES,
    DaskExecutor,
    dask_client,
    parse_executor,
    require_dask,
    start_worker_server,
)
from agentrig.harness.suites.worker_server import SERVER_VARIABLE
from agentrig.harness.suites.worker_start import POOL_MODULES


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("local", None),
        ("dask", DaskExecutor()),
        ("dask://10.0.0.5:8786", DaskExecutor("tcp://10.0.0.5:8786")),
        ("dask://scheduler.internal:8786", DaskExecutor("tcp://scheduler.internal:8786")),
        ("dask://[::1]:8786", DaskExecutor("tcp://[::1]:8786")),
    ],
)
def test_an_executor_is_read(text: str, expected: DaskExecutor | None) -> None:
    assert parse_executor(text) == expected
    if expected is not None:
        assert str(expected) == text


@pytest.mark.parametrize(
    "text", ["ray", "dask:", "dask://host", "dask://host:0", "dask://host:70000", "tcp://h:1", ""]
)
def test_an_unknown_executor_is_refused_naming_the_option(text: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_executor(text)
    assert caught.value.field == "--executor"
    assert "dask://HOST:PORT" in str(caught.value)


def test_without_distributed_the_error_names_the_dask_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MissingDependencyError, match=r"agentrig\[dask\]"):
        require_dask()


def test_a_scheduler_that_does_not_answer_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    # nothing listens there: no answer comes, however long it waits
    monkeypatch.setattr(cluster_module, "CONNECT_TIMEOUT", 0.01)
    with (
        pytest.raises(
            ConfigurationError, match=rf"no Dask scheduler answered at tcp://127.0.0.1:{port}"
        ),
        dask_client(parse_executor(f"dask://127.0.0.1:{port}")),
    ):  # type: ignore[arg-type]
        pass


def test_the_front_door_names_what_its_modules_define() -> None:
    import agentrig.harness.scale as scale

    for name in scale.__all__:
        assert getattr(scale, name).__module__.startswith("agentrig.harness.scale."), name
    assert "distributed" not in _imported_by("import agentrig.harness.scale").split()


def _imported_by(statement: str) -> str:
    import subprocess

    code = f"{statement}; import sys; print(' '.join(sorted(sys.modules)))"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout


@pytest.mark.slow
def test_local_workers_start_with_their_modules_and_this_process_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the process the workers are forked from, started as a live run does (conftest.py)
    assert start_worker_server() == "forkserver"
    monkeypatch.setenv("AGENTRIG_SCALE_LATE", "set after that process started")
    with dask_client(DaskExecutor(), workers=1) as client:
        found = client.run(
            lambda: (
                {
                    name: name in sys.modules
                    for name in WORKER_MODULES + LIVE_WORKER_MODULES + POOL_MODULES
                },
                os.environ.get("AGENTRIG_SCALE_LATE"),
                signal.getsignal(signal.SIGINT),
                signal.getsignal(signal.SIGTERM),
                gc.get_freeze_count(),
                SERVER_VARIABLE in os.environ,
            )
        )
    [(imported, late, on_sigint, on_sigterm, frozen, named)] = found.values()
    # before any task brought them
    assert imported == dict.fromkeys(WORKER_MODULES + LIVE_WORKER_MODULES + POOL_MODULES, True)
    assert late == "set after that process started"
    # Ctrl-C is this process's; the server's imports frozen (the worker froze nothing itself)
    assert (on_sigint, frozen > 0, named) == (signal.SIG_IGN, True, False)
    # SIGTERM ends a worker, as in any process (the server it is forked from ignores it)
    assert on_sigterm == signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    assert SERVER_VARIABLE not in os.environ


@pytest.mark.parametrize("processes", [False, True])
def test_a_closed_cluster_leaves_no_thread_running_behind(processes: bool) -> None:
    before = set(threading.enumerate())
    with dask_client(DaskExecutor(), workers=1, processes=processes) as client:
        assert client.submit(len, "four").result() == 4
    # Dask's offload pool may start its one thread here: idle, it runs no loop nor callback
    left = [
        thread
        for thread in threading.enumerate()
        if thread not in before and not thread.name.startswith("Dask-Offload")
    ]
    # A worker process's watcher thread ends when Dask lets go of the process (a finalizer, so
    # after a collection), not at the close itself: on a busy machine it may still be ending
    gc.collect()
    deadline = time.monotonic() + 30.0  # far beyond a busy machine's delay, not a speed check
    for thread in left:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    assert [thread.name for thread in left if thread.is_alive()] == []


def test_a_local_cluster_checks_its_loops_each_second_and_runs_no_profiler() -> None:
    def timers(dask_worker: Any = None, dask_scheduler: Any = None) -> dict[str, float]:
        server = dask_worker or dask_scheduler
        return {name: pc.callback_time for name, pc in server.periodic_callbacks.items()}

    with dask_client(DaskExecutor(), workers=1, processes=False) as client:
        [worker] = client.run(timers).values()
        scheduler = client.run_on_scheduler(timers)
    assert worker["tick"] == scheduler["tick"] == 1000  # ms, Dask's default 20
    assert "profile" not in worker
    assert "profile-cycle" not in worker
