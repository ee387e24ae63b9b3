"""``FileSessionStore``: one pretty JSON file per session in a directory."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import NoReturn

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
from agentrig.sessions._files import atomic_write, locked, remove_orphans
from agentrig.sessions._versioned import VersionedStore
from agentrig.sessions.base import StoredSession

SUFFIX = ".json"


class FileSessionStore(VersionedStore):
    """Sessions as ``<directory>/<session id>.json`` files, safe for several processes at once.

    Every write goes to a temporary file that is flushed to disk and then renamed over the old
    one, so a crash leaves either version intact. Creates, saves and deletes hold an exclusive
    lock on ``<session id>.lock`` (``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows), so
    two processes can never both save over the same version. A file that cannot be read back
    (broken JSON, a bad field after a hand edit, something that is not a regular file) raises
    ``SessionCorruptError`` naming the file and the field, and is never overwritten by a failed
    operation. A write the system refuses (a read-only folder or file, a full disk) raises
    ``SessionError`` and leaves the previous version intact; temporary files a crashed writer
    left behind are removed by the next write of that session.
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
        except OSError as error:  # a read-only or missing parent, a path the system refuses
            reason = error.strerror or str(error)
            raise SessionError(
                "",
                f"Session directory {str(self.directory)!r} cannot be created ({reason}: "
                f"{error.filename or self.directory}): pass the path of a folder you may "
                "write to.",
            ) from None

    @contextmanager
    def _write_lock(self, session_id: str) -> Iterator[None]:
        self._make_directory()  # again: it may have been removed since the store was opened
        with self._refused(session_id, "lock"), locked(self.directory / f"{session_id}.lock"):
            yield

    @contextmanager
    def _refused(self, session_id: str, action: str) -> Iterator[None]:
        """An ``OSError`` of the file system (permissions, a full disk) as a ``SessionError``."""
        try:
            yield
        except OSError as error:
            reason = error.strerror or str(error)
            where = error.filename or self.directory
            raise SessionError(
                session_id,
                f"Session '{session_id}': cannot {action} in {str(self.directory)!r} "
                f"({reason}: {where}); the stored version, if any, is unchanged. Check the "
                "folder's permissions and free space.",
            ) from None

    def _header(self, session_id: str) -> Header | None:
        text = self._read(session_id)
        path = str(self.path_of(session_id))
        return None if text is None else decode_header(text, session_id, path)

    def _get(self, session_id: str) -> StoredSession | None:
        text = self._read(session_id)
        return None if text is None else decode(text, session_id, str(self.path_of(session_id)))

    def _put(self, session: StoredSession, previous_version: int | None) -> None:
        path = self.path_of(session.session_id)
        data = encode(session)
        with self._refused(session.session_id, "save"):
            remove_orphans(path)  # safe: only a holder of this session's lock writes them
            atomic_write(path, data)

    def _remove(self, session_id: str) -> None:
        path = self.path_of(session_id)
        with self._refused(session_id, "delete"):
            remove_orphans(path)
            os.unlink(path)
        # Waiters on this lock file notice it is gone (see ``locked``); Windows refuses to
        # delete an open file, so there it stays.
        with suppress(OSError):
            os.unlink(self.directory / f"{session_id}.lock")

    def _ids(self) -> Iterable[str]:
        with self._refused("", "list the sessions"):
            names = [path.name[: -len(SUFFIX)] for path in self.directory.glob(f"*{SUFFIX}")]
        return [name for name in names if is_session_id(name)]

    def _exists(self, session_id: str) -> bool:
        return self.path_of(session_id).is_file()

    def _read(self, session_id: str) -> bytes | None:
        path = self.path_of(session_id)
        # Non-blocking, so a FIFO in the file's place cannot hang the open; only a regular
        # file is then read.
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise SessionCorruptError(
                session_id, str(path), "", "a directory, not a file"
            ) from None
        except OSError as error:  # a symlink loop, a dangling mount, no permission
            self._unreadable(session_id, path, error)
        try:
            kind = os.fstat(fd).st_mode
            if stat.S_ISDIR(kind):
                raise SessionCorruptError(session_id, str(path), "", "a directory, not a file")
            if not stat.S_ISREG(kind):
                raise SessionCorruptError(
                    session_id, str(path), "", "not a regular file (a FIFO, socket or device)"
                )
            with os.fdopen(fd, "rb", closefd=False) as file:
                return file.read()
        except OSError as error:
            self._unreadable(session_id, path, error)
        finally:
            os.close(fd)

    def _unreadable(self, session_id: str, path: Path, error: OSError) -> NoReturn:
        if isinstance(error, PermissionError):
            raise SessionError(
                session_id,
                f"Session '{session_id}': cannot read {str(path)!r} ({error.strerror}); check "
                "the file's permissions.",
            ) from None
        raise SessionCorruptError(
            session_id, str(path), "", f"cannot be read ({error.strerror or error})"
        ) from None
