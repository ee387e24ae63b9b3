"""``agent.network``: seeded, probabilistic faults and latency jitter on the endpoint's wire."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.endpoint.network import drawn_fault
from agentrig.harness.endpoint.service import ScenarioEndpoint
from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios.loader import load_scenario

from .sdk_agents import openai_client
from .test_mixture import _binomial_bounds

openai = pytest.importorskip("openai")

FLAKY_NETWORK = """\
name: flaky-network
agent:
  network:
    fault_rate: 0.5
    fault: {status: 503, retry_after: 0.01, message: overloaded}
    seed: 11
turns:
  - user: Hi
    model: [{say: Hello}]
    expect: {final_response: Hello, model_calls: 1}
"""

HI = [{"role": "user", "content": "Hi"}]


def _keys_whose_first_request(faults: bool, path: Path, count: int = 1) -> list[str]:
    scenario = load_scenario(path)
    assert scenario.agent.network is not None
    keys = (f"flaky-network/{n}" for n in range(10_000))
    return [
        key
        for key in keys
        if (drawn_fault(scenario.agent.network, scenario.name, key, 1) is not None) == faults
    ][:count]


def test_a_drawn_fault_is_retried_by_the_sdk_and_the_script_waits_for_the_retry(
    write_scenario: Callable[[str], Path],
) -> None:
    path = write_scenario(FLAKY_NETWORK)
    [key] = _keys_whose_first_request(True, path)
    statuses = []
    for _ in range(2):  # the same key meets the same trouble
        handle = EndpointHandle(path, key=key)
        client = openai_client(handle).with_options(max_retries=5)
        answer = client.chat.completions.create(model="m", messages=HI)
        assert answer.choices[0].message.content == "Hello"
        result = handle.check()  # passes: the fault took no scripted reply
        statuses.append([request.status for request in handle.requests()])
        errors = [entry.text for entry in result.transcript if entry.is_error]
        assert errors[0] == "HTTP 503: overloaded"
    assert statuses[0] == statuses[1]
    assert statuses[0][0] == 503
    assert statuses[0][-1] == 200


def test_a_key_the_draw_spares_gets_the_script(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(FLAKY_NETWORK)
    [key] = _keys_whose_first_request(False, path)
    handle = EndpointHandle(path, key=key)
    client = openai_client(handle).with_options(max_retries=0)
    assert client.chat.completions.create(model="m", messages=HI).choices[0].message.content
    assert [request.status for request in handle.requests()] == [200]


def test_each_answer_waits_a_drawn_latency_in_its_range(
    write_scenario: Callable[[str], Path],
) -> None:
    text = (
        "name: slow-network\nagent:\n  network: {latency: {min: 0.5, max: 2}}\n"
        "turns:\n  - user: Hi\n    model: [{say: Hello, repeat: true, latency: 1}]\n"
    )
    path = write_scenario(text)
    body = json.dumps({"model": "m", "messages": HI}).encode()

    def delays(key: str) -> list[float]:
        endpoint = ScenarioEndpoint([load_scenario(path)])
        headers = {"authorization": f"Bearer {key}"}
        return [
            endpoint.handle("POST", "/v1/chat/completions", headers, body).delay for _ in range(20)
        ]

    first = delays("a")
    # the reply's own second, and a draw between min and max on top
    assert all(1.5 <= delay <= 3 for delay in first)
    assert len(set(first)) == 20
    assert delays("a") == first  # one key, the same draws on another server
    assert delays("b") != first


def test_a_drawn_fault_must_be_an_http_error(write_scenario: Callable[[str], Path]) -> None:
    text = FLAKY_NETWORK.replace(
        "{status: 503, retry_after: 0.01, message: overloaded}", "{cut_after: 1}"
    )
    with pytest.raises(ScenarioFileError, match="a drawn fault is an HTTP error"):
        load_scenario(write_scenario(text))


@pytest.mark.slow
def test_the_share_of_faulted_requests_is_the_fault_rate(
    write_scenario: Callable[[str], Path],
) -> None:
    rate, sessions = 0.25, 2000
    endpoint = ScenarioEndpoint(
        [load_scenario(write_scenario(FLAKY_NETWORK.replace("0.5", str(rate))))]
    )
    body = json.dumps({"model": "m", "messages": HI}).encode()
    faulted = 0
    for n in range(sessions):
        headers = {"authorization": f"Bearer agent/{n}"}
        statuses = []
        while not statuses or statuses[-1] != 200:  # a client that retries until answered
            reply = endpoint.handle("POST", "/v1/chat/completions", headers, body)
            statuses.append(reply.status)
        faulted += statuses[0] == 503
        assert endpoint.session(f"agent/{n}").result().passed  # the script waited for it
    # each session's first request is faulted with probability rate, independently of the
    # others (its own key): the count follows a binomial law; 99.9% bounds on it
    low, high = _binomial_bounds(sessions, rate, 0.001)
    assert low <= faulted <= high, (faulted, (low, high))
