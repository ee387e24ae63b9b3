"""Base classes for agentrig's immutable data: frozen models and O(1)-validated collections."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    ClassVar,
    Generic,
    Self,
    TypeVar,
    dataclass_transform,
    overload,
)

from jiter import from_json as _jiter_json
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
)
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic.fields import FieldInfo
from pydantic_core import (
    PydanticSerializationError,
    SchemaSerializer,
    SchemaValidator,
    core_schema,
)
from pydantic_core import to_json as _to_json

from agentrig.errors import InvalidInputError

if TYPE_CHECKING:
    from pydantic.plugin._schema_validator import PluggableSchemaValidator

SCHEMA_VERSION = 1
"""Version of the serialized form written by ``to_dict()``; bumped on incompatible changes."""

T = TypeVar("T")


def format_location(loc: Sequence[int | str]) -> str:
    """Render a pydantic error location as a field path: ``execution.step_executions[0].id``."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part.startswith(("function-", "is-instance[", "json-or-python")) or part in (
            "tagged-union",
        ):
            continue
        else:
            path += f".{part}" if path else part
    return path


def problems_of(error: ValidationError) -> list[tuple[str, str]]:
    """``(field path, reason)`` for every problem in a pydantic ``ValidationError``."""
    return [
        (format_location(e["loc"]), _REASONS.get(e["type"], e["msg"]))
        for e in error.errors(include_url=False)
    ]


# A dataclass words an unknown field as a keyword argument, also when the data came from a dict
# (a saved state); the wording of models is right in both cases.
_REASONS = {"unexpected_keyword_argument": "Extra inputs are not permitted"}


class FrozenModel(BaseModel):
    """An immutable, strictly validated value: unknown fields are rejected.

    Invalid input raises ``InvalidInputError`` naming every bad field, never a pydantic error.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=False)

    def __init__(self, /, **data: Any) -> None:
        try:
            self.__pydantic_validator__.validate_python(data, self_instance=self)
        except ValidationError as error:
            raise InvalidInputError(type(self).__name__, problems_of(error)) from None

    # Tell pydantic this __init__ only translates errors, so nested validation (model_validate,
    # from_dict) bypasses it and keeps full field paths.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]


MAX_JSON_DEPTH = 100
"""The deepest JSON data may nest (``{}`` is one level): JSON parsers and serializers give up
near 200 levels, and a value must stay readable once it sits inside a saved state."""
_INT_LIMIT = 10**4300
"""Integers must have at most 4,300 digits, the most Python's ``int(str)`` and JSON parsers
read back."""


def is_json_data(value: Any, _depth: int = 0) -> bool:
    """True when ``value`` is plain JSON data: finite floats only, integers of at most 4,300
    digits, dicts with str keys, at most :data:`MAX_JSON_DEPTH` levels deep."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return bool(-_INT_LIMIT < value < _INT_LIMIT)
    if kind is float:
        return math.isfinite(value)
    if _depth >= MAX_JSON_DEPTH:
        return False
    if kind is dict:
        return all(map(_json_key, value)) and _all_json(value.values(), _depth + 1)
    if kind is list:
        return _all_json(value, _depth + 1)
    return False


def _json_key(key: Any) -> bool:
    """A str key that UTF-8 can encode: a key holding a lone surrogate would not survive
    ``to_dict`` (pydantic writes it as replacement characters), though a value would."""
    return type(key) is str and (key.isascii() or _encodable(key))


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _all_json(items: Iterable[Any], depth: int) -> bool:
    for item in items:
        # Scalars are checked inline: most of a JSON document is leaves, and a call each would
        # dominate the check (it runs on every JSON field of every validated object).
        leaf = type(item)
        if leaf is str or leaf is bool or item is None:
            continue
        if leaf is int and -_INT_LIMIT < item < _INT_LIMIT:
            continue
        if not is_json_data(item, depth):
            return False
    return True


def _within_depth(value: Any, depth: int = 1) -> bool:
    """Whether the containers of parsed JSON ``value`` nest at most ``MAX_JSON_DEPTH`` deep."""
    kind = type(value)
    if kind is dict:
        items: Iterable[Any] = value.values()
    elif kind is list:
        items = value
    else:
        return True
    if depth > MAX_JSON_DEPTH:
        return False
    for item in items:
        leaf = type(item)
        if (leaf is dict or leaf is list) and not _within_depth(item, depth + 1):
            return False
    return True


def json_equal(expected: Any, actual: Any) -> bool:
    """Equal as JSON values: ``1`` equals ``1.0``, but a boolean never equals a number (Python's
    ``True == 1`` would let a tool call with ``n=true`` pass for ``n=1``)."""
    kind, other = type(expected), type(actual)
    if kind is str or expected is None:  # equal only to their own kind: nothing to walk
        return bool(expected == actual)
    if kind is bool or other is bool:  # bool has no subclasses
        return kind is other and expected == actual
    # The exact types first: most JSON is dicts and lists, and ABC checks cost more.
    if (kind is dict or isinstance(expected, Mapping)) and (
        other is dict or isinstance(actual, Mapping)
    ):
        return expected.keys() == actual.keys() and all(
            json_equal(value, actual[key]) for key, value in expected.items()
        )
    if (kind in _SEQUENCES or isinstance(expected, list | tuple)) and (
        other in _SEQUENCES or isinstance(actual, list | tuple)
    ):
        return len(expected) == len(actual) and all(
            json_equal(a, b) for a, b in zip(expected, actual, strict=True)
        )
    return bool(expected == actual)


_SEQUENCES = (list, tuple)


_PARSED_JSON: dict[str, Any] = {"agentrig": "parsed JSON without NaN or Infinity"}
"""Validation context of ``from_json`` when the data can only be JSON data: parsed from text
that holds no ``NaN`` or ``Infinity`` token. ``_check_json`` then has nothing to check."""


def _check_json(value: Any, info: ValidationInfo) -> Any:
    if info.context is _PARSED_JSON:
        if not _within_depth(value):
            raise ValueError(f"must be JSON data nested at most {MAX_JSON_DEPTH} levels deep")
        return value
    if not is_json_data(value):
        raise ValueError(
            "must be JSON data (str, int, finite float, bool, None, list, dict with str keys), "
            f"got {_first_non_json(value)}"
        )
    return value


_STATE_DEPTH = MAX_JSON_DEPTH + 50
"""Deeper than any valid state nests (its JSON fields nest at most ``MAX_JSON_DEPTH`` deep, and
sit a few records down)."""


class _TooDeep:
    """Marks where :func:`_cut_deep` cut data off: no field of a record accepts it."""

    def __repr__(self) -> str:
        return "<nested too deep>"


def _cut_deep(value: Any, depth: int, path: tuple[str | int, ...], cuts: list[str]) -> Any:
    """A copy of ``value`` with each container below :data:`_STATE_DEPTH` levels replaced by a
    :class:`_TooDeep`, whose field paths are added to ``cuts``."""
    if not isinstance(value, dict | list | tuple):
        return value
    if depth > _STATE_DEPTH:
        cuts.append(format_location(path))
        return _TooDeep()
    if isinstance(value, dict):
        return {
            key: _cut_deep(item, depth + 1, (*path, str(key)), cuts) for key, item in value.items()
        }
    return [_cut_deep(item, depth + 1, (*path, index), cuts) for index, item in enumerate(value)]


def _brief(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for a message; a value whose repr fails (an
    integer of 4300+ digits, anywhere inside) or nests too deep is described instead."""
    try:
        text = repr(value)
    except ValueError:
        if isinstance(value, int):
            return "an integer of more than 4300 digits"
        return f"a {type(value).__name__} holding an integer of more than 4300 digits"
    except RecursionError:
        return f"a {type(value).__name__} nested too deeply to show"
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _first_non_json(value: Any) -> str:
    """What makes ``value`` not JSON data, and where: ``tuple at ['k']``, ``nan at [2]``."""
    found = find_non_json(value)
    if found is None:
        return "JSON data"
    where = "".join(f"[{part!r}]" for part in found.path)
    where = f" at {where}" if where else ""
    kind = type(found.value)
    if found.is_key and isinstance(found.value, str):
        return f"the key {found.value!r}{where} (it holds a lone surrogate)"
    if found.is_key:
        return f"the non-string key {found.value!r}{where}"
    if kind is float:
        return f"{found.value!r}{where}"
    if kind is int:
        return f"an integer of more than 4300 digits{where}"
    if kind in (dict, list):
        return f"data nested more than {MAX_JSON_DEPTH} levels deep{where}"
    return f"{kind.__name__}{where}"


@dataclass(frozen=True)
class NonJson:
    """The first part of a value that is not JSON data: the ``path`` to it (dict keys and list
    indices) and that ``value``; when ``is_key``, ``value`` is a dict key that is not a string."""

    path: tuple[str | int, ...]
    value: Any
    is_key: bool = False


def find_non_json(value: Any, *, lenient: bool = False) -> NonJson | None:
    """Where ``value`` stops being JSON data, or None when it is JSON data.

    Strict by default, as the runtime checks its fields (exact types, lists, finite floats).
    ``lenient`` also accepts subclasses of the JSON types and integers of any size, as scenario
    data (read from YAML) is checked; tuples and non-finite floats are refused either way.
    """
    return _non_json_at(value, (), lenient)


def _non_json_at(value: Any, path: tuple[str | int, ...], lenient: bool) -> NonJson | None:
    if lenient:
        if isinstance(value, float) and not math.isfinite(value):
            return NonJson(path, value)
        if value is None or isinstance(value, str | int | float):
            return None
        is_dict, is_list = isinstance(value, dict), isinstance(value, list)
    else:
        if is_json_data(value, len(path)):
            return None
        is_dict, is_list = type(value) is dict, type(value) is list
        if (is_dict or is_list) and len(path) >= MAX_JSON_DEPTH:
            return NonJson(path, value)
    if is_dict:
        for key, item in value.items():
            if not isinstance(key, str) or (not lenient and not _json_key(key)):
                return NonJson(path, key, is_key=True)
            found = _non_json_at(item, (*path, key), lenient)
            if found is not None:
                return found
        return None
    if is_list:
        for index, item in enumerate(value):
            found = _non_json_at(item, (*path, index), lenient)
            if found is not None:
                return found
        return None
    return NonJson(path, value)


_ISO_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})"
)


def _timestamp(value: Any) -> Any:
    """A timestamp is a timezone-aware ``datetime`` or its ISO-8601 text with an offset, as
    ``to_dict`` writes it: an epoch number, a date alone or a time without offset would come
    back different from what was given, and a naive time breaks arithmetic with aware ones."""
    kind = type(value)
    if kind is str:
        if _ISO_DATETIME.fullmatch(value) is None:
            raise ValueError(
                f"expected an ISO-8601 datetime with a timezone offset such as "
                f"2026-01-01T00:05:00Z, got {value[:40]!r}"
            )
        return value
    if isinstance(value, datetime):
        if value.utcoffset() is None:
            raise ValueError(
                "needs a timezone: a naive datetime cannot be compared with the others"
            )
        return value
    raise ValueError(f"expected a timezone-aware datetime or ISO-8601 text, got {kind.__name__}")


Timestamp = Annotated[datetime, BeforeValidator(_timestamp)]
"""A timezone-aware ``datetime``, strictly: see :func:`_timestamp`."""

JsonData = Annotated[Any, AfterValidator(_check_json), WithJsonSchema({})]
"""Any JSON value, checked in one pass (cheaper than pydantic's ``JsonValue`` on hot paths)."""
JsonObject = Annotated[
    dict[str, Any], AfterValidator(_check_json), WithJsonSchema({"type": "object"})
]
"""A JSON object with string keys, checked in one pass."""


def json_text(data: Any, *, indent: int | None = None) -> str:
    """JSON data as text, compact unless ``indent`` is given, NaN and Infinity as ``json.dumps``
    writes them, non-ASCII text as is. When a string holds what UTF-8 cannot encode (a lone
    surrogate, as a ``surrogateescape`` decode of a file name leaves), all non-ASCII text is
    written as ``\\u`` escapes instead, which read back to the same strings."""
    if indent is None:
        try:
            # pydantic-core writes what json.dumps would (minus the spaces after separators),
            # several times faster than the json module.
            return _to_json(data, inf_nan_mode="constants").decode()
        except PydanticSerializationError:  # only a lone surrogate fails on JSON data
            return json.dumps(data, separators=(",", ":"))
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, indent=indent)
    return text


_RECORD_CONFIG = ConfigDict(extra="forbid", validate_default=False)


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(Field,))
class Serializable:
    """An immutable, strictly validated value with a lossless, versioned dict and JSON form (D5).

    Subclasses declare their fields as annotations (``pydantic.Field`` for defaults and
    constraints), keyword-only, and become frozen pydantic dataclasses: pydantic validates and
    serializes them, while an instance is a plain object whose ``__dict__`` holds exactly the
    fields. That is what keeps the loop's state cheap: attribute reads are ordinary ones (a
    ``BaseModel``'s ``__getattr__`` hook keeps CPython from specializing them) and an internal
    copy is one dict. Invalid input raises ``InvalidInputError`` naming every bad field.
    """

    serial_kind: ClassVar[str] = ""
    __pydantic_validator__: ClassVar[SchemaValidator | PluggableSchemaValidator]
    __pydantic_serializer__: ClassVar[SchemaSerializer]
    __pydantic_fields__: ClassVar[dict[str, FieldInfo]]
    _builders: ClassVar[tuple[Callable[..., Any], Callable[..., Any]]]
    """The record's two constructors, indexed by ``parts_checked``: ``Record._builders[checked](
    field=value, ...)`` validates the values unless ``checked`` is true, the caller's check that
    every part already has its field's exact type (the usual case on the hot path; values
    handed over by users or custom code go through validation). A tuple read, not a call: it
    runs for three records every step."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Made a pydantic dataclass in place (no slots: the class object stays the same).
        pydantic_dataclass(cls, frozen=True, kw_only=True, eq=False, config=_RECORD_CONFIG)
        type.__setattr__(cls, "__init__", _validating_init)
        type.__setattr__(cls, "_trusted", _generated_trusted(cls))
        type.__setattr__(cls, "_builders", (cls, cls._trusted))
        # Every instance holds every field in its ``__dict__``, so the defaults left on the class
        # (``FieldInfo`` objects, enum members, shared values) serve no read. They are removed:
        # CPython 3.11 does not specialize an attribute read whose name is also a class attribute
        # of a Python-defined type, which made every field read take the slow generic path.
        for name in cls.__pydantic_fields__:
            if name in cls.__dict__:
                type.__delattr__(cls, name)

    def __eq__(self, other: object) -> bool:
        if type(other) is type(self):
            return self is other or self.__dict__ == other.__dict__
        return NotImplemented

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def evolve(self, **changes: Any) -> Self:
        """A validated copy with ``changes`` applied."""
        data = self.__dict__.copy()
        data.update(changes)
        try:
            return self.__pydantic_validator__.validate_python(data)  # type: ignore[no-any-return]
        except ValidationError as error:
            raise InvalidInputError(type(self).__name__, problems_of(error)) from None

    def _replace(self, **changes: Any) -> Self:
        """An unvalidated copy with ``changes`` applied: for internal updates whose values are
        already of the field types (public callers use ``evolve``)."""
        new = _new_object(type(self))
        _set_record_dict(new, {**self.__dict__, **changes})
        return new

    @classmethod
    def _trusted(cls, **values: Any) -> Self:
        """An unvalidated instance: for internal code whose values are already of the field types
        (objects built from validated parts). Defaults and default factories apply as in
        ``__init__``; public callers use the validating constructor.

        Every subclass gets its own generated version at class creation (keyword-only
        parameters named after the fields, no loops); this generic one is the reference.
        """
        fields = cls.__pydantic_fields__
        missing = [
            name for name, info in fields.items() if name not in values and info.is_required()
        ]
        if missing:
            raise TypeError(f"{cls.__name__}._trusted() missing {', '.join(missing)}")
        data: dict[str, Any] = {}
        for name, info in fields.items():
            if name in values:
                data[name] = values.pop(name)
            elif info.default_factory is not None:
                data[name] = info.default_factory()  # type: ignore[call-arg]
            else:
                data[name] = info.default
        if values:
            raise TypeError(f"{cls.__name__}._trusted() got unknown fields {sorted(values)}")
        new = _new_object(cls)
        _set_record_dict(new, data)
        return new

    def model_dump(self, **options: Any) -> dict[str, Any]:
        """The fields as a dict, with the options of pydantic's ``BaseModel.model_dump``
        (``mode="json"``, ``exclude_none``, ...). ``to_dict`` is the versioned form."""
        return self.__pydantic_serializer__.to_python(self, **options)  # type: ignore[no-any-return]

    @classmethod
    def model_validate(cls, data: Any, *, context: dict[str, Any] | None = None) -> Self:
        """An instance validated from ``data`` (a dict of fields or an instance), as pydantic's
        ``BaseModel.model_validate``: invalid data raises ``pydantic.ValidationError``."""
        return cls.__pydantic_validator__.validate_python(data, context=context)  # type: ignore[no-any-return]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict carrying ``schema_version``; ``from_dict`` restores it exactly."""
        data: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        data.update(self.model_dump(mode="json"))
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Restore an object written by ``to_dict``; invalid data raises ``InvalidInputError``."""
        return cls._from_dict(data, None)

    @classmethod
    def _from_dict(cls, data: Any, context: dict[str, Any] | None) -> Self:
        if not isinstance(data, dict):
            raise InvalidInputError(
                cls.__name__, [("", f"expected a dict, got {type(data).__name__}")]
            )
        body = dict(data)
        version = body.pop("schema_version", None)
        if version != SCHEMA_VERSION:
            if version is not None:
                reason = (
                    f"unsupported version {_brief(version)}; this agentrig reads version "
                    f"{SCHEMA_VERSION}"
                )
            elif body.get("format") == "agentrig.session" and "state" in body:
                reason = (
                    "missing: this is a saved session, not a state; load it with a session "
                    "store (FileSessionStore(folder).load(id)), or read its 'state' entry"
                )
            else:
                reason = "missing (was this written by to_dict()?)"
            raise InvalidInputError(cls.__name__, [("schema_version", reason)])
        try:
            return cls.model_validate(body, context=context)
        except ValidationError as error:
            raise InvalidInputError(cls.__name__, problems_of(error)) from None
        except RecursionError:  # a value whose repr, in a validator's message, nests too deep
            raise InvalidInputError(cls.__name__, cls._too_deep(body, context)) from None

    @classmethod
    def _too_deep(
        cls, body: dict[str, Any], context: dict[str, Any] | None
    ) -> list[tuple[str, str]]:
        """The problems of ``body`` whose nesting made validation recurse without end: each
        part nested past any valid state is replaced by a marker no field accepts, and the
        fields validation then refuses are named."""
        cuts: list[str] = []
        shallow = _cut_deep(body, 1, (), cuts)
        reason = f"data nested more than {MAX_JSON_DEPTH} levels deep"
        try:
            cls.model_validate(shallow, context=context)
        except ValidationError as error:
            return [
                (field, reason if any(cut.startswith(field) for cut in cuts) else why)
                for field, why in problems_of(error)
            ]
        return [(cuts[0], reason)]  # pragma: no cover - no field takes the marker

    def to_json(self, *, indent: int | None = None) -> str:
        """``to_dict()`` as JSON text (compact unless ``indent`` is given)."""
        return json_text(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        """Restore an object from ``to_json()`` output (UTF-8 text; a key given twice in one
        object is an error, not silently resolved)."""
        return cls._from_dict(*cls._json_body(text))

    @classmethod
    def _json_body(cls, text: str | bytes) -> tuple[Any, dict[str, Any] | None]:
        """``text`` parsed, and the validation context ``from_json`` reads it with."""
        data, fast = _parse_json(cls.__name__, text)
        if not fast:
            return data, None
        # Parsed JSON holds only JSON data, except for the NaN and Infinity tokens JSON itself
        # lacks: without them, the JSON fields need no second check.
        if isinstance(text, str):
            plain = "NaN" not in text and "Infinity" not in text
        else:
            plain = b"NaN" not in text and b"Infinity" not in text
        return data, _PARSED_JSON if plain else None


def _parse_json(what: str, text: str | bytes) -> tuple[Any, bool]:
    """JSON text as data, and whether the fast parser read it (its data needs no check of the
    JSON fields but their depth); every problem is an ``InvalidInputError``."""
    if isinstance(text, str):
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError as error:
            reason = f"not valid JSON: a lone surrogate at position {error.start}"
            raise InvalidInputError(what, [("", reason)]) from None
    elif isinstance(text, bytes | bytearray):
        raw = bytes(text)
    else:
        reason = f"expected JSON text (str or bytes), got {type(text).__name__}"
        raise InvalidInputError(what, [("", reason)])
    try:
        return _jiter_json(raw, allow_inf_nan=True, catch_duplicate_keys=True), True
    except ValueError as error:
        message = str(error)
    if "duplicate key" in message:
        raise InvalidInputError(what, [("", f"not valid JSON: {message}")])
    try:  # json.loads would read bytes that are not UTF-8 (an encoded surrogate) leniently
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        reason = f"not valid JSON: not UTF-8 text (byte {error.start})"
        raise InvalidInputError(what, [("", reason)]) from None
    try:  # the json module reads escaped lone surrogates, and words most errors better
        return json.loads(decoded, object_pairs_hook=unique_keys), False
    except json.JSONDecodeError as error:
        message = str(error)
    except (ValueError, RecursionError) as error:  # too many digits, too deep
        message = str(error) or type(error).__name__
    raise InvalidInputError(what, [("", f"not valid JSON: {message}")])


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An ``object_pairs_hook`` for ``json.loads``: a key given twice is a ``ValueError``."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise ValueError(f"duplicate key {twice!r}")
    return data


_set_record_dict = Serializable.__dict__["__dict__"].__set__


def _validating_init(self: Serializable, /, *args: Any, **data: Any) -> None:
    if args:
        raise TypeError(
            f"{type(self).__name__}() takes its fields as keyword arguments, "
            f"got {len(args)} positional argument{'s' if len(args) > 1 else ''}"
        )
    try:
        self.__pydantic_validator__.validate_python(data, self_instance=self)
    except ValidationError as error:
        raise InvalidInputError(type(self).__name__, problems_of(error)) from None


_new_object = object.__new__
_UNSET = object()


def _generated_trusted(record: type[Serializable]) -> Any:
    """``record._trusted`` as straight-line code: one keyword-only parameter per field (required
    ones without default; a default factory runs only when its field is not given)."""
    namespace: dict[str, Any] = {
        "_new": _new_object,
        "_set_dict": _set_record_dict,
        "_UNSET": _UNSET,
    }
    params: list[str] = []
    entries: list[str] = []
    for index, (name, info) in enumerate(record.__pydantic_fields__.items()):
        if info.default_factory is not None:
            if getattr(info, "default_factory_takes_validated_data", False):
                return classmethod(Serializable._trusted.__func__)  # type: ignore[attr-defined]
            namespace[f"_factory{index}"] = info.default_factory
            params.append(f"{name}=_UNSET")
            entries.append(f"{name!r}: _factory{index}() if {name} is _UNSET else {name}")
        elif info.is_required():
            params.append(name)
            entries.append(f"{name!r}: {name}")
        else:
            namespace[f"_default{index}"] = info.default
            params.append(f"{name}=_default{index}")
            entries.append(f"{name!r}: {name}")
    if not params:
        return classmethod(Serializable._trusted.__func__)  # type: ignore[attr-defined]
    # A static method bound to its class: calling it skips making a bound method each time
    # (every subclass gets its own, so the class is fixed).
    namespace["_cls"] = record
    source = (
        f"def _trusted(*, {', '.join(params)}):\n"
        "    new = _new(_cls)\n"
        f"    _set_dict(new, {{{', '.join(entries)}}})\n"
        "    return new\n"
    )
    exec(compile(source, f"<{record.__name__}._trusted>", "exec"), namespace)
    function = namespace["_trusted"]
    function.__qualname__ = f"{record.__name__}._trusted"
    function.__doc__ = Serializable._trusted.__doc__
    return staticmethod(function)


class FrozenList(Generic[T]):
    """An immutable sequence that validates in O(1) when it is already of its own type.

    Subclasses set ``item_type``. Appending returns a new instance; nothing is ever mutated.
    Items are kept in a flat tuple, ``_items``; a subclass may keep them otherwise (``Messages``
    shares chunks) by overriding ``_init_from``, ``appended``, ``to_tuple``, ``first``, ``last``
    and the dunder methods that read ``_items``: the other methods go through those.
    """

    __slots__ = ("_items",)
    item_type: ClassVar[type[Any]]

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._items: tuple[T, ...] = tuple(items)

    @classmethod
    def _wrap(cls, items: tuple[T, ...]) -> Self:
        new = cls.__new__(cls)
        new._init_from(items)
        return new

    def _init_from(self, items: tuple[T, ...]) -> None:
        self._items = items

    def appended(self, *items: T) -> Self:
        """A new collection with ``items`` added at the end."""
        return self._wrap(self._items + items) if items else self

    def extended(self, items: Iterable[T]) -> Self:
        """A new collection with every item of ``items`` added at the end."""
        return self.appended(*items)

    def filtered(self, predicate: Callable[[T], bool]) -> Self:
        """A new collection with the items for which ``predicate`` is true."""
        return self._wrap(tuple(item for item in self if predicate(item)))

    def first(self) -> T | None:
        """The first item, or None."""
        return self._items[0] if self._items else None

    def last(self) -> T | None:
        """The last item, or None."""
        return self._items[-1] if self._items else None

    def to_tuple(self) -> tuple[T, ...]:
        """The items as a tuple."""
        return self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Self: ...
    def __getitem__(self, index: int | slice) -> T | Self:
        if isinstance(index, slice):
            return self._wrap(self._items[index])
        return self._items[index]

    def __eq__(self, other: object) -> bool:
        if type(other) is type(self):
            return self._items == other._items
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # items may hold dicts: a value, not a key

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: Callable[[Any], core_schema.CoreSchema]
    ) -> core_schema.CoreSchema:
        items_schema = handler(tuple[cls.item_type, ...])  # type: ignore[name-defined]

        def validate(value: Any, inner: core_schema.ValidatorFunctionWrapHandler) -> Any:
            return value if type(value) is cls else cls._wrap(inner(value))

        return core_schema.no_info_wrap_validator_function(
            validate,
            items_schema,
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda value: value.to_tuple(), return_schema=items_schema
            ),
        )
