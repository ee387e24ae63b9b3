"""The trial cache: what its fingerprint keys a recorded trial by (what decides the
conversation, not how many trials run or what they must reach), and what it reads back whatever
its files hold: a recorded trial whose files were damaged or replaced is run again (and recorded
anew), never an error and never a hang."""

from __future__ import annotations

import asyncio
import json
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import refund_app
from hypothesis import given
from hypothesis import strategies as st

from agentrig.fakes import FunctionLLM
from agentrig.harness.live.cache import TrialCache, scenario_fingerprint
from agentrig.harness.live.gateway import Unlimited
from agentrig.harness.live.run import LiveRun, RoleModels, run_live_scenario
from agentrig.harness.live.trial import TrialOutcome, TrialSetup, TrialStatus, run_trial
from agentrig.harness.property.profiles import agentrig_settings
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import Scenario

SCENARIO = """
name: refund
agent: {AGENT}
user:
  persona: Dana, terse
  goal: a refund for her broken mug
  stop: {max_turns: 3}
  model: {provider: openai, name: gpt-4.1-mini}
judge:
  criteria:
    - {id: refunded, check: {tool_called: "issue_refund(order_id=A-1029)"}}
    - {id: polite, rubric: the agent never blames the customer}
  model: {provider: openai, name: gpt-4.1}
trials: {require: {metric: rate, at_least: 0.5}, max: 5}
"""
AGENTS = {"builder": '{builder: "refund_app:build"}', "adapter": '{adapter: "refund_app:adapter"}'}


def _setup(loaded: Scenario, cache: TrialCache) -> TrialSetup:
    return TrialSetup(
        loaded,
        Unlimited(),
        user_model=lambda _: FunctionLLM(refund_app.user_model),
        judge_model=lambda _: FunctionLLM(refund_app.judge_model),
        cache=cache,
        adapter=refund_app.adapter if loaded.agent.adapter else None,
    )


def _load(folder: Path, agent: str, edit: Callable[[str], str] = lambda text: text) -> Scenario:
    path = folder / "refund.scenario.yaml"
    path.write_text(edit(textwrap.dedent(SCENARIO).replace("{AGENT}", agent)), encoding="utf-8")
    return load_scenario(path)


def _trial(loaded: Scenario, folder: Path) -> TrialOutcome:
    return asyncio.run(run_trial(_setup(loaded, TrialCache(folder, loaded)), 0, 0))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Scenario, Path]]:
    """Each kind of agent's scenario, and a cache folder holding its trial 0."""
    out = {}
    for kind, agent in AGENTS.items():
        folder = tmp_path_factory.mktemp(kind)
        loaded = _load(folder, agent)
        outcome = _trial(loaded, folder / "cache")
        assert outcome.status is TrialStatus.SUCCESS, outcome.reason
        assert _trial(loaded, folder / "cache").replayed
        out[kind] = (loaded, folder / "cache")
    return out


TRIALS = "trials: {require: {metric: rate, at_least: 0.5}, max: 5}"


def _trials(new: str) -> Callable[[str], str]:
    return lambda text: text.replace(TRIALS, new)


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda text: text + "description: mugs\n", id="description"),
        pytest.param(lambda text: text + "tags: [refunds]\n", id="tags"),
        pytest.param(_trials("trials: {require: {metric: rate, at_least: 0.5}, max: 9}"), id="max"),
        pytest.param(
            _trials("trials: {require: {metric: rate, at_least: 0.5}, sequential: true}"),
            id="sequential",
        ),
        pytest.param(
            _trials("trials: {require: {metric: rate, at_least: 0.5}, max: 5, budget_usd: 2}"),
            id="budget_usd",
        ),
        pytest.param(
            _trials("trials: {require: {metric: rate, at_least: 0.5}, max: 5, concurrency: 1}"),
            id="concurrency",
        ),
        pytest.param(
            _trials("trials: {require: {metric: rate, at_least: 0.5}, max: 5, max_set_aside: 1}"),
            id="max_set_aside",
        ),
        pytest.param(
            _trials("trials: {require: {metric: rate, at_least: 0.5}, max: 5, report_k: [2]}"),
            id="report_k",
        ),
        pytest.param(
            _trials("trials: {require: {metric: rate, at_least: 0.9}, max: 5}"), id="require"
        ),
        pytest.param(
            _trials("trials: {require: {metric: 'pass^3', at_least: 0.5}, max: 5}"), id="metric"
        ),
    ],
)
def test_what_decides_no_conversation_keeps_the_recorded_trials(
    recorded: dict[str, tuple[Scenario, Path]], tmp_path: Path, edit: Callable[[str], str]
) -> None:
    loaded, folder = recorded["builder"]
    changed = _load(tmp_path, AGENTS["builder"], edit)
    assert changed != loaded
    assert scenario_fingerprint(changed) == scenario_fingerprint(loaded)
    assert TrialCache(folder, changed).load(0, 0) is not None


def test_raising_trials_max_replays_the_trials_already_run(
    recorded: dict[str, tuple[Scenario, Path]], tmp_path: Path
) -> None:
    _, original = recorded["builder"]
    folder = tmp_path / "cache"
    shutil.copytree(original, folder)
    raised = _load(
        tmp_path,
        AGENTS["builder"],
        _trials("trials: {require: {metric: rate, at_least: 0.5}, max: 50}"),
    )
    outcome = _trial(raised, folder)
    assert outcome.replayed
    assert outcome.status is TrialStatus.SUCCESS


def test_a_changed_requirement_is_decided_from_the_recorded_trials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 0.8)
    models = RoleModels(
        user=lambda _: FunctionLLM(refund_app.user_model),
        judge=lambda _: FunctionLLM(refund_app.judge_model),
    )
    run = LiveRun(cache_dir=str(tmp_path / "cache"), models=models)
    fixed = "trials: {require: {metric: rate, at_least: AT}, max: 10, sequential: false}"
    first = asyncio.run(
        run_live_scenario(
            _load(tmp_path, AGENTS["builder"], _trials(fixed.replace("AT", "0.5"))), run
        )
    )
    assert sum(first.model_calls.values()) > 0
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 0.0)  # a trial run again would fail
    stricter = _load(tmp_path, AGENTS["builder"], _trials(fixed.replace("AT", "0.7")))
    second = asyncio.run(run_live_scenario(stricter, run))
    assert second.model_calls == {"agent": 0, "user": 0, "judge": 0}
    assert second.replayed_trials == second.trials == first.trials == 10
    assert (second.successes, second.at_least) == (first.successes, 0.7)


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda text: text.replace("Dana, terse", "Dana, chatty"), id="persona"),
        pytest.param(lambda text: text.replace("mug", "plate"), id="goal"),
        pytest.param(lambda text: text.replace("max_turns: 3", "max_turns: 4"), id="user-stop"),
        pytest.param(lambda text: text.replace("gpt-4.1-mini", "gpt-4.1-nano"), id="user-model"),
        pytest.param(
            lambda text: text.replace("name: gpt-4.1}", "name: gpt-4o}"), id="judge-model"
        ),
        pytest.param(lambda text: text.replace("never blames", "never rushes"), id="rubric"),
        pytest.param(
            _trials("trials: {require: {metric: rate, at_least: 0.5}, max: 5, seed: 7}"),
            id="trials-seed",
        ),
        pytest.param(lambda text: text.replace("refund_app:build", "refund_app:other"), id="agent"),
        pytest.param(  # a date: the scenario's dump is JSON before it is hashed
            lambda text: text.replace(
                '"refund_app:build"}',
                '"refund_app:build", budget: {deadline: "2030-01-01T00:00:00Z"}}',
            ),
            id="agent-deadline",
        ),
    ],
)
def test_what_decides_the_conversation_keys_other_trials(
    recorded: dict[str, tuple[Scenario, Path]], tmp_path: Path, edit: Callable[[str], str]
) -> None:
    loaded, folder = recorded["builder"]
    changed = _load(tmp_path, AGENTS["builder"], edit)
    assert scenario_fingerprint(changed) != scenario_fingerprint(loaded)
    assert TrialCache(folder, changed).load(0, 0) is None


def test_the_fingerprint_is_sixteen_hex_digits_named_in_the_trial_folder(
    recorded: dict[str, tuple[Scenario, Path]],
) -> None:
    loaded, folder = recorded["builder"]
    fingerprint = scenario_fingerprint(loaded)
    assert len(fingerprint) == 16
    assert set(fingerprint) <= set("0123456789abcdef")
    assert (
        TrialCache(folder, loaded).trial_folder(3, 1)
        == folder / "refund" / fingerprint / "trial-3.1"
    )
    assert [path.name for path in folder.iterdir()] == ["refund"]
    assert [path.name for path in (folder / "refund").iterdir()] == [fingerprint]


@agentrig_settings(max_examples=25)
@given(data=st.data())
def test_a_damaged_recording_is_run_again(
    recorded: dict[str, tuple[Scenario, Path]],
    tmp_path_factory: pytest.TempPathFactory,
    hostile: Any,
    data: st.DataObject,
) -> None:
    loaded, original = recorded[data.draw(st.sampled_from(sorted(recorded)), label="agent")]
    folder = tmp_path_factory.mktemp("damaged") / "cache"
    shutil.copytree(original, folder)
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    target = data.draw(st.sampled_from(files), label="file")
    if target.suffix == ".json" and data.draw(st.booleans(), label="as JSON"):
        value = json.loads(target.read_text(encoding="utf-8"))
        damaged = hostile.mutant(data, value)
        try:
            target.write_text(json.dumps(damaged), encoding="utf-8")
        except (ValueError, RecursionError):
            return
    else:
        target.write_bytes(hostile.damaged(data, target.read_bytes()))
    outcome = hostile.check(lambda: _trial(loaded, folder), ())
    assert outcome is None  # hostile.check fails the test on any error


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda replies: [5], id="entry-not-a-mapping"),
        pytest.param(lambda replies: [{**replies[0], "reply": {"usage": ["a"]}}], id="usage-list"),
        pytest.param(lambda replies: [{**replies[0], "reply": {"tool_calls": 5}}], id="calls-int"),
        pytest.param(lambda replies: [{**replies[0], "reply": {"content": {}}}], id="content-map"),
    ],
)
def test_a_damaged_adapter_recording_is_run_again(
    recorded: dict[str, tuple[Scenario, Path]], tmp_path: Path, damage: Any
) -> None:
    loaded, original = recorded["adapter"]
    folder = tmp_path / "cache"
    shutil.copytree(original, folder)
    (replies_file,) = folder.rglob("agent.replies.json")
    replies = json.loads(replies_file.read_text(encoding="utf-8"))
    replies_file.write_text(json.dumps(damage(replies)), encoding="utf-8")
    outcome = _trial(loaded, folder)
    assert not outcome.replayed
    assert outcome.status is TrialStatus.SUCCESS
    assert json.loads(replies_file.read_text(encoding="utf-8")) == replies  # recorded anew


@pytest.mark.parametrize("kind", sorted(AGENTS))
@pytest.mark.parametrize("outcome", [[], "success", 1, None])
def test_an_outcome_that_is_not_a_mapping_is_no_recorded_trial(
    recorded: dict[str, tuple[Scenario, Path]], tmp_path: Path, kind: str, outcome: Any
) -> None:
    loaded, original = recorded[kind]
    folder = tmp_path / "cache"
    shutil.copytree(original, folder)
    cache = TrialCache(folder, loaded)
    (cache.trial_folder(0, 0) / "outcome.json").write_text(json.dumps(outcome), encoding="utf-8")
    assert cache.load(0, 0) is None
    again = _trial(loaded, folder)
    assert not again.replayed
    assert again.status is TrialStatus.SUCCESS
    assert cache.load(0, 0) is not None  # recorded anew


def test_a_trial_is_held_once_its_outcome_is_written_readable_or_not(
    recorded: dict[str, tuple[Scenario, Path]], tmp_path: Path
) -> None:
    # what a run's scheduler asks before it replays a trial in place instead of launching it
    loaded, original = recorded["builder"]
    folder = tmp_path / "cache"
    shutil.copytree(original, folder)
    cache = TrialCache(folder, loaded)
    assert cache.holds(0, 0)
    assert not cache.holds(0, 1)
    assert not cache.holds(99, 0)
    outcome = cache.trial_folder(0, 0) / "outcome.json"
    outcome.write_text("[]", encoding="utf-8")
    assert cache.holds(0, 0)  # held, though load finds it unreadable and it runs again
    assert cache.load(0, 0) is None
    outcome.unlink()
    assert not cache.holds(0, 0)
