"""The scenario models used from Python: rules, helpers, shorthand call fields."""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum
from typing import Any, get_args

import pytest
from pydantic import ValidationError

import agentrig
from agentrig.harness.scenarios.model import (
    AgentSpec,
    CostExpect,
    Expectation,
    FinishReasonName,
    HookSpec,
    HookTriggerName,
    InvariantSelection,
    MessageExpect,
    ModelReply,
    RoleName,
    RuledModel,
    Scenario,
    ScenarioModel,
    ScenarioTurn,
    SourceLocation,
    Status,
    StopReasonName,
    TextMatch,
    ToolCallSpec,
    ToolReplySpec,
    ToolSpec,
    TraceModeName,
)


def _locs(error: ValidationError) -> list[tuple[Any, ...]]:
    return [tuple(item["loc"]) for item in error.errors()]


def _rule_locs(model: type[Any], data: dict[str, Any]) -> list[tuple[Any, ...]]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return _locs(caught.value)


def test_a_call_field_takes_shorthand_or_mapping() -> None:
    reply = ModelReply.model_validate({"calls": ["f(a=1)", {"name": "g", "id": "c1"}]})
    assert reply.tool_calls == (
        ToolCallSpec(name="f", args={"a": 1}),
        ToolCallSpec(name="g", id="c1"),
    )
    assert ModelReply.model_validate({"call": "h()"}).tool_calls == (ToolCallSpec(name="h"),)
    assert ModelReply(say="hi").tool_calls == ()


# --- rules ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "locs"),
    [
        ({}, [()]),
        ({"call": "f()", "calls": ["g()"]}, [("calls",)]),
        ({"error": "boom", "say": "hi", "cost": 0.1}, [("say",), ("cost",)]),
        ({"say": "hi", "retryable": True}, [("retryable",)]),
        ({"calls": []}, [("calls",)]),
    ],
)
def test_model_reply_rules(data: dict[str, Any], locs: list[tuple[Any, ...]]) -> None:
    assert _rule_locs(ModelReply, data) == locs


def test_an_error_reply_may_be_retryable() -> None:
    reply = ModelReply(error="rate limited", retryable=True, latency=2)
    assert reply.retryable
    assert reply.latency == 2.0


def test_tool_reply_has_exactly_one_outcome() -> None:
    assert _rule_locs(ToolReplySpec, {"when": {"a": 1}}) == [()]
    assert _rule_locs(ToolReplySpec, {"return": 1, "raise": "x", "stop": "y"}) == [
        ("raise",),
        ("stop",),
    ]
    assert ToolReplySpec.model_validate({"return": None}).outcome == "return"
    assert ToolReplySpec(raise_="boom").outcome == "raise"
    assert ToolReplySpec(stop="enough").outcome == "stop"


def test_tool_reply_matches_partially() -> None:
    reply = ToolReplySpec(when={"city": "Paris"}, return_="sunny")
    assert reply.matches({"city": "Paris", "days": 2})
    assert not reply.matches({"city": "Oslo"})
    assert not reply.matches({})
    assert ToolReplySpec(return_=1).matches({"anything": True})


def test_tool_rules() -> None:
    sequence = {"mode": "sequence", "replies": [{"when": {"a": 1}, "return": 1}]}
    assert _rule_locs(ToolSpec, sequence) == [("replies", 0, "when")]
    unreachable = {"replies": [{"return": 1}, {"when": {"a": 1}, "return": 2}]}
    assert _rule_locs(ToolSpec, unreachable) == [("replies", 1)]
    typo = {"params": {"city": "string"}, "replies": [{"when": {"ctiy": "x"}, "return": 1}]}
    assert _rule_locs(ToolSpec, typo) == [("replies", 0, "when", "ctiy")]


def test_tool_parameters_schema() -> None:
    tool = ToolSpec.model_validate(
        {"params": {"city": "string", "days": "integer?"}, "replies": [{"return": 1}]}
    )
    assert tool.parameters_schema() == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    }


@pytest.mark.parametrize(
    ("data", "locs"),
    [
        ({"on": "after_step", "action": "block_tool"}, [("on",)]),
        ({"on": "before_step", "action": "stop", "tool": "t"}, [("tool",)]),
        ({"on": "before_step", "action": "raise", "reason": "error"}, [("reason",)]),
        ({"on": "before_step", "action": "set_metadata"}, [()]),
        ({"on": "before_step", "action": "stop", "key": "k"}, [("key",)]),
    ],
)
def test_hook_rules(data: dict[str, Any], locs: list[tuple[Any, ...]]) -> None:
    assert _rule_locs(HookSpec, data) == locs


def test_agent_rules_point_at_the_offending_item() -> None:
    data = {
        "tools": {
            "t": {"replies": [{"return": 1}]},
            "spawn_subagent": {"replies": [{"return": 1}]},
        },
        "subagents": {"r": {"tools": ["t", "nope"], "deny": ["spawn_subagent", "gone"]}},
    }
    assert _rule_locs(AgentSpec, data) == [
        ("tools", "spawn_subagent"),
        ("subagents", "r", "tools", 1),
        ("subagents", "r", "deny", 1),
    ]
    assert _rule_locs(AgentSpec, {"subagent_policy": {"max_depth": 2}}) == [("subagent_policy",)]


def test_text_match_rules_and_semantics() -> None:
    assert _rule_locs(TextMatch, {}) == [()]
    assert _rule_locs(TextMatch, {"equals": "a", "contains": "b"}) == [()]
    assert _rule_locs(TextMatch, {"regex": "("}) == [("regex",)]
    assert TextMatch(equals="a").matches("a")
    assert not TextMatch(equals="a").matches("ab")
    assert TextMatch(contains="b").matches("abc")
    assert TextMatch(regex=r"\d+").matches("x42")
    assert TextMatch(empty=True).matches("")
    assert TextMatch(empty=False).matches("x")
    assert not TextMatch(empty=False).matches("")


def test_final_response_text_means_equals() -> None:
    expectation = Expectation.model_validate({"final_response": "done", "cost": 0.5})
    assert expectation.final_response == TextMatch(equals="done")
    assert expectation.cost == CostExpect(equals=0.5)


def test_cost_expectation() -> None:
    assert _rule_locs(CostExpect, {}) == [()]
    assert _rule_locs(CostExpect, {"equals": 1, "max": 2}) == [()]
    assert CostExpect(equals=0.001).matches(0.001 + 1e-10)
    assert not CostExpect(equals=0.001).matches(0.0011)
    assert CostExpect(max=0.01).matches(0.01)
    assert not CostExpect(max=0.01).matches(0.02)


def test_message_expectations() -> None:
    expectation = Expectation.model_validate(
        {"messages": ["user", {"role": "assistant", "contains": "hi"}]}
    )
    assert expectation.messages == (
        MessageExpect(role="user"),
        MessageExpect(role="assistant", contains="hi"),
    )
    assert _rule_locs(MessageExpect, {"role": "user", "content": "a", "contains": "b"}) == [
        ("contains",)
    ]


def test_turn_and_invariant_rules() -> None:
    turn = {"user": "hi", "cancel": "before", "model": [{"say": "never"}]}
    assert _rule_locs(ScenarioTurn, turn) == [("model",)]
    assert (
        ScenarioTurn.model_validate({"user": "hi", "cancel": {"after_step": 2}}).cancel is not None
    )
    assert _rule_locs(InvariantSelection, {"only": ["a"], "exclude": ["b"]}) == [("exclude",)]


def test_strict_scalars_reject_yaml_surprises() -> None:
    assert _rule_locs(ScenarioTurn, {"user": True}) == [("user",)]
    assert _rule_locs(ModelReply, {"say": "x", "latency": "1"}) == [("latency",)]
    assert _rule_locs(Expectation, {"steps": True}) == [("steps",)]


def test_deadline_needs_a_timezone() -> None:
    scenario = {"name": "x", "turns": [{"user": "u"}]}
    for deadline in ("2026-01-01T00:05:00", 1_700_000_000):
        agent = {"budget": {"deadline": deadline}}
        assert _rule_locs(Scenario, {**scenario, "agent": agent}) == [
            ("agent", "budget", "deadline")
        ]


# --- models as values -------------------------------------------------------------------------


def _scenario() -> Scenario:
    return Scenario.model_validate(
        {"name": "s", "turns": [{"user": "hi", "model": [{"say": "hello"}]}]}
    )


def test_models_are_frozen() -> None:
    scenario = _scenario()
    with pytest.raises(ValidationError):
        scenario.name = "other"  # type: ignore[misc]


def test_where_a_model_was_written_takes_no_part_in_equality() -> None:
    located, plain = _scenario(), _scenario()
    located._bind_source(SourceLocation("a.yaml", 1, 1))
    assert located == plain
    assert located.source == SourceLocation("a.yaml", 1, 1)
    assert plain.source is None
    assert located.model_copy(update={"description": "d"}).source == located.source
    assert located != plain.model_copy(update={"name": "t"})


def test_source_location_reads_as_path_and_line() -> None:
    assert str(SourceLocation("foo.scenario.yaml", 41, 9)) == "foo.scenario.yaml:41"


def test_defaults_are_not_shared() -> None:
    assert _scenario().turns[0].expect is not _scenario().turns[0].expect
    assert _scenario().agent is not _scenario().agent


def test_scenario_needs_a_turn_and_a_good_name() -> None:
    assert _rule_locs(Scenario, {"name": "Bad Name", "turns": []}) == [("name",), ("turns",)]


def test_a_reply_when_compares_as_json_a_boolean_is_not_a_number() -> None:
    reply = ToolReplySpec.model_validate(
        {"when": {"flag": True, "items": [1, {"x": 2}]}, "return": 1}
    )
    assert reply.matches({"flag": True, "items": [1.0, {"x": 2}]})
    assert not reply.matches({"flag": 1, "items": [1, {"x": 2}]})
    assert not reply.matches({"flag": True, "items": [True, {"x": 2}]})


@pytest.mark.parametrize(
    ("names", "values"),
    [
        (FinishReasonName, list(agentrig.FinishReason)),
        (TraceModeName, list(agentrig.TraceMode)),
        (HookTriggerName, list(agentrig.HookTrigger)),
        (RoleName, list(agentrig.Role)),
        (StopReasonName, list(agentrig.StopReason)),
        (Status, [status for status in agentrig.ExecutionStatus if status.is_terminal()]),
    ],
    ids=["finish_reason", "trace_mode", "hook_trigger", "role", "stop_reason", "status"],
)
def test_the_format_names_every_value_of_the_runtime_enum(names: Any, values: list[Enum]) -> None:
    assert list(get_args(names)) == [value.value for value in values]


# --- simulation: repeat, mixture, logprobs ------------------------------------------------------


def _problems(model: type[Any], data: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The locations of ``data``'s problems, without the length errors pydantic adds to a
    list whose items failed (the loader leaves them out too)."""
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return [
        tuple(item["loc"])
        for item in caught.value.errors()
        if not (item["type"] == "too_short" and item["input"])
    ]


def test_only_the_last_reply_of_a_script_may_repeat() -> None:
    repeat, plain = {"say": "a", "repeat": True}, {"say": "b"}
    assert ScenarioTurn.model_validate({"user": "hi", "model": [plain, repeat]}).model[-1].repeat
    assert _problems(ScenarioTurn, {"user": "hi", "model": [repeat, plain, plain]}) == [
        ("model", 0, "repeat")
    ]
    branch = {"weight": 1, "model": [plain, repeat, plain]}
    assert _problems(ScenarioTurn, {"user": "hi", "mixture": [branch]}) == [
        ("mixture", 0, "model", 1, "repeat")
    ]
    subagent = {"model": [repeat, plain]}
    assert _problems(AgentSpec, {"subagents": {"helper": subagent}}) == [
        ("subagents", "helper", "model", 0, "repeat")
    ]
    with pytest.raises(ValidationError, match="only the last reply may repeat: reply 1 of 3"):
        ScenarioTurn.model_validate({"user": "hi", "model": [repeat, plain, plain]})


def test_mixture_rules_name_the_field() -> None:
    branch = {"weight": 1, "model": [{"say": "a"}]}
    both = {"user": "hi", "model": [{"say": "b"}], "mixture": [branch]}
    assert _problems(ScenarioTurn, both) == [("mixture",)]
    # model: [] written beside a mixture is still two scripts
    assert _problems(ScenarioTurn, {**both, "model": []}) == [("mixture",)]
    assert _problems(ScenarioTurn, {"user": "hi", "mixture": []}) == [("mixture",)]
    zero = {"user": "hi", "mixture": [branch, {**branch, "weight": 0}]}
    assert _problems(ScenarioTurn, zero) == [("mixture", 1, "weight")]
    for bad in (-1, float("inf"), float("nan"), "1", True):
        turn = {"user": "hi", "mixture": [{**branch, "weight": bad}]}
        assert _problems(ScenarioTurn, turn) == [("mixture", 0, "weight")], bad
    empty = {"user": "hi", "mixture": [{"weight": 1, "model": []}]}
    assert _problems(ScenarioTurn, empty) == [("mixture", 0, "model")]
    twice = {"user": "hi", "mixture": [{**branch, "label": "x"}, {**branch, "label": "x"}]}
    assert _problems(ScenarioTurn, twice) == [("mixture", 1, "label")]
    huge = {"user": "hi", "mixture": [{**branch, "weight": 1e308}, {**branch, "weight": 1e308}]}
    assert _problems(ScenarioTurn, huge) == [("mixture",)]
    cancelled = {"user": "hi", "cancel": "before", "mixture": [branch]}
    assert _problems(ScenarioTurn, cancelled) == [("mixture",)]
    assert _problems(ScenarioTurn, {"user": "hi", "seed": 3}) == [("seed",)]
    assert _problems(ScenarioTurn, {"user": "hi", "mixture": [branch], "seed": 1.0}) == [("seed",)]
    no_mixture = {"name": "s", "seed": 3, "turns": [{"user": "hi"}]}
    assert _problems(Scenario, no_mixture) == [("seed",)]


def test_mixture_branches_are_named_and_their_weights_normalised() -> None:
    turn = ScenarioTurn.model_validate(
        {
            "user": "hi",
            "mixture": [
                {"weight": 3, "label": "right", "model": [{"say": "a"}]},
                {"weight": 1, "model": [{"say": "b"}]},
            ],
        }
    )
    assert turn.mixture is not None
    assert [b.name(i) for i, b in enumerate(turn.mixture)] == ["right", "branch 2"]
    assert turn.branch_shares() == (0.75, 0.25)
    assert [turn.branch_at(d) for d in (0.0, 0.7499, 0.75, 0.9999)] == [0, 0, 1, 1]
    assert ScenarioTurn(user="hi").branch_at(0.5) is None
    assert ScenarioTurn(user="hi").branch_shares() == ()


def test_logprob_rules_name_the_field() -> None:
    def reply(**fields: Any) -> dict[str, Any]:
        return {"say": "Yes", "logprobs": [{"token": "Yes", "logprob": -0.1}], **fields}

    parsed = ModelReply.model_validate(
        reply(logprobs=[{"token": "Yes", "logprob": -0.1, "top": {"No": -3, "Yes": -0.1}}])
    )
    assert parsed.logprobs is not None
    assert parsed.logprobs[0].ranked() == (("Yes", -0.1), ("No", -3.0))
    assert _problems(ModelReply, reply(logprobs=[{"token": "Yes", "logprob": 0.2}])) == [
        ("logprobs", 0, "logprob")
    ]
    positive_top = [{"token": "Yes", "logprob": -1, "top": {"No": 0.5}}]
    assert _problems(ModelReply, reply(logprobs=positive_top)) == [("logprobs", 0, "top", "No")]
    assert _problems(ModelReply, reply(logprobs=[])) == [("logprobs",)]
    assert _problems(ModelReply, reply(say="Yes!")) == [("logprobs",)]
    assert _problems(ModelReply, {**reply(), "say": None, "call": "f()"}) == [("logprobs",)]
    error = {"error": "down", "logprobs": [{"token": "x", "logprob": -1}]}
    assert _problems(ModelReply, error) == [("logprobs",)]
    status = {**reply(), "say": None, "fault": {"status": 500}}
    assert _problems(ModelReply, status) == [("logprobs",)]
    with pytest.raises(ValidationError, match="the tokens spell 'Yes', not the say text 'Yes!'"):
        ModelReply.model_validate(reply(say="Yes!"))


def test_a_model_with_rules_runs_them_and_must_say_so() -> None:
    class Pair(RuledModel):
        low: int
        high: int

        def _problems(self) -> Iterator[tuple[tuple[str | int, ...], str]]:
            if self.low > self.high:
                yield ("low",), "low must not exceed high"

    assert Pair(low=1, high=2).high == 2
    with pytest.raises(ValidationError) as caught:
        Pair(low=3, high=2)
    assert _locs(caught.value) == [("low",)]
    with pytest.raises(TypeError, match="derive it from RuledModel"):

        class Unchecked(ScenarioModel):  # its rules would never run
            low: int

            def _problems(self) -> Iterator[tuple[tuple[str | int, ...], str]]:
                yield ("low",), "never"
