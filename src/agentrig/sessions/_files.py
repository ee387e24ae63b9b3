"""File primitives for ``FileSessionStore``: an inter-process lock and an atomic write.

The lock is ``fcntl.flock`` on POSIX (it excludes other processes and other open file
descriptions in this one, so threads are covered too) and ``msvcrt.locking`` on Windows.
"""

from __future__ import annotations

import glob
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock(fd: int) -> None:
        while True:
            try:  # LK_LOCK gives up after about ten seconds; keep waiting, as flock does
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
                return
            except OSError:
                continue

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the lock file ``path`` (created if needed).

    A holder may delete the lock file (when its session is deleted); a waiter that then gets the
    lock on the deleted file notices and locks the file now at ``path`` instead.
    """
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _lock(fd)
        except BaseException:
            os.close(fd)
            raise
        if _same_file(fd, path):
            break
        _unlock(fd)
        os.close(fd)
    try:
        yield
    finally:
        _unlock(fd)
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` all at once: a crash leaves the old file or the new one,
    never a mix (written to a temporary file, flushed to disk, then renamed over ``path``)."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _sync_directory(path.parent)


def remove_orphans(path: Path) -> None:
    """Remove the temporary files writers of ``path`` left behind when they were killed (call
    it holding the lock of ``path``, so no live writer's file is among them)."""
    for orphan in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with suppress(FileNotFoundError):
            orphan.unlink()


def _sync_directory(directory: Path) -> None:
    # Makes the rename itself durable on POSIX; Windows cannot open a directory for this.
    if sys.platform == "win32":  # pragma: no cover
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
