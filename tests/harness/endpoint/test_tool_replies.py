"""``tool_results_as_scripted``: the tool results an agent sends are those its scenario's
``agent.tools`` script, compared per tool and call as agentrig's runtime would play them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.results import Failure

from .sdk_agents import SYSTEM, openai_client

openai = pytest.importorskip("openai")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {"order": {"type": "string"}},
                "required": ["order"],
            },
        },
    }
    for name in ("lookup", "refund")
]

ORDERS = """\
name: orders
agent:
  tools:
    lookup:
      params: {order: string}
      replies:
        - {when: {order: A1}, return: {status: shipped, days: 2}}
        - {when: {order: B2}, return: cancelled}
    refund:
      params: {order: string}
      mode: sequence
      replies:
        - return: refunded
        - raise: already refunded
        - stop: the run ends here
turns:
  - user: Sort out my orders
    model:
      - calls: [lookup(order=A1), lookup(order=B2)]
      - calls: [refund(order=B2), refund(order=B2), refund(order=B2)]
      - say: Done.
"""


def _agent(client: Any, results: dict[str, list[str]]) -> None:
    """A Chat Completions agent whose tools answer, call after call, from ``results``."""
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Sort out my orders"},
    ]
    while True:
        message = (
            client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
            .choices[0]
            .message
        )
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return
        for call in message.tool_calls:
            said = results[call.function.name].pop(0)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": said})


def _violations(handle: EndpointHandle) -> list[Failure]:
    return [f for f in handle.result().failures if f.invariant == "tool_results_as_scripted"]


def test_results_as_scripted_pass_by_text_json_error_text_and_stop(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(ORDERS))
    _agent(
        openai_client(handle),
        {
            # a framework's JSON of the scripted value, in any key order and spacing
            "lookup": ['{"days": 2, "status": "shipped"}', "cancelled"],
            # an error's text wrapped by the framework; after a stop, anything
            "refund": ["refunded", "Error: already refunded (code 7)", "whatever"],
        },
    )
    result = handle.check()
    outcome = {o.name: (o.checks, o.failures) for o in result.invariants}
    assert outcome["tool_results_as_scripted"] == (5, 0)


def test_each_result_that_differs_is_reported_at_its_reply(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(ORDERS)
    handle = EndpointHandle(path)
    _agent(
        openai_client(handle),
        {
            "lookup": ['{"status": "shipped", "days": 3}', "cancelled"],
            "refund": ["refund refused", "refunded", "whatever"],
        },
    )
    first, second, third = _violations(handle)
    assert first.message == (
        "request 2: tool_results_as_scripted: the agent's lookup returned "
        '\'{"status": "shipped", "days": 3}\', not {"status": "shipped", "days": 2} '
        "(agent.tools.lookup.replies[0])"
    )
    assert (first.location, first.turn, first.step) == (f"{path}:7", 1, 2)
    assert (first.expected, first.observed) == (
        {"status": "shipped", "days": 2},
        '{"status": "shipped", "days": 3}',
    )
    assert second.message == (
        "request 3: tool_results_as_scripted: the agent's refund returned 'refund refused', "
        "not 'refunded' (agent.tools.refund.replies[0])"
    )
    assert second.location == f"{path}:13"
    assert third.message == (
        "request 3: tool_results_as_scripted: the agent's refund returned 'refunded', not the "
        "error 'already refunded' (agent.tools.refund.replies[1])"
    )


def test_the_check_can_be_excluded(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(
        write_scenario(ORDERS + "invariants: {exclude: [tool_results_as_scripted]}\n")
    )
    _agent(
        openai_client(handle),
        {"lookup": ["?", "?"], "refund": ["?", "?", "?"]},
    )
    result = handle.check()
    assert "tool_results_as_scripted" not in {o.name for o in result.invariants}
