"""``ScriptedLLM`` and ``FunctionLLM``: fakes that check their own use."""

from __future__ import annotations

import asyncio
from dataclasses import FrozenInstanceError
from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentState,
    ExecutionStatus,
    FinishReason,
    InferenceRequest,
    InferenceResponse,
    Message,
    Messages,
    ProviderError,
    StopReason,
    ToolCall,
    ToolContext,
    Usage,
    UseLlmConfig,
)
from agentrig.fakes import (
    CallSpec,
    FakeClock,
    FunctionLLM,
    InvalidScriptError,
    ScriptedLLM,
    ScriptedTool,
    ScriptError,
    ScriptExhaustedError,
    SeededIds,
    ToolReply,
    Turn,
    UnusedTurnsError,
    call,
    calls,
    fail,
    reply,
)


def request(text: str = "hi") -> InferenceRequest:
    return InferenceRequest(messages=Messages.of(Message.user(text)))


class TestTurns:
    def test_reply(self) -> None:
        response = reply("hello", usage=Usage(input_tokens=2)).to_response()
        assert response == InferenceResponse(
            content="hello", usage=Usage(input_tokens=2), finish_reason=FinishReason.STOP
        )

    def test_call_and_calls(self) -> None:
        one = call("add", a=1, b=2).to_response()
        assert [(c.name, c.arguments) for c in one.tool_calls] == [("add", {"a": 1, "b": 2})]
        assert one.finish_reason is FinishReason.TOOL_CALLS
        many = calls(("a", {}), CallSpec("b", {"x": 1}, id="fixed"), text="thinking").to_response()
        assert [c.name for c in many.tool_calls] == ["a", "b"]
        assert many.tool_calls[1].id == "fixed"
        assert many.content == "thinking"

    def test_explicit_finish_reason(self) -> None:
        assert reply("x", finish_reason=FinishReason.LENGTH).to_response().finish_reason is (
            FinishReason.LENGTH
        )

    def test_fail_raises_a_provider_error(self) -> None:
        with pytest.raises(ProviderError, match="down") as raised:
            fail("down", retryable=True).to_response()
        assert raised.value.retryable


class TestScriptedLLM:
    def test_plays_turns_in_order_and_records_calls(self) -> None:
        llm = ScriptedLLM(["one", reply("two")])
        first, second = request("a"), request("b")
        assert llm.infer(first).content == "one"
        assert llm.infer(second).content == "two"
        assert [c.number for c in llm.calls] == [1, 2]
        assert llm.requests == (first, second)
        assert llm.calls[1].response is not None
        assert llm.calls[1].response.content == "two"
        assert llm.exhausted

    def test_call_records_are_numbered_and_stay_the_same_objects(self) -> None:
        llm = ScriptedLLM(["one", fail("boom"), "three"])
        llm.infer(request("a"))
        first = llm.calls
        with pytest.raises(ProviderError):
            llm.infer(request("b"))
        llm.infer(request("c"))
        records = llm.calls
        assert records[0] is first[0]
        assert records == llm.calls
        assert [(c.number, c.error) for c in records] == [(1, None), (2, "boom"), (3, None)]
        assert [c.request.messages.to_text() for c in records] == ["a", "b", "c"]
        assert [c.request for c in records] == list(llm.requests)
        with pytest.raises(FrozenInstanceError):
            records[0].number = 5  # type: ignore[misc]

    def test_remaining(self) -> None:
        llm = ScriptedLLM(["a", "b", "c"])
        assert llm.remaining == 3
        llm.infer(request())
        assert llm.remaining == 2
        assert not llm.exhausted

    def test_error_turns_are_recorded(self) -> None:
        llm = ScriptedLLM([fail("boom")])
        with pytest.raises(ProviderError):
            llm.infer(request())
        assert (llm.calls[0].response, llm.calls[0].error) == (None, "boom")

    def test_assert_complete_names_unused_turns_from_one(self) -> None:
        llm = ScriptedLLM(["a", "b", "c"])
        llm.infer(request())
        with pytest.raises(UnusedTurnsError) as raised:
            llm.assert_complete()
        assert raised.value.unused == [2, 3]
        assert "turn(s) 2, 3 were never used" in str(raised.value)
        llm.infer(request())
        llm.infer(request())
        llm.assert_complete()

    def test_an_extra_call_raises_with_its_number(self) -> None:
        llm = ScriptedLLM(["a"])
        llm.infer(request())
        with pytest.raises(ScriptExhaustedError) as raised:
            llm.infer(request())
        assert (raised.value.call_number, raised.value.scripted) == (2, 1)
        assert "call 2 was not scripted" in str(raised.value)

    def test_never_cycles(self) -> None:
        llm = ScriptedLLM([])
        with pytest.raises(ScriptExhaustedError):
            llm.infer(request())

    def test_exhaustion_in_the_loop_fails_the_execution(self, make_agent, start) -> None:
        final = make_agent(ScriptedLLM([call("ghost")])).execute(start())
        assert final.status() is ExecutionStatus.FAILED
        assert final.last_stop_reason() is StopReason.ERROR
        (exhausted,) = [e for e in final.errors() if e.type == "ScriptExhaustedError"]
        assert "call 2 was not scripted" in exhausted.message

    def test_latency_advances_the_clock(self) -> None:
        clock = FakeClock()
        start = clock.now()
        llm = ScriptedLLM([reply("slow", latency=2.5)], clock=clock)
        llm.infer(request())
        assert (clock.now() - start).total_seconds() == 2.5

    @pytest.mark.parametrize(
        ("script", "turn", "reason"),
        [
            (["ok", Turn()], 2, "needs text, tool calls or an error"),
            ([Turn(text="x", error="y")], 1, "cannot also have text"),
            ([Turn(text="x", latency=-1)], 1, "latency must be >= 0"),
            (["ok", Turn(text="x", finish_reason="done")], 2, "finish_reason 'done'"),  # type: ignore[arg-type]
            ([Turn(text="x", usage={"input_tokens": 1})], 1, "usage must be a Usage"),  # type: ignore[arg-type]
            ([Turn(calls=(CallSpec(""),))], 1, "a tool call must be a CallSpec"),
            (["ok", 42], 2, "expected a Turn or a string"),
            ([Turn(text="x", latency=float("nan"))], 1, "latency must be >= 0"),
            ([Turn(text="x", latency="2")], 1, "latency must be >= 0"),  # type: ignore[arg-type]
            ([call("f", x={1, 2})], 1, "tool call 1 (f): invalid ToolCall: arguments"),  # type: ignore[arg-type]
            ([Turn(calls=(CallSpec("a", [1]),))], 1, "arguments must be a mapping, got list"),  # type: ignore[arg-type]
            ([Turn(calls=(CallSpec(5),))], 1, "a tool call must be a CallSpec"),  # type: ignore[arg-type]
            ([reply("x", retryable=True)], 1, "retryable applies to an error turn only"),
            ([fail("")], 1, "an error turn needs a message"),
            ([Turn(error="x", reasoning="r")], 1, "cannot also have text, reasoning or"),
            ([reply("x", reasoning=3)], 1, "reasoning must be a string, got int"),
            ([Turn(reasoning="only thinking")], 1, "a turn needs text, tool calls or an error"),
            ([Turn(redacted_reasoning=True)], 1, "a turn needs text, tool calls or an error"),
            ([Turn(error="x", redacted_reasoning=True)], 1, "cannot also have text, reasoning"),
            ([reply("x", reasoning="r", redacted_reasoning=True)], 1, "either text (reasoning)"),
            ([reply("x", redacted_reasoning=1)], 1, "redacted_reasoning must be a boolean, got"),
        ],
    )
    def test_invalid_scripts_are_rejected_at_construction(
        self, script: list[Any], turn: int, reason: str
    ) -> None:
        with pytest.raises(InvalidScriptError) as raised:
            ScriptedLLM(script)
        assert raised.value.turn == turn
        assert reason in str(raised.value)
        assert str(raised.value).startswith(f"scripted turn {turn}: ")

    def test_one_string_is_not_a_script_of_letters(self) -> None:
        with pytest.raises(InvalidScriptError, match=r"write ScriptedLLM\(\['hello'\]\)"):
            ScriptedLLM("hello")
        with pytest.raises(InvalidScriptError, match="turns must be a list of turns"):
            ScriptedLLM(reply("hello"))  # type: ignore[arg-type]

    def test_calls_names_an_item_that_is_not_a_pair(self) -> None:
        with pytest.raises(InvalidScriptError, match=r"calls\(\): item 2 must be a CallSpec"):
            calls(("a", {}), ("b",))  # type: ignore[arg-type]

    def test_script_errors_share_a_root(self) -> None:
        assert issubclass(InvalidScriptError, ScriptError)
        assert issubclass(ScriptExhaustedError, ScriptError)
        assert issubclass(UnusedTurnsError, ScriptError)


class TestFunctionLLMMistakes:
    @pytest.mark.parametrize(
        ("answer", "reason"),
        [
            (None, "must return an InferenceResponse, a Turn or a string, got NoneType"),
            ({"text": "hi"}, "got dict"),
            (Turn(), "a turn needs text, tool calls or an error"),
            (Turn(text="x", latency=1), "latency 1s (asked by the parent agent) needs a FakeClock"),
        ],
    )
    def test_a_bad_answer_names_the_function_and_the_call(self, answer: Any, reason: str) -> None:
        def answers(request: InferenceRequest) -> Any:
            return "first" if not llm.calls else answer

        llm = FunctionLLM(answers)
        llm.infer(request())
        with pytest.raises(InvalidScriptError) as raised:
            llm.infer(request())
        assert str(raised.value).startswith("answers, call 2")
        assert "(asked by the parent agent)" in str(raised.value)
        assert reason in str(raised.value)
        assert raised.value.turn == 2

    @pytest.mark.parametrize("function", ["hello", None, [reply("hi")]])
    def test_something_that_is_not_a_function_is_refused_when_built(self, function: Any) -> None:
        # It used to fail at the first call, as "'str' object is not callable".
        with pytest.raises(InvalidScriptError) as raised:
            FunctionLLM(function)
        message = str(raised.value)
        assert message.startswith("FunctionLLM: expected a function of the request")
        assert f"got {type(function).__name__}" in message
        assert "ScriptedLLM" in message

    def test_a_call_whose_function_raised_is_recorded(self) -> None:
        def answers(request: InferenceRequest) -> str:
            raise ZeroDivisionError("boom")

        llm = FunctionLLM(answers)
        with pytest.raises(ZeroDivisionError):
            llm.infer(request())
        (made,) = llm.calls
        assert made.response is None
        assert made.error == "ZeroDivisionError: boom"
        assert llm.requests == (made.request,)


class TestFunctionLLM:
    def test_answers_with_strings_turns_or_responses(self) -> None:
        answers: list[Any] = ["text", call("f", x=1), InferenceResponse(content="raw")]
        llm = FunctionLLM(lambda request: answers.pop(0))
        assert llm.infer(request()).content == "text"
        assert llm.infer(request()).tool_calls[0].name == "f"
        assert llm.infer(request()).content == "raw"
        assert [c.number for c in llm.calls] == [1, 2, 3]

    def test_sees_the_request(self) -> None:
        llm = FunctionLLM(lambda request: request.messages.to_text().upper())
        assert llm.infer(request("shout")).content == "SHOUT"
        assert llm.requests[0].messages.to_text() == "shout"

    def test_errors_are_recorded(self) -> None:
        llm = FunctionLLM(lambda request: fail("nope"))
        with pytest.raises(ProviderError):
            llm.infer(request())
        assert llm.calls[0].error == "nope"

    def test_latency_with_a_clock(self) -> None:
        clock = FakeClock()
        before = clock.now()
        FunctionLLM(lambda r: reply("x", latency=3), clock=clock).infer(request())
        assert (clock.now() - before).total_seconds() == 3

    def test_name(self) -> None:
        def oracle(request: InferenceRequest) -> str:
            return "x"

        assert FunctionLLM(oracle).name == "oracle"


class TestTheClockOfTheRun:
    """Fakes without ``clock=`` move the ``FakeClock`` the agent runs under."""

    @staticmethod
    def run(llm: Any, tools: Any = (), *, run_async: bool = False) -> Any:
        clock = FakeClock()
        agent = (
            AgentBuilder.base()
            .with_clock(clock)
            .with_ids(SeededIds(1))
            .with_capability(UseLlmConfig(llm))
            .with_tools(list(tools))
            .build()
        )
        state = agent.new_state("go")
        final = asyncio.run(agent.aexecute(state)) if run_async else agent.execute(state)
        return clock, final

    @pytest.mark.parametrize("run_async", [False, True])
    def test_scripted_latencies_move_the_agents_clock(self, run_async: bool) -> None:
        slow = ScriptedTool("slow", [ToolReply(returns="ok", latency=2.0)])
        llm = ScriptedLLM([call("slow"), reply("done", latency=1.5)])
        clock, final = self.run(llm, [slow], run_async=run_async)
        assert final.status() is ExecutionStatus.COMPLETED
        assert (clock.now() - FakeClock().now()).total_seconds() == 3.5

    def test_the_same_as_passing_the_clock(self) -> None:
        def run(pass_clock: bool) -> str:
            clock = FakeClock()
            llm = ScriptedLLM([reply("a", latency=1.0)], clock=clock if pass_clock else None)
            agent = (
                AgentBuilder.base()
                .with_clock(clock)
                .with_ids(SeededIds(1))
                .with_capability(UseLlmConfig(llm))
                .build()
            )
            return agent.execute(agent.new_state("go")).to_json()

        assert run(pass_clock=False) == run(pass_clock=True)

    def test_a_latency_on_the_wall_clock_is_a_script_error_naming_the_call(self) -> None:
        llm = ScriptedLLM(["ok", reply("slow", latency=1)])
        llm.infer(InferenceRequest())
        with pytest.raises(
            InvalidScriptError,
            match=r"ScriptedLLM, call 2: latency 1s \(asked by the parent agent\) needs a FakeClock",
        ):
            llm.infer(InferenceRequest())

    def test_a_tool_latency_on_the_wall_clock_names_the_tool_and_the_call(self) -> None:
        tool = ScriptedTool("slow", [ToolReply(returns=1, latency=1)])
        context = ToolContext(state=AgentState(), tool_call=ToolCall(name="slow"))
        with pytest.raises(InvalidScriptError, match=r"tool 'slow' reply 1: call 1: latency 1s"):
            tool.invoke({}, context)


def test_repeat_last_answers_every_call_after_the_script() -> None:
    llm = ScriptedLLM([reply("first"), reply("again")], repeat_last=True)
    assert [llm.infer(request()).content for _ in range(5)] == ["first"] + ["again"] * 4
    assert (llm.remaining, llm.exhausted, llm.overruns) == (0, True, [])
    llm.assert_complete()
    assert "repeat_last=True" in repr(llm)


def test_repeat_last_counts_the_last_turn_unused_until_it_answered_once() -> None:
    llm = ScriptedLLM([reply("first"), reply("again")], repeat_last=True)
    llm.infer(request())
    with pytest.raises(UnusedTurnsError):
        llm.assert_complete()
    empty = ScriptedLLM([], repeat_last=True)
    with pytest.raises(ScriptExhaustedError):
        empty.infer(request())
    with pytest.raises(InvalidScriptError, match="repeat_last must be true or false"):
        ScriptedLLM([reply("x")], repeat_last="yes")  # type: ignore[arg-type]


def test_a_repeating_tool_call_answers_at_most_repeat_limit_more_calls() -> None:
    llm = ScriptedLLM([reply("first"), call("poll")], repeat_last=True, repeat_limit=3)
    answers = [llm.infer(request()) for _ in range(5)]
    assert [len(answer.tool_calls) for answer in answers] == [0, 1, 1, 1, 1]
    assert not llm.looped
    with pytest.raises(ScriptExhaustedError, match="call 6 was not scripted"):
        llm.infer(request())
    assert llm.looped
    assert llm.overruns == [6]
    # A repeating text reply has no limit: a judge may be asked any number of times.
    judge = ScriptedLLM([reply("pass")], repeat_last=True, repeat_limit=1)
    assert {judge.infer(request()).content for _ in range(10)} == {"pass"}
    assert not judge.looped
    with pytest.raises(InvalidScriptError, match="repeat_limit must be a whole number >= 1"):
        ScriptedLLM([reply("x")], repeat_last=True, repeat_limit=0)
