"""Scripts drawn from what the agent offers: valid scenarios the writer and loader round-trip,
narrowed as the behaviours say."""

from __future__ import annotations

import pytest
from hypothesis import find, given, settings

from agentrig.errors import InvalidInputError
from agentrig.harness.fuzz import Behaviours, Offer, model_replies, model_scripts, texts
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import ModelReply
from agentrig.harness.scenarios.writer import write_scenario
from agentrig.state import ToolSchema

WEATHER = ToolSchema(
    name="get_weather",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
SEARCH = ToolSchema(name="search", parameters={"type": "object", "properties": {}})
OFFER = Offer(tools=(WEATHER, SEARCH), users=("Hi", "Weather in Paris?"))
QUICK = settings(max_examples=20, derandomize=True, database=None)


@QUICK
@given(scenario=model_scripts(OFFER, adapter="pkg.agent:run"))
def test_a_script_ends_in_a_repeating_answer_on_the_last_user_turn(scenario):
    assert [turn.user for turn in scenario.turns] == ["Hi", "Weather in Paris?"]
    assert scenario.turns[0].model == ()
    final = scenario.turns[-1].model[-1]
    assert final.repeat
    assert final.say is not None or final.refuse
    assert scenario.agent.adapter == "pkg.agent:run"
    assert scenario.invariants.exclude == ("tools_offered",)


@settings(max_examples=15, derandomize=True, database=None)
@given(scenario=model_scripts(OFFER))
def test_a_written_script_loads_back_equal(scenario, tmp_path_factory):
    path = tmp_path_factory.mktemp("scripts") / "fuzz.scenario.yaml"
    write_scenario(scenario, path=path)
    assert load_scenario(path) == scenario


@QUICK
@given(
    scenario=model_scripts(
        OFFER, Behaviours(tools=("search",), replies={"call", "parallel_calls"}, faults=())
    )
)
def test_narrowed_behaviours_call_only_the_tools_and_play_only_the_kinds_allowed(scenario):
    *steps, final = scenario.turns[-1].model
    for reply in steps:
        assert {call.name for call in reply.tool_calls} == {"search"}
        assert reply.fault is None
    assert final.say is not None  # no answer kind allowed: the script still ends in text


@QUICK
@given(reply=model_replies(OFFER, Behaviours(replies={"refusal"}, faults=())))
def test_model_replies_draws_one_answer_of_the_kinds_allowed(reply):
    assert reply.refuse is not None or reply.tool_calls


@QUICK
@given(scenario=model_scripts(OFFER, Behaviours(replies=(), faults={"rate_limit"})))
def test_with_faults_only_the_script_is_faults_then_text(scenario):
    *steps, final = scenario.turns[-1].model
    for reply in steps:
        assert reply.fault is not None
        assert reply.fault.status == 429
        assert reply.fault.retry_after is not None
    assert final.say is not None
    assert final.fault is None


@QUICK
@given(scenario=model_scripts(OFFER))
def test_only_the_last_answer_ends_the_turn(scenario):
    *steps, final = scenario.turns[-1].model
    for reply in steps:
        assert reply.tool_calls or reply.fault is not None, reply
    assert not final.tool_calls
    assert final.fault is None
    assert final.say is not None or final.refuse is not None


FIRST, LAST = ModelReply(say="first"), ModelReply(call="search()")


@QUICK
@given(scenario=model_scripts(OFFER, Behaviours(before=(FIRST,), after=(LAST,))))
def test_fixed_replies_play_before_and_after_the_drawn_ones(scenario):
    first, last = FIRST, LAST
    replies = scenario.turns[-1].model
    assert replies[0] == first
    assert replies[-2] == last


def test_a_tool_the_agent_does_not_offer_is_refused_naming_the_offered_ones():
    with pytest.raises(InvalidInputError, match="book not offered by the agent; it offers: "):
        model_replies(OFFER, Behaviours(tools=("book",)))


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"replies": {"shout"}}, "replies"),
        ({"faults": {"flood"}}, "faults"),
        ({"max_steps": 0}, "max_steps"),
        ({"before": ("say hi",)}, "before[0]"),
    ],
)
def test_bad_behaviours_name_the_field(options, field):
    with pytest.raises(InvalidInputError) as caught:
        Behaviours(**options)
    assert caught.value.field == field


def test_one_kind_or_tool_may_be_given_as_a_string():
    behaviours = Behaviours(tools="search", replies="refusal", faults="rate_limit")
    assert behaviours.tools == ("search",)
    assert behaviours.replies == {"refusal"}
    assert behaviours.faults == {"rate_limit"}


@QUICK
@given(scenario=model_scripts(OFFER, Behaviours(replies=(), faults={"timeout"})))
def test_a_timeout_is_the_endpoint_answering_nothing_until_the_client_gives_up(scenario):
    *steps, _ = scenario.turns[-1].model
    for reply in steps:
        assert reply.fault is not None
        assert reply.fault.timeout
        assert reply.fault.status is None
        assert reply.say is not None or reply.tool_calls  # the reply that never arrives


@pytest.mark.parametrize(
    ("kind", "found"),
    [
        ("empty", lambda text: text == ""),
        ("blank", lambda text: text != "" and not text.strip()),
        ("long", lambda text: len(text) >= 10_000),
        ("unicode", lambda text: any(ord(char) > 0xFFFF for char in text)),
        ("right to left", lambda text: any("\u0600" <= char <= "\u06ff" for char in text)),
        ("markdown", lambda text: "```" in text or "**" in text),
    ],
)
def test_text_answers_include_each_kind_the_model_may_send(kind, found):
    assert found(find(texts(), found, settings=settings(database=None, max_examples=2_000)))


def test_an_empty_answer_says_how_it_finished():
    replies = model_replies(OFFER, Behaviours(replies={"text"}, faults=()))
    empty = find(replies, lambda reply: reply.say == "", settings=settings(database=None))
    assert empty.finish_reason == "stop"
