"""``ScriptedTool``: replies by argument match or in sequence, with type checks."""

from __future__ import annotations

from typing import Any

import pytest

from agentrig import AgentState, AgentStop, InvalidToolArgumentsError, ToolCall, ToolContext
from agentrig.fakes import (
    FakeClock,
    InvalidScriptError,
    ReplyMode,
    ScriptedLLM,
    ScriptedTool,
    ScriptedToolError,
    ScriptExhaustedError,
    ToolReply,
    UnexpectedToolCallError,
    UnusedTurnsError,
    call,
    reply,
)

CONTEXT = ToolContext(AgentState(), ToolCall(name="weather"))


def weather(**options: Any) -> ScriptedTool:
    replies = [
        ToolReply(returns="sunny", when={"city": "Paris"}),
        ToolReply(raises="service unavailable", when={"city": "Oslo"}),
        ToolReply(returns="unknown"),
    ]
    return ScriptedTool(
        "weather", replies, params={"city": "string", "days": "integer?"}, **options
    )


class TestMatchMode:
    def test_first_matching_reply_wins_and_replies_are_reusable(self) -> None:
        tool = weather()
        assert tool.invoke({"city": "Paris"}, CONTEXT) == "sunny"
        assert tool.invoke({"city": "Rome"}, CONTEXT) == "unknown"
        assert tool.invoke({"city": "Paris", "days": 2}, CONTEXT) == "sunny"
        assert [(c.number, c.reply) for c in tool.calls] == [(1, 1), (2, 3), (3, 1)]

    def test_raises_reply(self) -> None:
        with pytest.raises(ScriptedToolError, match="service unavailable"):
            weather().invoke({"city": "Oslo"}, CONTEXT)

    def test_no_matching_reply(self) -> None:
        tool = ScriptedTool("t", [ToolReply(returns=1, when={"a": 1})])
        with pytest.raises(UnexpectedToolCallError) as raised:
            tool.invoke({"a": 2}, CONTEXT)
        assert raised.value.call_number == 1

    def test_assert_complete_names_unused_replies(self) -> None:
        tool = weather()
        tool.invoke({"city": "Paris"}, CONTEXT)
        assert tool.unused_replies() == [2, 3]
        with pytest.raises(UnusedTurnsError) as raised:
            tool.assert_complete()
        assert raised.value.unused == [2, 3]


class TestSequenceMode:
    def test_replies_are_consumed_in_order(self) -> None:
        tool = ScriptedTool(
            "counter", [ToolReply(returns=1), ToolReply(returns=2)], mode=ReplyMode.SEQUENCE
        )
        assert [tool.invoke({}, CONTEXT), tool.invoke({}, CONTEXT)] == [1, 2]
        tool.assert_complete()
        with pytest.raises(ScriptExhaustedError) as raised:
            tool.invoke({}, CONTEXT)
        assert raised.value.call_number == 3

    def test_mode_by_name(self) -> None:
        assert ScriptedTool("t", [], mode="sequence").mode is ReplyMode.SEQUENCE


class TestArguments:
    @pytest.mark.parametrize(
        ("arguments", "field", "reason"),
        [
            ({"city": 3}, "city", "expected string, got int"),
            ({}, "city", "Field required"),
            ({"city": "Paris", "days": True}, "days", "expected integer, got bool"),
            ({"city": "Paris", "extra": 1}, "extra", "unexpected argument"),
        ],
    )
    def test_type_checks(self, arguments: dict[str, Any], field: str, reason: str) -> None:
        with pytest.raises(InvalidToolArgumentsError) as raised:
            weather().invoke(arguments, CONTEXT)
        assert raised.value.field == field
        assert reason in str(raised.value)

    def test_schema_from_params(self) -> None:
        assert weather().parameters() == {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
            "additionalProperties": False,
        }

    def test_without_params_anything_goes(self) -> None:
        tool = ScriptedTool("free", [ToolReply(returns="ok")])
        assert tool.invoke({"whatever": [1]}, CONTEXT) == "ok"


class TestStopAndLatency:
    def test_stop_reply_raises_agent_stop(self) -> None:
        tool = ScriptedTool("halt", [ToolReply(stop="no more")])
        with pytest.raises(AgentStop) as raised:
            tool.invoke({}, CONTEXT)
        assert (raised.value.stop_message, raised.value.source) == ("no more", "tool:halt")

    def test_latency_advances_the_clock(self) -> None:
        clock = FakeClock()
        before = clock.now()
        tool = ScriptedTool("slow", [ToolReply(returns=1, latency=4)], clock=clock)
        tool.invoke({}, CONTEXT)
        assert (clock.now() - before).total_seconds() == 4


class TestInvalidScripts:
    @pytest.mark.parametrize(
        ("replies", "options", "turn", "reason"),
        [
            ([ToolReply(raises="a", stop="b")], {}, 1, "one of returns/raises/stop"),
            ([ToolReply(), ToolReply(returns=1, raises="a")], {}, 2, "one of returns/raises/stop"),
            (["oops"], {}, 1, "expected a ToolReply"),
            ([], {"params": {"a": "str"}}, None, "type 'str' is not one of"),
        ],
    )
    def test_rejected_at_construction(
        self, replies: list[Any], options: dict[str, Any], turn: int | None, reason: str
    ) -> None:
        with pytest.raises(InvalidScriptError) as raised:
            ScriptedTool("t", replies, **options)
        assert raised.value.turn == turn
        assert reason in str(raised.value)
        assert "turn 0" not in str(raised.value)


def test_scripted_tool_in_the_loop(make_agent, start) -> None:
    tool = weather()
    llm = ScriptedLLM([call("weather", city="Oslo"), call("weather", city="Paris"), reply("ok")])
    final = make_agent(llm, [tool]).execute(start())
    oslo, paris = (step.tool_executions[0] for step in final.steps()[:2])
    assert (oslo.error, oslo.error_type) == ("service unavailable", "ScriptedToolError")
    assert paris.value == "sunny"
    assert llm.requests[1].messages[-1].content == "Error in tool call: service unavailable"


class TestScriptMistakesAreCaughtWhenBuilt:
    """Mistakes a scenario file is refused for are refused in Python too, naming the reply."""

    @pytest.mark.parametrize(
        ("replies", "options", "turn", "reason"),
        [
            ([ToolReply(returns=1, when="Paris")], {}, 1, "when must be a mapping"),  # type: ignore[arg-type]
            (
                [ToolReply(returns=1, when={"ctiy": "P"}), ToolReply(returns=2)],
                {"params": {"city": "string"}},
                1,
                "'ctiy' is not a parameter (city)",
            ),
            (
                [ToolReply(returns=1), ToolReply(returns=2, when={"a": 1})],
                {"mode": "sequence"},
                2,
                "when only applies to mode 'match'",
            ),
            (
                [ToolReply(returns=1), ToolReply(returns=2, when={"a": 1})],
                {},
                2,
                "unreachable: reply 1 has no when",
            ),
            ([ToolReply(returns=1, latency=-1)], {"clock": FakeClock()}, 1, "latency must be"),
            ([ToolReply(returns=1, latency=float("nan"))], {"clock": FakeClock()}, 1, "latency"),
            ([ToolReply(returns=1, latency="2")], {"clock": FakeClock()}, 1, "latency must be"),  # type: ignore[arg-type]
        ],
    )
    def test_bad_replies(
        self, replies: list[Any], options: dict[str, Any], turn: int, reason: str
    ) -> None:
        with pytest.raises(InvalidScriptError) as raised:
            ScriptedTool("t", replies, **options)
        assert raised.value.turn == turn
        assert str(raised.value).startswith(f"scripted tool 't' reply {turn}: ")
        assert reason in str(raised.value)

    @pytest.mark.parametrize(
        ("arguments", "reason"),
        [
            ({"name": ""}, "name must be a non-empty string"),
            ({"name": None}, "name must be a non-empty string"),
            ({"replies": ToolReply(returns=1)}, "replies must be an iterable of ToolReply"),
            ({"mode": "random"}, "mode 'random' is not one of: match, sequence"),
            ({"params": ["city"]}, "params must map parameter names to JSON types"),
            ({"params": {"city": str}}, "param 'city': type"),
        ],
    )
    def test_bad_tool_options(self, arguments: dict[str, Any], reason: str) -> None:
        options: dict[str, Any] = {"name": "t", "replies": [ToolReply(returns=1)]} | arguments
        with pytest.raises(InvalidScriptError) as raised:
            ScriptedTool(options.pop("name"), options.pop("replies"), **options)
        assert raised.value.turn is None
        assert reason in str(raised.value)


class TestMessagesSayReplyAndWhatToDo:
    def test_unmatched_call_lists_the_replies_and_what_to_do(self) -> None:
        tool = ScriptedTool("t", [ToolReply(returns=1, when={"a": 1})])
        with pytest.raises(UnexpectedToolCallError) as raised:
            tool.invoke({"a": 2}, CONTEXT)
        assert raised.value.arguments == {"a": 2}
        message = str(raised.value)
        assert (
            "scripted tool 't', asked by the top-level agent: call 1 with arguments {'a': 2} "
            "matches no scripted reply" in message
        )
        assert "reply 1 when {'a': 1}" in message
        assert "add a reply" in message

    def test_sequence_running_out_counts_replies(self) -> None:
        tool = ScriptedTool("t", [ToolReply(returns=1)], mode="sequence")
        tool.invoke({}, CONTEXT)
        with pytest.raises(ScriptExhaustedError) as raised:
            tool.invoke({}, CONTEXT)
        assert "call 2 was not scripted (the script has 1 reply); add a reply" in str(raised.value)

    def test_unused_replies_say_reply_and_what_to_do(self) -> None:
        tool = ScriptedTool("t", [ToolReply(returns=1, when={"a": 1}), ToolReply(returns=2)])
        tool.invoke({"a": 1}, CONTEXT)
        with pytest.raises(UnusedTurnsError) as raised:
            tool.assert_complete()
        assert raised.value.unused == [2]
        assert "scripted tool 't': scripted reply 2 was never used; remove it" in str(raised.value)

    def test_unused_llm_turns_say_what_to_do(self) -> None:
        with pytest.raises(
            UnusedTurnsError, match=r"^ScriptedLLM: scripted turn 1 was never used; remove it"
        ):
            ScriptedLLM(["a"]).assert_complete()


def test_when_compares_as_json_a_boolean_is_not_a_number() -> None:
    reply = ToolReply(returns="on", when={"flag": True, "n": 1})
    assert reply.matches({"flag": True, "n": 1.0})
    assert not reply.matches({"flag": 1, "n": 1})
    assert not reply.matches({"flag": True, "n": True})
