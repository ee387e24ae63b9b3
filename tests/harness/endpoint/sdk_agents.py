"""Minimal agents on the official SDKs, as a user would write them: each runs one user turn
to the end, calling a local get_weather tool, and returns the final text."""

from __future__ import annotations

import json
from typing import Any

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
