"""``check_expectation``: every ``expect:`` field, passing and failing, on real final states."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentState,
    Usage,
    UseGuards,
    UseLlmConfig,
    runtime_context,
)
from agentrig.fakes import (
    CallSpec,
    FakeClock,
    ScriptedLLM,
    ScriptedTool,
    SeededIds,
    ToolReply,
    Turn,
)
from agentrig.harness.checks import expectations
from agentrig.harness.checks.expectations import (
    BUFFER_HINT,
    Mismatch,
    check_expectation,
    executed_calls,
)
from agentrig.harness.checks.trajectory import Call
from agentrig.harness.scenarios import model as scenario_model
from agentrig.harness.scenarios.model import Expectation

FINAL_TEXT = "Paris is sunny; Oslo's service is down."


def run(script: list[Turn | str], *, max_steps: int | None = None) -> AgentState:
    """Run one turn of a real agent (scripted model, scripted weather tool) to its final state."""
    clock, ids = FakeClock(), SeededIds(5)
    weather = ScriptedTool(
        "get_weather",
        [
            ToolReply(when={"city": "Paris"}, returns="sunny, 21C"),
            ToolReply(when={"city": "Oslo"}, raises="service unavailable"),
        ],
        params={"city": "string", "units": "string?"},
    )
    builder = (
        AgentBuilder.base()
        .with_clock(clock)
        .with_ids(ids)
        .with_capability(UseLlmConfig(ScriptedLLM(script, clock=clock)))
        .with_tools([weather])
    )
    if max_steps is not None:
        builder.with_capability(UseGuards(max_steps=max_steps))
    with runtime_context(clock=clock, ids=ids):
        state = AgentState().with_user_message("Weather in Paris and Oslo?")
    return builder.build().execute(state)


def weather_call(city: str, **usage: Any) -> Turn:
    return Turn(
        calls=(CallSpec("get_weather", {"city": city, "units": "metric"}),), usage=Usage(**usage)
    )


@pytest.fixture(scope="module")
def failed() -> AgentState:
    """Two tool calls (Oslo fails), then a final answer: status failed, stop reason completed."""
    return run(
        [
            weather_call(
                "Paris", input_tokens=40, output_tokens=8, cache_read_tokens=5, cost=0.002
            ),
            weather_call("Oslo", input_tokens=50, output_tokens=9, reasoning_tokens=3, cost=0.003),
            Turn(text=FINAL_TEXT, usage=Usage(input_tokens=60, output_tokens=12, cost=0.005)),
        ]
    )


@pytest.fixture(scope="module")
def stopped() -> AgentState:
    """A steps_limit stop after one step: no final response."""
    return run([weather_call("Paris"), "never played"], max_steps=1)


def expect(**fields: Any) -> Expectation:
    return Expectation.model_validate(fields)


def only(expectation: Expectation, final: AgentState) -> Mismatch:
    mismatches = check_expectation(expectation, final)
    assert len(mismatches) == 1, mismatches
    return mismatches[0]


class TestTheRuns:
    def test_the_final_states_are_what_the_tests_assume(
        self, failed: AgentState, stopped: AgentState
    ) -> None:
        assert (str(failed.status()), str(failed.last_stop_reason())) == ("failed", "completed")
        assert failed.step_count() == 3
        assert failed.final_response().to_text() == FINAL_TEXT
        assert (str(stopped.status()), str(stopped.last_stop_reason())) == (
            "stopped",
            "steps_limit",
        )
        assert stopped.final_response().to_text() == ""


class TestEmpty:
    def test_nothing_expected_nothing_checked(self, failed: AgentState) -> None:
        assert check_expectation(Expectation(), failed) == []

    def test_everything_right_at_once(self, failed: AgentState) -> None:
        expectation = expect(
            status="failed",
            stop_reason="completed",
            final_response={"contains": "Paris is sunny"},
            steps=3,
            tool_calls={
                "mode": "strict",
                "calls": [
                    "get_weather(city=Paris, units=metric)",
                    "get_weather(city=Oslo, units=metric)",
                ],
            },
            messages=["user", "assistant"],
            sections={"execution_buffer": []},
            usage={"input": 150, "output": 29, "total": 179},
            cost={"max": 0.01},
            errors=["service unavailable"],
        )
        assert check_expectation(expectation, failed) == []

    def test_every_failure_is_reported(self, failed: AgentState) -> None:
        expectation = expect(status="completed", steps=2, usage={"total": 1}, errors=["nope"])
        assert [m.field for m in check_expectation(expectation, failed)] == [
            "status",
            "steps",
            "usage.total",
            "errors[0]",
        ]


class TestStatusAndStopReason:
    def test_status(self, failed: AgentState, stopped: AgentState) -> None:
        assert check_expectation(expect(status="failed"), failed) == []
        assert check_expectation(expect(status="stopped"), stopped) == []
        assert only(expect(status="completed"), failed) == Mismatch(
            "status", "status is failed", "completed", "failed"
        )

    def test_stop_reason(self, failed: AgentState, stopped: AgentState) -> None:
        assert check_expectation(expect(stop_reason="steps_limit"), stopped) == []
        assert only(expect(stop_reason="steps_limit"), failed) == Mismatch(
            "stop_reason", "stop reason is completed", "steps_limit", "completed"
        )

    def test_steps(self, failed: AgentState, stopped: AgentState) -> None:
        assert check_expectation(expect(steps=1), stopped) == []
        assert only(expect(steps=2), failed) == Mismatch("steps", "3 step(s) ran", 2, 3)

    def test_zero_steps_is_checked(self, failed: AgentState) -> None:
        assert only(expect(steps=0), failed).field == "steps"


class TestFinalResponse:
    @pytest.mark.parametrize(
        "spec",
        [
            FINAL_TEXT,
            {"equals": FINAL_TEXT},
            {"contains": "sunny"},
            {"regex": r"^Paris is \w+;.*down\.$"},
            {"empty": False},
        ],
        ids=["shorthand", "equals", "contains", "regex", "not-empty"],
    )
    def test_passes(self, failed: AgentState, spec: Any) -> None:
        assert check_expectation(expect(final_response=spec), failed) == []

    @pytest.mark.parametrize(
        ("spec", "wanted"),
        [
            ("Paris is sunny.", {"equals": "Paris is sunny."}),
            ({"equals": FINAL_TEXT.lower()}, {"equals": FINAL_TEXT.lower()}),
            ({"contains": "rainy"}, {"contains": "rainy"}),
            ({"regex": r"^Oslo"}, {"regex": r"^Oslo"}),
            ({"empty": True}, {"empty": True}),
        ],
        ids=["shorthand", "equals", "contains", "regex", "empty"],
    )
    def test_fails(self, failed: AgentState, spec: Any, wanted: dict[str, Any]) -> None:
        assert only(expect(final_response=spec), failed) == Mismatch(
            "final_response", "final response does not match", wanted, FINAL_TEXT
        )

    def test_no_final_response(self, stopped: AgentState) -> None:
        assert check_expectation(expect(final_response={"empty": True}), stopped) == []
        assert only(expect(final_response={"contains": "Paris"}), stopped) == Mismatch(
            "final_response", "final response does not match", {"contains": "Paris"}, ""
        )


PARIS = "get_weather(city=Paris, units=metric)"
OSLO = "get_weather(city=Oslo, units=metric)"
PARIS_STR = "get_weather(city='Paris', units='metric')"
OSLO_STR = "get_weather(city='Oslo', units='metric')"


class TestToolCalls:
    def test_executed_calls_in_order(self, failed: AgentState) -> None:
        assert executed_calls(failed) == [
            Call("get_weather", {"city": "Paris", "units": "metric"}),
            Call("get_weather", {"city": "Oslo", "units": "metric"}),
        ]

    @pytest.mark.parametrize(
        "spec",
        [
            {"calls": [PARIS, OSLO]},
            {"mode": "unordered", "calls": [OSLO, PARIS]},
            {"mode": "subset", "calls": [OSLO, PARIS, "get_weather(city=Rome)"]},
            {"mode": "superset", "calls": [OSLO]},
            {"args": "partial", "calls": ["get_weather(city=Paris)", "get_weather()"]},
            {
                "mode": "superset",
                "calls": [{"name": "get_weather", "args": {"city": "Oslo", "units": "metric"}}],
            },
        ],
        ids=["strict", "unordered", "subset", "superset", "partial", "mapping"],
    )
    def test_passes(self, failed: AgentState, spec: dict[str, Any]) -> None:
        assert check_expectation(expect(tool_calls=spec), failed) == []

    def test_strict_order(self, failed: AgentState) -> None:
        mismatch = only(expect(tool_calls={"calls": [OSLO, PARIS]}), failed)
        assert mismatch == Mismatch(
            "tool_calls",
            f"tool calls (strict, exact args): call 1: expected {OSLO_STR}, got {PARIS_STR}",
            [OSLO_STR, PARIS_STR],
            [PARIS_STR, OSLO_STR],
        )

    def test_exact_args_by_default(self, failed: AgentState) -> None:
        mismatch = only(
            expect(tool_calls={"mode": "superset", "calls": ["get_weather(city=Oslo)"]}), failed
        )
        assert mismatch.field == "tool_calls"
        assert mismatch.message == (
            "tool calls (superset, exact args): missing get_weather(city='Oslo')"
        )
        assert (mismatch.expected, mismatch.observed) == (
            ["get_weather(city='Oslo')"],
            [PARIS_STR, OSLO_STR],
        )

    def test_unexpected_call(self, failed: AgentState) -> None:
        mismatch = only(expect(tool_calls={"mode": "subset", "calls": [PARIS]}), failed)
        assert mismatch.message == f"tool calls (subset, exact args): unexpected {OSLO_STR}"

    def test_no_calls_expected(self, failed: AgentState, stopped: AgentState) -> None:
        assert only(expect(tool_calls={"calls": []}), failed).message == (
            "tool calls (strict, exact args): expected 0 call(s), got 2"
        )
        assert check_expectation(expect(tool_calls={"calls": [PARIS]}), stopped) == []


class TestMessages:
    def test_passes(self, failed: AgentState) -> None:
        spec = [
            {"role": "user", "content": "Weather in Paris and Oslo?"},
            {"role": "assistant", "contains": "sunny"},
        ]
        assert check_expectation(expect(messages=spec), failed) == []

    def test_count_differs(self, failed: AgentState) -> None:
        mismatch = only(expect(messages=["user"]), failed)
        assert mismatch == Mismatch(
            "messages",
            "2 message(s), expected 1",
            [{"role": "user"}],
            [
                {"role": "user", "content": "Weather in Paris and Oslo?"},
                {"role": "assistant", "content": FINAL_TEXT},
            ],
        )

    @pytest.mark.parametrize(
        ("spec", "problem"),
        [
            ("tool", "role is assistant, expected tool" + BUFFER_HINT),
            ({"role": "assistant", "content": "Paris is sunny."}, "content differs"),
            ({"role": "assistant", "contains": "rain"}, "content does not contain 'rain'"),
        ],
    )
    def test_item_differs(self, failed: AgentState, spec: Any, problem: str) -> None:
        mismatch = only(expect(messages=["user", spec]), failed)
        wanted = {"role": spec} if isinstance(spec, str) else spec
        assert mismatch == Mismatch(
            "messages[1]", problem, wanted, {"role": "assistant", "content": FINAL_TEXT}
        )

    def test_every_differing_item_is_reported(self, failed: AgentState) -> None:
        mismatches = check_expectation(expect(messages=["assistant", "user"]), failed)
        assert [(m.field, m.message) for m in mismatches] == [
            ("messages[0]", "role is user, expected assistant"),
            ("messages[1]", "role is assistant, expected user"),
        ]

    def test_expecting_the_tool_trace_in_messages_says_where_it_went(
        self, failed: AgentState
    ) -> None:
        spec = ["user", "assistant", "tool", "assistant", "tool", "assistant"]
        mismatch = only(expect(messages=spec), failed)
        assert mismatch.message == "2 message(s), expected 6" + BUFFER_HINT
        assert "execution buffer, which the end of the execution cleared" in mismatch.message
        one_item = only(expect(messages=["user", "tool"]), failed)
        assert one_item.message == "role is assistant, expected tool" + BUFFER_HINT

    def test_no_hint_when_the_trace_is_not_the_question(self, failed: AgentState) -> None:
        assert only(expect(messages=["user"]), failed).message == "2 message(s), expected 1"
        wrong = only(expect(messages=["user", "user"]), failed)
        assert wrong.message == "role is assistant, expected user"

    def test_stopped_run_has_no_answer(self, stopped: AgentState) -> None:
        assert check_expectation(expect(messages=["user"]), stopped) == []


class TestSections:
    def test_passes(self, failed: AgentState) -> None:
        spec = {"messages": ["user", "assistant"], "execution_buffer": [], "summary": []}
        assert check_expectation(expect(sections=spec), failed) == []

    def test_buffer_not_empty(self, failed: AgentState) -> None:
        mismatch = only(expect(sections={"execution_buffer": ["assistant", "tool"]}), failed)
        assert mismatch == Mismatch(
            "sections.execution_buffer",
            "0 message(s), expected 2",
            [{"role": "assistant"}, {"role": "tool"}],
            [],
        )

    def test_item_in_a_section(self, failed: AgentState) -> None:
        mismatch = only(
            expect(sections={"messages": ["user", {"role": "assistant", "content": "x"}]}), failed
        )
        assert (mismatch.field, mismatch.message) == ("sections.messages[1]", "content differs")
        assert mismatch.expected == {"role": "assistant", "content": "x"}
        assert mismatch.observed == {"role": "assistant", "content": FINAL_TEXT}


class TestUsageAndCost:
    @pytest.mark.parametrize(
        ("key", "observed"),
        [
            ("input", 150),
            ("output", 29),
            ("cache_read", 5),
            ("cache_write", 0),
            ("reasoning", 3),
            ("total", 179),
        ],
    )
    def test_each_counter(self, failed: AgentState, key: str, observed: int) -> None:
        assert check_expectation(expect(usage={key: observed}), failed) == []
        assert only(expect(usage={key: observed + 1}), failed) == Mismatch(
            f"usage.{key}", f"usage {key} is {observed}", observed + 1, observed
        )

    def test_only_given_counters_are_checked(self, failed: AgentState) -> None:
        mismatches = check_expectation(expect(usage={"input": 0, "total": 0}), failed)
        assert [m.field for m in mismatches] == ["usage.input", "usage.total"]

    def test_cost_equals(self, failed: AgentState) -> None:
        assert check_expectation(expect(cost=0.01), failed) == []
        assert check_expectation(expect(cost={"equals": 0.01}), failed) == []
        mismatch = only(expect(cost=0.02), failed)
        assert (mismatch.field, mismatch.expected) == ("cost", {"equals": 0.02})
        assert mismatch.observed == pytest.approx(0.01)
        assert mismatch.message.startswith("cost is 0.01")

    def test_cost_max(self, failed: AgentState) -> None:
        assert check_expectation(expect(cost={"max": 0.01}), failed) == []  # inclusive
        assert check_expectation(expect(cost={"max": 1.0}), failed) == []
        mismatch = only(expect(cost={"max": 0.005}), failed)
        assert (mismatch.field, mismatch.expected) == ("cost", {"max": 0.005})
        assert mismatch.observed == pytest.approx(0.01)

    def test_no_usage(self, stopped: AgentState) -> None:
        assert check_expectation(expect(usage={"total": 0}, cost=0), stopped) == []


class TestErrors:
    def test_each_expected_error_is_found(self, failed: AgentState) -> None:
        assert check_expectation(expect(errors=["service unavailable", "unavail"]), failed) == []

    def test_missing_error(self, failed: AgentState) -> None:
        mismatch = only(expect(errors=["service unavailable", "timeout"]), failed)
        assert mismatch == Mismatch(
            "errors[1]",
            "no recorded error contains 'timeout'",
            "timeout",
            ["service unavailable"],
        )

    def test_no_errors_recorded(self, stopped: AgentState) -> None:
        assert only(expect(errors=["anything"]), stopped).observed == []
        assert check_expectation(expect(errors=[]), stopped) == []


class TestStrictValues:
    def test_a_boolean_argument_is_not_a_number(self) -> None:
        final = run([Turn(calls=(CallSpec("get_weather", {"city": True}),)), "done"])
        assert executed_calls(final) == [Call("get_weather", {"city": True})]
        for wanted in ("get_weather(city=1)", "get_weather(city=1.0)"):
            mismatch = only(expect(tool_calls={"calls": [wanted]}), final)
            assert mismatch.field == "tool_calls"
        partial = {"args": "partial", "calls": ["get_weather(city=1)"]}
        assert only(expect(tool_calls=partial), final).field == "tool_calls"
        assert (
            check_expectation(expect(tool_calls={"calls": ["get_weather(city=true)"]}), final) == []
        )

    def test_an_integer_matches_the_same_float(self) -> None:
        final = run([Turn(calls=(CallSpec("get_weather", {"city": [1, {"n": 2.0}]}),)), "done"])
        same = {"calls": [{"name": "get_weather", "args": {"city": [1.0, {"n": 2}]}}]}
        assert check_expectation(expect(tool_calls=same), final) == []
        nested_bool = {"calls": [{"name": "get_weather", "args": {"city": [True, {"n": 2}]}}]}
        assert only(expect(tool_calls=nested_bool), final).field == "tool_calls"


class TestSectionNames:
    def test_an_unknown_section_is_a_mismatch_not_a_pass(self, failed: AgentState) -> None:
        mismatch = only(expect(sections={"execution_bufer": []}), failed)
        assert mismatch.field == "sections.execution_bufer"
        assert mismatch.message == (
            "the state has no section 'execution_bufer' (did you mean 'execution_buffer'?); "
            "sections: summary, buffer, messages, execution_buffer"
        )

    def test_a_standard_section_that_was_never_written_is_empty(self, failed: AgentState) -> None:
        assert check_expectation(expect(sections={"buffer": []}), failed) == []


class TestNoErrors:
    def test_an_empty_list_means_no_error_was_recorded(self, failed: AgentState) -> None:
        mismatch = only(expect(errors=[]), failed)
        assert mismatch == Mismatch(
            "errors",
            "expected no recorded error, found 1: service unavailable",
            [],
            ["service unavailable"],
        )


def test_a_backtracking_regex_fails_its_check_instead_of_hanging(
    bounded: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the search's limit, and the message's, made short: the limit itself is a constant; what
    # is checked is that the search stops at it (it would take hours) and the check says so
    for module in (scenario_model, expectations):
        monkeypatch.setattr(module, "REGEX_TIMEOUT_S", 0.2)
    final = run(["a" * 5000 + "b"])
    mismatch = bounded(lambda: only(expect(final_response={"regex": "(a+)+$"}), final))
    assert (mismatch.field, mismatch.path) == ("final_response", ("final_response", "regex"))
    assert "regex '(a+)+$' gave up after 0.2 s" in mismatch.message
    assert "5,001-character final response" in mismatch.message


class TestToolResults:
    RETURNED = [
        {"tool": "get_weather", "content": "sunny, 21C", "is_error": False},
        {
            "tool": "get_weather",
            "content": "Error in tool call: service unavailable",
            "is_error": True,
        },
    ]

    def test_results_as_returned_pass(self, failed: AgentState) -> None:
        results = [
            {"tool": "get_weather", "content": "sunny, 21C", "is_error": False},
            {"tool": "get_weather", "contains": "unavailable", "is_error": True},
        ]
        assert check_expectation(expect(tool_results=results), failed) == []

    def test_a_count_that_differs_shows_every_result(self, failed: AgentState) -> None:
        mismatch = only(expect(tool_results=[{"tool": "get_weather"}]), failed)
        assert mismatch == Mismatch(
            "tool_results",
            "2 tool result(s) were returned, 1 expected",
            [{"tool": "get_weather"}],
            self.RETURNED,
        )
        assert mismatch.path == ("tool_results",)

    @pytest.mark.parametrize(
        ("index", "spec", "problem"),
        [
            (0, {"tool": "lookup"}, "answers get_weather, not lookup"),
            (0, {"content": "sunny"}, "content differs"),
            (1, {"contains": "rain"}, "does not contain 'rain'"),
            (0, {"is_error": True}, "is not an error"),
            (1, {"is_error": False}, "is an error"),
        ],
    )
    def test_each_result_is_held_to_its_own_spec(
        self, failed: AgentState, index: int, spec: dict[str, Any], problem: str
    ) -> None:
        results: list[dict[str, Any]] = [{}, {}]
        results[index] = spec
        mismatch = only(expect(tool_results=results), failed)
        assert mismatch == Mismatch(
            f"tool_results[{index}]",
            f"tool result {index + 1}: {problem}",
            spec,
            self.RETURNED[index],
        )
        assert mismatch.path == ("tool_results", index)
