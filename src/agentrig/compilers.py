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
        # A shortcut: filtering would keep every message anyway (hence no mutation).
        if not traces or (len(traces) == 1 and current in traces):  # pragma: no mutate
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
    """A rough token count: four characters per token, plus four per message.

    The characters are the content's and, for each tool call, its ``str`` (``name(key='value')``):
    ``Message.user("12345678")`` is 4 + 8 // 4 = 6 tokens.
    """
    size = len(message.content) + sum(len(str(call)) for call in message.tool_calls)
    return 4 + size // 4


_INSTRUCTIONS = (Role.SYSTEM, Role.DEVELOPER)


class TokenBudgetCompiler:
    """Wraps another compiler and keeps only the most recent messages that fit ``max_tokens``.

    What is kept, in this order of precedence, always in the inner compiler's order:

    1. the first user message (the task), even when it alone exceeds the budget;
    2. the leading system (or developer) messages, the instructions before anything else, each
       while it fits what the first user message left;
    3. the most recent messages that fit the rest, newest first, without gaps.

    A tool result is never kept without the assistant message that called it. The newest message
    is always sent: when it does not fit (with its call, for a tool result), it is kept anyway, as
    a request without the latest turn would make the model answer a stale conversation. Each
    message is charged once, at the ``estimator``'s count (default ``estimate_tokens``).
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
        """The inner compiler's messages, trimmed to fit the budget (see the class)."""
        compiled = checked_messages(self.inner, self.inner.compile(state))
        messages = compiled.to_tuple()
        count = len(messages)
        sizes: dict[int, int] = {}

        def size(index: int) -> int:  # the estimator runs once per message
            if index not in sizes:
                sizes[index] = self._estimate(messages[index])
            return sizes[index]

        pinned: set[int] = set()
        budget = self.max_tokens
        first_user = next((i for i, m in enumerate(messages) if m.role is Role.USER), None)
        if first_user is not None:
            pinned.add(first_user)
            budget -= size(first_user)
        for index, message in enumerate(messages):
            if message.role not in _INSTRUCTIONS or size(index) > budget:
                break
            pinned.add(index)
            budget -= size(index)
        start = count  # the recent window is messages[start:], pinned ones aside
        while start > 0:
            if start - 1 not in pinned:
                if size(start - 1) > budget:
                    break
                budget -= size(start - 1)
            start -= 1
        while start < count and messages[start].role is Role.TOOL:
            start += 1  # results whose call did not fit
        if start == count and count:
            start = count - 1  # the newest turn does not fit: keep it anyway, with its call
            while start > 0 and messages[start].role is Role.TOOL:
                start -= 1
        kept = sorted(pinned.union(range(start, count)))
        if len(kept) == count:
            return compiled
        return Messages(tuple(messages[index] for index in kept))

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
        hint = f"; did you mean {close[-1]!r}?" if close else ""  # the one match asked for
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
