"""The optimistic-version rules every store shares, over a few storage primitives."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from contextlib import AbstractContextManager

from agentrig.clock import Clock, SystemClock
from agentrig.errors import (
    InvalidInputError,
    SessionConflictError,
    SessionExistsError,
    SessionNotFoundError,
)
from agentrig.sessions._document import Header, check_session_id
from agentrig.sessions.base import StoredSession
from agentrig.state import AgentState


class VersionedStore(ABC):
    """A ``SessionStore`` whose subclasses only read, write and lock stored sessions."""

    def __init__(self, clock: Clock | None) -> None:
        if clock is not None and not callable(getattr(clock, "now", None)):
            reason = (
                f"expected a Clock (an object with now()), got {type(clock).__name__} {clock!r}: "
                "pass FakeClock() in tests, or leave it out for the system clock"
            )
            raise InvalidInputError(f"{type(self).__name__} argument", [("clock", reason)])
        self._clock: Clock = clock if clock is not None else SystemClock()

    # --- the SessionStore API ---------------------------------------------------------------

    def create(self, state: AgentState) -> StoredSession:
        """Store a new session at version 1; ``SessionExistsError`` if its id is taken."""
        session_id = check_session_id(_checked_state(state).agent_id, "agent_id")
        with self._write_lock(session_id):
            stored = self._header(session_id)
            if stored is not None:
                raise SessionExistsError(session_id, stored.version)
            now = self._clock.now()
            session = StoredSession(
                session_id=session_id, version=1, state=state, created_at=now, updated_at=now
            )
            self._put(session, None)
        return session

    def load(self, session_id: str) -> StoredSession:
        """The stored session; ``SessionNotFoundError`` if there is none."""
        session = self._get(check_session_id(session_id))
        if session is None:
            raise SessionNotFoundError(session_id)
        return session

    def save(self, state: AgentState, *, expected_version: int) -> StoredSession:
        """Store ``state`` as the next version of its session, if the stored version is still
        ``expected_version`` (else ``SessionConflictError``; ``SessionNotFoundError`` if absent)."""
        session_id = check_session_id(_checked_state(state).agent_id, "agent_id")
        _check_version(expected_version)
        with self._write_lock(session_id):
            stored = self._checked(session_id, expected_version)
            session = StoredSession(
                session_id=session_id,
                version=stored.version + 1,
                state=state,
                created_at=stored.created_at,
                updated_at=self._clock.now(),
            )
            self._put(session, stored.version)
        return session

    def delete(self, session_id: str, *, expected_version: int | None = None) -> None:
        """Remove a session (checking its version when ``expected_version`` is given)."""
        check_session_id(session_id)
        if expected_version is not None:
            _check_version(expected_version)
        with self._write_lock(session_id):
            self._checked(session_id, expected_version)
            self._remove(session_id)

    def exists(self, session_id: str) -> bool:
        """Whether a session with this id is stored."""
        return self._exists(check_session_id(session_id))

    def list_ids(self) -> list[str]:
        """The ids of every stored session, sorted."""
        return sorted(self._ids())

    def _checked(self, session_id: str, expected_version: int | None) -> Header:
        stored = self._header(session_id)
        if stored is None:
            raise SessionNotFoundError(session_id)
        if expected_version is not None and stored.version != expected_version:
            raise SessionConflictError(session_id, expected_version, stored.version)
        return stored

    # --- storage primitives -----------------------------------------------------------------

    @abstractmethod
    def _write_lock(self, session_id: str) -> AbstractContextManager[None]:
        """Held around every read-check-write, so no other writer interleaves."""

    @abstractmethod
    def _header(self, session_id: str) -> Header | None:
        """The stored header, or None."""

    @abstractmethod
    def _get(self, session_id: str) -> StoredSession | None:
        """The stored session, or None."""

    @abstractmethod
    def _put(self, session: StoredSession, previous_version: int | None) -> None:
        """Store ``session``, replacing ``previous_version`` (None: a new session)."""

    @abstractmethod
    def _remove(self, session_id: str) -> None:
        """Remove a stored session."""

    @abstractmethod
    def _ids(self) -> Iterable[str]:
        """The stored session ids, in any order."""

    def _exists(self, session_id: str) -> bool:
        return self._header(session_id) is not None


def _check_version(expected_version: object) -> None:
    """Refuse a version that is not an int: it would only ever show up as a confusing conflict."""
    if isinstance(expected_version, bool) or not isinstance(expected_version, int):
        reason = (
            f"expected an int, got {expected_version!r}: pass the version of the session you "
            "loaded (StoredSession.version)"
        )
        raise InvalidInputError("session version", [("expected_version", reason)])


def _checked_state(state: object) -> AgentState:
    """``state`` if it is an ``AgentState``: a stored session or a state's dict is a common slip."""
    if not isinstance(state, AgentState):
        reason = (
            f"expected an AgentState, got {type(state).__name__}: pass the state itself "
            "(StoredSession.state of a loaded session; AgentState.from_dict for a dict)"
        )
        raise InvalidInputError("session state", [("state", reason)])
    return state
