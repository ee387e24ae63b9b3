"""Session stores (DESIGN D11): keep an ``AgentState`` between requests or processes.

``InMemorySessionStore``, ``FileSessionStore`` (one JSON file per session) and
``SqliteSessionStore`` implement the ``SessionStore`` protocol with optimistic versions: ``create``
stores version 1, and every ``save`` names the version it loaded. See ``docs/sessions.md``.
"""

from agentrig.sessions.base import SessionStore, StoredSession
from agentrig.sessions.file import FileSessionStore
from agentrig.sessions.memory import InMemorySessionStore
from agentrig.sessions.sqlite import SqliteSessionStore

__all__ = [
    "FileSessionStore",
    "InMemorySessionStore",
    "SessionStore",
    "SqliteSessionStore",
    "StoredSession",
]
