"""The suite's own xdist grouping (``tests/conftest.py``) reaches the scheduler: a test of an
``xdist_group``, or of a module with a module-scoped fixture, carries its group in its node id
on a worker, which is what keeps a group on one worker under ``--dist loadgroup``."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def built_once() -> int:
    return 1


def _on_a_loadgroup_worker(request: pytest.FixtureRequest) -> None:
    if not request.config.getoption("loadgroup", default=False):
        pytest.skip("runs only on an xdist worker under --dist loadgroup")


@pytest.mark.xdist_group("grouping-check")
def test_a_marked_group_is_in_the_node_id(request: pytest.FixtureRequest) -> None:
    _on_a_loadgroup_worker(request)
    assert request.node.nodeid.endswith("@grouping-check")


def test_a_module_fixtures_tests_share_the_modules_group(
    request: pytest.FixtureRequest, built_once: int
) -> None:
    _on_a_loadgroup_worker(request)
    assert request.node.nodeid.endswith("@tests/test_suite_grouping.py")
