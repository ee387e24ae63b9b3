"""The trial cache read back whatever its files hold: a recorded trial whose files were damaged
or replaced is run again (and recorded anew), never an error and never a hang."""

from __future__ import annotations

import asyncio
import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
import refund_app
from hypothesis import given
from hypothesis import strategies as st

from agentrig.fakes import FunctionLLM
from agentrig.harness.live.cache import TrialCache
from agentrig.harness.live.gateway import Unlimited
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


def _trial(loaded: Scenario, folder: Path) -> TrialOutcome:
    return asyncio.run(run_trial(_setup(loaded, TrialCache(folder, loaded)), 0, 0))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Scenario, Path]]:
    """Each kind of agent's scenario, and a cache folder holding its trial 0."""
    out = {}
    for kind, agent in AGENTS.items():
        folder = tmp_path_factory.mktemp(kind)
        path = folder / "refund.scenario.yaml"
        path.write_text(textwrap.dedent(SCENARIO).replace("{AGENT}", agent), encoding="utf-8")
        loaded = load_scenario(path)
        outcome = _trial(loaded, folder / "cache")
        assert outcome.status is TrialStatus.SUCCESS, outcome.reason
        assert _trial(loaded, folder / "cache").replayed
        out[kind] = (loaded, folder / "cache")
    return out


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
