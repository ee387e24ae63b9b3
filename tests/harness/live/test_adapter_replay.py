"""``agentrig run`` on a scripted scenario whose agent is an adapter (a converted adapter trial): the scenario endpoint plays
its model in process to the client ``current_trial().http_client()`` returns, and the
endpoint's checks decide."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrig.harness.runner import run_scenario
from agentrig.harness.scenarios.loader import load_scenario

AGENT = """\
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
