"""Minimal agents on the official SDKs, as a user would write them: each runs one user turn
to the end, calling a local get_weather tool, and returns the final text. Also the SDK clients
and agentrig's own providers pointed at an endpoint handle."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import agentrig as ar
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.results import Failure

SYSTEM = "You answer weather questions."
PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def get_weather(city: str) -> str:
    """The agent's own tool."""
    return f"sunny in {city}"


def _run_tool(name: str, arguments: str | dict[str, Any]) -> str:
    args = json.loads(arguments) if isinstance(arguments, str) else arguments
    assert name == "get_weather"
    return get_weather(**args)


CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}]


def chat_agent(client: Any, messages: list[dict[str, Any]], *, stream: bool = False) -> str:
    """OpenAI Chat Completions: loops until the model answers without tool calls."""
    while True:
        if stream:
            text, calls = "", {}
            chunks = client.chat.completions.create(
                model="gpt-test",
                messages=messages,
                tools=CHAT_TOOLS,
                stream=True,
                stream_options={"include_usage": True},
            )
            for chunk in chunks:
                for choice in chunk.choices:
                    text += choice.delta.content or ""
                    for delta in choice.delta.tool_calls or ():
                        entry = calls.setdefault(delta.index, {"id": "", "name": "", "args": ""})
                        entry["id"] = delta.id or entry["id"]
                        entry["name"] = (
                            (delta.function.name or entry["name"])
                            if delta.function
                            else entry["name"]
                        )
                        entry["args"] += (delta.function.arguments or "") if delta.function else ""
            tool_calls = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["args"]},
                }
                for _, c in sorted(calls.items())
            ]
        else:
            message = (
                client.chat.completions.create(
                    model="gpt-test", messages=messages, tools=CHAT_TOOLS
                )
                .choices[0]
                .message
            )
            text = message.content or ""
            tool_calls = [call.model_dump() for call in message.tool_calls or ()]
        assistant: dict[str, Any] = {"role": "assistant", "content": text or None}
        if tool_calls:
            assistant["tool_calls"] = tool_calls
        messages.append(assistant)
        if not tool_calls:
            return text
        for call in tool_calls:
            result = _run_tool(call["function"]["name"], call["function"]["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})


RESPONSES_TOOLS = [
    {"type": "function", "name": "get_weather", "parameters": PARAMETERS, "strict": False}
]


def responses_agent(client: Any, items: list[Any], *, stream: bool = False) -> str:
    """OpenAI Responses: loops until the model answers without function calls."""
    while True:
        options = {
            "model": "gpt-test",
            "instructions": SYSTEM,
            "input": items,
            "tools": RESPONSES_TOOLS,
        }
        if stream:
            with client.responses.stream(**options) as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(**options)
        calls = [item for item in response.output if item.type == "function_call"]
        items.extend(item.model_dump(exclude_none=True) for item in response.output)
        if not calls:
            return str(response.output_text)
        for call in calls:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": _run_tool(call.name, call.arguments),
                }
            )


ANTHROPIC_TOOLS = [{"name": "get_weather", "input_schema": PARAMETERS}]


def anthropic_agent(client: Any, messages: list[dict[str, Any]], *, stream: bool = False) -> str:
    """Anthropic Messages: loops until the model stops for another reason than tool use."""
    while True:
        options = {
            "model": "claude-test",
            "max_tokens": 256,
            "system": SYSTEM,
            "messages": messages,
            "tools": ANTHROPIC_TOOLS,
        }
        if stream:
            with client.messages.stream(**options) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**options)
        messages.append(
            {
                "role": "assistant",
                "content": [block.model_dump(exclude_none=True) for block in message.content],
            }
        )
        uses = [block for block in message.content if block.type == "tool_use"]
        if message.stop_reason != "tool_use":
            return "".join(block.text for block in message.content if block.type == "text")
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": use.id,
                        "content": _run_tool(use.name, use.input),
                    }
                    for use in uses
                ],
            }
        )


GEMINI_DECLARATION = {"name": "get_weather", "parameters": {**PARAMETERS, "type": "OBJECT"}}


def gemini_agent(client: Any, *, stream: bool = False, thoughts: bool = False) -> str:
    """Gemini (google-genai): loops until the model answers without function calls, sending each
    answer back as it came (its thought signatures with it) and a result per call; asks to see
    the model's thoughts when ``thoughts``."""
    from google.genai import types

    config = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=[types.Tool(function_declarations=[GEMINI_DECLARATION])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        thinking_config=types.ThinkingConfig(include_thoughts=True) if thoughts else None,
    )
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="Weather in Paris?")])]
    while True:
        options = {"model": "gemini-test", "contents": contents, "config": config}
        if stream:
            parts = [
                part
                for chunk in client.models.generate_content_stream(**options)
                for part in chunk.candidates[0].content.parts or ()
            ]
            content = types.Content(role="model", parts=parts)
        else:
            content = client.models.generate_content(**options).candidates[0].content
        contents.append(content)
        calls = [part.function_call for part in content.parts or () if part.function_call]
        if not calls:
            return "".join(p.text or "" for p in content.parts or () if not p.thought)
        results = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=call.id, name=call.name, response={"result": _run_tool(call.name, call.args)}
                )
            )
            for call in calls
        ]
        contents.append(types.Content(role="user", parts=results))


# --- clients and providers pointed at an endpoint -------------------------------------------


def _sdk_client(kind: Any, handle: EndpointHandle, base_url: str, *, asynchronous: bool) -> Any:
    """An SDK client of class ``kind`` on the handle: in-process, or over loopback when live."""
    if handle.live:
        http_client = None
    else:
        http_client = handle.async_httpx2_client() if asynchronous else handle.httpx2_client()
    return kind(api_key=handle.api_key, base_url=base_url, http_client=http_client, max_retries=0)


def openai_client(handle: EndpointHandle) -> Any:
    """``openai.OpenAI`` on the handle."""
    import openai

    return _sdk_client(openai.OpenAI, handle, handle.openai_base_url, asynchronous=False)


def async_openai_client(handle: EndpointHandle) -> Any:
    """``openai.AsyncOpenAI`` on the handle."""
    import openai

    return _sdk_client(openai.AsyncOpenAI, handle, handle.openai_base_url, asynchronous=True)


def anthropic_client(handle: EndpointHandle) -> Any:
    """``anthropic.Anthropic`` on the handle."""
    import anthropic

    return _sdk_client(anthropic.Anthropic, handle, handle.anthropic_base_url, asynchronous=False)


def async_anthropic_client(handle: EndpointHandle) -> Any:
    """``anthropic.AsyncAnthropic`` on the handle."""
    import anthropic

    return _sdk_client(
        anthropic.AsyncAnthropic, handle, handle.anthropic_base_url, asynchronous=True
    )


def genai_ssl_options() -> dict[str, Any]:
    """``HttpOptions`` fields that give google-genai agentrig's shared SSL context: without
    them each ``genai.Client`` loads the certificates twice (about 40 ms CPU), for servers it
    reaches over plain HTTP."""
    from agentrig.drivers.network import shared_ssl_context

    ssl_context = shared_ssl_context()
    return {"client_args": {"verify": ssl_context}, "async_client_args": {"ssl": ssl_context}}


def gemini_client(handle: EndpointHandle, *, attempts: int = 0) -> Any:
    """``google.genai.Client`` on the handle (sync and async), retrying ``attempts`` times
    with a back-off of 10 ms (0: it never retries, the SDK's default)."""
    from google.genai import Client, types

    options: dict[str, Any] = {"base_url": handle.gemini_base_url, **genai_ssl_options()}
    if not handle.live:
        options["httpx_client"] = handle.httpx_client()
        options["httpx_async_client"] = handle.async_httpx_client()
    if attempts:
        options["retry_options"] = types.HttpRetryOptions(
            attempts=attempts + 1, initial_delay=0.01, max_delay=0.01, jitter=0
        )
    return Client(api_key=handle.api_key, http_options=types.HttpOptions(**options))


def agentrig_provider(
    name: str, handle: EndpointHandle, *, model: str = "", stream: bool = False
) -> Any:
    """agentrig's provider of API ``name`` (``openai`` or ``chat``, ``responses``,
    ``anthropic``) on the handle, with sync and async clients."""
    from agentrig.drivers import AnthropicProvider, OpenAIProvider, OpenAIResponsesProvider

    if name == "anthropic":
        return AnthropicProvider(
            client=anthropic_client(handle),
            async_client=async_anthropic_client(handle),
            model=model or "claude-test",
            stream=stream,
        )
    kind = OpenAIResponsesProvider if name == "responses" else OpenAIProvider
    return kind(
        client=openai_client(handle),
        async_client=async_openai_client(handle),
        model=model or "gpt-test",
        stream=stream,
    )


def weather_agent(provider: Any, **guards: Any) -> ar.AgentLoop:
    """An agentrig agent with the get_weather tool and the weather system prompt on
    ``provider``; ``guards`` go to ``UseGuards``."""
    builder = (
        ar.AgentBuilder.base()
        .with_tools([ar.FunctionTool(get_weather)])
        .with_capability(ar.UseLlmConfig(provider))
        .with_capability(ar.UseContextConfig(SYSTEM))
    )
    if guards:
        builder.with_capability(ar.UseGuards(**guards))
    return builder.build()


# --- reasoning sent back (the tests of think: and think: {redacted: true}) ----------------------


def first_turn() -> list[dict[str, Any]]:
    """The weather scenarios' first user message, as the chat-shaped APIs take it."""
    return [{"role": "user", "content": "Weather in Paris?"}]


def reasoning_violations(handle: EndpointHandle) -> list[Failure]:
    """The session's ``reasoning_sent_back`` failures (ends the session)."""
    return [f for f in handle.result().failures if f.invariant == "reasoning_sent_back"]


def reasoning_outcome(handle: EndpointHandle) -> tuple[int, int]:
    """Checks and failures of ``reasoning_sent_back`` in a session that passed (ends it)."""
    result = handle.check()
    return {o.name: (o.checks, o.failures) for o in result.invariants}["reasoning_sent_back"]


def anthropic_round_trip(handle: EndpointHandle, change: Callable[[dict[str, Any]], Any]) -> None:
    """One tool round trip on the raw Messages API, the answer's first block (its thinking, if
    it reasoned) changed by ``change``, which returns the block to send back instead, a list of
    blocks, or None to drop it."""
    client = anthropic_client(handle)
    messages = first_turn()
    first = client.messages.create(model="claude-test", max_tokens=256, messages=messages)
    blocks = [block.model_dump(exclude_none=True) for block in first.content]
    changed = change(blocks[0])
    sent = [*(changed if isinstance(changed, list) else [changed]), *blocks[1:]]
    messages += [
        {"role": "assistant", "content": [block for block in sent if block is not None]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": blocks[-1]["id"], "content": "sun"}],
        },
    ]
    client.messages.create(model="claude-test", max_tokens=256, messages=messages)
