"""``OpenAIResponsesProvider``: request and response mapping against a mock transport (sync and
async, whole and streamed), the reasoning round trip of a tool loop, replays of the real recorded
Responses API sessions through the full agent loop, and its own traffic recorded and replayed
through both cassette layers."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrig import (
    AgentState,
    ConfigurationError,
    ExecutionStatus,
    FinishReason,
    InferenceRequest,
    InferenceResponse,
    InvalidInputError,
    LlmConfig,
    Message,
    Messages,
    MissingDependencyError,
    ProviderError,
    RealLlmCallBlockedError,
    ToolCall,
    ToolResult,
    ToolSchema,
    Usage,
    tool,
)
from agentrig.drivers import Delta, ModelPrice, OpenAIResponsesProvider, PriceTable

openai = pytest.importorskip("openai")
httpx2 = pytest.importorskip("httpx2")
http_cassettes = pytest.importorskip("agentrig.harness.cassettes.http")

FOREIGN = ("tools", "strict")
"""What the real cassettes, recorded by other frameworks, send differently from agentrig: tool
schemas (descriptions, ``additionalProperties``, ``strict``); the replays do not compare them."""


BASE_URL = "https://llm.test/v1"


class FakeServer:
    """An ``httpx2.MockTransport`` answering each request with the next canned response; it
    serves the sync and the async SDK client alike."""

    def __init__(self, *responses: Any) -> None:
        self.responses = list(responses)
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: Any) -> Any:
        self.bodies.append(json.loads(request.content))
        answer = self.responses.pop(0)
        return answer(request) if callable(answer) else answer

    def provider(self, **options: Any) -> OpenAIResponsesProvider:
        client = openai.OpenAI(
            api_key="sk-test",
            base_url=BASE_URL,
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(self)),
        )
        return OpenAIResponsesProvider(client=client, model="gpt-test", **options)

    def async_provider(self, **options: Any) -> OpenAIResponsesProvider:
        client = openai.AsyncOpenAI(
            api_key="sk-test",
            base_url=BASE_URL,
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self)),
        )
        return OpenAIResponsesProvider(async_client=client, model="gpt-test", **options)


def run(coroutine: Any, provider: OpenAIResponsesProvider | None = None) -> Any:
    """``coroutine`` run to completion; then ``provider``'s async client, if any, is closed in
    the same event loop (its connections belong to that loop)."""

    async def main() -> Any:
        try:
            return await coroutine
        finally:
            if provider is not None and provider.async_client is not None:
                await provider.async_client.close()

    return asyncio.run(main())


def infer(server: FakeServer, request: InferenceRequest, mode: str, **options: Any) -> Any:
    """``request`` answered through the sync ``infer`` or the async ``ainfer``."""
    if mode == "async":
        provider = server.async_provider(**options)
        return run(provider.ainfer(request), provider)
    return server.provider(**options).infer(request)


MODES = ["sync", "async"]

# --- canned answers -------------------------------------------------------------------------


def said(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def refused(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": text}],
    }


def called(call_id: str, name: str, arguments: str, item_id: str = "fc_1") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def reasoned(item_id: str, summary: str = "", encrypted: str | None = "enc") -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": item_id,
        "summary": [{"type": "summary_text", "text": summary}] if summary else [],
        "status": "completed",
    }
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 2},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 3},
    "total_tokens": 15,
}


def response_body(
    *output: dict[str, Any],
    status: str = "completed",
    incomplete: str | None = None,
    usage: dict[str, Any] | None = USAGE,
) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-test-2025",
        "status": status,
        "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "output": list(output),
        "usage": usage,
    }


def answer(*output: dict[str, Any], **fields: Any) -> Any:
    return httpx2.Response(200, json=response_body(*output, **fields))


def sse(*events: dict[str, Any]) -> Any:
    body = "".join(
        f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': n})}\n\n"
        for n, e in enumerate(events)
    )
    return httpx2.Response(
        200, content=body.encode(), headers={"content-type": "text/event-stream"}
    )


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def events_of(body: dict[str, Any], size: int = 3) -> list[dict[str, Any]]:
    """The stream events the API sends for ``body``, every delta ``size`` characters long."""
    started = {**body, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
    for index, item in enumerate(body["output"]):
        at = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "message":
            events.append(
                {"type": "response.output_item.added", **at, "item": {**item, "content": []}}
            )
            for part_index, part in enumerate(item["content"]):
                kind = "output_text" if part["type"] == "output_text" else "refusal"
                text = part["text"] if kind == "output_text" else part["refusal"]
                events.extend(
                    {
                        "type": f"response.{kind}.delta",
                        **at,
                        "content_index": part_index,
                        "delta": d,
                    }
                    for d in pieces(text, size)
                )
        elif item["type"] == "function_call":
            events.append(
                {"type": "response.output_item.added", **at, "item": {**item, "arguments": ""}}
            )
            events.extend(
                {"type": "response.function_call_arguments.delta", **at, "delta": d}
                for d in pieces(item["arguments"], size)
            )
        elif item["type"] == "reasoning":
            events.append(
                {"type": "response.output_item.added", **at, "item": {**item, "summary": []}}
            )
            for summary_index, part in enumerate(item["summary"]):
                events.extend(
                    {
                        "type": "response.reasoning_summary_text.delta",
                        **at,
                        "summary_index": summary_index,
                        "delta": d,
                    }
                    for d in pieces(part["text"], size)
                )
        else:
            events.append({"type": "response.output_item.added", **at, "item": item})
        events.append({"type": "response.output_item.done", **at, "item": item})
    kind = "response.incomplete" if body["status"] == "incomplete" else "response.completed"
    events.append({"type": kind, "response": body})
    return events


def streamed(*output: dict[str, Any], size: int = 3, **fields: Any) -> Any:
    return sse(*events_of(response_body(*output, **fields), size))


CONVERSATION = Messages.of(Message.user("x"))


# --- request mapping ------------------------------------------------------------------------

LOOKUP = ToolSchema(
    name="lookup",
    description="Look up.",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}},
)


def test_a_whole_conversation_becomes_instructions_and_input_items() -> None:
    server = FakeServer(answer(said("hi")))
    call = ToolCall(id="call_1", name="lookup", arguments={"q": "x"})
    messages = Messages.of(
        Message.system("Be brief."),
        Message(role="developer", content="Use tools."),
        Message.user("Look up x"),
        Message.assistant("Looking.", [call]),
        Message.tool(
            ToolResult(
                content="Error in tool call: boom",
                call_id="call_1",
                tool_name="lookup",
                is_error=True,
            )
        ),
        Message.assistant("Nothing found."),
    )
    request = InferenceRequest(
        messages=messages,
        tools=(LOOKUP,),
        tool_choice="lookup",
        response_format={"type": "object", "title": "Answer", "properties": {}},
        llm_config=LlmConfig(
            model="gpt-custom",
            temperature=0.2,
            max_output_tokens=64,
            options={"reasoning": {"effort": "low"}},
        ),
    )
    server.provider().infer(request)
    body = server.bodies[0]
    assert body["model"] == "gpt-custom"
    assert body["instructions"] == "Be brief.\n\nUse tools."
    assert body["input"] == [
        {"role": "user", "content": "Look up x"},
        {"role": "assistant", "content": "Looking."},
        {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": '{"q": "x"}'},
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": "Error in tool call: boom",
        },
        {"role": "assistant", "content": "Nothing found."},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "lookup",
            "description": "Look up.",
            "parameters": LOOKUP.parameters,
            "strict": False,
        }
    ]
    assert body["tool_choice"] == {"type": "function", "name": "lookup"}
    assert body["text"] == {
        "format": {
            "type": "json_schema",
            "name": "Answer",
            "schema": {"type": "object", "title": "Answer", "properties": {}},
        }
    }
    assert (body["temperature"], body["max_output_tokens"]) == (0.2, 64)
    assert body["reasoning"] == {"effort": "low"}
    assert (body["store"], body["include"]) == (False, ["reasoning.encrypted_content"])
    assert "stream" not in body


def test_defaults_keep_the_body_minimal() -> None:
    server = FakeServer(answer(said("hi")))
    server.provider().infer(InferenceRequest(messages=CONVERSATION))
    assert server.bodies[0] == {
        "model": "gpt-test",
        "input": [{"role": "user", "content": "x"}],
        "store": False,
    }


@pytest.mark.parametrize(
    ("model", "options", "included"),
    [
        ("gpt-5-mini", {}, True),
        ("o4-mini", {}, True),
        ("openai/o3", {}, True),
        ("gpt-5.5", {}, True),
        ("gpt-5-chat-latest", {}, False),
        ("gpt-4o", {}, False),  # it answers HTTP 400 "Encrypted content is not supported"
        ("gpt-4.1-mini", {}, False),
        ("my-finetune", {"reasoning": {"effort": "low"}}, True),
    ],
)
def test_encrypted_reasoning_is_asked_of_reasoning_models_only(
    model: str, options: dict[str, Any], included: bool
) -> None:
    provider = OpenAIResponsesProvider(client=object(), model=model)
    body = provider.request_body(InferenceRequest(llm_config=LlmConfig(options=options)))
    assert ("include" in body) is included
    assert body.get("include", ["reasoning.encrypted_content"]) == ["reasoning.encrypted_content"]
    stored = OpenAIResponsesProvider(client=object(), model=model, store=True)
    assert "include" not in stored.request_body(InferenceRequest())


@pytest.mark.parametrize(
    ("options", "store", "include"),
    [
        ({}, False, ["reasoning.encrypted_content"]),
        ({"store": True}, True, None),
        ({"include": ()}, False, None),
        (
            {"store": True, "include": ["message.output_text.logprobs"]},
            True,
            ["message.output_text.logprobs"],
        ),
    ],
)
def test_store_and_include(options: dict[str, Any], store: bool, include: Any) -> None:
    provider = OpenAIResponsesProvider(client=object(), model="gpt-5-mini", **options)
    body = provider.request_body(InferenceRequest(messages=CONVERSATION))
    assert body["store"] is store
    assert body.get("include") == include


@pytest.mark.parametrize(
    ("include", "message"),
    [
        ("reasoning.encrypted_content", "write include=['reasoning.encrypted_content']"),
        (3, "got 3"),
        ([""], "got ['']"),
        (["reasoning.encrypted_content", None], "a list of names such as"),
    ],
)
def test_an_include_that_is_not_a_list_of_names_is_a_configuration_error(
    include: Any, message: str
) -> None:
    # A bare string was sent letter by letter: "include": ["r", "e", "a", ...].
    with pytest.raises(ConfigurationError) as raised:
        OpenAIResponsesProvider(client=object(), model="gpt-5-mini", include=include)
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("none", "none"),
        ("required", "required"),
        ("lookup", {"type": "function", "name": "lookup"}),
    ],
)
def test_tool_choice(choice: str, sent: Any) -> None:
    provider = OpenAIResponsesProvider(client=object(), model="m")
    body = provider.request_body(InferenceRequest(tools=(LOOKUP,), tool_choice=choice))
    assert body["tool_choice"] == sent


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        ({"type": "json_object"}, {"type": "json_object"}),
        (
            {"type": "json_schema", "json_schema": {"name": "A", "schema": {"type": "object"}}},
            {"type": "json_schema", "name": "A", "schema": {"type": "object"}},
        ),
        (
            {"type": "json_schema", "name": "A", "schema": {"type": "object"}, "strict": True},
            {"type": "json_schema", "name": "A", "schema": {"type": "object"}, "strict": True},
        ),
        (
            {"type": "object", "properties": {}},
            {
                "type": "json_schema",
                "name": "response",
                "schema": {"type": "object", "properties": {}},
            },
        ),
    ],
)
def test_response_formats_become_text_formats(given: dict[str, Any], sent: dict[str, Any]) -> None:
    provider = OpenAIResponsesProvider(client=object(), model="m")
    body = provider.request_body(InferenceRequest(response_format=given))
    assert body["text"] == {"format": sent}


def test_a_model_is_required() -> None:
    provider = OpenAIResponsesProvider(client=object())
    with pytest.raises(ConfigurationError, match="needs a model"):
        provider.infer(InferenceRequest(messages=CONVERSATION))


def test_the_sdk_is_an_optional_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingDependencyError, match=r"pip install '\./agentrig\[openai\]'"):
        OpenAIResponsesProvider(model="m")


def test_a_missing_api_key_says_how_to_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIResponsesProvider(model="m")


def test_each_path_needs_its_client() -> None:
    request = InferenceRequest(messages=CONVERSATION)
    only_sync = FakeServer().provider()
    with pytest.raises(ConfigurationError, match="async_client="):
        run(only_sync.ainfer(request))
    only_async = FakeServer().async_provider()
    with pytest.raises(ConfigurationError, match="use ainfer, or pass client="):
        only_async.infer(request)


def test_an_async_client_given_as_client_serves_ainfer() -> None:
    server = FakeServer(answer(said("hi")))
    given = server.async_provider().async_client
    provider = OpenAIResponsesProvider(client=given, model="gpt-test")
    assert (provider.client, provider.async_client) == (None, given)
    response = run(provider.ainfer(InferenceRequest(messages=CONVERSATION)), provider)
    assert response.content == "hi"


def test_each_client_is_built_when_first_needed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "one.yaml"
    request = InferenceRequest(messages=CONVERSATION)
    with http_cassettes.use_http_cassette(path, record_mode="once"):
        recorded = FakeServer(answer(said("hi"))).provider().infer(request)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    provider = OpenAIResponsesProvider(model="gpt-test", base_url=BASE_URL, max_retries=0)
    assert provider.built_clients() == ()
    with http_cassettes.use_http_cassette(path) as cassette:
        replayed = run(provider.ainfer(request), provider)
    (built,) = provider.built_clients()  # ainfer built the async client, and no sync one
    assert isinstance(built, openai.AsyncOpenAI)
    assert provider.async_client is built
    assert isinstance(provider.client, openai.OpenAI)
    assert replayed == recorded
    assert cassette.play_count == 1


def test_provider_data_of_other_providers_is_not_sent() -> None:
    plain = Message.assistant("Checking.", [ToolCall(id="t1", name="f")])
    thinking = {"type": "thinking", "thinking": "t", "signature": "s"}
    tagged = plain.evolve(provider_data={"anthropic_thinking": [thinking], "status": "x"})
    provider = OpenAIResponsesProvider(client=object(), model="m")
    bodies = [
        provider.request_body(InferenceRequest(messages=Messages.of(Message.user("x"), m)))
        for m in (plain, tagged)
    ]
    assert bodies[0] == bodies[1]


# --- response mapping -----------------------------------------------------------------------

TOOL_ANSWER = (
    reasoned("rs_1", "Two lookups needed.", "enc-1"),
    said("Let me check."),
    called("call_a", "lookup", '{"q": "x"}', "fc_a"),
    called("call_b", "lookup", '{"q": "y"}', "fc_b"),
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_maps_to_an_inference_response(mode: str, stream: bool) -> None:
    reply = streamed(*TOOL_ANSWER) if stream else answer(*TOOL_ANSWER)
    prices = PriceTable({"gpt-test": ModelPrice(input=1.0, output=10.0, cache_read=0.5)})
    server = FakeServer(reply)
    response = infer(
        server, InferenceRequest(messages=CONVERSATION), mode, stream=stream, prices=prices
    )
    assert server.bodies[0].get("stream", False) is stream
    assert response.content == "Let me check."
    assert response.tool_calls == (
        ToolCall(id="call_a", name="lookup", arguments={"q": "x"}),
        ToolCall(id="call_b", name="lookup", arguments={"q": "y"}),
    )
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert (response.model, response.response_id) == ("gpt-test-2025", "resp_1")
    assert response.reasoning_content == "Two lookups needed."
    assert response.provider_data == {
        "status": "completed",
        "openai_reasoning": [
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Two lookups needed."}],
                "encrypted_content": "enc-1",
            }
        ],
    }
    assert response.usage == Usage(
        input_tokens=10,
        output_tokens=5,
        cache_read_tokens=4,
        cache_write_tokens=2,
        reasoning_tokens=3,
        cost=(6 * 1.0 + 4 * 0.5 + 5 * 10.0) / 1e6,
    )


@pytest.mark.parametrize("size", [1, 2, 7])
def test_a_stream_split_anywhere_assembles_to_the_whole_answer(size: int) -> None:
    output = (said("Ünïcode ✓ text"), called("c1", "lookup", '{"q": "naïve ✓"}'))
    whole = FakeServer(answer(*output)).provider().infer(InferenceRequest())
    pieces_ = (
        FakeServer(streamed(*output, size=size)).provider(stream=True).infer(InferenceRequest())
    )
    assert pieces_ == whole


_texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_arguments = st.dictionaries(st.sampled_from(["q", "n", "ü"]), _texts | st.integers(), max_size=2)


@st.composite
def outputs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A message and up to three parallel calls, in any order."""
    items: list[dict[str, Any]] = [said(draw(_texts.filter(str.strip)))]
    for n in range(draw(st.integers(0, 3))):
        arguments = json.dumps(draw(_arguments), ensure_ascii=draw(st.booleans()))
        items.append(called(f"call_{n}", f"tool_{n}", arguments, f"fc_{n}"))
    return draw(st.permutations(items))


@settings(max_examples=40, deadline=None)
@given(outputs(), st.integers(1, 5), st.booleans(), st.randoms(use_true_random=False))
def test_interleaved_streams_assemble_to_the_whole_answer(
    output: list[dict[str, Any]], size: int, done_events: bool, shuffle: Any
) -> None:
    """Each item's events stay in order, the items' events interleave at random; without
    ``output_item.done`` events the answer comes from the deltas alone."""
    body = response_body(*output)
    events = events_of(body, size)
    per_item: dict[int, list[dict[str, Any]]] = {}
    for event in events[1:-1]:
        if done_events or event["type"] != "response.output_item.done":
            per_item.setdefault(event["output_index"], []).append(event)
    merged = []
    while per_item:
        index = shuffle.choice(sorted(per_item))
        merged.append(per_item[index].pop(0))
        if not per_item[index]:
            del per_item[index]
    finished = {**events[-1], "response": {**body, "output": []}}  # no output at the end
    stream = sse(events[0], *merged, finished)
    whole = FakeServer(answer(*output)).provider().infer(InferenceRequest())
    assert FakeServer(stream).provider(stream=True).infer(InferenceRequest()) == whole


def test_parallel_calls_are_assembled_by_output_index_when_their_deltas_interleave() -> None:
    first, second = called("a", "lookup", "", "fc_a"), called("b", "lookup", "", "fc_b")
    events = [
        {"type": "response.created", "response": response_body(status="in_progress", usage=None)},
        {"type": "response.output_item.added", "output_index": 0, "item": first},
        {"type": "response.output_item.added", "output_index": 1, "item": second},
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 1,
            "item_id": "fc_b",
            "delta": '{"q": ',
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": "fc_a",
            "delta": '{"q"',
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 1,
            "item_id": "fc_b",
            "delta": '"y"}',
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": "fc_a",
            "delta": ': "x"}',
        },
        {"type": "response.completed", "response": response_body(usage=None)},
    ]
    response = FakeServer(sse(*events)).provider(stream=True).infer(InferenceRequest())
    assert response.tool_calls == (
        ToolCall(id="a", name="lookup", arguments={"q": "x"}),
        ToolCall(id="b", name="lookup", arguments={"q": "y"}),
    )
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.usage == Usage()


def test_a_stream_that_ends_without_completing_is_accepted() -> None:
    events = events_of(response_body(said("partial")))[:-1]
    response = FakeServer(sse(*events)).provider(stream=True).infer(InferenceRequest())
    assert (response.content, response.finish_reason) == ("partial", FinishReason.STOP)
    assert response.usage == Usage()


def test_the_assembler_takes_events_one_at_a_time() -> None:
    from agentrig.drivers.openai_responses import ResponseAssembler

    provider = FakeServer(streamed(said("Hello there"), size=4)).provider()
    assembler = ResponseAssembler()
    texts = []
    with provider.client.responses.create(model="m", input="x", stream=True) as events:
        for event in events:
            assembler.feed(event)
            texts.append(assembler.text()[0])
    assert texts[-1] == "Hello there"
    # the text so far, after each delta
    assert "Hell" in texts
    assert "Hello th" in texts


@pytest.mark.parametrize(
    ("output", "fields", "finish"),
    [
        ((said("done"),), {}, FinishReason.STOP),
        (
            (said("cut"),),
            {"status": "incomplete", "incomplete": "max_output_tokens"},
            FinishReason.LENGTH,
        ),
        (
            (said("cut"),),
            {"status": "incomplete", "incomplete": "content_filter"},
            FinishReason.CONTENT_FILTER,
        ),
        (
            (said("cut"),),
            {"status": "incomplete", "incomplete": "max_messages"},
            FinishReason.OTHER,
        ),
        ((refused("I can't help."),), {}, FinishReason.CONTENT_FILTER),
        (
            (refused("I can't"),),
            {"status": "incomplete", "incomplete": "max_output_tokens"},
            FinishReason.LENGTH,
        ),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_finish_reasons(
    output: tuple[dict[str, Any], ...], fields: dict[str, Any], finish: FinishReason, stream: bool
) -> None:
    reply = streamed(*output, **fields) if stream else answer(*output, **fields)
    response = FakeServer(reply).provider(stream=stream).infer(InferenceRequest())
    assert response.finish_reason is finish
    assert response.content == ("done" if finish is FinishReason.STOP else response.content)
    if fields:
        assert response.provider_data["incomplete_reason"] == fields["incomplete"]


def test_a_sparse_answer_from_a_compatible_server_is_read() -> None:
    # no id, model, status or usage; a content part without a type; a call without an id
    sparse = {
        "output": [
            {"type": "message", "content": [{"text": "On it."}]},
            {"type": "function_call", "name": "lookup", "arguments": '{"q": "x"}'},
        ]
    }
    response = FakeServer(httpx2.Response(200, json=sparse)).provider().infer(InferenceRequest())
    assert response.content == "On it."
    ((call),) = response.tool_calls
    assert (call.name, call.arguments) == ("lookup", {"q": "x"})
    assert call.id
    assert (response.finish_reason, response.usage) == (FinishReason.TOOL_CALLS, Usage())
    assert (response.model, response.response_id, response.provider_data) == (
        "",
        "",
        {"status": None},
    )


@pytest.mark.parametrize("stream", [False, True])
def test_items_of_other_kinds_are_left_out(stream: bool) -> None:
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    output = (search, said("Found it."))
    reply = streamed(*output) if stream else answer(*output)
    response = FakeServer(reply).provider(stream=stream).infer(InferenceRequest())
    assert (response.content, response.tool_calls) == ("Found it.", ())
    assert response.provider_data == {"status": "completed"}


@pytest.mark.parametrize("stream", [False, True])
def test_a_refusal_is_the_content(stream: bool) -> None:
    reply = streamed(refused("I can't help.")) if stream else answer(refused("I can't help."))
    response = FakeServer(reply).provider(stream=stream).infer(InferenceRequest())
    assert response.content == "I can't help."
    assert response.provider_data == {"status": "completed"}


def test_malformed_arguments_reach_the_tool_as_a_failed_call_and_go_back_verbatim(
    run_agent: Callable[..., AgentState],
) -> None:
    server = FakeServer(answer(called("c1", "lookup", '{"q": ')), answer(said("sorry")))
    final = run_agent(server.provider(), "go", [lookup])
    execution = final.steps()[0].tool_executions[0]
    assert execution.content.startswith("Error in tool call")
    assert server.bodies[1]["input"][1]["arguments"] == '{"q": '
    assert final.final_response().to_text() == "sorry"


def test_a_call_without_a_name_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="tool call 0 without a name"):
        FakeServer(answer(called("c1", "", "{}"))).provider().infer(InferenceRequest())


# --- errors ---------------------------------------------------------------------------------


def error_reply(status: int) -> Any:
    return httpx2.Response(status, json={"error": {"message": "nope", "type": "x"}})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("status", "retryable", "advice"),
    [
        (400, False, "fix the request"),
        (401, False, "OPENAI_API_KEY"),
        (404, False, "model name"),
        (429, True, "rate limited"),
        (500, True, "retry later"),
    ],
)
def test_http_errors_become_provider_errors(
    mode: str, status: int, retryable: bool, advice: str
) -> None:
    with pytest.raises(ProviderError) as raised:
        infer(FakeServer(error_reply(status)), InferenceRequest(), mode)
    error = raised.value
    assert (error.status_code, error.retryable, error.provider) == (status, retryable, "openai")
    assert advice in str(error)


@pytest.mark.parametrize("mode", MODES)
def test_a_connection_failure_is_retryable_and_names_the_cause(mode: str) -> None:
    def refuse(request: Any) -> Any:
        raise httpx2.ConnectError("connection refused")

    with pytest.raises(ProviderError, match="connection refused") as raised:
        infer(FakeServer(refuse), InferenceRequest(), mode)
    assert raised.value.retryable
    assert raised.value.status_code is None


def failure(code: str, message: str) -> dict[str, Any]:
    body = response_body(said("partial"), status="failed")
    return {**body, "error": {"code": code, "message": message}}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("code", "retryable"),
    [("server_error", True), ("rate_limit_exceeded", True), ("invalid_prompt", False)],
)
def test_a_failed_response_is_a_provider_error(mode: str, code: str, retryable: bool) -> None:
    events = [*events_of(response_body(said("partial")))[:-1]]
    events.append({"type": "response.failed", "response": failure(code, "it broke")})
    for reply, stream in (
        (sse(*events), True),
        (httpx2.Response(200, json=failure(code, "it broke")), False),
    ):
        with pytest.raises(ProviderError, match="it broke") as raised:
            infer(FakeServer(reply), InferenceRequest(), mode, stream=stream)
        assert raised.value.retryable is retryable
        assert code in str(raised.value)


@pytest.mark.parametrize(("code", "retryable"), [(429, True), (400, False)])
def test_an_error_body_answered_with_status_200_keeps_its_message(
    code: int, retryable: bool
) -> None:
    # OpenRouter answers some upstream failures this way.
    reply = httpx2.Response(
        200, json={"error": {"message": "Provider returned error", "code": code}}
    )
    with pytest.raises(ProviderError, match="Provider returned error") as raised:
        FakeServer(reply).provider().infer(InferenceRequest())
    assert raised.value.retryable is retryable


@pytest.mark.parametrize(("code", "retryable"), [("server_error", True), ("invalid_prompt", False)])
def test_an_error_event_is_a_provider_error(code: str, retryable: bool) -> None:
    events = events_of(response_body(said("partial")))[:2]
    events.append({"type": "error", "code": code, "message": "stream broke", "param": None})
    with pytest.raises(ProviderError, match="stream broke") as raised:
        FakeServer(sse(*events)).provider(stream=True).infer(InferenceRequest())
    assert raised.value.retryable is retryable


class _Dropped(httpx2.SyncByteStream):
    """A streamed body that breaks after its first event."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def __iter__(self) -> Iterator[bytes]:
        first = events_of(response_body(said("x")))[0]
        yield f"event: {first['type']}\ndata: {json.dumps({**first, 'sequence_number': 0})}\n\n".encode()
        raise self.error


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (httpx2.RemoteProtocolError("peer closed connection"), "peer closed connection"),
        (httpx2.ReadTimeout("timed out"), "timed out"),
    ],
)
def test_a_stream_cut_off_midway_is_retryable(error: Exception, says: str) -> None:
    reply = httpx2.Response(
        200, stream=_Dropped(error), headers={"content-type": "text/event-stream"}
    )
    with pytest.raises(ProviderError, match=says) as raised:
        FakeServer(reply).provider(stream=True).infer(InferenceRequest())
    assert raised.value.retryable


@pytest.mark.parametrize("mode", MODES)
def test_a_stream_without_any_event_is_an_error_not_an_empty_answer(mode: str) -> None:
    with pytest.raises(ProviderError, match="stream=False"):
        infer(FakeServer(answer(said("hello"))), InferenceRequest(), mode, stream=True)


def test_an_html_page_instead_of_json_says_to_check_base_url() -> None:
    page = httpx2.Response(
        200, content=b"<html>Welcome</html>", headers={"content-type": "text/html"}
    )
    with pytest.raises(ProviderError, match="base_url") as raised:
        FakeServer(page).provider().infer(InferenceRequest())
    assert not raised.value.retryable


# --- reasoning across a tool loop -----------------------------------------------------------


@tool
def lookup(q: str) -> str:
    """Look up."""
    return q.upper()


REASONING_KEPT = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Look it up."}],
    "encrypted_content": "enc-1",
}


def reasoning_loop(stream: bool) -> tuple[Any, Any]:
    first = (reasoned("rs_1", "Look it up.", "enc-1"), called("c1", "lookup", '{"q": "x"}'))
    final = (reasoned("rs_2", "", "enc-2"), said("It is X."))
    if stream:
        return streamed(*first), streamed(*final)
    return answer(*first), answer(*final)


@pytest.mark.parametrize("mode", MODES)
def test_a_streamed_reasoning_summary_comes_as_reasoning_pieces_before_the_text(
    mode: str, drained: Callable[..., tuple[list[Delta], Any]]
) -> None:
    server = FakeServer(streamed(reasoned("rs_1", "Add them up."), said("4"), size=4))
    provider = server.provider(stream=True)
    request = InferenceRequest(messages=CONVERSATION)
    handed: list[Delta] = []
    if mode == "async":
        provider = server.async_provider(stream=True)

        async def drain() -> InferenceResponse:
            response: InferenceResponse | None = None
            async for item in provider.ainfer_stream(request):
                if isinstance(item, Delta):
                    handed.append(item)
                else:
                    response = item
            assert response is not None
            return response

        response = asyncio.run(drain())
    else:
        handed, response = drained(provider.infer_stream(request))
    assert [(d.reasoning, d.text) for d in handed] == [
        ("Add ", ""),
        ("them", ""),
        (" up.", ""),
        ("", "4"),
    ]
    assert response.reasoning_content == "Add them up."
    assert response.content == "4"


@pytest.mark.parametrize("stream", [False, True])
def test_the_next_request_sends_the_reasoning_items_back_before_the_calls(
    run_agent: Callable[..., AgentState], stream: bool
) -> None:
    server = FakeServer(*reasoning_loop(stream))
    final = run_agent(server.provider(stream=stream), "Look up x", [lookup], system="Be brief.")
    assert final.errors() == ()
    assert final.final_response().to_text() == "It is X."
    assert server.bodies[1]["instructions"] == "Be brief."
    assert server.bodies[1]["input"] == [
        {"role": "user", "content": "Look up x"},
        REASONING_KEPT,
        {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"q": "x"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "X"},
    ]
    assistant = final.steps()[0].output_messages[0]
    assert assistant.provider_data["openai_reasoning"] == [REASONING_KEPT]
    assert final.steps()[1].output_messages[0].provider_data["openai_reasoning"][0]["id"] == "rs_2"
    assert AgentState.from_json(final.to_json()) == final


@pytest.mark.parametrize(("store", "sent"), [(False, 0), (True, 1)])
def test_reasoning_without_encrypted_content_goes_back_only_when_stored(
    store: bool, sent: int
) -> None:
    assistant = Message.assistant("", [ToolCall(id="c1", name="f")]).evolve(
        provider_data={"openai_reasoning": [{"type": "reasoning", "id": "rs_9", "summary": []}]}
    )
    provider = OpenAIResponsesProvider(client=object(), model="m", store=store)
    body = provider.request_body(
        InferenceRequest(messages=Messages.of(Message.user("x"), assistant))
    )
    assert sum(item.get("type") == "reasoning" for item in body["input"]) == sent


@pytest.mark.parametrize(
    ("kept", "field", "says"),
    [
        ("not items", "", "expected a list of reasoning items, got str"),
        ([{"type": "message"}], "[0]", "expected a dict with type 'reasoning'"),
        ([{"type": "reasoning", "id": 3}], "[0].id", "needs a string id"),
        (
            [{"type": "reasoning", "id": "r", "encrypted_content": 1}],
            "[0].encrypted_content",
            "expected a string",
        ),
    ],
)
def test_malformed_reasoning_items_name_the_message_and_field(
    kept: Any, field: str, says: str
) -> None:
    assistant = Message.assistant("", [ToolCall(id="t1", name="f")]).evolve(
        provider_data={"openai_reasoning": kept}
    )
    request = InferenceRequest(
        messages=Messages.of(Message.system("s"), Message.user("x"), assistant)
    )
    provider = OpenAIResponsesProvider(client=object(), model="m")
    with pytest.raises(InvalidInputError) as raised:
        provider.request_body(request)
    assert raised.value.field == f"messages[2].provider_data.openai_reasoning{field}"
    assert says in str(raised.value)


# --- async ----------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_ainfer_gives_the_answer_infer_gives(stream: bool) -> None:
    def reply() -> Any:
        return streamed(*TOOL_ANSWER, size=1) if stream else answer(*TOOL_ANSWER)

    request = InferenceRequest(messages=CONVERSATION, tools=(LOOKUP,))
    sync, asynchronous = FakeServer(reply()), FakeServer(reply())
    expected = sync.provider(stream=stream).infer(request)
    provider = asynchronous.async_provider(stream=stream)
    got = run(provider.ainfer(request), provider)
    assert got == expected
    assert asynchronous.bodies == sync.bodies


@pytest.mark.parametrize("mode", MODES)
def test_a_real_call_is_blocked_at_once_in_both_paths(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentrig.harness.cassettes.network_block import block_real_llm_calls

    slept: list[float] = []

    async def no_sleep(delay: float, *args: Any) -> None:
        slept.append(delay)

    monkeypatch.setattr("time.sleep", slept.append)
    monkeypatch.setattr("asyncio.sleep", no_sleep)
    provider = OpenAIResponsesProvider(api_key="sk", base_url="http://llm.invalid:9/v1", model="m")
    request = InferenceRequest(messages=CONVERSATION)

    def send() -> Any:
        if mode == "async":
            return run(provider.ainfer(request), provider)
        return provider.infer(request)

    with block_real_llm_calls() as blocker, pytest.raises(RealLlmCallBlockedError):
        send()
    assert blocker.blocked == [("openai", "http://llm.invalid:9/v1/responses")]
    assert slept == []  # the SDK's own retries (2 by default) did not run


# --- replays of real recorded Responses API sessions --------------------------------------


@tool
def get_capital(country: str) -> str:
    """Get the capital of a country."""
    return {"PotatoLand": "Potato City"}[country]


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


PYDANTIC_TOOL_CALL = "pydantic-ai/test_openai_responses/test_openai_responses_model_simple_response_with_tool_call.yaml"
LLM_STREAMED = "llm/test_openai_responses/test_responses_tool_use_streaming.yaml"
PYDANTIC_HTTP_ERROR = (
    "pydantic-ai/test_openai_responses/test_openai_responses_model_http_error.yaml"
)
PRODUCT_TEXT = "1231 \u00d7 2331 = **2,869,461**"
LOW_EFFORT = LlmConfig(options={"reasoning": {"effort": "low"}})


def replay_provider(**options: Any) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(api_key="sk-replay", max_retries=0, **options)


def tool_calls(state: AgentState) -> list[str]:
    return [str(call) for step in state.steps() for call in step.inference_response.tool_calls]


def test_replay_a_function_call_then_text(
    real_cassette: Callable[[str], Path], run_agent: Callable[..., AgentState]
) -> None:
    prices = PriceTable({"gpt-4o": ModelPrice(input=2.5, output=10.0)})
    with http_cassettes.use_http_cassette(
        real_cassette(PYDANTIC_TOOL_CALL), ignore=FOREIGN
    ) as cassette:
        final = run_agent(
            replay_provider(model="gpt-4o", prices=prices),
            "What is the capital of PotatoLand?",
            [get_capital],
        )
    assert final.status() is ExecutionStatus.COMPLETED
    assert tool_calls(final) == ["get_capital(country='PotatoLand')"]
    assert [e.content for step in final.steps() for e in step.tool_executions] == ["Potato City"]
    assert final.final_response().to_text() == "The capital of PotatoLand is Potato City."
    assert [s.inference_response.finish_reason for s in final.steps()] == [
        FinishReason.TOOL_CALLS,
        FinishReason.STOP,
    ]
    assert final.steps()[0].inference_response.response_id == (
        "resp_04907f5d3de791830068fbaa19bb908195a91378279dba0f14"
    )
    assert final.steps()[-1].inference_response.model == "gpt-4o-2024-08-06"
    usage = final.usage()
    assert (usage.input_tokens, usage.output_tokens) == (40 + 67, 18 + 11)
    assert usage.cost == pytest.approx((107 * 2.5 + 29 * 10.0) / 1e6)
    assert cassette.play_count == 2


def test_replay_a_streamed_function_call_then_streamed_text(
    real_cassette: Callable[[str], Path], run_agent: Callable[..., AgentState]
) -> None:
    with http_cassettes.use_http_cassette(real_cassette(LLM_STREAMED), ignore=FOREIGN) as cassette:
        final = run_agent(
            replay_provider(model="gpt-5.5", stream=True),
            "What is 1231 * 2331? Use the multiply tool.",
            [multiply],
            llm_config=LOW_EFFORT,
        )
    assert final.status() is ExecutionStatus.COMPLETED
    assert tool_calls(final) == ["multiply(a=1231, b=2331)"]
    assert final.final_response().to_text() == PRODUCT_TEXT
    responses = [step.inference_response for step in final.steps()]
    assert [r.finish_reason for r in responses] == [FinishReason.TOOL_CALLS, FinishReason.STOP]
    assert [r.model for r in responses] == ["gpt-5.5-2026-04-23"] * 2
    assert [r.provider_data for r in responses] == [{"status": "completed"}] * 2
    usage = final.usage()
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (
        58 + 94,
        23 + 18,
        0,
    )
    assert cassette.play_count == 2
    # What the cassette recorded is what the provider sends: stateless, with encrypted reasoning.
    sent = json.loads(cassette.requests[0].body)
    assert (sent["store"], sent["include"]) == (False, ["reasoning.encrypted_content"])


def test_replay_an_http_error_answered_to_a_streamed_request(
    real_cassette: Callable[[str], Path], run_agent: Callable[..., AgentState]
) -> None:
    with http_cassettes.use_http_cassette(
        real_cassette(PYDANTIC_HTTP_ERROR), ignore=[*FOREIGN, "temperature"]
    ) as cassette:
        final = run_agent(
            replay_provider(model="gpt-4o", stream=True), "What is the capital of France?"
        )
    assert final.status() is ExecutionStatus.FAILED
    (error,) = final.errors()
    assert error.type == "ProviderError"
    assert "HTTP 400" in error.message
    assert "decimal below minimum value" in error.message
    assert cassette.play_count == 1


def test_an_http_error_replayed_is_not_retryable(real_cassette: Callable[[str], Path]) -> None:
    request = InferenceRequest(messages=Messages.from_text("What is the capital of France?"))
    with (
        http_cassettes.use_http_cassette(
            real_cassette(PYDANTIC_HTTP_ERROR), ignore=[*FOREIGN, "temperature"]
        ),
        pytest.raises(ProviderError) as raised,
    ):
        replay_provider(model="gpt-4o", stream=True).infer(request)
    assert (raised.value.status_code, raised.value.retryable) == (400, False)


@pytest.mark.parametrize(
    ("relative", "stream", "config", "question", "function", "arguments", "result", "final_text"),
    [
        (
            PYDANTIC_TOOL_CALL,
            False,
            None,
            "What is the capital of PotatoLand?",
            get_capital,
            {"country": "PotatoLand"},
            "Potato City",
            "The capital of PotatoLand is Potato City.",
        ),
        (
            LLM_STREAMED,
            True,
            LOW_EFFORT,
            "What is 1231 * 2331? Use the multiply tool.",
            multiply,
            {"a": 1231, "b": 2331},
            "2869461",
            PRODUCT_TEXT,
        ),
    ],
)
def test_ainfer_replays_the_real_sessions(
    real_cassette: Callable[[str], Path],
    relative: str,
    stream: bool,
    config: LlmConfig | None,
    question: str,
    function: Any,
    arguments: dict[str, Any],
    result: str,
    final_text: str,
) -> None:
    model = "gpt-4o" if relative == PYDANTIC_TOOL_CALL else "gpt-5.5"
    provider = replay_provider(model=model, stream=stream)
    schema = function.schema()

    async def tool_loop() -> tuple[Any, Any]:
        asked = Messages.from_text(question)
        first = await provider.ainfer(
            InferenceRequest(messages=asked, tools=(schema,), llm_config=config)
        )
        (call,) = first.tool_calls
        answered = Messages.of(
            *asked,
            Message.assistant(first.content, first.tool_calls),
            Message.tool(ToolResult(content=result, call_id=call.id, tool_name=call.name)),
        )
        second = await provider.ainfer(
            InferenceRequest(messages=answered, tools=(schema,), llm_config=config)
        )
        return first, second

    with http_cassettes.use_http_cassette(real_cassette(relative), ignore=FOREIGN) as cassette:
        first, second = run(tool_loop(), provider)
    assert first.tool_calls[0].arguments == arguments
    assert second.content == final_text
    assert cassette.play_count == 2


def test_a_real_session_replayed_over_http_records_an_inference_cassette_that_replays(
    real_cassette: Callable[[str], Path], run_agent: Callable[..., AgentState], tmp_path: Path
) -> None:
    cassettes = pytest.importorskip("agentrig.harness.cassettes")
    path = tmp_path / "multiply.yaml"
    question = "What is 1231 * 2331? Use the multiply tool."
    provider = replay_provider(model="gpt-5.5", stream=True)
    recorder = cassettes.cassette_provider(path, provider, mode="once")
    with http_cassettes.use_http_cassette(real_cassette(LLM_STREAMED), ignore=FOREIGN):
        recorded = run_agent(recorder, question, [multiply], llm_config=LOW_EFFORT)
    replayer = cassettes.cassette_provider(path, mode="none")
    replayed = run_agent(replayer, question, [multiply], llm_config=LOW_EFFORT)
    replayer.assert_complete()
    assert replayed == recorded
    assert replayed.final_response().to_text() == PRODUCT_TEXT


# --- its own traffic through both cassette layers ----------------------------------------


def loop_server(stream: bool) -> FakeServer:
    first = (
        reasoned("rs_1", "Look both up.", "enc-1"),
        called("c1", "lookup", '{"q": "x"}', "fc_1"),
        called("c2", "lookup", '{"q": "y"}', "fc_2"),
    )
    final = (reasoned("rs_2", "", "enc-2"), said("X and Y."))
    if stream:
        return FakeServer(streamed(*first), streamed(*final))
    return FakeServer(answer(*first), answer(*final))


@pytest.mark.parametrize("stream", [False, True])
def test_a_run_recorded_with_the_inference_cassettes_replays_the_same_run(
    run_agent: Callable[..., AgentState], tmp_path: Path, stream: bool
) -> None:
    cassettes = pytest.importorskip("agentrig.harness.cassettes")
    path = tmp_path / "responses.yaml"
    server = loop_server(stream)
    recorder = cassettes.cassette_provider(path, server.provider(stream=stream), mode="once")
    recorded = run_agent(recorder, "Look up x and y", [lookup], llm_config=LOW_EFFORT)
    assert recorded.final_response().to_text() == "X and Y."
    replayer = cassettes.cassette_provider(path, mode="none")
    replayed = run_agent(replayer, "Look up x and y", [lookup], llm_config=LOW_EFFORT)
    replayer.assert_complete()
    assert replayed == recorded
    assistant = replayed.steps()[0].output_messages[0]
    assert assistant.provider_data["openai_reasoning"][0]["encrypted_content"] == "enc-1"


@pytest.mark.parametrize("stream", [False, True])
def test_a_run_recorded_over_http_replays_through_the_sdk(
    run_agent: Callable[..., AgentState], tmp_path: Path, stream: bool
) -> None:
    path = tmp_path / "responses_http.yaml"
    server = loop_server(stream)
    with http_cassettes.use_http_cassette(path, record_mode="once"):
        recorded = run_agent(
            server.provider(stream=stream), "Look up x and y", [lookup], llm_config=LOW_EFFORT
        )
    assert recorded.final_response().to_text() == "X and Y."
    text = path.read_text()
    assert "/v1/responses" in text
    assert "sk-test" not in text  # the API key header is filtered out
    replay = OpenAIResponsesProvider(
        api_key="sk-replay", base_url=BASE_URL, max_retries=0, model="gpt-test", stream=stream
    )
    with http_cassettes.use_http_cassette(path) as cassette:
        replayed = run_agent(replay, "Look up x and y", [lookup], llm_config=LOW_EFFORT)
    assert cassette.play_count == 2
    assert replayed == recorded
    # The recorded second request carried the reasoning item back (the matcher ignores it).
    sent = json.loads(cassette.requests[1].body)
    assert sent["input"][1] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Look both up."}],
        "encrypted_content": "enc-1",
    }


def test_a_replay_whose_conversation_differs_is_a_mismatch(
    run_agent: Callable[..., AgentState], tmp_path: Path
) -> None:
    path = tmp_path / "responses_http.yaml"
    with http_cassettes.use_http_cassette(path, record_mode="once"):
        run_agent(loop_server(False).provider(), "Look up x and y", [lookup])
    replay = OpenAIResponsesProvider(
        api_key="sk-replay", base_url=BASE_URL, max_retries=0, model="gpt-test"
    )
    with (
        pytest.raises(http_cassettes.HttpCassetteMismatchError, match="conversation item 1"),
        http_cassettes.use_http_cassette(path),
    ):
        run_agent(replay, "Look up z", [lookup])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": None},
        {"output_tokens": None},
        {"input_tokens_details": [1]},
        {"input_tokens": -1},
        {"input_tokens": "ten"},
        {"output_tokens": 10**30},
        {"output_tokens": 1.5},
        {"input_tokens_details": {"cached_tokens": -3}},
        {"input_tokens_details": {"cache_write_tokens": "x"}},
        {"output_tokens_details": {"reasoning_tokens": "x"}},
    ],
)
def test_a_malformed_usage_is_a_provider_error(
    usage: dict[str, Any], stream: bool, mode: str
) -> None:
    fields = {"usage": {**USAGE, **usage}}
    server = FakeServer(streamed(said("hi"), **fields) if stream else answer(said("hi"), **fields))
    with pytest.raises(ProviderError, match="malformed usage") as raised:
        infer(server, InferenceRequest(messages=CONVERSATION), mode, stream=stream)
    assert raised.value.provider == "openai"
    assert not isinstance(raised.value, InvalidInputError)
