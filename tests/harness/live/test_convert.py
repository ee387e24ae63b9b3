"""A recorded live trial as a deterministic scenario (``agentrig convert FOLDER``): the scenario
replays the trial, so that a trial that passed passes under ``agentrig run`` and one that failed
fails on what the judge found. The trials here are played in process: the agent's and the
user's models are functions."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import convert_app
import pytest
import yaml

from agentrig.fakes import FunctionLLM
from agentrig.fakes.llm import Turn
from agentrig.harness.cassettes.errors import CassetteConversionError
from agentrig.harness.endpoint.server import EndpointServer
from agentrig.harness.endpoint.service import ScenarioEndpoint
from agentrig.harness.live.cache import TrialCache
from agentrig.harness.live.convert import is_trial_folder, trial_to_scenario
from agentrig.harness.live.gateway import Unlimited
from agentrig.harness.live.trial import (
    TrialOutcome,
    TrialSetup,
    TrialStatus,
    current_trial,
    run_trial,
)
from agentrig.harness.results import ScenarioResult
from agentrig.harness.runner import run_scenario
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import Scenario
from agentrig.harness.scenarios.writer import scenario_to_yaml
from agentrig.state import InferenceRequest

SCENARIO = """\
name: refund
agent: AGENT
user:
  persona: Dana, terse
  goal: a refund for order A-1029
  knows: {order_id: A-1029}
  model: {provider: openai, name: gpt-4.1-mini}
judge:
  criteria: CRITERIA
trials: {require: {metric: rate, at_least: 0.5}, max: 4}
"""


def record(
    tmp_path: Path,
    criteria: list[dict[str, Any]],
    agent: str = '{builder: "convert_app:build"}',
    adapter: Any = None,
    user: Any = convert_app.user_model,
) -> tuple[TrialOutcome, Path]:
    """One trial of the scenario with ``criteria``, recorded: its outcome and its folder."""
    path = tmp_path / "refund.scenario.yaml"
    path.write_text(
        SCENARIO.replace("AGENT", agent).replace("CRITERIA", json.dumps(criteria)),
        encoding="utf-8",
    )
    loaded = load_scenario(path)
    cache = TrialCache(tmp_path / "cache", loaded)

    def no_judge(request: InferenceRequest) -> Turn:
        raise AssertionError("no criterion here asks the judge's model")

    setup = TrialSetup(
        loaded,
        Unlimited(),
        user_model=lambda _: FunctionLLM(user),
        judge_model=lambda _: FunctionLLM(no_judge),
        cache=cache,
        adapter=adapter,
    )
    outcome = asyncio.run(run_trial(setup, 0, 0))
    return outcome, cache.trial_folder(0, 0)


def converted(folder: Path) -> Scenario:
    scenario = trial_to_scenario(folder, name="refund-trial-0")
    # as agentrig convert writes it and agentrig run reads it again
    target = folder.parent / "refund-trial-0.scenario.yaml"
    target.write_text(scenario_to_yaml(scenario), encoding="utf-8")
    return load_scenario(target)


def messages(result: ScenarioResult) -> list[str]:
    return [f.message for f in result.failures]


@pytest.fixture(autouse=True)
def no_refunds_yet() -> Iterator[None]:
    convert_app.REAL_REFUNDS.clear()
    yield
    convert_app.REAL_REFUNDS.clear()


# Each deterministic check, held in the trial's first turn, its last, or never: the converted
# scenario passes when the trial did and fails, naming what was missing, when it did not.
@pytest.mark.parametrize(
    ("check", "passed", "missing"),
    [
        ({"tool_called": "issue_refund(order_id=A-1029)"}, True, None),  # in turn 1 of 2
        ({"tool_called": "issue_refund"}, True, None),
        ({"tool_called": "issue_refund(order_id=B-7)"}, False, "B-7"),
        ({"tool_called": "lookup_order"}, False, "lookup_order"),
        ({"said": {"contains": "Refunded"}}, True, None),  # said in turn 1 only
        ({"said": {"contains": "welcome"}}, True, None),
        ({"said": {"contains": "sorry"}}, False, "sorry"),
        ({"final_response": {"contains": "welcome"}}, True, None),
        ({"final_response": {"contains": "Refunded"}}, False, "Refunded"),
    ],
)
def test_a_converted_trial_ends_as_the_trial_did(
    tmp_path: Path, check: dict[str, Any], passed: bool, missing: str | None
) -> None:
    outcome, folder = record(tmp_path, [{"id": "done", "check": check}])
    assert (outcome.status is TrialStatus.SUCCESS) is passed, outcome.reason
    assert [e.user for e in outcome.transcript.exchanges] == [
        "Please refund order A-1029.",
        "Thanks!",
    ]
    convert_app.REAL_REFUNDS.clear()
    result = run_scenario(converted(folder))
    assert result.passed is passed, messages(result)
    if missing is not None:
        [failure] = result.failures
        assert (failure.kind, failure.turn) == ("expectation", 2)  # the last turn
        assert missing in json.dumps(failure.expected), failure
    assert convert_app.REAL_REFUNDS == []  # the recorded tools answer: the real ones are not called


def test_a_check_made_in_the_recording_adds_no_expectation_and_one_missing_is_expected_last(
    tmp_path: Path,
) -> None:
    checks = [
        {"id": "refunded", "check": {"tool_called": "issue_refund(order_id=A-1029)"}},
        {"id": "said", "check": {"said": {"contains": "Refunded"}}},
        {"id": "looked_up", "check": {"tool_called": "lookup_order(order_id=A-1029)"}},
        {"id": "sorry", "check": {"said": {"contains": "sorry"}}},
    ]
    _, folder = record(tmp_path, checks)
    scenario = yaml.safe_load(scenario_to_yaml(trial_to_scenario(folder, name="x")))
    first, last = scenario["turns"]
    assert "final_response" in first["expect"]  # what the recording answered, not a criterion
    assert first["expect"]["final_response"] == {"equals": "Refunded: your money is on its way."}
    assert last["expect"]["final_response"] == {"contains": "sorry"}
    assert last["expect"]["tool_calls"] == {
        "mode": "superset",
        "args": "partial",
        "calls": ["lookup_order(order_id=A-1029)"],
    }


def test_calls_made_together_in_an_earlier_turn_are_found_there(tmp_path: Path) -> None:
    checks = [
        {"id": "listed", "check": {"tool_called": "list_orders"}},
        {"id": "looked_up", "check": {"tool_called": "lookup_order(order_id=A-1029)"}},
        {"id": "refunded", "check": {"tool_called": "issue_refund"}},
    ]
    outcome, folder = record(tmp_path, checks, agent='{builder: "convert_app:build_parallel"}')
    assert outcome.status is TrialStatus.SUCCESS, outcome.reason
    scenario = converted(folder)
    assert scenario.turns[-1].expect.tool_calls is None  # nothing expected in the last turn
    result = run_scenario(scenario)
    assert result.passed, messages(result)


def test_a_call_without_arguments_is_not_the_call_a_check_asks_arguments_of(
    tmp_path: Path,
) -> None:
    checks = [{"id": "open", "check": {"tool_called": "list_orders(status=open)"}}]
    outcome, folder = record(tmp_path, checks, agent='{builder: "convert_app:build_parallel"}')
    assert outcome.status is TrialStatus.FAILURE
    result = run_scenario(converted(folder))
    [failure] = result.failures
    assert (failure.kind, failure.turn) == ("expectation", 2)
    assert "status" in json.dumps(failure.expected), failure


def test_a_one_turn_trial_expects_a_missing_check_in_its_turn(tmp_path: Path) -> None:
    outcome, folder = record(
        tmp_path,
        [{"id": "yes", "check": {"final_response": {"contains": "Yes"}}}],
        agent='{builder: "convert_app:build_bare"}',
        user=convert_app.user_once,
    )
    assert outcome.status is TrialStatus.FAILURE
    assert len(outcome.transcript.exchanges) == 1
    result = run_scenario(converted(folder))
    [failure] = result.failures
    assert (failure.kind, failure.turn, failure.expected) == ("expectation", 1, {"contains": "Yes"})


def test_a_bad_scenario_name_is_refused_naming_the_cassette(tmp_path: Path) -> None:
    _, folder = record(tmp_path, [{"id": "refunded", "check": {"tool_called": "issue_refund"}}])
    with pytest.raises(CassetteConversionError) as error:
        trial_to_scenario(folder, name="Refund Trial")
    assert str(error.value) == (
        f"cannot convert cassette {folder / 'agent.cassette.yaml'}: 'Refund Trial' is not a "
        "scenario name (lowercase letters, digits, '.', '_', '-')"
    )


def test_a_final_response_check_replaces_the_recorded_last_answer(tmp_path: Path) -> None:
    _, folder = record(
        tmp_path, [{"id": "thanked", "check": {"final_response": {"contains": "welcome"}}}]
    )
    scenario = yaml.safe_load(scenario_to_yaml(trial_to_scenario(folder, name="x")))
    assert scenario["turns"][-1]["expect"]["final_response"] == {"contains": "welcome"}


def test_a_builder_agent_converts_to_its_builder_with_every_recorded_tool_scripted(
    tmp_path: Path,
) -> None:
    _, folder = record(tmp_path, [{"id": "refunded", "check": {"tool_called": "issue_refund"}}])
    assert convert_app.REAL_REFUNDS == ["A-1029"]  # the trial called the real tool
    agent = yaml.safe_load(scenario_to_yaml(trial_to_scenario(folder, name="x")))["agent"]
    # the builder's own system prompt: the recorded one is left out
    assert set(agent) == {"builder", "tools"}
    assert agent["builder"] == "convert_app:build"
    assert agent["tools"]["issue_refund"]["scripted"] is True
    assert agent["tools"]["issue_refund"]["replies"] == [{"return": "refund for A-1029 issued"}]
    assert agent["tools"]["lookup_order"]["scripted"] is True


def test_a_builder_agent_without_tools_or_prompt_converts_to_its_builder_alone(
    tmp_path: Path,
) -> None:
    outcome, folder = record(
        tmp_path,
        [{"id": "noted", "check": {"final_response": {"equals": "Noted."}}}],
        agent='{builder: "convert_app:build_bare"}',
    )
    assert outcome.status is TrialStatus.SUCCESS, outcome.reason
    scenario = converted(folder)
    agent = yaml.safe_load(scenario_to_yaml(scenario))["agent"]
    assert agent == {"builder": "convert_app:build_bare"}
    assert run_scenario(scenario).passed


def test_the_description_says_where_the_scenario_came_from_and_what_was_not_converted(
    tmp_path: Path,
) -> None:
    criteria = [
        {"id": "refunded", "check": {"tool_called": "issue_refund"}},
        {"id": "polite", "never": {"said": {"contains": "your fault"}}},
    ]
    _, folder = record(tmp_path, criteria)
    assert trial_to_scenario(folder, name="x").description == (
        "Live trial trial-0.0 of refund (success: every criterion passed), converted by "
        "agentrig convert; its deterministic criteria are expectations; not converted: polite "
        "(never rules and rubrics)."
    )
    (tmp_path / "checks").mkdir()
    _, folder = record(tmp_path / "checks", [criteria[0]])
    assert trial_to_scenario(folder, name="x").description == (
        "Live trial trial-0.0 of refund (success: every criterion passed), converted by "
        "agentrig convert; its deterministic criteria are expectations."
    )


def test_a_failed_trials_description_gives_its_reason(tmp_path: Path) -> None:
    _, folder = record(tmp_path, [{"id": "looked_up", "check": {"tool_called": "lookup_order"}}])
    description = trial_to_scenario(folder, name="x").description
    assert description.startswith(
        "Live trial trial-0.0 of refund (failure: looked_up failed: expected a call lookup_order"
    )


def test_only_a_folder_holding_outcome_json_is_a_trial_folder(tmp_path: Path) -> None:
    _, folder = record(tmp_path, [{"id": "refunded", "check": {"tool_called": "issue_refund"}}])
    assert is_trial_folder(folder)
    assert not is_trial_folder(folder / "outcome.json")  # a file
    assert not is_trial_folder(folder.parent)
    (tmp_path / "odd" / "outcome.json").mkdir(parents=True)
    assert not is_trial_folder(tmp_path / "odd")  # outcome.json is not a file


@pytest.mark.parametrize(
    ("outcome", "reason"),
    [
        (None, "No such file or directory"),
        ("{not json", "Expecting property name"),
        ('{"status": "success", "reason": "r"}', "'scenario'"),
        ('{"status": "success", "reason": "r", "scenario": {"name": "s"}}', "'agent'"),
        ('{"status": "success", "reason": "r", "scenario": []}', "list indices"),
        ('{"reason": "r", "scenario": {"name": "s", "agent": {}}}', "'status'"),
        ('{"status": "success", "scenario": {"name": "s", "agent": {}}}', "'reason'"),
        ('{"status": "s", "reason": "r", "scenario": {"agent": {}, "judge": {}}}', "'name'"),
        ('{"status": "s", "reason": "r", "scenario": {"name": "s", "agent": {}}}', "'judge'"),
        (
            '{"status": "s", "reason": "r", "scenario": {"name": "s", "agent": {}, '
            '"judge": {"criteria": [{"id": "x"}]}}}',
            "use exactly one of: check, never, rubric",
        ),
    ],
)
def test_a_folder_that_is_not_a_recorded_trial_is_named(
    tmp_path: Path, outcome: str | None, reason: str
) -> None:
    folder = tmp_path / "trial-0.0"
    folder.mkdir()
    if outcome is not None:
        (folder / "outcome.json").write_text(outcome, encoding="utf-8")
    with pytest.raises(CassetteConversionError) as error:
        trial_to_scenario(folder, name="x")
    assert str(error.value).startswith(f"cannot convert cassette {folder}: not a recorded trial: ")
    assert reason in str(error.value)


def test_a_trial_that_makes_no_valid_scenario_is_named(tmp_path: Path) -> None:
    _, folder = record(tmp_path, [{"id": "refunded", "check": {"tool_called": "issue_refund"}}])
    kept = json.loads((folder / "outcome.json").read_text(encoding="utf-8"))
    kept["scenario"]["agent"] = {"builder": "no colon"}
    (folder / "outcome.json").write_text(json.dumps(kept), encoding="utf-8")
    with pytest.raises(CassetteConversionError) as error:
        trial_to_scenario(folder, name="x")
    assert str(error.value).startswith(
        f"cannot convert cassette {folder}: the scenario is invalid: "
    )
    assert "builder" in str(error.value)


def test_outcome_json_is_read_as_utf8(tmp_path: Path) -> None:
    _, folder = record(tmp_path, [{"id": "refunded", "check": {"tool_called": "issue_refund"}}])
    kept = json.loads((folder / "outcome.json").read_text(encoding="utf-8"))
    kept["reason"] = "every criterion passed ✓"
    (folder / "outcome.json").write_text(json.dumps(kept, ensure_ascii=False), encoding="utf-8")
    assert "(success: every criterion passed ✓)" in trial_to_scenario(folder, name="x").description


# --- an adapter agent, its model calls through the trial's gate --------------------------

PROMPT = "You handle refunds."

MODEL = """\
name: agent-model
turns:
  - user: Please refund order A-1029.
    model: [{say: "Refunded: your money is on its way."}]
  - user: Thanks!
    model: [{say: You are welcome.}]
"""


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[str]:
    """The adapter's model, on loopback: the scenario endpoint playing ``MODEL``."""
    path = tmp_path / "models" / "agent.scenario.yaml"
    path.parent.mkdir()
    path.write_text(MODEL, encoding="utf-8")
    with EndpointServer(ScenarioEndpoint([load_scenario(path)])) as server:
        yield server.openai_base_url


def sdk_adapter(base_url: str | None, prompt: str = PROMPT) -> Any:
    """An adapter asking its model through the trial's gate, the whole conversation each time
    (one conversation); ``base_url`` None: the client's default (a replay's endpoint)."""
    from openai import AsyncOpenAI

    async def adapter(conversation: list[dict[str, str]]) -> str:
        trial = current_trial()
        assert trial is not None
        client = AsyncOpenAI(
            base_url=base_url, api_key="sk-test", http_client=trial.http_client(), max_retries=0
        )
        answer = await client.chat.completions.create(
            model="gpt-4.1-mini",
            messages=[{"role": "system", "content": prompt}, *conversation],  # type: ignore[list-item]
        )
        return answer.choices[0].message.content or ""

    return adapter


@pytest.fixture
def adapter_trial(tmp_path: Path, upstream: str) -> Iterator[Path]:
    convert_app.ADAPTER["reply"] = sdk_adapter(upstream)
    outcome, folder = record(
        tmp_path,
        [{"id": "refunded", "check": {"said": {"contains": "Refunded"}}}],
        agent='{adapter: "convert_app:adapter"}',
        adapter=convert_app.adapter,
    )
    assert outcome.status is TrialStatus.SUCCESS, outcome.reason
    yield folder
    convert_app.ADAPTER.clear()


def test_an_adapter_trial_converts_to_a_scenario_that_plays_its_model_to_the_adapter(
    adapter_trial: Path,
) -> None:
    scenario = converted(adapter_trial)
    assert scenario.agent.adapter == "convert_app:adapter"
    assert scenario.agent.system_prompt == PROMPT  # the recorded one: the adapter sends it
    convert_app.ADAPTER["reply"] = sdk_adapter(None)
    result = run_scenario(scenario)
    assert result.passed, messages(result)
    assert [t.final_response for t in result.turns] == [
        "Refunded: your money is on its way.",
        "You are welcome.",
    ]


def test_a_converted_adapter_trial_fails_when_the_adapters_prompt_drifted(
    adapter_trial: Path,
) -> None:
    convert_app.ADAPTER["reply"] = sdk_adapter(None, prompt="You refund anything.")
    result = run_scenario(converted(adapter_trial))
    assert not result.passed
    assert any(f.kind == "invariant" for f in result.failures), messages(result)


def test_an_adapter_trial_whose_calls_skipped_the_gate_is_refused_saying_how_to_fix_it(
    tmp_path: Path,
) -> None:
    def plain(conversation: list[dict[str, str]]) -> str:
        return "Refunded: your money is on its way."

    _, folder = record(
        tmp_path,
        [{"id": "refunded", "check": {"said": {"contains": "Refunded"}}}],
        agent='{adapter: "convert_app:adapter"}',
        adapter=plain,
    )
    with pytest.raises(CassetteConversionError) as error:
        trial_to_scenario(folder, name="x")
    assert str(error.value) == (
        f"cannot convert cassette {folder}: the adapter's model calls did not pass the trial's "
        "gate, so the trial holds its replies, not its model calls: build the agent's SDK "
        "client with current_trial().http_client() (docs/live.md) and run the trial again"
    )


def test_an_adapter_trial_of_several_conversations_is_refused_naming_each(
    adapter_trial: Path,
) -> None:
    for n in (3, 2):
        shutil.copy(
            adapter_trial / "agent.cassette.yaml", adapter_trial / f"agent-{n}.cassette.yaml"
        )
    with pytest.raises(CassetteConversionError) as error:
        trial_to_scenario(adapter_trial, name="x")
    assert str(error.value) == (
        f"cannot convert cassette {adapter_trial}: the adapter's model calls were 3 "
        "conversations (agent.cassette.yaml, agent-2.cassette.yaml, agent-3.cassette.yaml); a "
        "scenario replays one: convert each cassette with agentrig convert "
        "FOLDER/agent-N.cassette.yaml"
    )
