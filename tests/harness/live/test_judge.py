"""The judge's verdict on a live trial: checks and ``never`` rules from the transcript, rubrics
by a judge model's votes (majority of passed or failed, a tie inconclusive)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from agentrig.fakes import FunctionLLM
from agentrig.fakes.llm import Turn, call, reply
from agentrig.harness.live.judge import (
    VERDICT_TOOL,
    CriterionResult,
    broken_never_rule,
    check_holds,
    judge_transcript,
    read_vote,
)
from agentrig.harness.live.transcript import AgentReply, CalledTool, Exchange, Transcript
from agentrig.harness.scenarios.live_model import CriterionSpec, LiveCheck
from agentrig.messages import ToolCall
from agentrig.state import InferenceRequest, InferenceResponse, LlmConfig


def _check(data: dict[str, Any]) -> LiveCheck:
    return LiveCheck.model_validate(data)


def _criteria(*data: dict[str, Any]) -> list[CriterionSpec]:
    return [CriterionSpec.model_validate(item) for item in data]


REFUNDED = Transcript(
    (
        Exchange("I want a refund.", AgentReply("Which order is it?")),
        Exchange(
            "Order A-1029.",
            AgentReply(
                "Your refund is on its way.",
                (
                    CalledTool("lookup_order", {"order_id": "A-1029"}, result="paid"),
                    CalledTool("issue_refund", {"order_id": "A-1029", "amount": 20}),
                ),
            ),
        ),
        Exchange("Thanks.", None),
    )
)


def test_a_tool_called_check_holds_for_a_call_with_at_least_its_arguments() -> None:
    assert check_holds(_check({"tool_called": "issue_refund(order_id=A-1029)"}), REFUNDED) == (
        True,
        "called issue_refund(order_id=A-1029)",
    )
    assert check_holds(_check({"tool_called": "issue_refund"}), REFUNDED) == (
        True,
        "called issue_refund()",
    )


def test_a_tool_called_check_that_fails_names_every_call_made() -> None:
    held, seen = check_holds(_check({"tool_called": "issue_refund(order_id=B-7)"}), REFUNDED)
    assert not held
    assert seen == (
        "expected a call issue_refund(order_id=B-7); the agent made "
        "lookup_order(order_id='A-1029'), issue_refund(order_id='A-1029', amount=20)"
    )
    held, seen = check_holds(_check({"tool_called": "lookup_order(order_id=A-1029)"}), Transcript())
    assert (held, seen) == (
        False,
        "expected a call lookup_order(order_id=A-1029); the agent made no tool calls",
    )
    # a call of another name with the same arguments does not count
    wrong_name = _check({"tool_called": "refund(order_id=A-1029)"})
    assert check_holds(wrong_name, REFUNDED)[0] is False


def test_a_final_response_check_reads_the_last_reply_only() -> None:
    last = _check({"final_response": {"contains": "on its way"}})
    assert check_holds(last, REFUNDED) == (True, "final response 'Your refund is on its way.'")
    first = _check({"final_response": {"contains": "Which order"}})
    assert check_holds(first, REFUNDED) == (False, "final response 'Your refund is on its way.'")
    long_reply = Transcript((Exchange("Hi", AgentReply("a" * 250)),))
    assert check_holds(first, long_reply) == (False, f"final response {'a' * 200!r}")


def test_a_said_check_reads_every_reply() -> None:
    said = _check({"said": {"contains": "Which order"}})
    assert check_holds(said, REFUNDED) == (True, "the agent said 'Which order is it?'")
    never_said = _check({"said": {"contains": "sorry"}})
    assert check_holds(never_said, REFUNDED) == (False, "no reply of the agent matched")
    long_reply = Transcript((Exchange("Hi", AgentReply("b" * 250)),))
    assert check_holds(_check({"said": {"contains": "b"}}), long_reply) == (
        True,
        f"the agent said {'b' * 200!r}",
    )


def test_the_first_broken_never_rule_fails_the_trial() -> None:
    criteria = _criteria(
        {"id": "refunded", "check": {"tool_called": "lookup_order"}},  # a check: not a rule
        {"id": "no_deletion", "never": {"tool_called": "delete_account"}},
        {"id": "no_refund", "never": {"tool_called": "issue_refund"}},
        {"id": "no_lookup", "never": {"tool_called": "lookup_order"}},
    )
    assert broken_never_rule(criteria, REFUNDED) == CriterionResult(
        "no_refund", "never", "failed", "broken: called issue_refund()"
    )
    assert broken_never_rule(criteria[:2], REFUNDED) is None


def _verdict(**arguments: Any) -> InferenceResponse:
    return InferenceResponse(tool_calls=(ToolCall(id="1", name=VERDICT_TOOL, arguments=arguments),))


def test_a_vote_is_read_from_the_verdict_tool() -> None:
    assert read_vote(_verdict(result=" Passed ", reason="fine")) == ("passed", "fine")
    assert read_vote(_verdict(result="failed")) == ("failed", "")
    assert read_vote(_verdict(reason="unsure")) == (
        "inconclusive",
        "the judge answered result ''",
    )
    assert read_vote(_verdict(result="maybe", reason="unsure")) == (
        "inconclusive",
        "the judge answered result 'maybe'",
    )
    other = ToolCall(id="0", name="note", arguments={"result": "failed"})
    verdict = ToolCall(id="1", name=VERDICT_TOOL, arguments={"result": "passed", "reason": "ok"})
    assert read_vote(InferenceResponse(tool_calls=(other, verdict))) == ("passed", "ok")


def test_a_vote_is_read_from_json_or_the_first_word_when_no_tool_was_called() -> None:
    def text(content: str) -> tuple[str, str]:
        return read_vote(InferenceResponse(content=content))

    assert text(' {"result": "FAILED", "reason": "it blamed the user"} ') == (
        "failed",
        "it blamed the user",
    )
    assert text('{"result": "passed"}') == ("passed", "")
    assert text("**Passed.** The agent apologised.") == (
        "passed",
        "**Passed.** The agent apologised.",
    )
    assert text("Inconclusive: too short") == ("inconclusive", "Inconclusive: too short")
    assert text('{"result": "maybe"}') == (
        "inconclusive",
        """the judge's answer decides nothing: '{"result": "maybe"}'""",
    )
    assert text('["passed"]') == (
        "inconclusive",
        """the judge's answer decides nothing: '["passed"]'""",
    )
    assert text("") == ("inconclusive", "the judge's answer decides nothing: ''")
    assert text("It passed. " + "x" * 200) == (
        "inconclusive",
        f"the judge's answer decides nothing: {('It passed. ' + 'x' * 200)[:120]!r}",
    )


def _judge(*votes: str, reasons: Sequence[str] = ()) -> FunctionLLM:
    """A judge model answering with ``votes`` in turn (a vote that is not a decision is sent as
    plain text)."""
    answers = iter(zip(votes, [*reasons, *[""] * len(votes)], strict=False))

    def answer(request: InferenceRequest) -> Turn:
        vote, reason = next(answers)
        if vote in {"passed", "failed", "inconclusive"}:
            return call(VERDICT_TOOL, result=vote, reason=reason or f"it {vote}")
        return reply(vote)

    return FunctionLLM(answer)


def _judged(
    criteria: Sequence[CriterionSpec],
    model: FunctionLLM | None,
    config: LlmConfig | None = None,
    transcript: Transcript = REFUNDED,
) -> tuple[CriterionResult, ...]:
    return asyncio.run(judge_transcript(criteria, transcript, model, config))


@pytest.mark.parametrize(
    ("votes", "outcome", "detail"),
    [
        (("passed", "passed", "failed"), "passed", "2 passed, 1 failed: it passed; it passed"),
        (("failed", "passed", "failed"), "failed", "2 failed, 1 passed: it failed; it failed"),
        (("passed", "failed"), "inconclusive", "1 passed, 1 failed: "),
        (
            ("passed", "inconclusive", "inconclusive"),
            "inconclusive",
            "1 passed, 2 inconclusive: it inconclusive; it inconclusive",
        ),
        (
            ("failed", "inconclusive", "inconclusive"),
            "inconclusive",
            "1 failed, 2 inconclusive: it inconclusive; it inconclusive",
        ),
        (
            ("passed", "passed", "inconclusive", "inconclusive"),
            "inconclusive",
            "2 passed, 2 inconclusive: it inconclusive; it inconclusive",
        ),
        (
            ("failed", "failed", "inconclusive", "inconclusive"),
            "inconclusive",
            "2 failed, 2 inconclusive: it inconclusive; it inconclusive",
        ),
        (("failed",), "failed", "1 failed: it failed"),
    ],
)
def test_a_rubric_is_decided_by_the_majority_of_passed_or_failed(
    votes: tuple[str, ...], outcome: str, detail: str
) -> None:
    criteria = _criteria({"id": "polite", "rubric": "the agent is polite", "votes": len(votes)})
    (result,) = _judged(criteria, _judge(*votes))
    assert result == CriterionResult("polite", "rubric", outcome, detail, votes)  # type: ignore[arg-type]


def test_a_rubric_detail_leaves_out_empty_reasons_and_is_cut_at_500_characters() -> None:
    criteria = _criteria({"id": "polite", "rubric": "the agent is polite", "votes": 3})
    (result,) = _judged(criteria, _judge("passed", "Passed", "passed"))
    assert result.detail == "3 passed: it passed; Passed; it passed"
    (result,) = _judged(criteria, _judge("passed", "passed", "failed", reasons=["x" * 600]))
    assert result.detail == "2 passed, 1 failed: " + ("x" * 600)[: 500 - 20]
    assert len(result.detail) == 500


def test_the_judge_model_is_asked_each_vote_with_the_criterion_and_the_transcript() -> None:
    criteria = _criteria({"id": "polite", "rubric": "the agent is polite", "votes": 2})
    judge = _judge("passed", "passed")
    config = LlmConfig(model="judge-1", temperature=0.0)
    _judged(criteria, judge, config)
    assert len(judge.requests) == 2
    request = judge.requests[0]
    system, user = request.messages
    assert system.role == "system"
    assert "against ONE criterion" in system.content
    assert f"calling {VERDICT_TOOL} with result passed" in system.content
    assert user.content == f"Criterion: the agent is polite\n\nTranscript:\n{REFUNDED.render()}"
    assert [tool.name for tool in request.tools] == [VERDICT_TOOL]
    assert request.tools[0].parameters["properties"]["result"]["enum"] == [
        "passed",
        "failed",
        "inconclusive",
    ]
    assert request.tools[0].parameters["required"] == ["result", "reason"]
    assert request.tool_choice == VERDICT_TOOL
    assert request.llm_config == config


def test_checks_and_never_rules_are_decided_from_the_transcript_in_the_criteria_order() -> None:
    criteria = _criteria(
        {"id": "polite", "rubric": "the agent is polite"},
        {"id": "refunded", "check": {"tool_called": "issue_refund(order_id=A-1029)"}},
        {"id": "no_deletion", "never": {"tool_called": "delete_account"}},
    )
    judge = _judge("passed")
    assert _judged(criteria, judge) == (
        CriterionResult("polite", "rubric", "passed", "1 passed: it passed", ("passed",)),
        CriterionResult("refunded", "check", "passed", "called issue_refund(order_id=A-1029)"),
        CriterionResult(
            "no_deletion",
            "never",
            "passed",
            "expected a call delete_account(); the agent made "
            "lookup_order(order_id='A-1029'), issue_refund(order_id='A-1029', amount=20)",
        ),
    )


@pytest.mark.parametrize(
    "failing",
    [
        {"id": "failing", "check": {"tool_called": "delete_account"}},
        {"id": "failing", "never": {"tool_called": "issue_refund"}},
    ],
)
def test_a_failed_check_or_rule_decides_and_the_judge_model_is_not_asked(
    failing: dict[str, Any],
) -> None:
    criteria = _criteria(
        {"id": "polite", "rubric": "the agent is polite", "votes": 3},
        failing,
        {"id": "kind", "rubric": "the agent is kind"},
    )
    judge = _judge()
    results = _judged(criteria, judge)
    assert judge.requests == ()
    assert [(r.id, r.outcome) for r in results] == [
        ("polite", "inconclusive"),
        ("failing", "failed"),
        ("kind", "inconclusive"),
    ]
    assert results[0] == CriterionResult(
        "polite", "rubric", "inconclusive", "not judged: the trial failed a check"
    )


def test_without_rubrics_no_judge_model_is_needed() -> None:
    criteria = _criteria({"id": "refunded", "check": {"tool_called": "issue_refund"}})
    assert _judged(criteria, None) == (
        CriterionResult("refunded", "check", "passed", "called issue_refund()"),
    )
