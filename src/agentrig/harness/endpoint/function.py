"""A Python function as the model: it decides each reply, in place of a turn's ``model:``
script, as pydantic-ai's ``FunctionModel`` does (the scenario still gives the user turns, the
agent's declared tools and prompt, the expectations and the invariants, which hold its replies
as they hold scripted ones)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agentrig.errors import InvalidInputError
from agentrig.harness.scenarios.model import ModelReply
from agentrig.messages import Message, Role
from agentrig.state import ToolSchema


@dataclass(frozen=True, slots=True)
class ReplyRequest:
    """What a reply function is asked: one request of a session, as the endpoint read it."""

    number: int
    """The request's place in the session (1-based)."""
    turn: int
    """The scenario turn it belongs to (1-based: the user messages it carries)."""
    format: str
    """``chat``, ``responses`` or ``anthropic``: the API the agent called."""
    model: str
    messages: tuple[Message, ...]
    """The conversation without the system prompt (a Responses ``previous_response_id``
    expanded), as agentrig messages: user, assistant with its tool calls, one tool message per
    tool result."""
    system: str | None
    tools: tuple[ToolSchema, ...]
    """The tools the request offers, with their JSON Schemas."""
    settings: Mapping[str, Any]
    """Every other field of the body as sent (``temperature``, ``tool_choice``, ...)."""

    @property
    def user(self) -> str:
        """The newest user message's text ("" when there is none)."""
        for message in reversed(self.messages):
            if message.role is Role.USER:
                return message.content
        return ""

    @property
    def last(self) -> Message | None:
        """The newest message (a tool result after a call, the user's message at a turn's
        start), or None."""
        return self.messages[-1] if self.messages else None


ReplyFunction = Callable[[ReplyRequest], "ModelReply | Mapping[str, Any] | str"]
"""``def reply(request: ReplyRequest) -> ModelReply | dict | str``: a ``str`` is the text of the
answer; a ``dict`` is a reply as a scenario file writes it (``{"call": "get_weather(city=Paris)"}``,
``{"say": "Hi", "latency": 0.5}``, ``{"fault": {"status": 429}}``); a ``ModelReply`` as it is."""


def reply_of(value: object) -> ModelReply:
    """The ``ModelReply`` a reply function's return value stands for; ``InvalidInputError``
    naming the fault when it stands for none."""
    if isinstance(value, ModelReply):
        return value
    if isinstance(value, str):
        return ModelReply(say=value)
    if isinstance(value, Mapping):
        try:
            return ModelReply.model_validate(dict(value))
        except ValidationError as error:
            problems = [
                (".".join(str(part) for part in item["loc"]) or "reply", item["msg"])
                for item in error.errors()
            ]
            raise InvalidInputError("reply", problems) from None
    raise InvalidInputError(
        "reply", [("", f"a reply function returns a str, a dict or a ModelReply, not {value!r}")]
    )
