"""Values drawn from a JSON Schema: the subset tool schemas use (types, ``properties`` and
``required``, ``enum`` and ``const``, bounds and lengths, ``items``, ``anyOf``/``oneOf``/
``allOf``, local ``$ref``), kept small, as a model's arguments are.

Anything it does not know draws a JSON scalar; :func:`~agentrig.harness.fuzz.arguments`
validates what is drawn against the schema, so an unknown keyword never yields an invalid
value labelled valid.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st

__all__ = ["values_of"]

_DEPTH = 6
"""How deep nested schemas are followed (a recursive ``$ref`` stops there with ``null``)."""
_MAX_ITEMS = 3
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=12))


def values_of(schema: Any, root: Any | None = None, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of ``schema`` (``root``: the document its ``$ref``s point into)."""
    root = schema if root is None else root
    if depth > _DEPTH or schema is True or not isinstance(schema, dict):
        return _SCALARS if schema is not False else st.nothing()
    if "$ref" in schema:
        return values_of(_resolve(root, schema["$ref"]), root, depth + 1)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"]) if schema["enum"] else st.nothing()
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return st.one_of([values_of(part, root, depth + 1) for part in schema[key]])
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            if isinstance(part, dict):
                merged.update(_resolve(root, part["$ref"]) if "$ref" in part else part)
        return values_of(merged, root, depth + 1)
    types = schema.get("type", _implied_type(schema))
    if isinstance(types, list):
        return st.one_of([_of_type(schema, kind, root, depth) for kind in types] or [_SCALARS])
    return _of_type(schema, types, root, depth)


def _implied_type(schema: dict[str, Any]) -> str | None:
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return None


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


def _of_type(schema: dict[str, Any], kind: Any, root: Any, depth: int) -> st.SearchStrategy[Any]:
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        low, high = _bounds(schema, integer=True)
        return st.integers(low, high)
    if kind == "number":
        low, high = _bounds(schema, integer=False)
        return st.one_of(
            st.integers(int(low), int(high)) if high - low >= 1 else st.nothing(),
            st.floats(low, high, allow_nan=False, allow_infinity=False),
        )
    if kind == "string":
        return _strings(schema)
    if kind == "array":
        return _arrays(schema, root, depth)
    if kind == "object":
        return _objects(schema, root, depth)
    return _SCALARS


def _bounds(schema: dict[str, Any], *, integer: bool) -> tuple[Any, Any]:
    low, high = schema.get("minimum", -1000), schema.get("maximum", 1000)
    if "exclusiveMinimum" in schema and isinstance(schema["exclusiveMinimum"], int | float):
        low = schema["exclusiveMinimum"] + (1 if integer else 1e-6)
    if "exclusiveMaximum" in schema and isinstance(schema["exclusiveMaximum"], int | float):
        high = schema["exclusiveMaximum"] - (1 if integer else 1e-6)
    if integer:
        low, high = int(-(-low // 1)), int(high // 1)
    return low, max(low, high)


def _strings(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            return st.from_regex(pattern, fullmatch=True)
        except Exception:  # a pattern Python's re does not read: lengths only
            pass
    low = schema.get("minLength", 0)
    high = schema.get("maxLength", max(low, 24))
    return st.text(min_size=low, max_size=max(low, min(high, low + 40)))


def _arrays(schema: dict[str, Any], root: Any, depth: int) -> st.SearchStrategy[list[Any]]:
    items = schema.get("items", True)
    low = schema.get("minItems", 0)
    high = max(low, min(schema.get("maxItems", _MAX_ITEMS), low + _MAX_ITEMS))
    return st.lists(values_of(items, root, depth + 1), min_size=low, max_size=high)


def _objects(schema: dict[str, Any], root: Any, depth: int) -> st.SearchStrategy[dict[str, Any]]:
    properties = schema.get("properties") or {}
    required = [name for name in schema.get("required", ()) if name in properties]
    missing = [name for name in schema.get("required", ()) if name not in properties]
    fields = {name: values_of(properties[name], root, depth + 1) for name in required}
    fields.update(dict.fromkeys(missing, _SCALARS))
    optional = {
        name: values_of(value, root, depth + 1)
        for name, value in properties.items()
        if name not in required
    }
    return st.fixed_dictionaries(fields, optional=optional)
