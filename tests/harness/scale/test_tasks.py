"""Many short tasks: one per argument, never merged, and their results back as they finish,
those finished together fetched in one round trip."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from distributed import Client

from agentrig.harness.scale.tasks import finished, map_tasks


def halve(number: int, *, by: int = 2) -> float:
    if number < 0:
        raise ValueError(f"negative: {number}")
    return number / by


def test_each_task_comes_back_once_with_its_result(cluster: Client) -> None:
    futures = map_tasks(cluster, halve, list(range(50)), name="halves", by=4)
    results = {future.key: result for future, result in finished(cluster, futures)}
    assert results == {future.key: i / 4 for i, future in enumerate(futures)}


def test_a_task_that_raised_comes_back_with_none_and_its_error(cluster: Client) -> None:
    futures = map_tasks(cluster, halve, [4, -1, 6], name="halves")
    back = dict(finished(cluster, futures))
    assert [back[future] for future in futures] == [2.0, None, 3.0]
    with pytest.raises(ValueError, match="negative: -1"):
        raise futures[1].exception()  # type: ignore[misc]


def test_equal_tasks_are_kept_apart_within_a_call_and_across_calls(cluster: Client) -> None:
    first = map_tasks(cluster, halve, [8, 8], name="same")
    second = map_tasks(cluster, halve, [8], name="same")
    keys = [str(future.key) for future in [*first, *second]]
    assert len(set(keys)) == 3
    assert all(key.startswith("same-") for key in keys)
    assert keys[0].rsplit("-", 1)[0] == keys[1].rsplit("-", 1)[0] != keys[2].rsplit("-", 1)[0]


def test_results_finished_together_are_fetched_in_one_round_trip(
    cluster: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    futures = map_tasks(cluster, halve, list(range(40)), name="together")
    cluster.gather(futures)  # all finished before they are asked for
    fetches: list[int] = []
    gather = cluster.gather

    def counted(wanted: dict[Any, Any], **options: Any) -> Any:
        fetches.append(len(wanted))
        return gather(wanted, **options)

    monkeypatch.setattr(cluster, "gather", counted)
    back: Iterator[tuple[Any, Any]] = finished(cluster, futures)
    assert sorted(result for _, result in back) == [i / 2 for i in range(40)]
    assert fetches == [40]
