"""``MessageStore``: named, ordered sections of messages with an immutable section API."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn, Self

from pydantic import Field, JsonValue, field_validator

from agentrig._model import JsonObject, Serializable
from agentrig.errors import InvalidInputError
from agentrig.messages import Message, Messages

MESSAGES = "messages"
EXECUTION_BUFFER = "execution_buffer"
SUMMARY = "summary"
BUFFER = "buffer"
INFERENCE_ORDER: tuple[str, ...] = (SUMMARY, BUFFER, MESSAGES, EXECUTION_BUFFER)
"""The order in which ``AgentState.messages_for_inference()`` joins sections (DESIGN D1)."""


class Section(Serializable):
    """A named list of messages."""

    name: str = Field(min_length=1)
    messages: Messages = Field(default_factory=Messages)


class MessageStore(Serializable):
    """Ordered, uniquely named sections plus free-form parameters. Every change returns a new store."""

    sections: tuple[Section, ...] = ()
    parameters: JsonObject = Field(default_factory=dict)

    @field_validator("sections")
    @classmethod
    def _unique_names(cls, sections: tuple[Section, ...]) -> tuple[Section, ...]:
        names = [section.name for section in sections]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"duplicate section names: {', '.join(duplicates)}")
        return sections

    def section(self, name: str) -> SectionRef:
        """Operations on the section called ``name`` (which need not exist yet)."""
        return SectionRef(self, name)

    def section_names(self) -> tuple[str, ...]:
        """Names of the sections, in store order."""
        return tuple(section.name for section in self.sections)

    def messages_of(self, name: str) -> Messages:
        """Messages of section ``name``; empty when it does not exist."""
        for section in self.sections:
            if section.name == name:
                return section.messages
        return _EMPTY

    def select(self, names: Iterable[str]) -> Messages:
        """Messages of the named sections joined in the given order; missing sections are skipped.

        One name may be given as text.
        """
        return self._select(_section_names(names, "names", "MessageStore.select() argument"))

    def _select(self, names: tuple[str, ...]) -> Messages:
        """``select`` for names known to be valid (a compiler's, checked when it was made)."""
        # Plain loops: a comprehension is a call of its own, and this runs before every step.
        by_name: dict[str, Messages] = {}
        for section in self.sections:
            by_name[section.name] = section.messages
        parts: list[Messages] = []
        for name in names:
            if name in by_name:
                parts.append(by_name[name])
        return Messages.concat(*parts)

    def to_messages(self) -> Messages:
        """Messages of every section, in store order."""
        return Messages.concat(*(section.messages for section in self.sections))

    def with_parameter(self, key: str, value: JsonValue) -> Self:
        """A copy with parameter ``key`` set to ``value``."""
        return self.evolve(parameters={**self.parameters, key: value})

    def _with_section(self, name: str, messages: Messages) -> Self:
        sections = self.sections
        new = Section._trusted(name=name, messages=messages)
        for index, section in enumerate(sections):
            if section.name == name:
                return self._replace(sections=(*sections[:index], new, *sections[index + 1 :]))
        return self._replace(sections=(*sections, new))

    def _appended(self, name: str, messages: Messages) -> Self:
        """A copy with ``messages`` (non-empty, of type ``Messages``) appended to section
        ``name``: ``section(name).append(messages)`` in one pass over the sections."""
        sections = self.sections
        for index, section in enumerate(sections):
            if section.name == name:
                joined = Messages.concat(section.messages, messages)
                new = Section._trusted(name=name, messages=joined)
                return self._replace(sections=(*sections[:index], new, *sections[index + 1 :]))
        return self._replace(sections=(*sections, Section._trusted(name=name, messages=messages)))

    def _without_section(self, name: str) -> Self:
        kept = tuple(section for section in self.sections if section.name != name)
        return self if len(kept) == len(self.sections) else self._replace(sections=kept)


_EMPTY = Messages()


class SectionRef:
    """The immutable section API: every operation returns a new ``MessageStore``."""

    __slots__ = ("_name", "_store")

    def __init__(self, store: MessageStore, name: str) -> None:
        if type(name) is not str or not name:
            _reject_name(name, "name", "section name")
        self._store = store
        self._name = name

    @property
    def name(self) -> str:
        """The section name."""
        return self._name

    def get(self) -> Section:
        """The section, or an empty one when it does not exist."""
        return Section(name=self._name, messages=self.messages())

    def messages(self) -> Messages:
        """The section's messages."""
        return self._store.messages_of(self._name)

    def exists(self) -> bool:
        """True when the store has this section."""
        return self._name in self._store.section_names()

    def is_empty(self) -> bool:
        """True when the section is missing or holds no messages."""
        return not self.messages()

    def append(self, messages: Messages | Message | Iterable[Message]) -> MessageStore:
        """A store with ``messages`` appended (the section is created at the end if missing)."""
        # Messages know their trace executions: no per-message scan (the general path below
        # gives the same store, only slower: hence no mutation)
        if type(messages) is Messages:  # pragma: no mutate
            if not messages:
                return self._store
            return self._store._appended(self._name, messages)
        added = _as_tuple(messages)
        if not added:
            return self._store
        return self._store._with_section(self._name, self.messages().appended(*added))

    def set(self, messages: Messages | Iterable[Message]) -> MessageStore:
        """A store with the section's messages replaced."""
        new = messages if isinstance(messages, Messages) else Messages(_as_tuple(messages))
        return self._store._with_section(self._name, new)

    def clear(self) -> MessageStore:
        """A store with the section emptied (kept, if it existed)."""
        if not self.exists() or self.is_empty():
            return self._store
        return self._store._with_section(self._name, _EMPTY)

    def remove(self) -> MessageStore:
        """A store without this section."""
        return self._store._without_section(self._name)


def _section_names(names: Iterable[str], field: str, what: str) -> tuple[str, ...]:
    """``names`` as a tuple of section names (one name may be given as text); anything else
    raises ``InvalidInputError`` naming ``field`` (or the item at fault) in ``what``."""
    if isinstance(names, str):
        names = (names,)
    elif type(names) is not tuple:  # pragma: no mutate (copying a tuple again is only slower)
        if not isinstance(names, Iterable):
            _reject_name(names, field, what)
        names = tuple(names)
    for index, name in enumerate(names):
        if type(name) is not str or not name:
            _reject_name(name, f"{field}[{index}]", what)
    return names


def _reject_name(name: object, field: str, what: str) -> NoReturn:
    got = repr(name) if isinstance(name, str) else type(name).__name__
    reason = f"expected a non-empty section name (text) such as 'messages', got {got}"
    raise InvalidInputError(what, [(field, reason)])


def _as_tuple(messages: Messages | Message | Iterable[Message]) -> tuple[Message, ...]:
    if isinstance(messages, Message):
        return (messages,)
    if isinstance(messages, Messages):
        return messages.to_tuple()
    if isinstance(messages, str) or not isinstance(messages, Iterable):
        _reject_message(messages, "messages")
    items = tuple(messages)
    for index, item in enumerate(items):
        if not isinstance(item, Message):
            _reject_message(item, f"messages[{index}]")
    return items


def _reject_message(value: object, field: str) -> NoReturn:
    reason = (
        f"expected a Message or an iterable of them, got {type(value).__name__}: "
        "make one with Message.user(text), Message.assistant(text) or Message.system(text)"
    )
    raise InvalidInputError("section messages", [(field, reason)])
