"""A live trial's transcript: the conversation as the judge and reports read it, the messages an
adapter is given, and what an adapter may return as its reply."""

from __future__ import annotations

from typing import Any

import pytest

from agentrig.harness.live.transcript import (
    AgentReply,
    CalledTool,
    Exchange,
    Transcript,
    agent_reply_of,
)
from agentrig.state import Usage
from agentrig.state.usage import ZERO_USAGE

LOOKUP = CalledTool("lookup_order", {"order_id": "A-1029", "full": True}, "one mug")
REFUND = CalledTool("issue_refund", {"order_id": "A-1029"}, "refused: too late", is_error=True)
PENDING = CalledTool("notify")  # no arguments, no result known

TRANSCRIPT = Transcript(
    (
        Exchange("My mug broke.", AgentReply("Which order is it?")),
        Exchange("A-1029.", AgentReply("I could not refund it.", (LOOKUP, REFUND))),
        Exchange("Why?"),  # the agent never replied
        Exchange("Hello?", AgentReply("Sorry, it is too late.", (PENDING,))),
    )
)


def test_an_empty_transcript() -> None:
    empty = Transcript()
    assert empty.exchanges == ()
    assert list(empty.replies()) == []
    assert empty.tool_calls() == ()
    assert empty.final_response() == ""
    assert empty.messages() == []
    assert empty.render() == ""


def test_an_exchange_is_added_at_the_end_leaving_the_transcript_as_it_was() -> None:
    first = Transcript((Exchange("a", AgentReply("b")),))
    longer = first.with_exchange(Exchange("c"))
    assert longer.exchanges == (Exchange("a", AgentReply("b")), Exchange("c"))
    assert first.exchanges == (Exchange("a", AgentReply("b")),)


def test_the_replies_and_tool_calls_are_in_order_skipping_a_message_never_answered() -> None:
    assert [r.content for r in TRANSCRIPT.replies()] == [
        "Which order is it?",
        "I could not refund it.",
        "Sorry, it is too late.",
    ]
    assert TRANSCRIPT.tool_calls() == (LOOKUP, REFUND, PENDING)


def test_the_final_response_is_the_last_reply() -> None:
    assert TRANSCRIPT.final_response() == "Sorry, it is too late."
    unanswered = TRANSCRIPT.with_exchange(Exchange("Bye?"))
    assert unanswered.final_response() == "Sorry, it is too late."
    assert Transcript((Exchange("hi"),)).final_response() == ""


def test_an_adapter_is_given_the_conversation_as_role_and_content() -> None:
    assert TRANSCRIPT.messages() == [
        {"role": "user", "content": "My mug broke."},
        {"role": "assistant", "content": "Which order is it?"},
        {"role": "user", "content": "A-1029."},
        {"role": "assistant", "content": "I could not refund it."},
        {"role": "user", "content": "Why?"},
        {"role": "user", "content": "Hello?"},
        {"role": "assistant", "content": "Sorry, it is too late."},
    ]


def test_the_judge_reads_one_line_a_message_with_each_call_and_its_result() -> None:
    assert TRANSCRIPT.render() == "\n".join(
        [
            "USER: My mug broke.",
            "AGENT: Which order is it?",
            "USER: A-1029.",
            "AGENT CALLED TOOL: lookup_order(order_id='A-1029', full=True)",
            "TOOL RESULT: one mug",
            "AGENT CALLED TOOL: issue_refund(order_id='A-1029')",
            "TOOL ERROR: refused: too late",
            "AGENT: I could not refund it.",
            "USER: Why?",
            "USER: Hello?",
            "AGENT CALLED TOOL: notify()",
            "AGENT: Sorry, it is too late.",
        ]
    )


def test_a_called_tool_and_a_reply_default_to_nothing() -> None:
    assert (PENDING.arguments, PENDING.result, PENDING.is_error) == ({}, None, False)
    reply = AgentReply("hi")
    assert (reply.tool_calls, reply.usage) == ((), ZERO_USAGE)
    assert Exchange("hi").reply is None


WHERE = "adapter 'shop:reply'"


def test_a_reply_may_be_its_text_or_an_agent_reply() -> None:
    assert agent_reply_of("Done.", WHERE) == AgentReply("Done.")
    given = AgentReply("Done.", (LOOKUP,), Usage(input_tokens=3))
    assert agent_reply_of(given, WHERE) is given


def test_a_reply_as_a_dict_gives_its_content_calls_and_usage() -> None:
    reply = agent_reply_of(
        {
            "content": "Refunded.",
            "tool_calls": [
                {"name": "lookup_order", "arguments": {"order_id": "A-1029"}, "result": 7},
                {"name": "issue_refund", "result": "no", "is_error": 1},
                LOOKUP,
            ],
            "usage": {"input_tokens": 100, "output_tokens": 20},
            "cost": 0.5,
        },
        WHERE,
    )
    assert reply == AgentReply(
        "Refunded.",
        (
            CalledTool("lookup_order", {"order_id": "A-1029"}, "7"),
            CalledTool("issue_refund", {}, "no", is_error=True),
            LOOKUP,
        ),
        Usage(input_tokens=100, output_tokens=20, cost=0.5),
    )
    assert type(reply.tool_calls[1].is_error) is bool


@pytest.mark.parametrize(
    ("value", "usage"),
    [
        ({}, ZERO_USAGE),
        ({"content": "x", "tool_calls": None, "usage": None}, ZERO_USAGE),
        ({"usage": {}}, ZERO_USAGE),
        ({"cost": 0.25}, Usage(cost=0.25)),
        ({"usage": {"output_tokens": 2}}, Usage(output_tokens=2)),
        ({"tool_calls": ()}, ZERO_USAGE),
    ],
)
def test_what_a_dict_leaves_out_is_empty(value: dict[str, Any], usage: Usage) -> None:
    reply = agent_reply_of(value, WHERE)
    assert reply.content == value.get("content", "")
    assert reply.tool_calls == ()
    assert reply.usage == usage


def test_a_call_given_as_a_tuple_of_calls_is_read() -> None:
    reply = agent_reply_of({"tool_calls": ({"name": "notify", "arguments": None},)}, WHERE)
    assert reply.tool_calls == (CalledTool("notify"),)
    assert reply.tool_calls[0].arguments == {}


def test_the_arguments_of_a_call_are_copied() -> None:
    arguments = {"order_id": "A-1029"}
    reply = agent_reply_of({"tool_calls": [{"name": "x", "arguments": arguments}]}, WHERE)
    arguments["order_id"] = "changed"
    assert reply.tool_calls[0].arguments == {"order_id": "A-1029"}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            5,
            "returned int: return the reply's text (a str), or a dict {content, tool_calls, "
            "usage, cost}",
        ),
        (None, "returned NoneType: return the reply's text"),
        (["Done."], "returned list: return the reply's text"),
        (
            {"content": "x", "text": "y", "meta": 1},
            "returned unknown keys ['meta', 'text']: a reply has content, tool_calls, usage and "
            "cost",
        ),
        ({"content": 5}, "returned content of type int: use a str"),
        ({"content": None}, "returned content of type NoneType: use a str"),
        ({"tool_calls": 5}, "returned tool_calls 5: use a list of tool calls"),
        ({"tool_calls": "notify"}, "returned tool_calls 'notify': use a list of tool calls"),
        ({"tool_calls": [5]}, "returned a tool call 5: use {name, arguments, result}"),
        (
            {"tool_calls": [{"arguments": {}}]},
            "returned a tool call {'arguments': {}}: use {name, arguments, result}",
        ),
        (
            {"tool_calls": [{"name": 5}]},
            "returned a tool call {'name': 5}: use {name, arguments, result}",
        ),
        (
            {"tool_calls": [{"name": "x", "arguments": [1]}]},
            "returned arguments [1]: use a dict",
        ),
        (
            {"tool_calls": [{"name": "x", "args": {"a": 1}, "error": True}]},
            "returned a tool call with unknown keys ['args', 'error']: a tool call has name, "
            "arguments, result and is_error",
        ),
        ({"usage": ["a"]}, "returned usage ['a']: use a dict of token counts"),
        ({"usage": {"input_tokens": -1}}, "returned bad usage: "),
        ({"usage": {"tokens": 1}}, "returned bad usage: "),
        ({"cost": "cheap"}, "returned bad usage: "),
    ],
)
def test_a_reply_of_the_wrong_shape_is_a_type_error_naming_the_adapter(
    value: object, message: str
) -> None:
    with pytest.raises(TypeError) as error:
        agent_reply_of(value, WHERE)
    assert str(error.value).startswith(f"{WHERE} {message}"), str(error.value)


def test_bad_usage_names_the_field() -> None:
    with pytest.raises(TypeError) as error:
        agent_reply_of({"usage": {"input_tokens": -1}}, WHERE)
    assert "input_tokens" in str(error.value)
    with pytest.raises(TypeError) as error:
        agent_reply_of({"cost": -2}, WHERE)
    assert "cost" in str(error.value)
