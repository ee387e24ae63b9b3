"""What the generated model may do: the kinds of reply, of tool-call arguments and of endpoint
fault, the tools it calls, and how long a script runs. The user narrows them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal, get_args

from agentrig.errors import InvalidInputError
from agentrig.harness.scenarios.model import ModelReply

__all__ = [
    "ALL_ARGUMENTS",
    "ALL_FAULTS",
    "ALL_REPLIES",
    "DEFAULT_ARGUMENTS",
    "DEFAULT_FAULTS",
    "LIVE_DEFAULT_FAULTS",
    "ArgumentKind",
    "Behaviours",
    "FaultKind",
    "ReplyKind",
    "default_faults",
]

ReplyKind = Literal[
    "text", "call", "parallel_calls", "unknown_tool", "refusal", "truncated", "reasoning"
]
"""A kind of model answer: plain text (empty, long, unicode, markdown), one tool call, several
calls in one answer, a call to a tool the agent does not offer, a refusal, an answer cut by the
``length`` finish, and reasoning before an answer."""

ArgumentKind = Literal["valid", "missing_required", "wrong_type", "extra_keys", "not_json"]
"""A kind of tool-call arguments: valid for the tool's JSON Schema; without a required field;
with a field of the wrong type; with keys the schema does not name; text that is not JSON."""

FaultKind = Literal[
    "rate_limit", "server_error", "timeout", "cut_stream", "malformed_stream", "chunking"
]
"""A fault of the endpoint: HTTP 429 with ``Retry-After``; HTTP 500/502/503/529; no answer
until the client's own timeout fires (``fault: {timeout: true}``); a stream (or body) cut in the
middle; a malformed stream event; a streamed answer cut into hostile network chunks (one byte
each, or UTF-8 characters split)."""

ALL_REPLIES: frozenset[ReplyKind] = frozenset(get_args(ReplyKind))
ALL_ARGUMENTS: frozenset[ArgumentKind] = frozenset(get_args(ArgumentKind))
ALL_FAULTS: frozenset[FaultKind] = frozenset(get_args(FaultKind))
DEFAULT_ARGUMENTS: frozenset[ArgumentKind] = frozenset({"valid", "not_json"})
DEFAULT_FAULTS: frozenset[FaultKind] = ALL_FAULTS - {"malformed_stream"}
LIVE_DEFAULT_FAULTS: frozenset[FaultKind] = DEFAULT_FAULTS - {"timeout"}
"""The default faults over a live server (a command, ``live=True``): a ``timeout`` there waits
for the client's own timeout in real time (ten minutes for the openai SDK's default), so it is
played only when asked for by name (give the agent's client a timeout of a second or so)."""


def default_faults(live: bool) -> frozenset[FaultKind]:
    """The faults played unless narrowed: :data:`LIVE_DEFAULT_FAULTS` over a live server, else
    :data:`DEFAULT_FAULTS` (in process no wait takes time)."""
    return LIVE_DEFAULT_FAULTS if live else DEFAULT_FAULTS


@dataclass(frozen=True)
class Behaviours:
    """The space hypothesis draws the model's behaviour from.

    ``tools``: the offered tools the model calls (None: all of them). ``replies``, ``arguments``
    and ``faults``: the kinds allowed (see :data:`ReplyKind`, :data:`ArgumentKind`,
    :data:`FaultKind`); by default every reply kind, every fault but a malformed event (the
    fuzzer leaves timeouts out too over a live server, see :func:`default_faults`), and
    valid or non-JSON arguments (ask for ``ALL_ARGUMENTS`` to also send a missing field, a
    wrong type, extra keys; ``ALL_FAULTS`` for malformed events too).
    ``max_steps``: the most drawn answers after which the agent asks again (calls, faults)
    before the last one, which ends its turn (text, a refusal, ...). ``max_model_calls``: the
    most model calls an example may take before the endpoint refuses more (and
    ``terminates_within`` fails). ``before`` / ``after``: fixed replies played before the
    drawn ones and between them and the last answer.
    """

    tools: tuple[str, ...] | None = None
    replies: frozenset[ReplyKind] = ALL_REPLIES
    arguments: frozenset[ArgumentKind] = DEFAULT_ARGUMENTS
    faults: frozenset[FaultKind] = DEFAULT_FAULTS
    max_steps: int = 4
    max_model_calls: int = 30
    before: tuple[ModelReply, ...] = field(default=())
    after: tuple[ModelReply, ...] = field(default=())

    def __post_init__(self) -> None:
        for name in ("replies", "arguments", "faults"):  # one kind, or any iterable of them
            value = getattr(self, name)
            object.__setattr__(self, name, frozenset((value,) if isinstance(value, str) else value))
        if isinstance(self.tools, str):
            object.__setattr__(self, "tools", (self.tools,))
        elif self.tools is not None:
            object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "before", tuple(self.before))
        object.__setattr__(self, "after", tuple(self.after))
        problems = list(self._problems())
        if problems:
            raise InvalidInputError("Behaviours", problems)

    def _problems(self) -> Iterator[tuple[str, str]]:
        for name, allowed in (
            ("replies", ALL_REPLIES),
            ("arguments", ALL_ARGUMENTS),
            ("faults", ALL_FAULTS),
        ):
            yield from _unknown(name, getattr(self, name), allowed)
        if not self.replies and not self.faults:
            yield "replies", "allow at least one kind of reply or fault"
        if not self.arguments and self.calls_tools():
            yield "arguments", "allow at least one kind of arguments for the tool calls"
        for name in ("max_steps", "max_model_calls"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                yield name, f"expected a positive integer, got {value!r}"
        for name in ("before", "after"):
            for index, reply in enumerate(getattr(self, name)):
                if not isinstance(reply, ModelReply):
                    yield f"{name}[{index}]", f"expected a ModelReply, got {type(reply).__name__}"

    def calls_tools(self) -> bool:
        """Whether any allowed reply kind calls a tool."""
        return bool(self.replies & {"call", "parallel_calls", "unknown_tool", "truncated"})


def _unknown(name: str, given: Iterable[str], allowed: frozenset[str]) -> Iterator[tuple[str, str]]:
    for kind in sorted(set(given) - allowed):
        yield name, f"unknown kind {kind!r}; valid: {', '.join(sorted(allowed))}"
