"""``UseCooperativeCancellation``: stop at the next checkpoint once cancelled."""

from __future__ import annotations

import pytest

from agentrig import (
    AgentState,
    AgentStepCompleted,
    CancellationSource,
    CancellationToken,
    ConfigurationError,
    EventBus,
    ExecutionStatus,
    InvalidInputError,
    StopReason,
    StopSignal,
    UseCooperativeCancellation,
)
from agentrig.fakes import ScriptedLLM, call, reply

SCRIPT = [call("lookup", q="1"), call("lookup", q="2"), reply("done")]


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def assert_cancelled(final: AgentState, steps: int) -> None:
    assert final.status() is ExecutionStatus.STOPPED
    assert final.last_stop_reason() is StopReason.USER_REQUESTED
    assert final.step_count() == steps
    assert not final.store().messages_of("execution_buffer")


def test_cancel_before_the_execution_runs_no_step(make_agent, start) -> None:
    token = CancellationToken()
    token.cancel("changed my mind")
    llm = ScriptedLLM(SCRIPT)
    final = make_agent(llm, [lookup], UseCooperativeCancellation(token)).execute(start())
    assert_cancelled(final, 0)
    assert llm.calls == ()
    signal = final.stop_signal()
    assert signal is not None
    assert (signal.message, signal.source) == ("changed my mind", "CancellationToken")


def test_cancel_from_an_event_listener_during_step_one(make_agent, start) -> None:
    token = CancellationToken()
    events = EventBus()
    events.subscribe(AgentStepCompleted, lambda event: token.cancel())
    llm = ScriptedLLM(SCRIPT)
    agent = make_agent(llm, [lookup], UseCooperativeCancellation(token), events=events)
    assert_cancelled(agent.execute(start()), 1)
    assert llm.remaining == 2


def test_cancel_from_inside_a_tool(make_agent, start) -> None:
    token = CancellationToken()

    def cancelling(q: str) -> str:
        token.cancel("from the tool")
        return q

    llm = ScriptedLLM([call("cancelling", q="1"), reply("never")])
    final = make_agent(llm, [cancelling], UseCooperativeCancellation(token)).execute(start())
    assert_cancelled(final, 1)
    assert final.steps()[0].tool_executions[0].value == "1"


def test_without_cancellation_the_run_completes(make_agent, start) -> None:
    token = CancellationToken()
    final = make_agent(ScriptedLLM(SCRIPT), [lookup], UseCooperativeCancellation(token)).execute(
        start()
    )
    assert final.status() is ExecutionStatus.COMPLETED
    assert final.step_count() == 3


def test_reset_allows_a_new_execution(make_agent, start) -> None:
    token = CancellationToken()
    token.cancel()
    agent = make_agent(ScriptedLLM(["hi"]), (), UseCooperativeCancellation(token))
    cancelled = agent.execute(start())
    token.reset()
    assert not token.is_cancelled
    final = agent.execute(cancelled.with_user_message("again"))
    assert final.status() is ExecutionStatus.COMPLETED


def test_any_cancellation_source_works(make_agent, start) -> None:
    class AfterTwoChecks:
        checks = 0

        def stop_signal(self) -> StopSignal | None:
            self.checks += 1
            return StopSignal.user_requested("tired") if self.checks > 2 else None

    source = AfterTwoChecks()
    assert isinstance(source, CancellationSource)
    final = make_agent(ScriptedLLM(SCRIPT), [lookup], UseCooperativeCancellation(source)).execute(
        start()
    )
    assert_cancelled(final, 1)


def test_token_signal() -> None:
    token = CancellationToken()
    assert token.stop_signal() is None
    token.cancel("bye")
    assert token.is_cancelled
    assert token.stop_signal() == StopSignal.user_requested("bye", source="CancellationToken")


@pytest.mark.parametrize("source", [None, "cancel", CancellationToken])
def test_something_that_is_not_a_source_is_refused_when_given(source: object) -> None:
    with pytest.raises(ConfigurationError, match=r"CancellationSource.*CancellationToken\(\)"):
        UseCooperativeCancellation(source)  # type: ignore[arg-type]


@pytest.mark.parametrize("message", [None, 3])
def test_a_cancel_message_must_be_text(message: object) -> None:
    token = CancellationToken()
    with pytest.raises(InvalidInputError) as raised:
        token.cancel(message)  # type: ignore[arg-type]
    assert raised.value.field == "message"
    assert not token.is_cancelled


def test_a_source_answering_something_else_fails_the_run_naming_it(make_agent, start) -> None:
    class Broken:
        def stop_signal(self) -> object:
            return "stop please"

    llm = ScriptedLLM(SCRIPT)
    final = make_agent(llm, [lookup], UseCooperativeCancellation(Broken())).execute(start())
    assert final.status() is ExecutionStatus.FAILED
    (error,) = final.errors()
    assert "stop_signal() returned str" in str(error)
    assert "StopSignal.user_requested(" in str(error)
