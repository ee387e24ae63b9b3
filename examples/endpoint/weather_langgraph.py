"""A weather agent on LangGraph (LangChain's ``create_agent``, which builds a LangGraph graph)
with a langchain-openai chat model, as an application would write it: the model is passed in,
so a test can point it at the scenario endpoint (see tests/examples/endpoint/)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, tool
from langgraph.types import Checkpointer

SYSTEM_PROMPT = "You answer weather questions."


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"It is sunny in {city}."


def build_agent(
    model: BaseChatModel,
    tools: Sequence[BaseTool] = (get_weather,),
    checkpointer: Checkpointer | None = None,
) -> Any:
    """The weather agent on ``model`` (a compiled LangGraph graph); a ``checkpointer`` keeps
    each conversation (by ``thread_id``) between turns."""
    return create_agent(model, list(tools), system_prompt=SYSTEM_PROMPT, checkpointer=checkpointer)
