"""Which field path of its file each model of a loaded scenario came from, worked out only when
a model's location is first asked for.

While :func:`locating` is active (the loader validates one file inside it), every scenario model
validated takes the file's :class:`ModelLocator`; a model that is asked where it was written asks
the locator, which walks the scenario once and remembers the path of each of its models. So a
file that loads without a mistake pays one attribute per model, not a walk and a location each.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel

from agentrig.harness.scenarios.yaml_source import FieldPath, YamlSource

__all__ = ["ModelLocator", "current_locator", "locating", "models_in"]


class ModelLocator:
    """The file the models validated inside :func:`locating` came from; ``root`` is the model
    validated from the whole file, once validation is done."""

    __slots__ = ("_paths", "root", "source")

    def __init__(self, source: YamlSource) -> None:
        self.source = source
        self.root: BaseModel | None = None
        self._paths: dict[int, FieldPath] | None = None

    def path_of(self, model: BaseModel) -> FieldPath | None:
        """The field path of ``model`` in the file; None when it is not part of ``root`` (a model
        made during validation and then dropped, or a copy)."""
        if self._paths is None:
            found = [] if self.root is None else models_in(self.root, ())
            self._paths = {id(each): path for each, path in found}  # root keeps them alive
        return self._paths.get(id(model))

    def __getstate__(self) -> tuple[YamlSource, BaseModel | None]:
        return self.source, self.root  # the paths are by id: found again after unpickling

    def __setstate__(self, state: tuple[YamlSource, BaseModel | None]) -> None:
        self.source, self.root = state
        self._paths = None


_CURRENT: ContextVar[ModelLocator | None] = ContextVar("agentrig_model_locator", default=None)


def current_locator() -> ModelLocator | None:
    """The locator of the file being validated, if any."""
    return _CURRENT.get()


@contextlib.contextmanager
def locating(source: YamlSource) -> Iterator[ModelLocator]:
    """Inside: every scenario model validated takes a locator of ``source``."""
    locator = ModelLocator(source)
    token = _CURRENT.set(locator)
    try:
        yield locator
    finally:
        _CURRENT.reset(token)


def models_in(
    value: Any, path: FieldPath, found: list[tuple[BaseModel, FieldPath]] | None = None
) -> list[tuple[BaseModel, FieldPath]]:
    """Every model in ``value`` with its path, ``value`` first; only the fields whose type can
    hold a model are visited."""
    found = [] if found is None else found
    if isinstance(value, BaseModel):
        found.append((value, path))
        for name, key in _model_fields(type(value)):
            models_in(getattr(value, name), (*path, key), found)
    elif isinstance(value, tuple | list):
        for index, item in enumerate(value):
            models_in(item, (*path, index), found)
    elif isinstance(value, dict):
        for key, item in value.items():
            models_in(item, (*path, key), found)
    return found


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
