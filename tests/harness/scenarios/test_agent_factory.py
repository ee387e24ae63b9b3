"""How a scenario builds its agent, alone or on top of an agent built in Python (``builder=``)."""

from __future__ import annotations

import re
from pathlib import Path
from textwrap import dedent

import pytest

import agentrig as ar
from agentrig.errors import ConfigurationError
from agentrig.fakes import ScriptedLLM
from agentrig.harness.runner import run_scenario, tool_drift_failures
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
    t: {scripted: true, replies: [{return: x}]}
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


REFUND = """\
name: refund
agent:
  tools:
    refund:
      params: {orderId: string}
      replies:
        - return: refunded
turns:
  - user: Refund order A100.
    model:
      - call: refund(orderId=A100)
      - say: Refunded.
    expect: {status: completed, final_response: Refunded.}
"""


@ar.tool
def refund(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


def test_params_the_real_tool_does_not_take_fail_at_the_tool(tmp_path: Path) -> None:
    builder = ar.AgentBuilder.base().with_tools([refund])
    loaded = scenario(tmp_path, REFUND)
    result = run_scenario(loaded, builder=builder)
    [failure] = result.failures
    assert failure.kind == "script"
    assert failure.location == f"{loaded.source.path}:4"  # type: ignore[union-attr] # "    refund:"
    assert failure.field == "agent.tools.refund"
    assert failure.message.startswith(
        "tool 'refund': the scenario's params differ from the agent's own tool: parameter "
        "'orderId' is not a parameter of the real tool (did you mean 'order_id'?); the real "
        "tool requires parameter 'order_id', not declared in params. The scenario declares "
        "params {orderId: string}; the real tool's schema is {"
    )
    assert "scripted: true" in failure.message
    assert failure.expected == {
        "type": "object",
        "properties": {"orderId": {"type": "string"}},
        "required": ["orderId"],
    }
    assert failure.observed == refund.parameters()
    assert result.turns == ()  # the turns describe another agent: they are not played


def test_a_tool_the_builder_lacks_fails_unless_marked_scripted(tmp_path: Path) -> None:
    builder = ar.AgentBuilder.base().with_tools([refund])
    missing = REFUND.replace("refund:\n", "refund_order:\n").replace(
        "call: refund(", "call: refund_order("
    )
    [failure] = run_scenario(scenario(tmp_path, missing), builder=builder).failures
    assert failure.kind == "script"
    assert failure.message.startswith(
        "tool 'refund_order': the scenario scripts it, but the agent built in Python has no "
        "tool of that name (did you mean 'refund'?) (it has: refund)"
    )
    assert failure.observed is None
    marked = missing.replace("params:", "scripted: true\n      params:")
    result = run_scenario(scenario(tmp_path, marked), builder=builder)
    assert result.passed, result.failures


def test_a_tool_marked_scripted_stands_in_for_the_builders_own(tmp_path: Path) -> None:
    builder = ar.AgentBuilder.base().with_tools([refund])
    marked = REFUND.replace("params:", "scripted: true\n      params:")
    result = run_scenario(scenario(tmp_path, marked), builder=builder)
    assert result.passed, result.failures
    assert [e.text for e in result.transcript if e.kind == "tool_result"] == ["refunded"]


def test_matching_params_run_the_real_tool(tmp_path: Path) -> None:
    builder = ar.AgentBuilder.base().with_tools([refund])
    matching = REFUND.replace("orderId", "order_id").replace("Refunded.}", "Refunded.}\n")
    result = run_scenario(scenario(tmp_path, matching), builder=builder)
    assert result.passed, result.failures
    assert [e.text for e in result.transcript if e.kind == "tool_result"] == ["refunded A100"]


@ar.tool(name="refund")
def refund_with_note(order_id: str, note: str, count: float | None = None) -> str:
    """Refund an order."""
    return "refunded"


@pytest.mark.parametrize(
    ("params", "problems"),
    [
        (
            "{order_id: integer, note: string}",
            ["parameter 'order_id' is integer in the scenario but string in the real tool"],
        ),
        (
            "{order_id: string?, note: string}",
            ["parameter 'order_id' is optional in the scenario but required in the real tool"],
        ),
        (
            "{order_id: string, note: string, count: number}",
            ["parameter 'count' is required in the scenario but optional in the real tool"],
        ),
        (
            "{order_id: string}",
            ["the real tool requires parameter 'note', not declared in params"],
        ),
        ("{order_id: string, note: string, count: integer?}", []),  # a number or null: fine
        (
            "{order_id: string, note: string, count: boolean?}",
            ["parameter 'count' is boolean in the scenario but number or null in the real tool"],
        ),
    ],
)
def test_each_difference_of_params_is_named(
    tmp_path: Path, params: str, problems: list[str]
) -> None:
    builder = ar.AgentBuilder.base().with_tools([refund_with_note])
    text = REFUND.replace("{orderId: string}", params)
    failures = tool_drift_failures(scenario(tmp_path, text), builder)
    if not problems:
        assert failures == []
        return
    [failure] = failures
    listed = failure.message.split(": ", 2)[2].split(". The scenario declares")[0]
    assert listed.split("; ") == problems


def test_drift_is_found_without_running_the_scenario(tmp_path: Path) -> None:
    calls: list[str] = []

    @ar.tool
    def refund(order_id: str) -> str:
        """Refund an order."""
        calls.append(order_id)
        return "refunded"

    builder = ar.AgentBuilder.base().with_tools([refund])
    [failure] = tool_drift_failures(scenario(tmp_path, REFUND), builder)
    assert "parameter 'orderId'" in failure.message
    assert calls == []
    fixed = REFUND.replace("orderId", "order_id")
    assert tool_drift_failures(scenario(tmp_path, fixed), builder) == []
