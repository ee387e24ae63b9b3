"""Tool-call trajectory matching: four modes, two argument matchers, precise messages."""

from __future__ import annotations

from typing import Any

import pytest

from agentrig.errors import InvalidInputError
from agentrig.harness.checks.trajectory import (
    ARGS_MODES,
    TRAJECTORY_MODES,
    Call,
    compare_trajectory,
    exact_args,
    partial_args,
)


def c(name: str, **args: Any) -> Call:
    return Call(name, args)


PARIS = c("weather", city="Paris")
PARIS_METRIC = c("weather", city="Paris", units="metric")
OSLO = c("weather", city="Oslo")
SEARCH = c("search", q="news")


def compare(expected: list[Call], actual: list[Call], mode: str, args: str = "exact") -> str | None:
    return compare_trajectory(expected, actual, mode=mode, args=args)


class TestCall:
    def test_str_is_a_call_shorthand(self) -> None:
        assert str(PARIS_METRIC) == "weather(city='Paris', units='metric')"
        assert str(c("now")) == "now()"
        assert str(c("add", a=1, b=[2])) == "add(a=1, b=[2])"


class TestArgsMatchers:
    def test_exact(self) -> None:
        assert exact_args({"city": "Paris"}, {"city": "Paris"})
        assert not exact_args({"city": "Paris"}, {"city": "Paris", "units": "metric"})
        assert not exact_args({"city": "Paris", "units": "metric"}, {"city": "Paris"})
        assert exact_args({}, {})

    def test_partial(self) -> None:
        assert partial_args({"city": "Paris"}, {"city": "Paris", "units": "metric"})
        assert partial_args({}, {"anything": 1})
        assert not partial_args({"city": "Paris"}, {"city": "Oslo"})
        assert not partial_args({"units": None}, {"city": "Paris"})  # a missing key is not None

    def test_values_compare_by_equality(self) -> None:
        assert exact_args({"n": 1}, {"n": 1.0})
        assert not exact_args({"tags": ["a", "b"]}, {"tags": ["b", "a"]})


class TestStrict:
    def test_same_calls_same_order(self) -> None:
        assert compare([PARIS, OSLO], [PARIS, OSLO], "strict") is None

    def test_order_matters(self) -> None:
        assert compare([PARIS, OSLO], [OSLO, PARIS], "strict") == (
            "call 1: expected weather(city='Paris'), got weather(city='Oslo')"
        )

    def test_names_the_first_difference(self) -> None:
        assert compare([PARIS, OSLO, SEARCH], [PARIS, OSLO, c("search", q="old")], "strict") == (
            "call 3: expected search(q='news'), got search(q='old')"
        )

    def test_missing_call_at_the_end(self) -> None:
        assert compare([PARIS, OSLO], [PARIS], "strict") == "expected 2 call(s), got 1"

    def test_extra_call_at_the_end(self) -> None:
        assert compare([PARIS], [PARIS, SEARCH], "strict") == "expected 1 call(s), got 2"

    def test_partial_args(self) -> None:
        assert compare([PARIS], [PARIS_METRIC], "strict", "partial") is None
        assert compare([PARIS], [PARIS_METRIC], "strict", "exact") == (
            "call 1: expected weather(city='Paris'), got weather(city='Paris', units='metric')"
        )
        # partial is one-way: the expected arguments must all be in the actual call
        assert compare([PARIS_METRIC], [PARIS], "strict", "partial") is not None

    def test_name_must_match_even_with_partial_args(self) -> None:
        assert compare([c("weather")], [c("forecast", city="Paris")], "strict", "partial") == (
            "call 1: expected weather(), got forecast(city='Paris')"
        )


class TestUnordered:
    def test_any_order(self) -> None:
        assert compare([PARIS, OSLO, SEARCH], [SEARCH, OSLO, PARIS], "unordered") is None

    def test_missing_and_unexpected(self) -> None:
        assert compare([PARIS, OSLO], [OSLO, SEARCH], "unordered") == (
            "missing weather(city='Paris'); unexpected search(q='news')"
        )

    def test_only_missing(self) -> None:
        assert compare([PARIS, OSLO], [OSLO], "unordered") == "missing weather(city='Paris')"

    def test_only_unexpected(self) -> None:
        assert compare([OSLO], [SEARCH, OSLO], "unordered") == "unexpected search(q='news')"
        assert compare([], [SEARCH, OSLO], "subset") == (
            "unexpected search(q='news'), weather(city='Oslo')"
        )
        assert compare([PARIS, OSLO], [], "superset") == (
            "missing weather(city='Paris'), weather(city='Oslo')"
        )

    def test_duplicates_count(self) -> None:
        assert compare([PARIS, PARIS], [PARIS, PARIS], "unordered") is None
        assert compare([PARIS, PARIS], [PARIS], "unordered") == "missing weather(city='Paris')"
        assert compare([PARIS], [PARIS, PARIS], "unordered") == "unexpected weather(city='Paris')"

    def test_partial_args(self) -> None:
        assert compare([OSLO, PARIS], [PARIS_METRIC, OSLO], "unordered", "partial") is None
        assert compare([OSLO, PARIS], [PARIS_METRIC, OSLO], "unordered", "exact") == (
            "missing weather(city='Paris'); unexpected weather(city='Paris', units='metric')"
        )

    def test_partial_args_pair_each_actual_call_once(self) -> None:
        generic, specific = c("weather"), c("weather", city="Paris")
        assert compare([specific, generic], [PARIS, OSLO], "unordered", "partial") is None
        assert compare([generic, generic], [PARIS], "unordered", "partial") == "missing weather()"

    def test_partial_args_find_a_pairing_whatever_the_order(self) -> None:
        # weather() could take the Paris call, leaving weather(city=Paris) unmatched: the
        # matcher must pair weather() with Oslo instead.
        generic, specific = c("weather"), c("weather", city="Paris")
        assert compare([generic, specific], [PARIS, OSLO], "unordered", "partial") is None
        assert compare([generic, specific], [PARIS, OSLO], "superset", "partial") is None
        assert compare([generic, specific], [PARIS, OSLO], "subset", "partial") is None
        assert compare([generic, specific], [OSLO, PARIS], "strict", "partial") is None
        assert compare([generic, specific], [PARIS, OSLO], "strict", "partial") is not None
        # one of the two is missing; which one is a matter of choice
        assert compare([generic, specific], [PARIS], "superset", "partial") in (
            "missing weather()",
            "missing weather(city='Paris')",
        )

    def test_long_trajectories_of_identical_calls(self) -> None:
        many = [PARIS] * 300
        assert compare(many, list(many), "unordered") is None
        assert compare([*many, OSLO], [OSLO, *many], "unordered") is None


class TestSubset:
    def test_every_actual_call_is_expected(self) -> None:
        assert compare([PARIS, OSLO, SEARCH], [OSLO], "subset") is None
        assert compare([PARIS, OSLO], [OSLO, PARIS], "subset") is None

    def test_nothing_called_is_a_subset(self) -> None:
        assert compare([PARIS], [], "subset") is None

    def test_unexpected_call(self) -> None:
        assert compare([PARIS, OSLO], [OSLO, SEARCH], "subset") == "unexpected search(q='news')"

    def test_duplicates_count(self) -> None:
        assert compare([PARIS], [PARIS, PARIS], "subset") == "unexpected weather(city='Paris')"
        assert compare([PARIS, PARIS], [PARIS, PARIS], "subset") is None

    def test_partial_args(self) -> None:
        assert compare([PARIS, OSLO], [PARIS_METRIC], "subset", "partial") is None
        assert compare([PARIS, OSLO], [PARIS_METRIC], "subset", "exact") == (
            "unexpected weather(city='Paris', units='metric')"
        )


class TestSuperset:
    def test_every_expected_call_was_made(self) -> None:
        assert compare([OSLO], [PARIS, SEARCH, OSLO], "superset") is None

    def test_nothing_expected_is_always_met(self) -> None:
        assert compare([], [PARIS, OSLO], "superset") is None

    def test_missing_call(self) -> None:
        assert compare([OSLO, SEARCH], [PARIS, OSLO], "superset") == "missing search(q='news')"

    def test_several_missing_calls_are_all_named(self) -> None:
        assert compare([OSLO, SEARCH], [PARIS], "superset") == (
            "missing weather(city='Oslo'), search(q='news')"
        )

    def test_duplicates_count(self) -> None:
        assert compare([PARIS, PARIS], [PARIS, OSLO], "superset") == (
            "missing weather(city='Paris')"
        )
        assert compare([PARIS, PARIS], [PARIS, OSLO, PARIS], "superset") is None

    def test_partial_args(self) -> None:
        assert compare([PARIS], [OSLO, PARIS_METRIC], "superset", "partial") is None
        assert compare([PARIS], [OSLO, PARIS_METRIC], "superset", "exact") == (
            "missing weather(city='Paris')"
        )


class TestEmpty:
    @pytest.mark.parametrize("mode", list(TRAJECTORY_MODES))
    @pytest.mark.parametrize("args", list(ARGS_MODES))
    def test_nothing_expected_nothing_called(self, mode: str, args: str) -> None:
        assert compare([], [], mode, args) is None

    def test_calls_expected_none_made(self) -> None:
        assert compare([PARIS], [], "strict") == "expected 1 call(s), got 0"
        assert compare([PARIS], [], "unordered") == "missing weather(city='Paris')"
        assert compare([PARIS], [], "superset") == "missing weather(city='Paris')"

    def test_no_calls_expected_some_made(self) -> None:
        assert compare([], [PARIS], "strict") == "expected 0 call(s), got 1"
        assert compare([], [PARIS], "unordered") == "unexpected weather(city='Paris')"
        assert compare([], [PARIS], "subset") == "unexpected weather(city='Paris')"


class TestModes:
    def test_registries(self) -> None:
        assert list(TRAJECTORY_MODES) == ["strict", "unordered", "subset", "superset"]
        assert list(ARGS_MODES) == ["exact", "partial"]

    def test_defaults_are_strict_and_exact(self) -> None:
        assert compare_trajectory([PARIS, OSLO], [OSLO, PARIS]) is not None
        assert compare_trajectory([PARIS], [PARIS_METRIC]) is not None
        assert compare_trajectory([PARIS], [PARIS]) is None

    def test_unknown_mode(self) -> None:
        with pytest.raises(InvalidInputError) as error:
            compare_trajectory([], [], mode="sorted")
        message = str(error.value)
        assert "unknown trajectory mode 'sorted'" in message
        assert "modes: strict, unordered, subset, superset" in message
        assert "args: exact, partial" in message

    def test_unknown_args_mode(self) -> None:
        with pytest.raises(InvalidInputError, match="args mode 'fuzzy'"):
            compare_trajectory([], [], args="fuzzy")
