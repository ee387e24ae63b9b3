"""Stop reasons, signals and the continuation (DESIGN D2)."""

from __future__ import annotations

import pytest

from agentrig import (
    AgentStop,
    ExecutionContinuation,
    InvalidInputError,
    StopReason,
    StopSignal,
    StopSignals,
)

PRIORITIES = {
    "error": 0,
    "stop_requested": 1,
    "steps_limit": 2,
    "token_limit": 3,
    "time_limit": 4,
    "retry_limit": 5,
    "finish_reason": 6,
    "user_requested": 7,
    "completed": 8,
    "unknown": 9,
}


def signal(reason: StopReason, message: str = "") -> StopSignal:
    return StopSignal(reason=reason, message=message)


@pytest.mark.parametrize(("value", "priority"), PRIORITIES.items())
def test_priority_table(value: str, priority: int) -> None:
    assert StopReason(value).priority == priority


def test_every_reason_has_a_priority() -> None:
    assert {reason.value for reason in StopReason} == set(PRIORITIES)


@pytest.mark.parametrize("reason", list(StopReason))
def test_was_force_stopped_is_false_only_for_natural_endings(reason: StopReason) -> None:
    natural = reason in (StopReason.COMPLETED, StopReason.FINISH_REASON)
    assert reason.was_force_stopped() is not natural


def test_outranks_compares_priorities() -> None:
    assert signal(StopReason.ERROR).outranks(signal(StopReason.UNKNOWN))
    assert not signal(StopReason.COMPLETED).outranks(signal(StopReason.COMPLETED))


def test_highest_picks_the_lowest_priority_number() -> None:
    signals = StopSignals(
        [signal(StopReason.COMPLETED), signal(StopReason.TIME_LIMIT), signal(StopReason.UNKNOWN)]
    )
    winner = signals.highest()
    assert winner is not None
    assert winner.reason is StopReason.TIME_LIMIT


def test_highest_on_a_tie_keeps_the_first_inserted() -> None:
    first, second = (
        signal(StopReason.STEPS_LIMIT, "first"),
        signal(StopReason.STEPS_LIMIT, "second"),
    )
    assert StopSignals([first, second]).highest() == first


def test_highest_of_nothing_is_none() -> None:
    assert StopSignals().highest() is None
    assert not StopSignals().has_any()
    assert StopSignals([signal(StopReason.COMPLETED)]).has_any()


def test_signal_str() -> None:
    assert str(signal(StopReason.COMPLETED)) == "completed"
    assert str(signal(StopReason.STEPS_LIMIT, "3/3")) == "steps_limit: 3/3"
    signals = StopSignals([signal(StopReason.COMPLETED), signal(StopReason.ERROR, "boom")])
    assert str(signals) == "completed | error: boom"


def test_user_requested_factory() -> None:
    made = StopSignal.user_requested("bye", source="ui")
    assert (made.reason, made.message, made.source) == (StopReason.USER_REQUESTED, "bye", "ui")
    made = StopSignal.user_requested()
    assert (made.reason, made.message, made.source) == (StopReason.USER_REQUESTED, "", None)


def test_agent_stop_becomes_stop_requested() -> None:
    stop = AgentStop("enough", context={"n": 1}, source="tool:x")
    made = StopSignal.requested_by(stop)
    assert made == StopSignal(
        reason=StopReason.STOP_REQUESTED, message="enough", context={"n": 1}, source="tool:x"
    )
    assert str(AgentStop()) == "stop_requested"


class TestExecutionContinuation:
    def test_empty_continuation_does_not_stop(self) -> None:
        continuation = ExecutionContinuation()
        assert not continuation.should_stop()
        assert continuation.stop_signal() is None
        assert continuation.explain() == "No Stop Signals; Continuation Requested: No"

    def test_signals_stop_unless_continuation_is_requested(self) -> None:
        stopped = ExecutionContinuation().with_signal(signal(StopReason.STOP_REQUESTED))
        assert stopped.should_stop()
        overridden = stopped.with_continuation_requested()
        assert not overridden.should_stop()
        assert overridden.with_continuation_requested(False).should_stop()

    @pytest.mark.parametrize(
        "reason",
        [
            StopReason.ERROR,
            StopReason.STEPS_LIMIT,
            StopReason.TOKEN_LIMIT,
            StopReason.TIME_LIMIT,
            StopReason.RETRY_LIMIT,
            StopReason.USER_REQUESTED,
        ],
    )
    def test_a_continuation_request_cannot_override_a_binding_signal(
        self, reason: StopReason
    ) -> None:
        assert reason.is_binding()
        continuation = (
            ExecutionContinuation()
            .with_signal(signal(StopReason.STOP_REQUESTED))
            .with_signal(signal(reason))
            .with_continuation_requested()
        )
        assert continuation.should_stop()

    @pytest.mark.parametrize(
        "reason",
        [
            StopReason.STOP_REQUESTED,
            StopReason.FINISH_REASON,
            StopReason.COMPLETED,
            StopReason.UNKNOWN,
        ],
    )
    def test_other_signals_yield_to_a_continuation_request(self, reason: StopReason) -> None:
        assert not reason.is_binding()
        continuation = ExecutionContinuation().with_signal(signal(reason))
        assert not continuation.with_continuation_requested().should_stop()

    def test_signals_accumulate_in_order(self) -> None:
        continuation = (
            ExecutionContinuation()
            .with_signal(signal(StopReason.COMPLETED))
            .with_signal(signal(StopReason.ERROR, "x"))
        )
        assert [s.reason for s in continuation.stop_signals] == [
            StopReason.COMPLETED,
            StopReason.ERROR,
        ]
        assert continuation.stop_signal() == signal(StopReason.ERROR, "x")

    def test_explain(self) -> None:
        continuation = (
            ExecutionContinuation()
            .with_signal(signal(StopReason.STEPS_LIMIT, "2/2"))
            .with_continuation_requested()
        )
        assert continuation.explain() == (
            "Stop Signals: steps_limit: 2/2; Continuation Requested: Yes"
        )

    def test_unchanged_flag_returns_the_same_object(self) -> None:
        continuation = ExecutionContinuation()
        assert continuation.with_continuation_requested(False) is continuation

    def test_round_trip(self) -> None:
        continuation = (
            ExecutionContinuation()
            .with_signal(StopSignal(reason=StopReason.TIME_LIMIT, context={"s": 1.5}, source="g"))
            .with_continuation_requested()
        )
        assert ExecutionContinuation.from_dict(continuation.to_dict()) == continuation
        assert ExecutionContinuation.from_json(continuation.to_json()) == continuation

    def test_unknown_reason_is_rejected(self) -> None:
        data = ExecutionContinuation().with_signal(signal(StopReason.ERROR)).to_dict()
        data["stop_signals"][0]["reason"] = "meh"
        with pytest.raises(InvalidInputError) as raised:
            ExecutionContinuation.from_dict(data)
        assert raised.value.field == "stop_signals[0].reason"
