"""The refund agent on pydantic-ai, measured by live trials through an adapter.

In refund.scenario.yaml, ``agent: {adapter: "refund_pydantic_ai:reply", price: {...}}`` runs it
against the same scripted models as the agentrig agent (``agentrig serve models/``; docs/live.md).
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from agentrig.harness.live import current_trial

agent = Agent(system_prompt="You handle refunds for a shop.")


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
    assert trial is not None, "called by agentrig run --live"
    # The trial's HTTP client: the model calls are capped, budgeted, costed and recorded.
    model = OpenAIChatModel(
        "gpt-4.1-mini", provider=OpenAIProvider(http_client=trial.http_client())
    )
    history = histories.get(trial.key, []) if len(conversation) > 1 else []
    result = await agent.run(conversation[-1]["content"], message_history=history, model=model)
    histories[trial.key] = result.all_messages()
    calls = [
        {"name": part.tool_name, "arguments": part.args_as_dict()}
        for message in result.new_messages()
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]
    return {"content": result.output, "tool_calls": calls}
