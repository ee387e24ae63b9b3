"""``model: auto``: each offered tool called once with arguments its schema accepts, the same
ones every run, then a text answer; refused by agentrig's own runtime."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from openai import OpenAI

from agentrig.harness.endpoint.auto_model import valid_arguments
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.runner import run_scenario
from agentrig.harness.scenarios.model import Scenario, ScenarioTurn

SCHEMAS: dict[str, dict[str, Any]] = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
    },
    "book": {
        "type": "object",
        "$defs": {"Seat": {"enum": ["aisle", "window"]}},
        "properties": {
            "seat": {"$ref": "#/$defs/Seat"},
            "when": {"anyOf": [{"type": "string", "pattern": "^[0-9]{4}$"}, {"type": "null"}]},
            "names": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        },
        "required": ["seat", "names"],
        "additionalProperties": False,
    },
}
TOOLS: list[Any] = [
    {"type": "function", "function": {"name": name, "parameters": schema}}
    for name, schema in SCHEMAS.items()
]


def _scenario(name: str = "smoke", **turn: Any) -> Scenario:
    return Scenario(name=name, turns=(ScenarioTurn(user="Hi", model="auto", **turn),))


def _agent(ep: EndpointHandle) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    """Runs every call with a fixed result until the model answers; the calls and the answer."""
    calls = []
    messages: list[Any] = [{"role": "user", "content": "Hi"}]
    with OpenAI(
        base_url=ep.openai_base_url, api_key=ep.api_key, http_client=ep.httpx2_client()
    ) as client:
        while True:
            message = (
                client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
                .choices[0]
                .message
            )
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return calls, message.content or ""
            for call in message.tool_calls:
                function = call.function  # type: ignore[union-attr]
                calls.append((function.name, json.loads(function.arguments)))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "ok"})


def test_auto_calls_each_offered_tool_with_valid_arguments_then_answers():
    with EndpointHandle(_scenario()) as ep:
        calls, answer = _agent(ep)
        result = ep.check()
    assert [name for name, _ in calls] == ["get_weather", "book"]
    for name, arguments in calls:
        assert Draft202012Validator(SCHEMAS[name]).is_valid(arguments), arguments
    assert answer == "Done: called get_weather, book."
    assert result.turns[0].steps == 3


def test_each_auto_answer_has_an_id_and_call_ids_of_its_own():
    ids: list[str] = []
    messages: list[Any] = [{"role": "user", "content": "Hi"}]
    with (
        EndpointHandle(_scenario()) as ep,
        OpenAI(
            base_url=ep.openai_base_url, api_key=ep.api_key, http_client=ep.httpx2_client()
        ) as client,
    ):
        for _ in range(3):
            completion = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
            message = completion.choices[0].message
            ids.append(completion.id)
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls or ():
                ids.append(call.id)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "ok"})
        assert ep.check().passed
    assert len(ids) == 5  # three answers, two calls
    assert len(set(ids)) == 5, ids


def test_the_same_scenario_makes_the_same_calls_and_a_seed_other_ones():
    runs = []
    for scenario in (_scenario(), _scenario(), _scenario(seed=7)):
        with EndpointHandle(scenario) as ep:
            runs.append(_agent(ep)[0])
    assert runs[0] == runs[1]
    assert runs[2] != runs[0]


def test_a_seed_makes_the_same_calls_whatever_the_scenario_is_called():
    runs = []
    for scenario in (_scenario(seed=7), _scenario("other", seed=7), _scenario("other")):
        with EndpointHandle(scenario) as ep:
            runs.append(_agent(ep)[0])
    assert runs[0] == runs[1]
    assert runs[2] != runs[1]  # without a seed, the scenario's name draws


def test_valid_arguments_fit_the_schema_for_many_seeds():
    for seed in range(50):
        for name, schema in SCHEMAS.items():
            arguments = valid_arguments(schema, f"seed-{seed}")
            assert Draft202012Validator(schema).is_valid(arguments), (name, arguments)


def test_agentrigs_runtime_refuses_auto_at_the_model_line():
    result = run_scenario(_scenario())
    assert not result.passed
    (failure,) = result.failures
    assert failure.message.startswith("model: auto reads the tools each request offers")


def test_agentrigs_runtime_refuses_a_scenario_naming_a_fuzzed_agent(tmp_path, monkeypatch):
    # A scenario agentrig fuzz wrote names an agent(ep, prompt), which agentrig run cannot call
    # (it calls an adapter of the conversation, as a converted live trial names).
    (tmp_path / "fuzzed_agent.py").write_text("def agent(ep, prompt):\n    return prompt\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    scenario = Scenario.model_validate(
        {
            "name": "fuzzed",
            "agent": {"adapter": "fuzzed_agent:agent"},
            "turns": [{"user": "Hi", "model": [{"say": "Hello"}]}],
        }
    )
    (failure,) = run_scenario(scenario).failures
    assert "takes the endpoint and the user's message" in failure.message
    assert "agentrig fuzz --replay FILE" in failure.message


def test_auto_is_the_only_word_a_model_takes():
    with pytest.raises(ValueError, match="auto"):
        ScenarioTurn(user="Hi", model="automatic")  # type: ignore[arg-type]
