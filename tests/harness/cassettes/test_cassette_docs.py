"""Every example of docs/record-replay.md runs, and the page shows what the code produces."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import agentrig as ar
from agentrig.harness.cassettes import ReplayProvider, load_cassette

PAGE = (Path(__file__).parents[3] / "docs" / "record-replay.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, re.DOTALL)


def test_the_fixture_example_records_the_cassette_the_page_shows_then_replays(
    pytester: pytest.Pytester,
) -> None:
    example = blocks("python")[0]
    pytester.makepyfile(test_weather=example)
    pytester.runpytest("--agentrig-record-mode=once").assert_outcomes(passed=1)
    stored = pytester.path / "cassettes" / "test_weather" / "test_weather.yaml"
    assert stored.read_text(encoding="utf-8") == blocks("yaml")[0]
    pytester.runpytest().assert_outcomes(passed=1)

    namespace: dict[str, object] = {}
    exec(compile(example, "example", "exec"), namespace)
    replay = ReplayProvider(load_cassette(stored), path="cassettes/test_weather/test_weather.yaml")
    build = namespace["build"]
    assert callable(build)
    build(replay).execute(ar.AgentState().with_user_message("Weather in Oslo?"))
    assert str(replay.misses[0]) + "\n" == blocks("text")[0]


def test_the_python_api_example_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_api=blocks("python")[1])
    pytester.runpytest().assert_outcomes(passed=1)


def test_the_scrubber_example_runs() -> None:
    exec(compile(blocks("python")[2], "scrubbers", "exec"), {})
