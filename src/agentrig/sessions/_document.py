"""The serialized form of a session, and reading it back with errors that name the field."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, NoReturn, TypeVar

from pydantic import Field, StrictInt

from agentrig._model import FrozenModel, Timestamp, json_text, unique_keys
from agentrig.errors import InvalidInputError, SessionCorruptError
from agentrig.sessions.base import StoredSession
from agentrig.state import AgentState

FORMAT = "agentrig.session"
FORMAT_VERSION = 1
"""Version of the session document layout (the state inside carries its own schema version)."""

M = TypeVar("M", bound=FrozenModel)
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,199}")


class Header(FrozenModel):
    """Everything a store records about a session except its state."""

    session_id: str
    version: StrictInt = Field(ge=1)
    created_at: Timestamp
    updated_at: Timestamp


class _Document(Header):
    format: Literal["agentrig.session"]
    format_version: Annotated[StrictInt, Field(ge=FORMAT_VERSION, le=FORMAT_VERSION)]
    state: dict[str, Any]


def is_session_id(name: str) -> bool:
    """Whether ``name`` is a valid session id."""
    return _SESSION_ID.fullmatch(name) is not None


def check_session_id(session_id: object, field: str = "session_id") -> str:
    """``session_id`` if it is a valid session id (safe as a file name), else ``InvalidInputError``."""
    if not isinstance(session_id, str) or not is_session_id(session_id):
        reason = (
            f"{session_id!r} is not a valid session id: use 1 to 200 letters, digits, '_' or '-', "
            "starting with a letter or digit"
        )
        raise InvalidInputError("session id", [(field, reason)])
    return session_id


def header_of(session: StoredSession) -> Header:
    """The header of a stored session."""
    return Header(
        session_id=session.session_id,
        version=session.version,
        created_at=session.created_at,
        updated_at=session.updated_at,
    )


def encode(session: StoredSession) -> bytes:
    """The session as pretty, diffable JSON, UTF-8 encoded."""
    document = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        **header_of(session).model_dump(mode="json"),
        "state": session.state.to_dict(),
    }
    return (json_text(document, indent=2) + "\n").encode("utf-8")


def decode(text: str | bytes, session_id: str, location: str) -> StoredSession:
    """A session from ``encode`` output; ``SessionCorruptError`` names the bad field."""
    document = _document(text, session_id, location)
    state = state_from(document.state, session_id, location)
    return session_from(document, state)


def decode_header(text: str | bytes, session_id: str, location: str) -> Header:
    """Only the header of ``encode`` output (the state is not validated)."""
    return _document(text, session_id, location)


def header_from(data: dict[str, Any], session_id: str, location: str) -> Header:
    """A validated header from raw field values (a database row)."""
    header = _validated(Header, data, session_id, location)
    _check_owner(header.session_id, session_id, location)
    return header


def state_from(data: str | dict[str, Any], session_id: str, location: str) -> AgentState:
    """The stored state (a ``to_dict`` dict or ``to_json`` text) of session ``session_id``."""
    try:
        state = AgentState.from_json(data) if isinstance(data, str) else AgentState.from_dict(data)
    except InvalidInputError as error:
        field = f"state.{error.field}" if error.field else "state"
        _corrupt(session_id, location, field, error.problems[0][1])
    if state.agent_id != session_id:
        _corrupt(session_id, location, "state.agent_id", f"{state.agent_id!r} is another session")
    return state


def session_from(header: Header, state: AgentState) -> StoredSession:
    """The stored session made of a validated header and state."""
    return StoredSession(
        session_id=header.session_id,
        version=header.version,
        state=state,
        created_at=header.created_at,
        updated_at=header.updated_at,
    )


def _document(text: str | bytes, session_id: str, location: str) -> _Document:
    try:
        data = json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as error:
        reason = f"not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        _corrupt(session_id, location, "", reason)
    except UnicodeDecodeError as error:
        _corrupt(session_id, location, "", f"not UTF-8 text ({error.reason})")
    except ValueError as error:  # an integer of more digits than Python converts
        _corrupt(session_id, location, "", f"not valid JSON ({error})")
    except RecursionError:
        _corrupt(session_id, location, "", "not valid JSON (nested too deeply)")
    document = _validated(_Document, data, session_id, location)
    _check_owner(document.session_id, session_id, location)
    return document


def _validated(model: type[M], data: object, session_id: str, location: str) -> M:
    if not isinstance(data, dict):
        _corrupt(session_id, location, "", f"expected a JSON object, got {type(data).__name__}")
    try:
        return model(**data)
    except InvalidInputError as error:
        _corrupt(session_id, location, error.field, error.problems[0][1])


def _check_owner(stored_id: str, session_id: str, location: str) -> None:
    if stored_id != session_id:
        _corrupt(session_id, location, "session_id", f"{stored_id!r} is another session")


def _corrupt(session_id: str, location: str, field: str, reason: str) -> NoReturn:
    raise SessionCorruptError(session_id, location, field, reason) from None
