"""A scenario built in memory served as a fresh session of a handle that stays up: the same
clients, key and server, one session per scenario."""

from __future__ import annotations

import pytest
from openai import OpenAI

from agentrig.harness.endpoint.handle import EndpointCheckFailed, EndpointHandle
from agentrig.harness.scenarios.model import ModelReply, Scenario, ScenarioTurn


def _scenario(answer: str) -> Scenario:
    turn = ScenarioTurn(user="Hi", model=(ModelReply(say=answer),))
    return Scenario(name=f"say-{answer}", turns=(turn,))


def _ask(client: OpenAI) -> str | None:
    messages = [{"role": "user", "content": "Hi"}]
    reply = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    return reply.choices[0].message.content


@pytest.mark.parametrize("live", [False, True])
def test_each_played_scenario_is_a_fresh_session_on_the_same_clients(live):
    with EndpointHandle(_scenario("first"), live=live) as ep:
        client = OpenAI(
            base_url=ep.openai_base_url, api_key=ep.api_key, http_client=ep.httpx2_client()
        )
        assert _ask(client) == "first"
        for answer in ("second", "third"):
            session = ep.play(_scenario(answer))
            assert _ask(client) == answer
            assert session.result().passed
            assert ep.result() is session.result()
        client.close()


def test_check_reads_the_session_played_last():
    with EndpointHandle(_scenario("first")) as ep:
        ep.play(_scenario("unused"))
        with pytest.raises(EndpointCheckFailed, match="turn 1 was never reached"):
            ep.check()
