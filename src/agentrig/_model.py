"""Base classes for agentrig's immutable data: frozen models and O(1)-validated collections."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Annotated, Any, ClassVar, Generic, Self, TypeVar, overload

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, WithJsonSchema
from pydantic_core import core_schema

from agentrig.errors import InvalidInputError

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
    return [(format_location(e["loc"]), e["msg"]) for e in error.errors(include_url=False)]


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
        data = self.__dict__.copy()
        data.update(changes)
        _set_dict(new, data)
        _set_fields_set(new, self.__pydantic_fields_set__)
        _set_extra(new, None)
        _set_private(new, None)
        return new

    @classmethod
    def _trusted(cls, **values: Any) -> Self:
        """An unvalidated instance: for internal code whose values are already of the field types
        (objects built from validated parts). Defaults and default factories apply as in
        ``__init__``; public callers use the validating constructor."""
        plan = _PLANS.get(cls) or _plan(cls)
        if not values.keys() >= plan.required:
            missing = ", ".join(sorted(plan.required - values.keys()))
            raise TypeError(f"{cls.__name__}._trusted() needs {missing}")
        data = plan.template.copy()
        data.update(values)
        for name, factory in plan.factories:
            if name not in values:
                data[name] = factory()
        new = _new_object(cls)
        _set_dict(new, data)
        _set_fields_set(new, set(values))
        _set_extra(new, None)
        _set_private(new, None)
        return new


_new_object = object.__new__
# BaseModel keeps these four in slots; frozen models refuse ``setattr``, so internal copies write
# them through the slot descriptors (as ``object.__setattr__`` would, minus its lookup).
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


class _Plan:
    """How ``_trusted`` fills a model's fields: defaults in field order, factories, required."""

    __slots__ = ("factories", "required", "template")

    def __init__(self, model: type[BaseModel]) -> None:
        self.template: dict[str, Any] = {}
        factories: list[tuple[str, Callable[[], Any]]] = []
        required: list[str] = []
        for name, info in model.model_fields.items():
            self.template[name] = None
            if info.default_factory is not None:
                if getattr(info, "default_factory_takes_validated_data", False):
                    raise TypeError(f"{model.__name__}.{name}: factories taking data unsupported")
                factories.append((name, info.default_factory))  # type: ignore[arg-type]
            elif info.is_required():
                required.append(name)
            else:
                self.template[name] = info.default
        self.factories = tuple(factories)
        self.required = frozenset(required)


_PLANS: dict[type[BaseModel], _Plan] = {}


def _plan(model: type[BaseModel]) -> _Plan:
    plan = _PLANS[model] = _Plan(model)
    return plan


def is_json_data(value: Any) -> bool:
    """True when ``value`` is plain JSON data (finite floats only; dicts with str keys)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is list:
        return all(is_json_data(item) for item in value)
    if kind is dict:
        return all(type(key) is str and is_json_data(item) for key, item in value.items())
    return False


def _check_json(value: Any) -> Any:
    if not is_json_data(value):
        raise ValueError(
            "must be JSON data (str, int, finite float, bool, None, list, dict with str keys), "
            f"got {type(value).__name__}"
        )
    return value


JsonData = Annotated[Any, AfterValidator(_check_json), WithJsonSchema({})]
"""Any JSON value, checked in one pass (cheaper than pydantic's ``JsonValue`` on hot paths)."""
JsonObject = Annotated[
    dict[str, Any], AfterValidator(_check_json), WithJsonSchema({"type": "object"})
]
"""A JSON object with string keys, checked in one pass."""


class Serializable(FrozenModel):
    """A frozen model with a lossless, versioned dict and JSON form (DESIGN D5)."""

    serial_kind: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict carrying ``schema_version``; ``from_dict`` restores it exactly."""
        data: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        data.update(self.model_dump(mode="json"))
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Restore an object written by ``to_dict``; invalid data raises ``InvalidInputError``."""
        if not isinstance(data, dict):
            raise InvalidInputError(
                cls.__name__, [("", f"expected a dict, got {type(data).__name__}")]
            )
        body = dict(data)
        version = body.pop("schema_version", None)
        if version != SCHEMA_VERSION:
            reason = (
                "missing (was this written by to_dict()?)"
                if version is None
                else f"unsupported version {version!r}; this agentrig reads version {SCHEMA_VERSION}"
            )
            raise InvalidInputError(cls.__name__, [("schema_version", reason)])
        try:
            return cls.model_validate(body)
        except ValidationError as error:
            raise InvalidInputError(cls.__name__, problems_of(error)) from None

    def to_json(self, *, indent: int | None = None) -> str:
        """``to_dict()`` as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        """Restore an object from ``to_json()`` output."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise InvalidInputError(cls.__name__, [("", f"not valid JSON: {error}")]) from None
        return cls.from_dict(data)


class FrozenList(Generic[T]):
    """An immutable sequence that validates in O(1) when it is already of its own type.

    Subclasses set ``item_type``. Appending returns a new instance; nothing is ever mutated.
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
        return self._wrap(tuple(item for item in self._items if predicate(item)))

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
        return f"{type(self).__name__}({list(self._items)!r})"

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
