"""Many short tasks on a Dask cluster: one task per argument, and their results back as they
finish, those finishing close together fetched in one round trip (docs/performance.md, "On a
Dask cluster")."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from distributed import Client, Future

__all__ = ["BATCH_WAIT_S", "finished", "map_tasks"]

R = TypeVar("R")

BATCH_WAIT_S = 0.1
"""How long at most a finished task's result waits for the tasks finishing after it, to be
fetched with them: each fetch is a round trip to the scheduler and to the workers holding the
results, which cost this process and the workers more than a scenario of milliseconds."""
_POLL_S = 0.01
"""A batch grows while more tasks finish within this of one another."""


def map_tasks(
    client: Client,
    function: Callable[..., R],
    arguments: Sequence[object],
    *,
    name: str,
    **kwargs: Any,
) -> list[Future[R]]:
    """One task of ``client``'s cluster per argument, running ``function(argument, **kwargs)``,
    keyed ``NAME-RUN-I`` (``RUN`` new at each call: equal tasks are never merged)."""
    run = secrets.token_hex(4)
    keys = [f"{name}-{run}-{i}" for i in range(len(arguments))]
    return client.map(function, list(arguments), **kwargs, key=keys, pure=False)


def finished(client: Client, futures: Sequence[Future[R]]) -> Iterator[tuple[Future[R], R | None]]:
    """Each of ``futures`` with its result, as it finishes (the result None for a task that
    raised: its future's ``exception()`` says why). The results of tasks finishing one after
    the other (each within 10 ms of the last, for at most :data:`BATCH_WAIT_S`) are fetched
    together, in one round trip (from the workers themselves when ``client`` is
    ``direct_to_workers``)."""
    from distributed import as_completed

    done = as_completed(futures, loop=client.loop)
    for batch in done.batches():
        deadline = time.monotonic() + BATCH_WAIT_S
        while not done.is_empty() and time.monotonic() < deadline:
            time.sleep(_POLL_S)
            more = done.next_batch(block=False)
            if not more:  # none finished meanwhile: the batch is what finished together
                break
            batch += more
        fetched = client.gather({future.key: future for future in batch}, errors="skip")
        for future in batch:
            yield future, fetched.get(future.key)
