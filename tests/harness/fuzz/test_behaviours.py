"""What the fuzzer's model may do: the defaults, the kinds given as one or many, and every bad
setting named with its field in one error."""

from __future__ import annotations

import pytest

from agentrig.errors import InvalidInputError
from agentrig.harness.fuzz.behaviours import (
    ALL_ARGUMENTS,
    ALL_FAULTS,
    ALL_REPLIES,
    DEFAULT_FAULTS,
    LIVE_DEFAULT_FAULTS,
    Behaviours,
    default_faults,
)
from agentrig.harness.scenarios.model import ModelReply

REPLIES = {"text", "call", "parallel_calls", "unknown_tool", "refusal", "truncated", "reasoning"}
FAULTS = {"rate_limit", "server_error", "timeout", "cut_stream", "malformed_stream", "chunking"}


def test_the_kinds_are_every_reply_argument_and_fault():
    assert ALL_REPLIES == REPLIES
    assert {"valid", "missing_required", "wrong_type", "extra_keys", "not_json"} == ALL_ARGUMENTS
    assert ALL_FAULTS == FAULTS


def test_by_default_every_reply_valid_or_non_json_arguments_and_every_fault_but_malformed():
    behaviours = Behaviours()
    assert behaviours.tools is None
    assert behaviours.replies == REPLIES
    assert behaviours.arguments == {"valid", "not_json"}
    assert behaviours.faults == FAULTS - {"malformed_stream"}
    assert (behaviours.max_steps, behaviours.max_model_calls) == (4, 30)
    assert (behaviours.before, behaviours.after) == ((), ())


def test_over_a_live_server_no_timeout_is_played_unless_asked_for():
    assert default_faults(live=True) == FAULTS - {"malformed_stream", "timeout"}
    assert default_faults(live=False) == FAULTS - {"malformed_stream"}
    assert default_faults(live=True) == LIVE_DEFAULT_FAULTS
    assert default_faults(live=False) == DEFAULT_FAULTS


def test_kinds_and_tools_given_as_lists_are_kept_as_sets_and_tuples():
    reply = ModelReply(say="hi")
    behaviours = Behaviours(
        tools=["search", "book"],
        replies=["text", "call", "text"],
        arguments=["valid"],
        faults=["timeout"],
        before=[reply],
        after=[reply, reply],
    )
    assert behaviours.tools == ("search", "book")
    assert behaviours.replies == frozenset({"text", "call"})
    assert behaviours.arguments == frozenset({"valid"})
    assert behaviours.faults == frozenset({"timeout"})
    assert behaviours.before == (reply,)
    assert behaviours.after == (reply, reply)


def test_one_kind_given_as_a_string_is_that_kind_not_its_letters():
    behaviours = Behaviours(arguments="wrong_type", faults="chunking", replies="text")
    assert behaviours.arguments == {"wrong_type"}
    assert behaviours.faults == {"chunking"}
    assert behaviours.replies == {"text"}


def _problems(**options: object) -> list[tuple[str, str]]:
    with pytest.raises(InvalidInputError) as caught:
        Behaviours(**options)  # type: ignore[arg-type]
    assert caught.value.what == "Behaviours"
    return caught.value.problems


def test_unknown_kinds_are_each_named_with_the_valid_ones():
    assert _problems(replies={"shout", "text", "mumble"}, arguments={"bad"}, faults={"flood"}) == [
        (
            "replies",
            "unknown kind 'mumble'; valid: call, parallel_calls, reasoning, refusal, text, "
            "truncated, unknown_tool",
        ),
        (
            "replies",
            "unknown kind 'shout'; valid: call, parallel_calls, reasoning, refusal, text, "
            "truncated, unknown_tool",
        ),
        (
            "arguments",
            "unknown kind 'bad'; valid: extra_keys, missing_required, not_json, valid, wrong_type",
        ),
        (
            "faults",
            "unknown kind 'flood'; valid: chunking, cut_stream, malformed_stream, rate_limit, "
            "server_error, timeout",
        ),
    ]


def test_something_must_be_played():
    assert _problems(replies=(), faults=()) == [
        ("replies", "allow at least one kind of reply or fault")
    ]
    assert Behaviours(replies=(), faults={"timeout"}).replies == frozenset()
    assert Behaviours(replies={"text"}, faults=()).faults == frozenset()


@pytest.mark.parametrize("kind", ["call", "parallel_calls", "unknown_tool", "truncated"])
def test_replies_that_call_tools_need_a_kind_of_arguments(kind):
    assert Behaviours(replies={kind}).calls_tools()
    assert _problems(replies={kind}, arguments=()) == [
        ("arguments", "allow at least one kind of arguments for the tool calls")
    ]


@pytest.mark.parametrize("kind", ["text", "refusal", "reasoning"])
def test_replies_that_call_no_tool_need_no_arguments(kind):
    behaviours = Behaviours(replies={kind}, arguments=())
    assert not behaviours.calls_tools()
    assert behaviours.arguments == frozenset()


@pytest.mark.parametrize("value", [0, -1, True, 2.0, "3", None])
@pytest.mark.parametrize("name", ["max_steps", "max_model_calls"])
def test_step_and_call_limits_are_positive_integers(name, value):
    assert _problems(**{name: value}) == [(name, f"expected a positive integer, got {value!r}")]


def test_a_limit_of_one_is_allowed():
    behaviours = Behaviours(max_steps=1, max_model_calls=1)
    assert (behaviours.max_steps, behaviours.max_model_calls) == (1, 1)


def test_every_bad_setting_is_named_at_once():
    reply = ModelReply(say="hi")
    assert _problems(
        max_steps=0,
        max_model_calls=-2,
        before=[reply, "hi"],
        after=[{"say": "x"}],
    ) == [
        ("max_steps", "expected a positive integer, got 0"),
        ("max_model_calls", "expected a positive integer, got -2"),
        ("before[1]", "expected a ModelReply, got str"),
        ("after[0]", "expected a ModelReply, got dict"),
    ]
