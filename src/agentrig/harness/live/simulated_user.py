"""The simulated user: a model that plays a person with a persona and a goal.

Roles are reversed for it: the agent's replies are its ``user`` messages and its own messages
are ``assistant`` ones, after a fixed first message that starts the conversation. It ends the
conversation by calling the ``end_conversation`` tool.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentrig.drivers.provider import AsyncInferenceProvider
from agentrig.harness.live.transcript import Transcript
from agentrig.harness.scenarios.live_model import UserSpec
from agentrig.messages import Message, Messages
from agentrig.state import InferenceRequest, LlmConfig
from agentrig.state.inference import ToolSchema

__all__ = ["END_CONVERSATION", "START", "UserMove", "next_user_move", "user_system_prompt"]

END_CONVERSATION = "end_conversation"
START = "(The conversation starts. Write your first message to the assistant.)"

_END_TOOL = ToolSchema(
    name=END_CONVERSATION,
    description="End the conversation: your goal is met, or it cannot be met.",
    parameters={
        "type": "object",
        "properties": {"reason": {"type": "string", "description": "Why you end it."}},
        "required": [],
    },
)


@dataclass(frozen=True, slots=True)
class UserMove:
    """What the simulated user did: said ``text``, or ended the conversation (``ended``)."""

    text: str
    ended: bool = False
    finish_reason: str | None = None


def user_system_prompt(spec: UserSpec) -> str:
    """The system prompt of the model that plays ``spec``."""
    lines = [
        "You are playing a person who is talking to an AI assistant. Stay in character: you",
        "are the user, never the assistant.",
        f"Who you are: {spec.persona}",
        f"Your goal: {spec.goal}",
    ]
    if spec.knows:
        lines.append("Facts you know (disclose one only when it is asked for or needed):")
        lines.extend(f"- {name}: {value}" for name, value in spec.knows.items())
        lines.append("You know no other facts: never invent an id, a number, a name or an")
        lines.append("address; say you do not know.")
    lines += [
        "Write only your next message to the assistant: plain text, no role labels.",
        f"When your goal is met, or clearly cannot be met, call {END_CONVERSATION}.",
    ]
    return "\n".join(lines)


def _messages(spec: UserSpec, transcript: Transcript) -> Messages:
    out = [Message.system(user_system_prompt(spec)), Message.user(START)]
    for exchange in transcript.exchanges:
        out.append(Message.assistant(exchange.user))
        if exchange.reply is not None:
            out.append(Message.user(exchange.reply.content or "(the assistant said nothing)"))
    return Messages(out)


async def next_user_move(
    spec: UserSpec,
    transcript: Transcript,
    model: AsyncInferenceProvider,
    config: LlmConfig | None,
) -> UserMove:
    """The simulated user's next move after ``transcript``."""
    turns = len(transcript.exchanges)
    if turns == 0 and spec.opening is not None:
        return UserMove(spec.opening)
    request = InferenceRequest(
        messages=_messages(spec, transcript), tools=(_END_TOOL,), llm_config=config
    )
    response = await model.ainfer(request)
    finish = None if response.finish_reason is None else str(response.finish_reason)
    if any(call.name == END_CONVERSATION for call in response.tool_calls):
        return UserMove(response.content, ended=True, finish_reason=finish)
    return UserMove(response.content, finish_reason=finish)
