"""Any sequence of creates, saves, loads and deletes leaves every store agreeing with a dict."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from agentrig import (
    AgentBuilder,
    AgentState,
    FileSessionStore,
    InMemorySessionStore,
    SessionConflictError,
    SessionExistsError,
    SessionNotFoundError,
    SessionStore,
    SqliteSessionStore,
    UseLlmConfig,
    runtime_context,
)
from agentrig.fakes import FakeClock, ScriptedLLM, SeededIds, call, reply
from agentrig.harness.property.profiles import agentrig_settings


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def played_states() -> list[dict[str, Any]]:
    """The serialized states of one real run, step by step, plus an empty state."""
    clock, ids = FakeClock(), SeededIds(3)
    llm = ScriptedLLM([call("lookup", q="x"), reply("done")])
    agent = (
        AgentBuilder.base()
        .with_clock(clock)
        .with_ids(ids)
        .with_tools([lookup])
        .with_capability(UseLlmConfig(llm))
        .build()
    )
    with runtime_context(clock=clock, ids=ids):
        first = AgentState().with_user_message("question")
    return [AgentState().to_dict(), *(state.to_dict() for state in agent.iterate(first))]


STATES = played_states()
SESSION_IDS = st.sampled_from(["alpha", "beta"])
STATE_INDEXES = st.integers(0, len(STATES) - 1)


def state_for(session_id: str, index: int) -> AgentState:
    return AgentState.from_dict({**STATES[index], "agent_id": session_id})


class StoreMachine(RuleBasedStateMachine):
    """Drives one store and a dict model (id -> version and state JSON) side by side."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.store = self.open_store()
        self.model: dict[str, tuple[int, str]] = {}

    def open_store(self) -> SessionStore:
        return InMemorySessionStore(clock=self.clock)

    @rule(session_id=SESSION_IDS, index=STATE_INDEXES)
    def create(self, session_id: str, index: int) -> None:
        state = state_for(session_id, index)
        if session_id in self.model:
            with pytest.raises(SessionExistsError):
                self.store.create(state)
            return
        assert self.store.create(state).version == 1
        self.model[session_id] = (1, state.to_json())

    @rule(session_id=SESSION_IDS, index=STATE_INDEXES, offset=st.sampled_from([0, -1, 1]))
    def save(self, session_id: str, index: int, offset: int) -> None:
        state = state_for(session_id, index)
        stored = self.model.get(session_id)
        expected = (stored[0] if stored else 1) + offset
        if stored is None:
            with pytest.raises(SessionNotFoundError):
                self.store.save(state, expected_version=expected)
        elif offset:
            with pytest.raises(SessionConflictError):
                self.store.save(state, expected_version=expected)
        else:
            saved = self.store.save(state, expected_version=expected)
            assert (saved.version, saved.updated_at) == (expected + 1, self.clock.now())
            self.model[session_id] = (saved.version, state.to_json())

    @rule(session_id=SESSION_IDS, check_version=st.booleans())
    def delete(self, session_id: str, check_version: bool) -> None:
        stored = self.model.get(session_id)
        expected = stored[0] if stored and check_version else None
        if stored is None:
            with pytest.raises(SessionNotFoundError):
                self.store.delete(session_id, expected_version=expected)
            return
        self.store.delete(session_id, expected_version=expected)
        del self.model[session_id]

    @rule(session_id=SESSION_IDS)
    def load(self, session_id: str) -> None:
        stored = self.model.get(session_id)
        if stored is None:
            with pytest.raises(SessionNotFoundError):
                self.store.load(session_id)
            return
        loaded = self.store.load(session_id)
        assert (loaded.version, loaded.state.to_json()) == stored

    @rule(seconds=st.integers(1, 60))
    def time_passes(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @invariant()
    def the_ids_match_the_model(self) -> None:
        assert self.store.list_ids() == sorted(self.model)
        assert all(self.store.exists(session_id) for session_id in self.model)


class FileStoreMachine(StoreMachine):
    def open_store(self) -> SessionStore:
        self.directory = Path(tempfile.mkdtemp(prefix="agentrig-sessions-"))
        return FileSessionStore(self.directory, clock=self.clock)

    def teardown(self) -> None:
        shutil.rmtree(self.directory)


class SqliteStoreMachine(StoreMachine):
    def open_store(self) -> SessionStore:
        self.sqlite = SqliteSessionStore(clock=self.clock)
        return self.sqlite

    def teardown(self) -> None:
        self.sqlite.close()


SETTINGS = agentrig_settings(max_examples=20, stateful_step_count=20)

TestMemoryStoreMachine = StoreMachine.TestCase
TestMemoryStoreMachine.settings = SETTINGS
TestFileStoreMachine = FileStoreMachine.TestCase
TestFileStoreMachine.settings = SETTINGS
TestSqliteStoreMachine = SqliteStoreMachine.TestCase
TestSqliteStoreMachine.settings = SETTINGS
