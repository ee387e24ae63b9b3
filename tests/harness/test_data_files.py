"""Reading data files: every byte of a regular file, up to the limit, whatever size it tells."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agentrig.harness.data_files import UnreadableFileError, read_limited

_PROCFS = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and os.path.exists("/proc/self/cmdline")),
    reason="needs procfs, whose files tell a size of 0",
)


def test_a_file_larger_than_one_read_is_read_whole(tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    (tmp_path / "big.bin").write_bytes(data)
    assert read_limited(tmp_path / "big.bin") == data


def test_a_file_of_the_limit_is_read_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ten.bin").write_bytes(b"0123456789")
    assert read_limited(tmp_path / "ten.bin", limit=10) == b"0123456789"
    with pytest.raises(UnreadableFileError, match="larger than 9 bytes"):
        read_limited(tmp_path / "ten.bin", limit=9)


@_PROCFS
def test_a_file_that_tells_no_size_is_read_to_its_end() -> None:
    with open("/proc/self/cmdline", "rb") as handle:
        expected = handle.read()
    assert os.stat("/proc/self/cmdline").st_size == 0 < len(expected)
    assert read_limited("/proc/self/cmdline") == expected


@_PROCFS
def test_a_file_that_tells_no_size_is_refused_once_it_passes_the_limit() -> None:
    size = len(read_limited("/proc/self/cmdline"))
    with pytest.raises(UnreadableFileError, match=f"larger than {size - 1} bytes"):
        read_limited("/proc/self/cmdline", limit=size - 1)
