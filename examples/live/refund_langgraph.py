"""The refund agent on LangGraph (LangChain's ``create_agent``), measured by live trials through
an adapter.

In refund.scenario.yaml, ``agent: {adapter: "refund_langgraph:reply", price: {...}}`` runs it
against the same scripted models as the agentrig agent (``agentrig serve models/``;
docs/live.md).
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from agentrig.harness.live import current_trial


@tool
def issue_refund(order_id: str) -> str:
    """Refund an order that arrived damaged."""
    return f"refund for {order_id} issued"


async def reply(conversation: list[dict[str, str]]) -> dict[str, Any]:
    """The agent's answer to the conversation's last message, and the tools it called."""
    trial = current_trial()
    assert trial is not None, "called by agentrig run --live"
    # The trial's HTTP client: the model calls are capped, budgeted, costed and recorded.
    model = ChatOpenAI(model="gpt-4.1-mini", http_async_client=trial.http_client())
    graph = create_agent(model, [issue_refund], system_prompt="You handle refunds for a shop.")
    state = await graph.ainvoke({"messages": conversation})
    new = [m for m in state["messages"][len(conversation) :] if isinstance(m, AIMessage)]
    calls = [{"name": c["name"], "arguments": c["args"]} for m in new for c in m.tool_calls]
    return {"content": new[-1].text, "tool_calls": calls}
