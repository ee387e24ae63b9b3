"""The probe: the agent run once against a model that only answers ``OK.``, and what its first
request offers (tools, user messages, system prompt, format); an agent that sends nothing or
fails on that plain answer is refused, naming why."""

from __future__ import annotations

import time
from typing import Any

import anthropic
import pytest

from agentrig.errors import ConfigurationError
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.fuzz.offer import PROBE_ANSWER, Offer, probe, probe_scenario
from agentrig.harness.fuzz.target import FunctionTarget
from agentrig.state import ToolSchema

from .agents import PARAMETERS, TOOLS, asks, client_of, correct, no_tools, silent

PROMPT = "Weather in Paris?"
HOUR = 3600.0
EARLIER = tuple(f"Hello {n}" for n in range(12))
GET_WEATHER = ToolSchema(name="get_weather", parameters=PARAMETERS)


def probed(agent: Any, *, max_model_calls: int = 5, live: bool = False) -> Offer:
    with EndpointHandle(probe_scenario(PROMPT), live=live) as ep:
        return probe(ep, FunctionTarget(agent), PROMPT, max_model_calls=max_model_calls)


def refusal(target: FunctionTarget) -> str:
    with EndpointHandle(probe_scenario(PROMPT)) as ep, pytest.raises(ConfigurationError) as e:
        probe(ep, target, PROMPT, max_model_calls=5)
    return str(e.value)


def test_the_offer_is_the_first_requests_tools_users_system_prompt_and_format():
    def with_history(ep: Any, prompt: str) -> str:
        messages: list[Any] = [{"role": "system", "content": "Be brief."}]
        for earlier in EARLIER:  # a history as long as any
            messages += [
                {"role": "user", "content": earlier},
                {"role": "assistant", "content": "."},
            ]
        messages.append({"role": "user", "content": prompt})
        with client_of(ep) as client:
            client.chat.completions.create(model="gpt", messages=messages, tools=TOOLS)
            # a later request's tools are not the offer
            client.chat.completions.create(model="gpt", messages=messages, tools=TOOLS[:1])
        return "done"

    offer = probed(with_history)
    assert offer == Offer(
        tools=(
            GET_WEATHER,
            ToolSchema(name="book_flight", parameters=TOOLS[1]["function"]["parameters"]),
        ),
        users=(*EARLIER, PROMPT),
        system="Be brief.",
        format="chat",
    )


def test_an_agent_on_anthropics_api_offers_in_its_format_with_its_system_prompt():
    def on_anthropic(ep: Any, prompt: str) -> str:
        with anthropic.Anthropic(
            api_key=ep.api_key,
            base_url=ep.anthropic_base_url,
            http_client=ep.httpx2_client(),
            max_retries=0,
        ) as client:
            message = client.messages.create(
                model="claude",
                max_tokens=100,
                system="You forecast.",
                tools=[
                    {"name": "get_weather", "description": "By city.", "input_schema": PARAMETERS}
                ],
                messages=[{"role": "user", "content": prompt}],
            )
        return message.content[0].text  # type: ignore[union-attr]

    offer = probed(on_anthropic)
    assert offer.format == "anthropic"
    assert offer.system == "You forecast."
    assert offer.tools == (
        ToolSchema(name="get_weather", description="By city.", parameters=PARAMETERS),
    )
    assert offer.users == (PROMPT,)


def test_an_agent_without_tools_or_system_prompt_offers_none():
    offer = probed(no_tools)
    assert offer == Offer(tools=(), users=(PROMPT,), system=None, format="chat")


def test_an_offer_finds_its_tools_by_name():
    offer = probed(correct)
    assert offer.tool("get_weather") == GET_WEATHER
    assert offer.tool("book_flight") is offer.tools[1]
    assert offer.tool("get_time") is None
    assert Offer(tools=(), users=(PROMPT,)).tool("get_weather") is None


def test_the_probe_model_answers_ok_up_to_max_model_calls_then_refuses():
    got, asks_again = asks(10)  # an agent that would ask for ever
    probed(asks_again, max_model_calls=3)
    assert got == [PROBE_ANSWER] * 3 + [400]
    got.clear()
    probed(asks_again, max_model_calls=1)
    assert got == [PROBE_ANSWER, 400]
    assert PROBE_ANSWER == "OK."


def test_the_probe_scenario_answers_every_request_and_checks_no_invariant():
    scenario = probe_scenario("Hi")
    assert scenario.name == "fuzz-probe"
    assert [turn.user for turn in scenario.turns] == ["Hi"]
    (reply,) = scenario.turns[0].replies
    assert (reply.say, reply.repeat) == (PROBE_ANSWER, True)
    assert scenario.invariants.only == ()


def test_in_process_the_probed_agent_does_not_wait_and_over_a_live_server_it_does():
    real = time.sleep
    seen: list[bool] = []

    def sleeps(ep: Any, prompt: str) -> str:
        seen.append(time.sleep is real)
        time.sleep(0 if seen[-1] else HOUR)
        return correct(ep, prompt)

    started = time.monotonic()
    probed(sleeps)
    assert time.monotonic() - started < HOUR  # the test would hang for an hour otherwise
    probed(sleeps, live=True)
    assert seen == [False, True]


def test_an_agent_that_sends_no_request_is_refused_saying_how_to_reach_the_endpoint():
    assert refusal(FunctionTarget(silent, "agents:silent")) == (
        "fuzz target 'agents:silent' sent no request to the endpoint (it returned without one): "
        "build its model client from the endpoint handle it is given (ep.api_key, "
        "ep.openai_base_url or ep.anthropic_base_url, ep.httpx2_client() or "
        "ep.async_httpx2_client())"
    )


def test_an_agent_that_raises_before_any_request_is_refused_with_what_it_raised():
    def no_key(ep: Any, prompt: str) -> str:
        raise RuntimeError("no API key")

    target = FunctionTarget(no_key)
    assert refusal(target).startswith(
        f"fuzz target {target!r} sent no request to the endpoint (RuntimeError('no API key')): "
        "build its model client"
    )


def test_an_agent_that_fails_on_the_plain_answer_is_refused_naming_its_error():
    def crashes(ep: Any, prompt: str) -> str:
        correct(ep, prompt)
        raise KeyError("choices")

    assert refusal(FunctionTarget(crashes, "agents:crashes")) == (
        "fuzz target 'agents:crashes' raised KeyError: 'choices' when the model only answered "
        "'OK.': make it pass that plain run first"
    )
