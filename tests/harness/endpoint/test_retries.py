"""How many times a turn may be retried (``retries:``'s maximum): past it, the request is
answered HTTP 400 and the scenario fails naming the turn's ``retries:`` line (or the turn's)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import DEFAULT_MAX_RETRIES

from .conftest import RawChatAgent, assistant_of, first_turn

RETRIED = """\
name: retried
turns:
  - user: Weather in Paris?
    RETRIES
    model:
      - say: Paris.
        repeat: true
"""
FRAMEWORK_RETRY = "Please return text or call a tool."


def _retried(agent: RawChatAgent, times: int, retry: str = FRAMEWORK_RETRY) -> list[int]:
    """The turn's question, then ``times`` retries of it: the status of each request."""
    messages = first_turn()
    statuses = []
    for _ in range(times + 1):
        response = agent.post(messages)
        statuses.append(response.status_code)
        if response.status_code != 200:
            break
        messages += [assistant_of(response), {"role": "user", "content": retry}]
    return statuses


def _script_failures(handle: EndpointHandle) -> list[tuple[str, str | None]]:
    return [(f.message, f.location) for f in handle.result().failures if f.kind == "script"]


@pytest.mark.parametrize(
    ("retries", "allowed"),
    [
        pytest.param("", DEFAULT_MAX_RETRIES, id="left-out"),
        pytest.param("retries: true", DEFAULT_MAX_RETRIES, id="true"),
        pytest.param("retries: 1", 1, id="a-number"),
        pytest.param("retries: {max: 2}", 2, id="max"),
        pytest.param("retries: {contains: Please, max: 0}", 0, id="a-rule-with-max"),
    ],
)
def test_a_turn_allows_so_many_retries_and_fails_naming_the_line_past_them(
    write_scenario: Callable[[str], Path], retries: str, allowed: int
) -> None:
    path = write_scenario(RETRIED.replace("RETRIES", retries))
    handle = EndpointHandle(path)
    assert _retried(RawChatAgent(handle), allowed) == [200] * (allowed + 1)
    assert _script_failures(handle) == []

    handle = EndpointHandle(path)
    assert _retried(RawChatAgent(handle), allowed + 1) == [200] * (allowed + 1) + [400]
    [(message, location)] = _script_failures(handle)
    number = allowed + 2
    limit = "by retries:" if "1" in retries or "max" in retries else "by default"
    assert message == (
        f"turn 1: request {number} retries the turn {allowed + 1} "
        f"time{'s' if allowed + 1 != 1 else ''} (user messages after the turn's own), more "
        f"than the {allowed} allowed {limit}; allow more (retries: N, or max: N beside a rule) "
        "or check why the agent keeps retrying"
    )
    assert location == f"{path}:{4 if retries else 3}"


def test_a_rule_with_max_alone_recognises_the_frameworks_retries_only(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(RETRIED.replace("RETRIES", "retries: {max: 5}")))
    # "Try again" is no framework's retry: it begins turn 2, which the scenario does not have
    assert _retried(RawChatAgent(handle), 1, retry="Try again.") == [200, 400]


@pytest.mark.parametrize(
    ("retries", "problem"),
    [
        ("retries: -1", "turns[0].retries: must be at least 0, got the number -1"),
        ("retries: {max: -2}", "turns[0].retries.max: must be at least 0, got the number -2"),
        ("retries: {contains: a, regex: b}", "turns[0].retries: use exactly one of"),
        ("retries: {}", "turns[0].retries: use exactly one of"),
    ],
)
def test_a_bad_maximum_is_refused_naming_the_field(
    write_scenario: Callable[[str], Path], retries: str, problem: str
) -> None:
    path = write_scenario(RETRIED.replace("RETRIES", retries))
    with pytest.raises(ScenarioFileError) as caught:
        load_scenario(path)
    assert f"{path}:4:" in str(caught.value)
    assert problem in str(caught.value)
