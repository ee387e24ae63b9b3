"""The agent turn bench/endpoint.py times, the canned answers of its floors, and a loopback
server. Imported only by endpoint.py and _endpoint_peers.py.

The turn: two model calls through an official SDK (openai, anthropic, google-genai) (the first answers a ``get_weather`` tool
call, the second, sent with the tool's result, answers with text). Every session sends its own
API key through ``extra_headers``, so one client serves every session, as in a test suite.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios/endpoint/weather.scenario.yaml"
SYSTEM = "You answer weather questions."
USER = "What is the weather in Paris?"
FINAL_TEXT = "It is sunny in Paris."
TOOL_RESULT = "It is sunny in Paris."
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
JSON_HEADERS = {"content-type": "application/json"}
CALLS_PER_TURN = 2


class WorkloadError(AssertionError):
    """An answer is not the one the turn needs (no tool call first, or the wrong final text)."""


def get_weather(city: str) -> str:
    """The agent's tool."""
    if city != "Paris":
        raise WorkloadError(f"get_weather was called for {city!r}, not Paris")
    return TOOL_RESULT


# --- the turn on each SDK ---------------------------------------------------------------------

CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}]
ANTHROPIC_TOOLS = [{"name": "get_weather", "input_schema": PARAMETERS}]


def openai_client(base_url: str | None, http_client: Any) -> Any:
    import openai

    return openai.OpenAI(api_key="bench", base_url=base_url, http_client=http_client, max_retries=0)


def openai_turn(client: Any, key: str) -> str:
    """Chat Completions: a tool call, its result sent back, then the text answer."""
    headers = {"Authorization": f"Bearer {key}"}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USER},
    ]
    create = client.chat.completions.create
    first = create(
        model="gpt-test", messages=messages, tools=CHAT_TOOLS, extra_headers=headers
    ).choices[0]
    calls = first.message.tool_calls
    if not calls:
        raise WorkloadError(f"the first answer has no tool call: {first.message.content!r}")
    call = calls[0]
    function = {"name": call.function.name, "arguments": call.function.arguments}
    messages.append(
        {
            "role": "assistant",
            "content": first.message.content,
            "tool_calls": [{"id": call.id, "type": "function", "function": function}],
        }
    )
    result = get_weather(**json.loads(call.function.arguments))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    second = create(model="gpt-test", messages=messages, tools=CHAT_TOOLS, extra_headers=headers)
    return str(second.choices[0].message.content)


def anthropic_client(base_url: str | None, http_client: Any) -> Any:
    import anthropic

    return anthropic.Anthropic(
        api_key="bench", base_url=base_url, http_client=http_client, max_retries=0
    )


def anthropic_turn(client: Any, key: str) -> str:
    """Messages: a tool_use block, its tool_result sent back, then the text answer."""
    # anthropic 2.x sends its key as a bearer token; earlier versions sent x-api-key.
    headers = {"Authorization": f"Bearer {key}", "x-api-key": key}
    messages: list[dict[str, Any]] = [{"role": "user", "content": USER}]
    options = {"model": "claude-test", "max_tokens": 256, "system": SYSTEM}
    create = client.messages.create
    first = create(**options, messages=messages, tools=ANTHROPIC_TOOLS, extra_headers=headers)
    uses = [block for block in first.content if block.type == "tool_use"]
    if not uses:
        raise WorkloadError(f"the first answer has no tool_use block: {first.content!r}")
    use = uses[0]
    messages.append(
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": use.id, "name": use.name, "input": use.input}],
        }
    )
    result = get_weather(**use.input)
    messages.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": result}],
        }
    )
    second = create(**options, messages=messages, tools=ANTHROPIC_TOOLS, extra_headers=headers)
    return "".join(block.text for block in second.content if block.type == "text")


GEMINI_TOOLS = [{"function_declarations": [{"name": "get_weather", "parameters": PARAMETERS}]}]


def gemini_client(base_url: str | None, http_client: Any) -> Any:
    from google import genai

    options = genai.types.HttpOptions(base_url=base_url, httpx_client=http_client)
    return genai.Client(api_key="bench", http_options=options)


def gemini_turn(client: Any, key: str) -> str:
    """Gemini (google-genai): a functionCall part, the answer sent back as it came with a
    functionResponse, then the text answer."""
    from google.genai import types

    config = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=GEMINI_TOOLS,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        http_options=types.HttpOptions(headers={"x-goog-api-key": key}),
    )
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=USER)])]
    generate = client.models.generate_content
    first = generate(model="gemini-test", contents=contents, config=config)
    calls = first.function_calls
    if not calls:
        raise WorkloadError(f"the first answer has no function call: {first.text!r}")
    call = calls[0]
    result = get_weather(**(call.args or {}))
    contents.append(first.candidates[0].content)
    response = types.FunctionResponse(id=call.id, name=call.name, response={"result": result})
    contents.append(types.Content(role="user", parts=[types.Part(function_response=response)]))
    second = generate(model="gemini-test", contents=contents, config=config)
    return str(second.text)


@dataclass(frozen=True)
class Sdk:
    """One official SDK: how to build its client and run the turn on it."""

    name: str
    package: str
    path: str
    """The path of the model call (what the canned server answers)."""
    url_suffix: str
    """Appended to a server's ``http://host:port`` to make the SDK's base URL."""
    second_marker: bytes
    """In a request body only once the tool result is sent (picks the second canned answer)."""
    make: Callable[[str | None, Any], Any]
    turn: Callable[[Any, str], str]

    def client(self, base_url: str | None, http_client: Any) -> Any:
        """The SDK's client (``None``: the provider's host, the SDK's own HTTP client)."""
        return self.make(base_url, http_client)

    def version(self) -> str:
        from importlib.metadata import version

        return version(self.package)

    @staticmethod
    def check(text: str) -> None:
        if text != FINAL_TEXT:
            raise WorkloadError(f"the final answer is {text!r}, not {FINAL_TEXT!r}")


SDKS = (
    Sdk(
        "openai",
        "openai",
        "/v1/chat/completions",
        "/v1",
        b"tool_call_id",
        openai_client,
        openai_turn,
    ),
    Sdk(
        "anthropic",
        "anthropic",
        "/v1/messages",
        "",
        b"tool_result",
        anthropic_client,
        anthropic_turn,
    ),
    Sdk(
        "gemini",
        "google-genai",
        "/v1beta/models/gemini-test:generateContent",
        "",
        b"functionResponse",
        gemini_client,
        gemini_turn,
    ),
)


# --- canned answers: the endpoint's own bytes, captured once ----------------------------------


@dataclass
class Captured:
    """The two requests of one turn as the SDK sent them, and the endpoint's answers to them."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)

    def answer(self, body: bytes, marker: bytes) -> bytes:
        """The canned answer to a request body: the second once the tool result is in it."""
        return self.bodies[1] if marker in body else self.bodies[0]


def capture(sdk: Sdk) -> Captured:
    """Play one session of the turn through a fresh endpoint, keeping the bytes it served."""
    import httpx2

    from agentrig.harness.endpoint.service import ScenarioEndpoint
    from agentrig.harness.scenarios.loader import load_scenario

    endpoint = ScenarioEndpoint([load_scenario(SCENARIO)])
    captured = Captured()

    def answer(request: Any) -> Any:
        body = request.content
        reply = endpoint.handle(
            request.method, request.url.raw_path.decode(), dict(request.headers), body
        )
        if reply.status != 200 or reply.chunks is not None:
            raise WorkloadError(f"the endpoint answered HTTP {reply.status}: {reply.body!r}")
        captured.requests.append(json.loads(body))
        captured.bodies.append(reply.body)
        return httpx2.Response(reply.status, headers=reply.headers, content=reply.body)

    client = sdk.client("http://capture.invalid" + sdk.url_suffix, _mock_client(answer))
    sdk.check(sdk.turn(client, "capture"))
    result = endpoint.session("capture").result()
    if not result.passed or len(captured.bodies) != CALLS_PER_TURN:
        raise WorkloadError(f"the capture session failed: {[f.message for f in result.failures]}")
    return captured


def _mock_client(handler: Callable[[Any], Any]) -> Any:
    import httpx2

    return httpx2.Client(transport=httpx2.MockTransport(handler), timeout=30.0)


def floor_http_client(sdk: Sdk, captured: Captured) -> Any:
    """An httpx2 client answered with the canned bytes by an ``httpx2.MockTransport``."""
    import httpx2

    marker = sdk.second_marker

    def answer(request: Any) -> Any:
        return httpx2.Response(
            200, headers=JSON_HEADERS, content=captured.answer(request.content, marker)
        )

    return _mock_client(answer)


def floor_app(canned: dict[str, tuple[bytes, Captured]]) -> Any:
    """A starlette app answering each SDK's path with its canned bytes (path: marker, bytes)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    def route(path: str, marker: bytes, captured: Captured) -> Route:
        async def answer(request: Request) -> Response:
            body = await request.body()
            return Response(captured.answer(body, marker), headers=JSON_HEADERS)

        return Route(path, answer, methods=["POST"])

    return Starlette(
        routes=[route(path, marker, captured) for path, (marker, captured) in canned.items()]
    )


# --- a loopback server ------------------------------------------------------------------------


class LoopbackServer:
    """An ASGI app served by uvicorn on 127.0.0.1 from a background thread, configured as the
    endpoint's own live server is."""

    def __init__(self, app: Any, *, lifespan: str = "off") -> None:
        import uvicorn

        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", lifespan=lifespan
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="bench-loopback")
        self.port = 0

    def start(self, timeout: float = 10.0) -> LoopbackServer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the loopback server did not start")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=10)
