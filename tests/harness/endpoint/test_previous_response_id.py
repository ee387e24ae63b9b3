"""A Responses client that sends only the new items with ``previous_response_id`` (the API's
stored conversations) is checked against the whole conversation it continues."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle

openai = pytest.importorskip("openai")

SCENARIO = """\
name: stored-conversation
agent:
  system_prompt: You answer weather questions.
turns:
  - user: What is the weather in Paris?
    model:
      - call: get_weather(city=Paris)
      - say: It is sunny in Paris.
    expect:
      tool_results: [{tool: get_weather, contains: sunny}]
"""

TOOLS: Any = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


@pytest.fixture
def endpoint(tmp_path: Path) -> EndpointHandle:
    path = tmp_path / "stored.scenario.yaml"
    path.write_text(SCENARIO)
    return EndpointHandle(path)


def client(ep: EndpointHandle) -> Any:
    return openai.OpenAI(
        api_key=ep.api_key, base_url=ep.openai_base_url, http_client=ep.httpx2_client()
    )


def first_call(ep: EndpointHandle, system: dict[str, str]) -> Any:
    return client(ep).responses.create(
        model="m",
        input=[system, {"role": "user", "content": "What is the weather in Paris?"}],
        tools=TOOLS,
    )


def answer(ep: EndpointHandle, previous_id: str, call_id: str) -> Any:
    output = {"type": "function_call_output", "call_id": call_id, "output": "sunny"}
    return client(ep).responses.create(
        model="m", input=[output], tools=TOOLS, previous_response_id=previous_id
    )


def test_a_continued_response_is_checked_against_the_conversation_it_continues(
    endpoint: EndpointHandle,
) -> None:
    first = first_call(endpoint, {"role": "system", "content": "You answer weather questions."})
    call = first.output[0]

    second = answer(endpoint, first.id, call.call_id)

    assert second.output_text == "It is sunny in Paris."
    result = endpoint.result()
    assert result.passed, result.failures
    assert [i.checks for i in result.invariants if i.name == "history_grows"] == [2]


def test_the_system_prompt_of_the_stored_conversation_stays_in_force(
    endpoint: EndpointHandle,
) -> None:
    first = first_call(endpoint, {"role": "developer", "content": "You answer weather questions."})

    answer(endpoint, first.id, first.output[0].call_id)

    assert endpoint.result().passed


def test_an_unknown_previous_response_leaves_the_tool_result_unmatched(
    endpoint: EndpointHandle,
) -> None:
    first = first_call(endpoint, {"role": "system", "content": "You answer weather questions."})

    answer(endpoint, "resp_elsewhere", first.output[0].call_id)

    invariants = {f.invariant for f in endpoint.result().failures}
    assert {"tool_results_answer_calls", "history_grows"} <= invariants
