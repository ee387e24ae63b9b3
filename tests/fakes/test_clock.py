"""``FakeClock`` and ``SeededIds``: deterministic time and identity (DESIGN D10)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from agentrig import AgentrigError, AgentState, Clock, IdFactory, InvalidInputError, runtime_context
from agentrig.fakes import FakeClock, SeededIds


class TestFakeClock:
    def test_starts_at_a_fixed_time(self) -> None:
        assert FakeClock().now() == datetime(2026, 1, 1, tzinfo=UTC)

    def test_time_moves_only_when_told(self) -> None:
        clock = FakeClock()
        before = clock.now()
        assert clock.now() == before
        assert clock.advance(1.5) == before + timedelta(seconds=1.5)
        clock.set(before + timedelta(days=1))
        assert clock.now() == before + timedelta(days=1)

    def test_never_goes_backwards(self) -> None:
        clock = FakeClock()
        with pytest.raises(ValueError, match="backwards"):
            clock.advance(-1)
        with pytest.raises(ValueError, match="backwards"):
            clock.set(clock.now() - timedelta(seconds=1))

    def test_needs_an_aware_start(self) -> None:
        with pytest.raises(ValueError, match="timezone-aware"):
            FakeClock(datetime(2026, 1, 1))

    def test_is_a_clock(self) -> None:
        assert isinstance(FakeClock(), Clock)

    def test_remembers_where_it_started(self) -> None:
        clock = FakeClock(datetime(2026, 3, 1, 2, tzinfo=timezone(timedelta(hours=2))))
        clock.advance(60)
        assert clock.start == datetime(2026, 3, 1, tzinfo=UTC)
        assert clock.now() == clock.start + timedelta(minutes=1)

    def test_state_times_come_from_it(self) -> None:
        clock = FakeClock()
        with runtime_context(clock=clock):
            state = AgentState()
            clock.advance(3)
            later = state.with_metadata("k", 1)
        assert state.created_at == datetime(2026, 1, 1, tzinfo=UTC)
        assert later.updated_at == datetime(2026, 1, 1, 0, 0, 3, tzinfo=UTC)


class TestSeededIds:
    def test_same_seed_same_ids(self) -> None:
        first, second = SeededIds(5), SeededIds(5)
        assert [first.new_id("x") for _ in range(3)] == [second.new_id("y") for _ in range(3)]

    def test_different_seeds_differ(self) -> None:
        assert SeededIds(1).new_id("x") != SeededIds(2).new_id("x")

    def test_ids_are_uuid4_shaped_and_unique(self) -> None:
        ids = SeededIds()
        made = [ids.new_id("x") for _ in range(100)]
        assert len(set(made)) == 100
        assert all(uuid.UUID(value).version == 4 for value in made)

    def test_is_an_id_factory(self) -> None:
        assert isinstance(SeededIds(), IdFactory)

    def test_it_says_which_ids_it_handed_out(self) -> None:
        ids = SeededIds(7)
        first = ids.new_id("x")
        assert (ids.count, ids.issued(first)) == (1, True)
        upcoming = SeededIds(7)
        upcoming.new_id("x")
        second = upcoming.new_id("x")
        assert not ids.issued(second)  # not yet handed out
        assert ids.new_id("x") == second
        assert (ids.count, ids.issued(second)) == (2, True)
        assert not ids.issued(str(uuid.uuid4()))
        assert ids.new_id("x") == upcoming.new_id("x")  # asking takes no id from the sequence

    def test_a_fork_hands_out_the_next_ids_without_taking_them(self) -> None:
        ids = SeededIds(4)
        made = ids.new_id("x")
        fork = ids.fork()
        assert fork.issued(made)
        assert [fork.new_id("x") for _ in range(3)] == [ids.new_id("x") for _ in range(3)]
        assert (ids.count, fork.count) == (4, 4)

    def test_state_ids_come_from_it(self) -> None:
        with runtime_context(ids=SeededIds(9)):
            first = AgentState().agent_id
        with runtime_context(ids=SeededIds(9)):
            second = AgentState().agent_id
        assert first == second

    def test_runtime_context_restores_the_defaults(self) -> None:
        with runtime_context(ids=SeededIds(9)):
            pass
        assert AgentState().agent_id != AgentState().agent_id


class TestFakeClockBadInput:
    """Bad input names the argument and says what to pass, instead of a deep TypeError."""

    @pytest.mark.parametrize(
        ("seconds", "reason"),
        [
            (float("nan"), "a finite number"),
            (float("inf"), "a finite number"),
            ("3", "a number of seconds, got str"),
            (timedelta(seconds=3), "a number of seconds, got timedelta"),
            (True, "a number of seconds, got bool"),
        ],
    )
    def test_advance_rejects_what_is_not_seconds(self, seconds: object, reason: str) -> None:
        clock = FakeClock()
        with pytest.raises(InvalidInputError) as raised:
            clock.advance(seconds)  # type: ignore[arg-type]
        assert raised.value.field == "seconds"
        assert reason in str(raised.value)
        assert clock.now() == datetime(2026, 1, 1, tzinfo=UTC)

    def test_advance_past_the_last_date_says_so(self) -> None:
        with pytest.raises(InvalidInputError, match="past the latest date"):
            FakeClock().advance(1e12)

    @pytest.mark.parametrize(
        ("moment", "reason"),
        [
            ("2027-01-01T00:00:00Z", "a timezone-aware datetime, got str"),
            (datetime(2027, 1, 1), "timezone-aware"),
        ],
    )
    def test_set_and_start_reject_what_is_not_an_aware_datetime(
        self, moment: object, reason: str
    ) -> None:
        with pytest.raises(InvalidInputError) as raised:
            FakeClock().set(moment)  # type: ignore[arg-type]
        assert (raised.value.field, reason in str(raised.value)) == ("moment", True)
        with pytest.raises(InvalidInputError) as raised:
            FakeClock(moment)  # type: ignore[arg-type]
        assert (raised.value.field, reason in str(raised.value)) == ("start", True)

    def test_going_backwards_is_an_agentrig_error_saying_what_to_do(self) -> None:
        with pytest.raises(AgentrigError, match=r"backwards.*use a new FakeClock"):
            FakeClock().advance(-1)

    def test_times_are_in_utc_as_the_clock_protocol_says(self) -> None:
        paris = timezone(timedelta(hours=2))
        clock = FakeClock(datetime(2026, 1, 1, 2, tzinfo=paris))
        assert clock.now().utcoffset() == timedelta(0)
        assert clock.now() == datetime(2026, 1, 1, tzinfo=UTC)
        clock.set(datetime(2026, 1, 1, 4, tzinfo=paris))
        assert (clock.now().utcoffset(), clock.now().hour) == (timedelta(0), 2)


class TestSeededIdsBadInput:
    def test_a_none_seed_is_refused(self) -> None:
        # random.Random(None) seeds from the OS: the ids would differ on every run.
        with pytest.raises(InvalidInputError, match=r"seed.*differ between runs"):
            SeededIds(None)  # type: ignore[arg-type]
