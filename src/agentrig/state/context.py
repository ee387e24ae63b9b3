"""``AgentContext``: the message store, metadata, system prompt and response format."""

from __future__ import annotations

from typing import Self

from pydantic import Field

from agentrig._model import JsonObject, Serializable
from agentrig.messages import Message, Messages
from agentrig.store import MESSAGES, MessageStore


class AgentContext(Serializable):
    """Session data the agent carries across executions. The system prompt is not a message."""

    store: MessageStore = Field(default_factory=MessageStore)
    metadata: JsonObject = Field(default_factory=dict)
    system_prompt: str = ""
    response_format: JsonObject | None = None

    def messages(self) -> Messages:
        """The ``messages`` section."""
        return self.store.messages_of(MESSAGES)

    def with_messages(self, messages: Messages) -> Self:
        """A copy whose ``messages`` section is replaced."""
        return self._replace(store=self.store.section(MESSAGES).set(messages))

    def with_appended(self, *messages: Message) -> Self:
        """A copy with ``messages`` appended to the ``messages`` section."""
        return self._replace(store=self.store.section(MESSAGES).append(messages))
