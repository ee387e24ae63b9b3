"""The ``SessionStore`` seam and the ``StoredSession`` record it hands back (DESIGN D11).

A session is an ``AgentState`` kept between requests or processes, keyed by its ``agent_id``:
the one id that survives ``for_next_execution()`` (``AgentState`` has no separate session id).
Stores use optimistic versions: ``create`` stores version 1; every ``save`` names the version
it loaded and stores the next one, or raises ``SessionConflictError`` when someone else saved
in between.
"""

from __future__ import annotations

from typing import Protocol, Self, runtime_checkable

from pydantic import AwareDatetime, Field, model_validator

from agentrig._model import FrozenModel
from agentrig.state import AgentState


class StoredSession(FrozenModel):
    """A state as a store holds it: its version and the store's own created and updated times
    (read from the store's clock, independent of the state's timestamps)."""

    session_id: str
    version: int = Field(ge=1)
    state: AgentState
    created_at: AwareDatetime
    updated_at: AwareDatetime

    @model_validator(mode="after")
    def _keyed_by_agent_id(self) -> Self:
        if self.state.agent_id != self.session_id:
            raise ValueError(
                f"state.agent_id {self.state.agent_id!r} differs from session_id "
                f"{self.session_id!r}; a session is keyed by its state's agent_id"
            )
        return self


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions live between executions; implementations are safe to share across threads.

    Session ids are agent ids and must match ``[A-Za-z0-9][A-Za-z0-9_-]*`` (UUIDs do).
    """

    def create(self, state: AgentState) -> StoredSession:
        """Store a new session at version 1; ``SessionExistsError`` if its id is taken."""
        ...

    def load(self, session_id: str) -> StoredSession:
        """The stored session; ``SessionNotFoundError`` if there is none."""
        ...

    def save(self, state: AgentState, *, expected_version: int) -> StoredSession:
        """Store ``state`` as the next version of its session, if the stored version is still
        ``expected_version`` (else ``SessionConflictError``; ``SessionNotFoundError`` if absent)."""
        ...

    def delete(self, session_id: str, *, expected_version: int | None = None) -> None:
        """Remove a session (checking its version when ``expected_version`` is given)."""
        ...

    def exists(self, session_id: str) -> bool:
        """Whether a session with this id is stored."""
        ...

    def list_ids(self) -> list[str]:
        """The ids of every stored session, sorted."""
        ...
