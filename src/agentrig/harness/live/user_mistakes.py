"""The simulated user's own mistakes, found every turn so that they are never blamed on the
agent: a trial in which the user broke its contract is set aside and run again.

The mistakes, by code:

- ``empty_message``: the user said nothing (and did not end the conversation).
- ``cut_off``: the user model's answer was cut (finish reason ``length`` or
  ``content_filter``).
- ``unknown_fact``: the user disclosed a value it was not given. Each ``knows`` value that
  looks like an identifier (an e-mail address; letters and digits such as ``A-1029``; five or
  more digits) gives a shape (``A-1029``: a capital letter, ``-``, four digits); a user message
  that carries a value of that shape which is neither a ``knows`` value nor something the agent
  said first invented it. Free text (names, reasons) has no shape and is not checked.
- ``ended_early``: the user ended the conversation before ``stop.min_turns`` turns, or before
  the agent called every tool of ``stop.not_before_tool``.
- ``role_confusion``: the user spoke as the assistant: it labelled its message as the
  assistant's, or repeated the agent's last reply word for word (two agent turns in a row, in
  effect).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from agentrig.harness.live.simulated_user import UserMove
from agentrig.harness.live.transcript import Transcript
from agentrig.harness.scenarios.live_model import UserSpec

__all__ = ["MISTAKES", "UserMistake", "fact_shape", "find_user_mistake"]

MISTAKES = ("empty_message", "cut_off", "unknown_fact", "ended_early", "role_confusion")

_EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"
_ASSISTANT_LABEL = re.compile(r"^\s*(assistant|agent|ai|support)\s*:", re.IGNORECASE)
_CUT = ("length", "content_filter")


@dataclass(frozen=True, slots=True)
class UserMistake:
    """A mistake of the simulated user: its code (one of :data:`MISTAKES`) and what it did."""

    code: str
    detail: str

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"


def _fact_shape(value: str) -> re.Pattern[str] | None:
    """The shape of ``value`` as a pattern, when it looks like an identifier (see the module
    docstring); None for free text."""
    text = value.strip()
    if "@" in text and re.fullmatch(_EMAIL, text):
        return re.compile(_EMAIL)
    has_digit = any(ch.isdigit() for ch in text)
    has_letter = any(ch.isalpha() for ch in text)
    if " " in text or not has_digit:
        return None
    if not has_letter and sum(ch.isdigit() for ch in text) < 5:
        return None
    # runs of ASCII capitals, small letters and digits by their class and length; any other
    # character (punctuation, a letter of another script) as it is
    classes = {"upper": "[A-Z]", "lower": "[a-z]", "digits": r"\d"}
    parts: list[str] = []
    for run in re.finditer(r"(?P<upper>[A-Z]+)|(?P<lower>[a-z]+)|(?P<digits>[0-9]+)|.", text):
        kind = run.lastgroup
        piece = run.group()
        parts.append(re.escape(piece) if kind is None else f"{classes[kind]}{{{len(piece)}}}")
    return re.compile(r"(?<![\w-])" + "".join(parts) + r"(?![\w-])")


# a function call rather than a decorator, so that mutation testing reaches _fact_shape
fact_shape = lru_cache(maxsize=1024)(_fact_shape)


def _invented(text: str, known: Iterable[str], said_by_agent: Sequence[str]) -> str | None:
    values = [v.strip() for v in known]
    for value in values:
        shape = fact_shape(value)
        if shape is None:
            continue
        for found in shape.findall(text):
            if found not in values and not any(found in said for said in said_by_agent):
                return f"disclosed {found!r}, shaped like a fact it knows ({value!r}) but not one"
    return None


def find_user_mistake(spec: UserSpec, move: UserMove, transcript: Transcript) -> UserMistake | None:
    """The mistake the user made with ``move`` after ``transcript``, if any."""
    turns = len(transcript.exchanges)
    if move.finish_reason in _CUT:
        return UserMistake("cut_off", f"the user model's answer was cut ({move.finish_reason})")
    if move.ended:
        return _ended_early(spec, transcript)
    if not move.text.strip():
        return UserMistake("empty_message", f"the user's message {turns + 1} is empty")
    if _ASSISTANT_LABEL.match(move.text):
        return UserMistake("role_confusion", f"the user spoke as the assistant: {move.text[:80]!r}")
    last = transcript.final_response().strip()
    if last and move.text.strip() == last:
        return UserMistake("role_confusion", "the user repeated the agent's last reply")
    said = [reply.content for reply in transcript.replies()]
    said += [str(call.result) for call in transcript.tool_calls()]
    invented = _invented(move.text, spec.knows.values(), said)
    if invented is not None:
        return UserMistake("unknown_fact", invented)
    return None


def _ended_early(spec: UserSpec, transcript: Transcript) -> UserMistake | None:
    turns = len(transcript.exchanges)
    if turns < spec.stop.min_turns:
        return UserMistake(
            "ended_early",
            f"the user ended the conversation after {turns} turn(s); min_turns is "
            f"{spec.stop.min_turns}",
        )
    called = {call.name for call in transcript.tool_calls()}
    missing = [name for name in spec.stop.not_before_tool if name not in called]
    if missing:
        return UserMistake(
            "ended_early",
            "the user ended the conversation before the agent called " + ", ".join(missing),
        )
    return None
