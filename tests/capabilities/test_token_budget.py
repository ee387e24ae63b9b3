"""UseTokenBudgetContext wraps the builder's compiler (seed 003's read-then-wrap)."""

from __future__ import annotations

import pytest

import agentrig as ar
from agentrig.fakes import ScriptedLLM, reply


def run_with(builder: ar.AgentBuilder, llm: ScriptedLLM, history: int) -> None:
    state = ar.AgentState()
    for index in range(history):
        state = state.with_user_message(f"old message number {index} " + "x" * 40)
    builder.with_capability(ar.UseLlmConfig(llm)).build().execute(state.with_user_message("latest"))


def test_it_wraps_an_earlier_compiler_and_trims_to_the_budget() -> None:
    llm = ScriptedLLM([reply("ok")])
    builder = ar.AgentBuilder.base().with_context_compiler(ar.SelectedSections(["messages"]))
    builder.with_capability(ar.UseTokenBudgetContext(max_tokens=60))
    compiler = builder.context_compiler()
    assert isinstance(compiler, ar.TokenBudgetCompiler)
    assert isinstance(compiler.inner, ar.SelectedSections)
    run_with(builder, llm, history=10)
    sent = llm.requests[0].messages
    assert sent[0].content.startswith("old message number 0")  # the first user message is kept
    assert sent[-1].content == "latest"
    assert len(sent) < 11


def test_without_an_earlier_compiler_it_wraps_the_default() -> None:
    builder = ar.AgentBuilder.base().with_capability(ar.UseTokenBudgetContext(max_tokens=10_000))
    compiler = builder.context_compiler()
    assert isinstance(compiler, ar.TokenBudgetCompiler)
    assert isinstance(compiler.inner, ar.ConversationWithCurrentToolTrace)
    llm = ScriptedLLM([reply("ok")])
    run_with(builder, llm, history=3)
    assert len(llm.requests[0].messages) == 4


@pytest.mark.parametrize("max_tokens", [0, -5, "5", True, 2.5, None])
def test_a_bad_budget_is_refused_when_given(max_tokens: object) -> None:
    with pytest.raises(ar.ConfigurationError, match=r"UseTokenBudgetContext max_tokens"):
        ar.UseTokenBudgetContext(max_tokens)  # type: ignore[arg-type]


def test_an_estimator_that_cannot_be_called_is_refused_when_given() -> None:
    with pytest.raises(ar.ConfigurationError, match=r"UseTokenBudgetContext estimator"):
        ar.UseTokenBudgetContext(100, estimator=None)  # type: ignore[arg-type]
