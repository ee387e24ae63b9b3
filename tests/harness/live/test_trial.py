"""One live trial, played in process: the agent's, the simulated user's and the judge's models
are functions (``refund_app``)."""

from __future__ import annotations

import asyncio
import json
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import refund_app

from agentrig.errors import ProviderError
from agentrig.fakes import FunctionLLM, call, reply
from agentrig.fakes.llm import Turn
from agentrig.harness.live.cache import TrialCache
from agentrig.harness.live.gateway import Unlimited
from agentrig.harness.live.trial import (
    TrialOutcome,
    TrialSetup,
    TrialStatus,
    current_trial,
    run_trial,
)
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import Scenario
from agentrig.state import InferenceRequest

SCENARIO = """
name: refund
agent: {AGENT}
user:
  persona: Dana, terse
  goal: a refund for her broken mug
  knows: {order_id: A-1029}
  stop: {max_turns: 4, not_before_tool: [issue_refund]}
  model: {provider: openai, name: gpt-4.1-mini}
judge:
  criteria:
    - {id: refunded, check: {tool_called: "issue_refund(order_id=A-1029)"}}
    - {id: polite, rubric: the agent never blames the customer, votes: 3}
    - {id: no_lookup_loop, never: {said: {contains: "your fault"}}}
  model: {provider: openai, name: gpt-4.1}
trials: {require: {metric: rate, at_least: 0.5}, max: 20, seed: 7}
"""


def scenario(tmp_path: Path, agent: str = '{builder: "refund_app:build"}') -> Scenario:
    path = tmp_path / "refund.scenario.yaml"
    path.write_text(textwrap.dedent(SCENARIO).replace("{AGENT}", agent))
    return load_scenario(path)


def setup(
    loaded: Scenario,
    user: Any = refund_app.user_model,
    judge: Any = refund_app.judge_model,
    cache: TrialCache | None = None,
    adapter: Any = None,
) -> TrialSetup:
    return TrialSetup(
        loaded,
        Unlimited(),
        user_model=lambda _: FunctionLLM(user),
        judge_model=lambda _: FunctionLLM(judge),
        cache=cache,
        adapter=adapter,
    )


def trial(trial_setup: TrialSetup, index: int = 0, attempt: int = 0) -> TrialOutcome:
    return asyncio.run(run_trial(trial_setup, index, attempt))


@pytest.fixture(autouse=True)
def always_refunds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 1.0)


def test_a_trial_that_does_the_job_succeeds_with_each_role_costed(tmp_path: Path) -> None:
    outcome = trial(setup(scenario(tmp_path)))
    assert outcome.status is TrialStatus.SUCCESS, outcome.reason
    assert not outcome.replayed
    assert 0 < outcome.wall_time_s < 60
    assert [(c.id, c.outcome) for c in outcome.criteria] == [
        ("refunded", "passed"),
        ("polite", "passed"),
        ("no_lookup_loop", "passed"),
    ]
    assert outcome.criteria[1].votes == ("passed", "passed", "passed")
    assert [e.user for e in outcome.transcript.exchanges] == [
        "My mug arrived broken. I want a refund.",
        "It is order A-1029.",
    ]
    assert [c.name for c in outcome.transcript.tool_calls()] == ["issue_refund"]
    assert outcome.transcript.tool_calls()[0].result == "refund for A-1029 issued"
    # agent: ask for the id, call the tool, answer; user: 2 messages and the end; judge: 3 votes
    assert outcome.calls == {"agent": 3, "user": 3, "judge": 3}
    assert outcome.cost["agent"] == pytest.approx(3 * refund_app.AGENT_CALL_COST, abs=1e-12)
    assert outcome.cost["user"] == pytest.approx(3 * refund_app.USER_CALL_COST, abs=1e-12)
    assert outcome.cost["judge"] == pytest.approx(3 * refund_app.JUDGE_CALL_COST, abs=1e-12)


def test_a_trial_that_fails_a_check_fails_and_the_judge_model_is_not_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 0.0)
    outcome = trial(setup(scenario(tmp_path)))
    assert outcome.status is TrialStatus.FAILURE
    assert (
        "refunded failed: expected a call issue_refund(order_id=A-1029); the agent made no tool calls"
        in outcome.reason
    )
    assert len(outcome.transcript.exchanges) == 4  # the user kept asking until max_turns
    assert outcome.calls["judge"] == 0


def test_a_broken_never_rule_ends_the_trial_as_a_failure(tmp_path: Path) -> None:
    def rude_user(request: InferenceRequest) -> Turn:
        return reply("Is it your fault?") if len(request.messages) > 2 else reply("Hi there")

    def blaming_agent_judge(request: InferenceRequest) -> Turn:
        return refund_app.judge_model(request)

    outcome = trial(
        setup(
            scenario(tmp_path, '{adapter: "test_trial:blaming_adapter"}'),
            user=rude_user,
            judge=blaming_agent_judge,
            adapter=blaming_adapter,
        )
    )
    assert outcome.status is TrialStatus.FAILURE
    assert "no_lookup_loop failed" in outcome.reason
    assert len(outcome.transcript.exchanges) == 1


def blaming_adapter(conversation: list[dict[str, str]]) -> str:
    return "That is your fault."


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (lambda n: reply("  ") if n else reply("My mug broke."), "empty_message"),
        (lambda n: reply("It is order B-7777.") if n else reply("My mug broke."), "unknown_fact"),
        (lambda n: reply("Assistant: how can I help?"), "role_confusion"),
        (lambda n: Turn(calls=refund_app.call("end_conversation").calls), "ended_early"),
        (lambda n: Turn(text="My mug", finish_reason="length"), "cut_off"),  # type: ignore[arg-type]
    ],
)
def test_the_simulated_users_mistakes_set_the_trial_aside(
    tmp_path: Path, answer: Any, code: str
) -> None:
    def user(request: InferenceRequest) -> Turn:
        return answer(len(request.messages) > 2)  # type: ignore[no-any-return]

    outcome = trial(setup(scenario(tmp_path), user=user))
    assert outcome.status is TrialStatus.SET_ASIDE
    assert outcome.set_aside == f"user_mistake:{code}"
    assert outcome.reason.startswith(
        f"{code}: "
    )  # e.g. "empty_message: the user's message 1 is empty"


def test_a_rate_limited_agent_model_sets_the_trial_aside_as_infrastructure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def limited(request: InferenceRequest) -> Turn:
        raise ProviderError("rate limited", status_code=429, retryable=True)

    monkeypatch.setattr(refund_app, "agent_model", limited)
    outcome = trial(setup(scenario(tmp_path)))
    assert outcome.status is TrialStatus.SET_ASIDE
    assert outcome.set_aside == "infrastructure"
    assert outcome.reason == "the agent's provider failed: rate limited"


def test_an_adapter_agent_is_judged_on_the_tools_it_reports(tmp_path: Path) -> None:
    loaded = scenario(tmp_path, '{adapter: "refund_app:adapter"}')
    outcome = trial(setup(loaded, adapter=refund_app.adapter))
    assert outcome.status is TrialStatus.SUCCESS, outcome.reason
    assert outcome.cost["agent"] == pytest.approx(2 * refund_app.AGENT_CALL_COST, abs=1e-12)


def test_an_adapter_sees_its_trial_through_agentrig_harness_live(tmp_path: Path) -> None:
    from agentrig.harness.live import TrialContext, current_trial  # the path docs/live.md gives

    seen: list[TrialContext | None] = []

    def adapter(conversation: list[dict[str, str]]) -> dict[str, Any]:
        seen.append(current_trial())
        return refund_app.adapter(conversation)

    loaded = scenario(tmp_path, '{adapter: "refund_app:adapter"}')
    outcome = trial(setup(loaded, adapter=adapter), index=3)
    assert outcome.status is TrialStatus.SUCCESS, outcome.reason
    assert seen
    assert all(c is not None and (c.index, c.attempt, c.seed) == (3, 0, outcome.seed) for c in seen)
    assert {c.key for c in seen if c is not None} == {"refund/trial-3.0"}
    assert current_trial() is None  # outside a trial


@pytest.mark.parametrize(
    "agent", ['{builder: "refund_app:build"}', '{adapter: "refund_app:adapter"}']
)
def test_a_recorded_trial_replays_with_no_model_call_and_the_same_outcome(
    tmp_path: Path, agent: str
) -> None:
    loaded = scenario(tmp_path, agent)
    cache = TrialCache(tmp_path / "cache", loaded)
    adapter = refund_app.adapter if "adapter" in agent else None
    first = trial(setup(loaded, cache=cache, adapter=adapter))
    assert not first.replayed
    assert sum(first.calls.values()) > 0

    kept = "agent.replies.json" if adapter else "agent.cassette.yaml"
    assert sorted(p.name for p in cache.trial_folder(0, 0).iterdir()) == sorted(
        [kept, "judge.cassette.yaml", "outcome.json", "user.cassette.yaml"]
    )

    def no_model(context: object) -> Any:
        raise AssertionError("a replayed trial made a model (it needs no API key)")

    replaying = setup(loaded, cache=cache, adapter=adapter)
    replaying.user_model = replaying.judge_model = no_model
    second = trial(replaying)
    assert second.replayed
    assert second.calls == {"agent": 0, "user": 0, "judge": 0}
    assert second.summary() == first.summary()
    assert second.cost == first.cost


def test_a_recording_the_agent_no_longer_matches_runs_live_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = scenario(tmp_path)
    cache = TrialCache(tmp_path / "cache", loaded)
    assert trial(setup(loaded, cache=cache)).status is TrialStatus.SUCCESS
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 0.0)
    monkeypatch.setattr(
        refund_app.issue_refund, "description", "Refund it (changed).", raising=False
    )
    again = trial(setup(loaded, cache=cache))
    assert not again.replayed
    assert again.status is TrialStatus.FAILURE


@pytest.mark.parametrize(("rate", "passes"), [(1.0, True), (0.0, False)])
def test_a_recorded_trial_converts_to_a_scenario_that_ends_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rate: float, passes: bool
) -> None:
    from agentrig.harness.live.convert import trial_to_scenario
    from agentrig.harness.runner import run_scenario

    monkeypatch.setattr(refund_app, "SUCCESS_RATE", rate)
    loaded = scenario(tmp_path)
    cache = TrialCache(tmp_path / "cache", loaded)
    outcome = trial(setup(loaded, cache=cache))
    assert (outcome.status is TrialStatus.SUCCESS) is passes

    converted = trial_to_scenario(cache.trial_folder(0, 0), name="refund-trial-0")
    assert converted.agent.builder == "refund_app:build"
    assert [t.user for t in converted.turns] == [e.user for e in outcome.transcript.exchanges]
    result = run_scenario(converted)
    assert result.passed is passes, [f.message for f in result.failures]
    if not passes:
        assert any("issue_refund" in f.message for f in result.failures)
    assert "not converted: polite, no_lookup_loop" in converted.description


def test_an_adapter_trial_whose_calls_skipped_the_gate_does_not_convert(tmp_path: Path) -> None:
    from agentrig.harness.cassettes.errors import CassetteConversionError
    from agentrig.harness.live.convert import trial_to_scenario

    loaded = scenario(tmp_path, '{adapter: "refund_app:adapter"}')
    cache = TrialCache(tmp_path / "cache", loaded)
    trial(setup(loaded, cache=cache, adapter=refund_app.adapter))
    with pytest.raises(CassetteConversionError, match=r"did not pass the trial's gate") as error:
        trial_to_scenario(cache.trial_folder(0, 0), name="x")
    assert "current_trial().http_client()" in str(error.value)


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ({"content": "Done.", "usage": ["a"]}, "returned usage ['a']: use a dict"),
        ({"content": "Done.", "tool_calls": 5}, "returned tool_calls 5: use a list"),
    ],
)
def test_an_adapter_reply_of_the_wrong_shape_fails_the_trial_naming_it(
    tmp_path: Path, answer: dict[str, Any], words: str
) -> None:
    loaded = scenario(tmp_path, '{adapter: "refund_app:adapter"}')
    outcome = trial(setup(loaded, adapter=lambda conversation: answer))
    assert outcome.status is TrialStatus.FAILURE
    assert f"adapter 'refund_app:adapter' {words}" in outcome.reason


def test_a_trial_context_without_a_gate_says_which_trials_have_an_http_client() -> None:
    from agentrig.errors import ConfigurationError
    from agentrig.harness.live.trial import TrialContext

    with pytest.raises(ConfigurationError) as error:
        TrialContext("refund", 0, 0, 7).sync_http_client()
    assert str(error.value) == (
        "only an agent.adapter trial has an HTTP client for its model: an agentrig builder's "
        "model calls pass the trial's gate already"
    )


def refused(request: InferenceRequest) -> Turn:
    raise ProviderError("invalid API key", status_code=401)


def failing(request: InferenceRequest) -> Turn:
    raise ProviderError("bad request", status_code=400)


def overloaded(request: InferenceRequest) -> Turn:
    raise ProviderError("overloaded", status_code=503)


def undecided(request: InferenceRequest) -> Turn:
    return Turn(calls=call("verdict", result="maybe", reason="?").calls)


KEY = "its API key is read from OPENAI_API_KEY"


@pytest.mark.parametrize(
    ("user", "judge", "kind", "reason"),
    [
        (
            refused,
            None,
            "access_denied",
            f"the user's model refused access (HTTP 401): invalid API key; {KEY}",
        ),
        (
            None,
            refused,
            "access_denied",
            f"the judge's model refused access (HTTP 401): invalid API key; {KEY}",
        ),
        (failing, None, "user_model_error", "the simulated user's model failed: bad request"),
        (None, failing, "judge_model_error", "the judge's model failed: bad request"),
        (overloaded, None, "infrastructure", "the simulated user's model failed: overloaded"),
        (None, overloaded, "infrastructure", "the judge's model failed: overloaded"),
        (
            None,
            undecided,
            "judge_inconclusive",
            "polite inconclusive: 3 inconclusive: "
            + "; ".join(["the judge answered result 'maybe'"] * 3),
        ),
    ],
)
def test_a_trial_set_aside_says_why_and_keeps_the_conversation(
    tmp_path: Path, user: Any, judge: Any, kind: str, reason: str
) -> None:
    outcome = trial(
        setup(
            scenario(tmp_path),
            user=user or refund_app.user_model,
            judge=judge or refund_app.judge_model,
        )
    )
    assert (outcome.status, outcome.set_aside, outcome.reason) == (
        TrialStatus.SET_ASIDE,
        kind,
        reason,
    )
    assert len(outcome.transcript.exchanges) == (0 if user else 2)


def test_a_spent_budget_sets_the_trial_aside_saying_so(tmp_path: Path) -> None:
    from agentrig.harness.live.budget import Budget
    from agentrig.harness.live.limits import ProviderLimits, Traffic

    budget = Budget(0.0002, name="the run's budget")
    loaded = scenario(tmp_path)
    cache = TrialCache(tmp_path / "cache", loaded)
    trial_setup = setup(loaded, cache=cache)
    trial_setup.control = Traffic(ProviderLimits({}), budget)
    outcome = trial(trial_setup)
    assert (outcome.status, outcome.set_aside) == (TrialStatus.SET_ASIDE, "budget")
    assert not cache.trial_folder(0, 0).exists()  # it says nothing of the agent: not kept
    # two user messages (0.00001 each) and two agent calls (0.000125 each) spent 0.00027
    assert outcome.reason == (
        "the run's budget of $0.0002 is exhausted: $0.00027 spent, so no further model call "
        "is admitted (calls already running finish and are charged); raise the budget to run "
        "more trials"
    )


@pytest.fixture
def upstream() -> Iterator[tuple[str, list[str]]]:
    """An OpenAI-compatible model on loopback that answers every chat completion "Noted." (10
    tokens in, 2 out): its base URL, and the ``x-agentrig-trial`` header of each request."""
    answer = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4.1-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Noted."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }
    trials: list[str] = []

    class Model(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            trials.append(self.headers.get("x-agentrig-trial", ""))
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Model)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    yield f"http://127.0.0.1:{server.server_port}/v1", trials
    server.shutdown()
    server.server_close()
    serving.join()


def test_a_sync_adapters_calls_pass_the_gate_one_cassette_per_conversation(
    tmp_path: Path, upstream: tuple[str, list[str]]
) -> None:
    from openai import OpenAI

    from agentrig.harness.cassettes.errors import CassetteConversionError
    from agentrig.harness.live.convert import trial_to_scenario

    base_url, trials = upstream

    def adapter(conversation: list[dict[str, str]]) -> dict[str, Any]:
        # sync: run in a worker thread; each reply asks about the last message alone, which
        # continues no earlier request: a conversation of its own
        trial_now = current_trial()
        assert trial_now is not None
        client = OpenAI(
            base_url=base_url,
            api_key="sk-test",
            http_client=trial_now.sync_http_client(),
            max_retries=0,
        )
        client.chat.completions.create(model="gpt-4.1-mini", messages=[conversation[-1]])  # type: ignore[list-item]
        return refund_app.adapter(conversation)

    loaded = scenario(tmp_path, '{adapter: "refund_app:adapter", price: {input: 1, output: 5}}')
    cache = TrialCache(tmp_path / "cache", loaded)
    trial_setup = setup(loaded, cache=cache, adapter=adapter)
    trial_setup.run_id = "gated"
    outcome = trial(trial_setup)
    assert outcome.status is TrialStatus.SUCCESS, outcome.reason
    assert trials == ["gated/refund/trial-0.0"] * 2
    assert outcome.calls["agent"] == 2
    assert outcome.cost["agent"] * 1e6 == pytest.approx(2 * (10 * 1 + 2 * 5))
    folder = cache.trial_folder(0, 0)
    assert sorted(p.name for p in folder.glob("agent*")) == [
        "agent-2.cassette.yaml",
        "agent.cassette.yaml",
        "agent.replies.json",
    ]
    with pytest.raises(CassetteConversionError) as error:
        trial_to_scenario(folder, name="x")
    assert "model calls were 2 conversations (agent.cassette.yaml, agent-2.cassette.yaml)" in str(
        error.value
    )


def test_an_agent_model_refusing_its_key_sets_the_trial_aside_naming_the_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "agent_model", refused)
    loaded = scenario(tmp_path)
    cache = TrialCache(tmp_path / "cache", loaded)
    outcome = trial(setup(loaded, cache=cache))
    assert (outcome.status, outcome.set_aside) == (TrialStatus.SET_ASIDE, "access_denied")
    assert not cache.trial_folder(0, 0).exists()  # the key fixed, it runs live again
    assert outcome.reason == "the agent's model refused access (HTTP 401): invalid API key"


def test_the_user_and_judge_calls_go_under_their_providers_name(tmp_path: Path) -> None:
    # both play openai models: their calls share openai's cap (--limit openai=N) and their
    # cassettes name the provider
    from agentrig.harness.cassettes.files import load_cassette
    from agentrig.harness.live.limits import ProviderLimits, Traffic

    traffic = Traffic(ProviderLimits({"openai": 2}))
    loaded = scenario(tmp_path)
    cache = TrialCache(tmp_path / "cache", loaded)
    trial_setup = setup(loaded, cache=cache)
    trial_setup.control = traffic
    outcome = trial(trial_setup)
    assert traffic.stats()["openai"].calls == outcome.calls["user"] + outcome.calls["judge"] == 6
    folder = cache.trial_folder(0, 0)
    for role in ("user", "judge"):
        assert load_cassette(folder / f"{role}.cassette.yaml").metadata.provider == "openai"


def test_a_judge_without_a_model_records_no_call_under_its_roles_name(tmp_path: Path) -> None:
    # With no rubric the judge needs no model: its cassette is kept (a recording has one per
    # role) with no call, under the role's name as there is no provider to name
    from agentrig.harness.cassettes.files import load_cassette

    text = textwrap.dedent(SCENARIO).replace("{AGENT}", '{builder: "refund_app:build"}')
    text = text.replace(
        "    - {id: polite, rubric: the agent never blames the customer, votes: 3}\n", ""
    )
    text = text.replace("  model: {provider: openai, name: gpt-4.1}\n", "")
    path = tmp_path / "refund.scenario.yaml"
    path.write_text(text)
    loaded = load_scenario(path)
    assert loaded.judge is not None
    assert loaded.judge.model is None
    cache = TrialCache(tmp_path / "cache", loaded)
    outcome = trial(setup(loaded, cache=cache))
    assert outcome.status is TrialStatus.SUCCESS
    assert outcome.calls.get("judge", 0) == 0
    folder = cache.trial_folder(0, 0)
    judge = load_cassette(folder / "judge.cassette.yaml")
    assert (judge.metadata.provider, judge.interactions) == ("judge", ())
    assert load_cassette(folder / "user.cassette.yaml").metadata.provider == "openai"


def test_a_recorded_trial_keeps_its_outcome_the_scenario_convert_reads_and_the_users_words(
    tmp_path: Path,
) -> None:
    loaded = scenario(tmp_path)
    cache = TrialCache(tmp_path / "cache", loaded)
    assert trial(setup(loaded, cache=cache)).status is TrialStatus.SUCCESS
    kept = json.loads((cache.trial_folder(0, 0) / "outcome.json").read_text())
    assert kept == {
        "status": "success",
        "reason": "every criterion passed",
        "set_aside": None,
        "criteria": [["refunded", "passed"], ["polite", "passed"], ["no_lookup_loop", "passed"]],
        "scenario": loaded.model_dump(
            mode="json", include={"name", "agent", "judge"}, exclude_unset=True
        ),
        "users": ["My mug arrived broken. I want a refund.", "It is order A-1029."],
    }
    assert set(kept["scenario"]) == {"name", "agent", "judge"}  # not the user's persona


def test_a_trials_seed_is_derived_from_the_scenarios_in_32_bits() -> None:
    from agentrig.harness.live.trial import trial_seed

    seeds = {trial_seed(7, index, attempt) for index in range(50) for attempt in range(2)}
    assert len(seeds) == 100
    assert all(0 <= seed < 2**32 for seed in seeds)
    assert trial_seed(7, 3, 0) == trial_seed(7, 3, 0) != trial_seed(8, 3, 0)


def test_each_role_model_is_made_for_its_trial_with_its_models_settings(tmp_path: Path) -> None:
    text = textwrap.dedent(SCENARIO).replace("{AGENT}", '{builder: "refund_app:build"}')
    text = text.replace(
        "model: {provider: openai, name: gpt-4.1-mini}",
        "model: {provider: openai, name: gpt-4.1-mini, temperature: 0.7}",
    ).replace(
        "model: {provider: openai, name: gpt-4.1}",
        "model: {provider: anthropic, name: claude-x, temperature: 0.0, max_tokens: 99}",
    )
    (tmp_path / "refund.scenario.yaml").write_text(text)
    loaded = load_scenario(tmp_path / "refund.scenario.yaml")
    made: list[tuple[str, str]] = []
    configs: dict[str, set[Any]] = {"user": set(), "judge": set()}

    def maker(role: str, answer: Any) -> Any:
        def make(context: Any) -> FunctionLLM:
            made.append((role, context.key))

            def answering(request: InferenceRequest) -> Turn:
                config = request.llm_config
                assert config is not None
                configs[role].add((config.provider, config.model, config.temperature))
                configs[role].add(config.max_output_tokens)
                return answer(request)  # type: ignore[no-any-return]

            return FunctionLLM(answering)

        return make

    from agentrig.harness.cassettes.files import load_cassette
    from agentrig.harness.live.limits import ProviderLimits, Traffic

    traffic = Traffic(ProviderLimits({"openai": 2, "anthropic": 2}))
    cache = TrialCache(tmp_path / "cache", loaded)
    trial_setup = TrialSetup(
        loaded,
        traffic,
        user_model=maker("user", refund_app.user_model),
        judge_model=maker("judge", refund_app.judge_model),
        cache=cache,
    )
    outcome = trial(trial_setup, index=2)
    assert outcome.status is TrialStatus.SUCCESS, outcome.reason
    assert made == [("user", "refund/trial-2.0"), ("judge", "refund/trial-2.0")]
    assert configs == {
        "user": {("openai", "gpt-4.1-mini", 0.7), None},
        "judge": {("anthropic", "claude-x", 0.0), 99},
    }
    stats = traffic.stats()
    assert (stats["openai"].calls, stats["anthropic"].calls) == (3, 3)
    folder = cache.trial_folder(2, 0)
    assert load_cassette(folder / "user.cassette.yaml").metadata.provider == "openai"
    assert load_cassette(folder / "judge.cassette.yaml").metadata.provider == "anthropic"


@pytest.mark.parametrize("role", ["user", "judge"])
def test_a_recording_missing_a_roles_cassette_runs_live_again(tmp_path: Path, role: str) -> None:
    loaded = scenario(tmp_path)
    cache = TrialCache(tmp_path / "cache", loaded)
    first = trial(setup(loaded, cache=cache))
    (cache.trial_folder(0, 0) / f"{role}.cassette.yaml").unlink()
    again = trial(setup(loaded, cache=cache))
    assert not again.replayed
    assert again.summary() == first.summary()
    assert (cache.trial_folder(0, 0) / f"{role}.cassette.yaml").is_file()  # recorded anew


def test_a_builder_trial_has_no_gate_its_model_calls_pass_the_trials_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gates: list[Any] = []
    answer = refund_app.agent_model

    def noting(request: InferenceRequest) -> Turn:
        context = current_trial()
        assert context is not None
        gates.append(context.gate)
        return answer(request)

    monkeypatch.setattr(refund_app, "agent_model", noting)
    assert trial(setup(scenario(tmp_path))).status is TrialStatus.SUCCESS
    assert gates == [None, None, None]
