"""The simulated user: what its model is asked (roles reversed, its persona, goal and facts in
the system prompt, the tool that ends the conversation) and the move it makes of the answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentrig.fakes import FunctionLLM, call, reply
from agentrig.fakes.llm import Turn
from agentrig.harness.live.simulated_user import (
    END_CONVERSATION,
    START,
    UserMove,
    next_user_move,
    user_system_prompt,
)
from agentrig.harness.live.transcript import AgentReply, Exchange, Transcript
from agentrig.harness.scenarios.live_model import UserSpec
from agentrig.messages import Role
from agentrig.state import InferenceRequest, InferenceResponse, LlmConfig


def spec(**fields: Any) -> UserSpec:
    given = {
        "persona": "Dana, terse",
        "goal": "a refund for her broken mug",
        "model": {"provider": "openai", "name": "gpt-4.1-mini"},
    }
    return UserSpec.model_validate({**given, **fields})


def move(
    user: UserSpec, transcript: Transcript, answer: Turn, config: LlmConfig | None = None
) -> tuple[UserMove, list[InferenceRequest]]:
    """The user's move when its model gives ``answer``, and the requests the model got."""
    asked: list[InferenceRequest] = []

    def model(request: InferenceRequest) -> Turn:
        asked.append(request)
        return answer

    return asyncio.run(next_user_move(user, transcript, FunctionLLM(model), config)), asked


TWO_TURNS = Transcript(
    (
        Exchange("My mug broke.", AgentReply("Which order is it?")),
        Exchange("It is A-1029.", AgentReply("")),  # the agent said nothing
    )
)


def test_the_system_prompt_gives_the_persona_the_goal_and_how_to_end() -> None:
    assert user_system_prompt(spec()) == (
        "You are playing a person who is talking to an AI assistant. Stay in character: you\n"
        "are the user, never the assistant.\n"
        "Who you are: Dana, terse\n"
        "Your goal: a refund for her broken mug\n"
        "Write only your next message to the assistant: plain text, no role labels.\n"
        "When your goal is met, or clearly cannot be met, call end_conversation."
    )


def test_the_system_prompt_lists_the_facts_the_user_knows_and_forbids_others() -> None:
    prompt = user_system_prompt(spec(knows={"order_id": "A-1029", "email": "dana@example.com"}))
    assert prompt.splitlines()[4:10] == [
        "Facts you know (disclose one only when it is asked for or needed):",
        "- order_id: A-1029",
        "- email: dana@example.com",
        "You know no other facts: never invent an id, a number, a name or an",
        "address; say you do not know.",
        "Write only your next message to the assistant: plain text, no role labels.",
    ]


def test_the_user_model_sees_the_conversation_with_roles_reversed() -> None:
    user = spec(knows={"order_id": "A-1029"})
    config = LlmConfig(provider="openai", model="gpt-4.1-mini", temperature=0.7)
    made, [request] = move(user, TWO_TURNS, reply("Thanks."), config)
    assert made == UserMove("Thanks.", finish_reason="stop")
    assert [(m.role, m.content) for m in request.messages] == [
        (Role.SYSTEM, user_system_prompt(user)),
        (Role.USER, START),
        (Role.ASSISTANT, "My mug broke."),
        (Role.USER, "Which order is it?"),
        (Role.ASSISTANT, "It is A-1029."),
        (Role.USER, "(the assistant said nothing)"),
    ]
    assert START == "(The conversation starts. Write your first message to the assistant.)"
    assert request.llm_config == config


def test_a_message_the_agent_never_answered_is_the_users_last() -> None:
    unanswered = Transcript((Exchange("Hello?"),))
    _, [request] = move(spec(), unanswered, reply("Anyone there?"))
    assert [(m.role, m.content) for m in request.messages][1:] == [
        (Role.USER, START),
        (Role.ASSISTANT, "Hello?"),
    ]


def test_the_user_model_is_offered_the_tool_that_ends_the_conversation() -> None:
    _, [request] = move(spec(), Transcript(), reply("Hi."))
    [tool] = request.tools
    assert tool.name == END_CONVERSATION == "end_conversation"
    assert tool.description == "End the conversation: your goal is met, or it cannot be met."
    assert tool.parameters == {
        "type": "object",
        "properties": {"reason": {"type": "string", "description": "Why you end it."}},
        "required": [],
    }
    assert request.llm_config is None


def test_calling_end_conversation_ends_it_keeping_what_the_user_said() -> None:
    answer = Turn(text="Thanks, bye.", calls=call(END_CONVERSATION, reason="refunded").calls)
    made, _ = move(spec(), TWO_TURNS, answer)
    assert made == UserMove("Thanks, bye.", ended=True, finish_reason="tool_calls")


def test_calling_another_tool_does_not_end_it() -> None:
    made, _ = move(spec(), TWO_TURNS, Turn(text="Hm.", calls=call("lookup_order").calls))
    assert made.ended is False
    assert made.text == "Hm."


def test_end_conversation_among_other_calls_ends_it() -> None:
    calls = call("lookup_order").calls + call(END_CONVERSATION).calls
    made, _ = move(spec(), TWO_TURNS, Turn(text="", calls=calls))
    assert made.ended is True


@pytest.mark.parametrize("reason", ["length", "content_filter", "stop"])
def test_the_models_finish_reason_is_kept_as_text(reason: str) -> None:
    made, _ = move(spec(), TWO_TURNS, Turn(text="My mug", finish_reason=reason))  # type: ignore[arg-type]
    assert made == UserMove("My mug", finish_reason=reason)
    assert type(made.finish_reason) is str
    ended, _ = move(
        spec(),
        TWO_TURNS,
        Turn(text="", calls=call(END_CONVERSATION).calls, finish_reason=reason),  # type: ignore[arg-type]
    )
    assert ended == UserMove("", ended=True, finish_reason=reason)


def test_an_answer_without_a_finish_reason_has_none() -> None:
    class Unfinished:
        async def ainfer(self, request: InferenceRequest) -> InferenceResponse:
            return InferenceResponse(content="Hi.")

    made = asyncio.run(next_user_move(spec(), TWO_TURNS, Unfinished(), None))
    assert made == UserMove("Hi.", finish_reason=None)


def test_an_opening_is_the_first_message_without_asking_the_model() -> None:
    user = spec(opening="My mug arrived broken.")
    made, asked = move(user, Transcript(), reply("not this"))
    assert made == UserMove("My mug arrived broken.")
    assert asked == []
    after, asked = move(
        user,
        Transcript((Exchange("My mug arrived broken.", AgentReply("Oh.")),)),
        reply("Refund it."),
    )
    assert after == UserMove("Refund it.", finish_reason="stop")
    assert len(asked) == 1
