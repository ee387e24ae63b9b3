"""Live trials on a Dask cluster: each trial (scenario, index, attempt) is one task.

The trials are still decided here, by the scenario's scheduler, in index order: the verdict
does not depend on where or when each trial ran. This process alone reads and writes the trial
cache: a task carries its recorded trial (if any) to the worker and brings its new recording
back, and only then is it kept. A worker that dies mid-trial costs nothing but time: the
scheduler runs the task again on another worker, and its outcome is taken once. A trial whose
workers keep dying is set aside (``infrastructure``) and run again as its next attempt, as a
provider outage would be.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import secrets
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentrig.harness.cassettes.model import Cassette
from agentrig.harness.live.cache import CachedTrial, TrialCache
from agentrig.harness.live.gateway import Ledger
from agentrig.harness.live.limits import ProviderLimits, Traffic
from agentrig.harness.live.roles import close_clients, sdk_clients
from agentrig.harness.live.run import LiveRun, RoleFactory, RoleModels, prepare_trials
from agentrig.harness.live.trial import TrialOutcome, TrialSetup, TrialStatus, run_trial
from agentrig.harness.scale.control import RUN_BUDGET, ClusterBudget, ClusterControl, ClusterLimits
from agentrig.harness.scale.workers import ensure_plugins
from agentrig.harness.scenarios.model import Scenario
from agentrig.state import Usage

if TYPE_CHECKING:
    from distributed import Client, Future

__all__ = ["DaskTrials"]

Recording = tuple[dict[str, Cassette], list[dict[str, Any]] | None, dict[str, Any]]
"""What a worker recorded of a trial, for this process to keep: cassettes, replies, outcome."""


class DaskTrials:
    """A :data:`~agentrig.harness.live.run.TrialLauncher` running each trial as one task of
    ``client``'s cluster, whose workers import ``plugins`` first and hold to ``limits`` together.
    Set it as ``LiveRun.launcher``; :meth:`close` forgets the run on the cluster."""

    def __init__(
        self, client: Client, limits: ClusterLimits | None = None, plugins: Sequence[str] = ()
    ) -> None:
        self.client = client
        self.limits = limits or ClusterLimits()
        self.plugins = tuple(plugins)
        self.namespace = f"agentrig-{secrets.token_hex(6)}"
        """Names what this launcher keeps on the cluster: its semaphores, the budgets' spend,
        the workers' setups (two runs of one ``--run-id`` on one cluster stay apart)."""

    async def __call__(self, setup: TrialSetup, index: int, attempt: int) -> TrialOutcome:
        """Trial ``index`` (its ``attempt``-th run) of ``setup.scenario``, run on a worker."""
        cache = setup.cache
        job = _TrialJob(
            setup.scenario,
            self.namespace,
            setup.run_id,
            self.limits,
            self.plugins,
            setup.user_model,
            setup.judge_model,
            record=cache is not None,
            cached=None if cache is None else cache.load(index, attempt),
        )
        key = f"agentrig-trial-{setup.scenario.name}-{index}.{attempt}-{secrets.token_hex(4)}"
        future = self.client.submit(
            _run_remote_trial, job, index, attempt, key, key=key, pure=False
        )
        try:
            done = await _finished(future)
        except asyncio.CancelledError:
            await self._stop(setup, key, future)
            raise
        except _killed_worker() as error:
            return _worker_lost(setup, index, attempt, error)
        assert not isinstance(done, Ledger), "only a trial stopped from here stops"
        outcome, recording = done
        if recording is not None and cache is not None:
            cache.save(index, attempt, *recording)  # the one writer of the cache
        return outcome

    async def _stop(self, setup: TrialSetup, key: str, future: Future[Any]) -> None:
        """Stop the trial of task ``key`` wherever it runs, as a local run cancels its trial,
        and add what it spent to ``setup.stopped`` (the report's cost, as the budgets have
        it); a trial not started yet never starts."""
        try:
            spent: dict[str, Ledger | None] = await asyncio.to_thread(
                self.client.run, _stop_trial, self.namespace, key
            )
        except Exception:  # the cluster is gone: nothing more can be known
            spent = {}
        finally:
            future.cancel()
        for ledger in spent.values():
            if ledger is not None:
                setup.stopped.add(ledger)

    def spent(self) -> dict[str, float]:
        """What the trials spent, by budget, summed over the workers: ``run`` (under
        ``--budget-usd``) and ``scenario/NAME`` (under a ``trials.budget_usd``); a trial stopped
        half-way (once the verdict is reached) counts, though the report's cost leaves it out."""
        kept = self.client.get_metadata([self.namespace, "spent"], default={})
        return {budget: sum(by_worker.values()) for budget, by_worker in kept.items()}

    def close(self) -> None:
        """Close the role models' clients the workers opened for this launcher and forget
        what the scheduler kept of it."""
        with contextlib.suppress(Exception):  # a worker or scheduler gone has nothing left
            self.client.run(_forget_run, self.namespace)
            self.client.run_on_scheduler(_forget_on_scheduler, self.namespace)


Finished = tuple[TrialOutcome, Recording | None] | Ledger
"""What a trial's task gives back: its outcome and recording, or (stopped from here) what it
had spent."""


async def _finished(future: Future[Any]) -> Finished:
    """``future``'s result, awaited on this event loop (cancellable) while the client's own
    loop, in its thread, waits for the cluster."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not done.done():
            done.set_result(None)

    def wake(_: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop ended: nobody waits any more
            loop.call_soon_threadsafe(settle)

    future.add_done_callback(wake)
    await done
    result: Finished = await asyncio.to_thread(future.result)
    return result


def _killed_worker() -> type[Exception]:
    from distributed import KilledWorker

    return KilledWorker


def _worker_lost(setup: TrialSetup, index: int, attempt: int, error: Exception) -> TrialOutcome:
    """A trial whose workers died every time it ran: set aside, to be run again."""
    from agentrig.harness.live.trial import trial_seed

    assert setup.scenario.trials is not None
    return TrialOutcome(
        index,
        attempt,
        trial_seed(setup.scenario.trials.seed, index, attempt),
        TrialStatus.SET_ASIDE,
        f"the Dask workers running this trial died: {error}",
        "infrastructure",
    )


@dataclass(frozen=True, slots=True)
class _TrialJob:
    """What a worker needs to run a trial of ``scenario``."""

    scenario: Scenario
    namespace: str
    run_id: str
    limits: ClusterLimits
    plugins: tuple[str, ...]
    user_model: RoleFactory | None
    judge_model: RoleFactory | None
    record: bool
    cached: CachedTrial | None


class _CarriedCache(TrialCache):
    """On a worker: the trial's recording carried in the task, and the new one kept in memory
    to be sent back (the client writes the cache)."""

    def __init__(self, scenario: Scenario, cached: CachedTrial | None) -> None:
        super().__init__(".", scenario)
        self.cached = cached
        self.saved: Recording | None = None

    def load(self, index: int, attempt: int) -> CachedTrial | None:
        return self.cached

    def save(
        self,
        index: int,
        attempt: int,
        cassettes: dict[str, Cassette],
        replies: list[dict[str, Any]] | None,
        outcome: dict[str, Any],
    ) -> Any:
        self.saved = (cassettes, replies, outcome)
        return self.trial_folder(index, attempt)


@dataclass
class _WorkerRun:
    """What a worker keeps of one run: its traffic, the scenarios' trial setups, the role
    providers opened for them."""

    traffic: Traffic
    setups: dict[str, TrialSetup] = dataclasses.field(default_factory=dict)
    opened: list[object] = dataclasses.field(default_factory=list)


@dataclass
class _Running:
    """A worker's trials of one run: those running (each task's key: the trial and what it
    spent once stopped), what those that ended here spent (until the run is forgotten: the
    launcher may stop a trial whose result is still on its way), and the keys stopped from the
    launcher's side."""

    trials: dict[str, tuple[asyncio.Task[TrialOutcome], Ledger]] = dataclasses.field(
        default_factory=dict
    )
    ended: dict[str, Ledger] = dataclasses.field(default_factory=dict)
    stopped: set[str] = dataclasses.field(default_factory=set)


_RUNS: dict[tuple[str, str], _WorkerRun] = {}
"""By (worker address, run id): workers of a cluster without processes share this module."""
_RUNNING: dict[tuple[str, str], _Running] = {}
"""As ``_RUNS``."""


async def _run_remote_trial(job: _TrialJob, index: int, attempt: int, key: str) -> Finished:
    """On a worker: run the trial of task ``key``, with the recording to keep; or, stopped
    from the launcher's side (:func:`_stop_trial`), what it spent."""
    from distributed import get_worker

    worker = get_worker()
    running = _RUNNING.setdefault((worker.address, job.namespace), _Running())
    if key in running.stopped:
        return Ledger()
    ensure_plugins(job.plugins)
    cache = _CarriedCache(job.scenario, job.cached) if job.record else None
    life = await _lives(worker, job.namespace, key)
    if key in running.stopped:  # stopped while its starts were counted: it never begins
        return Ledger()
    # run again after its worker died: a session of its own, as a first run has
    run_id = f"{job.run_id}.rerun-{life}" if life else job.run_id
    setup = dataclasses.replace(_setup_of(job), cache=cache, stopped=Ledger(), run_id=run_id)
    trial = asyncio.ensure_future(run_trial(setup, index, attempt))
    running.trials[key] = trial, setup.stopped
    try:
        outcome = await trial
    except asyncio.CancelledError:
        if key not in running.stopped:
            raise  # the worker is closing: the scheduler runs the task again
        return setup.stopped
    finally:
        running.trials.pop(key, None)
    running.ended[key] = _spent_by(outcome)
    return outcome, None if cache is None else cache.saved


async def _lives(worker: Any, namespace: str, key: str) -> int:
    """How many times task ``key`` began before (on workers that died), counted on the
    scheduler in one step: a worker removed while it starts the task may still be counting
    when the task begins again elsewhere, and two counts of 0 would share one session."""
    from distributed.protocol.pickle import dumps

    def began_before(path: list[str], dask_scheduler: Any) -> int:
        began: int = dask_scheduler.get_metadata(keys=path, default=0)
        dask_scheduler.set_metadata(keys=path, value=began + 1)
        return began

    # Run in the scheduler's event loop, which runs nothing else meanwhile; no lock, whose
    # lease a worker killed while holding it would keep from the task's next run for
    # distributed.scheduler.locks.lease-timeout (30 s). A local function is sent by value: the
    # scheduler need not import agentrig.
    answer = await worker.scheduler.run_function(
        function=dumps(began_before),
        args=dumps(([namespace, "lives", key],)),
        kwargs=dumps({}),
    )
    if answer["status"] != "OK":
        raise RuntimeError(f"the Dask scheduler could not count the starts of {key}: {answer}")
    began: int = answer["result"]
    return began


async def _stop_trial(namespace: str, key: str, dask_worker: Any) -> Ledger | None:
    """On a worker: stop the trial of task ``key`` when it runs here (what it spent), or take
    what a trial that ended here spent (its outcome waits to be fetched); a trial that has not
    begun never will."""
    running = _RUNNING.setdefault((dask_worker.address, namespace), _Running())
    running.stopped.add(key)
    if key in running.trials:
        trial, spent = running.trials[key]
        trial.cancel()
        await asyncio.gather(trial, return_exceptions=True)
        if trial.cancelled() or trial.exception() is not None:
            return spent
        return _spent_by(trial.result())  # it had ended, its task not told yet
    # ended here, its result not yet taken by the launcher (stored by the worker, or on its way)
    return running.ended.pop(key, None)


def _spent_by(outcome: TrialOutcome) -> Ledger:
    """What ``outcome``'s calls cost and how many were sent, by role."""
    ledger = Ledger()
    for role in ("agent", "user", "judge"):
        ledger.usage[role] = Usage(cost=outcome.cost.get(role, 0.0))
        ledger.sent[role] = outcome.calls.get(role, 0)
    return ledger


def _setup_of(job: _TrialJob) -> TrialSetup:
    """This worker's setup of ``job``'s scenario in its run (made at its first trial)."""
    from distributed import get_worker

    limits = job.limits
    key = (get_worker().address, job.namespace)
    run = _RUNS.get(key)
    if run is None:
        traffic = Traffic(ProviderLimits(limits.caps, default_cap=limits.default_cap))
        run = _RUNS[key] = _WorkerRun(traffic)
    scenario = job.scenario
    if scenario.name not in run.setups:
        assert scenario.trials is not None
        budgets = []
        if limits.budget_usd is not None:
            budgets.append(ClusterBudget(job.namespace, "run", limits.budget_usd, RUN_BUDGET))
        if scenario.trials.budget_usd is not None:
            name = f"scenario {scenario.name}'s budget (trials.budget_usd)"
            budgets.append(
                ClusterBudget(
                    job.namespace, f"scenario/{scenario.name}", scenario.trials.budget_usd, name
                )
            )
        control = ClusterControl(limits, job.namespace, run.traffic, tuple(budgets))
        models = RoleModels(job.user_model, job.judge_model)
        live = LiveRun(control, models=models, run_id=job.run_id)
        setup, opened = prepare_trials(scenario, live, control, None)
        run.setups[scenario.name] = setup
        run.opened += opened
    return run.setups[scenario.name]


async def _forget_run(namespace: str, dask_worker: Any) -> None:
    """On a worker: close what the launcher of ``namespace`` opened there."""
    _RUNNING.pop((dask_worker.address, namespace), None)
    kept = _RUNS.pop((dask_worker.address, namespace), None)
    if kept is not None:
        for provider in kept.opened:
            await close_clients(sdk_clients(provider))


def _forget_on_scheduler(namespace: str, dask_scheduler: Any) -> None:
    """On the scheduler: drop the semaphores and the spend of ``namespace``."""
    semaphores = dask_scheduler.extensions["semaphores"]
    for name in [name for name in semaphores.max_leases if name.startswith(f"{namespace}-")]:
        with warnings.catch_warnings():  # leases a killed worker held: the run is over
            warnings.simplefilter("ignore", RuntimeWarning)
            semaphores.close(name=name)
    dask_scheduler.task_metadata.pop(namespace, None)
