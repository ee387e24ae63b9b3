"""The ``SessionStore`` contract, run against every store: versions, conflicts, not found,
listing, and lossless round trips of states the real loop produced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentrig import (
    AgentState,
    FileSessionStore,
    InMemorySessionStore,
    InvalidInputError,
    SessionConflictError,
    SessionError,
    SessionExistsError,
    SessionNotFoundError,
    SessionStore,
    SqliteSessionStore,
    StoredSession,
)
from agentrig.fakes import FakeClock, ScriptedLLM, reply

STATE_KINDS = (
    "fresh",
    "mid-execution",
    "finished",
    "next-execution",
    "failed",
    "inline",
    "subagent",
)


def assert_same_state(loaded: AgentState, original: AgentState) -> None:
    assert loaded == original
    assert loaded.to_json() == original.to_json()


def test_every_store_is_a_session_store(store: SessionStore) -> None:
    assert isinstance(store, SessionStore)


class TestCreate:
    def test_stores_version_1_stamped_by_the_store_clock(
        self, store: SessionStore, start, store_clock: FakeClock
    ) -> None:
        state = start()
        created = store.create(state)
        assert created == StoredSession(
            session_id=state.agent_id,
            version=1,
            state=state,
            created_at=store_clock.now(),
            updated_at=store_clock.now(),
        )
        assert store.load(state.agent_id) == created

    def test_refuses_an_id_that_is_taken(self, store: SessionStore, start) -> None:
        state = start()
        store.create(state)
        store.save(state, expected_version=1)
        with pytest.raises(SessionExistsError, match="expected_version=2") as raised:
            store.create(state)
        assert (raised.value.session_id, raised.value.stored_version) == (state.agent_id, 2)
        assert store.load(state.agent_id).version == 2

    def test_after_a_delete_starts_again_at_version_1(self, store: SessionStore, start) -> None:
        state = start()
        store.create(state)
        store.save(state, expected_version=1)
        store.delete(state.agent_id)
        assert store.create(state).version == 1

    def test_refuses_an_agent_id_that_is_not_a_valid_session_id(
        self, store: SessionStore, start
    ) -> None:
        with pytest.raises(InvalidInputError, match="not a valid session id") as raised:
            store.create(start(agent_id="../escape"))
        assert raised.value.field == "agent_id"
        assert store.list_ids() == []


class TestRoundTrip:
    @pytest.mark.parametrize("kind", STATE_KINDS)
    def test_real_states_come_back_unchanged(
        self, store: SessionStore, real_states: dict[str, AgentState], kind: str
    ) -> None:
        state = real_states[kind]
        store.create(state)
        assert_same_state(store.load(state.agent_id).state, state)

    @pytest.mark.parametrize("kind", STATE_KINDS)
    def test_saved_states_come_back_unchanged(
        self, store: SessionStore, real_states: dict[str, AgentState], kind: str
    ) -> None:
        state = real_states[kind]
        store.create(AgentState(agent_id=state.agent_id))
        saved = store.save(state, expected_version=1)
        assert_same_state(saved.state, state)
        assert store.load(state.agent_id) == saved

    def test_the_subagent_trace_survives(
        self, store: SessionStore, real_states: dict[str, AgentState]
    ) -> None:
        state = real_states["subagent"]
        store.create(state)
        execution = store.load(state.agent_id).state.steps()[0].tool_executions[0]
        assert execution.content == "child found deep"

    def test_a_loaded_session_continues_with_the_next_turn(
        self, store: SessionStore, real_states: dict[str, AgentState], make_agent
    ) -> None:
        store.create(real_states["finished"])
        loaded = store.load(real_states["finished"].agent_id)
        agent = make_agent(ScriptedLLM([reply("Second answer.")]))
        after = agent.execute(loaded.state.with_user_message("And then?"))
        saved = store.save(after, expected_version=loaded.version)
        assert saved.version == 2
        assert store.load(after.agent_id).state.final_response().to_text() == "Second answer."
        assert len(store.load(after.agent_id).state.messages()) == 4


class TestSave:
    def test_bumps_the_version_and_keeps_the_creation_time(
        self, store: SessionStore, start, store_clock: FakeClock
    ) -> None:
        state = start()
        created = store.create(state)
        store_clock.advance(5)
        second = store.save(state.with_metadata("k", 1), expected_version=1)
        store_clock.advance(5)
        third = store.save(state.with_metadata("k", 2), expected_version=2)
        assert (second.version, third.version) == (2, 3)
        assert third.created_at == created.created_at
        assert third.updated_at == store_clock.now() != second.updated_at
        assert store.load(state.agent_id) == third
        assert store.load(state.agent_id).state.metadata() == {"k": 2}

    @pytest.mark.parametrize("expected", [1, 3])
    def test_a_version_other_than_the_stored_one_conflicts(
        self, store: SessionStore, start, expected: int
    ) -> None:
        state = start()
        store.create(state)
        kept = store.save(state.with_metadata("winner", True), expected_version=1)
        with pytest.raises(SessionConflictError, match="Load it again") as raised:
            store.save(state.with_metadata("loser", True), expected_version=expected)
        error = raised.value
        assert (error.session_id, error.expected_version, error.stored_version) == (
            state.agent_id,
            expected,
            2,
        )
        assert store.load(state.agent_id) == kept

    @pytest.mark.parametrize("bad", ["1", None, True, 1.0])
    def test_an_expected_version_that_is_not_an_int_is_refused(
        self, store: SessionStore, start, bad: object
    ) -> None:
        state = start()
        store.create(state)
        with pytest.raises(InvalidInputError, match="expected_version") as raised:
            store.save(state, expected_version=bad)  # type: ignore[arg-type]
        assert raised.value.field == "expected_version"
        if bad is not None:  # delete without a version check is allowed
            with pytest.raises(InvalidInputError, match="expected_version"):
                store.delete(state.agent_id, expected_version=bad)  # type: ignore[arg-type]
        assert store.load(state.agent_id).version == 1

    def test_needs_a_created_session(self, store: SessionStore, start) -> None:
        state = start()
        with pytest.raises(SessionNotFoundError, match=r"store\.create"):
            store.save(state, expected_version=1)
        assert not store.exists(state.agent_id)


class TestWhatIsStored:
    def test_a_stored_session_or_a_dict_in_place_of_a_state_is_named(
        self, store: SessionStore, start
    ) -> None:
        created = store.create(start())
        for wrong in (created, created.state.to_dict(), None):
            with pytest.raises(InvalidInputError, match=r"StoredSession\.state") as raised:
                store.save(wrong, expected_version=1)  # type: ignore[arg-type]
            assert raised.value.field == "state"
            with pytest.raises(InvalidInputError, match="AgentState") as raised:
                store.create(wrong)  # type: ignore[arg-type]
            assert raised.value.field == "state"
        assert store.load(created.session_id) == created

    def test_text_utf8_cannot_encode_is_stored_and_read_back_unchanged(
        self, store: SessionStore, start
    ) -> None:
        # A lone surrogate, as a surrogateescape decode of a file name leaves: JSON holds it
        # escaped.
        state = start().with_user_message("file \udcff name")
        created = store.create(state)
        assert store.load(created.session_id).state == state
        saved = store.save(state.with_user_message("\ud800 again"), expected_version=1)
        assert store.load(created.session_id) == saved
        assert saved.state.messages().to_tuple()[-1].content == "\ud800 again"


class TestLoadDeleteList:
    def test_loading_a_missing_session_names_it(self, store: SessionStore) -> None:
        with pytest.raises(SessionNotFoundError, match="'nobody' not found") as raised:
            store.load("nobody")
        assert raised.value.session_id == "nobody"

    @pytest.mark.parametrize("bad", ["", "a/b", "../x", ".hidden", "white space", "x" * 201])
    def test_invalid_session_ids_are_refused(self, store: SessionStore, bad: str) -> None:
        for operation in (store.load, store.exists, store.delete):
            with pytest.raises(InvalidInputError, match="not a valid session id") as raised:
                operation(bad)
            assert raised.value.field == "session_id"

    def test_delete_removes_the_session(self, store: SessionStore, start) -> None:
        state = start()
        store.create(state)
        store.delete(state.agent_id)
        assert not store.exists(state.agent_id)
        assert store.list_ids() == []
        with pytest.raises(SessionNotFoundError):
            store.load(state.agent_id)
        with pytest.raises(SessionNotFoundError):
            store.delete(state.agent_id)

    def test_delete_checks_the_version_when_given(self, store: SessionStore, start) -> None:
        state = start()
        store.create(state)
        store.save(state, expected_version=1)
        with pytest.raises(SessionConflictError):
            store.delete(state.agent_id, expected_version=1)
        assert store.exists(state.agent_id)
        store.delete(state.agent_id, expected_version=2)
        assert not store.exists(state.agent_id)

    def test_list_ids_is_sorted_and_exists_agrees(self, store: SessionStore) -> None:
        for agent_id in ("b-2", "a_1", "C3"):
            store.create(AgentState(agent_id=agent_id))
        assert store.list_ids() == ["C3", "a_1", "b-2"]
        assert [store.exists(i) for i in ("a_1", "b-2", "C3", "d")] == [True, True, True, False]

    def test_every_session_error_shares_the_root(self) -> None:
        for error in (SessionNotFoundError, SessionExistsError, SessionConflictError):
            assert issubclass(error, SessionError)


def test_a_reopened_store_sees_what_was_stored(open_store, start, store_kind: str) -> None:
    state = start()
    first = open_store()
    first.create(state)
    saved = first.save(state.with_metadata("n", 1), expected_version=1)
    reopened = open_store()
    assert reopened.load(state.agent_id) == saved
    assert reopened.list_ids() == [state.agent_id]
    with pytest.raises(SessionConflictError):
        reopened.save(state, expected_version=1)


def test_threads_sharing_a_store_lose_no_update(store: SessionStore, increment, in_threads) -> None:
    store.create(AgentState(agent_id="counter").with_metadata("count", 0))
    in_threads(lambda: increment(store, "counter", 10), 3)
    final = store.load("counter")
    assert (final.version, final.state.metadata()["count"]) == (31, 30)


@pytest.mark.parametrize("clock", ["utc", 0, object()])
@pytest.mark.parametrize("kind", ["memory", "file", "sqlite"])
def test_a_clock_without_now_is_refused_when_the_store_is_opened(
    tmp_path: Path, kind: str, clock: object
) -> None:
    # It used to fail at the first create: AttributeError: 'str' object has no attribute 'now'.
    opens: dict[str, Any] = {
        "memory": lambda: InMemorySessionStore(clock=clock),  # type: ignore[arg-type]
        "file": lambda: FileSessionStore(tmp_path / "sessions", clock=clock),  # type: ignore[arg-type]
        "sqlite": lambda: SqliteSessionStore(tmp_path / "s.db", clock=clock),  # type: ignore[arg-type]
    }
    with pytest.raises(InvalidInputError) as raised:
        opens[kind]()
    message = str(raised.value)
    assert "clock: expected a Clock (an object with now())" in message
    assert "FakeClock()" in message
