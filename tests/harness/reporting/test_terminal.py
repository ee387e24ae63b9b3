"""Failure text for terminals (the CLI and the pytest plugin): long values are cut short."""

from __future__ import annotations

from agentrig.harness.reporting.base import SHOWN_CHARACTERS, format_json, format_json_excerpt
from agentrig.harness.reporting.terminal import format_failure
from agentrig.harness.results import Failure


def test_short_values_are_shown_whole() -> None:
    failure = Failure(kind="expectation", message="differs", expected={"a": 1}, observed="x")
    text = format_failure(failure)
    assert '    expected: {"a": 1}' in text
    assert '    observed: "x"' in text


def test_a_long_value_is_cut_with_what_is_left_out() -> None:
    long = "y" * 20_000
    text = format_failure(Failure(kind="expectation", message="m", expected="x", observed=long))
    observed = next(line for line in text.splitlines() if line.startswith("    observed: "))
    whole = format_json(long)
    left_out = len(whole) - SHOWN_CHARACTERS
    assert observed == f"    observed: {whole[:SHOWN_CHARACTERS]}… ({left_out:,} more characters)"


def test_the_limit_is_exact() -> None:
    at_limit = "z" * (SHOWN_CHARACTERS - 2)  # two quotes make it exactly the limit
    assert format_json_excerpt(at_limit) == format_json(at_limit)
    assert format_json_excerpt(at_limit + "z").endswith("… (1 more characters)")
