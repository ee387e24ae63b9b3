"""The refund agent on the OpenAI Agents SDK, measured by live trials through an adapter.

In refund.scenario.yaml, ``agent: {adapter: "refund_openai_agents:reply"}`` runs it against the
same scripted models as the agentrig agent (``agentrig serve models/``; docs/live.md).
"""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, ModelSettings, RunConfig, Runner, function_tool

from agentrig.harness.live import current_trial

PRICE = {"input": 0.4, "output": 1.6}  # USD per million tokens of gpt-4.1-mini


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
    key = trial.key if trial is not None else ""
    # each trial is a session of its own for agentrig serve (a real API ignores it)
    settings = ModelSettings(extra_headers={"x-agentrig-trial": key})
    result = await Runner.run(agent, conversation, run_config=RunConfig(model_settings=settings))
    calls = [
        {"name": item.raw_item.name, "arguments": json.loads(item.raw_item.arguments)}
        for item in result.new_items
        if item.type == "tool_call_item"
    ]
    usage = result.context_wrapper.usage
    cost = (usage.input_tokens * PRICE["input"] + usage.output_tokens * PRICE["output"]) / 1e6
    return {"content": result.final_output, "tool_calls": calls, "cost": cost}
