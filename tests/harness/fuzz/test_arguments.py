"""Arguments drawn from a tool's JSON Schema: valid ones validate, each invalid kind does not."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from agentrig.harness.fuzz.arguments import (
    RAW_ARGUMENTS_KEY,
    arguments_for,
    closed_schema,
    kinds_for,
)
from agentrig.harness.fuzz.behaviours import ALL_ARGUMENTS

SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
    },
    {  # pydantic's shape: $defs and $ref, an enum, a nullable field, a nested list
        "type": "object",
        "$defs": {
            "Unit": {"enum": ["C", "F"], "type": "string"},
            "Point": {
                "type": "object",
                "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                "required": ["lat", "lon"],
            },
        },
        "properties": {
            "unit": {"$ref": "#/$defs/Unit"},
            "where": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        },
        "required": ["unit", "where"],
        "additionalProperties": False,
    },
    {"type": "object", "properties": {}},  # no parameters
]


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return Draft202012Validator(closed_schema(schema)).is_valid(value)


@pytest.mark.parametrize("schema", SCHEMAS)
@settings(max_examples=30, derandomize=True, database=None)
@given(data=st.data())
def test_valid_arguments_fit_the_schema_closed_to_unnamed_keys(schema, data):
    value = data.draw(arguments_for(schema, "valid"))
    assert _valid(schema, value)
    assert set(value) <= set(schema["properties"])


@pytest.mark.parametrize("schema", SCHEMAS[:2])
@pytest.mark.parametrize("kind", ["missing_required", "wrong_type", "extra_keys"])
@settings(max_examples=20, derandomize=True, database=None)
@given(data=st.data())
def test_each_invalid_kind_breaks_the_schema(schema, kind, data):
    value = data.draw(arguments_for(schema, kind))
    assert not _valid(schema, value)
    if kind == "missing_required":
        assert set(schema["required"]) - set(value)


@pytest.mark.parametrize("schema", SCHEMAS)
@settings(max_examples=30, derandomize=True, database=None)
@given(data=st.data())
def test_not_json_arguments_are_text_that_is_no_json_object(schema, data):
    value = data.draw(arguments_for(schema, "not_json"))
    assert list(value) == [RAW_ARGUMENTS_KEY]
    text = value[RAW_ARGUMENTS_KEY]
    assert text.strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        return
    assert not isinstance(parsed, dict)


def test_kinds_that_a_schema_cannot_break_are_left_out():
    assert kinds_for(SCHEMAS[2], ALL_ARGUMENTS) == ("valid", "not_json", "extra_keys")
    assert kinds_for(SCHEMAS[0], ALL_ARGUMENTS) == (
        "valid",
        "not_json",
        "missing_required",
        "wrong_type",
        "extra_keys",
    )


def test_closing_a_schema_keeps_what_it_says_of_other_keys():
    open_to_strings = {"properties": {"a": {}}, "additionalProperties": {"type": "string"}}
    assert closed_schema(open_to_strings)["additionalProperties"] == {"type": "string"}
    nested = closed_schema({"properties": {"a": {"type": "object", "properties": {}}}})
    assert nested["additionalProperties"] is False
    assert nested["properties"]["a"]["additionalProperties"] is False


NAMES_AN_EXTRA_KEY = {  # a tool whose parameters include names the fuzzer adds as extra keys
    "type": "object",
    "properties": {"id": {"type": "integer"}, "unexpected": {"type": "string"}},
    "required": ["id", "unexpected"],
}


@settings(max_examples=60, derandomize=True, database=None)
@given(data=st.data())
def test_extra_keys_are_ones_the_schema_does_not_name_each_set_to_surplus(data):
    value = data.draw(arguments_for(NAMES_AN_EXTRA_KEY, "extra_keys"))
    assert not _valid(NAMES_AN_EXTRA_KEY, value)
    extra = set(value) - {"id", "unexpected"}
    assert 1 <= len(extra) <= 2
    assert extra <= {"extra_field", "_meta", "__proto__"}
    assert all(value[key] == "surplus" for key in extra)
