"""The indented JSON writer gives exactly the text of ``json.dumps`` with sorted keys, and
leaves what is not plain JSON data to it (which writes or refuses it as always)."""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrig.harness.reporting.base import format_json
from agentrig.harness.reporting.indented_json import dumps_indented

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and the infinities too
    st.text(),  # lone surrogates, control characters, non-ASCII
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=5), inner, max_size=4),
    ),
    max_leaves=30,
)


def _dumps(value: Any, indent: int) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=indent)


@given(value=JSON_VALUES, indent=st.integers(0, 4))
def test_the_text_is_json_dumps_with_sorted_keys(value: Any, indent: int) -> None:
    assert dumps_indented(value, indent) == _dumps(value, indent)


def test_format_json_indents_with_it_and_keeps_one_line_without() -> None:
    numbers = [float("nan"), float("inf"), -float("inf"), -0.0, 1e16, 1e-7, 2**70, -3, True]
    value = {"b": [1, 2.5, {}, numbers], "a": {"x": None, "é": "ü\n\ud800\x00"}, "c": []}
    assert format_json(value, indent=2) == _dumps(value, 2)
    assert format_json(value) == json.dumps(value, sort_keys=True, ensure_ascii=False)


class Kind(enum.IntEnum):
    ONE = 1


@pytest.mark.parametrize(
    "value",
    [{1: "a", 2: "b"}, {1.5: "a", 2: "b", False: 0}, [Kind.ONE], {"k": Kind.ONE}],
    ids=["int keys", "other keys", "int enum", "int enum value"],
)
def test_what_is_not_plain_json_is_written_as_json_dumps_writes_it(value: Any) -> None:
    assert dumps_indented(value, 2) == _dumps(value, 2)


@pytest.mark.parametrize(
    "value", [{1: "a", "b": 2}, {"when": object()}], ids=["keys sorted() cannot order", "object"]
)
def test_what_json_dumps_refuses_is_refused_alike(value: Any) -> None:
    with pytest.raises(TypeError) as ours:
        dumps_indented(value, 2)
    with pytest.raises(TypeError) as theirs:
        _dumps(value, 2)
    assert str(ours.value) == str(theirs.value)


def test_a_value_that_contains_itself_is_refused_alike() -> None:
    value: list[Any] = []
    value.append(value)
    with pytest.raises(ValueError, match="Circular reference detected"):
        dumps_indented(value, 2)
