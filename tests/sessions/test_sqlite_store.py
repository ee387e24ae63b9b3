"""``SqliteSessionStore``: schema, reopening, damaged rows, and threads racing."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrig import (
    AgentState,
    InvalidInputError,
    SessionConflictError,
    SessionCorruptError,
    SessionError,
    SqliteSessionStore,
    StoredSession,
)
from agentrig.fakes import FakeClock


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture
def sqlite_store(db_path: Path) -> Iterator[SqliteSessionStore]:
    with SqliteSessionStore(db_path, clock=FakeClock()) as store:
        yield store


@pytest.fixture
def stored(sqlite_store: SqliteSessionStore, start) -> StoredSession:
    return sqlite_store.create(start("keep me"))


def execute(db_path: Path, sql: str, *parameters: object) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(db_path)
    try:
        with connection:
            return connection.execute(sql, parameters).fetchall()
    finally:
        connection.close()


class TestSchema:
    def test_a_new_database_records_its_schema_version(
        self, sqlite_store: SqliteSessionStore, db_path: Path
    ) -> None:
        assert execute(db_path, "SELECT version FROM agentrig_schema") == [(1,)]
        columns = [row[1] for row in execute(db_path, "PRAGMA table_info(agentrig_sessions)")]
        assert columns == ["session_id", "version", "state", "created_at", "updated_at"]

    def test_reopening_keeps_one_schema_row_and_the_sessions(
        self, sqlite_store: SqliteSessionStore, stored: StoredSession, db_path: Path
    ) -> None:
        sqlite_store.close()
        with SqliteSessionStore(db_path) as reopened:
            assert reopened.load(stored.session_id) == stored
        assert execute(db_path, "SELECT version FROM agentrig_schema") == [(1,)]

    def test_a_database_from_a_newer_schema_is_refused(
        self, sqlite_store: SqliteSessionStore, db_path: Path
    ) -> None:
        sqlite_store.close()
        execute(db_path, "UPDATE agentrig_schema SET version = 2")
        with pytest.raises(SessionCorruptError, match="unsupported schema version") as raised:
            SqliteSessionStore(db_path)
        assert raised.value.field == "agentrig_schema.version"
        assert str(db_path) in str(raised.value)

    def test_a_file_that_is_not_a_database_is_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "notes.db"
        path.write_text("just some notes, long enough to look like a header " * 4)
        with pytest.raises(SessionCorruptError, match="not a database") as raised:
            SqliteSessionStore(path)
        assert raised.value.location == str(path)

    def test_missing_parent_directories_are_created(self, tmp_path: Path, start) -> None:
        path = tmp_path / "a" / "b" / "sessions.db"
        with SqliteSessionStore(path) as store:
            store.create(start())
        assert path.is_file()

    def test_a_path_that_cannot_be_opened_is_named(self, tmp_path: Path) -> None:
        (tmp_path / "file").write_text("")
        path = tmp_path / "file" / "sessions.db"
        with pytest.raises(SessionError, match="cannot open") as raised:
            SqliteSessionStore(path)
        assert str(path) in str(raised.value)

    def test_memory_databases_are_private_to_their_store(self, start) -> None:
        with SqliteSessionStore() as first, SqliteSessionStore() as second:
            first.create(start())
            assert second.list_ids() == []


class TestDamagedRows:
    @pytest.mark.parametrize(
        ("column", "value", "field", "reason"),
        [
            ("state", "{not json", "state", "not valid JSON"),
            ("state", '{"schema_version": 1, "execution_count": -1}', "state.", ">= 0"),
            ("version", "two", "version", "valid integer"),
            ("created_at", "yesterday", "created_at", "datetime"),
        ],
        ids=["broken-json", "bad-state-field", "bad-version", "bad-time"],
    )
    def test_a_damaged_row_names_the_row_and_the_field(
        self,
        sqlite_store: SqliteSessionStore,
        stored: StoredSession,
        db_path: Path,
        column: str,
        value: object,
        field: str,
        reason: str,
    ) -> None:
        execute(
            db_path,
            f"UPDATE agentrig_sessions SET {column} = ? WHERE session_id = ?",
            value,
            stored.session_id,
        )
        with pytest.raises(SessionCorruptError) as raised:
            sqlite_store.load(stored.session_id)
        message = str(raised.value).replace("greater than or equal to", ">=")
        assert f"session_id '{stored.session_id}'" in message
        assert f"is corrupt at field '{field}" in message
        assert reason in message


class TestHostileDatabases:
    @pytest.mark.parametrize(
        "value",
        ["[" * 5000 + "]" * 5000, '{"schema_version": 1, "n": 1' + "0" * 5000 + "}"],
        ids=["deep", "long-integer"],
    )
    def test_a_state_that_is_not_readable_json_is_corrupt(
        self, sqlite_store: SqliteSessionStore, stored: StoredSession, db_path: Path, value: str
    ) -> None:
        execute(
            db_path,
            "UPDATE agentrig_sessions SET state = ? WHERE session_id = ?",
            value,
            stored.session_id,
        )
        with pytest.raises(SessionCorruptError, match="not valid JSON"):
            sqlite_store.load(stored.session_id)

    def test_text_that_is_not_utf8_is_corrupt(
        self, sqlite_store: SqliteSessionStore, stored: StoredSession, db_path: Path
    ) -> None:
        execute(
            db_path,
            "UPDATE agentrig_sessions SET state = CAST(X'7BFF7D' AS TEXT) WHERE session_id = ?",
            stored.session_id,
        )
        with pytest.raises(SessionCorruptError, match="UTF-8"):
            sqlite_store.load(stored.session_id)

    def test_a_dropped_table_is_corrupt(
        self, sqlite_store: SqliteSessionStore, stored: StoredSession, db_path: Path
    ) -> None:
        execute(db_path, "DROP TABLE agentrig_sessions")
        for operation in (
            lambda: sqlite_store.load(stored.session_id),
            sqlite_store.list_ids,
            lambda: sqlite_store.save(stored.state, expected_version=1),
        ):
            with pytest.raises(SessionCorruptError, match="no such table"):
                operation()

    def test_a_damaged_file_is_corrupt(self, db_path: Path, start) -> None:
        with SqliteSessionStore(db_path) as store:
            store.create(start("hello"))
        data = bytearray(db_path.read_bytes())
        data[100:] = b"\xff" * (len(data) - 100)  # keep the header, wreck the pages
        db_path.write_bytes(bytes(data))
        with pytest.raises(SessionCorruptError), SqliteSessionStore(db_path) as store:
            store.list_ids()

    def test_a_refused_write_is_a_session_error_and_keeps_the_old_version(
        self, sqlite_store: SqliteSessionStore, stored: StoredSession
    ) -> None:
        # As a read-only file would (the suite may run as root, whom chmod does not stop).
        sqlite_store._connection.execute("PRAGMA query_only = ON")
        with pytest.raises(SessionError, match="readonly") as raised:
            sqlite_store.save(stored.state.with_metadata("lost", True), expected_version=1)
        assert not isinstance(raised.value, SessionCorruptError)
        sqlite_store._connection.execute("PRAGMA query_only = OFF")
        assert sqlite_store.load(stored.session_id) == stored


class TestConcurrency:
    def test_threads_with_their_own_stores_lose_no_update(
        self, sqlite_store: SqliteSessionStore, db_path: Path, increment, in_threads
    ) -> None:
        sqlite_store.create(AgentState(agent_id="counter").with_metadata("count", 0))

        def work() -> None:
            with SqliteSessionStore(db_path) as own:
                increment(own, "counter", 10)

        in_threads(work, 3)
        final = sqlite_store.load("counter")
        assert (final.version, final.state.metadata()["count"]) == (31, 30)

    def test_exactly_one_thread_saving_the_same_version_wins(
        self, sqlite_store: SqliteSessionStore, stored: StoredSession, in_threads
    ) -> None:
        barrier, outcomes = threading.Barrier(4), []

        def save() -> None:
            barrier.wait()
            try:
                sqlite_store.save(stored.state, expected_version=1)
                outcomes.append("saved")
            except SessionConflictError:
                outcomes.append("conflict")

        in_threads(save, 4)
        assert sorted(outcomes) == ["conflict", "conflict", "conflict", "saved"]


class TestUsage:
    @pytest.mark.parametrize("timeout", ["5", -1, float("nan"), True, None])
    def test_a_timeout_that_is_not_seconds_is_refused_naming_it(
        self, tmp_path: Path, timeout: object
    ) -> None:
        # A string used to escape from sqlite3.connect as "TypeError: must be real number".
        with pytest.raises(InvalidInputError, match="timeout: expected a number of seconds >= 0"):
            SqliteSessionStore(tmp_path / "sessions.db", timeout=timeout)  # type: ignore[arg-type]
        assert not (tmp_path / "sessions.db").exists()

    def test_a_closed_store_says_so_and_how_to_go_on(
        self, sqlite_store: SqliteSessionStore, stored: StoredSession, db_path: Path
    ) -> None:
        sqlite_store.close()
        operations = (
            lambda: sqlite_store.load(stored.session_id),
            lambda: sqlite_store.save(stored.state, expected_version=1),
            sqlite_store.list_ids,
        )
        for operation in operations:
            with pytest.raises(SessionError, match="is closed") as raised:
                operation()
            assert str(db_path) in str(raised.value)
            assert "SqliteSessionStore(" in str(raised.value)
        sqlite_store.close()  # closing again is harmless
        with SqliteSessionStore(db_path) as reopened:
            assert reopened.load(stored.session_id) == stored

    def test_a_database_locked_past_the_timeout_is_a_session_error(
        self, stored: StoredSession, db_path: Path
    ) -> None:
        holder = sqlite3.connect(db_path, isolation_level=None)
        with SqliteSessionStore(db_path, timeout=0.01) as impatient:
            holder.execute("BEGIN EXCLUSIVE")
            try:
                with pytest.raises(SessionError, match="locked") as saving:
                    impatient.save(stored.state, expected_version=1)
                with pytest.raises(SessionError, match="locked") as opening:
                    SqliteSessionStore(db_path, timeout=0.01)
            finally:
                holder.execute("ROLLBACK")
                holder.close()
            for raised in (saving, opening):
                assert str(db_path) in str(raised.value)
                assert "timeout=" in str(raised.value)
            assert impatient.load(stored.session_id) == stored
            assert impatient.save(stored.state, expected_version=1).version == 2
