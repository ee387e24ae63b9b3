"""The traffic control of live trials on a Dask cluster: each provider's concurrency cap and
the budgets hold across every worker, not per worker.

A call to a provider first takes a lease of the cluster's semaphore for it (a
``distributed.Semaphore`` of ``cap`` leases, one per provider and run, kept by the scheduler),
then is admitted by the budgets (the run's ``--budget-usd`` and the scenario's
``trials.budget_usd``: admitted while less than the limit is spent, cluster-wide), then goes
through this worker's own :class:`~agentrig.harness.live.limits.Traffic`, which backs off and
retries on rate limits, and is charged. What a worker spent is kept on the scheduler under the
worker's name (each worker writes only its own entry, so no lock is needed), and admission adds
them up. So, as in one process, the run overshoots a budget by less than the cost of the calls in
flight when it was reached, at most one per lease. A worker that dies holding leases gives them
back after ``distributed.scheduler.locks.lease-timeout`` (30 s by default).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from agentrig.harness.live.budget import Budget, BudgetExhausted
from agentrig.harness.live.limits import ProviderLimits, Traffic
from agentrig.harness.live.options import DEFAULT_PROVIDER_CAP

if TYPE_CHECKING:
    from distributed import Semaphore

__all__ = ["ClusterBudget", "ClusterControl", "ClusterLimits"]

T = TypeVar("T")
_PROCESS = uuid.uuid4().hex[:8]
"""Tells apart two lives of a worker at one address."""
RUN_BUDGET = "the run's budget (--budget-usd)"


@dataclass(frozen=True, slots=True)
class ClusterLimits:
    """The limits a live run holds to across the cluster: ``caps`` (calls in flight per
    provider; ``default_cap`` for the others) and the run's ``budget_usd`` (None: no limit)."""

    caps: Mapping[str, int] = field(default_factory=dict)
    default_cap: int = DEFAULT_PROVIDER_CAP
    budget_usd: float | None = None

    def __post_init__(self) -> None:
        ProviderLimits(self.caps, default_cap=self.default_cap)  # refuses a bad cap, by field
        if self.budget_usd is not None:
            Budget(self.budget_usd, name=RUN_BUDGET)  # refuses a bad amount

    def cap(self, provider: str) -> int:
        """The most calls in flight to ``provider`` across the cluster."""
        return self.caps.get(provider, self.default_cap)


class ClusterBudget:
    """A spending limit of ``usd`` shared by every worker, ``key`` naming it on the scheduler
    within ``run`` (a launcher's namespace); ``name`` names it in ``BudgetExhausted``. Use it in
    a task of a worker."""

    def __init__(self, run: str, key: str, usd: float, name: str) -> None:
        self.usd = usd
        self.name = name
        self._path = [run, "spent", key]
        self._mine = 0.0
        self._lock = asyncio.Lock()  # this worker's charges reach the scheduler in order

    async def spent(self) -> float:
        """What every worker charged so far."""
        entries: dict[str, float] = await _scheduler().get_metadata(keys=self._path, default={})
        return sum(entries.values())

    async def admit(self) -> None:
        """Raise ``BudgetExhausted`` once what was spent reaches the limit."""
        spent = await self.spent()
        if spent >= self.usd:
            raise BudgetExhausted(self.name, self.usd, spent)

    async def charge(self, cost: float) -> None:
        """Add ``cost`` to what this worker spent."""
        async with self._lock:
            self._mine += cost
            worker = f"{_worker_address()}/{_PROCESS}"
            await _scheduler().set_metadata(keys=[*self._path, worker], value=self._mine)


class ClusterControl:
    """A :class:`~agentrig.harness.live.gateway.CallControl` for one scenario's trials on a
    worker: cluster-wide caps and budgets around this worker's ``traffic`` (see the module)."""

    def __init__(
        self,
        limits: ClusterLimits,
        run: str,
        traffic: Traffic,
        budgets: tuple[ClusterBudget, ...],
    ) -> None:
        self.limits = limits
        self.run = run
        self.traffic = traffic
        self.budgets = budgets
        self._semaphores: dict[str, Semaphore] = {}

    async def _semaphore(self, provider: str) -> Semaphore:
        """``provider``'s cap, made known to the scheduler once (not at every call)."""
        from distributed import Semaphore

        if provider not in self._semaphores:
            semaphore = Semaphore(
                max_leases=self.limits.cap(provider), name=f"{self.run}-{provider}"
            )
            self._semaphores[provider] = await semaphore
        return self._semaphores[provider]

    async def call(
        self,
        provider: str,
        make_call: Callable[[], Awaitable[T]],
        cost_of: Callable[[T], float],
    ) -> T:
        """``make_call()``'s answer, sent under a lease of ``provider``'s cap once every budget
        admits it, then charged to each. Once answered, the call is charged and its lease given
        back even if the trial is cancelled meanwhile (those are round trips to the scheduler):
        the answer still reaches the trial, which counts it as a local run does, and the
        cancellation takes effect at the trial's next wait."""
        semaphore = await self._semaphore(provider)
        await semaphore.acquire()
        try:
            for budget in self.budgets:
                await budget.admit()
            answer = await self.traffic.call(provider, make_call, cost_of)
        except BaseException as error:
            cancelled = isinstance(error, asyncio.CancelledError)
            await _completed(semaphore.release(), rearm=not cancelled)
            raise
        await _completed(self._settled(semaphore, cost_of(answer)), rearm=True)
        return answer

    async def _settled(self, semaphore: Semaphore, cost: float) -> None:
        for budget in self.budgets:
            await budget.charge(cost)
        await semaphore.release()


async def _completed(work: Awaitable[None], *, rearm: bool) -> None:
    """Await ``work`` to its end, even through cancellations of this task; with ``rearm``, a
    cancellation that came meanwhile is made again, to take effect at this task's next wait."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled and rearm:
        current = asyncio.current_task()
        assert current is not None
        current.cancel()
    task.result()


def _scheduler() -> Any:
    from distributed import get_worker

    return get_worker().scheduler


def _worker_address() -> str:
    from distributed import get_worker

    return str(get_worker().address)
