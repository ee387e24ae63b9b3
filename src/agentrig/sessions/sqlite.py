"""``SqliteSessionStore``: sessions as rows of a SQLite database (stdlib ``sqlite3``)."""

from __future__ import annotations

import math
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from agentrig.clock import Clock
from agentrig.errors import (
    InvalidInputError,
    SessionConflictError,
    SessionCorruptError,
    SessionError,
)
from agentrig.sessions._document import (
    Header,
    header_from,
    is_session_id,
    session_from,
    state_from,
)
from agentrig.sessions._versioned import VersionedStore
from agentrig.sessions.base import StoredSession

SCHEMA_VERSION = 1
"""Version of the database layout, kept in the ``agentrig_schema`` table."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentrig_sessions (
    session_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL CHECK (version >= 1),
    state TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
)
"""
_COLUMNS = ("session_id", "version", "created_at", "updated_at")
_HEADER = f"SELECT {', '.join(_COLUMNS)} FROM agentrig_sessions WHERE session_id = ?"
_SESSION = f"SELECT {', '.join(_COLUMNS)}, state FROM agentrig_sessions WHERE session_id = ?"


_REFUSED = {
    sqlite3.SQLITE_READONLY,
    sqlite3.SQLITE_FULL,
    sqlite3.SQLITE_IOERR,
    sqlite3.SQLITE_CANTOPEN,
    sqlite3.SQLITE_PERM,
    sqlite3.SQLITE_AUTH,
}
"""Primary result codes of an operation the system refused; the data is not damaged."""


def _connect(path: str, timeout: float) -> sqlite3.Connection:
    """Open ``path`` (creating missing parent directories, as ``FileSessionStore`` does)."""
    try:
        if path not in ("", ":memory:"):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        return sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.OperationalError) as error:
        raise SessionError(
            "",
            f"Session store {path!r}: cannot open the database ({error}). Check that the path "
            "names a file in a writable directory.",
        ) from error


class SqliteSessionStore(VersionedStore):
    """Sessions in a SQLite database file (``":memory:"`` for a private in-memory one).

    One connection per store, shared by threads under a lock; several stores or processes may
    open the same file. Every write is one ``BEGIN IMMEDIATE`` transaction, and a save is a
    compare-and-swap ``UPDATE ... WHERE version = ?``. Close the store (or use it as a context
    manager) when done.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        clock: Clock | None = None,
        timeout: float = 30.0,
    ) -> None:
        super().__init__(clock)
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout < 0
        ):
            reason = f"expected a number of seconds >= 0, got {timeout!r}"
            raise InvalidInputError("SqliteSessionStore argument", [("timeout", reason)])
        self.path = os.fspath(path)
        self._timeout = timeout
        self._closed = False
        self._lock = threading.RLock()
        self._connection = _connect(self.path, timeout)
        try:
            self._migrate()
        except BaseException:
            self._connection.close()
            raise

    def __repr__(self) -> str:
        return f"SqliteSessionStore({self.path!r})"

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._closed = True
            self._connection.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _migrate(self) -> None:
        with self._transaction():
            self._execute("CREATE TABLE IF NOT EXISTS agentrig_schema (version INTEGER NOT NULL)")
            with self._translated():
                rows = self._execute("SELECT version FROM agentrig_schema").fetchall()
            versions = [row[0] for row in rows]
            if not versions:
                self._execute("INSERT INTO agentrig_schema (version) VALUES (?)", SCHEMA_VERSION)
            elif versions != [SCHEMA_VERSION]:
                reason = (
                    f"unsupported schema version {versions!r}; this agentrig reads version "
                    f"{SCHEMA_VERSION} (was the database written by another agentrig version?)"
                )
                raise SessionCorruptError("", self.path, "agentrig_schema.version", reason)
            self._execute(_SCHEMA)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._lock:
            self._execute("BEGIN IMMEDIATE")
            try:
                yield
                self._execute("COMMIT")
            except BaseException:
                if self._connection.in_transaction:  # also when COMMIT itself failed
                    self._connection.execute("ROLLBACK")
                raise

    def _execute(self, sql: str, *parameters: Any) -> sqlite3.Cursor:
        with self._lock:
            if self._closed:
                raise SessionError(
                    "",
                    f"Session store {self.path!r} is closed: open a new "
                    f"SqliteSessionStore({self.path!r}), or use the store inside its with block.",
                )
            with self._translated():
                return self._connection.execute(sql, parameters)

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """SQLite's errors as session errors: a damaged database is corrupt, a refused write
        (read-only file, full disk) or a held lock is a ``SessionError``."""
        try:
            yield
        except sqlite3.OperationalError as error:
            # An extended code's low byte; errors of the Python module itself have no code.
            primary = getattr(error, "sqlite_errorcode", sqlite3.SQLITE_ERROR) & 0xFF
            if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise SessionError(
                    "",
                    f"Session store {self.path!r}: the database stayed locked by another "
                    f"connection for the whole timeout ({self._timeout} s), so nothing was "
                    "changed. Try again, or open the store with a longer timeout=.",
                ) from error
            if primary in _REFUSED:
                raise SessionError(
                    "",
                    f"Session store {self.path!r}: SQLite refused the operation ({error}); "
                    "nothing was changed. Check the file's and its folder's permissions and the "
                    "free space.",
                ) from error
            # No such table or column, text that is not UTF-8, ...: not a database we wrote.
            raise SessionCorruptError("", self.path, "", str(error)) from error
        except sqlite3.DatabaseError as error:
            # The base class means a damaged or foreign file ("file is not a database", "disk
            # image is malformed"); a constraint broken by hand is damage too.
            if type(error) not in (sqlite3.DatabaseError, sqlite3.IntegrityError):
                raise
            raise SessionCorruptError("", self.path, "", str(error)) from error

    def _location(self, session_id: str) -> str:
        return f"{self.path} (table agentrig_sessions, session_id {session_id!r})"

    def _write_lock(self, session_id: str) -> AbstractContextManager[None]:
        return self._transaction()

    def _header(self, session_id: str) -> Header | None:
        row = self._row(_HEADER, session_id)
        return None if row is None else self._header_of(session_id, row)

    def _get(self, session_id: str) -> StoredSession | None:
        row = self._row(_SESSION, session_id)
        if row is None:
            return None
        header = self._header_of(session_id, row[:4])
        state = row[4]
        if not isinstance(state, str):
            raise SessionCorruptError(
                session_id, self._location(session_id), "state", "expected JSON text"
            )
        return session_from(header, state_from(state, session_id, self._location(session_id)))

    def _put(self, session: StoredSession, previous_version: int | None) -> None:
        values = (
            session.version,
            session.state.to_json(),
            session.created_at.isoformat(),
            session.updated_at.isoformat(),
        )
        if previous_version is None:
            self._execute(
                "INSERT INTO agentrig_sessions (version, state, created_at, updated_at, "
                "session_id) VALUES (?, ?, ?, ?, ?)",
                *values,
                session.session_id,
            )
            return
        updated = self._execute(
            "UPDATE agentrig_sessions SET version = ?, state = ?, created_at = ?, updated_at = ? "
            "WHERE session_id = ? AND version = ?",
            *values,
            session.session_id,
            previous_version,
        )
        if updated.rowcount != 1:  # the compare-and-swap lost (cannot happen in the transaction)
            stored = self._header(session.session_id)
            current = 0 if stored is None else stored.version
            raise SessionConflictError(session.session_id, previous_version, current)

    def _remove(self, session_id: str) -> None:
        self._execute("DELETE FROM agentrig_sessions WHERE session_id = ?", session_id)

    def _ids(self) -> Iterable[str]:
        with self._lock, self._translated():
            rows = self._execute("SELECT session_id FROM agentrig_sessions").fetchall()
        return [row[0] for row in rows if isinstance(row[0], str) and is_session_id(row[0])]

    def _row(self, sql: str, *parameters: Any) -> tuple[Any, ...] | None:
        with self._lock, self._translated():
            row: tuple[Any, ...] | None = self._execute(sql, *parameters).fetchone()
        return row

    def _header_of(self, session_id: str, row: tuple[Any, ...]) -> Header:
        fields = dict(zip(_COLUMNS, row, strict=True))
        return header_from(fields, session_id, self._location(session_id))
