"""Arguments drawn from a tool's JSON Schema: valid ones validate, each invalid kind does not."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import Phase, find, given, settings
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


FIND = settings(database=None, max_examples=2_000, phases=[Phase.generate], deadline=None)
SHRINK = settings(database=None, max_examples=2_000, deadline=None)


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return Draft202012Validator(closed_schema(schema)).is_valid(value)


@pytest.mark.parametrize("schema", SCHEMAS)
@settings(max_examples=30, derandomize=True, database=None, deadline=None)
@given(data=st.data())
def test_valid_arguments_fit_the_schema_closed_to_unnamed_keys(schema, data):
    value = data.draw(arguments_for(schema, "valid"))
    assert _valid(schema, value)
    assert set(value) <= set(schema["properties"])


@pytest.mark.parametrize("schema", SCHEMAS[:2])
@pytest.mark.parametrize("kind", ["missing_required", "wrong_type", "extra_keys"])
@settings(max_examples=20, derandomize=True, database=None, deadline=None)
@given(data=st.data())
def test_each_invalid_kind_breaks_the_schema(schema, kind, data):
    value = data.draw(arguments_for(schema, kind))
    assert not _valid(schema, value)
    if kind == "missing_required":
        assert set(schema["required"]) - set(value)


@pytest.mark.parametrize("schema", SCHEMAS)
@settings(max_examples=30, derandomize=True, database=None, deadline=None)
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


@settings(max_examples=60, derandomize=True, database=None, deadline=None)
@given(data=st.data())
def test_extra_keys_are_ones_the_schema_does_not_name_each_set_to_surplus(data):
    value = data.draw(arguments_for(NAMES_AN_EXTRA_KEY, "extra_keys"))
    assert not _valid(NAMES_AN_EXTRA_KEY, value)
    extra = set(value) - {"id", "unexpected"}
    assert 1 <= len(extra) <= 2
    assert extra <= {"extra_field", "_meta", "__proto__"}
    assert all(value[key] == "surplus" for key in extra)


def _not_json_texts(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    return arguments_for(schema, "not_json").map(lambda value: value[RAW_ARGUMENTS_KEY])


ONE_FIXED = {"type": "object", "properties": {"n": {"const": 1}}, "required": ["n"]}
"""Valid arguments always ``{"n": 1}``."""


@pytest.mark.parametrize("size", range(1, len('{"n": 1}')))
def test_not_json_arguments_include_the_valid_ones_cut_at_any_point(size):
    cut = '{"n": 1}'[:size]
    assert find(_not_json_texts(ONE_FIXED), lambda text: text == cut, settings=FIND) == cut


@pytest.mark.parametrize("text", ["{'n': 1}", "not json", '{"a": ', "[1, 2]", "null", "{'a': 1}"])
def test_not_json_arguments_include_a_python_dict_and_fixed_texts(text):
    assert find(_not_json_texts(ONE_FIXED), lambda drawn: drawn == text, settings=FIND) == text


@pytest.mark.parametrize(
    "schema", [{"type": "object", "properties": {"n": {"const": 1}}}, {"type": "object"}]
)
@settings(max_examples=100, derandomize=True, database=None, deadline=None)
@given(data=st.data())
def test_not_json_arguments_of_optional_or_no_fields_are_never_an_empty_object(schema, data):
    assert data.draw(_not_json_texts(schema)).strip() not in ("{}", "")


@pytest.mark.parametrize("text", ["{", "not json", '{"a": ', "[1, 2]", "null", "{'a': 1}"])
def test_not_json_arguments_of_no_parameters_are_cut_or_fixed_texts(text):
    no_parameters = _not_json_texts({"type": "object"})
    assert find(no_parameters, lambda drawn: drawn == text, settings=FIND) == text


def test_valid_arguments_keep_the_order_the_schema_names_them_in():
    schema = {"type": "object", "properties": {"zeta": {"const": 1}, "alpha": {"const": 2}}}
    both = find(arguments_for(schema, "valid"), lambda value: len(value) == 2, settings=FIND)
    assert list(both) == ["zeta", "alpha"]


@pytest.mark.parametrize("schema", [SCHEMAS[0], SCHEMAS[1], {"type": "object"}])
@settings(max_examples=30, derandomize=True, database=None, deadline=None)
@given(data=st.data())
def test_extra_keys_are_valid_arguments_with_one_or_two_more_set_to_surplus(schema, data):
    value = data.draw(arguments_for(schema, "extra_keys"))
    extra = set(value) - set(schema.get("properties", {}))
    assert 1 <= len(extra) <= 2
    assert extra <= {"unexpected", "extra_field", "_meta", "id", "__proto__"}
    assert all(value[key] == "surplus" for key in extra)
    assert _valid(schema, {key: value[key] for key in value if key not in extra})


@pytest.mark.parametrize("schema", SCHEMAS[:2])
@settings(max_examples=30, derandomize=True, database=None, deadline=None)
@given(data=st.data())
def test_a_wrong_type_is_one_named_field_whose_value_its_schema_refuses(schema, data):
    value = data.draw(arguments_for(schema, "wrong_type"))
    assert set(value) <= set(schema["properties"])
    root = closed_schema(schema)
    refused = [
        name
        for name in value
        if not Draft202012Validator(
            {**root["properties"][name], "$defs": root.get("$defs", {})}
        ).is_valid(value[name])
    ]
    assert len(refused) == 1
    assert value[refused[0]] in WRONG_VALUES


WRONG_VALUES = [0, -1, 2.5, "", "text", True, None, [], {}, [1, "a"]]


@pytest.mark.parametrize("wrong", WRONG_VALUES)
def test_a_wrong_type_takes_each_kind_of_value(wrong):
    schema = {"type": "object", "properties": {"x": {"const": "exact"}}, "required": ["x"]}
    found = find(
        arguments_for(schema, "wrong_type"),
        lambda value: value["x"] == wrong and type(value["x"]) is type(wrong),
        settings=FIND,
    )
    assert found == {"x": wrong}


@pytest.mark.parametrize(
    ("kind", "schema"), [("missing_required", SCHEMAS[2]), ("wrong_type", {"type": "object"})]
)
def test_a_kind_the_schema_cannot_break_draws_nothing(kind, schema):
    assert arguments_for(schema, kind).is_empty


@settings(max_examples=30, derandomize=True, database=None, deadline=None)
@given(data=st.data())
def test_a_missing_field_is_one_required_field_left_out(data):
    schema = {
        "type": "object",
        "properties": {"a": {"const": 1}, "b": {"const": 2}, "c": {"const": 3}},
        "required": ["a", "b"],
    }
    value = data.draw(arguments_for(schema, "missing_required"))
    assert len({"a", "b"} - set(value)) == 1


def test_the_kinds_are_narrowed_to_those_asked_for():
    assert kinds_for(SCHEMAS[0], frozenset({"extra_keys", "valid"})) == ("valid", "extra_keys")
    assert kinds_for(SCHEMAS[0], frozenset({"wrong_type"})) == ("wrong_type",)
    assert kinds_for({"type": "object"}, ALL_ARGUMENTS) == ("valid", "not_json", "extra_keys")


def test_cut_arguments_shrink_to_a_lone_brace():
    def cut(text: str) -> bool:
        return '{"n": 1}'.startswith(text)

    assert find(_not_json_texts(ONE_FIXED), cut, settings=SHRINK) == "{"


@pytest.mark.parametrize("count", [1, 2])
def test_one_or_two_extra_keys_are_added(count):
    def extra(value: dict[str, Any]) -> bool:
        return len(set(value) - set(SCHEMAS[0]["properties"])) == count

    assert extra(find(arguments_for(SCHEMAS[0], "extra_keys"), extra, settings=FIND))
