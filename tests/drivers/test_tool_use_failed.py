"""A tool call the API refused as malformed (an OpenAI-compatible ``tool_use_failed``, as Groq
sends) is the model's mistake: the model is shown the error and what it wrote, and asked again
within the step's retry budget."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentState,
    ExecutionStatus,
    InferenceRequest,
    InferenceRequestStarted,
    ProviderError,
    Role,
    StopReason,
    UseLlmConfig,
    tool,
)
from agentrig.drivers import OpenAIProvider
from agentrig.drivers.tool_calling import CORRECTION_KEY
from agentrig.fakes import FakeClock, SeededIds

openai = pytest.importorskip("openai")
httpx2 = pytest.importorskip("httpx2")

FAILED_GENERATION = '<function=lookup>{"order": "A1"}</function>'
API_MESSAGE = (
    "tool call validation failed: parameters for tool lookup did not match schema: "
    "errors: [missing properties: 'order_id']"
)


@tool
def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: shipped"


def refused() -> Any:
    """Groq's answer to a tool call it could not parse or validate."""
    return httpx2.Response(
        400,
        json={
            "error": {
                "message": API_MESSAGE,
                "type": "invalid_request_error",
                "code": "tool_use_failed",
                "failed_generation": FAILED_GENERATION,
            }
        },
    )


def completion(message: dict[str, Any], finish: str = "stop") -> Any:
    return httpx2.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "llama",
            "choices": [
                {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
    )


def tool_call() -> Any:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"order_id": "A1"}'},
    }
    return completion({"content": None, "tool_calls": [call]}, "tool_calls")


class Server:
    """An in-process OpenAI-compatible server answering each request with the next answer."""

    def __init__(self, *answers: Callable[[], Any]) -> None:
        self.answers = list(answers)
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: Any) -> Any:
        self.bodies.append(json.loads(request.content))
        return self.answers.pop(0)()

    def provider(self) -> OpenAIProvider:
        transport = httpx2.MockTransport(self)
        return OpenAIProvider(
            client=openai.OpenAI(
                api_key="sk-test",
                base_url="https://llm.test/v1",
                max_retries=0,
                http_client=httpx2.Client(transport=transport),
            ),
            async_client=openai.AsyncOpenAI(
                api_key="sk-test",
                base_url="https://llm.test/v1",
                max_retries=0,
                http_client=httpx2.AsyncClient(transport=transport),
            ),
            model="llama",
        )


def run(
    server: Server, max_retries: int, *, is_async: bool = False
) -> tuple[AgentState, list[InferenceRequestStarted]]:
    events: list[InferenceRequestStarted] = []
    builder = (
        AgentBuilder.base()
        .with_clock(FakeClock())
        .with_ids(SeededIds(3))
        .with_tools([lookup])
        .with_capability(UseLlmConfig(server.provider(), max_retries=max_retries))
    )
    builder.event_bus().subscribe(InferenceRequestStarted, events.append)
    agent = builder.build()
    state = agent.new_state("Where is order A1?")
    final = asyncio.run(agent.aexecute(state)) if is_async else agent.execute(state)
    return final, events


def test_the_error_is_the_models_and_keeps_what_it_wrote() -> None:
    with pytest.raises(ProviderError) as raised:
        Server(refused).provider().infer(InferenceRequest())
    error = raised.value
    assert error.failed_generation == FAILED_GENERATION
    assert (error.status_code, error.retryable) == (400, False)
    assert "refused the tool call the model generated" in str(error)
    assert API_MESSAGE in str(error)
    assert "fix the request" not in str(error)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_the_model_is_shown_the_refusal_and_corrects_itself(is_async: bool) -> None:
    server = Server(refused, tool_call, lambda: completion({"content": "It has shipped."}))
    final, events = run(server, max_retries=2, is_async=is_async)
    assert final.status() is ExecutionStatus.COMPLETED
    assert final.final_response().to_text() == "It has shipped."
    # The retried request carries what the model wrote and why it was refused.
    retried = server.bodies[1]["messages"]
    assert retried[:-2] == server.bodies[0]["messages"]
    assert retried[-2] == {"role": "assistant", "content": FAILED_GENERATION}
    assert retried[-1]["role"] == "user"
    assert API_MESSAGE in retried[-1]["content"]
    # The step records the request that got the answer; the conversation stays clean.
    first = final.steps()[0]
    corrections = [m for m in first.input_messages if CORRECTION_KEY in m.metadata]
    assert [m.role for m in corrections] == [Role.ASSISTANT, Role.USER]
    assert not any(CORRECTION_KEY in m.metadata for m in final.messages())
    assert FAILED_GENERATION not in json.dumps(server.bodies[2]["messages"])
    # Each request made is an event: the first, then the corrected one.
    assert [e.message_count for e in events if e.step_number == 1] == [1, 3]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_model_that_keeps_failing_ends_with_a_clear_error_after_the_budget(
    is_async: bool,
) -> None:
    server = Server(refused, refused, refused)
    final, _ = run(server, max_retries=3, is_async=is_async)
    assert len(server.bodies) == 3
    assert final.status() is ExecutionStatus.FAILED
    assert final.last_stop_reason() is StopReason.RETRY_LIMIT
    message = final.errors()[-1].message
    assert message.startswith("inference failed after 3 attempt(s): ")
    assert "tool_use_failed" in message
    assert API_MESSAGE in message
    # Every retry shows every refusal so far.
    assert len(server.bodies[2]["messages"]) == len(server.bodies[0]["messages"]) + 4


def test_without_retries_the_run_fails_with_the_refusal() -> None:
    server = Server(refused)
    final, _ = run(server, max_retries=1)
    assert final.status() is ExecutionStatus.FAILED
    assert final.last_stop_reason() is StopReason.ERROR
    assert "tool_use_failed" in final.errors()[-1].message


def test_a_refusal_reported_in_a_successful_answer_is_the_models_too() -> None:
    body = {"error": {"message": "bad call", "code": "tool_use_failed", "failed_generation": "x"}}
    server = Server(lambda: httpx2.Response(200, json={"id": "c", "choices": [], **body}))
    with pytest.raises(ProviderError) as raised:
        server.provider().infer(InferenceRequest())
    assert raised.value.failed_generation == "x"


def test_a_recorded_refusal_replays_into_the_same_state(tmp_path: Path) -> None:
    from agentrig.harness.cassettes import RecordingProvider, ReplayProvider, load_cassette

    path = tmp_path / "refused.yaml"
    server = Server(refused, tool_call, lambda: completion({"content": "It has shipped."}))

    def agent_run(provider: Any) -> AgentState:
        agent = (
            AgentBuilder.base()
            .with_clock(FakeClock())
            .with_ids(SeededIds(3))
            .with_tools([lookup])
            .with_capability(UseLlmConfig(provider, max_retries=2))
            .build()
        )
        return agent.execute(agent.new_state("Where is order A1?"))

    recorded = agent_run(RecordingProvider(server.provider(), path=path))
    cassette = load_cassette(path)
    assert cassette.interactions[0].error is not None
    assert cassette.interactions[0].error.failed_generation == FAILED_GENERATION
    replay = ReplayProvider(cassette, path=path)
    replayed = agent_run(replay)
    replay.assert_complete()
    assert replayed.to_json() == recorded.to_json()
