"""One live trial: the simulated user and the agent talk until the user ends the conversation
(or ``stop.max_turns`` is reached, or a ``never`` rule is broken), then the judge decides.

A trial ends in one of three ways: **success** (every criterion passed), **failure** (one
failed, or the agent crashed), or **set aside** (the simulated user made a mistake, a provider
failed, the judge could not decide, the budget ran out): set-aside trials are never counted for
or against the agent.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from agentrig.drivers import InferenceProvider
from agentrig.errors import ConfigurationError, ProviderError
from agentrig.harness.cassettes.errors import CassetteMismatchError
from agentrig.harness.cassettes.model import Cassette
from agentrig.harness.live.adapter_gate import AdapterGate, ModelClients, adapter_prices
from agentrig.harness.live.agent import (
    AccessDenied,
    AdapterAgent,
    AdapterTape,
    AgentCrashed,
    AgentUnderTest,
    BuilderAgent,
    InfrastructureFailure,
    builder_for,
)
from agentrig.harness.live.budget import BudgetExhausted
from agentrig.harness.live.cache import CachedTrial, TrialCache
from agentrig.harness.live.gateway import (
    CallControl,
    Ledger,
    RoleName,
    RoleProvider,
    access_denied_status,
    is_infrastructure_error,
)
from agentrig.harness.live.judge import (
    CriterionResult,
    broken_never_rule,
    judge_transcript,
)
from agentrig.harness.live.roles import llm_config_of
from agentrig.harness.live.simulated_user import next_user_move
from agentrig.harness.live.transcript import Exchange, Transcript
from agentrig.harness.live.user_mistakes import find_user_mistake
from agentrig.harness.scenarios.live_model import LiveModelSpec
from agentrig.harness.scenarios.model import Scenario

__all__ = [
    "ReplayDiverged",
    "TrialContext",
    "TrialOutcome",
    "TrialSetup",
    "TrialStatus",
    "current_trial",
    "in_trial",
    "leave_trial",
    "run_trial",
    "trial_seed",
]


class TrialStatus(StrEnum):
    """How a trial ended."""

    SUCCESS = "success"
    FAILURE = "failure"
    SET_ASIDE = "set_aside"


class ReplayDiverged(Exception):
    """A recorded trial's requests differ from what the agent asks now: run it live again."""


@dataclass(frozen=True, slots=True)
class TrialContext:
    """Which trial is running. ``key`` names it in the ``x-agentrig-trial`` header of every
    request of the trial: ``RUN/SCENARIO/trial-INDEX.ATTEMPT``, ``RUN`` the run's id (random
    unless given), so that two runs against one ``agentrig serve`` never share a session."""

    scenario: str
    index: int
    attempt: int
    seed: int
    run: str = ""
    gate: ModelClients | None = field(default=None, compare=False, repr=False)
    """Where an adapter's model calls go: the trial's gate (or, in a scripted run, the
    scenario endpoint)."""

    @property
    def key(self) -> str:
        """``RUN/SCENARIO/trial-INDEX.ATTEMPT`` (without ``RUN/`` when the run has no id)."""
        trial = f"{self.scenario}/trial-{self.index}.{self.attempt}"
        return f"{self.run}/{trial}" if self.run else trial

    def http_client(self, **options: Any) -> Any:
        """An ``httpx2.AsyncClient`` for the adapter's model SDK (``http_client=`` of the
        ``openai`` and ``anthropic`` clients): its calls are capped, budgeted, retried when
        rate limited, costed by ``agent.price`` and recorded with the trial. ``options`` go to
        the client (``timeout=``...). Make one per trial: it is closed when the trial ends."""
        return self._gate().http_client(**options)

    def sync_http_client(self, **options: Any) -> Any:
        """An ``httpx2.Client``, as ``http_client()``, for a sync adapter function."""
        return self._gate().sync_http_client(**options)

    def _gate(self) -> ModelClients:
        if self.gate is None:
            raise ConfigurationError(
                "only an agent.adapter trial has an HTTP client for its model: an agentrig "
                "builder's model calls pass the trial's gate already"
            )
        return self.gate


_current: ContextVar[TrialContext | None] = ContextVar("agentrig_live_trial", default=None)


def in_trial(context: TrialContext) -> Token[TrialContext | None]:
    """Make ``context`` the current trial (``current_trial()``); ``leave_trial`` with what it
    returns ends it."""
    return _current.set(context)


def leave_trial(token: Token[TrialContext | None]) -> None:
    """End the trial ``in_trial`` began."""
    _current.reset(token)


def current_trial() -> TrialContext | None:
    """The trial being run, inside a live trial (an adapter, a builder, a tool): None
    elsewhere."""
    return _current.get()


def trial_seed(seed: int, index: int, attempt: int) -> int:
    """The seed of trial ``index``'s ``attempt``-th run, derived from the scenario's seed."""
    digest = hashlib.sha256(f"{seed}:{index}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big")  # pragma: no mutate (big is the default order)


@dataclass(frozen=True, slots=True)
class TrialOutcome:
    """The outcome of one trial: its status, why, the criteria, the conversation and costs."""

    index: int
    attempt: int
    seed: int
    status: TrialStatus
    reason: str
    set_aside: str | None = None
    """For a set-aside trial: ``user_mistake:CODE``, ``infrastructure``, ``judge_inconclusive``,
    ``user_model_error``, ``judge_model_error``, ``access_denied`` or ``budget``."""
    criteria: tuple[CriterionResult, ...] = ()
    transcript: Transcript = field(default_factory=Transcript)
    cost: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    replayed: bool = False
    wall_time_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        """What the cache keeps of the outcome (checked against a replay of the trial)."""
        return {
            "status": self.status.value,
            "reason": self.reason,
            "set_aside": self.set_aside,
            "criteria": [[c.id, c.outcome] for c in self.criteria],
        }


@dataclass
class TrialSetup:
    """What every trial of a scenario shares: the scenario, the traffic control, the role
    models (made per trial by ``user_model``/``judge_model``), the cache and the agent."""

    scenario: Scenario
    control: CallControl
    user_model: Callable[[TrialContext], InferenceProvider] | None = None
    judge_model: Callable[[TrialContext], InferenceProvider] | None = None
    cache: TrialCache | None = None
    adapter: Callable[..., Any] | None = None
    run_id: str = ""
    """Names the run in each trial's ``x-agentrig-trial`` header."""
    shared_clients: frozenset[int] = frozenset()
    """Ids of SDK clients every trial's agent shares (left open when a trial ends)."""
    stopped: Ledger = field(default_factory=Ledger)
    """What the trials cancelled before they ended spent (their calls were paid for)."""


async def run_trial(setup: TrialSetup, index: int, attempt: int) -> TrialOutcome:
    """Run trial ``index`` (its ``attempt``-th run): replayed from the cache when recorded
    before and the agent asks the same, else live (and recorded)."""
    scenario = setup.scenario
    assert scenario.trials is not None
    context = TrialContext(
        scenario.name,
        index,
        attempt,
        trial_seed(scenario.trials.seed, index, attempt),
        setup.run_id,
    )
    cached = None if setup.cache is None else setup.cache.load(index, attempt)
    if cached is not None:
        try:
            return await _run(setup, context, cached)
        except ReplayDiverged:
            pass  # recorded anew below
    return await _run(setup, context, None)


async def _run(
    setup: TrialSetup, context: TrialContext, cached: CachedTrial | None
) -> TrialOutcome:
    scenario = setup.scenario
    user, judge = scenario.user, scenario.judge
    assert user is not None
    assert judge is not None
    started = time.perf_counter()
    ledger = Ledger()
    replay = cached.cassettes if cached is not None else {}

    def role(
        name: RoleName, make: Callable[[TrialContext], InferenceProvider] | None
    ) -> RoleProvider:
        live = None if make is None or cached is not None else make(context)
        spec = user.model if name == "user" else judge.model
        provider_name = spec.provider if spec is not None else name
        return RoleProvider(
            live,
            role=name,
            provider_name=provider_name,
            control=setup.control,
            ledger=ledger,
            replay=replay.get(name, Cassette()) if cached is not None else None,
            record=setup.cache is not None,  # pragma: no mutate (kept in memory: none reads it)
        )

    user_model = role("user", setup.user_model)
    judge_model = role("judge", setup.judge_model)
    tape = AdapterTape(replay=None if cached is None else (cached.replies or []))
    gate = None
    if scenario.agent.adapter is not None and cached is None:
        gate = AdapterGate(
            key=context.key,
            control=setup.control,
            ledger=ledger,
            prices=adapter_prices(scenario.agent.price),
            loop=asyncio.get_running_loop(),
        )
        context = replace(context, gate=gate)
    token = in_trial(context)
    agent: AgentUnderTest | None = None  # pragma: no mutate (read as "not a BuilderAgent")
    try:
        try:
            agent = _agent(
                setup, ledger, replay.get("agent") if cached is not None else None, tape, context
            )
            status, reason, set_aside, criteria, transcript = await _converse(
                setup, agent, user_model, judge_model
            )
        except (CassetteMismatchError, LookupError) as error:
            if cached is not None:
                # pragma: no mutate block (run_trial catches it and runs the trial live again)
                raise ReplayDiverged(str(error)) from error
            raise
        finally:
            leave_trial(token)
            if isinstance(agent, BuilderAgent):
                await agent.close(keep=setup.shared_clients)
            if gate is not None:
                await gate.aclose()
    except asyncio.CancelledError:
        # stopped half-way, or while closing its clients: the calls it made are still paid for
        setup.stopped.add(ledger)
        raise
    outcome = TrialOutcome(
        context.index,
        context.attempt,
        context.seed,
        status,
        reason,
        set_aside,
        criteria,
        transcript,
        {role_name: ledger.cost(role_name) for role_name in ("agent", "user", "judge")},
        dict(ledger.sent),
        replayed=cached is not None,
        wall_time_s=time.perf_counter() - started,
    )
    if cached is not None:
        recorded = {key: cached.outcome.get(key) for key in outcome.summary()}
        if outcome.summary() != recorded:
            # pragma: no mutate block (run_trial catches it and runs the trial live again)
            raise ReplayDiverged("the replayed trial ended otherwise than recorded")
        return outcome
    # a trial stopped by the budget or a refused key says nothing of the agent: never replayed
    if setup.cache is not None and set_aside not in ("budget", "access_denied"):
        cassettes = {"user": user_model.cassette(), "judge": judge_model.cassette()}
        if isinstance(agent, BuilderAgent):
            cassettes["agent"] = agent.provider.cassette()
        elif gate is not None:
            for number, cassette in enumerate(gate.cassettes, 1):
                cassettes["agent" if number == 1 else f"agent-{number}"] = cassette
        replies = tape.recorded if isinstance(agent, AdapterAgent) else None
        kept = {
            **outcome.summary(),
            "scenario": scenario.model_dump(
                mode="json",  # pragma: no mutate (the agent's and judge's specs hold JSON values)
                include={"name", "agent", "judge"},
                exclude_unset=True,
            ),
            "users": [exchange.user for exchange in outcome.transcript.exchanges],
        }
        setup.cache.save(context.index, context.attempt, cassettes, replies, kept)
    return outcome


def _agent(
    setup: TrialSetup, ledger: Ledger, replay: Any, tape: AdapterTape, context: TrialContext
) -> AgentUnderTest:
    spec = setup.scenario.agent
    if spec.adapter is not None:
        assert setup.adapter is not None
        gate = context.gate if isinstance(context.gate, AdapterGate) else None
        return AdapterAgent(setup.adapter, spec.adapter, tape, ledger, gate)
    assert spec.builder is not None
    return BuilderAgent(
        builder_for(spec.builder),
        control=setup.control,
        ledger=ledger,
        replay=replay,
        trial_key=context.key,
        record=setup.cache is not None,
    )


async def _converse(
    setup: TrialSetup,
    agent: AgentUnderTest,
    user_model: RoleProvider,
    judge_model: RoleProvider,
) -> tuple[TrialStatus, str, str | None, tuple[CriterionResult, ...], Transcript]:
    scenario = setup.scenario
    user, judge = scenario.user, scenario.judge
    assert user is not None
    assert judge is not None
    user_config = None if user.model is None else llm_config_of(user.model)
    judge_config = None if judge.model is None else llm_config_of(judge.model)
    transcript = Transcript()
    try:
        for _ in range(user.stop.max_turns):
            try:
                move = await next_user_move(user, transcript, user_model, user_config)
            except ProviderError as error:
                status = access_denied_status(error)
                if status is not None:
                    return _denied("user", status, error, user.model, transcript)
                kind = "infrastructure" if is_infrastructure_error(error) else "user_model_error"
                return _aside(kind, f"the simulated user's model failed: {error}", transcript)
            mistake = find_user_mistake(user, move, transcript)
            if mistake is not None:
                return _aside(f"user_mistake:{mistake.code}", str(mistake), transcript)
            if move.ended:
                break
            try:
                reply = await agent.respond(transcript, move.text)
            except InfrastructureFailure as error:
                return _aside("infrastructure", f"the agent's provider failed: {error}", transcript)
            except AccessDenied as error:
                return _denied("agent", error.status, error, None, transcript)
            except AgentCrashed as error:
                crashed = transcript.with_exchange(Exchange(move.text))
                return TrialStatus.FAILURE, str(error), None, (), crashed
            transcript = transcript.with_exchange(Exchange(move.text, reply))
            if broken_never_rule(judge.criteria, transcript) is not None:
                break
        try:
            criteria = await judge_transcript(judge.criteria, transcript, judge_model, judge_config)
        except ProviderError as error:
            status = access_denied_status(error)
            if status is not None:
                return _denied("judge", status, error, judge.model, transcript)
            kind = "infrastructure" if is_infrastructure_error(error) else "judge_model_error"
            return _aside(kind, f"the judge's model failed: {error}", transcript)
    except BudgetExhausted as error:
        return _aside("budget", str(error), transcript)
    failed = [c for c in criteria if c.outcome == "failed"]
    if failed:
        reason = "; ".join(f"{c.id} failed: {c.detail}" for c in failed)
        return TrialStatus.FAILURE, reason, None, criteria, transcript
    undecided = [c for c in criteria if c.outcome == "inconclusive"]
    if undecided:
        reason = "; ".join(f"{c.id} inconclusive: {c.detail}" for c in undecided)
        return TrialStatus.SET_ASIDE, reason, "judge_inconclusive", criteria, transcript
    return TrialStatus.SUCCESS, "every criterion passed", None, criteria, transcript


def _aside(
    kind: str, reason: str, transcript: Transcript
) -> tuple[TrialStatus, str, str | None, tuple[CriterionResult, ...], Transcript]:
    return TrialStatus.SET_ASIDE, reason, kind, (), transcript


def _denied(
    role: str,
    status: int,
    error: BaseException,
    spec: LiveModelSpec | None,
    transcript: Transcript,
) -> tuple[TrialStatus, str, str | None, tuple[CriterionResult, ...], Transcript]:
    """A model refused its credentials: set aside as ``access_denied``, which stops the
    scenario (its reason says which model, and where its key comes from)."""
    reason = f"the {role}'s model refused access (HTTP {status}): {error}"
    if spec is not None:
        reason += f"; its API key is read from {spec.key_variable()}"
    return _aside("access_denied", reason, transcript)
