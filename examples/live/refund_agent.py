"""A refund agent on agentrig, its model an OpenAI-compatible API.

It knows nothing of tests: pointed at the real API it is the production agent; pointed at
``agentrig serve examples/live/models/`` (``OPENAI_BASE_URL``) it talks to scripted models, and
``agentrig run --live examples/live/`` measures it offline (see docs/live.md).
"""

from __future__ import annotations

from agentrig import AgentBuilder, UseContextConfig, UseLlmConfig, tool
from agentrig.drivers.openai import OpenAIProvider
from agentrig.drivers.pricing import ModelPrice, PriceTable

MODEL = "gpt-4.1-mini"
PRICES = PriceTable({MODEL: ModelPrice(input=0.4, output=1.6)})  # USD per million tokens


@tool
def issue_refund(order_id: str) -> str:
    """Refund an order that arrived damaged."""
    return f"refund for {order_id} issued"


def build() -> AgentBuilder:
    """The agent: a system prompt, one tool, the model (its key from OPENAI_API_KEY)."""
    provider = OpenAIProvider(model=MODEL, max_retries=0, prices=PRICES)
    return (
        AgentBuilder.base()
        .with_tools([issue_refund])
        .with_capability(UseContextConfig("You handle refunds for a shop."))
        .with_capability(UseLlmConfig(provider))
    )
