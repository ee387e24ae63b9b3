"""The refund agent on pydantic-ai, measured by live trials through an adapter.

In refund.scenario.yaml, ``agent: {adapter: "refund_pydantic_ai:reply"}`` runs it against the
same scripted models as the agentrig agent (``agentrig serve models/``; docs/live.md).
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ToolCallPart

from agentrig.harness.live import current_trial

PRICE = {"input": 0.4, "output": 1.6}  # USD per million tokens of gpt-4.1-mini

agent = Agent("openai:gpt-4.1-mini", system_prompt="You handle refunds for a shop.")


@agent.tool_plain
def issue_refund(order_id: str) -> str:
    """Refund an order that arrived damaged."""
    return f"refund for {order_id} issued"


# pydantic-ai sends the system prompt only at the start of a history it made itself: each
# trial's history is kept, not rebuilt from the conversation.
histories: dict[str, list[ModelMessage]] = {}


async def reply(conversation: list[dict[str, str]]) -> dict[str, Any]:
    """The agent's answer to the conversation's last message, and the tools it called."""
    trial = current_trial()
    key = trial.key if trial is not None else ""
    history = histories.get(key, []) if len(conversation) > 1 else []
    result = await agent.run(
        conversation[-1]["content"],
        message_history=history,
        # each trial is a session of its own for agentrig serve (a real API ignores it)
        model_settings={"extra_headers": {"x-agentrig-trial": key}},
    )
    histories[key] = result.all_messages()
    calls = [
        {"name": part.tool_name, "arguments": part.args_as_dict()}
        for message in result.new_messages()
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]
    usage = result.usage
    cost = (usage.input_tokens * PRICE["input"] + usage.output_tokens * PRICE["output"]) / 1e6
    return {"content": result.output, "tool_calls": calls, "cost": cost}
