"""Cassettes as YAML text and files: line-aware loading, stable dumping, atomic writes."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentrig.harness.cassettes.errors import CassetteFileError
from agentrig.harness.cassettes.model import CASSETTE_VERSION, Cassette, to_data
from agentrig.harness.data_files import not_a_regular_file
from agentrig.harness.errors import DataFileError
from agentrig.harness.scenarios.loader import file_error
from agentrig.harness.scenarios.yaml_source import (
    YamlSource,
    dump_yaml,
    load_yaml_file,
    load_yaml_text,
)

__all__ = [
    "cassette_from_yaml",
    "cassette_to_yaml",
    "load_cassette",
    "refuse_non_file",
    "save_cassette",
    "write_text_atomically",
]

StrPath = str | os.PathLike[str]

_HEADER = "# agentrig cassette: recorded inference requests and responses (docs/record-replay.md)\n"


def cassette_to_yaml(cassette: Cassette) -> str:
    """``cassette`` as YAML: fields in a fixed order, defaults left out, multi-line text as
    block scalars. Loading the text gives back an equal cassette."""
    data = {"version": cassette.version, **to_data(cassette)}
    return _HEADER + dump_yaml(data, blocks=True)


def cassette_from_yaml(text: str, path: str = "<string>") -> Cassette:
    """Parse cassette text; problems raise :class:`CassetteFileError` naming ``path``, line and
    field."""
    try:
        source = load_yaml_text(text, path)
    except DataFileError as error:
        raise CassetteFileError.of(error) from None
    return _validate(source)


def load_cassette(path: StrPath) -> Cassette:
    """Read a cassette file (UTF-8 YAML)."""
    try:
        source = load_yaml_file(path)
    except DataFileError as error:
        raise CassetteFileError.of(error) from None
    return _validate(source)


def save_cassette(cassette: Cassette, path: StrPath) -> Path:
    """Write ``cassette`` to ``path`` atomically (a temporary file, then ``os.replace``), so a
    reader never sees half a file. Parent folders are created."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(target, cassette_to_yaml(cassette))
    return target


def refuse_non_file(path: StrPath) -> None:
    """:class:`CassetteFileError` when ``path`` exists and is not a regular file (a FIFO, a
    device, a folder; symlinks followed): a cassette is neither read from it nor recorded over
    it."""
    kind = not_a_regular_file(path)
    if kind is not None:
        reason = (
            f"not a regular file: it is {kind}; a cassette is read from a regular file and "
            "recorded to one or to a new path, never over anything else"
        )
        raise CassetteFileError(os.fspath(path), reason)


def write_text_atomically(target: Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``target`` through a temporary file in its
    folder and ``os.replace``: a reader sees the old file or the new one, never half of one.
    A ``target`` that exists and is not a regular file (a FIFO, a device) is never replaced: an
    ``OSError`` says so."""
    kind = not_a_regular_file(target)
    if kind is not None:
        raise OSError(
            errno.EINVAL, f"not a regular file: it is {kind}; it was not replaced", str(target)
        )
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _validate(source: YamlSource) -> Cassette:
    data = source.data
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}, not a mapping"
        reason = f"the file is {kind}; a cassette is a mapping with version: and interactions:"
        raise _at(source, (), reason, "")
    version = data.get("version")
    if version != CASSETTE_VERSION or isinstance(version, bool):
        raise _version_error(source, version)
    try:
        return Cassette.model_validate(data)
    except ValidationError as exc:
        raise CassetteFileError.of(file_error(exc, source, Cassette)) from None


def _version_error(source: YamlSource, version: Any) -> CassetteFileError:
    if "version" not in source.data:
        reason = (
            f"missing required key 'version' (this agentrig writes version: {CASSETTE_VERSION})"
        )
        return _at(source, (), reason, "version")
    if not isinstance(version, int) or isinstance(version, bool):
        kind = f"the string {version!r}" if isinstance(version, str) else repr(version)
        reason = (
            f"version must be the number {CASSETTE_VERSION}, got {kind}; "
            f"write version: {CASSETTE_VERSION}"
        )
        return _at(source, ("version",), reason, "version")
    reason = (
        f"cassette version {version!r} is not supported: this agentrig reads version "
        f"{CASSETTE_VERSION}; re-record the cassette (mode 'all') or use the agentrig that wrote it"
    )
    return _at(source, ("version",), reason, "version")


def _at(source: YamlSource, path: tuple[str, ...], reason: str, field: str) -> CassetteFileError:
    where = source.location(path)
    line, column = where if where is not None else (None, None)
    return CassetteFileError(source.path, reason, line=line, column=column, field=field)
