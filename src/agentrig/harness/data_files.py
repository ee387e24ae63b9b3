"""Reading the harness's data files (scenarios, cassettes) safely: regular files only, and at
most :data:`MAX_FILE_BYTES` of them.

A FIFO would block a reader forever, a device such as ``/dev/zero`` never ends, and writing a
recording over either would replace it: every loader and writer asks here first.
"""

from __future__ import annotations

import os
import stat

__all__ = ["MAX_FILE_BYTES", "UnreadableFileError", "not_a_regular_file", "read_limited"]

MAX_FILE_BYTES = 64 * 1024 * 1024
"""The largest data file read (64 MiB): far beyond a scenario or a long recorded session,
far below what would exhaust memory."""

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnreadableFileError(Exception):
    """A data file that cannot be read; ``reason`` says why (the caller names the file)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a file")


def not_a_regular_file(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists (through symlinks) and is not a regular file, as
    ``"a FIFO (named pipe)"``; None for a regular file or a path that does not exist."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return None  # the read or write that follows names the problem
    return None if stat.S_ISREG(mode) else _kind(mode)


def read_limited(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed), at most ``limit`` of them;
    :class:`UnreadableFileError` for anything else, without blocking on a FIFO or reading a
    device."""
    kind = not_a_regular_file(path)
    if kind is not None:
        raise UnreadableFileError(_not_a_file(kind))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        handle = os.open(path, flags)
    except OSError as exc:
        raise UnreadableFileError(f"cannot read the file: {exc.strerror or exc}") from None
    try:
        opened = os.fstat(handle)  # what was opened: it may have been swapped since
        if not stat.S_ISREG(opened.st_mode):
            raise UnreadableFileError(_not_a_file(_kind(opened.st_mode)))
        if opened.st_size > limit:
            raise UnreadableFileError(_too_large(limit))
        data = _read_to_end(handle, opened.st_size, limit)
    except OSError as exc:
        raise UnreadableFileError(f"cannot read the file: {exc.strerror or exc}") from None
    finally:
        os.close(handle)
    if len(data) > limit:
        raise UnreadableFileError(_too_large(limit))
    return data


_CHUNK = 1024 * 1024


def _read_to_end(handle: int, size: int, limit: int) -> bytes:
    """The bytes of the open file ``handle``, read until its end or past ``limit``: first as
    many as its ``size`` said (and one more), then on while reads return any (it may have grown,
    or, in procfs, not told its size). Straight ``os.read`` calls: a buffered ``read(limit + 1)``
    allocated the whole limit for each file."""
    parts = [os.read(handle, min(size, limit) + 1)]
    total = len(parts[0])
    while total <= limit:
        chunk = os.read(handle, min(max(size, _CHUNK), limit + 1 - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _too_large(limit: int) -> str:
    return f"the file is larger than {limit} bytes, the most a data file may hold"


def _not_a_file(kind: str) -> str:
    return f"not a regular file: it is {kind}; give the path of a YAML file"
