"""Choosing scenarios: ``-k`` expressions over names and tags, and ``--shard i/n``."""

from __future__ import annotations

import pytest

from agentrig.errors import AgentrigError
from agentrig.harness.scenarios.model import Scenario, ScenarioTurn
from agentrig.harness.scenarios.selection import SelectionError, matches, parse_shard, select


def scenario(name: str, *tags: str) -> Scenario:
    return Scenario(name=name, tags=tags, turns=[ScenarioTurn(user="hi")])


WEATHER = scenario("weather-two-cities", "tools", "Buffer")
BUDGET = scenario("budget-steps-limit", "budget", "smoke")
INLINE = scenario("inline-trace", "buffer", "inline")
SUBAGENT = scenario("subagent-depth", "subagents")
SUITE = [WEATHER, BUDGET, INLINE, SUBAGENT]


def chosen(expression: str) -> list[str]:
    return [s.name for s in SUITE if matches(expression, s)]


class TestWords:
    def test_word_is_a_substring_of_the_name(self) -> None:
        assert chosen("weather") == ["weather-two-cities"]
        assert chosen("two-cit") == ["weather-two-cities"]
        assert chosen("limit") == ["budget-steps-limit"]
        assert chosen("-") == [s.name for s in SUITE]

    def test_word_equals_a_tag(self) -> None:
        assert chosen("smoke") == ["budget-steps-limit"]
        assert chosen("subagents") == ["subagent-depth"]

    def test_a_tag_must_match_whole(self) -> None:
        assert chosen("smok") == []
        assert chosen("tool") == []  # "tools" is a tag, "tool" is in no name

    def test_case_insensitive(self) -> None:
        assert chosen("WEATHER") == ["weather-two-cities"]
        assert chosen("SMOKE") == ["budget-steps-limit"]
        assert chosen("buffer") == ["weather-two-cities", "inline-trace"]  # tag "Buffer" too

    def test_no_match(self) -> None:
        assert chosen("nothing-like-it") == []

    def test_a_quoted_word_may_hold_spaces(self) -> None:
        slow = scenario("big-run", "slow path", "nightly")
        assert matches("'slow path'", slow)
        assert matches('"SLOW PATH" and nightly', slow)
        assert not matches("'slow path' and not nightly", slow)
        assert not matches("'slow path'", BUDGET)
        assert matches("'steps-limit'", BUDGET)  # a quoted word is still a name substring

    def test_empty_expression_matches_everything(self) -> None:
        assert chosen("") == [s.name for s in SUITE]
        assert chosen("   ") == [s.name for s in SUITE]


class TestOperators:
    def test_and(self) -> None:
        assert chosen("buffer and inline") == ["inline-trace"]
        assert chosen("buffer and smoke") == []

    def test_or(self) -> None:
        assert chosen("smoke or subagents") == ["budget-steps-limit", "subagent-depth"]

    def test_not(self) -> None:
        assert chosen("not buffer") == ["budget-steps-limit", "subagent-depth"]
        assert chosen("not not smoke") == ["budget-steps-limit"]

    def test_and_binds_tighter_than_or(self) -> None:
        assert chosen("smoke or buffer and inline") == ["budget-steps-limit", "inline-trace"]
        assert chosen("(smoke or buffer) and inline") == ["inline-trace"]

    def test_not_binds_tighter_than_and(self) -> None:
        assert chosen("not smoke and not buffer") == ["subagent-depth"]
        assert chosen("not (smoke and budget)") == [
            "weather-two-cities",
            "inline-trace",
            "subagent-depth",
        ]

    def test_parentheses_without_spaces(self) -> None:
        assert chosen("(tools)or(inline)") == ["weather-two-cities", "inline-trace"]
        assert chosen("((smoke))") == ["budget-steps-limit"]

    def test_keywords_are_case_insensitive(self) -> None:
        assert chosen("buffer AND NOT inline") == ["weather-two-cities"]
        assert chosen("smoke Or subagents") == ["budget-steps-limit", "subagent-depth"]

    def test_keyword_inside_a_word_is_a_word(self) -> None:
        named = scenario("order-and-notes")
        assert matches("order-and-notes", named)
        assert matches("notes and order", named)
        assert not matches("notes and not order", named)


class TestInvalidExpressions:
    @pytest.mark.parametrize(
        "expression",
        [
            "and",
            "smoke and",
            "or smoke",
            "not",
            "smoke not budget",
            "smoke budget",
            "(smoke",
            "smoke)",
            ")(",
            "()",
            "smoke and ()",
            "smoke (budget)",
            "(smoke)(budget)",
        ],
    )
    def test_raises_selection_error(self, expression: str) -> None:
        with pytest.raises(SelectionError, match="invalid -k expression") as error:
            matches(expression, BUDGET)
        assert repr(expression) in str(error.value)

    def test_selection_error_is_an_agentrig_error(self) -> None:
        assert issubclass(SelectionError, AgentrigError)

    def test_python_is_not_evaluated(self) -> None:
        # words are looked up, never evaluated, whatever they look like
        assert not matches("__import__", BUDGET)
        with pytest.raises(SelectionError):
            matches("__import__('os')", BUDGET)
        assert matches("True", scenario("always-true"))
        assert not matches("True", BUDGET)

    def test_select_propagates_the_error(self) -> None:
        with pytest.raises(SelectionError):
            select(SUITE, keyword="smoke and")

    def test_a_malformed_expression_is_an_error_even_with_nothing_to_select(self) -> None:
        with pytest.raises(SelectionError, match="invalid -k expression"):
            select([], keyword="smoke and")

    def test_an_unclosed_quote_is_an_error(self) -> None:
        with pytest.raises(SelectionError, match="not closed"):
            matches("'slow path", BUDGET)


class TestParseShard:
    @pytest.mark.parametrize(
        ("value", "expected"),
        [("1/1", (1, 1)), ("2/4", (2, 4)), (" 3 / 5 ", (3, 5)), ("04/10", (4, 10))],
    )
    def test_valid(self, value: str, expected: tuple[int, int]) -> None:
        assert parse_shard(value) == expected

    @pytest.mark.parametrize(
        "value", ["", "1", "1/", "/4", "1-4", "a/b", "1/4/2", "-1/4", "1.5/4", "1/4x", "½/4"]
    )
    def test_malformed(self, value: str) -> None:
        with pytest.raises(SelectionError, match=r"--shard must look like i/n \(e.g. 1/4\)"):
            parse_shard(value)

    @pytest.mark.parametrize("value", ["0/4", "5/4", "0/0", "1/0"])
    def test_index_out_of_range(self, value: str) -> None:
        with pytest.raises(SelectionError, match="i must be between 1 and n"):
            parse_shard(value)


class TestSelect:
    def test_no_filter_keeps_everything_in_order(self) -> None:
        assert select(SUITE) == SUITE

    def test_keyword_keeps_the_suite_order(self) -> None:
        assert [s.name for s in select(SUITE, keyword="buffer or smoke")] == [
            "weather-two-cities",
            "budget-steps-limit",
            "inline-trace",
        ]

    @pytest.mark.parametrize("total", [1, 2, 3, 4, 5])
    def test_shards_partition_the_suite(self, total: int) -> None:
        suite = [scenario(f"case-{n:02d}") for n in range(11)]
        shards = [select(suite, shard=(index, total)) for index in range(1, total + 1)]
        names = [s.name for shard in shards for s in shard]
        assert sorted(names) == sorted(s.name for s in suite)  # each in exactly one shard
        assert len(names) == len(set(names))
        sizes = [len(shard) for shard in shards]
        assert max(sizes) - min(sizes) <= 1  # balanced
        for shard in shards:  # each shard keeps the suite order
            assert shard == [s for s in suite if s in shard]

    @pytest.mark.parametrize("total", [1, 2, 3, 4, 5])
    def test_shards_do_not_depend_on_the_input_order(self, total: int) -> None:
        suite = [scenario(f"case-{n:02d}") for n in range(7)]
        for index in range(1, total + 1):
            forward = {s.name for s in select(suite, shard=(index, total))}
            backward = {s.name for s in select(list(reversed(suite)), shard=(index, total))}
            assert forward == backward

    def test_round_robin_by_name(self) -> None:
        suite = [scenario(name) for name in ("delta", "alpha", "charlie", "bravo")]
        assert [s.name for s in select(suite, shard=(1, 2))] == ["alpha", "charlie"]
        assert [s.name for s in select(suite, shard=(2, 2))] == ["delta", "bravo"]  # suite order

    def test_more_shards_than_scenarios(self) -> None:
        assert [s.name for s in select(SUITE, shard=(5, 5))] == []
        picked = [select(SUITE, shard=(i, 5)) for i in range(1, 6)]
        assert sum(len(p) for p in picked) == len(SUITE)

    def test_keyword_then_shard(self) -> None:
        selected = select(SUITE, keyword="buffer or smoke")
        parts = [select(SUITE, keyword="buffer or smoke", shard=(i, 2)) for i in (1, 2)]
        assert sorted(s.name for part in parts for s in part) == sorted(s.name for s in selected)
        assert [len(part) for part in parts] == [2, 1]
