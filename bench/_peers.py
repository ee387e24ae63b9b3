"""W(N) on peer frameworks, each driven by its own test double. Imported only by peers.py.

Every ``load_*`` returns the framework's entry points: ``"sync"`` (its usual synchronous one)
and ``"async"`` (its coroutine, run to the end on the one event loop of ``_workload.event_loop``,
as an async server would await it). Each is a ``prepare`` that builds the agent, its fake model
and its input outside any timing and returns a zero-argument run, and a ``check`` that verifies
the run made N tool calls returning i + 1 and ended with the text "done". A peer that is not
installed raises ``ImportError`` from its ``load_*`` function.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Any

from _workload import FINAL_TEXT, USER_MESSAGE, event_loop

Run = Callable[[], Any]
Framework = tuple[Callable[[int], Run], Callable[[int, Any], None]]
Entries = dict[str, Framework]
"""Entry point ("sync", "async") -> (prepare, check)."""


def awaited(start: Callable[[int], Callable[[], Any]]) -> Callable[[int], Run]:
    """A ``prepare`` whose run awaits the coroutine ``start(n)()`` makes, on the bench's event
    loop (``run_until_complete``: a server is inside its loop already)."""

    def prepare(n: int) -> Run:
        coroutine = start(n)
        loop = event_loop().get_loop()
        return lambda: loop.run_until_complete(coroutine())

    return prepare


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# --- pydantic-ai: FunctionModel --------------------------------------------------------------


def load_pydantic_ai() -> Entries:
    """pydantic-ai's ``Agent`` with a ``FunctionModel`` playing the script: ``run_sync`` and
    ``await agent.run``."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    def build(n: int) -> Any:
        calls = 0

        def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
            nonlocal calls
            calls += 1
            if calls <= n:
                return ModelResponse(parts=[ToolCallPart("add", {"a": calls - 1, "b": 1})])
            return ModelResponse(parts=[TextPart(FINAL_TEXT)])

        return Agent(FunctionModel(model), tools=[add], name="bench")

    def prepare(n: int) -> Run:
        agent, limits = build(n), UsageLimits(request_limit=n + 10)
        return lambda: agent.run_sync(USER_MESSAGE, usage_limits=limits)

    def start(n: int) -> Callable[[], Any]:
        agent, limits = build(n), UsageLimits(request_limit=n + 10)
        return lambda: agent.run(USER_MESSAGE, usage_limits=limits)

    def check(n: int, result: Any) -> None:
        assert result.output == FINAL_TEXT, result.output
        returned = [
            part.content
            for message in result.all_messages()
            for part in getattr(message, "parts", ())
            if isinstance(part, ToolReturnPart)
        ]
        assert returned == [i + 1 for i in range(n)], returned[:5]

    return {"sync": (prepare, check), "async": (awaited(start), check)}


# --- LangGraph: prebuilt ReAct agent ----------------------------------------------------------


def load_langgraph() -> Entries:
    """LangGraph's prebuilt ReAct agent with ``GenericFakeChatModel`` (plus ``bind_tools``):
    ``graph.invoke`` and ``await graph.ainvoke``."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import tool

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain
        from langgraph.prebuilt import create_react_agent

    class ToolCallingFakeChatModel(GenericFakeChatModel):
        """GenericFakeChatModel replays AIMessages; the ReAct agent also needs ``bind_tools``."""

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    add_tool = tool(add)

    def build(n: int) -> tuple[Any, Any, RunnableConfig]:
        script = [
            AIMessage(
                content="",
                tool_calls=[{"name": "add", "args": {"a": i, "b": 1}, "id": f"call_{i}"}],
            )
            for i in range(n)
        ]
        script.append(AIMessage(content=FINAL_TEXT))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = create_react_agent(ToolCallingFakeChatModel(messages=iter(script)), [add_tool])
        inputs = {"messages": [("user", USER_MESSAGE)]}
        # Two graph steps (model, tools) per tool call.
        config: RunnableConfig = {"recursion_limit": 2 * n + 10}
        return graph, inputs, config

    def prepare(n: int) -> Run:
        graph, inputs, config = build(n)
        return lambda: graph.invoke(inputs, config)

    def start(n: int) -> Callable[[], Any]:
        graph, inputs, config = build(n)
        return lambda: graph.ainvoke(inputs, config)

    def check(n: int, result: Any) -> None:
        messages = result["messages"]
        assert messages[-1].content == FINAL_TEXT, messages[-1]
        returned = [m.content for m in messages if isinstance(m, ToolMessage)]
        assert returned == [str(i + 1) for i in range(n)], returned[:5]

    return {"sync": (prepare, check), "async": (awaited(start), check)}


# --- OpenAI Agents SDK: a fake Model ----------------------------------------------------------


def load_openai_agents() -> Entries:
    """The OpenAI Agents SDK's ``Runner`` with a scripted ``Model`` (tracing disabled):
    ``Runner.run_sync`` and ``await Runner.run``."""
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse, ToolCallOutputItem
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)
    add_tool = function_tool(add)

    class ScriptedModel(Model):
        """Answers ``add(a=i, b=1)`` n times, then the final text."""

        def __init__(self, n: int) -> None:
            self.n = n
            self.calls = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            index = self.calls
            self.calls += 1
            output: list[Any]
            if index < self.n:
                output = [
                    ResponseFunctionToolCall(
                        id=f"fc_{index}",
                        call_id=f"call_{index}",
                        type="function_call",
                        name="add",
                        arguments=json.dumps({"a": index, "b": 1}),
                    )
                ]
            else:
                text = ResponseOutputText(type="output_text", text=FINAL_TEXT, annotations=[])
                output = [
                    ResponseOutputMessage(
                        id="msg_final",
                        type="message",
                        role="assistant",
                        status="completed",
                        content=[text],
                    )
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark runs the agent without streaming")

    def prepare(n: int) -> Run:
        agent = Agent(name="bench", model=ScriptedModel(n), tools=[add_tool])
        return lambda: Runner.run_sync(agent, USER_MESSAGE, max_turns=n + 10)

    def start(n: int) -> Callable[[], Any]:
        agent = Agent(name="bench", model=ScriptedModel(n), tools=[add_tool])
        return lambda: Runner.run(agent, USER_MESSAGE, max_turns=n + 10)

    def check(n: int, result: Any) -> None:
        assert result.final_output == FINAL_TEXT, result.final_output
        returned = [
            item.output for item in result.new_items if isinstance(item, ToolCallOutputItem)
        ]
        assert returned == [i + 1 for i in range(n)], returned[:5]

    return {"sync": (prepare, check), "async": (awaited(start), check)}


PEERS: dict[str, tuple[str, Callable[[], Entries]]]
PEERS = {
    "pydantic-ai": ("pydantic-ai-slim", load_pydantic_ai),
    "langgraph": ("langgraph", load_langgraph),
    "openai-agents": ("openai-agents", load_openai_agents),
}
"""Peer name -> (distribution whose version is reported, loader)."""
