"""The refund agent on the OpenAI Agents SDK, measured by live trials through an adapter.

In refund.scenario.yaml, ``agent: {adapter: "refund_openai_agents:reply", price: {...}}`` runs
it against the same scripted models as the agentrig agent (``agentrig serve models/``;
docs/live.md).
"""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, OpenAIProvider, RunConfig, Runner, function_tool
from openai import AsyncOpenAI

from agentrig.harness.live import current_trial


@function_tool
def issue_refund(order_id: str) -> str:
    """Refund an order that arrived damaged."""
    return f"refund for {order_id} issued"


agent = Agent(
    name="refunds",
    instructions="You handle refunds for a shop.",
    model="gpt-4.1-mini",
    tools=[issue_refund],
)


async def reply(conversation: list[dict[str, str]]) -> dict[str, Any]:
    """The agent's answer to the conversation's last message, and the tools it called."""
    trial = current_trial()
    assert trial is not None, "called by agentrig run --live"
    # The trial's HTTP client: the model calls are capped, budgeted, costed and recorded.
    client = AsyncOpenAI(http_client=trial.http_client())
    provider = OpenAIProvider(openai_client=client)
    result = await Runner.run(agent, conversation, run_config=RunConfig(model_provider=provider))
    calls = [
        {"name": item.raw_item.name, "arguments": json.loads(item.raw_item.arguments)}
        for item in result.new_items
        if item.type == "tool_call_item"
    ]
    return {"content": result.final_output, "tool_calls": calls}
