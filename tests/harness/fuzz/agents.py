"""Small agents on the raw ``openai`` SDK for the fuzzing tests: each runs one user turn and
returns the answer; ``bug`` plants one crash."""

from __future__ import annotations

import json
from typing import Any

import openai
from openai import OpenAI

PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"],
}
TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}},
    {
        "type": "function",
        "function": {
            "name": "book_flight",
            "parameters": {
                "type": "object",
                "properties": {"to": {"type": "string", "enum": ["PAR", "OSL"]}},
                "required": ["to"],
            },
        },
    },
]


def client_of(ep: Any) -> OpenAI:
    """An SDK client on the endpoint, without retries of its own."""
    return OpenAI(
        base_url=ep.openai_base_url,
        api_key=ep.api_key,
        http_client=ep.httpx2_client(),
        max_retries=0,
    )


def run_tool(name: str, arguments: str) -> str:
    """The agent's tools, answering an error for what they cannot run."""
    try:
        args = json.loads(arguments)
    except ValueError:
        return "error: arguments are not JSON"
    if name == "get_weather" and isinstance(args, dict) and isinstance(args.get("city"), str):
        return f"sunny in {args['city']}"
    if name == "book_flight" and isinstance(args, dict):
        return "booked"
    return f"error: cannot run {name}"


def weather(ep: Any, prompt: str, *, bug: str = "", tools: list[Any] = TOOLS) -> str:
    """Loops until the model answers without calls; returns a fallback text on API errors."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    with client_of(ep) as client:
        for _ in range(10):
            try:
                message = (
                    client.chat.completions.create(model="gpt", messages=messages, tools=tools)
                    .choices[0]
                    .message
                )
            except openai.RateLimitError:
                if bug == "rate_limit":
                    raise
                continue
            except openai.APITimeoutError as error:
                if bug == "timeout":
                    raise TimeoutError("the model took too long") from error
                return "unavailable"
            except openai.APIError:
                return "unavailable"
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                if bug == "refusal":
                    return message.content.upper()  # type: ignore[union-attr]
                if bug == "empty":
                    return message.content[0]  # type: ignore[index]
                return message.content or message.refusal or ""
            calls = message.tool_calls
            if bug == "parallel_calls" and len(calls) > 1:
                raise ValueError("one call at a time")
            for call in calls:
                function = call.function  # type: ignore[union-attr]
                if bug == "not_json":
                    json.loads(function.arguments)
                result = run_tool(function.name, function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "gave up"


def correct(ep: Any, prompt: str) -> str:
    """No known bug."""
    return weather(ep, prompt)


def crash_on_refusal(ep: Any, prompt: str) -> str:
    """``content.upper()``: ``None`` on a refusal."""
    return weather(ep, prompt, bug="refusal")


def crash_on_parallel_calls(ep: Any, prompt: str) -> str:
    """Raises on more than one call in an answer."""
    return weather(ep, prompt, bug="parallel_calls")


def crash_on_empty_answer(ep: Any, prompt: str) -> str:
    """Returns the answer's first character: ``IndexError`` on an answer of no text."""
    return weather(ep, prompt, bug="empty")


def crash_on_timeout(ep: Any, prompt: str) -> str:
    """Turns the SDK's timeout error into a ``TimeoutError``, which escapes."""
    return weather(ep, prompt, bug="timeout")


def no_tools(ep: Any, prompt: str) -> str:
    """Offers no tools."""
    return weather(ep, prompt, tools=[])


def silent(ep: Any, prompt: str) -> str:
    """Never reaches the endpoint."""
    return "hello"


def loops(ep: Any, prompt: str) -> str:
    """Asks the model again and again, whatever it answers."""
    with client_of(ep) as client:
        while True:
            try:
                client.chat.completions.create(
                    model="gpt", messages=[{"role": "user", "content": prompt}]
                )
            except openai.APIError:
                return "stopped"


def asks(times: int) -> tuple[list[Any], Any]:
    """An agent that asks the model up to ``times`` times, whatever it answers, and stops at the
    first error; what it got (answers' texts, then the error's status) is in the list."""
    got: list[Any] = []

    def agent(ep: Any, prompt: str) -> str:
        with client_of(ep) as client:
            for _ in range(times):
                try:
                    answer = client.chat.completions.create(
                        model="gpt", messages=[{"role": "user", "content": prompt}]
                    )
                except openai.APIStatusError as error:
                    got.append(error.status_code)
                    return "stopped"
                got.append(answer.choices[0].message.content)
        return "gave up"

    return got, agent
