"""Line-aware YAML loading: plain data, plus where every value sits in the file.

Built on PyYAML's safe node graph (``yaml.compose`` with ``SafeLoader``). Scalars resolve as
``yaml.safe_load`` resolves them, with one deliberate difference: **mapping keys are always
strings**, the key's text as written. (YAML 1.1 reads the key ``on:`` as ``True``, which would
break hooks' ``on:``; JSON, the shape tool arguments take, has string keys only.)

Locations are 1-based ``(line, column)`` pairs keyed by a *field path*: a tuple of mapping keys
(``str``) and sequence indices (``int``); ``()`` is the document root.

Every problem raises :class:`~agentrig.harness.errors.ScenarioFileError` with file, line and
column: YAML syntax errors, duplicate keys (both lines named), unsupported tags, recursive
aliases, and files that are not UTF-8.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import yaml
from yaml.constructor import SafeConstructor
from yaml.error import Mark
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from agentrig.harness.errors import ScenarioFileError

__all__ = ["FieldPath", "Location", "YamlSource", "load_yaml_file", "load_yaml_text"]

FieldPath = tuple[str | int, ...]

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_ABSENT = object()
_MAX_NODES = 200_000


class Location(NamedTuple):
    """A 1-based position in a file."""

    line: int
    column: int


@dataclass(frozen=True)
class YamlSource:
    """A parsed YAML document: its data and where each part of it was written.

    ``locations`` maps a field path to where its value starts; ``key_locations`` maps the path
    of each mapping entry to where its key starts. ``data`` is ``None`` for an empty document.
    """

    path: str
    data: Any
    locations: Mapping[FieldPath, Location]
    key_locations: Mapping[FieldPath, Location]

    def value_at(self, path: FieldPath) -> Any:
        """The data at ``path``; ``KeyError`` if there is none."""
        node = self.data
        for part in path:
            node = _child(node, part)
            if node is _ABSENT:
                raise KeyError(path)
        return node

    def location(self, path: FieldPath) -> Location | None:
        """Where to point for ``path``: the key of a collection entry, else the value itself."""
        key = self.key_locations.get(path)
        try:
            is_collection = isinstance(self.value_at(path), dict | list)
        except KeyError:
            is_collection = False
        if key is not None and is_collection:
            return key
        return self.locations.get(path, key)


def load_yaml_file(path: str | os.PathLike[str]) -> YamlSource:
    """Read and parse one YAML file, which must be UTF-8 (a byte-order mark is allowed)."""
    name = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise ScenarioFileError(name, f"cannot read the file: {exc.strerror or exc}") from None
    return load_yaml_text(_decode(raw, name), name)


def load_yaml_text(text: str, path: str = "<string>") -> YamlSource:
    """Parse one YAML document given as text; ``path`` is only used in locations and errors."""
    try:
        root = _compose(text)
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc, path) from None
    except yaml.reader.ReaderError as exc:
        line, column = _position(text, exc.position)
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        reason = f"invalid YAML: character #x{code:04x} is not allowed ({exc.reason})"
        raise ScenarioFileError(path, reason, line=line, column=column) from None
    except yaml.YAMLError as exc:
        raise ScenarioFileError(path, f"invalid YAML: {exc}") from None
    builder = _Builder(path)
    data = None if root is None else builder.build(root, ())
    return YamlSource(path, data, builder.locations, builder.key_locations)


_FAST_LOADER: type[Any] | None = getattr(yaml, "CSafeLoader", None)


def _compose(text: str) -> Node | None:
    """The node graph of ``text``: composed by libyaml when PyYAML has it (several times faster,
    same nodes, tags and marks); any problem is reported by the pure-Python ``SafeLoader``, so
    error messages and positions stay exactly its own."""
    if _FAST_LOADER is not None:
        try:
            return yaml.compose(text, Loader=_FAST_LOADER)
        except yaml.YAMLError:
            pass
    return yaml.compose(text, Loader=yaml.SafeLoader)


class _Builder:
    """Turns a node graph into plain data while recording locations."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.locations: dict[FieldPath, Location] = {}
        self.key_locations: dict[FieldPath, Location] = {}
        self._constructor = SafeConstructor()
        self._active: set[int] = set()
        self._budget = _MAX_NODES

    def build(self, node: Node, path: FieldPath) -> Any:
        if id(node) in self._active:
            raise self.error(node.start_mark, "an alias refers to a node that contains it")
        self._budget -= 1
        if self._budget < 0:
            raise self.error(node.start_mark, f"more than {_MAX_NODES} values (aliases expand)")
        self.locations[path] = _location(node.start_mark)
        self._active.add(id(node))
        try:
            return self._build(node, path)
        finally:
            self._active.discard(id(node))

    def _build(self, node: Node, path: FieldPath) -> Any:
        if isinstance(node, MappingNode) and node.tag == _MAP_TAG:
            return self._mapping(node, path)
        if isinstance(node, SequenceNode) and node.tag == _SEQ_TAG:
            return [self.build(item, (*path, index)) for index, item in enumerate(node.value)]
        try:
            return self._constructor.construct_object(node, deep=True)
        except yaml.MarkedYAMLError as exc:
            raise _syntax_error(exc, self.path) from None

    def _mapping(self, node: MappingNode, path: FieldPath) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merged.update(self._merge(value_node, path))
        self.locations[path] = _location(node.start_mark)
        result: dict[str, Any] = {}
        seen: dict[str, Mark] = {}
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE_TAG:
                key = self._key(key_node, seen)
                self.key_locations[(*path, key)] = _location(key_node.start_mark)
                result[key] = self.build(value_node, (*path, key))
        return {**merged, **result}

    def _merge(self, node: Node, path: FieldPath) -> dict[str, Any]:
        """The entries a ``<<`` merge key brings in; earlier sources win, own keys win over all."""
        sources = node.value if isinstance(node, SequenceNode) else [node]
        merged: dict[str, Any] = {}
        for source in reversed(sources):
            if not isinstance(source, MappingNode):
                raise self.error(source.start_mark, "a merge key (<<) needs mappings to merge")
            merged.update(self.build(source, path))
        return merged

    def _key(self, node: Node, seen: dict[str, Mark]) -> str:
        if not isinstance(node, ScalarNode):
            raise self.error(node.start_mark, "mapping keys must be plain scalars, not collections")
        key = str(node.value)
        if key in seen:
            first = seen[key].line + 1
            raise self.error(
                node.start_mark, f"duplicate key {key!r} (first defined on line {first})"
            )
        seen[key] = node.start_mark
        return key

    def error(self, mark: Mark, reason: str) -> ScenarioFileError:
        line, column = _location(mark)
        return ScenarioFileError(self.path, reason, line=line, column=column)


def _child(node: Any, part: str | int) -> Any:
    if isinstance(node, dict) and isinstance(part, str):
        return node.get(part, _ABSENT)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return _ABSENT


def _location(mark: Mark) -> Location:
    return Location(mark.line + 1, mark.column + 1)


_INDENTATION_SIGNS = (
    "expected <block end>",
    "did not find expected key",
    "mapping values are not allowed here",
    "could not find expected ':'",
)
"""What PyYAML says when a line is indented more or less than its siblings."""


def _syntax_error(exc: yaml.MarkedYAMLError, path: str) -> ScenarioFileError:
    mark = exc.problem_mark or exc.context_mark
    reason = ", ".join(part for part in (exc.context, exc.problem) if part)
    if exc.context_mark and mark and exc.context_mark.line != mark.line:
        reason += f" (started on line {exc.context_mark.line + 1})"
    if "'\\t'" in reason:
        reason += "; YAML does not allow tabs for indentation, use spaces"
    elif any(sign in reason for sign in _INDENTATION_SIGNS):
        reason += (
            "; check the indentation: the keys of one mapping, and the '-' items of one list, "
            "start in the same column"
        )
    where = _location(mark) if mark else None
    return ScenarioFileError(
        path,
        f"invalid YAML: {reason}",
        line=where.line if where else None,
        column=where.column if where else None,
    )


def _decode(raw: bytes, path: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        byte = raw[exc.start]
        reason = f"the file is not valid UTF-8 (byte 0x{byte:02x}); save it as UTF-8"
        raise ScenarioFileError(path, reason, line=line, column=column) from None


def _position(text: str, offset: int) -> Location:
    line = text.count("\n", 0, offset) + 1
    return Location(line, offset - (text.rfind("\n", 0, offset) + 1) + 1)
