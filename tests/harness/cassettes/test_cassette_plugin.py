"""The ``agentrig_cassette`` fixture, marker and ``--agentrig-record-mode`` (via pytester)."""

from __future__ import annotations

from pathlib import Path

import pytest

# Imported here so in-process pytester runs share these modules instead of importing PyYAML
# afresh in each run (its C parser would then build nodes of a stale module's classes).
import agentrig.harness.cassettes  # noqa: F401

AGENT = """
import agentrig as ar
import pytest
from agentrig.fakes import FunctionLLM

def model(request):
    return "Hello, " + request.messages[-1].content

def ask(provider, *questions):
    loop = ar.AgentBuilder.base().with_capability(ar.UseLlmConfig(provider)).build()
    state = ar.AgentState()
    for question in questions:
        state = loop.execute(state.with_user_message(question))
    return state
"""

BASIC = (
    AGENT
    + """
def test_greeting(agentrig_cassette):
    provider = agentrig_cassette(FunctionLLM(model))
    assert ask(provider, "{question}").final_response().to_text() == "Hello, world"
"""
)


def cassette_of(pytester: pytest.Pytester, module: str, test: str) -> Path:
    return pytester.path / "cassettes" / module / f"{test}.yaml"


def test_record_once_then_replay_by_default(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_greet=BASIC.format(question="world"))
    pytester.runpytest("--agentrig-record-mode=once").assert_outcomes(passed=1)
    path = cassette_of(pytester, "test_greet", "test_greeting")
    assert "content: Hello, world" in path.read_text(encoding="utf-8")
    before = path.read_bytes()
    pytester.runpytest().assert_outcomes(passed=1)
    assert path.read_bytes() == before


def test_without_a_cassette_the_default_mode_says_how_to_record(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_greet=BASIC.format(question="world"))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CassetteNotFoundError*--agentrig-record-mode=once*"])


def test_a_changed_request_fails_the_test_with_the_diff(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_greet=BASIC.format(question="world"))
    pytester.runpytest("--agentrig-record-mode=once").assert_outcomes(passed=1)
    pytester.makepyfile(test_greet=BASIC.format(question="there"))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1, errors=0)  # the cause once, not again at teardown
    result.stdout.fnmatch_lines(
        [
            "*test_greeting.yaml: request 1 does not match the next recorded interaction (1 of 1)*",
            "*--- recorded interaction 1*",
            "*+++ live request*",
            "*-  content: world*",
            "*+  content: there*",
            "*The test then failed with:*",
            "*assert*",
        ]
    )


def test_unused_interactions_fail_at_teardown(pytester: pytest.Pytester) -> None:
    test = (
        AGENT
        + """
import os

def test_chat(agentrig_cassette):
    questions = ["a", "b"] if os.environ.get("BOTH") else ["a"]
    ask(agentrig_cassette(FunctionLLM(model)), *questions)
"""
    )
    pytester.makepyfile(test_chat=test)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BOTH", "1")
        pytester.runpytest("--agentrig-record-mode=once").assert_outcomes(passed=1)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*1 recorded interaction(s) never played:*", "*  2: user: 'b' -> 'Hello, b'*"]
    )


def test_the_marker_sets_path_and_mode(pytester: pytest.Pytester) -> None:
    test = (
        AGENT
        + """
@pytest.mark.agentrig_cassette("recorded/greeting.yaml", mode="once")
def test_marked(agentrig_cassette):
    ask(agentrig_cassette(FunctionLLM(model)), "you")
"""
    )
    pytester.makepyfile(test_marked=test)
    pytester.runpytest().assert_outcomes(passed=1)
    assert (pytester.path / "recorded" / "greeting.yaml").is_file()
    pytester.runpytest("--agentrig-record-mode=none").assert_outcomes(passed=1)


def test_new_episodes_from_the_command_line_appends(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_greet=BASIC.format(question="world"))
    pytester.runpytest("--agentrig-record-mode=once").assert_outcomes(passed=1)
    test = (
        AGENT
        + """
def test_greeting(agentrig_cassette):
    provider = agentrig_cassette(FunctionLLM(model))
    ask(provider, "world")
    ask(provider, "again")
"""
    )
    pytester.makepyfile(test_greet=test)
    pytester.runpytest("--agentrig-record-mode=new_episodes").assert_outcomes(passed=1)
    text = cassette_of(pytester, "test_greet", "test_greeting").read_text(encoding="utf-8")
    assert "content: Hello, again" in text
    pytester.runpytest().assert_outcomes(passed=1)


def test_parametrized_tests_get_their_own_cassettes(pytester: pytest.Pytester) -> None:
    test = (
        AGENT
        + """
@pytest.mark.parametrize("who", ["ann", "bo b"])
def test_hi(agentrig_cassette, who):
    ask(agentrig_cassette(FunctionLLM(model)), who)

class TestGroup:
    def test_in_class(self, agentrig_cassette):
        ask(agentrig_cassette(FunctionLLM(model)), "x")
"""
    )
    pytester.makepyfile(test_many=test)
    pytester.runpytest("--agentrig-record-mode=all").assert_outcomes(passed=3)
    names = sorted(p.name for p in (pytester.path / "cassettes" / "test_many").iterdir())
    assert names == ["TestGroup.test_in_class.yaml", "test_hi_ann.yaml", "test_hi_bo_b.yaml"]


def test_a_second_cassette_needs_its_own_path(pytester: pytest.Pytester) -> None:
    test = (
        AGENT
        + """
def test_two(agentrig_cassette):
    agentrig_cassette(FunctionLLM(model))
    with pytest.raises(Exception, match="already used by this test"):
        agentrig_cassette(FunctionLLM(model))
    other = agentrig_cassette(FunctionLLM(model), path="cassettes/other.yaml")
    ask(other, "x")
"""
    )
    pytester.makepyfile(test_two=test)
    pytester.runpytest("--agentrig-record-mode=once").assert_outcomes(passed=1)
    assert (pytester.path / "cassettes" / "other.yaml").is_file()


def test_the_marker_is_registered_for_strict_markers(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--strict-markers", "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.agentrig_cassette(path=None, *, mode=None*"])


def test_a_bad_record_mode_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_greet=BASIC.format(question="world"))
    result = pytester.runpytest("--agentrig-record-mode=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid choice: 'sometimes'*"])


def test_a_missing_cassette_fails_without_a_traceback_into_agentrig(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_greet=BASIC.format(question="world"))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E  *CassetteNotFoundError: cassette *test_greeting.yaml*"])
    result.stdout.no_fnmatch_line("*cassettes/providers.py*")
    result.stdout.no_fnmatch_line("*cassettes/fixture.py*")


@pytest.mark.parametrize(
    ("marker", "problem"),
    [
        (
            '"a.yaml", "b.yaml", mode="once"',
            "takes at most one positional argument (the path), got 2",
        ),
        ('patth="a.yaml", mode="once"', "unknown argument 'patth'; valid: path, mode, any_order"),
        ('"a.yaml", path="b.yaml", mode="once"', "the path is given twice"),
        ('"a.yaml", mode="sometimes"', "mode 'sometimes' is not a record mode; valid: none, once"),
    ],
)
def test_a_bad_marker_is_an_error_naming_the_marker(
    pytester: pytest.Pytester, marker: str, problem: str
) -> None:
    test = (
        AGENT
        + f"""
@pytest.mark.agentrig_cassette({marker})
def test_marked(agentrig_cassette):
    ask(agentrig_cassette(FunctionLLM(model)), "you")
"""
    )
    pytester.makepyfile(test_marked=test)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*@pytest.mark.agentrig_cassette: {problem}*"])
    assert not (pytester.path / "cassettes").exists()


def test_ids_that_map_to_one_default_cassette_are_an_error(pytester: pytest.Pytester) -> None:
    # "a b" and "a_b" become the same file name; the second test would replay the first's.
    test = (
        AGENT
        + """
@pytest.mark.parametrize("who", ["a b", "a_b"])
def test_hello(agentrig_cassette, who):
    ask(agentrig_cassette(FunctionLLM(model)), who)
"""
    )
    pytester.makepyfile(test_names=test)
    result = pytester.runpytest("--agentrig-record-mode=once")
    result.assert_outcomes(passed=1, errors=0, failed=1)
    result.stdout.fnmatch_lines(
        ["*both get the default cassette*test_hello_a_b.yaml*agentrig_cassette(path=...)*"]
    )
