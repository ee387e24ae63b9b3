"""``AgentLoop.stream``/``astream``: the run's events as they happen, a streaming provider's answer
in ``InferenceDelta`` pieces, then the same final state as a plain run."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentEvent,
    AgentState,
    ConfigurationError,
    Delta,
    ExecutionStatus,
    InferenceDelta,
    InferenceRequest,
    InferenceResponse,
    ToolCallCompleted,
    UseLlmConfig,
    runtime_context,
)
from agentrig.fakes import (
    Chunking,
    FakeClock,
    InvalidScriptError,
    ScriptedLLM,
    SeededIds,
    calls,
    reply,
)

SCRIPT: Any = [
    calls(("lookup", {"q": 'naïve "quote"'}), ("lookup", {"q": "b", "n": 12}), text="Let me look."),
    "Found: é and ü.",
]


def lookup(q: str, n: int = 1) -> str:
    """Look something up."""
    return f"{q}:{n}"


def fresh(chunking: Chunking = Chunking.WHOLE) -> tuple[Any, AgentState]:
    clock, ids = FakeClock(), SeededIds(5)
    llm = ScriptedLLM(SCRIPT, chunking=chunking)
    agent = (
        AgentBuilder.base()
        .with_clock(clock)
        .with_ids(ids)
        .with_tools([lookup])
        .with_capability(UseLlmConfig(llm))
        .build()
    )
    with runtime_context(clock=clock, ids=ids):
        state = AgentState().with_user_message("Look up two things")
    return agent, state


def deltas(items: list[Any]) -> list[InferenceDelta]:
    return [item for item in items if isinstance(item, InferenceDelta)]


def assembled(pieces: list[InferenceDelta]) -> tuple[str, dict[int, tuple[str, str, Any]]]:
    """The text and each call (id, name, arguments) rebuilt from the pieces of one answer."""
    text = "".join(piece.text for piece in pieces)
    parts: dict[int, list[InferenceDelta]] = {}
    for piece in pieces:
        if piece.tool_call_index is not None:
            parts.setdefault(piece.tool_call_index, []).append(piece)
    rebuilt = {
        index: (
            got[0].tool_call_id or "",
            got[0].tool_name or "",
            json.loads("".join(p.arguments for p in got)),
        )
        for index, got in parts.items()
    }
    return text, rebuilt


@pytest.mark.parametrize("chunking", list(Chunking))
def test_streamed_pieces_rebuild_each_answer_and_the_final_state_is_the_plain_one(
    chunking: Chunking,
) -> None:
    agent, state = fresh(chunking)
    plain = agent.execute(state)
    agent, state = fresh(chunking)
    items = list(agent.stream(state))
    final = items[-1]
    assert isinstance(final, AgentState)
    assert final.to_json() == plain.to_json()
    agent, state = fresh(chunking)
    stepped = [s.to_json() for s in agent.iterate(state)]
    assert [i.to_json() for i in items if isinstance(i, AgentState)] == stepped
    assert all(isinstance(item, AgentEvent | AgentState) for item in items)
    first_step = [d for d in deltas(items) if d.step_number == 1]
    text, rebuilt = assembled(first_step)
    step = plain.steps()[0]
    assert text == "Let me look."
    assert rebuilt == {
        index: (call.id, call.name, call.arguments)
        for index, call in enumerate(step.requested_tool_calls())
    }
    second = "".join(d.text for d in deltas(items) if d.step_number == 2)
    assert second == "Found: é and ü."


@pytest.mark.parametrize("chunking", list(Chunking))
def test_a_turns_reasoning_streams_first_as_reasoning_pieces(chunking: Chunking) -> None:
    def agent() -> Any:
        llm = ScriptedLLM([reply("4", reasoning="2 + 2 is 4")], chunking=chunking)
        clock, ids = FakeClock(), SeededIds(1)
        builder = AgentBuilder.base().with_clock(clock).with_ids(ids)
        return builder.with_capability(UseLlmConfig(llm)).build()

    state = AgentState().with_user_message("2 + 2?")
    items = list(agent().stream(state))
    pieces = deltas(items)
    assert "".join(p.reasoning for p in pieces) == "2 + 2 is 4"
    last_reasoning = max(n for n, p in enumerate(pieces) if p.reasoning)
    assert last_reasoning < min(n for n, p in enumerate(pieces) if p.text)
    assert all(not (p.reasoning and p.text) for p in pieces)
    final = items[-1]
    assert isinstance(final, AgentState)
    assert final.steps()[0].inference_response.reasoning_content == "2 + 2 is 4"
    assert final.to_json() == agent().execute(state).to_json()


def test_chars_cut_one_character_at_a_time_and_interleaved_alternates_calls() -> None:
    agent, state = fresh(Chunking.CHARS)
    pieces = deltas(list(agent.stream(state)))
    assert all(len(p.text) <= 1 and len(p.arguments) <= 1 for p in pieces)
    agent, state = fresh(Chunking.INTERLEAVED)
    order = [p.tool_call_index for p in deltas(list(agent.stream(state))) if p.arguments]
    assert order[:4] == [0, 1, 0, 1]


def test_events_come_as_they_happen_before_the_final_state() -> None:
    agent, state = fresh()
    names = [type(item).__name__ for item in agent.stream(state)]
    assert names.index("InferenceDelta") < names.index("ToolCallCompleted")
    assert names[-1] == "AgentState"
    assert names[-2] == "AgentExecutionCompleted"
    assert names.index("AgentState") > names.index("AgentStepCompleted")  # a step's state


def test_astream_yields_the_same_pieces_and_final_state() -> None:
    # The async path starts a step's calls together, so its ToolCallStarted/Completed events
    # come in another order (docs/async.md); the pieces, the events and the end are the same.
    agent, state = fresh(Chunking.INTERLEAVED)
    expected = list(agent.stream(state))

    async def collect() -> list[Any]:
        agent, state = fresh(Chunking.INTERLEAVED)
        return [item async for item in agent.astream(state)]

    got = asyncio.run(collect())
    assert got[-1].to_json() == expected[-1].to_json()
    assert deltas(got) == deltas(expected)
    assert sorted(map(repr, got[:-1])) == sorted(map(repr, expected[:-1]))


def test_a_plain_run_after_a_stream_gets_no_deltas() -> None:
    agent, state = fresh()
    list(agent.stream(state))
    seen: list[Any] = []
    agent.events.subscribe(InferenceDelta, seen.append)
    agent.events.subscribe(ToolCallCompleted, seen.append)
    agent2, state2 = fresh()
    agent2.events.subscribe(InferenceDelta, seen.append)
    agent2.execute(state2)
    assert not [item for item in seen if isinstance(item, InferenceDelta)]


def test_stream_inside_a_running_event_loop_is_refused() -> None:
    agent, state = fresh()

    async def main() -> None:
        agent.stream(state)

    with pytest.raises(ConfigurationError, match="astream"):
        asyncio.run(main())


def test_an_unknown_chunking_is_refused() -> None:
    with pytest.raises(InvalidScriptError, match="chunking 'bytes' is not one of"):
        ScriptedLLM(["hi"], chunking="bytes")


def test_a_bus_nobody_listens_to_after_a_stream_says_so() -> None:
    agent, state = fresh()
    assert not agent.events.listened
    list(agent.stream(state))
    assert not agent.events.listened


def test_a_consumer_that_stops_early_ends_the_run_cleanly() -> None:
    agent, state = fresh(Chunking.CHARS)
    items = agent.stream(state)
    first = next(item for item in items if isinstance(item, InferenceDelta))
    items.close()  # type: ignore[attr-defined]
    assert first.step_number == 1
    assert not agent.events.listened


class AsyncStreamer:
    """A provider that streams only on the event loop (``ainfer_stream``); ``infer`` answers
    whole. ``closed`` says whether its stream was closed."""

    def __init__(self, *, ends: bool = True) -> None:
        self.ends = ends
        self.closed = False
        self.response = InferenceResponse(content="héllo 🌸")

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        return self.response

    async def ainfer_stream(
        self, request: InferenceRequest
    ) -> AsyncIterator[Delta | InferenceResponse]:
        try:
            for text in ("hé", "llo", " 🌸"):
                await asyncio.sleep(0)
                yield Delta(text=text)
            if self.ends:
                yield self.response
        finally:
            self.closed = True


def streamer_agent(provider: AsyncStreamer) -> tuple[Any, AgentState]:
    from agentrig import UseLlmConfig

    agent = AgentBuilder.base().with_capability(UseLlmConfig(provider)).build()
    return agent, AgentState().with_user_message("hi")


def test_astream_uses_a_providers_ainfer_stream() -> None:
    provider = AsyncStreamer()
    agent, state = streamer_agent(provider)

    async def collect() -> list[Any]:
        return [item async for item in agent.astream(state)]

    items = asyncio.run(collect())
    assert [d.text for d in deltas(items)] == ["hé", "llo", " 🌸"]
    assert items[-1].final_response().to_text() == "héllo 🌸"
    assert provider.closed
    # the sync path has no infer_stream to ask: the answer comes whole
    agent, state = streamer_agent(AsyncStreamer())
    items = list(agent.stream(state))
    assert not deltas(items)
    assert items[-1].final_response().to_text() == "héllo 🌸"


def test_an_ainfer_stream_that_ends_without_the_response_is_refused() -> None:
    agent, state = streamer_agent(AsyncStreamer(ends=False))

    async def collect() -> list[Any]:
        return [item async for item in agent.astream(state)]

    final = asyncio.run(collect())[-1]
    assert final.status() is ExecutionStatus.FAILED
    (error,) = final.errors()
    assert error.type == "ConfigurationError"
    assert "AsyncStreamer.ainfer_stream ended without the response" in error.message


def test_an_astream_consumer_that_stops_early_closes_the_providers_stream() -> None:
    provider = AsyncStreamer()
    agent, state = streamer_agent(provider)

    async def first_piece() -> InferenceDelta:
        items = agent.astream(state)
        try:
            async for item in items:
                if isinstance(item, InferenceDelta):
                    return item
        finally:
            await items.aclose()  # type: ignore[attr-defined]
        raise AssertionError("no piece")

    assert asyncio.run(first_piece()).text == "hé"
    assert provider.closed
    assert not agent.events.listened
