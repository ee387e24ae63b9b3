"""Context compilers: what messages the model sees before each call (seed 003).

Compilers are small classes with one method, ``compile(state) -> Messages``, plus a name
registry. Capabilities wrap the builder's compiler: read ``builder.context_compiler()``, wrap it,
set it back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from difflib import get_close_matches
from typing import Protocol, runtime_checkable

from agentrig.errors import ConfigurationError, InvalidInputError
from agentrig.messages import Message, Messages, Role
from agentrig.state import AgentState
from agentrig.store import INFERENCE_ORDER, MESSAGES, _section_names


@runtime_checkable
class ContextCompiler(Protocol):
    """Turns a state into the messages sent to the model."""

    def compile(self, state: AgentState) -> Messages:
        """The messages for the next inference."""
        ...


def checked_messages(compiler: ContextCompiler, compiled: object) -> Messages:
    """What ``compiler.compile`` returned, as ``Messages`` (a list or tuple of ``Message`` is
    accepted); anything else is the compiler's bug: a ``ConfigurationError`` naming it."""
    if isinstance(compiled, Messages):
        return compiled
    items = tuple(compiled) if isinstance(compiled, list | tuple) else None
    if items is None or not all(isinstance(item, Message) for item in items):
        raise ConfigurationError(
            f"the context compiler {compiler!r} returned {type(compiled).__name__}: "
            "compile(state) must return Messages (or a list of Message)"
        )
    return Messages(items)


class ConversationWithCurrentToolTrace:
    """The default: ``summary``, ``buffer``, ``messages``, ``execution_buffer``, minus traces of
    other executions.

    Traces left in ``messages`` by inline mode are hidden once their execution is over, at read
    time; nothing is deleted. When every trace belongs to the current execution (always so in
    separated mode) the sections are returned without a per-message scan. One section name
    may be given as text.
    """

    def __init__(self, sections: Iterable[str] = INFERENCE_ORDER) -> None:
        self.sections = _section_names(sections, "sections", "ConversationWithCurrentToolTrace")
        if not self.sections:  # the model would be sent nothing at all
            reason = f"name at least one section; the default is {', '.join(INFERENCE_ORDER)}"
            raise InvalidInputError("ConversationWithCurrentToolTrace", [("sections", reason)])

    def compile(self, state: AgentState) -> Messages:
        """The conversation plus the current execution's tool trace."""
        messages = state.context.store._select(self.sections)
        execution = state.execution
        current = execution.execution_id if execution is not None else None
        traces = messages.trace_executions
        if not traces or (len(traces) == 1 and current in traces):
            return messages
        return messages.filtered(lambda m: not m.is_trace or m.execution_id == current)

    def __repr__(self) -> str:
        return f"ConversationWithCurrentToolTrace(sections={self.sections!r})"


class SelectedSections:
    """The named sections in the given order (missing ones skipped); no names = ``messages``.
    One name may be given as text."""

    def __init__(self, sections: Iterable[str] = ()) -> None:
        self.sections = _section_names(sections, "sections", "SelectedSections")

    def compile(self, state: AgentState) -> Messages:
        """The selected sections, unfiltered."""
        return state.context.store._select(self.sections or (MESSAGES,))

    def __repr__(self) -> str:
        return f"SelectedSections({self.sections!r})"


class AllSections:
    """Every section in store order, unfiltered."""

    def compile(self, state: AgentState) -> Messages:
        """All messages of the store."""
        return state.context.store.to_messages()

    def __repr__(self) -> str:
        return "AllSections()"


def estimate_tokens(message: Message) -> int:
    """A rough token count: four characters per token, plus a little per message and call."""
    size = len(message.content) + sum(len(str(call)) for call in message.tool_calls)
    return 4 + size // 4


class TokenBudgetCompiler:
    """Wraps another compiler and keeps only the most recent messages that fit ``max_tokens``.

    The first user message is always kept, and a tool result is never kept without the assistant
    message that called it.
    """

    def __init__(
        self,
        inner: ContextCompiler,
        max_tokens: int,
        estimator: Callable[[Message], int] = estimate_tokens,
    ) -> None:
        _check_max_tokens("TokenBudgetCompiler", max_tokens)
        if isinstance(inner, type) or not isinstance(inner, ContextCompiler):
            raise ConfigurationError(
                f"TokenBudgetCompiler inner must be a context compiler (an instance with "
                f"compile(state)), got {inner!r}: e.g. ConversationWithCurrentToolTrace()"
            )
        _check_estimator("TokenBudgetCompiler", estimator)
        self.inner = inner
        self.max_tokens = max_tokens
        self.estimator = estimator

    def compile(self, state: AgentState) -> Messages:
        """The inner compiler's messages, trimmed from the front to fit the budget."""
        messages = self._inner_messages(state)
        first_user = next((m for m in messages if m.role is Role.USER), None)
        budget = self.max_tokens - (self._estimate(first_user) if first_user else 0)
        start = len(messages)
        while start > 0 and budget - self._estimate(messages[start - 1]) >= 0:
            start -= 1
            budget -= self._estimate(messages[start])
        while start < len(messages) and messages[start].role is Role.TOOL:
            start += 1
        kept = messages[start:]
        if first_user is not None and first_user not in kept:
            kept = (first_user, *kept)
        return Messages(kept)

    def _inner_messages(self, state: AgentState) -> tuple[Message, ...]:
        return checked_messages(self.inner, self.inner.compile(state)).to_tuple()

    def _estimate(self, message: Message) -> int:
        tokens = self.estimator(message)
        if type(tokens) is not int or tokens < 0:
            raise ConfigurationError(
                f"TokenBudgetCompiler estimator returned {tokens!r} for a {message.role.value} "
                "message: it must return a whole number of tokens >= 0"
            )
        return tokens

    def __repr__(self) -> str:
        return f"TokenBudgetCompiler({self.inner!r}, max_tokens={self.max_tokens})"


def _check_max_tokens(owner: str, max_tokens: object) -> None:
    """Refuse a token budget that is not a whole number >= 1 (``ConfigurationError``)."""
    if type(max_tokens) is not int or max_tokens < 1:
        raise ConfigurationError(
            f"{owner} max_tokens must be a whole number >= 1, got {max_tokens!r}: "
            "the most tokens the model may be sent, e.g. 8000"
        )


def _check_estimator(owner: str, estimator: object) -> None:
    """Refuse an estimator that cannot be called (``ConfigurationError``)."""
    if not callable(estimator):
        raise ConfigurationError(
            f"{owner} estimator must be a function from a Message to its token count, got "
            f"{type(estimator).__name__}: leave it out to use estimate_tokens"
        )


_REGISTRY: dict[str, Callable[[], ContextCompiler]] = {
    "conversation_with_current_tool_trace": ConversationWithCurrentToolTrace,
    "selected_sections": SelectedSections,
    "all_sections": AllSections,
}


def register_compiler(
    name: str, factory: Callable[[], ContextCompiler], *, replace: bool = False
) -> None:
    """Make a compiler available by name; a name already taken needs ``replace=True`` (two
    plugins choosing the same name would otherwise replace each other silently)."""
    if type(name) is not str or not name:
        raise ConfigurationError(
            f"a context compiler's name must be non-empty text, got {name!r}: "
            "e.g. register_compiler('my_compiler', MyCompiler)"
        )
    if not callable(factory):
        raise ConfigurationError(
            f"compiler factory for {name!r} is not callable: pass a class or a function "
            "returning a compiler"
        )
    if name in _REGISTRY and not replace and _REGISTRY[name] is not factory:
        raise ConfigurationError(
            f"a context compiler named {name!r} is registered already: choose another name, "
            "or pass replace=True"
        )
    _REGISTRY[name] = factory


def compiler_names() -> tuple[str, ...]:
    """Names of the registered compilers."""
    return tuple(sorted(_REGISTRY))


def get_compiler(name: str) -> ContextCompiler:
    """A new compiler by name; an unknown name lists the valid ones."""
    factory = _REGISTRY.get(name) if isinstance(name, str) else None
    if factory is None:
        close = get_close_matches(name, _REGISTRY, n=1) if isinstance(name, str) else []
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigurationError(
            f"unknown context compiler {name!r}; valid: {', '.join(compiler_names())}{hint} "
            "(a custom one must be registered first with register_compiler)"
        )
    compiler = factory()
    if not isinstance(compiler, ContextCompiler):
        raise ConfigurationError(
            f"the factory registered as {name!r} made {type(compiler).__name__}, not a compiler "
            "(an object with compile(state)): register a class or a function returning one"
        )
    return compiler
