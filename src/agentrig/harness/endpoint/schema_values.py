"""Values of a JSON Schema, made by one generator whatever the source of its choices: a seeded
``random.Random`` (``model: auto``) or hypothesis (``agentrig.harness.fuzz``, which then shrinks
them). It knows the subset tool schemas use: types, ``properties`` and ``required``, ``enum``
and ``const``, bounds and lengths, ``pattern`` (through the chooser), ``items``,
``anyOf``/``oneOf``/``allOf`` and local ``$ref``; values stay small, as a model's arguments are.
Anything else draws a JSON scalar, so a caller that needs a valid value validates it.
"""

from __future__ import annotations

import copy
import random
import string
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

__all__ = ["Chooser", "RandomChooser", "closed_schema", "value_of"]

T = TypeVar("T")

_DEPTH = 6
"""How deep nested schemas are followed (a recursive ``$ref`` then ends in ``null``)."""
_MAX_ITEMS = 3
_BOUND = 1000
"""Numbers stay within ±this unless the schema says otherwise."""


class Chooser(Protocol):
    """Where the generator's choices come from."""

    def integer(self, low: int, high: int) -> int:
        """An integer in [low, high]."""
        ...

    def number(self, low: float, high: float) -> float:
        """A finite float in [low, high]."""
        ...

    def text(self, low: int, high: int) -> str:
        """A string of ``low`` to ``high`` characters."""
        ...

    def matching(self, pattern: str) -> str | None:
        """A string the regular expression ``pattern`` matches whole (None: cannot tell)."""
        ...

    def choice(self, options: Sequence[T]) -> T:
        """One of ``options`` (not empty)."""
        ...


class RandomChooser:
    """Choices of a seeded ``random.Random``: the same seed, the same values."""

    def __init__(self, seed: int | str) -> None:
        self.random = random.Random(seed)

    def integer(self, low: int, high: int) -> int:
        """An integer in [low, high], small ones likelier."""
        return self.random.randint(max(low, min(high, 0)), min(high, max(low, 0) + 9))

    def number(self, low: float, high: float) -> float:
        """A float in [low, high] with two decimals."""
        return round(self.random.uniform(max(low, -10.0), min(high, max(low, -10.0) + 20.0)), 2)

    def text(self, low: int, high: int) -> str:
        """Lowercase letters."""
        size = self.random.randint(low, max(low, min(high, 8)))
        return "".join(self.random.choice(string.ascii_lowercase) for _ in range(size))

    def matching(self, pattern: str) -> str | None:
        """None: a random chooser draws no strings for a pattern."""
        return None

    def choice(self, options: Sequence[T]) -> T:
        """One of ``options``."""
        return options[self.random.randrange(len(options))]


def closed_schema(schema: Any) -> dict[str, Any]:
    """``schema`` (an object's) with ``additionalProperties: false`` on every object that names
    its properties and says nothing of others: a model's arguments are the named ones (a schema
    open to any key would make keys no tool function takes)."""
    closed = copy.deepcopy(schema) if isinstance(schema, dict) else {}
    closed.setdefault("type", "object")
    _close(closed)
    return closed


def _close(node: Any) -> None:
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for value in node.values():
            _close(value)
    elif isinstance(node, list):
        for value in node:
            _close(value)


def value_of(schema: Any, choose: Chooser, root: Any | None = None, depth: int = 0) -> Any:
    """A value of ``schema`` (``root``: the document its ``$ref``s point into)."""
    root = schema if root is None else root
    if depth > _DEPTH or not isinstance(schema, dict):
        return _scalar(choose)
    if "$ref" in schema:
        return value_of(_resolve(root, schema["$ref"]), choose, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return choose.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return value_of(choose.choice(schema[key]), choose, root, depth + 1)
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        return value_of(_merged(schema, root), choose, root, depth + 1)
    kind = schema.get("type", _implied_type(schema))
    if isinstance(kind, list):
        kind = choose.choice(kind) if kind else None
    return _of_type(schema, kind, choose, root, depth)


def _scalar(choose: Chooser) -> Any:
    kind = choose.choice(("string", "integer", "boolean", "null"))
    return _of_type({}, kind, choose, None, _DEPTH)


def _merged(schema: dict[str, Any], root: Any) -> dict[str, Any]:
    merged = {key: value for key, value in schema.items() if key != "allOf"}
    for part in schema["allOf"]:
        if isinstance(part, dict):
            resolved = _resolve(root, part["$ref"]) if "$ref" in part else part
            if isinstance(resolved, dict):
                merged.update(resolved)
    return merged


def _implied_type(schema: dict[str, Any]) -> str | None:
    if "properties" in schema or "required" in schema:
        return "object"
    return "array" if "items" in schema else None


def _resolve(root: Any, reference: Any) -> Any:
    if not isinstance(reference, str) or not reference.startswith("#"):
        return True
    node = root
    for part in reference[1:].split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return True
        node = node[part]
    return node


def _of_type(schema: dict[str, Any], kind: Any, choose: Chooser, root: Any, depth: int) -> Any:
    if kind == "null":
        return None
    if kind == "boolean":
        return choose.choice((False, True))
    if kind == "integer":
        low, high = _bounds(schema, integer=True)
        return choose.integer(int(low), int(high))
    if kind == "number":
        low, high = _bounds(schema, integer=False)
        return choose.number(float(low), float(high))
    if kind == "string":
        return _string(schema, choose)
    if kind == "array":
        return _array(schema, choose, root, depth)
    if kind == "object":
        return _object(schema, choose, root, depth)
    return _scalar(choose) if depth < _DEPTH else None


def _bounds(schema: dict[str, Any], *, integer: bool) -> tuple[float, float]:
    low = schema.get("minimum", -_BOUND)
    high = schema.get("maximum", _BOUND)
    step = 1 if integer else 1e-6
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        low = schema["exclusiveMinimum"] + step
    if isinstance(schema.get("exclusiveMaximum"), int | float):
        high = schema["exclusiveMaximum"] - step
    if integer:
        low, high = -(-low // 1), high // 1
    return low, max(low, high)


def _string(schema: dict[str, Any], choose: Chooser) -> str:
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        found = choose.matching(pattern)
        if found is not None:
            return found
    low = schema.get("minLength", 0)
    high = schema.get("maxLength", max(low, 24))
    return choose.text(low, max(low, min(high, low + 40)))


def _array(schema: dict[str, Any], choose: Chooser, root: Any, depth: int) -> list[Any]:
    low = schema.get("minItems", 0)
    high = max(low, min(schema.get("maxItems", _MAX_ITEMS), low + _MAX_ITEMS))
    items = schema.get("items", True)
    return [value_of(items, choose, root, depth + 1) for _ in range(choose.integer(low, high))]


def _object(schema: dict[str, Any], choose: Chooser, root: Any, depth: int) -> dict[str, Any]:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = [name for name in schema.get("required", ()) if isinstance(name, str)]
    value = {}
    for name in required:
        value[name] = value_of(properties.get(name, True), choose, root, depth + 1)
    for name, part in properties.items():
        if name not in value and choose.choice((False, True)):
            value[name] = value_of(part, choose, root, depth + 1)
    return value
