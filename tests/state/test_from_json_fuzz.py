"""Fuzz tests of ``AgentState.from_json`` and ``from_dict``: only ``InvalidInputError`` escapes,
within the hang bound, and a state that is accepted can be saved and read back (structural
mutants and damaged bytes of a saved state, random JSON-like text, random bytes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentrig import AgentState, InvalidInputError
from agentrig.harness.property.profiles import agentrig_settings

SAVED = sorted((Path(__file__).parent / "data").glob("agent_state_*.json"))
JSON_TOKENS = ("{", "}", "[", "]", ",", ":", '"', "\\u", "\\ud800", "1e999", "NaN", "-", "0")


def _accepted_round_trips(state: AgentState) -> None:
    assert AgentState.from_json(state.to_json()) == state
    assert AgentState.from_dict(state.to_dict()) == state


def _from_json(raw: str | bytes, hostile: Any) -> None:
    if hostile.check(lambda: AgentState.from_json(raw), (InvalidInputError,)) is None:
        _accepted_round_trips(AgentState.from_json(raw))


@agentrig_settings(max_examples=40)
@given(data=st.data())
def test_structural_mutants(hostile: Any, data: st.DataObject) -> None:
    base = json.loads(data.draw(st.sampled_from(SAVED), label="file").read_text())
    mutant = hostile.mutant(data, base)
    if hostile.check(lambda: AgentState.from_dict(mutant), (InvalidInputError,)) is None:
        _accepted_round_trips(AgentState.from_dict(mutant))
    try:
        text = json.dumps(mutant, default=repr)
    except (ValueError, RecursionError):  # integers of 4300+ digits, nesting past json's limit
        return
    _from_json(text, hostile)


@agentrig_settings(max_examples=40)
@given(data=st.data())
def test_damaged_bytes(hostile: Any, data: st.DataObject) -> None:
    raw = data.draw(st.sampled_from(SAVED), label="file").read_bytes()
    _from_json(hostile.damaged(data, raw), hostile)


@agentrig_settings(max_examples=30)
@given(pieces=st.lists(st.sampled_from(JSON_TOKENS) | st.text(max_size=3), max_size=40))
def test_random_json_like_text(hostile: Any, pieces: list[str]) -> None:
    _from_json("".join(pieces), hostile)


@agentrig_settings(max_examples=20)
@given(raw=st.binary(max_size=200))
def test_random_bytes(hostile: Any, raw: bytes) -> None:
    _from_json(raw, hostile)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        found += _paths(item, (*path, key))
    return found


@agentrig_settings(max_examples=40)
@given(data=st.data())
def test_data_nested_past_any_limit_anywhere(hostile: Any, data: st.DataObject) -> None:
    """A value nested far deeper than any state (enum fields included: their own error message
    is the value's repr) is an ``InvalidInputError`` naming a field, never a RecursionError."""
    base = json.loads(data.draw(st.sampled_from(SAVED), label="file").read_text())
    *parent_path, last = data.draw(st.sampled_from(_paths(base)[1:]), label="at")
    depth = data.draw(st.integers(min_value=900, max_value=3000), label="depth")
    deep: Any = data.draw(st.sampled_from(["x", 1, None]), label="leaf")
    for level in range(depth):
        deep = [deep] if level % 3 else {"k": deep}
    parent = base
    for part in parent_path:
        parent = parent[part]
    parent[last] = deep
    error = hostile.check(lambda: AgentState.from_dict(base), (InvalidInputError,))
    assert error is not None
