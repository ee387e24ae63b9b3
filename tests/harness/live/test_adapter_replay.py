"""``agentrig run`` on a scripted scenario whose agent is an adapter (a converted adapter trial): the scenario endpoint plays
its model in process to the client ``current_trial().http_client()`` returns, and the
endpoint's checks decide."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentrig.harness.live.trial import current_trial
from agentrig.harness.results import ScenarioResult
from agentrig.harness.runner import run_scenario
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import Scenario

AGENT = """\
import asyncio

from openai import AsyncOpenAI, OpenAI

from agentrig.harness.live import current_trial

PROMPT = "You answer briefly."


async def reply(conversation):
    client = AsyncOpenAI(api_key="unused", http_client=current_trial().http_client())
    messages = [{"role": "system", "content": PROMPT}, *conversation]
    answer = await client.chat.completions.create(model="gpt-4.1-mini", messages=messages)
    return answer.choices[0].message.content


def sync_reply(conversation):
    client = OpenAI(api_key="unused", http_client=current_trial().sync_http_client())
    messages = [{"role": "system", "content": PROMPT}, *conversation]
    answer = client.chat.completions.create(model="gpt-4.1-mini", messages=messages)
    return answer.choices[0].message.content


def crashes(conversation):
    raise RuntimeError("the agent fell over")


SEEN = []  # (the trial's key and seed, the HTTP client) of each call of the two below


async def with_options(conversation):
    trial = current_trial()
    http = trial.http_client(timeout=7.0)
    SEEN.append(((trial.key, trial.seed), http))
    client = AsyncOpenAI(api_key="unused", http_client=http)
    messages = [{"role": "system", "content": PROMPT}, *conversation]
    answer = await client.chat.completions.create(model="gpt-4.1-mini", messages=messages)
    return answer.choices[0].message.content


def sync_with_options(conversation):
    trial = current_trial()
    http = trial.sync_http_client(timeout=7.0)
    SEEN.append(((trial.key, trial.seed), http))
    client = OpenAI(api_key="unused", http_client=http)
    messages = [{"role": "system", "content": PROMPT}, *conversation]
    answer = client.chat.completions.create(model="gpt-4.1-mini", messages=messages)
    return answer.choices[0].message.content


async def falls_at_turn_2(conversation):
    if len(conversation) > 1:
        raise RuntimeError("the agent fell over at turn 2")
    return await reply(conversation)


async def asks_then_falls(conversation):
    answer = await reply(conversation)
    if len(conversation) > 1:
        raise RuntimeError("the agent fell over once answered")
    return answer


async def slow_start(conversation):
    if len(conversation) == 1:
        await asyncio.sleep(0.2)  # before its first request
    return await reply(conversation)


def not_a_reply(conversation):
    return 5


def asks_no_model(conversation):
    return "hi there"


def fuzzed(ep, prompt):
    return "an agent agentrig fuzz plays"


def optional_second(conversation, ep=None, *more, **options):
    return sync_reply(conversation)
"""

SCENARIO = """\
name: greeting
agent:
  adapter: ADAPTER
  system_prompt: You answer briefly.
turns:
  - user: hello
    model:
      - say: hi there
    expect: {final_response: hi there}
  - user: how are you?
    model:
      - say: fine
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "greeter.py").write_text(AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "greeter", raising=False)  # this test's, imported anew
    return tmp_path


def run(project: Path, adapter: str, old: str = "", new: str = "") -> object:
    path = project / "greeting.scenario.yaml"
    path.write_text(SCENARIO.replace("ADAPTER", adapter).replace(old, new, 1))
    return run_scenario(load_scenario(path))


@pytest.mark.parametrize("adapter", ["greeter:reply", "greeter:sync_reply"])
def test_an_adapter_that_follows_the_script_passes(project: Path, adapter: str) -> None:
    result = run(project, adapter)
    assert result.passed, result.failures  # type: ignore[attr-defined]
    assert [t.final_response for t in result.turns] == ["hi there", "fine"]  # type: ignore[attr-defined]


def test_an_adapter_whose_prompt_drifted_fails_the_endpoints_check(project: Path) -> None:
    result = run(project, "greeter:reply", "You answer briefly.", "You answer at length.")
    assert not result.passed  # type: ignore[attr-defined]
    assert any(f.kind == "invariant" for f in result.failures)  # type: ignore[attr-defined]


def test_an_adapter_that_raises_fails_at_its_line(project: Path) -> None:
    result = run(project, "greeter:crashes")
    failures = result.failures  # type: ignore[attr-defined]
    assert failures[0].kind == "error"
    assert "turn 1: adapter 'greeter:crashes' raised RuntimeError: the agent fell over" in (
        failures[0].message
    )
    assert failures[0].location.endswith("greeting.scenario.yaml:3")
    assert [f.message for f in failures[1:]] == [
        "turn 1 was never reached: no request carried its user message",
        "turn 2 was never reached: no request carried its user message",
    ]


def test_an_adapter_that_cannot_be_imported_is_named(project: Path) -> None:
    result = run(project, "greeter_missing:reply")
    [first, *_] = result.failures  # type: ignore[attr-defined]
    assert first.kind == "error"
    assert "greeter_missing" in first.message
    assert first.location.endswith("greeting.scenario.yaml:3")


def messages(result: Any) -> list[str]:
    return [f.message for f in result.failures]


@pytest.mark.parametrize("adapter", ["greeter:with_options", "greeter:sync_with_options"])
def test_an_adapters_http_clients_take_its_options_and_are_closed_at_the_end(
    project: Path, adapter: str
) -> None:
    result = run(project, adapter)
    assert result.passed, messages(result)  # type: ignore[attr-defined]
    seen = sys.modules["greeter"].SEEN
    assert len(seen) == 2  # one client a turn
    for trial, http in seen:
        assert trial == ("greeting/trial-0.1", 0)  # a replay is one trial of its own
        assert http.timeout.read == 7.0
        assert http.is_closed
    assert current_trial() is None  # the run left its trial


def test_a_replay_is_the_result_of_its_run(project: Path) -> None:
    result = run(project, "greeter:reply")
    assert isinstance(result, ScenarioResult)
    assert (result.name, result.passed, result.failures, result.session) == (
        "greeting",
        True,
        (),
        None,
    )
    assert result.wall_time_s > 0


def test_an_adapter_falling_over_later_fails_at_that_turn(project: Path) -> None:
    result = run(project, "greeter:falls_at_turn_2")
    assert not result.passed  # type: ignore[attr-defined]
    [first, *rest] = messages(result)
    assert first.startswith(
        "turn 2: adapter 'greeter:falls_at_turn_2' raised RuntimeError: the agent fell over at "
        "turn 2"
    )
    assert rest == ["turn 2 was never reached: no request carried its user message"]
    assert [t.final_response for t in result.turns][:1] == ["hi there"]  # type: ignore[attr-defined]
    assert current_trial() is None


def test_an_adapter_returning_no_reply_fails_at_its_turn_saying_what_it_returned(
    project: Path,
) -> None:
    result = run(project, "greeter:not_a_reply")
    first = result.failures[0]  # type: ignore[attr-defined]
    assert first.kind == "error"
    assert first.message.startswith(
        "turn 1: adapter 'greeter:not_a_reply' raised TypeError: adapter 'greeter:not_a_reply' "
        "returned int: return the reply's text"
    )
    assert first.location.endswith("greeting.scenario.yaml:3")


def test_an_adapter_that_asks_no_model_leaves_every_turn_unplayed(project: Path) -> None:
    result = run(project, "greeter:asks_no_model")
    assert not result.passed  # type: ignore[attr-defined]
    assert messages(result) == [
        "turn 1 was never reached: no request carried its user message",
        "turn 2 was never reached: no request carried its user message",
    ]
    assert result.name == "greeting"  # type: ignore[attr-defined]
    assert result.session is None  # type: ignore[attr-defined]


def test_an_agent_agentrig_fuzz_plays_is_refused_saying_how_to_replay_it(project: Path) -> None:
    result = run(project, "greeter:fuzzed")
    [failure] = result.failures  # type: ignore[attr-defined]
    path = project / "greeting.scenario.yaml"
    assert failure.message == (
        "agent.adapter 'greeter:fuzzed' takes the endpoint and the user's message (an agent "
        f"agentrig fuzz plays), not the conversation: replay this scenario with agentrig fuzz "
        f"--replay {path}"
    )
    assert failure.location.endswith("greeting.scenario.yaml:3")


def test_a_scenario_made_in_code_names_no_file_to_replay(project: Path) -> None:
    data = yaml.safe_load(SCENARIO.replace("ADAPTER", "greeter:fuzzed"))
    [failure] = run_scenario(Scenario.model_validate(data)).failures
    assert failure.message.endswith("replay this scenario with agentrig fuzz --replay FILE")


def test_an_adapter_with_one_required_argument_takes_the_conversation(project: Path) -> None:
    result = run(project, "greeter:optional_second")
    assert result.passed, messages(result)  # type: ignore[attr-defined]


def test_an_adapter_failing_once_every_turn_was_played_fails_the_run(project: Path) -> None:
    result = run(project, "greeter:asks_then_falls")
    assert not result.passed  # type: ignore[attr-defined]
    [failure] = result.failures  # type: ignore[attr-defined]
    assert failure.message.startswith(
        "turn 2: adapter 'greeter:asks_then_falls' raised RuntimeError: the agent fell over once "
        "answered"
    )


def test_a_replays_wall_time_counts_the_adapters_time_before_its_first_request(
    project: Path,
) -> None:
    result = run(project, "greeter:slow_start")
    assert result.passed, messages(result)  # type: ignore[attr-defined]
    assert 0.2 <= result.wall_time_s < 60  # type: ignore[attr-defined]
