"""``UseTokenBudgetContext``: trim what the model sees to a token budget (seed 003's example of a
capability that reads the builder's compiler, wraps it and sets it back)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agentrig.compilers import (
    ConversationWithCurrentToolTrace,
    TokenBudgetCompiler,
    _check_estimator,
    _check_max_tokens,
    estimate_tokens,
)
from agentrig.messages import Message

if TYPE_CHECKING:
    from agentrig.builder import AgentBuilder


class UseTokenBudgetContext:
    """Keep only the most recent messages that fit ``max_tokens`` in each inference request."""

    def __init__(
        self, max_tokens: int, estimator: Callable[[Message], int] = estimate_tokens
    ) -> None:
        _check_max_tokens("UseTokenBudgetContext", max_tokens)
        _check_estimator("UseTokenBudgetContext", estimator)
        self.max_tokens = max_tokens
        self.estimator = estimator

    def install(self, builder: AgentBuilder) -> None:
        """Wrap the builder's current compiler (or the default one)."""
        inner = builder.context_compiler() or ConversationWithCurrentToolTrace()
        builder.with_context_compiler(TokenBudgetCompiler(inner, self.max_tokens, self.estimator))

    def __repr__(self) -> str:
        return f"UseTokenBudgetContext(max_tokens={self.max_tokens})"
