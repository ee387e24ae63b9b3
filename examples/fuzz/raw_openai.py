"""A weather agent on the raw ``openai`` SDK (Chat Completions), and six copies of it that
each carry one bug a misbehaving model reveals. ``agentrig fuzz`` finds each (see
docs/fuzz-any-agent.md)::

    cd examples/fuzz
    agentrig fuzz raw_openai:crash_on_refusal --prompt "Weather in Paris?"

Each function is ``agent(ep, prompt)``: it builds its client from the endpoint handle and
returns the agent's answer. ``agent`` is the correct one: it answers every call (an error
result for a call it cannot run), and says so when the model cannot be reached.
"""

from __future__ import annotations

import json
from typing import Any

import openai
from openai import OpenAI
from openai.types.chat import ChatCompletion

SYSTEM = "You answer weather questions."
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]


def get_weather(city: str, days: int = 1) -> str:
    """The agent's own tool."""
    return f"Sunny in {city} for the next {days} day(s)."


FUNCTIONS = {"get_weather": get_weather}


def _client(ep: Any) -> OpenAI:
    # No retries of the SDK's own: the agent handles errors itself (and examples stay fast).
    return OpenAI(
        base_url=ep.openai_base_url,
        api_key=ep.api_key,
        http_client=ep.httpx2_client(),
        max_retries=0,
    )


def _run_tool(name: str, arguments: str, *, bug: str) -> str:
    if bug == "not_json":
        args = json.loads(arguments)  # JSONDecodeError escapes
    else:
        try:
            args = json.loads(arguments)
        except ValueError as error:
            return f"error: the arguments are not JSON ({error})"
    if bug == "unknown_tool":
        function = FUNCTIONS[name]  # KeyError on a tool the agent does not offer
    else:
        function = FUNCTIONS.get(name)  # type: ignore[assignment]
        if function is None:
            return f"error: there is no tool {name!r}"
    if not isinstance(args, dict):
        return "error: the arguments are not an object"
    try:
        return str(function(**args))
    except TypeError as error:
        return f"error: {error}"


def _ask(client: OpenAI, messages: list[Any], *, bug: str) -> ChatCompletion:
    attempts = 3
    for attempt in range(attempts):
        try:
            return client.chat.completions.create(model="gpt-4.1", messages=messages, tools=TOOLS)
        except openai.APITimeoutError as error:
            if bug == "timeout":  # its own error, which its caller does not catch
                raise TimeoutError("the model did not answer in time") from error
            if attempt == attempts - 1:
                raise
        except (openai.InternalServerError, openai.APIConnectionError):
            if attempt == attempts - 1:
                raise
        except openai.RateLimitError:
            if bug == "rate_limit" or attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def _agent(ep: Any, prompt: str, *, bug: str = "") -> str:
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt},
    ]
    with _client(ep) as client:
        for _ in range(8):
            try:
                message = _ask(client, messages, bug=bug).choices[0].message
            except openai.APIError as error:
                if bug == "rate_limit" and isinstance(error, openai.RateLimitError):
                    raise
                return f"Sorry, the weather service is unavailable ({type(error).__name__})."
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                if bug == "refusal":
                    return message.content.strip()  # type: ignore[union-attr]  # None on a refusal
                return (message.content or message.refusal or "").strip()
            calls = message.tool_calls
            if bug == "parallel_calls":
                (call,) = calls  # ValueError on parallel calls
                calls = [call]
            for call in calls:
                result = _run_tool(call.function.name, call.function.arguments, bug=bug)  # type: ignore[union-attr]
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "Sorry, I could not finish."


def agent(ep: Any, prompt: str) -> str:
    """The weather agent: no known bug."""
    return _agent(ep, prompt)


def crash_on_parallel_calls(ep: Any, prompt: str) -> str:
    """Expects one tool call per answer: unpacks it, and crashes on parallel calls."""
    return _agent(ep, prompt, bug="parallel_calls")


def crash_on_not_json(ep: Any, prompt: str) -> str:
    """Parses the arguments with ``json.loads`` unguarded: crashes on arguments that are not JSON."""
    return _agent(ep, prompt, bug="not_json")


def crash_on_rate_limit(ep: Any, prompt: str) -> str:
    """Retries server errors but lets a 429 (``RateLimitError``) escape."""
    return _agent(ep, prompt, bug="rate_limit")


def crash_on_timeout(ep: Any, prompt: str) -> str:
    """Turns the SDK's timeout error into a ``TimeoutError`` of its own, which escapes."""
    return _agent(ep, prompt, bug="timeout")


def crash_on_refusal(ep: Any, prompt: str) -> str:
    """Reads ``message.content`` as text: a refusal has ``content: null``."""
    return _agent(ep, prompt, bug="refusal")


def crash_on_unknown_tool(ep: Any, prompt: str) -> str:
    """Looks the tool up by name without a check: crashes on a tool it does not offer."""
    return _agent(ep, prompt, bug="unknown_tool")
