"""Running a live scenario: its trials, concurrently, until the verdict is reached.

Trials are numbered from 0 and decided **in index order**: the verdict reads the longest run of
finished trials 0, 1, 2, ... (a set-aside trial is run again under the same index), whatever
order they finished in. So the verdict does not depend on timing, and a second run that replays
the cache reaches it at the same trial. Trials recorded before replay first, in order; live
trials start only while the verdict is still open.
"""

from __future__ import annotations

import asyncio
import math
import secrets
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from agentrig.drivers import InferenceProvider
from agentrig.errors import AgentrigError, ConfigurationError, InvalidInputError
from agentrig.harness.live.agent import builder_for, resolve_adapter
from agentrig.harness.live.cache import TrialCache
from agentrig.harness.live.gateway import CallControl, Unlimited
from agentrig.harness.live.roles import (
    close_clients,
    key_location,
    provider_for,
    sdk_clients,
    with_trial_header,
)
from agentrig.harness.live.scenario_budget import ScenarioBudget
from agentrig.harness.live.stats import (
    Metric,
    Outcome,
    Requirement,
    Verdict,
    fixed_verdict,
    metric_interval,
    minimum_trials_to_pass,
    parse_metric,
    pass_at_k,
    pass_hat_k,
    sequential_verdict,
)
from agentrig.harness.live.trial import (
    TrialContext,
    TrialOutcome,
    TrialSetup,
    TrialStatus,
    run_trial,
)
from agentrig.harness.live_results import (
    CriterionRecord,
    LiveCost,
    LiveResult,
    MetricRecord,
    TrialRecord,
)
from agentrig.harness.scenarios.model import Scenario

__all__ = [
    "LiveRun",
    "RoleModels",
    "TrialLauncher",
    "prepare_trials",
    "requirement_of",
    "run_live_scenario",
]

RoleFactory = Callable[[TrialContext], InferenceProvider]
TrialLauncher = Callable[[TrialSetup, int, int], Coroutine[Any, Any, TrialOutcome]]
"""Runs trial ``index`` (its ``attempt``-th run) of a scenario somewhere else, a Dask cluster
(:mod:`agentrig.harness.scale`), and gives its outcome, its recording kept in ``setup.cache``."""

BROKEN_ROLE_STREAK = 3
"""Trials in a row whose simulated user's (or judge's) model failed the same way, with no
other trial between, that stop a scenario's trials: a wrong key or model name fails them all."""
_ROLE_ERRORS = ("user_model_error", "judge_model_error")


@dataclass
class RoleModels:
    """Overrides of the simulated user's and the judge's models (a function of the trial that
    returns a provider); None: the scenario's ``model:`` with its API key."""

    user: RoleFactory | None = None
    judge: RoleFactory | None = None


@dataclass
class LiveRun:
    """What the trials of one run share beyond a scenario: the traffic control, the cache
    folder, the role models, and the run's own limits."""

    control: CallControl = field(default_factory=Unlimited)
    cache_dir: str | None = None
    models: RoleModels = field(default_factory=RoleModels)
    max_trials: int | None = None
    """Overrides every scenario's ``trials.max``."""
    run_id: str = field(default_factory=lambda: secrets.token_hex(4))
    """Names this run in each trial's ``x-agentrig-trial`` header (random by default: two runs
    against one ``agentrig serve`` keep their sessions apart)."""
    launcher: TrialLauncher | None = None
    """Runs each trial elsewhere (``agentrig run --executor dask``); None: in this process. The
    trials are still decided here, in index order, so the verdict does not depend on it."""


def requirement_of(scenario: Scenario) -> Requirement:
    """The requirement ``scenario.trials.require`` states."""
    assert scenario.trials is not None
    spec = scenario.trials.require
    return Requirement(
        parse_metric(spec.metric),
        spec.at_least,
        confidence=spec.confidence,
        indifference=spec.indifference,
    )


def check_reachable(scenario: Scenario, max_trials: int | None = None) -> None:
    """Refuse, before any trial runs, a requirement that the trials allowed can never show
    (even all successes would not pass): ``scenario``'s ``trials.max``, or ``max_trials``, the
    run's cap (``--max-trials``) that overrides it; or one that no number of trials can decide
    in double precision (a success rate that rounds to 1, an indifference too small)."""
    try:
        requirement = requirement_of(scenario)
    except InvalidInputError as error:
        where = scenario.nearest_location(("trials", "require")) or scenario.name
        said = [f"{where}: trials.require.{field}: {why}" for field, why in error.problems]
        # one problem at a time: the scenario's own validation refused any other at load
        raise ConfigurationError("\n".join(said)) from None  # pragma: no mutate
    assert scenario.trials is not None
    needed = minimum_trials_to_pass(requirement)
    if scenario.trials.sequential:
        needed = min(needed, minimum_trials_to_pass(requirement, sequential=True))
    allowed = max_trials or scenario.trials.max
    if needed <= allowed:
        return
    require = scenario.trials.require
    if max_trials is None:
        where = scenario.nearest_location(("trials", "max")) or scenario.name
        cap = f"max is {allowed}: raise trials.max"
    else:
        where = scenario.nearest_location(("trials", "require")) or scenario.name
        cap = f"the run allows {allowed} (--max-trials {allowed}, over trials.max): raise it"
    raise ConfigurationError(
        f"{where}: {require.metric} >= {require.at_least} at confidence {require.confidence} "
        f"needs at least {needed} trials to pass (all successes); {cap} or lower the "
        "requirement"
    )


def _role_factory(
    scenario: Scenario, role: str, given: RoleFactory | None, opened: list[object]
) -> RoleFactory | None:
    """The trials' provider for ``role``: ``given``, else one made from the scenario's model
    spec (kept in ``opened``, to be closed when the trials end), copied per trial with its
    ``x-agentrig-trial`` header."""
    if given is not None:
        return given
    owner = scenario.user if role == "user" else scenario.judge
    spec = None if owner is None else owner.model
    if spec is None:
        return None
    where = scenario.nearest_location(key_location(spec, role)) or scenario.name
    shared = provider_for(spec, where)  # checks the API key now, before any trial runs
    opened.append(shared)
    return lambda context: with_trial_header(shared, context.key)


def _shared_agent_clients(scenario: Scenario) -> frozenset[int]:
    """The ids of the SDK clients the agent's builder gives every time, or of the provider it
    gives every time (one made once, at import): the trials leave those open. A provider the builder makes anew for each trial
    is closed when its trial ends."""
    if scenario.agent.builder is None:
        return frozenset()
    try:
        first = builder_for(scenario.agent.builder).driver()
        second = builder_for(scenario.agent.builder).driver()
    except AgentrigError:
        return frozenset()  # the first trial reports it
    one, two = getattr(first, "provider", None), getattr(second, "provider", None)
    if one is not None and one is two:  # its clients may be built only by the first trial
        return frozenset({id(one)})
    return frozenset({id(c) for c in sdk_clients(one)} & {id(c) for c in sdk_clients(two)})


def prepare_trials(
    scenario: Scenario, run: LiveRun, control: CallControl, cache: TrialCache | None
) -> tuple[TrialSetup, list[object]]:
    """What ``scenario``'s trials share in this process: the agent's adapter, the role models
    (``run.models`` or the scenario's, their API keys checked now) and ``control``; with the
    providers opened for the roles, to be closed (``close_clients``) when the trials end."""
    adapter = None
    if scenario.agent.adapter is not None:
        adapter = resolve_adapter(scenario.agent.adapter)
    opened: list[object] = []
    setup = TrialSetup(
        scenario,
        control,
        user_model=_role_factory(scenario, "user", run.models.user, opened),
        judge_model=_role_factory(scenario, "judge", run.models.judge, opened),
        cache=cache,
        adapter=adapter,
        run_id=run.run_id,
    )
    setup.shared_clients = _shared_agent_clients(scenario)
    return setup, opened


async def run_live_scenario(scenario: Scenario, run: LiveRun | None = None) -> LiveResult:
    """Run ``scenario``'s trials and draw the verdict."""
    run = run or LiveRun()
    trials = scenario.trials
    assert trials is not None
    max_trials = run.max_trials or trials.max
    check_reachable(scenario, run.max_trials)
    requirement = requirement_of(scenario)
    cache = None if run.cache_dir is None else TrialCache(run.cache_dir, scenario)
    if run.launcher is not None:  # the launcher's side makes the agent and the role models
        setup = TrialSetup(
            scenario,
            run.control,
            user_model=run.models.user,
            judge_model=run.models.judge,
            cache=cache,
            run_id=run.run_id,
        )
        return await _Scheduler(setup, requirement, max_trials, run.launcher).run()
    control = run.control
    if trials.budget_usd is not None:
        control = ScenarioBudget(control, trials.budget_usd, scenario.name)
    setup, opened = prepare_trials(scenario, run, control, cache)
    scheduler = _Scheduler(setup, requirement, max_trials, run_trial)
    try:
        return await scheduler.run()
    finally:
        for provider in opened:
            await close_clients(sdk_clients(provider))


class _Scheduler:
    def __init__(
        self,
        setup: TrialSetup,
        requirement: Requirement,
        max_trials: int,
        launch: TrialLauncher,
    ) -> None:
        trials = setup.scenario.trials
        assert trials is not None
        self.setup = setup
        self.launch = launch
        self.requirement = requirement
        self.max_trials = max_trials
        self.sequential = trials.sequential
        self.concurrency = trials.concurrency
        self.max_set_aside = (
            trials.max_set_aside if trials.max_set_aside is not None else max_trials
        )
        self.final: dict[int, TrialOutcome] = {}
        self.all: list[TrialOutcome] = []
        self.attempts: dict[int, int] = {}
        self.pending: list[tuple[int, int]] = []  # set-aside trials to run again
        self.next_index = 0
        self.set_aside = 0
        self.verdict: Verdict | None = None
        self.partial: str | None = None
        self.streak: list[TrialOutcome] = []

    async def run(self) -> LiveResult:
        inflight: set[asyncio.Task[TrialOutcome]] = set()
        try:
            while True:
                while self._open() and len(inflight) < self.concurrency and self._can_launch():
                    index, attempt = self._next()
                    if self._is_cached(index, attempt):
                        self._take(await self.launch(self.setup, index, attempt))
                        continue
                    inflight.add(asyncio.create_task(self.launch(self.setup, index, attempt)))
                # An open run with nothing in flight and nothing to launch has every trial up
                # to its cap final, which decides it: the second test guards the wait only.
                if not self._open() or not inflight:
                    break
                done, inflight = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
                # Every finished trial is heard, its error too (asked for, so that a second one
                # does not go unreported): the outcomes are taken, then the first error raised.
                errors = [error for error in (task.exception() for task in done) if error]
                for task in done:
                    if task.exception() is None:
                        self._take(task.result())
                if errors:
                    raise errors[0]
        except asyncio.CancelledError:
            # Interrupted (Ctrl-C, SIGTERM): the verdict of the trials that finished, said to be
            # partial, so that the reports still get written.
            self.partial = "interrupted"
        finally:
            for task in inflight:
                task.cancel()
            if inflight:
                await asyncio.gather(*inflight, return_exceptions=True)
            if self.partial == "interrupted":
                # Trials that ended before the interruption reached the loop (recorded in the
                # cache and paid for) count, in index order, as if it had heard them.
                ended = [t for t in inflight if not t.cancelled() and t.exception() is None]
                for task in sorted(ended, key=lambda t: t.result().index):
                    self._take(task.result())
                self.partial = "interrupted"
        return self._result()

    def _open(self) -> bool:
        """Whether the run goes on: no verdict yet, and nothing stopped it."""
        return self.verdict is None and self.partial is None

    def _can_launch(self) -> bool:
        if self.pending:
            return True
        return self.next_index < self.max_trials

    def _next(self) -> tuple[int, int]:
        if self.pending:
            return self.pending.pop(0)
        index = self.next_index
        self.next_index += 1
        return index, 0

    def _is_cached(self, index: int, attempt: int) -> bool:
        cache = self.setup.cache
        return cache is not None and cache.holds(index, attempt)

    def _take(self, outcome: TrialOutcome) -> None:
        self.all.append(outcome)
        if outcome.status is TrialStatus.SET_ASIDE:
            if outcome.set_aside == "budget":
                self.partial = "the budget is spent"
                return
            if outcome.set_aside == "access_denied":
                self.partial = self.partial or outcome.reason  # a wrong key: no retry cures it
                return
            self.set_aside += 1
            if self.set_aside > self.max_set_aside:
                self.partial = f"more than {self.max_set_aside} trials were set aside"
                return
            if self._role_broken(outcome):
                return
            self.pending.append((outcome.index, outcome.attempt + 1))
            return
        self.streak = []
        self.final[outcome.index] = outcome
        self._decide()

    def _role_broken(self, outcome: TrialOutcome) -> bool:
        """Whether the simulated user's or the judge's model failed the same way in the last
        :data:`BROKEN_ROLE_STREAK` trials in a row (a wrong key or model name, say): running
        more would fail alike, so the trials stop, the verdict partial."""
        if outcome.set_aside not in _ROLE_ERRORS:
            self.streak = []
            return False
        self.streak = [o for o in self.streak if o.set_aside == outcome.set_aside] + [outcome]
        if len(self.streak) < BROKEN_ROLE_STREAK:
            return False
        role = "simulated user's" if outcome.set_aside == "user_model_error" else "judge's"
        self.partial = (
            f"the {role} model failed {len(self.streak)} trials in a row ({outcome.reason})"
        )
        return True

    def _prefix(self) -> list[bool]:
        outcomes: list[bool] = []
        while len(outcomes) in self.final:
            outcomes.append(self.final[len(outcomes)].status is TrialStatus.SUCCESS)
        return outcomes

    def _decide(self) -> None:
        """A sequential run's verdict, once its test decides or its cap is reached. A fixed-size
        run gets none here: it ends when its trials up to the cap are final (nothing is left
        to run or in flight then), and ``_result`` draws its verdict from them."""
        if not self.sequential:
            return
        prefix = self._prefix()
        verdict = sequential_verdict(prefix, self.requirement, self.max_trials)
        if verdict.outcome is not Outcome.INCONCLUSIVE or len(prefix) >= self.max_trials:
            self.verdict = verdict

    def _result(self) -> LiveResult:
        prefix = self._prefix()
        verdict = self.verdict
        if verdict is None:
            verdict = fixed_verdict(sum(prefix), len(prefix), self.requirement)
        counted = verdict.trials
        counted_indices = set(range(counted))
        successes = sum(prefix[:counted])
        records = tuple(
            _record(o, o.index in counted_indices and o is self.final.get(o.index))
            for o in sorted(self.all, key=lambda o: (o.index, o.attempt))
        )
        # What the run spent: every trial that ended, and what those cancelled half-way (once
        # the verdict was reached, the budget spent, or the run interrupted) had paid for.
        stopped = self.setup.stopped
        # fsum: the same total whatever order the trials ended in (a Dask run's is another)
        cost = {
            role: math.fsum([*(o.cost.get(role, 0.0) for o in self.all), stopped.cost(role)])
            for role in ("agent", "user", "judge")
        }
        total = sum(cost.values())
        set_aside: dict[str, int] = {}
        for o in self.all:
            if o.set_aside is not None:
                set_aside[o.set_aside] = set_aside.get(o.set_aside, 0) + 1
        discarded = sum(1 for i in self.final if i >= counted)
        calls = {
            role: sum(o.calls.get(role, 0) for o in self.all) + stopped.sent[role]
            for role in ("agent", "user", "judge")
        }
        reason = verdict.reason
        if self.partial is not None:
            reason = f"partial: {self.partial} after {counted} counted trial(s); {reason}"
        return LiveResult(
            verdict=verdict.outcome.value,
            reason=reason,
            partial=self.partial,
            metric=str(self.requirement.metric),
            at_least=self.requirement.at_least,
            confidence=self.requirement.confidence,
            threshold=self.requirement.threshold,
            decided_by=verdict.decided_by,
            trials=counted,
            successes=successes,
            rate=None if counted == 0 else successes / counted,
            wilson=(verdict.wilson.low, verdict.wilson.high),
            exact=(verdict.exact.low, verdict.exact.high),
            metrics=_metrics(self.setup.scenario, self.requirement, verdict),
            cost=LiveCost(
                agent=cost["agent"],
                user=cost["user"],
                judge=cost["judge"],
                total=total,
                per_success=None if successes == 0 else total / successes,
            ),
            set_aside=set_aside,
            discarded=discarded,
            model_calls=calls,
            replayed_trials=sum(1 for o in self.all if o.replayed),
            records=records,
        )


def _metrics(
    scenario: Scenario, requirement: Requirement, verdict: Verdict
) -> tuple[MetricRecord, ...]:
    """The rate, and pass^k and pass@k for the requirement's k and ``trials.report_k``, each
    with the verdict's exact interval carried over."""
    assert scenario.trials is not None
    successes, trials, exact = verdict.successes, verdict.trials, verdict.exact
    ks = sorted({requirement.metric.k, *scenario.trials.report_k})
    out = [
        MetricRecord(
            metric="rate",
            value=None if trials == 0 else successes / trials,
            low=exact.low,
            high=exact.high,
        )
    ]
    for k in ks:
        for kind, estimate in (("pass^", pass_hat_k), ("pass@", pass_at_k)):
            metric: Metric = parse_metric(f"{kind}{k}")
            interval = metric_interval(metric, exact)
            value = estimate(successes, trials, k) if k <= trials else None
            out.append(
                MetricRecord(metric=f"{kind}{k}", value=value, low=interval.low, high=interval.high)
            )
    return tuple(out)


def _record(outcome: TrialOutcome, counted: bool) -> TrialRecord:
    show = outcome.status is not TrialStatus.SUCCESS
    return TrialRecord(
        index=outcome.index,
        attempt=outcome.attempt,
        seed=outcome.seed,
        status=outcome.status.value,
        counted=counted,
        reason=outcome.reason,
        set_aside=outcome.set_aside,
        criteria=tuple(
            CriterionRecord(id=c.id, kind=c.kind, outcome=c.outcome, detail=c.detail, votes=c.votes)
            for c in outcome.criteria
        ),
        cost=dict(outcome.cost),
        calls=dict(outcome.calls),
        replayed=outcome.replayed,
        transcript=tuple(outcome.transcript.render().splitlines()) if show else (),
    )
