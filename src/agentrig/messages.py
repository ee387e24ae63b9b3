"""Messages: roles, tool calls, tool results, and the immutable ``Messages`` list."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator
from enum import StrEnum
from itertools import chain
from typing import Any, Literal, Self, cast, overload

from pydantic import Field, JsonValue, StrictBool

from agentrig import clock
from agentrig._model import FrozenList, JsonObject, Serializable, Timestamp
from agentrig.errors import InvalidInputError

TRACE_KEY = "is_trace"
EXECUTION_ID_KEY = "execution_id"
STEP_ID_KEY = "step_id"
AGENT_ID_KEY = "agent_id"
NO_TRACES: frozenset[str | None] = frozenset()
"""The trace executions of a list of messages that holds no tool trace (shared, not rebuilt)."""


class Role(StrEnum):
    """Who a message is from."""

    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ToolCall(Serializable):
    """A tool call requested by the model."""

    id: str = Field(default_factory=lambda: clock.new_id("tool_call"))
    name: str = Field(min_length=1)
    arguments: JsonObject = Field(default_factory=dict)

    def __str__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self.arguments.items())
        return f"{self.name}({args})"


class ToolResult(Serializable):
    """The result of one tool call, as the model sees it."""

    content: str
    call_id: str
    tool_name: str
    is_error: StrictBool = False


class Message(Serializable):
    """One immutable message. ``metadata`` carries tags such as ``step_id`` and ``is_trace``.

    ``provider_data`` holds provider-specific data of the message (Anthropic's thinking blocks),
    kept as the provider sent it and read only by that provider when the message is sent back.
    It is left out of the serialized form when empty.
    """

    role: Role
    content: str = ""
    name: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_result: ToolResult | None = None
    metadata: JsonObject = Field(default_factory=dict)
    provider_data: JsonObject = Field(default_factory=dict, exclude_if=operator.not_)
    id: str = Field(default_factory=lambda: clock.new_id("message"))
    created_at: Timestamp = Field(default_factory=clock.now)

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

    The messages are kept in chunks of at most 32 that lists share: appending a few messages
    copies at most the last chunk and the tuple of chunk references, and ``concat`` joins the
    chunk tuples. Every step keeps its input messages, so a flat copy per step would make a
    run's memory quadratic. The flat tuple (``to_tuple()``, slices, equality) is built on demand
    and not cached, for the same reason.
    """

    # ``_chunks``: non-empty tuples of messages, in order; any two neighbours together hold more
    # than _CHUNK_SIZE, so there are at most 2 * len / _CHUNK_SIZE + 1 of them. The flat
    # ``_items`` slot of ``FrozenList`` is unused.
    __slots__ = ("_chunks", "_length", "_trace_executions")
    item_type = Message

    def __init__(self, items: Iterable[Message] = ()) -> None:
        self._init_from(tuple(items))

    def _init_from(self, items: tuple[Message, ...]) -> None:
        self._chunks = _chunked(items)
        self._length = len(items)
        self._trace_executions = _trace_executions_of(items)

    @classmethod
    def _tagged(
        cls, items: tuple[Message, ...], trace_executions: frozenset[str | None]
    ) -> Messages:
        """Messages whose trace executions are already known (internal fast path)."""
        new = cls.__new__(cls)
        new._chunks = (items,) if 0 < len(items) <= _CHUNK_SIZE else _chunked(items)
        new._length = len(items)
        new._trace_executions = trace_executions
        return new

    @classmethod
    def of(cls, *messages: Message) -> Messages:
        """Messages from the given messages."""
        return cls(messages)

    @classmethod
    def from_text(cls, text: str, role: Role | str = Role.USER) -> Messages:
        """One message with ``text`` and ``role``."""
        # A role's value ("user") is validated into the Role it names.
        return cls((Message(role=cast(Role, role), content=text),))

    @classmethod
    def concat(cls, *parts: Messages) -> Messages:
        """All messages of ``parts``, in order (their chunks are shared, not copied)."""
        if len(parts) == 2:  # the common case, without the loop
            first, second = parts
            if not first._length:
                return second
            return _joined(cls, first, second) if second._length else first
        joined = None
        for part in parts:
            if part._length:
                joined = part if joined is None else _joined(cls, joined, part)
        return cls() if joined is None else joined

    def appended(self, *items: Message) -> Messages:
        """A new list with ``items`` added at the end."""
        if not items:
            return self
        new = Messages.__new__(Messages)
        chunks = self._chunks
        if chunks and len(chunks[-1]) + len(items) <= _CHUNK_SIZE:
            new._chunks = (*chunks[:-1], chunks[-1] + items)
        else:  # the last chunk and the first new one together hold more than _CHUNK_SIZE
            new._chunks = chunks + _chunked(items)
        new._length = self._length + len(items)
        added = _trace_executions_of(items)
        known = self._trace_executions
        new._trace_executions = known if not added or added <= known else known | added
        return new

    def to_tuple(self) -> tuple[Message, ...]:
        """The messages as a tuple (built on each call: O(len))."""
        chunks = self._chunks
        if len(chunks) == 1:
            return chunks[0]
        return tuple(chain.from_iterable(chunks))

    def first(self) -> Message | None:
        """The first message, or None."""
        return self._chunks[0][0] if self._chunks else None

    def last(self) -> Message | None:
        """The last message, or None."""
        return self._chunks[-1][-1] if self._chunks else None

    def __len__(self) -> int:
        return self._length

    def __bool__(self) -> bool:
        return self._length > 0

    def __iter__(self) -> Iterator[Message]:
        chunks = self._chunks
        if len(chunks) == 1:
            return iter(chunks[0])
        return chain.from_iterable(chunks)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Messages: ...
    def __getitem__(self, index: int | slice) -> Message | Messages:
        if isinstance(index, slice):
            return self._wrap(self.to_tuple()[index])
        position = operator.index(index)
        if position < 0:  # from the end: the last messages are the ones usually asked for
            for chunk in reversed(self._chunks):
                if -position <= len(chunk):
                    return chunk[position]
                position += len(chunk)
        else:
            for chunk in self._chunks:
                if position < len(chunk):
                    return chunk[position]
                position -= len(chunk)
        raise IndexError("Messages index out of range")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self) or not isinstance(other, Messages):
            return NotImplemented
        if self._length != other._length:
            return False
        # Lists from one history usually share chunks and their boundaries: comparing the chunk
        # tuples then compares shared chunks by identity. Other boundaries need the flat form.
        return self._chunks == other._chunks or self.to_tuple() == other.to_tuple()

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
        return tuple(message.role for message in self)

    def is_empty(self) -> bool:
        """True when there are no messages, or all of them are empty."""
        return all(message.is_empty() for message in self)

    def to_text(self) -> str:
        """The non-empty contents joined by newlines."""
        return "\n".join(message.content for message in self if message.content)

    def __str__(self) -> str:
        return self.to_text()

    def to_list(self) -> list[dict[str, Any]]:
        """The messages as JSON-compatible dicts."""
        return [message.model_dump(mode="json") for message in self]


_CHUNK_SIZE = 32
"""Most messages a chunk of ``Messages`` holds: an append copies up to this many references, and
each list that is kept holds about ``len / _CHUNK_SIZE`` chunk references of its own."""

_Chunks = tuple[tuple[Message, ...], ...]


def _chunked(items: tuple[Message, ...]) -> _Chunks:
    """``items`` as chunks: full ones, then the rest."""
    if len(items) <= _CHUNK_SIZE:
        return (items,) if items else ()
    return tuple(items[start : start + _CHUNK_SIZE] for start in range(0, len(items), _CHUNK_SIZE))


def _joined(cls: type[Messages], first: Messages, second: Messages) -> Messages:
    """``first`` then ``second``, both non-empty: their chunk tuples joined, with the two chunks
    where they meet merged if they fit in one (which keeps the neighbour rule of ``_chunks``)."""
    left, right = first._chunks, second._chunks
    last, head = left[-1], right[0]
    new = cls.__new__(cls)
    if len(last) + len(head) > _CHUNK_SIZE:
        new._chunks = left + right
    elif len(right) == 1:
        new._chunks = (*left[:-1], last + head)
    else:
        new._chunks = (*left[:-1], last + head, *right[1:])
    new._length = first._length + second._length
    known, added = first._trace_executions, second._trace_executions
    if not added or added <= known:
        new._trace_executions = known
    else:
        new._trace_executions = added if known <= added else known | added
    return new


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
    return frozenset(found) if found else NO_TRACES
