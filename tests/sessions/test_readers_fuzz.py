"""Fuzz tests of the session stores' readers: whatever a session file or row holds, ``load``,
``exists`` and ``list_ids`` raise only ``SessionError`` (``SessionCorruptError`` for damage),
within the hang bound (structural mutants and damaged bytes of a stored session, random bytes,
hostile column values)."""

from __future__ import annotations

import functools
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentrig import AgentState, FileSessionStore, SessionError, SqliteSessionStore
from agentrig.fakes import FakeClock
from agentrig.harness.property.profiles import agentrig_settings

SAVED = sorted((Path(__file__).parents[1] / "state" / "data").glob("agent_state_*.json"))


@functools.cache
def _state() -> AgentState:
    """The stored state of every example (immutable: read once)."""
    return AgentState.from_json(SAVED[0].read_text())


def _read_everything(store: Any, session_id: str, hostile: Any) -> None:
    for read in (lambda: store.load(session_id), lambda: store.exists(session_id), store.list_ids):
        hostile.check(read, (SessionError,))


def _file_store_with(raw: bytes, tmp: Path, hostile: Any) -> None:
    store = FileSessionStore(tmp / "sessions", clock=FakeClock())
    state = _state()
    store.create(state)
    store.path_of(state.agent_id).write_bytes(raw)
    _read_everything(store, state.agent_id, hostile)
    # A write after damage is refused or succeeds; it never raises anything else.
    hostile.check(lambda: store.save(state, expected_version=1), (SessionError,))


@functools.cache
def _stored_document() -> bytes:
    """The file a ``FileSessionStore`` writes for the state, which the examples damage: the
    same for each (a fake clock), so written once, not once an example (2 fsyncs each)."""
    with tempfile.TemporaryDirectory() as tmp:
        store = FileSessionStore(Path(tmp), clock=FakeClock())
        store.create(_state())
        return store.path_of(_state().agent_id).read_bytes()


@functools.cache
def _stored_database() -> bytes:
    """The database file a ``SqliteSessionStore`` holding the state is, written once."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sessions.db"
        with SqliteSessionStore(path, clock=FakeClock()) as store:
            store.create(_state())
        return path.read_bytes()


@agentrig_settings(max_examples=30)
@given(data=st.data())
def test_file_store_structural_mutants(
    tmp_path_factory: Any, hostile: Any, data: st.DataObject
) -> None:
    tmp = tmp_path_factory.mktemp("fuzz")
    mutant = hostile.mutant(data, json.loads(_stored_document()))
    try:
        raw = json.dumps(mutant, default=repr).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError):
        return
    _file_store_with(raw, tmp, hostile)


@agentrig_settings(max_examples=30)
@given(data=st.data())
def test_file_store_damaged_bytes(tmp_path_factory: Any, hostile: Any, data: st.DataObject) -> None:
    tmp = tmp_path_factory.mktemp("fuzz")
    _file_store_with(hostile.damaged(data, _stored_document()), tmp, hostile)


@agentrig_settings(max_examples=20)
@given(raw=st.binary(max_size=200))
def test_file_store_random_bytes(tmp_path_factory: Any, hostile: Any, raw: bytes) -> None:
    _file_store_with(raw, tmp_path_factory.mktemp("fuzz"), hostile)


COLUMNS = ("session_id", "version", "state", "created_at", "updated_at")
CELLS = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),
    st.text(max_size=20),
    st.binary(max_size=20),
    st.sampled_from(["[" * 3000, '{"a": 1, "a": 2}', "2026-01-01", "1", "true"]),
)


@agentrig_settings(max_examples=30)
@given(data=st.data())
def test_sqlite_store_hostile_cells(
    tmp_path_factory: Any, hostile: Any, data: st.DataObject
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "sessions.db"
    path.write_bytes(_stored_database())
    state = _state()
    column = data.draw(st.sampled_from(COLUMNS), label="column")
    value = data.draw(CELLS | st.just(state.to_json()[:-1]), label="value")
    if column == "state" and data.draw(st.booleans(), label="mutant"):
        mutant = hostile.mutant(data, state.to_dict())
        try:
            value = json.dumps(mutant, default=repr)
        except (ValueError, RecursionError):
            return
    connection = sqlite3.connect(path)
    try:
        with connection:
            connection.execute(f"UPDATE agentrig_sessions SET {column} = ?", (value,))
    except sqlite3.IntegrityError:  # the schema itself refuses this damage
        return
    finally:
        connection.close()
    with SqliteSessionStore(path, clock=FakeClock()) as store:
        _read_everything(store, state.agent_id, hostile)


@agentrig_settings(max_examples=20)
@given(data=st.data())
def test_sqlite_store_damaged_database_file(
    tmp_path_factory: Any, hostile: Any, data: st.DataObject
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "sessions.db"
    state = _state()
    path.write_bytes(hostile.damaged(data, _stored_database()))

    def open_and_read() -> None:
        with SqliteSessionStore(path, clock=FakeClock(), timeout=1.0) as store:
            for read in (
                lambda: store.load(state.agent_id),
                lambda: store.exists(state.agent_id),
                store.list_ids,
            ):
                try:
                    read()
                except SessionError:
                    continue

    hostile.check(open_and_read, (SessionError,))
