"""Messages: roles, tool calls, tool results, and the immutable ``Messages`` list."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum
from itertools import chain
from typing import Any, Literal, Self

from pydantic import Field, JsonValue

from agentrig import clock
from agentrig._model import FrozenList, FrozenModel, JsonObject
from agentrig.errors import InvalidInputError

TRACE_KEY = "is_trace"
EXECUTION_ID_KEY = "execution_id"
STEP_ID_KEY = "step_id"
AGENT_ID_KEY = "agent_id"


class Role(StrEnum):
    """Who a message is from."""

    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ToolCall(FrozenModel):
    """A tool call requested by the model."""

    id: str = Field(default_factory=lambda: clock.new_id("tool_call"))
    name: str = Field(min_length=1)
    arguments: JsonObject = Field(default_factory=dict)

    def __str__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self.arguments.items())
        return f"{self.name}({args})"


class ToolResult(FrozenModel):
    """The result of one tool call, as the model sees it."""

    content: str
    call_id: str
    tool_name: str
    is_error: bool = False


class Message(FrozenModel):
    """One immutable message. ``metadata`` carries tags such as ``step_id`` and ``is_trace``."""

    role: Role
    content: str = ""
    name: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_result: ToolResult | None = None
    metadata: JsonObject = Field(default_factory=dict)
    id: str = Field(default_factory=lambda: clock.new_id("message"))
    created_at: datetime = Field(default_factory=clock.now)

    @classmethod
    def system(cls, content: str) -> Self:
        """A system message."""
        return cls(role=Role.SYSTEM, content=content)

    @classmethod
    def user(cls, content: str) -> Self:
        """A user message."""
        return cls(role=Role.USER, content=content)

    @classmethod
    def assistant(cls, content: str = "", tool_calls: Iterable[ToolCall] = ()) -> Self:
        """An assistant message, optionally requesting tool calls."""
        return cls(role=Role.ASSISTANT, content=content, tool_calls=tuple(tool_calls))

    @classmethod
    def tool(cls, result: ToolResult) -> Self:
        """A tool message carrying ``result``."""
        return cls(role=Role.TOOL, content=result.content, tool_result=result)

    @property
    def is_trace(self) -> bool:
        """True when the message belongs to a non-final step (DESIGN D1)."""
        return self.metadata.get(TRACE_KEY) is True

    @property
    def execution_id(self) -> str | None:
        """The execution that produced this message, if tagged."""
        value = self.metadata.get(EXECUTION_ID_KEY)
        return value if isinstance(value, str) else None

    def type(self) -> Literal["assistant_tool_calls", "tool_result", "text"]:
        """What kind of message this is."""
        if self.role is Role.ASSISTANT and self.tool_calls:
            return "assistant_tool_calls"
        if self.role is Role.TOOL and self.tool_result is not None:
            return "tool_result"
        return "text"

    def is_empty(self) -> bool:
        """True when the message has no content, metadata, tool calls or tool result."""
        return not (self.content or self.metadata or self.tool_calls or self.tool_result)

    def with_metadata(self, **entries: JsonValue) -> Self:
        """A copy with ``entries`` added to the metadata (id and time are kept)."""
        return self.evolve(metadata={**self.metadata, **entries})


class Messages(FrozenList[Message]):
    """An immutable list of messages.

    It remembers which executions its trace messages came from, so the default compiler can
    decide in O(1) that nothing needs filtering.
    """

    __slots__ = ("_trace_executions",)
    item_type = Message

    def __init__(self, items: Iterable[Message] = ()) -> None:
        super().__init__(items)
        self._trace_executions = _trace_executions_of(self._items)

    def _init_from(self, items: tuple[Message, ...]) -> None:
        self._items = items
        self._trace_executions = _trace_executions_of(items)

    @classmethod
    def _tagged(
        cls, items: tuple[Message, ...], trace_executions: frozenset[str | None]
    ) -> Messages:
        """Messages whose trace executions are already known (internal fast path)."""
        new = cls.__new__(cls)
        new._items = items
        new._trace_executions = trace_executions
        return new

    @classmethod
    def of(cls, *messages: Message) -> Messages:
        """Messages from the given messages."""
        return cls(messages)

    @classmethod
    def from_text(cls, text: str, role: Role | str = Role.USER) -> Messages:
        """One message with ``text`` and ``role``."""
        return cls((Message(role=role, content=text),))

    @classmethod
    def concat(cls, *parts: Messages) -> Messages:
        """All messages of ``parts``, in order."""
        parts = tuple([part for part in parts if part._items])
        if len(parts) == 1:
            return parts[0]
        new = cls.__new__(cls)
        if len(parts) == 2:  # the common case: tuple addition is the cheapest copy
            first, second = parts
            new._items = first._items + second._items
            new._trace_executions = first._trace_executions | second._trace_executions
            return new
        new._items = tuple(chain.from_iterable(part._items for part in parts))
        new._trace_executions = frozenset().union(*(part._trace_executions for part in parts))
        return new

    def appended(self, *items: Message) -> Messages:
        """A new list with ``items`` added at the end."""
        if not items:
            return self
        new = Messages.__new__(Messages)
        new._items = self._items + items
        added = _trace_executions_of(items)
        new._trace_executions = self._trace_executions | added if added else self._trace_executions
        return new

    @property
    def trace_executions(self) -> frozenset[str | None]:
        """Execution ids of the trace messages held (None for traces without one)."""
        return self._trace_executions

    def has_traces(self) -> bool:
        """True when any message is a trace."""
        return bool(self._trace_executions)

    def for_roles(self, *roles: Role | str) -> Messages:
        """Only the messages with one of ``roles``."""
        wanted = {_as_role(role) for role in roles}
        return self.filtered(lambda message: message.role in wanted)

    def roles(self) -> tuple[Role, ...]:
        """The role of each message, in order."""
        return tuple(message.role for message in self._items)

    def is_empty(self) -> bool:
        """True when there are no messages, or all of them are empty."""
        return all(message.is_empty() for message in self._items)

    def to_text(self) -> str:
        """The non-empty contents joined by newlines."""
        return "\n".join(message.content for message in self._items if message.content)

    def __str__(self) -> str:
        return self.to_text()

    def to_list(self) -> list[dict[str, Any]]:
        """The messages as JSON-compatible dicts."""
        return [message.model_dump(mode="json") for message in self._items]


def _as_role(value: Role | str) -> Role:
    try:
        return Role(value)
    except ValueError:
        valid = ", ".join(role.value for role in Role)
        raise InvalidInputError(
            "role", [("role", f"{value!r} is not a role; valid: {valid}")]
        ) from None


def _trace_executions_of(items: tuple[Message, ...]) -> frozenset[str | None]:
    # ``is_trace`` and ``execution_id`` inlined: this runs over every message a list is built
    # from (deserialization included), and most messages carry no trace tag.
    found: set[str | None] = set()
    for message in items:
        metadata = message.metadata
        if metadata and metadata.get(TRACE_KEY) is True:
            execution_id = metadata.get(EXECUTION_ID_KEY)
            found.add(execution_id if isinstance(execution_id, str) else None)
    return frozenset(found) if found else _NO_TRACES


_NO_TRACES: frozenset[str | None] = frozenset()
