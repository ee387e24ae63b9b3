"""Where each model of a loaded scenario was written: its file's source and its field path."""

from __future__ import annotations

import functools
from types import MemberDescriptorType
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel

from agentrig.harness.scenarios.yaml_source import FieldPath

__all__ = ["bind_models"]

_set = object.__setattr__


def bind_models(value: Any, path: FieldPath, source: object) -> None:
    """Give each model in ``value`` (``value`` first) that has the slots for it ``source`` as
    ``_where`` and its field path as ``_path``; only the fields whose type can hold a model
    are visited."""
    if isinstance(value, BaseModel):
        located, fields_to_visit = _model_info(type(value))
        if located:
            _set(value, "_where", source)
            _set(value, "_path", path)
        fields = value.__dict__
        for name, key in fields_to_visit:
            item = fields[name]
            if item is not None:
                bind_models(item, (*path, key), source)
    elif isinstance(value, tuple | list):
        for index, item in enumerate(value):
            if not isinstance(item, _LEAVES):
                bind_models(item, (*path, index), source)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(item, _LEAVES):
                bind_models(item, (*path, key), source)


@functools.cache
def _model_info(model: type[BaseModel]) -> tuple[bool, tuple[tuple[str, str], ...]]:
    """Whether ``model`` has the ``_where`` and ``_path`` slots, and (name, YAML key) of its
    fields whose type may hold a model."""
    located = all(
        isinstance(getattr(model, slot, None), MemberDescriptorType) for slot in ("_where", "_path")
    )
    fields = tuple(
        (name, field.alias or name)
        for name, field in model.model_fields.items()
        if _may_hold_model(field.annotation)
    )
    return located, fields


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
