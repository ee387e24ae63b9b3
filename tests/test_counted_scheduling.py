"""The suite's xdist scheduler (tests/counted_scheduling.py): what it sends and when is what
xdist's group scheduler sends, and a crashed worker neither hangs the run nor crashes the next."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("xdist")
from xdist.scheduler import LoadGroupScheduling

counted_scheduling = sys.modules["counted_scheduling"]  # loaded by tests/conftest.py

COLLECTION = [
    *(f"t.py::test_alone[{i}]" for i in range(7)),
    *(f"g.py::test_grouped[{i}]@docs" for i in range(5)),
    *(f"u.py::test_more[{i}]" for i in range(6)),
    *(f"h.py::test_three[{i}]@h.py" for i in range(3)),
    *(f"w.py::test_four[{i}]@wheel" for i in range(4)),
    "t.py::test_last",
]


class Node:
    """A worker as the scheduler sees it: it is sent indexes and may be shut down."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[list[int]] = []
        self.shutting_down = False

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.append(list(indexes))

    def shutdown(self) -> None:
        self.shutting_down = True

    def queue(self) -> list[int]:
        return [index for batch in self.sent for index in batch]


def started(scheduler: Any, *nodes: Node) -> Any:
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, COLLECTION)
    scheduler.schedule()
    return scheduler


def run_all(scheduler: Any, nodes: tuple[Node, ...]) -> list[tuple[str, list[list[int]]]]:
    """Let the nodes report their tests in turn, one a turn, until none is left; what each was
    sent, in order."""
    done = {node.name: 0 for node in nodes}
    while True:
        moved = False
        for node in nodes:
            queue = node.queue()
            if done[node.name] < len(queue):
                scheduler.mark_test_complete(node, queue[done[node.name]])
                done[node.name] += 1
                moved = True
            # the count kept is xdist's recount
            for workload in scheduler.assigned_work.values():
                recount = LoadGroupScheduling._pending_of(scheduler, workload)
                assert scheduler._pending_of(workload) == recount
        if not moved:
            return [(node.name, node.sent) for node in nodes]


@pytest.fixture
def config(pytester: pytest.Pytester) -> pytest.Config:
    return pytester.parseconfig("--tx", "2*popen", "--dist", "loadgroup", "-p", "xdist")


def test_it_sends_what_xdists_group_scheduler_sends(config: pytest.Config) -> None:
    ours = (Node("gw0"), Node("gw1"))
    theirs = (Node("gw0"), Node("gw1"))
    counted = started(counted_scheduling.counted_scheduler(config, None), *ours)
    xdists = started(LoadGroupScheduling(config, None), *theirs)
    assert run_all(counted, ours) == run_all(xdists, theirs)
    assert sorted(i for node in ours for i in node.queue()) == list(range(len(COLLECTION)))
    assert counted.tests_finished
    assert not counted.has_pending


def test_a_crashed_worker_neither_hangs_the_run_nor_crashes_the_next(
    config: pytest.Config,
) -> None:
    first, other = Node("gw0"), Node("gw1")
    scheduler = started(counted_scheduling.counted_scheduler(config, None), first, other)
    # the first worker runs the whole of its first unit and a test more, then crashes
    ran = first.queue()[: len(first.sent[0]) + 1]
    for index in ran:
        scheduler.mark_test_complete(first, index)
    crashed_in = first.queue()[len(ran)]
    assert scheduler.remove_node(first) == COLLECTION[crashed_in]

    replacement = Node("gw2")
    scheduler.add_node(replacement)
    scheduler.add_node_collection(replacement, COLLECTION)
    scheduler.schedule()
    run_all(scheduler, (other, replacement))
    assert scheduler.tests_finished
    assert not scheduler.has_pending
    assert replacement.sent, "the replacement was given nothing"
    assert [] not in replacement.sent + other.sent
    # every test ran once, but the crashed one, never again
    again = replacement.queue() + other.queue()
    assert crashed_in not in again
    assert sorted(again + ran + [crashed_in]) == list(range(len(COLLECTION)))
