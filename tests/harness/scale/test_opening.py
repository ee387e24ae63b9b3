"""``ClusterOpening``: a cluster opened in the background, its client once open, what opening it
raised, and nothing left behind however it ends (closed while still opening, or after an
error)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from agentrig.errors import ConfigurationError
from agentrig.harness.scale import cluster as cluster_module
from agentrig.harness.scale.cluster import DaskExecutor
from agentrig.harness.scale.opening import ClusterOpening
from agentrig.harness.scale.session import dask_session
from agentrig.harness.scenarios.loader import load_scenario

SCRIPTED = """\
name: hello
turns:
  - user: hi
    model: [{say: hello}]
    expect: {status: completed, final_response: hello}
"""


def test_the_cluster_opens_while_this_process_goes_on_and_runs_tasks(
    threads_left: Callable[[], list[str]],
) -> None:
    with ClusterOpening(DaskExecutor(), workers=2, processes=False) as opening:
        client = opening.client()
        assert len(client.scheduler_info()["workers"]) == 2
        assert client.submit(len, "four").result() == 4
        assert opening.client() is client
    assert client.status == "closed"
    assert threads_left() == []


def test_a_cluster_closed_while_still_opening_leaves_no_thread_nor_worker_behind(
    threads_left: Callable[[], list[str]], processes_left: Callable[[], set[int]]
) -> None:
    opening = ClusterOpening(DaskExecutor(), workers=2)
    opening.close()  # at once: the scenarios did not load, nothing asked for the client
    opening.close()  # and again: nothing more
    assert threads_left() == []
    assert processes_left() == set()


def test_a_cluster_closed_after_an_error_stops_its_workers(
    threads_left: Callable[[], list[str]], processes_left: Callable[[], set[int]]
) -> None:
    opening = ClusterOpening(DaskExecutor(), workers=1)
    [worker] = opening.client().run(os.getpid).values()
    assert psutil.pid_exists(worker)
    opening.close(KeyboardInterrupt())  # Ctrl-C in the run
    assert threads_left() == []
    assert processes_left() == set()


def test_a_scheduler_that_does_not_answer_is_raised_where_the_client_is_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    monkeypatch.setattr(cluster_module, "CONNECT_TIMEOUT", 0.3)
    with ClusterOpening(DaskExecutor(f"tcp://127.0.0.1:{port}")) as opening:
        with pytest.raises(ConfigurationError, match=f"no Dask scheduler answered at .*:{port}"):
            opening.client()
        with pytest.raises(ConfigurationError):  # asked again: the same answer
            opening.client()


def test_a_session_refuses_a_cluster_opened_with_other_task_slots_and_closes_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hello.scenario.yaml"
    path.write_text(SCRIPTED)
    opening = ClusterOpening(DaskExecutor(), workers=1, threads_per_worker=8, processes=False)
    with (
        pytest.raises(ValueError, match="8 task slot\\(s\\) a worker is not one for scripted"),
        dask_session(opening, [load_scenario(path)]),
    ):
        pytest.fail("the session opened")
    assert opening.client().status == "closed"


def test_a_session_runs_on_a_cluster_opened_for_it(tmp_path: Path) -> None:
    path = tmp_path / "hello.scenario.yaml"
    path.write_text(SCRIPTED)
    opening = ClusterOpening(DaskExecutor(), workers=1, processes=False, short_tasks=True)
    with dask_session(opening, [load_scenario(path)]) as client:
        assert client is opening.client()
        assert client.submit(len, "four").result() == 4
    assert client.status == "closed"
