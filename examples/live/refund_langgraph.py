"""The refund agent on LangGraph (LangChain's ``create_agent``), measured by live trials through
an adapter.

In refund.scenario.yaml, ``agent: {adapter: "refund_langgraph:reply"}`` runs it against the same
scripted models as the agentrig agent (``agentrig serve models/``; docs/live.md).
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from agentrig.harness.live import current_trial

PRICE = {"input": 0.4, "output": 1.6}  # USD per million tokens of gpt-4.1-mini


@tool
def issue_refund(order_id: str) -> str:
    """Refund an order that arrived damaged."""
    return f"refund for {order_id} issued"


async def reply(conversation: list[dict[str, str]]) -> dict[str, Any]:
    """The agent's answer to the conversation's last message, and the tools it called."""
    trial = current_trial()
    key = trial.key if trial is not None else ""
    # each trial is a session of its own for agentrig serve (a real API ignores it)
    model = ChatOpenAI(model="gpt-4.1-mini", default_headers={"x-agentrig-trial": key})
    graph = create_agent(model, [issue_refund], system_prompt="You handle refunds for a shop.")
    state = await graph.ainvoke({"messages": conversation})
    new = [m for m in state["messages"][len(conversation) :] if isinstance(m, AIMessage)]
    calls = [{"name": c["name"], "arguments": c["args"]} for m in new for c in m.tool_calls]
    usage = [m.usage_metadata for m in new if m.usage_metadata is not None]
    tokens_in = sum(u["input_tokens"] for u in usage)
    tokens_out = sum(u["output_tokens"] for u in usage)
    cost = (tokens_in * PRICE["input"] + tokens_out * PRICE["output"]) / 1e6
    return {"content": new[-1].text, "tool_calls": calls, "cost": cost}
