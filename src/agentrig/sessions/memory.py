"""``InMemorySessionStore``: sessions in a dict, for tests and single-process apps."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from agentrig.clock import Clock
from agentrig.sessions._document import Header, header_of, session_from, state_from
from agentrig.sessions._versioned import VersionedStore
from agentrig.sessions.base import StoredSession


class InMemorySessionStore(VersionedStore):
    """Sessions kept in this process, serialized (as the other stores keep them), so a state that
    would not survive a file or database does not survive here either. Thread-safe."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        super().__init__(clock)
        self._lock = threading.RLock()
        self._sessions: dict[str, tuple[Header, str]] = {}

    def __repr__(self) -> str:
        return f"InMemorySessionStore(<{len(self._sessions)} sessions>)"

    @contextmanager
    def _write_lock(self, session_id: str) -> Iterator[None]:
        with self._lock:
            yield

    def _header(self, session_id: str) -> Header | None:
        entry = self._sessions.get(session_id)
        return None if entry is None else entry[0]

    def _get(self, session_id: str) -> StoredSession | None:
        entry = self._sessions.get(session_id)
        if entry is None:
            return None
        header, state = entry
        return session_from(header, state_from(state, session_id, "memory"))

    def _put(self, session: StoredSession, previous_version: int | None) -> None:
        self._sessions[session.session_id] = (header_of(session), session.state.to_json())

    def _remove(self, session_id: str) -> None:
        del self._sessions[session_id]

    def _ids(self) -> Iterable[str]:
        return list(self._sessions)
