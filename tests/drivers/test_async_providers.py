"""``OpenAIProvider.ainfer`` and ``AnthropicProvider.ainfer`` on ``AsyncOpenAI``/``AsyncAnthropic``,
against ``httpx2.MockTransport``: the same answers as ``infer``, streamed or not, and through
``aexecute``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentState,
    FinishReason,
    InferenceRequest,
    Message,
    Messages,
    ProviderError,
    UseLlmConfig,
    tool,
)
from agentrig.drivers import AnthropicProvider, OpenAIProvider

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

REQUEST = InferenceRequest(messages=Messages.of(Message.user("Hi")))


class Server:
    """Answers each request with the next canned response; keeps the request bodies."""

    def __init__(self, *responses: Any) -> None:
        self.responses = list(responses)
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: Any) -> Any:
        self.bodies.append(json.loads(request.content))
        return self.responses.pop(0)

    def openai(self, **options: Any) -> OpenAIProvider:
        transport = httpx2.MockTransport(self)
        common = {"api_key": "sk-test", "base_url": "https://llm.test/v1", "max_retries": 0}
        return OpenAIProvider(
            client=openai.OpenAI(**common, http_client=httpx2.Client(transport=transport)),
            async_client=openai.AsyncOpenAI(
                **common, http_client=httpx2.AsyncClient(transport=transport)
            ),
            model="gpt-test",
            **options,
        )

    def anthropic(self, **options: Any) -> AnthropicProvider:
        transport = httpx2.MockTransport(self)
        common = {"api_key": "sk-test", "base_url": "https://llm.test", "max_retries": 0}
        return AnthropicProvider(
            client=anthropic.Anthropic(**common, http_client=httpx2.Client(transport=transport)),
            async_client=anthropic.AsyncAnthropic(
                **common, http_client=httpx2.AsyncClient(transport=transport)
            ),
            model="claude-test",
            **options,
        )


def sse(lines: list[str]) -> Any:
    return httpx2.Response(
        200, content="".join(lines).encode(), headers={"content-type": "text/event-stream"}
    )


def chat(message: dict[str, Any], finish: str = "stop") -> Any:
    return httpx2.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test-2025",
            "choices": [
                {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
    )


def chat_stream(*deltas: dict[str, Any], finish: str = "stop") -> Any:
    def chunk(delta: dict[str, Any], reason: str | None) -> str:
        body = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
        }
        return f"data: {json.dumps(body)}\n\n"

    lines = [chunk(delta, None) for delta in deltas] + [chunk({}, finish), "data: [DONE]\n\n"]
    return sse(lines)


def message(*content: dict[str, Any], stop: str = "end_turn") -> Any:
    return httpx2.Response(
        200,
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test-1",
            "content": list(content),
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    )


def message_stream(text: str) -> Any:
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-test-1",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": c}}
            for c in text
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
        {"type": "message_stop"},
    ]
    return sse([f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events])


def same(response: Any) -> tuple[Any, ...]:
    return (response.content, response.tool_calls, response.usage, response.finish_reason)


class TestOpenAI:
    def test_ainfer_answers_as_infer_does(self) -> None:
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"q": "x"}'},
        }
        server = Server(
            chat({"content": "Looking.", "tool_calls": [call]}, "tool_calls"),
            chat({"content": "Looking.", "tool_calls": [call]}, "tool_calls"),
        )
        provider = server.openai()
        answer = asyncio.run(provider.ainfer(REQUEST))
        assert same(answer) == same(provider.infer(REQUEST))
        assert answer.finish_reason is FinishReason.TOOL_CALLS
        assert answer.tool_calls[0].arguments == {"q": "x"}
        assert server.bodies[0] == server.bodies[1]

    def test_a_streamed_answer(self) -> None:
        server = Server(chat_stream({"role": "assistant", "content": "Hel"}, {"content": "lo"}))
        answer = asyncio.run(server.openai(stream=True).ainfer(REQUEST))
        assert answer.content == "Hello"
        assert server.bodies[0]["stream"] is True

    def test_errors_are_provider_errors_with_the_retryable_flag(self) -> None:
        server = Server(httpx2.Response(429, json={"error": {"message": "slow down"}}))
        with pytest.raises(ProviderError) as raised:
            asyncio.run(server.openai().ainfer(REQUEST))
        assert raised.value.retryable

    def test_a_provider_given_only_a_sync_client_runs_it_in_a_thread(self) -> None:
        server = Server(chat({"content": "from the sync client"}))
        client = openai.OpenAI(
            api_key="sk-test",
            base_url="https://llm.test/v1",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(server)),
        )
        provider = OpenAIProvider(client=client, model="gpt-test")
        assert provider.async_client is None
        assert asyncio.run(provider.ainfer(REQUEST)).content == "from the sync client"

    def test_a_tool_loop_through_aexecute(self) -> None:
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "double", "arguments": '{"n": 21}'},
        }
        server = Server(
            chat({"content": None, "tool_calls": [call]}, "tool_calls"), chat({"content": "42"})
        )

        @tool
        async def double(n: int) -> int:
            """Double n."""
            return 2 * n

        agent = (
            AgentBuilder.base()
            .with_tools([double])
            .with_capability(UseLlmConfig(server.openai()))
            .build()
        )
        final = asyncio.run(agent.aexecute(AgentState().with_user_message("Double 21")))
        assert final.final_response().to_text() == "42"
        assert server.bodies[1]["messages"][-1] == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "42",
        }


class TestAnthropic:
    def test_ainfer_answers_as_infer_does(self) -> None:
        block = {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": "x"}}
        server = Server(message(block, stop="tool_use"), message(block, stop="tool_use"))
        provider = server.anthropic()
        answer = asyncio.run(provider.ainfer(REQUEST))
        assert same(answer) == same(provider.infer(REQUEST))
        assert answer.tool_calls[0].name == "lookup"

    def test_a_streamed_answer(self) -> None:
        server = Server(message_stream("Hello"))
        answer = asyncio.run(server.anthropic(stream=True).ainfer(REQUEST))
        assert answer.content == "Hello"
        assert answer.finish_reason is FinishReason.STOP

    def test_errors_are_provider_errors_with_the_retryable_flag(self) -> None:
        overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
        server = Server(httpx2.Response(529, json=overloaded))
        with pytest.raises(ProviderError) as raised:
            asyncio.run(server.anthropic().ainfer(REQUEST))
        assert raised.value.retryable
