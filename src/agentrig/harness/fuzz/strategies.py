"""Hypothesis strategies of the model's behaviour, built from what the agent offers
(:class:`~agentrig.harness.fuzz.offer.Offer`): text answers, tool calls with arguments drawn
from each tool's JSON Schema, refusals, truncation, reasoning and the endpoint's faults, drawn
as whole scripts (one scenario per example) that end in a text answer.

Each ``one_of`` lists its simplest choice first: hypothesis shrinks towards it, so a failure
shrinks to the fewest, plainest answers that still break the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import hypothesis.strategies as st

from agentrig.drivers._sdk import dump_arguments
from agentrig.errors import InvalidInputError
from agentrig.harness.fuzz.arguments import RAW_ARGUMENTS_KEY, arguments_for, kinds_for
from agentrig.harness.fuzz.behaviours import Behaviours, FaultKind, ReplyKind
from agentrig.harness.fuzz.offer import Offer
from agentrig.harness.scenarios.model import (
    AgentSpec,
    FaultSpec,
    InvariantSelection,
    ModelReply,
    RedactedThink,
    Scenario,
    ScenarioTurn,
    ToolCallSpec,
)
from agentrig.state import ToolSchema

__all__ = [
    "FUZZ_EXCLUDED_INVARIANTS",
    "model_replies",
    "model_scripts",
    "texts",
    "tool_calls",
]

FUZZ_EXCLUDED_INVARIANTS = ("tools_offered",)
"""Invariants a generated script leaves out: ``tools_offered`` holds the *script* to the offered
schemas, and a fuzzed model breaks them on purpose (unknown tools, invalid arguments)."""

_MARKDOWN = (
    "# Title\n\nSome **bold** and _italic_ text.",
    "```python\nprint('hi')\n```",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "- one\n- two\n  - nested\n\n1. first",
    "[a link](https://example.invalid) and `code`",
    "> quoted\n\n---\n\n<b>html</b> \\* escaped",
)
_UNICODE = (
    "héllo wörld",
    "日本語のテキスト",
    "emoji 👍🏽🎉 and ZWJ 👩\u200d💻",
    "right-to-left: مرحبا",
    "combining: e\u0301 a\u0308",
    "\u200bzero-width\u200b",
)
_RETRY_AFTER = 0.001
"""The ``Retry-After`` of generated 5xx faults: what the SDKs wait before they retry (in process
no wait takes time, see :mod:`~agentrig.harness.fuzz.waits`; a replay over ``agentrig serve``
waits for real, and without a ``Retry-After`` the SDKs back off for half a second and more)."""
_LOREM = "lorem ipsum " * 1_667
"""20,004 characters: the longest text answer's 20,000 and more."""
_REFUSALS = ("I can't help with that.", "I'm sorry, but I cannot assist with this request.")
_UNKNOWN_TOOLS = ("unknown_tool", "delete_all_records", "search", "transfer_funds", "lookup")


def texts() -> st.SearchStrategy[str]:
    """Text answers: plain, empty or blank (whitespace), long, unicode, markdown."""
    # Not mutated: the longest of a kind (hypothesis seldom draws it, no test sees one past it)
    plain = st.text(
        st.characters(codec="ascii", categories=("L", "N", "Zs")),
        min_size=1,
        max_size=30,  # pragma: no mutate
    )
    sizes = st.integers(
        min_value=1_000,
        max_value=20_000,  # pragma: no mutate
    )
    return st.one_of(
        plain.filter(str.strip),
        st.sampled_from(("", " ", "\n", " \n\t")),
        sizes.map(lambda size: _LOREM[:size]),
        st.one_of(
            st.sampled_from(_UNICODE),
            st.text(st.characters(codec="utf-8", min_codepoint=0x80), max_size=20),
        ).filter(str.strip),  # no empty text, nor one of only spaces
        st.sampled_from(_MARKDOWN),
    )


def _callable_tools(offer: Offer, behaviours: Behaviours) -> tuple[ToolSchema, ...]:
    if behaviours.tools is None:
        return offer.tools
    offered = {tool.name for tool in offer.tools}
    missing = [name for name in behaviours.tools if name not in offered]
    if missing:
        names = ", ".join(sorted(offered)) or "none"
        reason = f"{', '.join(missing)} not offered by the agent; it offers: {names}"
        raise InvalidInputError("Behaviours", [("tools", reason)])
    return tuple(tool for tool in offer.tools if tool.name in behaviours.tools)


def tool_calls(
    tools: Sequence[ToolSchema], behaviours: Behaviours
) -> st.SearchStrategy[ToolCallSpec]:
    """One call of one of ``tools``, its arguments of a kind ``behaviours`` allows."""
    choices = [
        st.builds(_call, st.just(tool.name), arguments_for(tool.parameters, kind))
        for tool in tools
        for kind in kinds_for(tool.parameters, behaviours.arguments)
    ]
    return st.one_of(choices) if choices else st.nothing()


def _call(name: str, arguments: dict[str, Any]) -> ToolCallSpec:
    return ToolCallSpec(name=name, args=arguments)


def _unknown_calls(offer: Offer) -> st.SearchStrategy[ToolCallSpec]:
    offered = {tool.name for tool in offer.tools}
    names = [name for name in _UNKNOWN_TOOLS if name not in offered]
    arguments = st.sampled_from(({}, {"query": "x"}, {"id": 1}))
    return st.builds(_call, st.sampled_from(names), arguments)


def _cut_call(call: ToolCallSpec) -> ModelReply:
    """A call cut off by the ``length`` finish: the first half of the arguments' text as the
    model sends it (JSON, or the text that is not JSON)."""
    whole = dump_arguments(call.args)
    # Not mutated: a text of 2 or 3 characters cut at 2 is also the half of a longer one
    half = {RAW_ARGUMENTS_KEY: whole[: max(1, len(whole) // 2)]}  # pragma: no mutate
    return ModelReply(call=ToolCallSpec(name=call.name, args=half), finish_reason="length")


def _cut_text(text: str) -> ModelReply:
    """A text answer cut off by the ``length`` finish: half its text."""
    return ModelReply(say=text[: max(1, len(text) // 2)], finish_reason="length")


def _reasoning(answers: st.SearchStrategy[ModelReply]) -> st.SearchStrategy[ModelReply]:
    thoughts = st.one_of(
        st.sampled_from(("Let me think about this.", "The user wants a tool call.")),
        st.just(RedactedThink(redacted=True)),
    )
    return st.builds(
        lambda reply, think: reply.model_copy(update={"think": think}), answers, thoughts
    )


def _text_answers() -> st.SearchStrategy[ModelReply]:
    return texts().map(_said)


def _said(text: str) -> ModelReply:
    """A text answer; an empty one says how it finished (a scenario plays no text only so)."""
    return ModelReply(say=text, finish_reason=None if text else "stop")


def _final_answers(behaviours: Behaviours) -> st.SearchStrategy[ModelReply]:
    """Answers that end an agent's turn: text, a refusal, text cut short, reasoned text (text
    when ``behaviours`` allows none of them: a script ends in an answer)."""
    kinds: dict[ReplyKind, st.SearchStrategy[ModelReply]] = {
        "text": _text_answers(),
        "refusal": st.sampled_from(_REFUSALS).map(lambda text: ModelReply(refuse=text)),
        "truncated": texts().map(_cut_text),
        "reasoning": _reasoning(_text_answers()),
    }
    chosen = [
        kinds[kind] for kind in _ORDER_OF_REPLIES if kind in kinds and kind in behaviours.replies
    ]
    return st.one_of(chosen) if chosen else _text_answers()


def _call_answers(
    offer: Offer, behaviours: Behaviours
) -> dict[ReplyKind, st.SearchStrategy[ModelReply]]:
    """Answers that call tools (the agent answers them and asks again)."""
    tools = _callable_tools(offer, behaviours)
    answers: dict[ReplyKind, st.SearchStrategy[ModelReply]] = {
        "unknown_tool": _unknown_calls(offer).map(lambda call: ModelReply(call=call)),
    }
    if tools and behaviours.arguments:
        calls = tool_calls(tools, behaviours)
        one = calls.map(lambda call: ModelReply(call=call))
        answers["call"] = one
        answers["parallel_calls"] = st.lists(calls, min_size=2, max_size=3).map(
            lambda many: ModelReply(calls=tuple(many))
        )
        answers["truncated"] = calls.map(_cut_call)
        answers["reasoning"] = _reasoning(one)
    return answers


def _faults(offer: Offer, behaviours: Behaviours) -> dict[FaultKind, st.SearchStrategy[ModelReply]]:
    calls = tool_calls(_callable_tools(offer, behaviours), behaviours)
    streamed = st.one_of(_text_answers(), calls.map(lambda call: ModelReply(call=call)))

    def with_fault(reply: ModelReply, fault: FaultSpec) -> ModelReply:
        return reply.model_copy(update={"fault": fault})

    return {
        "rate_limit": st.sampled_from((0.001, 0.01)).map(
            lambda wait: ModelReply(fault=FaultSpec(status=429, retry_after=wait))
        ),
        "server_error": st.sampled_from((500, 502, 503, 529)).map(
            lambda status: ModelReply(fault=FaultSpec(status=status, retry_after=_RETRY_AFTER))
        ),
        "timeout": st.builds(with_fault, streamed, st.just(FaultSpec(timeout=True))),
        "cut_stream": st.builds(
            with_fault, streamed, st.integers(0, 4).map(lambda n: FaultSpec(cut_after=n))
        ),
        "malformed_stream": st.builds(
            with_fault, streamed, st.integers(1, 4).map(lambda n: FaultSpec(malformed_at=n))
        ),
    }


def model_replies(
    offer: Offer, behaviours: Behaviours | None = None
) -> st.SearchStrategy[ModelReply]:
    """One answer of the model (or one fault of the endpoint) of a kind ``behaviours`` allows,
    calling the tools ``offer`` holds."""
    behaviours = behaviours or Behaviours()
    going = _going_on(offer, behaviours)
    final = _final_answers(behaviours)
    return final if going is None else st.one_of(final, going)


def _going_on(offer: Offer, behaviours: Behaviours) -> st.SearchStrategy[ModelReply] | None:
    """Answers after which an agent asks again: calls, and the endpoint's faults (None when
    ``behaviours`` allows none)."""
    answers = _call_answers(offer, behaviours)
    faults = _faults(offer, behaviours)
    chosen = [
        answers[kind]
        for kind in _ORDER_OF_REPLIES
        if kind in behaviours.replies and kind in answers
    ]
    chosen += [faults[kind] for kind in _ORDER_OF_FAULTS if kind in behaviours.faults]
    return st.one_of(chosen) if chosen else None


_ORDER_OF_REPLIES: tuple[ReplyKind, ...] = (
    "text",
    "call",
    "parallel_calls",
    "refusal",
    "unknown_tool",
    "truncated",
    "reasoning",
)
_ORDER_OF_FAULTS: tuple[FaultKind, ...] = (
    "rate_limit",
    "server_error",
    "timeout",
    "cut_stream",
    "malformed_stream",
)


def model_scripts(
    offer: Offer,
    behaviours: Behaviours | None = None,
    *,
    name: str = "fuzz",
    adapter: str | None = None,
) -> st.SearchStrategy[Scenario]:
    """Whole scripts as scenarios: up to ``behaviours.max_steps`` drawn answers after which an
    agent asks again (calls, faults; between the fixed ``before`` and ``after`` ones), then an
    answer that ends its turn (text, a refusal, text cut short, reasoned text), which repeats
    for every further request. ``adapter`` names the agent in the scenario (``agent.adapter``).

    Answers that end a turn come last only: an agent stops at the first, and a script with one
    in the middle would spend the example on replies no agent asks for."""
    behaviours = behaviours or Behaviours()
    going = _going_on(offer, behaviours)
    steps = st.lists(going, max_size=behaviours.max_steps) if going is not None else st.just([])
    chunking = st.sampled_from(
        ("events", "bytes", "utf8") if "chunking" in behaviours.faults else ("events",)
    )
    final = _final_answers(behaviours).map(lambda reply: reply.model_copy(update={"repeat": True}))
    return st.builds(
        lambda drawn, last, cut: _scenario(offer, behaviours, drawn, last, cut, name, adapter),
        steps,
        final,
        chunking,
    )


def _scenario(
    offer: Offer,
    behaviours: Behaviours,
    steps: list[ModelReply],
    final: ModelReply,
    chunking: str,
    name: str,
    adapter: str | None,
) -> Scenario:
    script = (*behaviours.before, *steps, *behaviours.after, final)
    earlier = tuple(ScenarioTurn(user=user) for user in offer.users[:-1])
    agent: dict[str, Any] = {"wire_chunking": chunking}  # "events", the default, is written as none
    if adapter is not None:
        agent["adapter"] = adapter
    return Scenario(
        name=name,
        agent=AgentSpec.model_validate(agent),
        turns=(*earlier, ScenarioTurn(user=offer.users[-1], model=script)),
        invariants=InvariantSelection(exclude=FUZZ_EXCLUDED_INVARIANTS),
    )
