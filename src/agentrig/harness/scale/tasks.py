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
"""How long a finished task's result waits for the tasks finishing after it, to be fetched with
them: each fetch is a round trip to the scheduler and to the workers holding the results, which
cost this process and the workers more than a scenario of milliseconds."""
_POLL_S = 0.005


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
    raised: its future's ``exception()`` says why). The results of the tasks that finish within
    :data:`BATCH_WAIT_S` of one another are fetched together, in one round trip (from the
    workers themselves when ``client`` is ``direct_to_workers``). Ctrl-C while finished results
    wait for others raises ``KeyboardInterrupt`` once they have come back."""
    from distributed import as_completed

    done = as_completed(futures, loop=client.loop)
    for batch in done.batches():
        interrupted: KeyboardInterrupt | None = None
        deadline = time.monotonic() + BATCH_WAIT_S
        try:
            while not done.is_empty() and time.monotonic() < deadline:
                time.sleep(_POLL_S)
                batch += done.next_batch(block=False)
        except KeyboardInterrupt as stop:  # what had finished is still fetched, then stop
            interrupted = stop
        fetched = client.gather({future.key: future for future in batch}, errors="skip")
        for future in batch:
            yield future, fetched.get(future.key)
        if interrupted is not None:
            raise interrupted
