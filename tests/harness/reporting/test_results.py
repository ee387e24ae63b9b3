"""The result model: validation, derived counts, normalization and the lossless dict form."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agentrig.errors import InvalidInputError
from agentrig.harness.results import (
    REPORT_FORMAT,
    REPORT_VERSION,
    Failure,
    InvariantOutcome,
    ScenarioResult,
    SuiteResult,
    TranscriptEntry,
    TurnResult,
    normalized,
)

# --- strategies ---------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
ordinals = st.integers(min_value=1, max_value=50)
texts = st.text(max_size=20)
seconds = st.floats(min_value=0, max_value=1e6, allow_nan=False)

entries = st.builds(
    TranscriptEntry,
    turn=ordinals,
    step=st.none() | ordinals,
    kind=st.sampled_from(
        ["user", "assistant", "tool_call", "tool_result", "system", "event", "stop"]
    ),
    role=st.none() | texts,
    text=texts,
    name=st.none() | texts,
    args=st.none() | st.dictionaries(texts, json_values, max_size=3),
    is_error=st.booleans(),
    section=st.none() | texts,
)
failures = st.builds(
    Failure,
    kind=st.sampled_from(["expectation", "invariant", "script", "error"]),
    message=texts,
    turn=st.none() | ordinals,
    step=st.none() | ordinals,
    field=st.none() | texts,
    expected=json_values,
    observed=json_values,
    invariant=st.none() | texts,
    location=st.none() | texts,
)
turn_results = st.builds(
    TurnResult,
    index=ordinals,
    user=texts,
    status=st.none() | texts,
    stop_reason=st.none() | texts,
    steps=st.integers(min_value=0, max_value=20),
    final_response=texts,
    usage=st.dictionaries(texts, st.integers(min_value=0, max_value=10**6), max_size=3),
    cost=st.floats(min_value=0, max_value=100, allow_nan=False),
)
invariant_outcomes = st.builds(
    InvariantOutcome,
    name=texts,
    checks=st.integers(min_value=0, max_value=100),
    failures=st.integers(min_value=0, max_value=100),
)


@st.composite
def scenario_results(draw: st.DrawFn) -> ScenarioResult:
    found = tuple(draw(st.lists(failures, max_size=2)))
    return ScenarioResult(
        name=draw(texts),
        file=draw(texts),
        line=draw(st.none() | ordinals),
        tags=tuple(draw(st.lists(texts, max_size=3))),
        description=draw(texts),
        passed=not found,
        turns=tuple(draw(st.lists(turn_results, max_size=2))),
        failures=found,
        invariants=tuple(draw(st.lists(invariant_outcomes, max_size=2))),
        transcript=tuple(draw(st.lists(entries, max_size=3))),
        wall_time_s=draw(seconds),
    )


suite_results = st.builds(
    SuiteResult,
    scenarios=st.lists(scenario_results(), max_size=3).map(tuple),
    wall_time_s=seconds,
)


# --- round trip ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(suite_results)
def test_dict_round_trip_is_lossless(result: SuiteResult) -> None:
    assert SuiteResult.from_dict(result.to_dict()) == result


@settings(max_examples=30, deadline=None)
@given(suite_results)
def test_json_text_round_trip_is_lossless(result: SuiteResult) -> None:
    assert SuiteResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_to_dict_carries_format_and_version(suite: SuiteResult) -> None:
    data = suite.to_dict()
    assert (
        (data["format"], data["version"])
        == (REPORT_FORMAT, REPORT_VERSION)
        == (
            "agentrig-report",
            1,
        )
    )
    assert SuiteResult.from_dict(data) == suite


def test_from_dict_does_not_modify_its_input(suite: SuiteResult) -> None:
    data = suite.to_dict()
    SuiteResult.from_dict(data)
    assert data["format"] == REPORT_FORMAT


# --- bad data -----------------------------------------------------------------------------


def _problem(data: Any) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as caught:
        SuiteResult.from_dict(data)
    return caught.value


def test_not_a_dict_is_rejected() -> None:
    assert "expected a dict, got list" in str(_problem([]))


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"format": "something-else"}, "format", "is this an agentrig report?"),
        ({"version": 2}, "version", "unsupported version 2; this agentrig reads version 1"),
        ({"version": True}, "version", "unsupported version True"),
        ({"version": "1"}, "version", "unsupported version '1'"),
    ],
)
def test_bad_header_names_the_field(
    suite: SuiteResult, change: dict[str, Any], field: str, reason: str
) -> None:
    error = _problem({**suite.to_dict(), **change})
    assert error.field == field
    assert reason in str(error)


@pytest.mark.parametrize("key", ["format", "version"])
def test_missing_header_is_rejected(suite: SuiteResult, key: str) -> None:
    data = suite.to_dict()
    del data[key]
    assert _problem(data).field == key


def test_bad_nested_value_names_its_path(suite: SuiteResult) -> None:
    data = suite.to_dict()
    data["scenarios"][1]["failures"][0]["kind"] = "oops"
    data["scenarios"][0]["turns"][0]["steps"] = "3"
    error = _problem(data)
    fields = [field for field, _ in error.problems]
    assert fields == ["scenarios[0].turns[0].steps", "scenarios[1].failures[0].kind"]
    assert "'expectation', 'invariant', 'script', 'error' or 'verdict'" in str(error)


def test_validation_is_strict(suite: SuiteResult) -> None:
    data = suite.to_dict()
    data["scenarios"][0]["passed"] = "yes"
    assert _problem(data).field == "scenarios[0].passed"


def test_unknown_keys_are_rejected(suite: SuiteResult) -> None:
    data = suite.to_dict()
    data["scenarios"][0]["surprise"] = 1
    assert _problem(data).field == "scenarios[0].surprise"


def test_non_json_data_is_rejected(suite: SuiteResult) -> None:
    data = suite.to_dict()
    data["wall_time_s"] = float("nan")
    assert "not JSON-compatible" in str(_problem(data))


def test_passed_must_match_failures(suite: SuiteResult) -> None:
    data = suite.to_dict()
    data["scenarios"][1]["passed"] = True
    error = _problem(data)
    assert error.field == "scenarios[1]"
    assert "passed must be true exactly when failures is empty" in str(error)


def test_constructor_errors_name_the_field() -> None:
    with pytest.raises(
        ValidationError, match=r"turn\n  Input should be greater than or equal to 1"
    ):
        Failure(kind="error", message="boom", turn=0)


# --- behaviour ----------------------------------------------------------------------------


def test_models_are_frozen(suite: SuiteResult) -> None:
    with pytest.raises(ValidationError, match="frozen"):
        suite.wall_time_s = 3.0  # type: ignore[misc]


def test_suite_counts(suite: SuiteResult) -> None:
    assert (suite.total, suite.passed_count, suite.failed_count, suite.passed) == (3, 1, 2, False)
    only_passing = suite.model_copy(update={"scenarios": suite.scenarios[:1]})
    assert only_passing.passed
    assert SuiteResult(scenarios=(), wall_time_s=0.0).passed


def test_scenario_helpers(suite: SuiteResult) -> None:
    weather, budget, xss = suite.scenarios
    assert (weather.status, budget.status) == ("passed", "failed")
    assert (weather.location, xss.location) == ("scenarios/weather.scenario.yaml:3", xss.file)
    assert (weather.total_steps, budget.total_steps, xss.total_steps) == (3, 4, 0)


def test_failure_where() -> None:
    full = Failure(kind="script", message="m", turn=1, step=2, location="a.scenario.yaml:9")
    assert full.where() == "turn 1, step 2, at a.scenario.yaml:9"
    assert Failure(kind="error", message="m").where() == ""


def test_normalized_zeroes_only_wall_times(make_suite: Any) -> None:
    result = normalized(make_suite((9.0, 1.0, 2.0, 3.0)))
    assert result.wall_time_s == 0.0
    assert [s.wall_time_s for s in result.scenarios] == [0.0, 0.0, 0.0]
    assert result == normalized(make_suite())
    assert result != make_suite()


def test_repr_reads_like_a_constructor_call() -> None:
    outcome = InvariantOutcome(name="x", checks=2, failures=0)
    assert repr(outcome) == "InvariantOutcome(name='x', checks=2, failures=0)"
