"""Line-aware YAML loading (plain data, plus where every value sits in the file), and the
stable YAML dumping the scenario and cassette writers share.

Built on PyYAML's safe node graph (``yaml.compose`` with ``SafeLoader``); a document of plain
mappings, lists and untagged scalars (most files) is built straight from libyaml's parser events
instead, to the same data and locations, and anything else, every error included, takes the node
graph's way. Scalars resolve as
``yaml.safe_load`` resolves them, with one deliberate difference: **mapping keys are always
strings**, the key's text as written. (YAML 1.1 reads the key ``on:`` as ``True``, which would
break hooks' ``on:``; JSON, the shape tool arguments take, has string keys only.)

Locations are 1-based ``(line, column)`` pairs keyed by a *field path*: a tuple of mapping keys
(``str``) and sequence indices (``int``); ``()`` is the document root.

Every problem raises :class:`~agentrig.harness.errors.ScenarioFileError` with file, line and
column: YAML syntax errors, duplicate keys (both lines named), unsupported tags, tagged values
that do not parse (``!!bool maybe``, the date ``2001-13-45``), recursive aliases, files that are
not UTF-8, and hostile shapes: more than ``MAX_VALUES`` values once aliases are expanded (a
"billion laughs" file), or collections nested more than ``MAX_DEPTH`` levels deep.
"""

from __future__ import annotations

import enum
import functools
import os
import re
import sys
from collections.abc import Callable, Mapping
from datetime import date
from typing import Any, NamedTuple, cast

import yaml
from yaml.constructor import SafeConstructor
from yaml.error import Mark
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from agentrig._model import find_non_json
from agentrig._text import clipped
from agentrig.harness.data_files import UnreadableFileError, read_limited
from agentrig.harness.errors import ScenarioFileError

__all__ = [
    "MAX_DEPTH",
    "MAX_VALUES",
    "FieldPath",
    "Location",
    "YamlSource",
    "check_yaml_limits",
    "dump_yaml",
    "load_yaml_file",
    "load_yaml_text",
    "not_json_data",
    "plain_scalar_value",
]

FieldPath = tuple[str | int, ...]

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_DECIMAL = re.compile(r"[1-9][0-9]{0,17}|0")
_MERGE_TAG = "tag:yaml.org,2002:merge"
_ABSENT = object()
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_VALUES = 200_000
"""The most values a document may hold once its aliases are expanded."""
MAX_DEPTH = 100
"""The deepest collections may nest (JSON tools and serializers give up near 200)."""


class _Unread(enum.Enum):
    """The data of a source that let go of it (an enum member: it pickles as itself)."""

    DATA = enum.auto()


class Location(NamedTuple):
    """A 1-based position in a file."""

    line: int
    column: int


class YamlSource:
    """A parsed YAML document: its data and where each part of it was written.

    ``locations`` maps a field path to where its value starts; ``key_locations`` maps the path
    of each mapping entry to where its key starts. ``data`` is ``None`` for an empty document.

    A source made with ``text`` and ``depth`` knows the locations of paths of at most ``depth``
    parts only, and finds the others by parsing ``text`` again the first time one is asked for:
    most files load without a mistake, and recording where each of their values sits would
    cost more than parsing them (and keep the memory for it).
    """

    __slots__ = ("_data", "_depth", "_key_locations", "_locations", "_text", "path")

    def __init__(
        self,
        path: str,
        data: Any,
        locations: Mapping[FieldPath, Location],
        key_locations: Mapping[FieldPath, Location],
        *,
        text: str | None = None,
        depth: int | None = None,
    ) -> None:
        self.path = path
        self._data = data
        self._locations = locations
        self._key_locations = key_locations
        self._text = text if depth is not None else None
        self._depth = depth if text is not None else None

    def __repr__(self) -> str:
        return f"YamlSource(path={self.path!r})"

    @property
    def data(self) -> Any:
        """The document as plain data (``None`` for an empty one)."""
        if self._data is _Unread.DATA:
            self._locate_all()
        return self._data

    def drop_data(self) -> None:
        """Let go of the data of a source made with ``text`` and ``depth``: it is built again
        from the text when next asked for. A loaded scenario keeps its source for locations
        only, and a file's data is a few dozen containers the garbage collector would visit at
        each full collection."""
        if self._depth is not None:
            self._data = _Unread.DATA

    @property
    def locations(self) -> Mapping[FieldPath, Location]:
        """Where the value at each field path starts."""
        self._locate_all()
        return self._locations

    @property
    def key_locations(self) -> Mapping[FieldPath, Location]:
        """Where the key of each mapping entry starts, by the entry's field path."""
        self._locate_all()
        return self._key_locations

    def _locate_all(self) -> None:
        if self._depth is None:
            return
        assert self._text is not None
        root = _composed(self._text, self.path)
        builder = _Builder(self.path)
        data = None if root is None else builder.build(root, ())
        if self._data is _Unread.DATA:
            self._data = data
        self._locations, self._key_locations = builder.locations, builder.key_locations
        self._depth = self._text = None

    def _tables(self, path: FieldPath) -> tuple[Mapping[FieldPath, Location], ...]:
        if self._depth is not None and len(path) > self._depth:
            self._locate_all()
        return self._locations, self._key_locations

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
        locations, key_locations = self._tables(path)
        key = key_locations.get(path)
        try:
            is_collection = isinstance(self.value_at(path), dict | list)
        except KeyError:
            is_collection = False
        if key is not None and is_collection:
            return key
        return locations.get(path, key)

    def key_location(self, path: FieldPath) -> Location | None:
        """Where the key of the mapping entry at ``path`` starts, if it is one."""
        return self._tables(path)[1].get(path)


def load_yaml_file(path: str | os.PathLike[str], *, depth: int | None = None) -> YamlSource:
    """Read and parse one YAML file, which must be UTF-8 (a byte-order mark is allowed), a
    regular file (not a FIFO, device or folder; symlinks are followed) of at most
    :data:`~agentrig.harness.data_files.MAX_FILE_BYTES`. ``depth``: as for
    :func:`load_yaml_text`."""
    name = os.fspath(path)
    try:
        raw = read_limited(path)
    except UnreadableFileError as error:
        raise ScenarioFileError(name, error.reason) from None
    return load_yaml_text(_decode(raw, name), name, depth=depth)


def load_yaml_text(text: str, path: str = "<string>", *, depth: int | None = None) -> YamlSource:
    """Parse one YAML document given as text; ``path`` is only used in locations and errors.

    With ``depth``, only the locations of paths of at most ``depth`` parts are recorded now,
    the others when first asked for (by parsing ``text`` again); the data, and every error,
    are the same either way."""
    built = _plain_document(text, path, depth)
    if built is not None:
        data, locations, key_locations = built
    else:  # anything the fast path leaves (and every error): the node graph, as it says
        root = _composed(text, path)
        builder = _Builder(path, depth, aliases="*" in text)
        data = None if root is None else builder.build(root, ())
        locations, key_locations = builder.locations, builder.key_locations
    if depth is None:
        return YamlSource(path, data, locations, key_locations)
    return YamlSource(path, data, locations, key_locations, text=text, depth=depth)


def check_yaml_limits(text: str, path: str = "<string>") -> None:
    """Check that ``text`` is one YAML document within :data:`MAX_VALUES` and :data:`MAX_DEPTH`,
    before another YAML loader (whose tags may differ) builds it; ``ScenarioFileError`` if not."""
    root = _composed(text, path)
    if root is not None:
        builder = _Builder(path)
        builder._charge(root, 0)
        builder._charge_contents(root, 0)


def _composed(text: str, path: str) -> Node | None:
    try:
        if _may_exceed_limit(text):
            _count_values(text, path)
        return _compose(text)
    except RecursionError:
        raise _too_deep(text, path) from None
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc, path) from None
    except yaml.reader.ReaderError as exc:
        line, column = _position(text, exc.position)
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        reason = f"invalid YAML: character #x{code:04x} is not allowed ({exc.reason})"
        raise ScenarioFileError(path, reason, line=line, column=column) from None
    except yaml.YAMLError as exc:
        raise ScenarioFileError(path, f"invalid YAML: {exc}") from None
    except UnicodeEncodeError as exc:  # text (not a file) holding half a character
        line, column = _position(text, exc.start)
        reason = f"a lone surrogate (#x{ord(text[exc.start]):04x}) is not a character"
        raise ScenarioFileError(path, reason, line=line, column=column) from None


_RESOLVED: dict[Any, dict[str, str]] = {}
"""The tags of plain and quoted scalars already resolved, by their ``implicit`` flags (keys and
short values repeat)."""
_RESOLVED_MAX = 20_000
_RESOLVED_LENGTH = 64
_COLLECTION_TAGS: dict[type[Node], str] = {MappingNode: _MAP_TAG, SequenceNode: _SEQ_TAG}


def _cached_resolve(loader: Any, kind: type[Node], value: Any, implicit: Any) -> Any:
    """``Resolver.resolve``, remembered for scalars: the C parser asks for every scalar of a
    file, and the resolver tries its regular expressions on each (a fifth of composing); an
    untagged mapping or list is what the resolver says without a path resolver."""
    if kind is not ScalarNode:
        if loader.yaml_path_resolvers:
            return _RESOLVE(loader, kind, value, implicit)
        return _COLLECTION_TAGS[kind]
    known = _RESOLVED.get(implicit)
    if known is None:
        known = _RESOLVED.setdefault((bool(implicit[0]), bool(implicit[1])), {})
        _RESOLVED[implicit] = known
    tag = known.get(value)
    if tag is None:
        tag = _RESOLVE(loader, kind, value, implicit)
        if len(known) < _RESOLVED_MAX and isinstance(value, str) and len(value) <= _RESOLVED_LENGTH:
            known[value] = tag
    return tag


_RESOLVE: Callable[..., Any] = yaml.resolver.Resolver.resolve
_C_LOADER: type[Any] | None = getattr(yaml, "CSafeLoader", None)
_FAST_LOADER: type[Any] | None = (
    None if _C_LOADER is None else type("_FastLoader", (_C_LOADER,), {"resolve": _cached_resolve})
)


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


_PLAIN_TAGS: dict[str, str] = {}
"""The tags of plain scalars the fast path resolved (keys and short values repeat)."""
_PLAIN_VALUES: dict[tuple[str, str], Any] = {}
"""Plain scalars of other tags than text and decimals, as the constructor reads them (each
immutable: a number, a boolean, null, a date)."""
_CONSTRUCTED_TAGS = frozenset(
    "tag:yaml.org,2002:" + name for name in ("int", "float", "bool", "null", "timestamp")
)
_PARSER: type[Any] | None = getattr(getattr(yaml, "_yaml", None), "CParser", None)
_CANNOT = object()
"""What the fast path returns for a value it leaves to the full path."""
_Built = tuple[Any, dict[FieldPath, Location], dict[FieldPath, Location]]


def _plain_document(text: str, path: str, depth: int | None) -> _Built | None:
    """The data and locations :class:`_Builder` would give for ``text``, built straight from
    libyaml's events (no node graph, no resolver call a scalar); None, for the full path to do
    it, whenever the text has anything but plain mappings, lists and untagged scalars of text,
    numbers, booleans, null and dates (an anchor, an alias, a tag, a merge key, a duplicate
    key, nesting beyond :data:`MAX_DEPTH`, a text that may exceed :data:`MAX_VALUES`, or any
    error: the full path reports every problem, with its own words and position)."""
    if _PARSER is None or _may_exceed_limit(text):
        return None
    limit = sys.maxsize if depth is None else depth
    try:
        parser = _PARSER(text)
    except Exception:
        return None
    try:
        return _build_from_events(parser.get_event, limit)
    except Exception:  # the full path says what is wrong
        return None
    finally:
        parser.dispose()


_SCALAR_EVENT, _ALIAS_EVENT = yaml.ScalarEvent, yaml.AliasEvent
_MAPPING_START, _MAPPING_END = yaml.MappingStartEvent, yaml.MappingEndEvent
_SEQUENCE_START, _SEQUENCE_END = yaml.SequenceStartEvent, yaml.SequenceEndEvent


def _build_from_events(get: Callable[[], Any], limit: int) -> _Built | None:
    locations: dict[FieldPath, Location] = {}
    key_locations: dict[FieldPath, Location] = {}
    get()  # the stream's start
    event = get()
    if type(event) is yaml.StreamEndEvent:
        return None, locations, key_locations
    if type(event) is not yaml.DocumentStartEvent:
        return None
    # The innermost open collection (None: the document itself), whether it is a mapping, its
    # path (None beyond ``limit``), its depth, and the key awaiting its value (None: a key is
    # next); ``stack`` keeps those of the collections around it.
    container: Any = None
    key: Any = None
    is_mapping, path, level = False, cast("FieldPath | None", ()), -1
    stack: list[tuple[Any, bool, FieldPath | None, int, Any]] = []
    root: Any = _CANNOT
    while True:
        event = get()
        kind = type(event)
        if kind is _SCALAR_EVENT:
            if event.anchor is not None or event.tag is not None:
                return None
            value = event.value
            if is_mapping and key is None:  # a key: its text, unless a duplicate or a merge
                if value in container or (value == "<<" and event.implicit[0]):
                    return None
                key = value
                if path is not None and len(path) < limit:
                    mark = event.start_mark
                    key_locations[(*path, key)] = Location(mark.line + 1, mark.column + 1)
                continue
            if event.implicit[0]:  # plain: the tag the resolver gives, most often text
                tag = _PLAIN_TAGS.get(value) or _plain_tag(value)
                if tag != _STR_TAG:
                    value = _plain_value(tag, value)
                    if value is _CANNOT:
                        return None
            elif event.style == '"' and _SURROGATE.search(value):
                return None
        elif kind is _MAPPING_START or kind is _SEQUENCE_START:
            if event.anchor is not None or event.tag is not None or (is_mapping and key is None):
                return None  # (a collection as a key: the full path refuses it)
            value = {} if kind is _MAPPING_START else []
        elif kind is _MAPPING_END or kind is _SEQUENCE_END:
            container, is_mapping, path, level, key = stack.pop()
            if container is None:
                break
            continue
        else:  # an alias; or the document's end, where a value was due
            return None
        if level >= MAX_DEPTH:
            return None
        if container is None:
            root, value_path = value, cast("FieldPath | None", ())
        else:
            if is_mapping:
                container[key] = value
                part, key = key, None
            else:
                part = len(container)
                container.append(value)
            value_path = (*path, part) if path is not None and len(path) < limit else None
        if value_path is not None:
            mark = event.start_mark
            locations[value_path] = Location(mark.line + 1, mark.column + 1)
        if kind is not _SCALAR_EVENT:
            stack.append((container, is_mapping, path, level, key))
            container, is_mapping, path, level = (
                value,
                kind is _MAPPING_START,
                value_path,
                level + 1,
            )
        elif container is None:
            break
    if type(get()) is not yaml.DocumentEndEvent or type(get()) is not yaml.StreamEndEvent:
        return None  # a second document: the full path refuses it
    return root, locations, key_locations


def _plain_tag(value: str) -> str:
    """The tag the resolver gives a plain scalar, remembered for a short one."""
    tag: str = _RESOLVER.resolve(ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    if len(_PLAIN_TAGS) < _RESOLVED_MAX and len(value) <= _RESOLVED_LENGTH:
        _PLAIN_TAGS[value] = tag
    return tag


def _plain_value(tag: str, value: str) -> Any:
    """The value of a plain scalar of ``tag`` (not text), as the builder makes it; _CANNOT for
    one the full path must read."""
    if tag == _INT_TAG and _DECIMAL.fullmatch(value):
        return int(value)
    if tag not in _CONSTRUCTED_TAGS:
        return _CANNOT
    known = _PLAIN_VALUES.get((tag, value), _CANNOT)
    if known is not _CANNOT:
        return known
    try:
        built = SafeConstructor().construct_object(ScalarNode(tag, value), deep=True)
    except Exception:
        return _CANNOT
    if type(built) is int and built.bit_length() > _SHOWN_INT_BITS and _unshowable(built):
        return _CANNOT
    if len(_PLAIN_VALUES) < _RESOLVED_MAX and len(value) <= _RESOLVED_LENGTH:
        _PLAIN_VALUES[(tag, value)] = built
    return built


def _may_exceed_limit(text: str) -> bool:
    """Whether ``text`` could hold more than :data:`MAX_VALUES` values: without aliases (``*``)
    every value but an empty one takes at least one character of its own, and an empty one
    follows a key or a ``-`` that does, so a text of fewer than ``MAX_VALUES // 2`` characters
    cannot (the builder still counts every value it builds)."""
    return len(text) >= MAX_VALUES // 2 or "*" in text


def _count_values(text: str, path: str) -> None:
    """Refuse a document of more than :data:`MAX_VALUES` values while parsing it, before its
    node graph is built: the parser's events are counted as the builder counts values (every
    node but mapping keys and a merge key's list of sources), without expanding aliases, which
    the builder charges. So a file that will be refused costs time and memory for the limit, not
    for the whole file. A YAML error is left to the composer, which reports it."""
    loader = (_FAST_LOADER or yaml.SafeLoader)(text)
    expecting_key: list[bool | None] = []  # per open mapping: awaiting a key; None: a list
    merge_value = False
    count = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, yaml.CollectionEndEvent):
                expecting_key.pop()
                continue
            if isinstance(event, yaml.DocumentEndEvent):
                return  # one document; the composer refuses a second
            if not isinstance(event, yaml.NodeEvent):
                continue
            is_key = bool(expecting_key) and expecting_key[-1] is True
            if expecting_key and expecting_key[-1] is not None:
                expecting_key[-1] = not is_key
            merging, merge_value = merge_value, False
            if is_key:
                merge_value = isinstance(event, yaml.ScalarEvent) and _is_merge_key(event)
            elif not (merging and isinstance(event, yaml.SequenceStartEvent)):
                count += 1
                if count > MAX_VALUES:
                    mark = event.start_mark  # libyaml's mark, or PyYAML's
                    reason = f"more than {MAX_VALUES} values (aliases expand)"
                    line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
                    raise ScenarioFileError(path, reason, line=line, column=column)
            if isinstance(event, yaml.MappingStartEvent):
                expecting_key.append(True)
            elif isinstance(event, yaml.SequenceStartEvent):
                expecting_key.append(None)
    except yaml.YAMLError:
        return
    finally:
        loader.dispose()


_RESOLVER = yaml.resolver.Resolver()
_SIMPLE_TAGS = frozenset(
    "tag:yaml.org,2002:" + name for name in ("str", "int", "float", "bool", "null")
)


@functools.lru_cache(maxsize=4096)  # the values it gives are immutable
def plain_scalar_value(text: str) -> tuple[Any] | None:
    """``(value,)``: what a YAML document holding ``text`` as one plain scalar reads, when it
    resolves to text, a number, a boolean or null; None for anything else (a date, a value the
    constructor refuses), which the caller leaves to the full parser. ``text`` must be a plain
    scalar as written (no indicators, no blanks): this resolves it as the composer would."""
    tag = _RESOLVER.resolve(ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    if tag not in _SIMPLE_TAGS:
        return None
    if tag == _STR_TAG:
        return (text,)
    try:
        return (SafeConstructor().construct_object(ScalarNode(tag, text), deep=True),)
    except Exception:  # the full parser says what is wrong
        return None


def _is_merge_key(event: yaml.ScalarEvent) -> bool:
    return event.value == "<<" and event.tag in (None, "!", _MERGE_TAG) and event.implicit[0]


class _Builder:
    """Turns a node graph into plain data while recording locations."""

    def __init__(self, path: str, depth: int | None = None, *, aliases: bool = True) -> None:
        self.path = path
        self._aliases = aliases  # whether the text may hold aliases (False: it has no '*')
        self._depth = sys.maxsize if depth is None else depth  # record paths this long
        self.locations: dict[FieldPath, Location] = {}
        self.key_locations: dict[FieldPath, Location] = {}
        self._constructor = SafeConstructor()
        self._active: set[int] = set()
        self._budget = MAX_VALUES

    def build(self, node: Node, path: FieldPath) -> Any:
        if self._aliases and id(node) in self._active:
            raise self.error(node.start_mark, "an alias refers to a node that contains it")
        self._charge(node, len(path))
        if len(path) <= self._depth:
            self.locations[path] = _location(node.start_mark)
        if type(node) is ScalarNode and node.style != '"':  # most of a file: no call further
            if node.tag == _STR_TAG:
                return node.value  # what the constructor returns for text
            if node.tag == _INT_TAG and _DECIMAL.fullmatch(node.value):
                return int(node.value)  # as the constructor reads a plain decimal
        if not self._aliases:  # no node is reached twice, so none can contain itself
            return self._build(node, path)
        self._active.add(id(node))
        try:
            return self._build(node, path)
        finally:
            self._active.discard(id(node))

    def _build(self, node: Node, path: FieldPath) -> Any:
        if type(node) is ScalarNode:
            if node.tag == _STR_TAG and node.style != '"':
                return node.value  # what the constructor returns for text, most of a file
            if node.tag == _INT_TAG and _DECIMAL.fullmatch(node.value):
                return int(node.value)  # as the constructor reads a plain decimal
        if isinstance(node, MappingNode) and node.tag == _MAP_TAG:
            return self._mapping(node, path)
        if isinstance(node, SequenceNode) and node.tag == _SEQ_TAG:
            return [self.build(item, (*path, index)) for index, item in enumerate(node.value)]
        if isinstance(node, MappingNode | SequenceNode):  # !!set, !!omap, !!pairs and the like
            self._charge_contents(node, len(path))
        if isinstance(node, ScalarNode) and node.style == '"' and _SURROGATE.search(node.value):
            # Only a double-quoted escape can make one: "\ud800" is half a character.
            reason = (
                "a \\u escape of a lone surrogate (\\ud800 to \\udfff) is not a character; "
                "write a character beyond \\uffff as \\U0001F600, not as a surrogate pair"
            )
            raise self.error(node.start_mark, reason)
        try:
            value = self._constructor.construct_object(node, deep=True)
        except yaml.MarkedYAMLError as exc:
            raise _syntax_error(exc, self.path) from None
        except Exception as exc:  # PyYAML's scalar constructors raise what their parsers raise
            value = f" {_quoted(node.value)}" if isinstance(node, ScalarNode) else ""
            reason = f"invalid {_short_tag(node.tag)} value{value}: {_describe(exc)}"
            raise self.error(node.start_mark, reason) from None
        if type(value) is int and value.bit_length() > _SHOWN_INT_BITS and _unshowable(value):
            reason = (
                f"an integer of more than {_INT_DIGITS} digits ({_quoted(node.value)}), more "
                "than Python shows or JSON readers take; quote it to make it text"
            )
            raise self.error(node.start_mark, reason)
        return value

    def _charge(self, node: Node, depth: int) -> None:
        """Count one more value against the document's limits."""
        self._budget -= 1
        if self._budget < 0:
            reason = f"more than {MAX_VALUES} values (aliases expand)"
            raise self.error(node.start_mark, reason)
        if depth > MAX_DEPTH:
            reason = f"collections nested more than {MAX_DEPTH} levels deep"
            raise self.error(node.start_mark, reason)

    def _charge_contents(self, node: Node, depth: int) -> None:
        """Count what PyYAML's constructor will expand below ``node``, before it does."""
        children: list[Node] = []
        if isinstance(node, MappingNode):
            children = [part for pair in node.value for part in pair]
        elif isinstance(node, SequenceNode):
            children = node.value
        for child in children:
            self._charge(child, depth + 1)
            self._charge_contents(child, depth + 1)

    def _mapping(self, node: MappingNode, path: FieldPath) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merged.update(self._merge(value_node, path))
        recorded = len(path) < self._depth
        if recorded or len(path) == self._depth:
            self.locations[path] = _location(node.start_mark)
        result: dict[str, Any] = {}
        seen: dict[str, Mark] = {}
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE_TAG:
                key = key_node.value
                if type(key_node) is not ScalarNode or key in seen:
                    key = self._key(key_node, seen)  # raises what is wrong
                seen[key] = key_node.start_mark
                if recorded:
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


_INT_DIGITS = sys.get_int_max_str_digits() or 4300
_SHOWN_INT_BITS = int(_INT_DIGITS * 3.32)
"""Integers of fewer bits than this have fewer than ``_INT_DIGITS`` decimal digits."""


def _unshowable(value: int) -> bool:
    """Whether ``str(value)`` fails: hexadecimal, octal and binary YAML integers have no digit
    limit, while the decimal form every message and JSON writer needs has."""
    try:
        str(value)
    except ValueError:
        return True
    return False


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml") else tag


def _quoted(value: str) -> str:
    """A scalar quoted in an error message; a long one cut, with its length."""
    shown = repr(clipped(value, 40))
    return shown if len(value) <= 40 else f"{shown} ({len(value)} characters)"


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeyError):  # the bool and int constructors look the text up in a table
        return "not a value of this type"
    return clipped(str(exc), 200) or type(exc).__name__


def _too_deep(text: str, path: str) -> ScenarioFileError:
    """The error for text whose nesting exhausted the recursive composer: where it gets too
    deep, found by the parser's event stream (which does not recurse)."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH and isinstance(event.start_mark, Mark):
                    line, column = _location(event.start_mark)
                    reason = f"collections nested more than {MAX_DEPTH} levels deep"
                    return ScenarioFileError(path, reason, line=line, column=column)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        return _syntax_error(exc, path)
    return ScenarioFileError(path, f"collections nested more than {MAX_DEPTH} levels deep")


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


_JSON_SCALARS = frozenset({str, int, bool, type(None)})


def not_json_data(value: Any) -> str | None:
    """Why ``value`` is not JSON data (YAML also reads dates, sets, pairs, bytes and .nan; the
    runtime accepts nothing but JSON data), or None."""
    if type(value) in _JSON_SCALARS:  # most values are text, whole numbers, booleans or null
        return None
    found = find_non_json(value, lenient=True)
    if found is None:
        return None
    at = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in found.path)
    where = f"at {at.removeprefix('.')}: " if at else ""
    if found.is_key:
        return f"{where}the key {found.value!r} is not JSON data: keys are text"
    if isinstance(found.value, float):
        return f"{where}{found.value!r} is not JSON data: JSON has no NaN or infinity, use a number"
    if isinstance(found.value, date):
        what = f"the {type(found.value).__name__} {found.value.isoformat()} is"
        return f"{where}{what} not JSON data: quote it to make it text"
    what = "bytes are" if isinstance(found.value, bytes) else f"a {type(found.value).__name__} is"
    if isinstance(found.value, tuple):
        what = "a pair of a !!pairs or !!omap value is"
    return f"{where}{what} not JSON data: use text, numbers, booleans, null, lists and mappings"


_NEEDS_ESCAPES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]|[^\x00-\ufffd]")
"""Characters a YAML reader would fold, drop or refuse in a plain or block scalar."""


class _Dumper(yaml.SafeDumper):
    """A safe dumper that escapes the characters YAML readers would fold or drop."""

    blocks = False


class _BlockDumper(_Dumper):
    """The same, with multi-line text as ``|`` blocks."""

    blocks = True


def _represent_str(dumper: yaml.representer.SafeRepresenter, value: str) -> yaml.ScalarNode:
    style: str | None = None
    if _NEEDS_ESCAPES.search(value):
        style = '"'
    elif "\n" in value and getattr(dumper, "blocks", False):
        style = "|"
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)

_CDumpers: tuple[type[Any], type[Any]] | None = None
"""The same two dumpers on libyaml's emitter (about 5 times as fast), where PyYAML has it."""
if yaml.__with_libyaml__:  # pragma: no branch

    class _CDumper(yaml.CSafeDumper):
        blocks = False

    class _CBlockDumper(_CDumper):
        blocks = True

    _CDumper.add_representer(str, _represent_str)
    _CDumpers = (_CDumper, _CBlockDumper)


def dump_yaml(data: Any, *, blocks: bool = False) -> str:
    """``data`` as block-style YAML, keys in their order, text as written (escaped only where a
    reader would change it); with ``blocks``, multi-line text as ``|`` blocks."""
    options: dict[str, Any] = {
        "sort_keys": False,
        "allow_unicode": True,
        "default_flow_style": False,
        "width": 100,
    }
    # libyaml writes the same text, but for double-quoted text (it folds long lines elsewhere,
    # and escapes characters beyond U+FFFF, which PyYAML writes as they are), a document ending
    # in a kept block or of a lone scalar (their "..." end differs) and an empty key (PyYAML
    # writes "? ''"): those take PyYAML's emitter, so the text is the same whichever is
    # installed (compared on every code point, the project's YAML files and random documents)
    if _CDumpers is not None and isinstance(data, dict) and data:
        text: str = yaml.dump(data, Dumper=_CDumpers[blocks], **options)
        if '"' not in text and "'':" not in text and not text.endswith("\n...\n"):
            return text
    text = yaml.dump(data, Dumper=_BlockDumper if blocks else _Dumper, **options)
    return text
