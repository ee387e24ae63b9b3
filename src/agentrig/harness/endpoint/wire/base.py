"""What every wire format shares: the request as the endpoint reads it, the answer it plays, and
the error a request that cannot be read is answered with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from agentrig._model import JsonObject
from agentrig.messages import Message, ToolCall
from agentrig.state import ToolSchema, Usage
from agentrig.state.status import FinishReason

FormatName = Literal["chat", "responses", "anthropic", "gemini"]


@dataclass(slots=True)
class WireRequest:
    """One request as it crossed the wire, in the provider-neutral terms the checks read.

    ``messages`` holds the conversation without the system prompt (user, assistant with its tool
    calls, one TOOL message per tool result, in the order sent); ``system`` is the system prompt or
    instructions, joined when the format carries several. ``settings`` keeps every other body
    field (temperature, tool_choice, max tokens, ...) as sent.
    """

    format: FormatName
    model: str
    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[ToolSchema, ...] = ()
    stream: bool = False
    include_usage: bool = False
    settings: JsonObject = field(default_factory=dict)
    seals_reasoning: bool = False
    """Whether the format hands an answer's reasoning over sealed, as a token the agent must
    send back with the answer's tool calls: Anthropic's thinking signature and Gemini's thought
    signature (always), the Responses API's encrypted content (when ``include`` asks for it)."""
    reasoning_shown: bool = True
    """Whether an answer may show its reasoning's text: Gemini sends thought parts only to a
    request that asks for them (``thinkingConfig.includeThoughts``), the signature alone
    otherwise."""
    json_array: bool = False
    """Whether a stream goes as one JSON array whose elements are sent as they come (Gemini's
    ``streamGenerateContent`` without ``alt=sse``) rather than as server-sent events."""
    anonymous_calls: bool = False
    """Whether an assistant turn sent a tool call without its id (Gemini lets a client leave
    ids out): such a call has a placeholder id (``ANONYMOUS_CALL`` and a number), which the
    session replaces with the id of the call it repeats (``adopt_call_ids``)."""


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """What a request lets the model answer with, read from its ``tool_choice`` and parallel
    setting. ``mode``: ``auto`` (text or calls), ``none`` (no call), ``required`` (at least one
    call) or ``tool`` (calls of ``tool`` only); ``allowed``: the tools a call may name (Gemini's
    ``allowedFunctionNames``; None: any); ``parallel``: whether one answer may make several
    calls. ``said`` and ``parallel_said`` quote the request's own settings, for messages."""

    mode: Literal["auto", "none", "required", "tool"] = "auto"
    tool: str | None = None
    allowed: tuple[str, ...] | None = None
    parallel: bool = True
    said: str = ""
    parallel_said: str = ""


ANY_ANSWER = ToolChoice()
"""A request that leaves the model free to answer with text or any number of calls."""


@dataclass(frozen=True, slots=True)
class TokenLogprobs:
    """One token of an answer's text with its log probability, and the likeliest tokens in its
    place (``top``: token and log probability, most likely first)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(slots=True)
class WireAnswer:
    """One scripted answer to play: text, tool calls (ids already assigned), or a refusal;
    with the model's reasoning before it, if any."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    refusal: str | None = None
    usage: Usage = field(default_factory=Usage)
    finish_reason: FinishReason = FinishReason.STOP
    reasoning: str = ""
    redacted: bool = False
    """Whether the model reasoned without text the client sees (``think: {redacted: true}``):
    an Anthropic ``redacted_thinking`` block, a Responses reasoning item with an empty summary,
    nothing over Chat Completions."""
    seal: str = ""
    """The token the reasoning is sealed with (see ``WireRequest.seals_reasoning``); empty when
    it goes over unsealed or there is none."""
    logprobs: tuple[TokenLogprobs, ...] = ()
    """The scripted log probabilities of the tokens of ``text`` (which they spell)."""
    logprobs_top: int | None = None
    """How many of each token's likeliest tokens to send with ``logprobs``; None when the
    request did not ask for logprobs (then none are sent)."""

    def sent_logprobs(self) -> tuple[TokenLogprobs, ...]:
        """The log probabilities to send: none unless the request asked for them."""
        return self.logprobs if self.logprobs_top is not None else ()


class WireError(Exception):
    """A request the endpoint cannot read; ``param`` names the body field at fault, if known."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class WireFormat(Protocol):
    """One provider API's request and answer shapes, byte-compatible with its official SDK."""

    @property
    def name(self) -> FormatName:
        """The format's name."""
        ...

    @property
    def path(self) -> str:
        """The path its requests are posted to."""
        ...

    def parse_request(self, body: bytes) -> WireRequest:
        """Read a request body; raise ``WireError`` naming the field when it cannot be read."""
        ...

    def matches(self, path: str) -> bool:
        """Whether requests to ``path`` (without its query) are this format's."""
        ...

    def read(self, target: str, body: bytes) -> WireRequest:
        """Read a request posted to ``target`` (its path and query: Gemini names the model and
        streaming there); ``WireError`` naming the field when it cannot be read."""
        ...

    def response_body(self, answer: WireAnswer, *, model: str, response_id: str) -> JsonObject:
        """The JSON body of a plain (not streamed) answer."""
        ...

    def stream_chunks(
        self, answer: WireAnswer, *, model: str, response_id: str, include_usage: bool
    ) -> list[bytes]:
        """The answer as server-sent events, one complete event (ending in a blank line) each."""
        ...

    def error_body(self, status: int, message: str, *, param: str | None = None) -> JsonObject:
        """The provider's error body for an HTTP ``status`` with ``message``."""
        ...

    def logprobs_asked(self, request: WireRequest) -> int | None:
        """How many likeliest tokens ``request`` asks to see beside each token's log
        probability; None when it asks for no log probabilities (or the API has none)."""
        ...

    def tool_choice(self, request: WireRequest) -> ToolChoice:
        """What ``request`` lets the model answer with (its ``tool_choice`` and whether it
        allows parallel calls), as the real API would hold the model to it."""
        ...
