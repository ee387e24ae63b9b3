"""Values of a JSON Schema with hypothesis making each choice: within the schema's bounds,
lengths, pattern and options, and shrinking to the plainest one."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from agentrig.harness.fuzz.schema_values import values_of

FIND = settings(database=None, max_examples=1_000)
DRAWN = settings(max_examples=60, derandomize=True, database=None, deadline=None)


INTEGERS = {"type": "integer", "minimum": 3, "maximum": 5}
NUMBERS = {"type": "number", "minimum": -1.5, "maximum": 2.5}
TEXTS = {"type": "string", "minLength": 2, "maxLength": 4}


@DRAWN
@given(data=st.data())
def test_integers_stay_within_the_bounds(data):
    value = data.draw(values_of(INTEGERS))
    assert type(value) is int
    assert 3 <= value <= 5


@DRAWN
@given(data=st.data())
def test_numbers_are_finite_floats_within_the_bounds(data):
    value = data.draw(values_of(NUMBERS))
    assert type(value) is float
    assert math.isfinite(value)
    assert -1.5 <= value <= 2.5


@DRAWN
@given(data=st.data())
def test_strings_have_the_lengths_allowed(data):
    value = data.draw(values_of(TEXTS))
    assert type(value) is str
    assert 2 <= len(value) <= 4


@pytest.mark.parametrize(
    ("schema", "found"),
    [
        (INTEGERS, lambda value: value == 5),
        (NUMBERS, lambda value: value == 2.5),
        (NUMBERS, lambda value: value == -1.5),
        (TEXTS, lambda value: len(value) == 4),
    ],
)
def test_each_bound_is_reached(schema, found):
    find(values_of(schema), found, settings=FIND)


@pytest.mark.parametrize(
    ("schema", "plainest"),
    [(INTEGERS, 3), (TEXTS, "00"), ({"enum": ["b", "a"]}, "b"), ({"type": "boolean"}, False)],
)
def test_a_value_shrinks_to_the_plainest_choice(schema, plainest):
    assert find(values_of(schema), lambda _: True, settings=FIND) == plainest


PATTERN = {"type": "string", "pattern": "^[a-c]{2}-[0-9]$"}


@DRAWN
@given(data=st.data())
def test_a_pattern_is_matched_whole(data):
    assert re.fullmatch("[a-c]{2}-[0-9]", data.draw(values_of(PATTERN)))


@DRAWN
@given(data=st.data())
def test_a_pattern_python_cannot_read_draws_text_of_the_lengths_allowed(data):
    schema = {"type": "string", "pattern": "(?<name>x)", "minLength": 5, "maxLength": 6}
    value = data.draw(values_of(schema))
    assert 5 <= len(value) <= 6


@pytest.mark.parametrize("option", [[1], [2, 3], {"k": 1}, None])
def test_options_that_do_not_hash_are_each_drawn(option):
    schema = {"enum": [[1], [2, 3], {"k": 1}, None]}
    assert find(values_of(schema), lambda value: value == option, settings=FIND) == option


@pytest.mark.parametrize("option", ["a", 1, True])
def test_options_that_hash_are_each_drawn(option):
    schema = {"enum": ["a", 1, True]}
    found = find(
        values_of(schema),
        lambda value: value == option and type(value) is type(option),
        settings=FIND,
    )
    assert found == option
