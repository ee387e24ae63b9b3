"""``--dist loadgroup`` with the pending tests of each worker counted as they change.

xdist's group scheduler makes every test outside an ``xdist_group`` a work unit of its own, and
after each test a worker reports, recounts the tests still pending on that worker by walking
every unit it was ever given (and finds each test's index by a search of the whole
collection). Over this suite's ~6,000 tests that is quadratic: measured, about 1.5 CPU s of
the controller's per 3,000 tests, on a 2-CPU machine where the controller competes with the
workers. This scheduler keeps each worker's count instead, and an index of each collection;
what it sends, and when, is what xdist's would, but for a unit with nothing left to run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from xdist.remote import Producer
    from xdist.workermanage import WorkerController


def counted_scheduler(config: pytest.Config, log: Producer) -> Any:
    """A ``LoadGroupScheduling`` whose pending counts and test indexes cost O(1)."""
    from xdist.scheduler import LoadGroupScheduling

    class CountedLoadGroupScheduling(LoadGroupScheduling):  # type: ignore[misc]
        def __init__(self, config: pytest.Config, log: Producer | None = None) -> None:
            super().__init__(config, log)
            # a worker's workload (the dict xdist keeps for it) -> its tests not yet reported
            self._left: dict[int, int] = {}
            self._index: dict[WorkerController, dict[str, int]] = {}
            # tests a worker crashed in: reported failed by xdist, never to be run again
            self._crashed: set[str] = set()

        def add_node(self, node: WorkerController) -> None:
            super().add_node(node)
            self._left[id(self.assigned_work[node])] = 0

        def add_node_collection(self, node: WorkerController, collection: Any) -> None:
            super().add_node_collection(node, collection)
            self._index[node] = {nodeid: i for i, nodeid in enumerate(collection)}

        def remove_node(self, node: WorkerController) -> str | None:
            # xdist gives a crashed worker's units back with the test it crashed in (the
            # first not run, which xdist reports failed) still pending: run again, it would
            # crash the next worker, and the next
            pending = (
                nodeid
                for unit in self.assigned_work[node].values()
                for nodeid, done in unit.items()
                if not done
            )
            crashed = next(pending, None)
            if crashed is not None:
                self._crashed.add(crashed)
            return super().remove_node(node)

        def mark_test_complete(
            self, node: WorkerController, item_index: int, duration: float = 0
        ) -> None:
            nodeid = self.registered_collections[node][item_index]
            unit = self.assigned_work[node][self._split_scope(nodeid)]
            if not unit[nodeid]:
                self._left[id(self.assigned_work[node])] -= 1
            super().mark_test_complete(node, item_index, duration)

        def _assign_work_unit(self, node: WorkerController) -> None:
            while self.workqueue:
                scope, unit = self.workqueue.popitem(last=False)
                for nodeid in self._crashed.intersection(unit):
                    unit[nodeid] = True
                pending = [nodeid for nodeid, done in unit.items() if not done]
                if pending:
                    break
                # A unit a crashed worker had already run, given back with its unfinished
                # ones: xdist sends it as an empty list, after which the worker given it
                # never reports a test, so it is never given more and the run hangs.
            else:
                return
            workload = self.assigned_work.setdefault(node, {})
            workload[scope] = unit
            self._left[id(workload)] = self._left.get(id(workload), 0) + len(pending)
            index = self._index[node]
            node.send_runtest_some([index[nodeid] for nodeid in pending])

        def _pending_of(self, workload: dict[str, dict[str, bool]]) -> int:
            left = self._left.get(id(workload))
            return super()._pending_of(workload) if left is None else left

    return CountedLoadGroupScheduling(config, log)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> Any:
    """The counted scheduler for ``--dist loadgroup``; xdist's own for any other mode."""
    if config.getvalue("dist") != "loadgroup":
        return None
    return counted_scheduler(config, log)
