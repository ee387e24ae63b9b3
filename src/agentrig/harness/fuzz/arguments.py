"""Tool-call arguments drawn from a tool's JSON Schema: valid ones, and on request invalid ones
(a required field missing, a field of the wrong type, keys the schema does not name, text that
is not JSON). Valid arguments are drawn from the schema and checked against it."""

from __future__ import annotations

import functools
import json
from typing import Any

import hypothesis.strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from agentrig.drivers._sdk import RAW_ARGUMENTS_KEY
from agentrig.harness.endpoint.schema_values import closed_schema
from agentrig.harness.fuzz.behaviours import ArgumentKind
from agentrig.harness.fuzz.schema_values import values_of

__all__ = ["RAW_ARGUMENTS_KEY", "arguments_for", "closed_schema", "kinds_for"]

JsonObject = dict[str, Any]
_OTHER_VALUES: tuple[Any, ...] = (0, -1, 2.5, "", "text", True, None, [], {}, [1, "a"])
"""Values a wrong-type field takes: each fails at least one kind of property schema."""
_EXTRA_KEYS = ("unexpected", "extra_field", "_meta", "id", "__proto__")


@functools.lru_cache(maxsize=256)
def _valid(schema_text: str) -> st.SearchStrategy[JsonObject]:
    validator = _validator(schema_text)
    drawn = values_of(json.loads(schema_text))

    def valid(value: Any) -> bool:
        return isinstance(value, dict) and (validator is None or validator.is_valid(value))

    return drawn.filter(valid)


@functools.lru_cache(maxsize=256)
def _validator(schema_text: str) -> Draft202012Validator | None:
    try:
        schema = json.loads(schema_text)
        Draft202012Validator.check_schema(schema)
        return Draft202012Validator(schema)
    except SchemaError:  # the endpoint's tools_as_declared reports a broken schema
        return None


def kinds_for(schema: JsonObject, kinds: frozenset[ArgumentKind]) -> tuple[ArgumentKind, ...]:
    """The kinds of ``kinds`` that make sense for ``schema`` (no missing field without a
    required one, no wrong type without a property), in a fixed order."""
    properties = schema.get("properties")
    usable: list[ArgumentKind] = []
    order: tuple[ArgumentKind, ...] = (
        "valid",
        "not_json",
        "missing_required",
        "wrong_type",
        "extra_keys",
    )
    for kind in order:
        if kind not in kinds:
            continue
        if kind == "missing_required" and not schema.get("required"):
            continue
        if kind == "wrong_type" and not properties:
            continue
        usable.append(kind)
    return tuple(usable)


def arguments_for(schema: JsonObject, kind: ArgumentKind) -> st.SearchStrategy[JsonObject]:
    """Arguments of ``kind`` for a tool whose parameters are ``schema`` (none for a kind that
    :func:`kinds_for` leaves out)."""
    if kind not in kinds_for(schema, frozenset({kind})):
        return st.nothing()
    closed = closed_schema(schema)
    text = json.dumps(closed)  # the cache key; loaded back with the properties in their order
    valid = _valid(text)
    if kind == "valid":
        return valid
    if kind == "not_json":
        return _not_json(closed, valid)
    if kind == "missing_required":
        required = [name for name in closed["required"] if isinstance(name, str)]
        return st.tuples(valid, st.sampled_from(required)).map(_without)
    if kind == "extra_keys":
        unnamed = [key for key in _EXTRA_KEYS if key not in closed.get("properties", {})]
        return st.tuples(valid, st.permutations(unnamed), st.integers(1, 2)).map(_with_extra)
    return _wrong_type(closed, text, valid)


_NOT_JSON = ("not json", '{"a": ', "[1, 2]", "null", "{'a': 1}")
"""Fixed texts that are no JSON object (a lone ``{`` is the shortest cut of any arguments)."""


def _not_json(
    schema: JsonObject, valid: st.SearchStrategy[JsonObject]
) -> st.SearchStrategy[JsonObject]:
    """Text that is no JSON object: valid arguments cut short, or written as a Python dict (for
    a schema that names properties: with none, the dict is always ``{}``), or a fixed piece of
    text that is not JSON. Strategies made once, none per draw."""
    # no mutate: a cut below 0 is one of the same cuts (Python's % is never negative)
    cut = st.tuples(valid, st.integers(0, 10_000)).map(_cut_short)  # pragma: no mutate
    python, fixed = valid.map(repr).filter(_is_not_json), st.sampled_from(_NOT_JSON)
    # no mutate: without properties the dict is always {}, filtered out (only slower)
    forms = (cut, python, fixed) if schema.get("properties") else (cut, fixed)  # pragma: no mutate
    return st.one_of(forms).map(lambda text: {RAW_ARGUMENTS_KEY: text})


def _is_not_json(text: str) -> bool:
    """Whether a Python dict's text is not JSON (``{}`` is, and so is a dict whose strings
    each hold a ``'``, which Python writes in double quotes)."""
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


def _cut_short(drawn: tuple[JsonObject, int]) -> str:
    """The arguments' JSON cut to 1 to all but one of its characters: never JSON."""
    arguments, cut = drawn
    whole = json.dumps(arguments)
    return whole[: 1 + cut % (len(whole) - 1)]


def _without(drawn: tuple[JsonObject, str]) -> JsonObject:
    arguments, name = drawn
    return {key: value for key, value in arguments.items() if key != name}


def _with_extra(drawn: tuple[JsonObject, list[str], int]) -> JsonObject:
    arguments, keys, count = drawn
    return {**arguments, **dict.fromkeys(keys[:count], "surplus")}


def _wrong_type(
    schema: JsonObject, text: str, valid: st.SearchStrategy[JsonObject]
) -> st.SearchStrategy[JsonObject]:
    properties = sorted(schema["properties"])
    validator = _validator(text)

    def broken(drawn: tuple[JsonObject, str, Any]) -> JsonObject:
        arguments, name, value = drawn
        return {**arguments, name: value}

    def invalid(arguments: JsonObject) -> bool:
        return validator is not None and not validator.is_valid(arguments)

    drawn = st.tuples(valid, st.sampled_from(properties), st.sampled_from(_OTHER_VALUES))
    return drawn.map(broken).filter(invalid)
