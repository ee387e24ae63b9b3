"""The field path of each model of a loaded scenario: where in its file it was written."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel

from agentrig.harness.scenarios.yaml_source import FieldPath

__all__ = ["models_in"]


def models_in(value: Any, path: FieldPath) -> list[tuple[BaseModel, FieldPath]]:
    """Every model in ``value`` with its path, ``value`` first; only the fields whose type can
    hold a model are visited."""
    found: list[tuple[BaseModel, FieldPath]] = []
    _walk(value, path, found.append)
    return found


def _walk(value: Any, path: FieldPath, add: Callable[[tuple[BaseModel, FieldPath]], None]) -> None:
    if isinstance(value, BaseModel):
        add((value, path))
        fields = value.__dict__
        for name, key in _model_fields(type(value)):
            item = fields[name]
            if item is not None:
                _walk(item, (*path, key), add)
    elif isinstance(value, tuple | list):
        for index, item in enumerate(value):
            if not isinstance(item, _LEAVES):
                _walk(item, (*path, index), add)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(item, _LEAVES):
                _walk(item, (*path, key), add)


@functools.cache
def _model_fields(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """(name, YAML key) of the fields of ``model`` whose type may hold a model."""
    return tuple(
        (name, field.alias or name)
        for name, field in model.model_fields.items()
        if _may_hold_model(field.annotation)
    )


_LEAVES = (str, int, float, bool, type(None))


def _may_hold_model(annotation: Any) -> bool:
    """False for a type made of text, numbers, booleans, None and literals alone, and for
    ``Any`` (plain YAML data, which holds no model)."""
    if annotation is Any:
        return False
    origin = get_origin(annotation)
    if origin is Literal:
        return False
    if origin is Annotated:
        return _may_hold_model(get_args(annotation)[0])
    if origin is not None:
        return any(_may_hold_model(arg) for arg in get_args(annotation) if arg is not Ellipsis)
    return not (isinstance(annotation, type) and issubclass(annotation, _LEAVES))
