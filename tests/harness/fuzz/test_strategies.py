"""Scripts drawn from what the agent offers: valid scenarios the writer and loader round-trip,
narrowed as the behaviours say, each kind of answer and fault as the fuzzer plays it.

Each test builds its strategies in its own body (one built at import, in ``@given``, is built
once by the code as it was then, which a mutation run cannot change afterwards) and reads a
fixed, derandomized sample of what they draw."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from agentrig.drivers._sdk import RAW_ARGUMENTS_KEY
from agentrig.errors import InvalidInputError
from agentrig.harness.fuzz import Behaviours, Offer, model_replies, model_scripts, texts, tool_calls
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import ModelReply, RedactedThink, Scenario
from agentrig.harness.scenarios.writer import write_scenario
from agentrig.state import ToolSchema

T = TypeVar("T")

WEATHER = ToolSchema(
    name="get_weather",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
SEARCH = ToolSchema(name="search", parameters={"type": "object", "properties": {}})
OFFER = Offer(tools=(WEATHER, SEARCH), users=("Hi", "Weather in Paris?"))
REFUSALS = ("I can't help with that.", "I'm sorry, but I cannot assist with this request.")


def _drawn(strategy: st.SearchStrategy[T], examples: int = 100) -> list[T]:
    """``examples`` values of ``strategy``, the same ones every run."""
    seen: list[T] = []

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy)
    def collect(value: T) -> None:
        seen.append(value)

    collect()
    return seen


FIND_MANY = settings(
    database=None,
    max_examples=2_000,
    phases=[Phase.generate],
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    deadline=None,
)


def _found(strategy: st.SearchStrategy[T], condition: Callable[[T], Any]) -> T:
    return find(strategy, condition, settings=FIND_MANY)


def _script(scenario: Scenario) -> tuple[ModelReply, ...]:
    return scenario.turns[-1].model


def _replies(**behaviours: Any) -> list[ModelReply]:
    return _drawn(model_replies(OFFER, Behaviours(**behaviours)), 150)


def test_a_script_ends_in_a_repeating_answer_on_the_last_user_turn():
    for scenario in _drawn(model_scripts(OFFER, adapter="pkg.agent:run"), 30):
        assert scenario.name == "fuzz"
        assert [turn.user for turn in scenario.turns] == ["Hi", "Weather in Paris?"]
        assert scenario.turns[0].model == ()
        *steps, final = _script(scenario)
        assert final.repeat
        assert final.say is not None or final.refuse
        assert not any(reply.repeat for reply in steps)
        assert scenario.agent.adapter == "pkg.agent:run"
        assert scenario.invariants.exclude == ("tools_offered",)


def test_a_script_is_named_as_asked_and_names_no_adapter_unless_given_one():
    offer = Offer(tools=(SEARCH,), users=("Only turn",))
    for scenario in _drawn(model_scripts(offer, name="my-agent"), 10):
        assert scenario.name == "my-agent"
        assert scenario.agent.adapter is None
        assert [turn.user for turn in scenario.turns] == ["Only turn"]


def test_a_written_script_loads_back_equal(tmp_path):
    behaviours = Behaviours(faults={"chunking", "timeout", "cut_stream"})
    for index, scenario in enumerate(_drawn(model_scripts(OFFER, behaviours), 15)):
        path = tmp_path / f"fuzz-{index}.scenario.yaml"
        write_scenario(scenario, path=path)
        assert load_scenario(path) == scenario


def test_narrowed_behaviours_call_only_the_tools_and_play_only_the_kinds_allowed():
    behaviours = Behaviours(tools=("search",), replies={"call", "parallel_calls"}, faults=())
    for scenario in _drawn(model_scripts(OFFER, behaviours), 30):
        *steps, final = _script(scenario)
        for reply in steps:
            assert {call.name for call in reply.tool_calls} == {"search"}
            assert reply.fault is None
        assert final.say is not None  # no answer kind allowed: the script still ends in text


def test_a_script_has_up_to_max_steps_drawn_answers_before_the_last():
    behaviours = Behaviours(replies={"call"}, faults=(), max_steps=2)
    scripts = _drawn(model_scripts(OFFER, behaviours), 60)
    assert {len(_script(scenario)) for scenario in scripts} == {1, 2, 3}
    for scenario in scripts:
        assert all(reply.call is not None for reply in _script(scenario)[:-1])


def test_with_only_answers_that_end_a_turn_the_script_is_that_answer():
    behaviours = Behaviours(replies={"text", "refusal"}, faults=())
    finals = [_script(scenario) for scenario in _drawn(model_scripts(OFFER, behaviours), 30)]
    assert all(len(script) == 1 and script[0].repeat for script in finals)
    assert {script[0].refuse is None for script in finals} == {True, False}  # texts, refusals


def test_model_replies_draws_one_answer_of_the_kinds_allowed():
    replies = _replies(replies={"refusal"}, faults=())
    assert {reply.refuse for reply in replies} == set(REFUSALS)
    assert all(reply.say is None and not reply.tool_calls for reply in replies)


def test_model_replies_by_default_plays_every_kind_but_a_malformed_event():
    replies = _drawn(model_replies(OFFER), 300)
    assert not any(reply.repeat for reply in replies)
    kinds = {
        "text": lambda reply: reply.say is not None and not reply.tool_calls,
        "call": lambda reply: reply.call is not None and reply.call.name != "unknown_tool",
        "calls": lambda reply: reply.calls is not None,
        "refusal": lambda reply: reply.refuse is not None,
        "length": lambda reply: reply.finish_reason == "length",
        "think": lambda reply: reply.think is not None,
        "429": lambda reply: reply.fault is not None and reply.fault.status == 429,
        "5xx": lambda reply: reply.fault is not None and (reply.fault.status or 0) >= 500,
        "cut": lambda reply: reply.fault is not None and reply.fault.cut_after is not None,
        "timeout": lambda reply: reply.fault is not None and reply.fault.timeout,
        "malformed": lambda reply: reply.fault is not None and reply.fault.malformed_at,
    }
    played = {name for name, found in kinds.items() if any(map(found, replies))}
    assert played == set(kinds) - {"malformed"}


def test_with_faults_only_the_script_is_faults_then_text():
    behaviours = Behaviours(replies=(), faults={"rate_limit"})
    for scenario in _drawn(model_scripts(OFFER, behaviours), 30):
        *steps, final = _script(scenario)
        for reply in steps:
            assert reply.fault is not None
            assert reply.fault.status == 429
        assert final.say is not None
        assert final.fault is None


def test_only_the_last_answer_ends_the_turn():
    for scenario in _drawn(model_scripts(OFFER), 30):
        *steps, final = _script(scenario)
        for reply in steps:
            assert reply.tool_calls or reply.fault is not None, reply
        assert not final.tool_calls
        assert final.fault is None
        assert final.say is not None or final.refuse is not None


FIRST, LAST = ModelReply(say="first"), ModelReply(call="search()")


def test_fixed_replies_play_before_and_after_the_drawn_ones():
    behaviours = Behaviours(before=(FIRST,), after=(LAST,), replies={"call"}, faults=())
    for scenario in _drawn(model_scripts(OFFER, behaviours), 20):
        replies = _script(scenario)
        assert replies[0] == FIRST
        assert replies[-2] == LAST
        assert all(reply.call is not None for reply in replies[1:-2])


def test_a_tool_the_agent_does_not_offer_is_refused_naming_the_offered_ones():
    with pytest.raises(InvalidInputError) as caught:
        model_replies(OFFER, Behaviours(tools=("book", "search", "pay")))
    assert caught.value.problems == [
        ("tools", "book, pay not offered by the agent; it offers: get_weather, search")
    ]
    assert caught.value.what == "Behaviours"
    with pytest.raises(InvalidInputError) as caught:
        model_scripts(Offer(tools=(), users=("Hi",)), Behaviours(tools="book"))
    assert caught.value.problems == [("tools", "book not offered by the agent; it offers: none")]


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


def _faults(kind: str) -> list[ModelReply]:
    replies = _replies(replies=(), faults={kind})
    assert any(reply.fault is None for reply in replies)  # the text that ends a turn
    return [reply for reply in replies if reply.fault is not None]


def test_a_timeout_is_the_endpoint_answering_nothing_until_the_client_gives_up():
    replies = _faults("timeout")
    for reply in replies:
        assert reply.fault.timeout
        assert reply.fault.status is None
        assert reply.say is not None or reply.tool_calls  # the reply that never arrives
    assert {reply.call is not None for reply in replies} == {True, False}


def test_a_rate_limit_is_a_429_with_a_short_retry_after():
    replies = _faults("rate_limit")
    assert {(reply.fault.status, reply.fault.retry_after) for reply in replies} == {
        (429, 0.001),
        (429, 0.01),
    }
    assert all(reply.say is None and not reply.tool_calls for reply in replies)


def test_a_server_error_is_each_5xx_with_a_millisecond_retry_after():
    replies = _faults("server_error")
    assert {(reply.fault.status, reply.fault.retry_after) for reply in replies} == {
        (500, 0.001),
        (502, 0.001),
        (503, 0.001),
        (529, 0.001),
    }
    assert all(reply.say is None and not reply.tool_calls for reply in replies)


def test_a_stream_is_cut_after_0_to_4_events_of_a_text_or_a_call():
    replies = _faults("cut_stream")
    assert {reply.fault.cut_after for reply in replies} == {0, 1, 2, 3, 4}
    assert {reply.call is not None for reply in replies} == {True, False}
    assert all(reply.fault.status is None for reply in replies)


def test_a_malformed_event_is_the_first_to_fourth_of_a_text_or_a_call():
    replies = _faults("malformed_stream")
    assert {reply.fault.malformed_at for reply in replies} == {1, 2, 3, 4}
    assert {reply.call is not None for reply in replies} == {True, False}
    assert all(reply.fault.status is None for reply in replies)


def test_with_chunking_a_script_is_streamed_in_hostile_chunks_or_one_event_a_chunk():
    scripts = _drawn(model_scripts(OFFER, Behaviours(replies="text", faults="chunking")), 60)
    assert {scenario.agent.wire_chunking for scenario in scripts} == {"events", "bytes", "utf8"}
    assert all(scenario.agent.adapter is None for scenario in scripts)


def test_without_chunking_a_script_is_streamed_one_event_a_chunk():
    faults = {"rate_limit", "server_error", "timeout", "cut_stream", "malformed_stream"}
    for scenario in _drawn(model_scripts(OFFER, Behaviours(faults=faults)), 30):
        assert scenario.agent.wire_chunking == "events"


def test_faults_not_allowed_are_never_played():
    behaviours = Behaviours(replies={"call"}, faults={"server_error"})
    statuses = {
        reply.fault.status if reply.fault else None
        for scenario in _drawn(model_scripts(OFFER, behaviours), 40)
        for reply in _script(scenario)
    }
    assert statuses & {500, 502, 503, 529}
    assert statuses <= {None, 500, 502, 503, 529}


def test_parallel_calls_are_two_or_three_calls_of_the_tools_allowed():
    replies = _replies(replies="parallel_calls", faults=(), tools="search")
    calls = [reply.calls for reply in replies if reply.tool_calls]
    assert {len(many) for many in calls} == {2, 3}
    assert all(reply.call is None for reply in replies)
    assert {call.name for many in calls for call in many} == {"search"}


def test_an_unknown_tool_is_one_the_agent_does_not_offer_called_with_plain_arguments():
    replies = [reply for reply in _replies(replies="unknown_tool", faults=()) if reply.call]
    names = {"unknown_tool", "delete_all_records", "transfer_funds", "lookup"}  # search is offered
    assert {reply.call.name for reply in replies} == names
    assert {json.dumps(reply.call.args) for reply in replies} == {
        "{}",
        '{"query": "x"}',
        '{"id": 1}',
    }


def test_reasoning_comes_before_a_call_or_a_text():
    replies = _replies(replies="reasoning", faults=())
    thoughts = (
        "Let me think about this.",
        "The user wants a tool call.",
        RedactedThink(redacted=True),
    )
    assert {(reply.think, reply.call is not None) for reply in replies} == {
        (think, calls) for think in thoughts for calls in (True, False)
    }
    assert all((reply.call is None) == (reply.say is not None) for reply in replies)


def test_a_truncated_text_is_its_first_half():
    replies = [reply for reply in _replies(replies="truncated", faults=()) if reply.say is not None]
    assert all(reply.finish_reason == "length" for reply in replies)
    blank = {reply.say for reply in replies if not reply.say.strip()}
    assert blank == {"", " ", "\n"}  # " \n\t" cut to " "
    long = [reply.say for reply in replies if len(reply.say) >= 500]
    assert long
    assert all(say == ("lorem ipsum " * 1_000)[: len(say)] and len(say) <= 10_000 for say in long)


def _truncated_calls(arguments: str) -> list[ModelReply]:
    replies = _replies(tools="get_weather", replies="truncated", arguments=arguments, faults=())
    return [reply for reply in replies if reply.tool_calls]


def test_a_truncated_call_sends_the_first_half_of_the_text_that_is_not_json():
    replies = _truncated_calls("not_json")
    for reply in replies:
        assert reply.finish_reason == "length"
        (call,) = reply.tool_calls
        assert call.name == "get_weather"
        assert list(call.args) == [RAW_ARGUMENTS_KEY]
        assert RAW_ARGUMENTS_KEY not in call.args[RAW_ARGUMENTS_KEY]  # what a model would send
    sent = {reply.call.args[RAW_ARGUMENTS_KEY] for reply in replies}
    assert {"{", "not ", '{"a', "[1,", "nu", "{'a'"} <= sent


def test_a_truncated_call_sends_the_first_half_of_its_json_arguments():
    for reply in _truncated_calls("valid"):
        text = reply.call.args[RAW_ARGUMENTS_KEY]
        assert '{"city": "'.startswith(text) or text.startswith('{"city": "')
        with pytest.raises(json.JSONDecodeError):
            json.loads(text)


def test_a_tool_whose_arguments_no_kind_allowed_can_break_is_not_called():
    assert tool_calls((SEARCH,), Behaviours(arguments="missing_required")).is_empty
    calls = _drawn(tool_calls((SEARCH, WEATHER), Behaviours(arguments="missing_required")), 20)
    assert {(call.name, json.dumps(call.args)) for call in calls} == {("get_weather", "{}")}


# Searched for in every drawn text, the long ones too (up to 20,000 characters): a regex scans
# them in C, where a generator over the characters took most of these tests' time.
ASTRAL = re.compile("[\U00010000-\U0010ffff]")
ARABIC = re.compile("[\u0600-\u06ff]")
SURROGATE = re.compile("[\ud800-\udfff]")


@pytest.mark.parametrize(
    ("kind", "found"),
    [
        ("empty", lambda text: text == ""),
        ("blank", lambda text: text != "" and not text.strip()),
        ("long", lambda text: len(text) >= 10_000),
        ("shortest long", lambda text: len(text) == 1_000),
        ("unicode", lambda text: ASTRAL.search(text) is not None),
        ("right to left", lambda text: ARABIC.search(text) is not None),
        ("markdown", lambda text: "```" in text or "**" in text),
        ("plain", lambda text: len(text) > 3 and text.isascii() and text.isalnum()),
        ("one character", lambda text: len(text) == 1 and text.isascii() and text.isalnum()),
        ("one non-ASCII character", lambda text: len(text) == 1 and ord(text) >= 0x80),
    ],
)
def test_text_answers_include_each_kind_the_model_may_send(kind, found):
    assert found(_found(texts(), found))


PLAIN = re.compile(r"[A-Za-z0-9 ]{1,30}")


UNICODE_SAMPLES = (
    "héllo wörld",
    "日本語のテキスト",
    "emoji 👍🏽🎉 and ZWJ 👩\u200d💻",
    "right-to-left: مرحبا",
    "combining: e\u0301 a\u0308",
    "\u200bzero-width\u200b",
)


def test_a_text_answer_is_plain_blank_long_unicode_or_markdown():
    drawn = _drawn(texts(), 300)
    for text in drawn:
        long = 1_000 <= len(text) <= 20_000 and text == ("lorem ipsum " * 2_000)[: len(text)]
        plain = PLAIN.fullmatch(text) is not None and text.strip() != ""
        written = "\n" in text or "`" in text or "[" in text  # the markdown samples
        unicode = 0 < len(text) <= 20 and all(ord(char) >= 0x80 for char in text)
        blank = not text.strip()
        assert blank or long or plain or written or unicode or text in UNICODE_SAMPLES, repr(text)
    assert {text for text in drawn if not text.strip()} == {"", " ", "\n", " \n\t"}
    assert set(UNICODE_SAMPLES) <= set(drawn)


def test_a_unicode_text_answer_is_up_to_20_characters():
    def non_ascii(text: str) -> bool:
        return all(ord(char) >= 0x80 for char in text) and len(text) == 20

    assert non_ascii(_found(texts(), non_ascii))


def test_an_empty_answer_says_how_it_finished():
    replies = _replies(replies={"text"}, faults=())
    assert {reply.finish_reason for reply in replies if reply.say == ""} == {"stop"}
    assert {reply.finish_reason for reply in replies if reply.say} == {None}


def test_a_text_answer_is_never_a_lone_surrogate_which_utf_8_cannot_send():
    def surrogate(text: str) -> bool:
        return SURROGATE.search(text) is not None

    with pytest.raises(NoSuchExample):
        find(texts(), surrogate, settings=settings(FIND_MANY, derandomize=False))
