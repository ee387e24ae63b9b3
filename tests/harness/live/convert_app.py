"""The agent and user of the trials ``test_convert.py`` converts: the agent refunds in the
first turn (a tool call, then "Refunded...") and thanks in the second; the user asks for the
refund, thanks the agent, then ends the conversation. Scenarios name them by reference
(``convert_app:build``), which imports this module by that name."""

from __future__ import annotations

from typing import Any

from agentrig import AgentBuilder, UseContextConfig, UseLlmConfig, tool
from agentrig.fakes import FunctionLLM, call, reply
from agentrig.fakes.llm import Turn
from agentrig.messages import Role
from agentrig.state import InferenceRequest

REAL_REFUNDS: list[str] = []
"""The orders the agent's real ``issue_refund`` refunded (a replay calls none)."""

ADAPTER: dict[str, Any] = {}
"""The function ``adapter`` calls: ``ADAPTER["reply"]``, set by the test."""


@tool
def issue_refund(order_id: str) -> str:
    """Refund an order."""
    REAL_REFUNDS.append(order_id)
    return f"refund for {order_id} issued"


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: one mug"


@tool
def list_orders() -> str:
    """List the customer's orders."""
    return "A-1029"


def agent_model(request: InferenceRequest) -> Turn:
    messages = list(request.messages)
    if messages[-1].role is Role.TOOL:
        return reply("Refunded: your money is on its way.")
    if sum(m.role is Role.USER for m in messages) == 1:
        return call("issue_refund", order_id="A-1029")
    return reply("You are welcome.")


def parallel_model(request: InferenceRequest) -> Turn:
    """Lists the orders, looks the order up and refunds it in one answer (three calls), then
    thanks."""
    messages = list(request.messages)
    if messages[-1].role is Role.TOOL:
        return reply("Refunded: your money is on its way.")
    if sum(m.role is Role.USER for m in messages) == 1:
        calls = (
            call("list_orders").calls
            + call("lookup_order", order_id="A-1029").calls
            + call("issue_refund", order_id="A-1029").calls
        )
        return Turn(calls=calls)
    return reply("You are welcome.")


def build_parallel() -> AgentBuilder:
    """The refund agent calling its two tools at once."""
    return build(parallel_model)


def build(model: Any = agent_model) -> AgentBuilder:
    return (
        AgentBuilder.base()
        .with_tools([issue_refund, lookup_order, list_orders])
        .with_capability(UseContextConfig("You handle refunds."))
        .with_capability(UseLlmConfig(FunctionLLM(model)))
    )


def build_bare() -> AgentBuilder:
    """An agent with neither tools nor a system prompt: its model alone."""
    return AgentBuilder.base().with_capability(UseLlmConfig(FunctionLLM(lambda _: reply("Noted."))))


def user_model(request: InferenceRequest) -> Turn:
    agent_said = [m.content for m in request.messages if m.role is Role.USER][1:]
    if not agent_said:
        return reply("Please refund order A-1029.")
    if len(agent_said) == 1:
        return reply("Thanks!")
    return Turn(calls=call("end_conversation").calls)


def user_once(request: InferenceRequest) -> Turn:
    """Asks for the refund, then ends the conversation at the agent's first answer."""
    if sum(m.role is Role.USER for m in request.messages) == 1:
        return reply("Please refund order A-1029.")
    return Turn(calls=call("end_conversation").calls)


def adapter(conversation: list[dict[str, str]]) -> Any:
    """The adapter agent (``convert_app:adapter``): whatever ``ADAPTER["reply"]`` is."""
    return ADAPTER["reply"](conversation)
