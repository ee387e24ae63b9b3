"""A run that hits a provider error and its replay end in byte-identical states, through
agentrig's own cassettes and through HTTP cassettes."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

import agentrig as ar
from agentrig.errors import ProviderError, RetryLimitExceededError
from agentrig.fakes import FakeClock, SeededIds
from agentrig.harness.cassettes import (
    RecordingProvider,
    ReplayedProviderError,
    ReplayProvider,
    load_cassette,
)


@ar.tool
def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: shipped"


def run(provider: ar.InferenceProvider, max_retries: int = 1) -> ar.AgentState:
    """One turn on a fake clock and seeded ids: the same run gives the same state."""
    agent = (
        ar.AgentBuilder.base()
        .with_clock(FakeClock())
        .with_ids(SeededIds(7))
        .with_tools([lookup])
        .with_capability(ar.UseLlmConfig(provider, max_retries=max_retries))
        .build()
    )
    return agent.execute(agent.new_state("Where is order A1?"))


class Overloaded(ProviderError):
    """A provider error of a class of its own, as real providers' subclasses are."""


class Failing:
    """Answers with a tool call (an id of its own, as real providers send), then fails with each
    of ``errors`` in turn."""

    def __init__(self, *errors: ProviderError) -> None:
        self.errors = list(errors)
        self.calls = 0

    def infer(self, request: ar.InferenceRequest) -> ar.InferenceResponse:
        self.calls += 1
        if self.calls == 1:
            return ar.InferenceResponse(
                tool_calls=(ar.ToolCall(id="c1", name="lookup", arguments={"order_id": "A1"}),)
            )
        raise self.errors.pop(0)


@pytest.mark.parametrize(
    ("errors", "max_retries", "stop_reason"),
    [
        ((ProviderError("boom"),), 1, "error"),
        ((ProviderError("busy", retryable=True), ProviderError("gone")), 2, "error"),
        (
            (ProviderError("busy", retryable=True), ProviderError("still busy", retryable=True)),
            2,
            "retry_limit",
        ),
        ((Overloaded("overloaded", status_code=529, provider="anthropic"),), 1, "error"),
    ],
    ids=["error", "retried-then-error", "retry-limit", "own-error-class"],
)
def test_a_failed_run_and_its_replay_end_in_identical_states(
    tmp_path: Path,
    errors: tuple[ProviderError, ...],
    max_retries: int,
    stop_reason: str,
) -> None:
    path = tmp_path / "failed.yaml"
    recorded = run(RecordingProvider(Failing(*errors), path=path), max_retries)
    assert recorded.status() is ar.ExecutionStatus.FAILED
    assert recorded.last_stop_reason() is ar.StopReason(stop_reason)
    replay = ReplayProvider(load_cassette(path), path=path)
    replayed = run(replay, max_retries)
    replay.assert_complete()
    assert replayed.to_json() == recorded.to_json()


def test_a_replayed_error_is_still_a_replayed_provider_error() -> None:
    recorder = RecordingProvider(Failing(Overloaded("overloaded", status_code=529)))
    recorder.infer(ar.InferenceRequest())
    with pytest.raises(Overloaded):
        recorder.infer(ar.InferenceRequest())
    replay = ReplayProvider(recorder.cassette)
    replay.infer(ar.InferenceRequest())
    with pytest.raises(ReplayedProviderError) as raised:
        replay.infer(ar.InferenceRequest())
    error = raised.value
    assert isinstance(error, ProviderError)
    assert type(error).__name__ == "Overloaded"
    assert (str(error), error.error_type, error.status_code) == ("overloaded", "Overloaded", 529)
    again = pickle.loads(pickle.dumps(error))
    assert (type(again).__name__, str(again), again.status_code) == (
        "Overloaded",
        "overloaded",
        529,
    )
    assert isinstance(again, ReplayedProviderError)
    assert not isinstance(error, RetryLimitExceededError)
    made = ReplayedProviderError("overloaded", error_type="Overloaded", status_code=529)
    assert type(made) is type(error)
    assert type(ReplayedProviderError("x", error_type="ReplayedProviderError")) is (
        ReplayedProviderError
    )


# --- HTTP cassettes ------------------------------------------------------------------------------


def chat_answer(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


TOOL_CALL = chat_answer(
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"order_id": "A1"}'},
            }
        ],
    }
)


@pytest.mark.parametrize(
    ("status", "max_retries", "stop_reason"),
    [(400, 1, "error"), (503, 2, "retry_limit")],
)
def test_a_failed_run_and_its_http_replay_end_in_identical_states(
    tmp_path: Path, status: int, max_retries: int, stop_reason: str
) -> None:
    openai = pytest.importorskip("openai")
    httpx2 = pytest.importorskip("httpx2")
    http = pytest.importorskip("agentrig.harness.cassettes.http")
    from agentrig.drivers import OpenAIProvider

    answers = [httpx2.Response(200, json=TOOL_CALL)] + [
        httpx2.Response(status, json={"error": {"message": "nope", "type": "invalid"}})
    ] * max_retries
    mock = httpx2.Client(transport=httpx2.MockTransport(lambda request: answers.pop(0)))
    client = openai.OpenAI(api_key="sk-secret", max_retries=0, http_client=mock)
    path = tmp_path / "failed.yaml"
    with http.use_http_cassette(path, record_mode="once"):
        recorded = run(OpenAIProvider(client=client, model="m"), max_retries)
    assert recorded.status() is ar.ExecutionStatus.FAILED
    assert recorded.last_stop_reason() is ar.StopReason(stop_reason)
    with http.use_http_cassette(path) as cassette:
        replayed = run(OpenAIProvider(api_key="sk-replay", max_retries=0, model="m"), max_retries)
    assert cassette.play_count == 1 + max_retries
    assert replayed.to_json() == recorded.to_json()
