"""A live scenario's trials, run to a verdict, in process (``refund_app`` plays every model)."""

from __future__ import annotations

import asyncio
import gc
import math
import random
import textwrap
from pathlib import Path
from typing import Any

import pytest
import refund_app

import agentrig.harness.live.run as run_module
from agentrig import UseLlmConfig
from agentrig.drivers import OpenAIProvider
from agentrig.errors import ConfigurationError, ProviderError
from agentrig.fakes import FunctionLLM
from agentrig.fakes.llm import Turn
from agentrig.harness.live.budget import Budget
from agentrig.harness.live.gateway import Unlimited
from agentrig.harness.live.limits import ProviderLimits, Traffic
from agentrig.harness.live.run import (
    LiveRun,
    RoleModels,
    check_reachable,
    prepare_trials,
    run_live_scenario,
)
from agentrig.harness.live.trial import (
    TrialContext,
    TrialOutcome,
    TrialSetup,
    TrialStatus,
    current_trial,
    run_trial,
)
from agentrig.harness.live_results import LiveResult
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import Scenario
from agentrig.state import InferenceRequest, InferenceResponse

SCENARIO = """
name: refund
agent: {builder: "refund_app:build"}
user:
  persona: Dana, terse
  goal: a refund for her broken mug
  knows: {order_id: A-1029}
  stop: {max_turns: 3, not_before_tool: [issue_refund]}
  model: {provider: openai, name: gpt-4.1-mini}
judge:
  criteria:
    - {id: refunded, check: {tool_called: "issue_refund(order_id=A-1029)"}}
    - {id: polite, rubric: the agent never blames the customer}
  model: {provider: openai, name: gpt-4.1}
trials: {TRIALS}
"""


def scenario(tmp_path: Path, trials: str) -> Scenario:
    path = tmp_path / "refund.scenario.yaml"
    path.write_text(textwrap.dedent(SCENARIO).replace("{TRIALS}", trials))
    return load_scenario(path)


def models(user: Any = refund_app.user_model, judge: Any = refund_app.judge_model) -> RoleModels:
    return RoleModels(user=lambda _: FunctionLLM(user), judge=lambda _: FunctionLLM(judge))


def live(loaded: Scenario, **options: Any) -> LiveResult:
    options.setdefault("models", models())
    return asyncio.run(run_live_scenario(loaded, LiveRun(**options)))


def test_an_agent_that_always_succeeds_passes_as_soon_as_the_test_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 1.0)
    result = live(scenario(tmp_path, "{require: {metric: rate, at_least: 0.8}, max: 100}"))
    assert result.verdict == "PASS"
    assert result.decided_by == "sequential"
    assert result.successes == result.trials < 100
    assert result.rate == 1.0
    rate, *pass_k = result.metrics
    assert (rate.metric, rate.value, rate.low, rate.high) == ("rate", 1.0, *result.exact)
    assert pass_k
    for metric in pass_k:  # all successes: pass^k and pass@k are 1, their bounds set
        assert metric.value == 1.0
        assert metric.low is not None
        assert 0.0 < metric.low <= metric.high <= 1.0
    assert result.exact[0] > 0.75  # the interval's lower bound is near the threshold


def test_an_agent_that_never_succeeds_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 0.0)
    trials = "{require: {metric: rate, at_least: 0.8, confidence: 0.99}, max: 60}"
    result = live(scenario(tmp_path, trials))
    assert result.verdict == "FAIL"
    assert (result.metric, result.confidence) == ("rate", 0.99)
    assert result.successes == 0
    assert result.cost.per_success is None
    failed = [r for r in result.records if r.status == "failure"]
    assert failed
    assert failed[0].transcript[0].startswith("USER: ")


def test_cost_per_success_is_exact_against_the_scripted_usage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 0.5)
    result = live(
        scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 20, sequential: false}")
    )
    assert result.trials == 20
    calls = result.model_calls
    expected = {
        "agent": calls["agent"] * refund_app.AGENT_CALL_COST,
        "user": calls["user"] * refund_app.USER_CALL_COST,
        "judge": calls["judge"] * refund_app.JUDGE_CALL_COST,
    }
    assert abs(result.cost.agent - expected["agent"]) < 1e-6
    assert abs(result.cost.user - expected["user"]) < 1e-6
    assert abs(result.cost.judge - expected["judge"]) < 1e-6
    assert result.successes > 0
    assert result.cost.per_success is not None
    assert abs(result.cost.per_success - sum(expected.values()) / result.successes) < 1e-6


def test_the_verdict_does_not_depend_on_how_many_trials_run_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 0.7)
    base = "{require: {metric: rate, at_least: 0.6}, max: 60, seed: 3, concurrency: CONC}"
    one = live(scenario(tmp_path, base.replace("CONC", "1")))
    eight = live(scenario(tmp_path, base.replace("CONC", "8")))
    assert (one.verdict, one.trials, one.successes) == (
        eight.verdict,
        eight.trials,
        eight.successes,
    )
    counted = [(r.index, r.status) for r in eight.records if r.counted]
    assert counted == [(r.index, r.status) for r in one.records if r.counted]


def test_a_second_identical_run_makes_no_model_call_and_gives_the_same_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 0.8)
    loaded = scenario(tmp_path, "{require: {metric: rate, at_least: 0.6}, max: 40, concurrency: 6}")
    first = live(loaded, cache_dir=str(tmp_path / "cache"))
    assert sum(first.model_calls.values()) > 0

    def unreachable(request: InferenceRequest) -> Turn:
        raise AssertionError("a model was asked in a replayed run")

    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 0.0)  # the agent's model is not asked either
    second = live(
        loaded, cache_dir=str(tmp_path / "cache"), models=models(unreachable, unreachable)
    )
    assert second.model_calls == {"agent": 0, "user": 0, "judge": 0}
    assert (second.verdict, second.trials, second.successes) == (
        first.verdict,
        first.trials,
        first.successes,
    )
    assert second.replayed_trials == len(second.records) >= second.trials


def test_the_simulated_users_mistakes_are_set_aside_and_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 1.0)

    def sloppy_user(request: InferenceRequest) -> Turn | InferenceResponse:
        trial = current_trial()
        assert trial is not None
        if random.Random(trial.seed).random() < 0.3 and len(request.messages) > 2:
            return InferenceResponse(content="")  # an empty message: the user's mistake
        return refund_app.user_model(request)

    result = live(
        scenario(tmp_path, "{require: {metric: rate, at_least: 0.7}, max: 60}"),
        models=models(user=sloppy_user),
    )
    assert result.verdict == "PASS"
    assert result.successes == result.trials  # no mistake counted against the agent
    assert result.set_aside.get("user_mistake:empty_message", 0) > 0
    aside = [r for r in result.records if r.status == "set_aside"]
    assert all(not r.counted for r in aside)
    assert all(r.set_aside == "user_mistake:empty_message" for r in aside)


def test_a_scenario_budget_stops_the_trials_with_a_partial_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 1.0)
    budget = 0.003
    result = live(
        scenario(
            tmp_path,
            f"{{require: {{metric: rate, at_least: 0.95}}, max: 200, budget_usd: {budget}, "
            "concurrency: 4}",
        )
    )
    assert result.partial == "the budget is spent"
    assert result.verdict == "INCONCLUSIVE"
    assert "partial" in result.reason
    # overshoot: at most one call in flight per concurrent call of the scenario
    most = max(refund_app.AGENT_CALL_COST, refund_app.USER_CALL_COST, refund_app.JUDGE_CALL_COST)
    assert result.cost.total <= budget + 4 * most + 1e-12


class SlowClosingClient:
    """An SDK client whose ``close`` waits on the network, as a real one's does (longer in
    some trials than in others)."""

    def __init__(self) -> None:
        trial = current_trial()
        self.delay = 0.002 * (1 + (trial.index % 4 if trial is not None else 0))

    async def close(self) -> None:
        await asyncio.sleep(self.delay)


BUILD = refund_app.build


def build_with_a_client() -> Any:
    """refund_app's agent, its model holding an SDK client of its own, closed after its trial."""
    builder = BUILD()
    provider = builder.driver().provider  # type: ignore[attr-defined]
    provider.async_client = SlowClosingClient()
    return builder


@pytest.mark.parametrize("concurrency", [1, 4, 8])
@pytest.mark.parametrize("client", [False, True], ids=["no-client", "client"])
def test_the_reported_cost_is_what_the_run_spent_with_trials_stopped_midway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concurrency: int, client: bool
) -> None:
    # The budget runs out while other trials are half-way, or closing their clients: their
    # calls were paid, so the report counts them, and its cost is the budget's to the cent.
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 1.0)
    if client:
        monkeypatch.setattr(refund_app, "build", build_with_a_client)
    budget = Budget(0.003, name="the run's budget")
    result = live(
        scenario(
            tmp_path,
            f"{{require: {{metric: rate, at_least: 0.95}}, max: 200, concurrency: {concurrency}}}",
        ),
        control=Traffic(ProviderLimits({}), budget),
    )
    assert result.partial == "the budget is spent"
    assert result.cost.total == pytest.approx(budget.spent, abs=1e-12)
    paid = {
        role: result.model_calls[role] * price
        for role, price in (
            ("agent", refund_app.AGENT_CALL_COST),
            ("user", refund_app.USER_CALL_COST),
            ("judge", refund_app.JUDGE_CALL_COST),
        )
    }
    assert sum(paid.values()) == pytest.approx(budget.spent, abs=1e-12)


def test_a_provider_every_trial_shares_is_left_open_though_a_trial_built_its_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A provider made once (at import) builds its SDK client when the first trial calls it:
    # that trial must not close it under the next ones. Nothing listens at its base_url.
    shared = OpenAIProvider(
        model="gpt-test", api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_retries=0
    )
    monkeypatch.setattr(refund_app, "build", lambda: BUILD().with_capability(UseLlmConfig(shared)))
    result = live(scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 6}"))
    reasons = {record.reason for record in result.records}
    assert len(result.records) > 1
    assert all("could not reach the openai API" in reason for reason in reasons), reasons
    (client,) = shared.built_clients()
    assert not client.is_closed()
    asyncio.run(client.close())


class Unauthorized(Exception):
    """What an SDK raises for HTTP 401 (pydantic-ai, the openai SDK: a ``status_code``)."""

    status_code = 401


@pytest.mark.parametrize("role", ["agent", "adapter", "user", "judge"])
def test_a_model_refusing_its_api_key_stops_the_scenario_and_blames_no_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, role: str
) -> None:
    # A wrong key is the run's setup, not the agent's doing, and no retry will cure it: the
    # scenario stops at once, partial, saying which model refused it (not FAIL 0/12, "the agent
    # made no tool calls", nor 61 trials set aside and paid for).
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 1.0)

    def refused(request: InferenceRequest) -> Turn:
        raise ProviderError("invalid API key", status_code=401)

    def adapter(conversation: list[dict[str, Any]]) -> dict[str, Any]:
        raise Unauthorized("Error code: 401 - invalid API key")

    text = textwrap.dedent(SCENARIO).replace("{TRIALS}", "{require: {metric: rate, at_least: 0.6}}")
    if role == "adapter":
        text = text.replace('{builder: "refund_app:build"}', '{adapter: "refund_app:adapter"}')
        monkeypatch.setattr(refund_app, "adapter", adapter)
    if role == "agent":
        monkeypatch.setattr(refund_app, "agent_model", refused)
    (tmp_path / "refund.scenario.yaml").write_text(text)
    loaded = load_scenario(tmp_path / "refund.scenario.yaml")
    user = refused if role == "user" else refund_app.user_model
    judge = refused if role == "judge" else refund_app.judge_model
    result = live(loaded, models=models(user, judge), cache_dir=str(tmp_path / "cache"))
    assert result.verdict == "INCONCLUSIVE"
    assert result.trials == 0
    assert not list(tmp_path.glob("cache/*/*/trial-*"))  # the key fixed, the trials run live
    who = "agent" if role == "adapter" else role
    assert result.partial is not None
    assert result.partial.startswith(f"the {who}'s model refused access (HTTP 401)"), result.partial
    assert set(result.set_aside) == {"access_denied"}
    assert result.set_aside["access_denied"] <= 4  # at most the trials in flight at once


def test_a_requirement_the_trials_cannot_show_is_refused_before_any_trial(
    tmp_path: Path,
) -> None:
    def unreachable(request: InferenceRequest) -> Turn:
        raise AssertionError("a trial ran")

    loaded = scenario(tmp_path, "{require: {metric: pass^4, at_least: 0.7}, max: 10}")
    with pytest.raises(ConfigurationError, match=r"refund\.scenario\.yaml:\d+: .*needs at least"):
        live(loaded, models=models(unreachable, unreachable))


def test_a_run_cap_too_small_for_the_requirement_names_max_trials_not_the_file(
    tmp_path: Path,
) -> None:
    def unreachable(request: InferenceRequest) -> Turn:
        raise AssertionError("a trial ran")

    loaded = scenario(tmp_path, "{require: {metric: rate, at_least: 0.6}, max: 60}")
    with pytest.raises(ConfigurationError) as raised:
        live(loaded, models=models(unreachable, unreachable), max_trials=5)
    message = str(raised.value)
    assert "needs at least 6 trials" in message
    assert "--max-trials 5" in message
    assert "raise trials.max" not in message  # the file's max is 60: it is not the cause


def test_each_refusal_names_the_line_of_what_to_change(tmp_path: Path) -> None:
    loaded = scenario(tmp_path, "\n  max: 5\n  require: {metric: rate, at_least: 0.6}")
    path = tmp_path / "refund.scenario.yaml"
    needs = "rate >= 0.6 at confidence 0.95 needs at least 6 trials to pass (all successes)"
    with pytest.raises(ConfigurationError) as raised:
        check_reachable(loaded)
    assert str(raised.value) == (
        f"{path}:16: {needs}; max is 5: raise trials.max or lower the requirement"
    )
    loaded = scenario(tmp_path, "\n  max: 60\n  require: {metric: rate, at_least: 0.6}")
    with pytest.raises(ConfigurationError) as raised:
        check_reachable(loaded, max_trials=5)
    assert str(raised.value) == (
        f"{path}:17: {needs}; the run allows 5 (--max-trials 5, over trials.max): raise it or "
        "lower the requirement"
    )
    undecidable = "\n  max: 10\n  require: {metric: rate, at_least: 0.9999999999999999}"
    with pytest.raises(ConfigurationError) as raised:
        check_reachable(scenario(tmp_path, undecidable))
    assert str(raised.value).startswith(
        f"{path}:17: trials.require.at_least: rate >= 0.9999999999999999 needs a success rate "
    )


def test_a_sequential_run_may_stop_at_the_fewer_trials_its_test_needs(tmp_path: Path) -> None:
    # rate >= 0.9 at 95%: the fixed rule passes at 29 successes of 29, the SPRT at 27 of 27
    check_reachable(scenario(tmp_path, "{require: {metric: rate, at_least: 0.9}, max: 27}"))
    fixed = "{require: {metric: rate, at_least: 0.9}, max: 28, sequential: false}"
    with pytest.raises(ConfigurationError, match="needs at least 29 trials"):
        check_reachable(scenario(tmp_path, fixed))
    with pytest.raises(ConfigurationError, match="needs at least 27 trials"):
        check_reachable(scenario(tmp_path, "{require: {metric: rate, at_least: 0.9}, max: 26}"))


def test_the_scenarios_role_models_are_its_own_each_naming_the_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    loaded = scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 10}")
    setup, opened = prepare_trials(loaded, LiveRun(run_id="r1"), Unlimited(), None)
    assert setup.user_model is not None
    assert setup.judge_model is not None
    context = TrialContext("refund", 2, 1, 7, run="r1")
    user: Any = setup.user_model(context)
    judge: Any = setup.judge_model(context)
    assert (user.model, judge.model) == ("gpt-4.1-mini", "gpt-4.1")
    for provider in (user, judge):
        for client in (provider.client, provider.async_client):
            assert client.default_headers["x-agentrig-trial"] == "r1/refund/trial-2.1"
    assert len(opened) == 2
    assert setup.run_id == "r1"


def test_a_role_the_scenario_gives_no_model_is_left_to_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    loaded = scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 10}")
    assert loaded.judge is not None
    no_model = loaded.model_copy(update={"judge": loaded.judge.model_copy(update={"model": None})})
    no_judge = loaded.model_copy(update={"judge": None})
    for without in (no_model, no_judge):
        setup, opened = prepare_trials(without, LiveRun(), Unlimited(), None)
        assert setup.judge_model is None
        assert setup.user_model is not None
        assert len(opened) == 1


def test_the_sdk_clients_a_builder_gives_every_trial_are_left_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = SlowClosingClient()

    def build_sharing_a_client() -> Any:
        builder = BUILD()
        builder.driver().provider.async_client = shared  # type: ignore[union-attr]
        return builder

    loaded = scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 10}")
    monkeypatch.setattr(refund_app, "build", build_sharing_a_client)
    setup, _ = prepare_trials(loaded, LiveRun(models=models()), Unlimited(), None)
    assert setup.shared_clients == frozenset({id(shared)})
    monkeypatch.setattr(refund_app, "build", build_with_a_client)  # a client per trial
    setup, _ = prepare_trials(loaded, LiveRun(models=models()), Unlimited(), None)
    assert setup.shared_clients == frozenset()


def test_a_launcher_runs_each_trial_with_what_the_trials_share(tmp_path: Path) -> None:
    loaded = scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 10}")
    launched: list[tuple[str, int, int]] = []

    async def launcher(setup: TrialSetup, index: int, attempt: int) -> TrialOutcome:
        launched.append((setup.scenario.name, index, attempt))
        return await run_trial(setup, index, attempt)

    elsewhere = live(loaded, launcher=launcher)
    here = live(loaded)
    assert launched[:2] == [("refund", 0, 0), ("refund", 1, 0)]
    assert len(launched) == elsewhere.trials
    assert (elsewhere.verdict, elsewhere.trials, elsewhere.successes) == (
        here.verdict,
        here.trials,
        here.successes,
    )


def test_a_launchers_trials_are_recorded_and_replayed_from_the_runs_cache(tmp_path: Path) -> None:
    # The launcher's side records each trial it runs; the next run replays them in place
    loaded = scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 10}")
    launched: list[int] = []

    async def launcher(setup: TrialSetup, index: int, attempt: int) -> TrialOutcome:
        launched.append(index)
        return await run_trial(setup, index, attempt)

    cache = str(tmp_path / "cache")
    first = live(loaded, launcher=launcher, cache_dir=cache)
    assert len(list((tmp_path / "cache").rglob("outcome.json"))) == first.trials
    launched.clear()
    again = live(loaded, launcher=launcher, cache_dir=cache)
    assert (again.verdict, again.trials, again.successes) == (
        first.verdict,
        first.trials,
        first.successes,
    )
    assert again.replayed_trials == again.trials
    assert launched == list(range(again.trials))  # replayed where the launcher runs them


def test_a_missing_api_key_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    loaded = scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 10}")
    with pytest.raises(ConfigurationError, match="set OPENAI_API_KEY"):
        asyncio.run(run_live_scenario(loaded, LiveRun()))


def test_a_broken_user_model_stops_the_trials_after_three_in_a_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentrig.errors import ProviderError

    asked: list[int] = []

    def unauthorized(request: InferenceRequest) -> Turn:
        asked.append(1)
        raise ProviderError("openai API returned HTTP 404: no model 'gpt-4.1-mni'", status_code=404)

    result = live(
        scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 60, concurrency: 1}"),
        models=models(user=unauthorized),
    )
    assert result.verdict == "INCONCLUSIVE"
    assert result.partial is not None
    assert "simulated user's model failed 3 trials in a row" in result.partial
    assert "HTTP 404" in result.partial
    assert len(asked) == 3


def test_a_trial_that_raises_leaves_no_trial_unheard_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The builder loses its model after the checks before the first trial: every trial raises.
    monkeypatch.setitem(refund_app.BUILDS, "left", 3)
    loaded = scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 10, concurrency: 4}")
    loaded = loaded.model_copy(
        update={
            "agent": loaded.agent.model_copy(update={"builder": "refund_app:build_for_a_while"})
        }
    )
    with pytest.raises(ConfigurationError, match="a live trial needs the agent's model"):
        live(loaded)
    gc.collect()  # a task whose error nobody asked for complains when it is collected
    assert "exception was never retrieved" not in caplog.text


def test_a_run_closes_the_clients_of_the_role_models_it_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scenario's own user and judge models: the run makes one provider for each, and
    # closes their SDK clients (their connection pools) when its trials end. Nothing listens
    # at their base_url: the user's model fails, and the run stops at the second such trial.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    nowhere = "base_url: 'http://127.0.0.1:9/v1'"
    text = textwrap.dedent(SCENARIO).replace(
        "{TRIALS}",
        "{require: {metric: rate, at_least: 0.5}, max: 6, max_set_aside: 1, concurrency: 1}",
    )
    for name in ("gpt-4.1-mini", "gpt-4.1"):
        text = text.replace(f"name: {name}}}", f"name: {name}, {nowhere}}}")
    path = tmp_path / "refund.scenario.yaml"
    path.write_text(text)
    opened: list[Any] = []
    original = run_module.provider_for

    def provider_for(spec: Any, where: str) -> Any:
        provider = original(spec, where)
        opened.append(provider)
        return provider

    monkeypatch.setattr(run_module, "provider_for", provider_for)
    result = asyncio.run(run_live_scenario(load_scenario(path), LiveRun()))
    assert result.partial == "more than 1 trials were set aside"
    assert len(result.records) == 2  # one set aside is allowed, run again: the second is not
    assert all("could not reach the openai API" in r.reason for r in result.records), result
    user, judge = opened
    assert (user.model, judge.model) == ("gpt-4.1-mini", "gpt-4.1")
    built = user.built_clients()
    assert built, "the user's trials built its clients"
    assert all(client.is_closed() for client in built)
    assert judge.built_clients() == ()  # no trial reached the judge: nothing to close


def test_a_missing_judge_key_names_the_judges_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 10}")  # writes the file
    path = tmp_path / "refund.scenario.yaml"
    text = path.read_text().replace("name: gpt-4.1}", "name: gpt-4.1, api_key_env: JUDGE_KEY}")
    path.write_text(text)
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "JUDGE_KEY" in row)
    with pytest.raises(ConfigurationError) as raised:
        prepare_trials(load_scenario(path), LiveRun(), Unlimited(), None)
    assert str(raised.value).startswith(f"{path}:{line}: the openai model 'gpt-4.1' needs")
    assert "set JUDGE_KEY" in str(raised.value)


def test_an_interrupted_run_counts_the_trials_that_ended_before_the_interruption_was_heard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Trials 0 and 1 end, paid for, in the same step of the event loop as the run is
    # interrupted (Ctrl-C cancels the run's task): the run hears the interruption first.
    # Trial 2 is still going, and is cancelled.
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 1.0)
    loaded = scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 10, concurrency: 3}")
    cancelled: list[int] = []
    ended: list[int] = []

    async def main() -> LiveResult:
        run_task = asyncio.current_task()
        assert run_task is not None
        both = asyncio.Event()

        async def launcher(setup: TrialSetup, index: int, attempt: int) -> TrialOutcome:
            if index < 2:
                outcome = await run_trial(setup, index, attempt)
                ended.append(index)
                if len(ended) == 1:
                    await both.wait()  # the first to end waits for the second
                else:
                    both.set()  # the first ends at its next step, before the run hears
                    run_task.cancel()
                return outcome
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(index)
                raise
            raise AssertionError("unreachable")

        return await run_live_scenario(loaded, LiveRun(models=models(), launcher=launcher))

    result = asyncio.run(main())
    assert result.partial == "interrupted"
    assert cancelled == [2]
    assert (result.trials, result.successes) == (2, 2)
    assert [(r.index, r.counted) for r in result.records] == [(0, True), (1, True)]
    assert result.model_calls["agent"] > 0


def test_a_broken_judge_model_is_named_when_it_stops_the_trials(tmp_path: Path) -> None:
    def unauthorized(request: InferenceRequest) -> Turn:
        raise ProviderError("openai API returned HTTP 404: no model 'gpt-4.2'", status_code=404)

    result = live(
        scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 60, concurrency: 1}"),
        models=models(judge=unauthorized),
    )
    assert result.partial is not None
    assert result.partial.startswith("the judge's model failed 3 trials in a row (")


def test_a_trial_that_reports_no_calls_adds_none_to_the_runs_count(tmp_path: Path) -> None:
    # A Dask launcher's trial whose workers died has no calls or costs of its own: set aside,
    # it adds nothing, and the run's counts are those of its other trials.
    loaded = scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 10}")

    async def launcher(setup: TrialSetup, index: int, attempt: int) -> TrialOutcome:
        if (index, attempt) == (0, 0):
            lost = "the Dask workers running this trial died"
            return TrialOutcome(index, attempt, 0, TrialStatus.SET_ASIDE, lost, "infrastructure")
        return await run_trial(setup, index, attempt)

    result = live(loaded, launcher=launcher)
    assert result.records[0].calls == {}
    assert result.set_aside == {"infrastructure": 1}
    for role in ("agent", "user", "judge"):
        assert result.model_calls[role] == sum(r.calls.get(role, 0) for r in result.records) > 0
        spent = math.fsum(r.cost.get(role, 0.0) for r in result.records)
        assert getattr(result.cost, role) == pytest.approx(spent, abs=1e-12)


def test_a_decided_run_cancels_the_trials_still_going_and_does_not_wait_for_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 1.0)
    loaded = scenario(
        tmp_path, "{require: {metric: rate, at_least: 0.8}, max: 100, concurrency: 3}"
    )
    needed = live(loaded).trials  # all successes: the sequential test decides at this trial
    next_one_ended = asyncio.Event()
    started: list[int] = []

    async def launcher(setup: TrialSetup, index: int, attempt: int) -> TrialOutcome:
        started.append(index)
        if index == needed - 1:  # the decider ends after the trial after it
            await next_one_ended.wait()
        if index <= needed:
            outcome = await run_trial(setup, index, attempt)
            if index == needed:
                next_one_ended.set()
            return outcome
        await asyncio.Event().wait()  # a trial that would never end, unless cancelled
        raise AssertionError("unreachable")

    async def main() -> LiveResult:
        run = LiveRun(models=models(), launcher=launcher)
        return await asyncio.wait_for(run_live_scenario(loaded, run), timeout=10)

    result = asyncio.run(main())
    assert (result.verdict, result.trials, result.partial) == ("PASS", needed, None)
    assert needed + 1 in started  # under way when the verdict came: cancelled, not waited for
    # the trial after the decider ended first: run and paid for, but not counted
    assert result.discarded == 1
    assert [(r.index, r.counted) for r in result.records][needed - 1 :] == [
        (needed - 1, True),
        (needed, False),
    ]


def test_a_user_model_failing_now_and_then_between_trials_that_complete_does_not_stop_them(
    tmp_path: Path,
) -> None:
    # Each trial's user model fails its first two runs and completes the third: never three
    # failures in a row, as a completed trial ends the streak.
    def user(context: TrialContext) -> Any:
        if context.attempt < 2:

            def broken(request: InferenceRequest) -> Turn:
                raise ProviderError("openai API returned HTTP 404: no model", status_code=404)

            return FunctionLLM(broken)
        return FunctionLLM(refund_app.user_model)

    loaded = scenario(
        tmp_path,
        "{require: {metric: rate, at_least: 0.5}, max: 6, concurrency: 1, max_set_aside: 100}",
    )
    result = live(loaded, models=RoleModels(user=user, judge=models().judge))
    assert result.partial is None
    assert result.trials == 6
    assert result.set_aside == {"user_model_error": 12}


def test_a_sequential_run_undecided_at_its_cap_says_its_test_had_not_decided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 0.5)
    result = live(scenario(tmp_path, "{require: {metric: rate, at_least: 0.5}, max: 8}"))
    assert (result.verdict, result.trials) == ("INCONCLUSIVE", 8)
    assert "the sequential test had not decided by max_trials (8)" in result.reason
