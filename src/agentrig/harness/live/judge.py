"""Judging a live trial: deterministic criteria first, from the transcript; then each rubric,
by a judge model's votes (majority of passed / failed, a tie inconclusive). ``never`` rules are
checked after every agent reply and end the trial at once when broken."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentrig.drivers.provider import AsyncInferenceProvider
from agentrig.harness.checks.trajectory import partial_args
from agentrig.harness.live.transcript import Transcript
from agentrig.harness.scenarios.live_model import CriterionSpec, LiveCheck
from agentrig.messages import Message, Messages
from agentrig.state import InferenceRequest, InferenceResponse, LlmConfig
from agentrig.state.inference import ToolSchema

__all__ = [
    "VERDICT_TOOL",
    "CriterionResult",
    "Decision",
    "broken_never_rule",
    "check_holds",
    "judge_transcript",
    "read_vote",
]

Decision = Literal["passed", "failed", "inconclusive"]
VERDICT_TOOL = "verdict"
_DECISIONS: tuple[Decision, ...] = ("passed", "failed", "inconclusive")

_JUDGE_PROMPT = (
    "You judge a conversation between a user and an AI assistant against ONE criterion. "
    "Judge only the criterion, from what the transcript shows; do not judge the user. Answer "
    f"by calling {VERDICT_TOOL} with result passed (the criterion holds), failed (it does "
    "not) or inconclusive (the transcript cannot tell), and a one-sentence reason."
)
_VERDICT_SCHEMA = ToolSchema(
    name=VERDICT_TOOL,
    description="Record your verdict on the criterion.",
    parameters={
        "type": "object",
        "properties": {
            "result": {"type": "string", "enum": list(_DECISIONS)},
            "reason": {"type": "string"},
        },
        "required": ["result", "reason"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True, slots=True)
class CriterionResult:
    """How one criterion was decided: its outcome, why, and the judge's votes (rubrics)."""

    id: str
    kind: str
    outcome: Decision
    detail: str
    votes: tuple[Decision, ...] = ()


def check_holds(check: LiveCheck, transcript: Transcript) -> tuple[bool, str]:
    """Whether ``check`` holds of ``transcript``, with what was seen."""
    if check.tool_called is not None:
        wanted = check.tool_called
        calls = transcript.tool_calls()
        for call in calls:
            if call.name == wanted.name and partial_args(wanted.args, call.arguments):
                return True, f"called {wanted.shorthand()}"
        made = ", ".join(f"{c.name}({_args(c.arguments)})" for c in calls) or "no tool calls"
        return False, f"expected a call {wanted.shorthand()}; the agent made {made}"
    if check.final_response is not None:
        text = transcript.final_response()
        held = check.final_response.matches(text)
        return held, f"final response {text[:200]!r}"
    assert check.said is not None
    said = check.said
    for reply in transcript.replies():
        if said.matches(reply.content):
            return True, f"the agent said {reply.content[:200]!r}"
    return False, "no reply of the agent matched"


def _args(arguments: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in arguments.items())


def broken_never_rule(
    criteria: Sequence[CriterionSpec], transcript: Transcript
) -> CriterionResult | None:
    """The first ``never`` rule ``transcript`` breaks, decided failed."""
    for criterion in criteria:
        if criterion.never is None:
            continue
        held, seen = check_holds(criterion.never, transcript)
        if held:
            return CriterionResult(criterion.id, "never", "failed", f"broken: {seen}")
    return None


def read_vote(response: InferenceResponse) -> tuple[Decision, str]:
    """A judge's answer as a decision and its reason; an answer that says none of passed,
    failed or inconclusive is inconclusive."""
    for call in response.tool_calls:
        if call.name == VERDICT_TOOL:
            result = str(call.arguments.get("result", "")).strip().lower()
            reason = str(call.arguments.get("reason", ""))
            if result in _DECISIONS:
                return result, reason
            return "inconclusive", f"the judge answered result {result!r}"
    text = response.content.strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None  # pragma: no mutate (whatever is not a dict reads alike)
    if isinstance(data, dict) and str(data.get("result")).lower() in _DECISIONS:
        return str(data["result"]).lower(), str(data.get("reason", ""))  # type: ignore[return-value]
    # an empty answer's first word may be any text that is not a decision
    first = text.split(maxsplit=1)[0].strip(".:,*").lower() if text else ""  # pragma: no mutate
    if first in _DECISIONS:
        return first, text
    return "inconclusive", f"the judge's answer decides nothing: {text[:120]!r}"


def _majority(votes: Sequence[Decision]) -> Decision:
    counts = Counter(votes)
    passed, failed = counts["passed"], counts["failed"]
    if passed > failed and passed > counts["inconclusive"]:
        return "passed"
    if failed > passed and failed > counts["inconclusive"]:
        return "failed"
    return "inconclusive"


async def _rubric(
    criterion: CriterionSpec,
    transcript: Transcript,
    model: AsyncInferenceProvider,
    config: LlmConfig | None,
) -> CriterionResult:
    assert criterion.rubric is not None
    prompt = f"Criterion: {criterion.rubric}\n\nTranscript:\n{transcript.render()}"
    request = InferenceRequest(
        messages=Messages([Message.system(_JUDGE_PROMPT), Message.user(prompt)]),
        tools=(_VERDICT_SCHEMA,),
        tool_choice=VERDICT_TOOL,
        llm_config=config,
    )
    answers = await asyncio.gather(*(model.ainfer(request) for _ in range(criterion.votes)))
    read = [read_vote(answer) for answer in answers]
    votes = tuple(decision for decision, _ in read)
    outcome = _majority(votes)
    reasons = "; ".join(reason for decision, reason in read if decision == outcome and reason)
    tally = ", ".join(f"{n} {d}" for d, n in Counter(votes).items())
    return CriterionResult(criterion.id, "rubric", outcome, f"{tally}: {reasons}"[:500], votes)


async def judge_transcript(
    criteria: Sequence[CriterionSpec],
    transcript: Transcript,
    model: AsyncInferenceProvider | None,
    config: LlmConfig | None,
) -> tuple[CriterionResult, ...]:
    """Every criterion decided: deterministic checks and never rules from the transcript, then
    (only when none of those failed) the rubrics by the judge model."""
    results: list[CriterionResult] = []
    for criterion in criteria:
        if criterion.check is not None:
            held, seen = check_holds(criterion.check, transcript)
            results.append(
                CriterionResult(criterion.id, "check", "passed" if held else "failed", seen)
            )
        elif criterion.never is not None:
            held, seen = check_holds(criterion.never, transcript)
            outcome: Decision = "failed" if held else "passed"
            results.append(CriterionResult(criterion.id, "never", outcome, seen))
    rubrics = [c for c in criteria if c.rubric is not None]
    if any(r.outcome == "failed" for r in results) or not rubrics:
        # A failed deterministic criterion decides the trial: the judge model is not asked.
        results += [
            CriterionResult(c.id, "rubric", "inconclusive", "not judged: the trial failed a check")
            for c in rubrics
        ]
        return _in_order(criteria, results)
    assert model is not None, "a rubric needs the judge's model (checked when loaded)"
    judged = await asyncio.gather(*(_rubric(c, transcript, model, config) for c in rubrics))
    return _in_order(criteria, [*results, *judged])


def _in_order(
    criteria: Sequence[CriterionSpec], results: Sequence[CriterionResult]
) -> tuple[CriterionResult, ...]:
    by_id = {result.id: result for result in results}
    return tuple(by_id[criterion.id] for criterion in criteria)
