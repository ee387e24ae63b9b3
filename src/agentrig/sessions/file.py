"""``FileSessionStore``: one pretty JSON file per session in a directory."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from agentrig.clock import Clock
from agentrig.errors import SessionCorruptError, SessionError
from agentrig.sessions._document import (
    Header,
    check_session_id,
    decode,
    decode_header,
    encode,
    is_session_id,
)
from agentrig.sessions._files import atomic_write, locked
from agentrig.sessions._versioned import VersionedStore
from agentrig.sessions.base import StoredSession

SUFFIX = ".json"


class FileSessionStore(VersionedStore):
    """Sessions as ``<directory>/<session id>.json`` files, safe for several processes at once.

    Every write goes to a temporary file that is flushed to disk and then renamed over the old
    one, so a crash leaves either version intact. Creates, saves and deletes hold an exclusive
    lock on ``<session id>.lock`` (``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows), so
    two processes can never both save over the same version. A file that cannot be read back
    (broken JSON, a bad field after a hand edit) raises ``SessionCorruptError`` naming the file
    and the field, and is never overwritten by a failed operation.
    """

    def __init__(self, directory: str | os.PathLike[str], *, clock: Clock | None = None) -> None:
        super().__init__(clock)
        self.directory = Path(directory)
        self._make_directory()

    def __repr__(self) -> str:
        return f"FileSessionStore({str(self.directory)!r})"

    def path_of(self, session_id: str) -> Path:
        """The file that holds (or would hold) session ``session_id``."""
        return self.directory / f"{check_session_id(session_id)}{SUFFIX}"

    def _make_directory(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise SessionError(
                "",
                f"Session directory {str(self.directory)!r} is not a directory (a file is in "
                "the way): pass the path of a directory, or move the file.",
            ) from None

    @contextmanager
    def _write_lock(self, session_id: str) -> Iterator[None]:
        self._make_directory()  # again: it may have been removed since the store was opened
        with locked(self.directory / f"{session_id}.lock"):
            yield

    def _header(self, session_id: str) -> Header | None:
        text = self._read(session_id)
        path = str(self.path_of(session_id))
        return None if text is None else decode_header(text, session_id, path)

    def _get(self, session_id: str) -> StoredSession | None:
        text = self._read(session_id)
        return None if text is None else decode(text, session_id, str(self.path_of(session_id)))

    def _put(self, session: StoredSession, previous_version: int | None) -> None:
        atomic_write(self.path_of(session.session_id), encode(session))

    def _remove(self, session_id: str) -> None:
        os.unlink(self.path_of(session_id))
        # Waiters on this lock file notice it is gone (see ``locked``); Windows refuses to
        # delete an open file, so there it stays.
        with suppress(OSError):
            os.unlink(self.directory / f"{session_id}.lock")

    def _ids(self) -> Iterable[str]:
        names = (path.name[: -len(SUFFIX)] for path in self.directory.glob(f"*{SUFFIX}"))
        return [name for name in names if is_session_id(name)]

    def _exists(self, session_id: str) -> bool:
        return self.path_of(session_id).is_file()

    def _read(self, session_id: str) -> bytes | None:
        path = self.path_of(session_id)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise SessionCorruptError(
                session_id, str(path), "", "a directory, not a file"
            ) from None
