"""How a scenario builds its agent, alone or on top of an agent built in Python (``builder=``)."""

from __future__ import annotations

import re
from pathlib import Path
from textwrap import dedent

import pytest

import agentrig as ar
from agentrig.errors import ConfigurationError
from agentrig.fakes import ScriptedLLM
from agentrig.harness.runner import run_scenario
from agentrig.harness.scenarios.agent_factory import build_agent
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import Scenario

WEATHER = """\
name: weather
agent:
  tools:
    get_weather:
      params: {city: string}
      replies:
        - return: scripted sunshine
turns:
  - user: Weather in Paris?
    model:
      - call: get_weather(city=Paris)
      - say: done
    expect: {status: completed}
"""

SHORT_BUDGET = """\
name: short-budget
agent: {budget: {max_steps: 1}}
turns:
  - user: hi
    model: [{say: one}]
"""

THREE_STEPS = """\
name: three-steps
agent:
  tools:
    t: {replies: [{return: x}]}
turns:
  - user: hi
    model: [{call: t()}, {call: t()}, {say: done}]
    expect: {status: completed, steps: 3}
"""


def scenario(tmp_path: Path, text: str) -> Scenario:
    path = tmp_path / f"{text.split()[1]}.scenario.yaml"
    path.write_text(dedent(text), encoding="utf-8")
    return load_scenario(path)


def test_the_builders_own_tool_is_the_one_under_test(tmp_path: Path) -> None:
    calls: list[str] = []

    @ar.tool
    def get_weather(city: str) -> str:
        """The real tool."""
        calls.append(city)
        return f"real weather in {city}"

    builder = ar.AgentBuilder.base().with_tools([get_weather])
    result = run_scenario(scenario(tmp_path, WEATHER), builder=builder)
    assert result.passed, result.failures
    assert calls == ["Paris"]
    results = [e.text for e in result.transcript if e.kind == "tool_result"]
    assert results == ["real weather in Paris"]


def test_one_builder_serves_many_scenarios_without_leaking_between_them(tmp_path: Path) -> None:
    builder = ar.AgentBuilder.base()
    first = run_scenario(scenario(tmp_path, SHORT_BUDGET), builder=builder)
    second = run_scenario(scenario(tmp_path, THREE_STEPS), builder=builder)
    assert first.passed, first.failures
    assert second.passed, [f.message for f in second.failures]
    assert builder.capabilities() == ()
    assert len(builder.tools()) == 0


def test_the_builders_event_listeners_still_hear_the_run(tmp_path: Path) -> None:
    heard: list[str] = []
    builder = ar.AgentBuilder.base()
    builder.event_bus().wiretap(lambda event: heard.append(type(event).__name__))
    assert run_scenario(scenario(tmp_path, THREE_STEPS), builder=builder).passed
    assert heard.count("AgentStepCompleted") == 3
    heard.clear()
    assert run_scenario(scenario(tmp_path, THREE_STEPS), builder=builder).passed
    assert heard.count("AgentStepCompleted") == 3


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        (ar.AgentBuilder.base, "pass the builder itself, not a function that makes one"),
        (
            ar.AgentBuilder.base().with_capability(ar.UseLlmConfig(ScriptedLLM([]))).build(),
            "pass the AgentBuilder, not the AgentLoop that build() made",
        ),
        ("builder", "expected an AgentBuilder"),
    ],
)
def test_a_builder_of_the_wrong_type_is_a_clear_error(
    tmp_path: Path, given: object, hint: str
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(hint)):
        build_agent(scenario(tmp_path, WEATHER), base=given)  # type: ignore[arg-type]
    result = run_scenario(scenario(tmp_path, WEATHER), builder=given)  # type: ignore[arg-type]
    assert not result.passed
    assert hint in result.failures[0].message
