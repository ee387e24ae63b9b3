"""Failure text for terminals (the CLI and the pytest plugin): long values are cut short."""

from __future__ import annotations

from agentrig.harness.reporting.base import SHOWN_CHARACTERS, format_json, format_json_excerpt
from agentrig.harness.reporting.terminal import format_failure, format_scenario_failures
from agentrig.harness.results import Failure, ScenarioResult


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


def _failed(line: int | None) -> ScenarioResult:
    failure = Failure(kind="error", message="the file is empty", location="empty.scenario.yaml")
    return ScenarioResult(
        name="empty",
        file="empty.scenario.yaml",
        line=line,
        tags=(),
        description="",
        passed=False,
        turns=(),
        failures=(failure,),
        invariants=(),
        transcript=(),
        wall_time_s=0.0,
    )


def test_the_heading_names_the_file_and_its_line() -> None:
    heading = format_scenario_failures(_failed(4)).splitlines()[0]
    assert heading == "scenario empty (empty.scenario.yaml:4) failed:"


def test_a_file_without_a_line_is_named_alone() -> None:
    """An empty file or a missing path has no line: no ``:None`` after its name."""
    heading = format_scenario_failures(_failed(None)).splitlines()[0]
    assert heading == "scenario empty (empty.scenario.yaml) failed:"
