"""A refund agent and the models that play its user and judge, for the live-trial tests.

The agent's model is a function: it asks for the order id, then (in a share ``SUCCESS_RATE`` of
trials, decided by the trial's seed) issues the refund, else refuses. Each of its calls reports
100 input and 20 output tokens at ``AGENT_CALL_COST`` USD.
"""

from __future__ import annotations

import random
import re
from typing import Any

from agentrig import AgentBuilder, UseContextConfig, UseLlmConfig, tool
from agentrig.fakes import FunctionLLM, call, reply
from agentrig.fakes.llm import Turn
from agentrig.harness.live.trial import current_trial
from agentrig.messages import Role
from agentrig.state import InferenceRequest, Usage

SUCCESS_RATE = 1.0
AGENT_CALL_COST = 0.000125
USER_CALL_COST = 0.00001
JUDGE_CALL_COST = 0.00002
ORDER = re.compile(r"\b[A-Z]-\d{4}\b")


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: one mug, reported broken on arrival"


@tool
def issue_refund(order_id: str) -> str:
    """Refund an order."""
    return f"refund for {order_id} issued"


def _usage(cost: float) -> Usage:
    return Usage(input_tokens=100, output_tokens=20, cost=cost)


def agent_model(request: InferenceRequest) -> Turn:
    messages = list(request.messages)
    last = messages[-1]
    if last.role is Role.TOOL:
        if "refund for" in last.content:
            return reply("Your refund for the order is on its way.", usage=_usage(AGENT_CALL_COST))
        return reply("I looked it up.", usage=_usage(AGENT_CALL_COST))
    users = " ".join(m.content for m in messages if m.role is Role.USER)
    order = ORDER.search(users)
    if order is None:
        return reply("Which order is it? Please give me its id.", usage=_usage(AGENT_CALL_COST))
    trial = current_trial()
    seed = 0 if trial is None else trial.seed
    if random.Random(seed).random() < SUCCESS_RATE:
        turn = call("issue_refund", order_id=order.group())
        return Turn(calls=turn.calls, usage=_usage(AGENT_CALL_COST))
    return reply("Sorry, I cannot refund that order.", usage=_usage(AGENT_CALL_COST))


def build() -> AgentBuilder:
    return (
        AgentBuilder.base()
        .with_tools([lookup_order, issue_refund])
        .with_capability(UseContextConfig("You handle refunds."))
        .with_capability(UseLlmConfig(FunctionLLM(agent_model)))
    )


def user_model(request: InferenceRequest) -> Turn:
    """The simulated user: the agent's replies are its user messages."""
    agent_said = [m.content for m in request.messages if m.role is Role.USER][1:]
    usage = _usage(USER_CALL_COST)
    if not agent_said:
        return reply("My mug arrived broken. I want a refund.", usage=usage)
    last = agent_said[-1]
    if "Which order" in last:
        return reply("It is order A-1029.", usage=usage)
    if "on its way" in last:
        return Turn(text="Thanks.", calls=call("end_conversation").calls, usage=usage)
    return reply("Please, it really arrived broken.", usage=usage)


def judge_model(request: InferenceRequest) -> Turn:
    """Passes the rubric unless the agent blamed the customer."""
    text = request.messages[-1].content
    result = "failed" if "your fault" in text else "passed"
    turn = call("verdict", result=result, reason="read the transcript")
    return Turn(calls=turn.calls, usage=_usage(JUDGE_CALL_COST))


def adapter(conversation: list[dict[str, Any]]) -> dict[str, Any]:
    """The same agent through an adapter: refunds as soon as it has the order id."""
    order = ORDER.search(" ".join(m["content"] for m in conversation if m["role"] == "user"))
    if order is None:
        return {"content": "Which order is it?", "cost": AGENT_CALL_COST}
    return {
        "content": "Your refund for the order is on its way.",
        "tool_calls": [{"name": "issue_refund", "arguments": {"order_id": order.group()}}],
        "cost": AGENT_CALL_COST,
    }


def build_without_model() -> AgentBuilder:
    """The refund agent without its model: a live trial cannot ask it anything."""
    return AgentBuilder.base().with_tools([lookup_order, issue_refund])


BUILDS = {"left": 1_000_000}
"""How many more times ``build_for_a_while`` builds the agent with its model."""


def build_for_a_while() -> AgentBuilder:
    """The refund agent while ``BUILDS["left"]`` lasts, then without its model."""
    BUILDS["left"] -= 1
    return build() if BUILDS["left"] >= 0 else build_without_model()
