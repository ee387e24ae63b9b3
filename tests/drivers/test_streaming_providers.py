"""The real providers stream to the user: ``agent.stream``/``astream`` hand out each text and
tool-argument piece of a streamed answer as it arrives, replayed from real recorded SSE streams,
and end in the state ``execute`` ends in."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentEvent,
    AgentLoop,
    AgentState,
    InferenceDelta,
    InferenceResponseReceived,
    LlmConfig,
    UseLlmConfig,
    runtime_context,
    tool,
)
from agentrig.drivers import AnthropicProvider, OpenAIProvider, OpenAIResponsesProvider
from agentrig.fakes import FakeClock, SeededIds

pytest.importorskip("openai")
pytest.importorskip("anthropic")
http_cassettes = pytest.importorskip("agentrig.harness.cassettes.http")

FOREIGN = ("tools", "strict")


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


def pelican_names() -> Callable[[], str]:
    names = iter(["Charles", "Sammy"])

    @tool
    def pelican_name_generator() -> str:
        return next(names)

    return pelican_name_generator


@dataclass(frozen=True)
class Recorded:
    """A real recorded streamed session and how to replay it through the loop."""

    cassette: str
    provider: Callable[[], Any]
    user: str
    tools: Callable[[], list[Any]]
    llm_config: LlmConfig | None = None


SESSIONS = {
    "chat": Recorded(
        "llm/test_tools/test_tool_use_basic.yaml",
        lambda: OpenAIProvider(
            api_key="sk-replay", max_retries=0, model="gpt-4o-mini", stream=True
        ),
        "What is 1231 * 2331?",
        lambda: [multiply],
    ),
    "responses": Recorded(
        "llm/test_openai_responses/test_responses_tool_use_streaming.yaml",
        lambda: OpenAIResponsesProvider(
            api_key="sk-replay", max_retries=0, model="gpt-5.5", stream=True
        ),
        "What is 1231 * 2331? Use the multiply tool.",
        lambda: [multiply],
        LlmConfig(options={"reasoning": {"effort": "low"}}),
    ),
    "anthropic": Recorded(
        "llm-anthropic/test_anthropic/test_tools.yaml",
        lambda: AnthropicProvider(
            api_key="sk-replay",
            model="claude-haiku-4-5-20251001",
            max_tokens=8192,
            max_retries=0,
            stream=True,
        ),
        "Two names for a pet pelican",
        lambda: [pelican_names()],
        LlmConfig(temperature=1.0),
    ),
}


def fresh(session: Recorded) -> tuple[AgentLoop, AgentState]:
    clock, ids = FakeClock(), SeededIds(0)
    agent = (
        AgentBuilder.base()
        .with_clock(clock)
        .with_ids(ids)
        .with_capability(UseLlmConfig(session.provider(), llm_config=session.llm_config))
        .with_tools(session.tools())
        .build()
    )
    with runtime_context(clock=clock, ids=ids):
        state = AgentState().with_user_message(session.user)
    return agent, state


@pytest.fixture(params=sorted(SESSIONS))
def session(request: pytest.FixtureRequest, real_cassette: Callable[[str], Path]) -> Recorded:
    recorded = SESSIONS[request.param]
    real_cassette(recorded.cassette)  # skips when the shared cassettes are absent
    return recorded


@pytest.fixture
def replaying(real_cassette: Callable[[str], Path]) -> Callable[[Recorded], Any]:
    def replay(session: Recorded) -> Any:
        return http_cassettes.use_http_cassette(real_cassette(session.cassette), ignore=FOREIGN)

    return replay


def executed(session: Recorded, replaying: Callable[[Recorded], Any]) -> AgentState:
    agent, state = fresh(session)
    with replaying(session):
        return agent.execute(state)


def streamed(session: Recorded, replaying: Callable[[Recorded], Any]) -> list[Any]:
    agent, state = fresh(session)
    with replaying(session):
        return list(agent.stream(state))


def astreamed(session: Recorded, replaying: Callable[[Recorded], Any]) -> list[Any]:
    async def collect() -> list[Any]:
        agent, state = fresh(session)
        return [item async for item in agent.astream(state)]

    with replaying(session):
        return asyncio.run(collect())


def deltas(items: list[Any], step: int) -> list[InferenceDelta]:
    return [i for i in items if isinstance(i, InferenceDelta) and i.step_number == step]


def rebuilt(pieces: list[InferenceDelta]) -> tuple[str, list[tuple[str, str, Any]]]:
    """The text and the calls (id, name, arguments) of one answer, from its pieces in order."""
    calls: dict[int, list[InferenceDelta]] = {}
    for piece in pieces:
        if piece.tool_call_index is not None:
            calls.setdefault(piece.tool_call_index, []).append(piece)
    return "".join(p.text for p in pieces), [
        (
            got[0].tool_call_id or "",
            got[0].tool_name or "",
            json.loads("".join(p.arguments for p in got) or "{}"),
        )
        for _, got in sorted(calls.items())
    ]


def check_pieces(items: list[Any], final: AgentState) -> None:
    """Each step's pieces, in the order they came, rebuild that step's answer, and come
    before the step's ``InferenceResponseReceived``."""
    assert isinstance(items[-1], AgentState)
    for number, step in enumerate(final.steps(), start=1):
        pieces = deltas(items, number)
        answer = step.inference_response
        assert len(pieces) > 1  # streamed in pieces, not handed over whole
        assert rebuilt(pieces) == (
            answer.content,
            [(c.id, c.name, c.arguments) for c in answer.tool_calls],
        )
        received = next(
            at
            for at, item in enumerate(items)
            if isinstance(item, InferenceResponseReceived) and item.step_number == number
        )
        assert items.index(pieces[-1]) < received


def test_stream_hands_out_each_piece_and_ends_in_the_executed_state(
    session: Recorded, replaying: Callable[[Recorded], Any]
) -> None:
    plain = executed(session, replaying)
    items = streamed(session, replaying)
    assert items[-1].to_json() == plain.to_json()
    check_pieces(items, plain)
    assert all(isinstance(item, AgentEvent | AgentState) for item in items)


def test_astream_hands_out_the_same_pieces_and_state(
    session: Recorded, replaying: Callable[[Recorded], Any]
) -> None:
    plain = executed(session, replaying)
    items = astreamed(session, replaying)
    assert items[-1].to_json() == plain.to_json()
    check_pieces(items, plain)
    assert [d for d in items if isinstance(d, InferenceDelta)] == [
        d for d in streamed(session, replaying) if isinstance(d, InferenceDelta)
    ]


def test_the_recorded_pieces_come_as_the_api_sent_them(
    replaying: Callable[[Recorded], Any], real_cassette: Callable[[str], Path]
) -> None:
    chat = SESSIONS["chat"]
    real_cassette(chat.cassette)
    items = streamed(chat, replaying)
    first = deltas(items, 1)
    assert first[0].tool_call_index == 0
    assert first[0].tool_name == "multiply"
    assert (first[0].tool_call_id or "").startswith("call_")
    assert all(p.tool_call_id is None and p.tool_name is None for p in first[1:])
    assert "".join(p.arguments for p in first) == '{"a":1231,"b":2331}'
    words = [p.text for p in deltas(items, 2)]
    assert words[:3] == ["The", " result", " of"]


def test_parallel_tool_uses_stream_under_their_own_index(
    replaying: Callable[[Recorded], Any], real_cassette: Callable[[str], Path]
) -> None:
    anthropic = SESSIONS["anthropic"]
    real_cassette(anthropic.cassette)
    first = deltas(streamed(anthropic, replaying), 1)
    starts = [(p.tool_call_index, p.tool_call_id, p.tool_name) for p in first if p.tool_name]
    assert starts == [
        (0, "toolu_01LtHJmixrs9NcWQkK8hu8hj", "pelican_name_generator"),
        (1, "toolu_01N8a4jWyf116qKTMqKKmjyt", "pelican_name_generator"),
    ]


def test_a_plain_provider_streams_the_whole_answer_without_pieces(
    replaying: Callable[[Recorded], Any], real_cassette: Callable[[str], Path]
) -> None:
    path = real_cassette("llm/test_tools/test_tool_use_chain_of_two_calls.yaml")
    from agentrig import FunctionTool

    def lookup_population(country: str) -> int:
        """Population of a country."""
        return 123124

    def can_have_dragons(population: int) -> bool:
        """Whether a population can have dragons."""
        return population > 10000

    def run(stream: bool) -> list[Any]:
        clock, ids = FakeClock(), SeededIds(0)
        provider = OpenAIProvider(api_key="sk-replay", max_retries=0, model="gpt-4o-mini")
        agent = (
            AgentBuilder.base()
            .with_clock(clock)
            .with_ids(ids)
            .with_capability(UseLlmConfig(provider))
            .with_tools([FunctionTool(lookup_population), FunctionTool(can_have_dragons)])
            .build()
        )
        with runtime_context(clock=clock, ids=ids):
            state = AgentState().with_user_message(
                "Can the country of Crumpet have dragons? Answer with only YES or NO"
            )
        with http_cassettes.use_http_cassette(path, ignore=FOREIGN):
            return list(agent.stream(state)) if stream else [agent.execute(state)]

    items = run(stream=True)
    assert not [i for i in items if isinstance(i, InferenceDelta)]
    assert items[-1].to_json() == run(stream=False)[-1].to_json()


def test_a_consumer_that_stops_mid_stream_closes_the_providers_stream(
    session: Recorded, real_cassette: Callable[[str], Path]
) -> None:
    agent, state = fresh(session)
    with http_cassettes.use_http_cassette(
        real_cassette(session.cassette), ignore=FOREIGN, check_all_played=False
    ):
        items: Iterator[Any] = agent.stream(state)
        first = next(i for i in items if isinstance(i, InferenceDelta))
        items.close()  # type: ignore[attr-defined]
    assert first.step_number == 1
    assert not agent.events.listened


def test_astream_on_a_provider_with_only_a_sync_client_answers_whole(
    replaying: Callable[[Recorded], Any], real_cassette: Callable[[str], Path]
) -> None:
    import openai

    chat = SESSIONS["chat"]
    real_cassette(chat.cassette)
    only_sync = Recorded(
        chat.cassette,
        lambda: OpenAIProvider(
            client=openai.OpenAI(api_key="sk-replay", max_retries=0),
            model="gpt-4o-mini",
            stream=True,
        ),
        chat.user,
        chat.tools,
    )
    items = astreamed(only_sync, replaying)
    assert not [i for i in items if isinstance(i, InferenceDelta)]
    assert items[-1].to_json() == executed(chat, replaying).to_json()


def test_a_responses_provider_with_only_an_async_client_refuses_to_stream_in_sync_code() -> None:
    import openai

    provider = OpenAIResponsesProvider(
        async_client=openai.AsyncOpenAI(api_key="sk-test"), model="gpt-test", stream=True
    )
    agent = AgentBuilder.base().with_capability(UseLlmConfig(provider)).build()
    final = list(agent.stream(AgentState().with_user_message("hi")))[-1]
    (error,) = final.errors()
    assert "has only an async client" in error.message


@pytest.mark.filterwarnings("error")  # an exception left to a finalizer would fail the test
def test_an_astream_consumer_that_stops_mid_stream_closes_the_providers_stream(
    session: Recorded, real_cassette: Callable[[str], Path]
) -> None:
    async def first_piece(agent: AgentLoop, state: AgentState) -> InferenceDelta:
        items = agent.astream(state)
        try:
            async for item in items:
                if isinstance(item, InferenceDelta):
                    return item
        finally:
            await items.aclose()  # type: ignore[attr-defined]
        raise AssertionError("no piece")

    agent, state = fresh(session)
    with http_cassettes.use_http_cassette(
        real_cassette(session.cassette), ignore=FOREIGN, check_all_played=False
    ):
        first = asyncio.run(first_piece(agent, state))
    assert first.step_number == 1
    assert not agent.events.listened
