"""A weather agent on LangGraph (a hand-written graph: model node, tool node, a loop), and a
copy with a bug a misbehaving model reveals.

``agent`` answers every tool call of an answer. ``drops_parallel_calls`` runs only the first
call of each answer: with parallel calls, the others go unanswered and a real API refuses the
next request (here the endpoint's ``tool_results_answer_calls`` check says so).
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import openai
from langchain_core.messages import AIMessage, AnyMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

SYSTEM_PROMPT = "You answer weather questions."


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"It is sunny in {city}."


TOOLS = {"get_weather": get_weather}


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _graph(model: Any, *, first_call_only: bool) -> Any:
    bound = model.bind_tools(list(TOOLS.values()))

    def call_model(state: State) -> dict[str, Any]:
        return {"messages": [bound.invoke([SystemMessage(SYSTEM_PROMPT), *state["messages"]])]}

    def run_tools(state: State) -> dict[str, Any]:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        calls = [*last.tool_calls, *last.invalid_tool_calls]
        if first_call_only:
            calls = calls[:1]
        results = []
        for call in calls:
            function = TOOLS.get(call["name"] or "")
            args = call.get("args")
            if function is None or not isinstance(args, dict):
                content = f"error: cannot call {call['name']!r} with {call.get('args')!r}"
            else:
                try:
                    content = str(function.invoke(args))
                except Exception as error:  # a wrong argument: tell the model
                    content = f"error: {error}"
            results.append(ToolMessage(content, tool_call_id=call["id"] or ""))
        return {"messages": results}

    def route(state: State) -> str:
        last = state["messages"][-1]
        has_calls = isinstance(last, AIMessage) and (last.tool_calls or last.invalid_tool_calls)
        return "tools" if has_calls else END

    graph = StateGraph(State)
    graph.add_node("model", call_model)
    graph.add_node("tools", run_tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile()


def _run(ep: Any, prompt: str, *, first_call_only: bool = False) -> str:
    with ep.httpx2_client() as http:
        model = ChatOpenAI(
            model="gpt-4.1",
            base_url=ep.openai_base_url,
            api_key=ep.api_key,
            http_client=http,
            max_retries=2,
        )
        try:
            state = _graph(model, first_call_only=first_call_only).invoke(
                {"messages": [("user", prompt)]}, {"recursion_limit": 16}
            )
        except (GraphRecursionError, openai.APIError) as error:
            return f"Sorry, I cannot answer now ({type(error).__name__})."
    return str(state["messages"][-1].text)


def agent(ep: Any, prompt: str) -> str:
    """The weather agent: no known bug."""
    return _run(ep, prompt)


def drops_parallel_calls(ep: Any, prompt: str) -> str:
    """Runs only the first tool call of each answer."""
    return _run(ep, prompt, first_call_only=True)
