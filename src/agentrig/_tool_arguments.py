"""A shortcut past pydantic for tool arguments that are already exactly what pydantic would return.

Most tool parameters are plain ``int``, ``float``, ``bool``, ``str`` (or ``None``-able, or
unannotated) and models send values of exactly those types. For such a value pydantic's lax
validation returns the value itself, and for a missing parameter with a default it returns the
default unvalidated. ``plain_plan`` reads the arguments model's core schema and accepts only
fields of that kind (no constraints, aliases, strictness, factories or mutable defaults);
``plain_arguments`` then checks the key set and the exact types and builds the keyword
arguments, or answers None so that the caller validates with pydantic (which also words the
errors).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

_LEAF_TYPES: dict[str, frozenset[type] | None] = {
    "int": frozenset({int}),
    "float": frozenset({float}),
    "bool": frozenset({bool}),
    "str": frozenset({str}),
    "any": None,
}
"""Core schema types whose lax validation returns a value of exactly these types unchanged
(``None``: any value)."""

_DEFAULT_TYPES = (int, float, bool, str, type(None))
"""Immutable defaults: pydantic hands them over as they are."""

_REQUIRED = object()
_MODEL_KEYS = {"type", "cls", "config", "custom_init", "metadata", "ref", "root_model", "schema"}

PlainField = tuple[str, frozenset[type] | None, Any]
"""A field's name, the exact value types it passes unchanged (None: any), its default."""


def plain_plan(model: type[BaseModel]) -> tuple[PlainField, ...] | None:
    """The fields of an arguments model if every one of them is plain, else None."""
    schema: Any = model.__pydantic_core_schema__
    if (
        schema.get("type") != "model"
        or set(schema) - _MODEL_KEYS
        or schema.get("custom_init")
        or schema.get("root_model")
        or schema.get("config") != {"extra_fields_behavior": "forbid", "title": model.__name__}
    ):
        return None
    fields_schema = schema["schema"]
    if fields_schema.get("type") != "model-fields" or fields_schema.get("computed_fields"):
        return None
    if set(fields_schema) - {"type", "fields", "model_name", "computed_fields"}:
        return None
    plan: list[PlainField] = []
    for name, field in fields_schema["fields"].items():
        plain = _plain_field(name, field)
        if plain is None:
            return None
        plan.append(plain)
    return tuple(plan)


def _plain_field(name: str, field: dict[str, Any]) -> PlainField | None:
    if set(field) - {"type", "schema", "metadata"}:
        return None  # an alias, a validation alias, ...
    schema = field["schema"]
    default = _REQUIRED
    if schema["type"] == "default":
        if set(schema) != {"type", "schema", "default"}:
            return None  # a default factory, validate_default, ...
        default = schema["default"]
        if type(default) not in _DEFAULT_TYPES:
            return None
        schema = schema["schema"]
    nullable = schema["type"] == "nullable"
    if nullable:
        if set(schema) != {"type", "schema"}:
            return None
        schema = schema["schema"]
    if set(schema) != {"type"} or schema["type"] not in _LEAF_TYPES:
        return None  # constraints, strictness, another type
    accepted = _LEAF_TYPES[schema["type"]]
    if accepted is not None and nullable:
        accepted = accepted | {type(None)}
    return name, accepted, default


def plain_arguments(
    plan: tuple[PlainField, ...], arguments: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The keyword arguments pydantic would produce, when every argument passes unchanged;
    None when it cannot tell this cheaply (then pydantic validates)."""
    if type(arguments) is not dict:
        return None
    kwargs: dict[str, Any] = {}
    given = 0
    for name, accepted, default in plan:
        if name in arguments:
            value = arguments[name]
            if accepted is not None and type(value) not in accepted:
                return None
            kwargs[name] = value
            given += 1
        elif default is _REQUIRED:
            return None
        else:
            kwargs[name] = default
    return kwargs if given == len(arguments) else None
