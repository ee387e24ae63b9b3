"""Fake inference providers: ``ScriptedLLM`` plays a script, ``FunctionLLM`` calls a function."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import JsonValue

from agentrig._effects import run_coroutine
from agentrig.caller import AgentIdentity, current_agent
from agentrig.drivers.provider import Delta
from agentrig.errors import InvalidInputError, ProviderError
from agentrig.fakes.clock import FakeClock, is_seconds, latency_clock
from agentrig.fakes.errors import InvalidScriptError, ScriptExhaustedError, UnusedTurnsError
from agentrig.messages import ToolCall
from agentrig.state import FinishReason, InferenceRequest, InferenceResponse, Usage
from agentrig.state.usage import ZERO_USAGE


@dataclass(frozen=True)
class CallSpec:
    """A tool call to script; the id is created when the call is played (or fixed here)."""

    name: str
    arguments: Mapping[str, JsonValue] = field(default_factory=dict)
    id: str | None = None

    def to_tool_call(self) -> ToolCall:
        """The ``ToolCall`` (created in the current runtime context, so its id is deterministic)."""
        if self.id is not None:
            return ToolCall(id=self.id, name=self.name, arguments=dict(self.arguments))
        return ToolCall(name=self.name, arguments=dict(self.arguments))


_FINISH_REASONS = frozenset(reason.value for reason in FinishReason)

REASONING_SEAL_KEY = "reasoning_seal"
"""The ``provider_data`` key under which a scripted answer keeps the token its redacted
reasoning is sealed with (``Turn(redacted_reasoning=True)``); the scenario endpoint keeps the
seal of an answer it played under the same key."""

REDACTED_REASONING_SEAL = "YWdlbnRyaWcgcmVkYWN0ZWQgcmVhc29uaW5n"
"""The opaque token a scripted answer's redacted reasoning is sealed with (the base64 of
``agentrig redacted reasoning``)."""


@dataclass(frozen=True)
class Turn:
    """One scripted model answer: text, tool calls, usage, finish reason and latency; or an error.

    ``reasoning`` is the model's thinking before it answered: the response's
    ``reasoning_content``, streamed before the text (``AgentLoop.stream``).
    ``redacted_reasoning`` is thinking the model did without any text the client sees (as
    reasoning models send it sealed): the response has no ``reasoning_content``, and its
    ``provider_data`` holds an opaque token under ``"reasoning_seal"``
    (:data:`REASONING_SEAL_KEY`), which the assistant message keeps."""

    text: str = ""
    calls: tuple[CallSpec, ...] = ()
    usage: Usage = ZERO_USAGE
    finish_reason: FinishReason | None = None
    latency: float = 0.0
    error: str | None = None
    retryable: bool = False
    failed_generation: str | None = None
    reasoning: str = ""
    redacted_reasoning: bool = False

    def problem(self) -> str | None:
        """Why this turn is invalid, or None."""
        type_problem = self._type_problem()
        if type_problem is not None:
            return type_problem
        if not is_seconds(self.latency):
            return f"latency must be >= 0 seconds (a finite number), got {self.latency!r}"
        if self.error is not None:
            if not isinstance(self.error, str) or not self.error:
                return f"an error turn needs a message, got {self.error!r}"
            if self.text or self.calls or self.reasoning or self.redacted_reasoning:
                return "an error turn cannot also have text, reasoning or tool calls"
        elif self.retryable:
            return "retryable applies to an error turn only: fail('message', retryable=True)"
        elif self.failed_generation is not None:
            return (
                "failed_generation applies to an error turn only: "
                "fail('message', failed_generation='...')"
            )
        elif not self.text and not self.calls:
            return "a turn needs text, tool calls or an error"
        elif self.reasoning and self.redacted_reasoning:
            return "a turn's reasoning is either text (reasoning) or redacted_reasoning, not both"
        return None

    def _type_problem(self) -> str | None:
        if not isinstance(self.text, str):
            return f"text must be a string, got {type(self.text).__name__}"
        if not isinstance(self.reasoning, str):
            return f"reasoning must be a string, got {type(self.reasoning).__name__}"
        if not isinstance(self.redacted_reasoning, bool):
            kind = type(self.redacted_reasoning).__name__
            return f"redacted_reasoning must be a boolean, got {kind}"
        if not isinstance(self.usage, Usage):
            return f"usage must be a Usage, got {type(self.usage).__name__}"
        if self.finish_reason is not None and self.finish_reason not in _FINISH_REASONS:
            valid = ", ".join(reason.value for reason in FinishReason)
            return f"finish_reason {self.finish_reason!r} is not one of: {valid}"
        for number, spec in enumerate(self.calls, start=1):
            if not isinstance(spec, CallSpec) or not isinstance(spec.name, str) or not spec.name:
                return f"a tool call must be a CallSpec with a name, got {spec!r}"
            if not isinstance(spec.arguments, Mapping):
                kind = type(spec.arguments).__name__
                return f"tool call {number} ({spec.name}): arguments must be a mapping, got {kind}"
            try:
                ToolCall(id=spec.id or "_", name=spec.name, arguments=dict(spec.arguments))
            except InvalidInputError as error:
                return f"tool call {number} ({spec.name}): {error}"
        return None

    def to_response(self) -> InferenceResponse:
        """The response this turn plays (raises ``ProviderError`` for an error turn)."""
        return _player(self)()


def _player(turn: Turn) -> Callable[[], InferenceResponse]:
    """What plays ``turn``: its parts are validated once, here, rather than at every play. Tool
    call ids are still created at play time, in the runtime context of the call. A turn whose
    parts do not validate fails the same way each time it is played."""
    if turn.error is not None:
        error, retryable, failed = turn.error, turn.retryable, turn.failed_generation

        def fail() -> InferenceResponse:
            raise ProviderError(error, retryable=retryable, failed_generation=failed)

        return fail
    try:
        checked = tuple(
            ToolCall(id=spec.id or "_", name=spec.name, arguments=dict(spec.arguments))
            for spec in turn.calls
        )
    except InvalidInputError as invalid:
        return _refusing(invalid)
    specs = tuple(
        (spec.id, call.name, call.arguments) for spec, call in zip(turn.calls, checked, strict=True)
    )
    content, usage, reasoning = turn.text, turn.usage, turn.reasoning
    reason = FinishReason(turn.finish_reason) if turn.finish_reason else None
    reason = reason or (FinishReason.TOOL_CALLS if specs else FinishReason.STOP)
    make_call, make_response = ToolCall._trusted, InferenceResponse._trusted
    sealed = turn.redacted_reasoning

    def play() -> InferenceResponse:
        calls: list[ToolCall] = []
        for call_id, name, arguments in specs:
            calls.append(
                make_call(name=name, arguments=dict(arguments))
                if call_id is None
                else make_call(id=call_id, name=name, arguments=dict(arguments))
            )
        return make_response(
            content=content,
            tool_calls=tuple(calls),
            usage=usage,
            finish_reason=reason,
            reasoning_content=reasoning,
            # a new dict per answer: the messages built from it must not share one
            provider_data={REASONING_SEAL_KEY: REDACTED_REASONING_SEAL} if sealed else {},
        )

    return play


def _refusing(error: InvalidInputError) -> Callable[[], InferenceResponse]:
    def refuse() -> InferenceResponse:
        raise error.with_traceback(None)

    return refuse


def reply(text: str, **options: Any) -> Turn:
    """A turn answering with ``text``."""
    return Turn(text=text, **options)


def call(name: str, /, **arguments: JsonValue) -> Turn:
    """A turn requesting one tool call."""
    return Turn(calls=(CallSpec(name, arguments),))


def calls(
    *specs: CallSpec | tuple[str, Mapping[str, JsonValue]], text: str = "", **options: Any
) -> Turn:
    """A turn requesting several tool calls."""
    resolved: list[CallSpec] = []
    for number, spec in enumerate(specs, start=1):
        if isinstance(spec, CallSpec):
            resolved.append(spec)
        elif isinstance(spec, tuple) and len(spec) == 2:
            resolved.append(CallSpec(spec[0], spec[1]))
        else:
            reason = f"item {number} must be a CallSpec or a (name, arguments) pair, got {spec!r}"
            raise InvalidScriptError(None, reason, where="calls()")
    return Turn(text=text, calls=tuple(resolved), **options)


def fail(message: str, *, retryable: bool = False, failed_generation: str | None = None) -> Turn:
    """A turn where the provider raises ``ProviderError``; ``failed_generation`` makes it a tool
    call the API refused, what the model wrote (the driver shows it to the model and retries)."""
    return Turn(error=message, retryable=retryable, failed_generation=failed_generation)


@dataclass(frozen=True)
class LlmCall:
    """A record of one call to a fake: its 1-based number, the request and the outcome."""

    number: int
    request: InferenceRequest
    response: InferenceResponse | None
    error: str | None = None


class _Recorder:
    name = "fake LLM"

    def __init__(self, clock: FakeClock | None) -> None:
        self.clock = clock
        # Each call is logged as a plain tuple; its ``LlmCall`` record is built the first time
        # ``calls`` is read (once: the records stay the same objects).
        self._log: list[tuple[InferenceRequest, InferenceResponse | None, str | None]] = []
        self._calls: list[LlmCall] = []

    @property
    def calls(self) -> tuple[LlmCall, ...]:
        """Every call made so far."""
        made = self._calls
        for number in range(len(made) + 1, len(self._log) + 1):
            made.append(LlmCall(number, *self._log[number - 1]))
        return tuple(made)

    @property
    def requests(self) -> tuple[InferenceRequest, ...]:
        """Every request received so far."""
        return tuple(request for request, _, _ in self._log)

    def _record(
        self, request: InferenceRequest, produce: Callable[[], InferenceResponse]
    ) -> InferenceResponse:
        try:
            response = produce()
        except Exception as error:
            self._failed(request, error)
            raise
        self._log.append((request, response, None))
        return response

    def _failed(self, request: InferenceRequest, error: Exception) -> None:
        if isinstance(error, ProviderError):
            self._log.append((request, None, str(error)))
        else:  # a FunctionLLM's function failing: still a call made
            self._log.append((request, None, f"{type(error).__name__}: {error}"))

    def _latency_clock(self, latency: float, number: int) -> FakeClock | None:
        """The clock ``latency`` moves (see ``latency_clock``), or an error naming the call when
        there is none: a latency on the wall clock would really wait."""
        if not latency:
            return None
        clock = latency_clock(self.clock)
        if clock is None:
            raise InvalidScriptError(
                number,
                f"latency {latency}s (asked by {current_agent()}) needs a FakeClock: run the "
                "agent on one (AgentBuilder.with_clock(FakeClock())) or pass clock=... to the fake",
                where=f"{self.name}, call {number}",
            )
        return clock

    def _advance(self, latency: float, number: int) -> None:
        clock = self._latency_clock(latency, number)
        if clock is not None:
            clock.advance(latency)

    async def _sleep(self, latency: float, number: int) -> None:
        clock = self._latency_clock(latency, number)
        if clock is not None:
            await clock.sleep(latency)


class Chunking(StrEnum):
    """How ``ScriptedLLM.infer_stream`` cuts a scripted answer into pieces."""

    WHOLE = "whole"
    """The text in one piece, then each call's arguments in one piece."""
    CHARS = "chars"
    """One character at a time: the text, then each call's JSON arguments, cut anywhere
    (inside keys, strings, numbers and escapes)."""
    INTERLEAVED = "interleaved"
    """One character at a time, the calls' argument pieces interleaved round-robin, as
    parallel tool-call deltas arrive from some providers."""


DEFAULT_REPEAT_LIMIT = 25
"""How many more calls a repeating scripted turn that calls a tool answers: past it, the agent is
looping on the call."""


class ScriptedLLM(_Recorder):
    """Plays scripted turns in order, one per inference call; never cycles or invents answers.

    Strings are shorthand for text turns. Latency advances ``clock``, or without one the
    ``FakeClock`` the agent runs under (``AgentBuilder.with_clock``). An extra call raises
    ``ScriptExhaustedError``; ``assert_complete()`` raises ``UnusedTurnsError`` for unused turns.
    ``infer_stream`` plays the same turn as ``infer`` and hands its answer out in pieces cut as
    ``chunking`` says (runs through ``AgentLoop.stream`` ask for it). With ``repeat_last``, the
    last turn answers every call after it too (a role asked the same thing again and again): it
    counts as played once it answered once, and the script never runs out, unless it calls a
    tool: an agent answering such a turn would loop forever, so it answers at most
    ``repeat_limit`` calls after the first; the next raises ``ScriptExhaustedError`` and
    ``looped`` says so.
    """

    def __init__(
        self,
        turns: Iterable[Turn | str],
        *,
        clock: FakeClock | None = None,
        name: str = "ScriptedLLM",
        chunking: Chunking | str = Chunking.WHOLE,
        subagents: Mapping[str, Iterable[Turn | str]] | None = None,
        repeat_last: bool = False,
        repeat_limit: int = DEFAULT_REPEAT_LIMIT,
    ) -> None:
        super().__init__(clock)
        self.name = name
        if not isinstance(repeat_last, bool):
            reason = f"repeat_last must be true or false, got {type(repeat_last).__name__}"
            raise InvalidScriptError(None, reason, where=name)
        self.repeat_last = repeat_last
        if isinstance(repeat_limit, bool) or not isinstance(repeat_limit, int) or repeat_limit < 1:
            reason = f"repeat_limit must be a whole number >= 1, got {repeat_limit!r}"
            raise InvalidScriptError(None, reason, where=name)
        self.repeat_limit = repeat_limit
        self.looped = False
        """True once a repeating turn that calls a tool was asked past ``repeat_limit``."""
        self._repeats = 0
        self._owner = " for the parent agent"  # what unused turns name; "" in a subagent's script
        self.subagents: dict[str, ScriptedLLM] = {
            agent: ScriptedLLM(
                script, clock=clock, name=f"{name} for subagent '{agent}'", chunking=chunking
            )
            for agent, script in _checked_subagents(subagents, name).items()
        }
        """The script of each subagent key in ``subagents``: a path (``"planner/research"``,
        the subagent ``research`` that ``planner`` spawned) is that subagent only; a bare name
        (``"research"``) is every subagent of that name, at any depth, that no path names. The
        calls of such a subagent play its turns (and are recorded there); other agents play
        the main script."""
        for script in self.subagents.values():
            script._owner = ""
        try:
            self.chunking = Chunking(chunking)
        except ValueError:
            valid = ", ".join(Chunking)
            raise InvalidScriptError(
                None, f"chunking {chunking!r} is not one of: {valid}", where=name
            ) from None
        if isinstance(turns, str | Turn):
            raise InvalidScriptError(
                None, f"turns must be a list of turns, got one: write {name}([{turns!r}])"
            )
        self.turns = tuple(Turn(text=t) if isinstance(t, str) else t for t in turns)
        for number, turn in enumerate(self.turns, start=1):
            if not isinstance(turn, Turn):
                raise InvalidScriptError(
                    number, f"expected a Turn or a string, got {type(turn).__name__}"
                )
            problem = turn.problem()
            if problem is not None:
                raise InvalidScriptError(number, problem)
        self._plays = tuple((turn.latency, _player(turn)) for turn in self.turns)
        self._next = 0
        self.overruns: list[int] = []
        """1-based numbers of calls made after the script ran out."""

    @property
    def remaining(self) -> int:
        """Turns not played yet."""
        return len(self.turns) - self._next

    @property
    def exhausted(self) -> bool:
        """True when every turn was played."""
        return self.remaining == 0

    def _script_of(self, agent: AgentIdentity) -> ScriptedLLM | None:
        """The subagent script ``agent`` plays: the one of its path, else of its name; None
        for the main script."""
        if agent.name is None:
            return None
        own = self.subagents.get(agent.path)
        return own if own is not None else self.subagents.get(agent.name)

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Play the next turn (its latency advances the clock)."""
        if self.subagents:
            own = self._script_of(current_agent())
            if own is not None:
                return own.infer(request)
        latency, play = self._take()
        if latency:
            self._advance(latency, self._next)
        return self._record(request, play)

    async def ainfer(self, request: InferenceRequest) -> InferenceResponse:
        """Play the next turn in the async path (its latency is a ``FakeClock.sleep``)."""
        if self.subagents:
            own = self._script_of(current_agent())
            if own is not None:
                return await own.ainfer(request)
        latency, play = self._take()
        if latency:
            await self._sleep(latency, self._next)
        return self._record(request, play)

    def infer_stream(self, request: InferenceRequest) -> Generator[Delta, None, InferenceResponse]:
        """Play the next turn, then hand its answer out in pieces; returns the whole answer."""
        response = self.infer(request)
        yield from _pieces_of(response, self.chunking)
        return response

    def _take(self) -> tuple[float, Callable[[], InferenceResponse]]:
        index = self._next
        if index >= len(self._plays):
            if self.repeat_last and self._plays:
                if not self.turns[-1].calls or self._repeats < self.repeat_limit:
                    self._repeats += 1
                    return self._plays[-1]
                self.looped = True
            number = len(self.turns) + self._repeats + len(self.overruns) + 1
            self.overruns.append(number)
            raise ScriptExhaustedError(
                f"{self.name}, asked by {current_agent()}", number, len(self.turns)
            )
        self._next = index + 1
        return self._plays[index]

    def assert_complete(self) -> None:
        """Raise ``UnusedTurnsError`` when some turns were never played (of the main script
        first, then of each subagent's, which the error names)."""
        if self.remaining:
            unused = list(range(self._next + 1, len(self.turns) + 1))
            raise UnusedTurnsError(f"{self.name}{self._owner}", unused)
        for script in self.subagents.values():
            script.assert_complete()

    def __repr__(self) -> str:
        repeat = ", repeat_last=True" if self.repeat_last else ""
        return f"ScriptedLLM(turns={len(self.turns)}, remaining={self.remaining}{repeat})"


class FunctionLLM(_Recorder):
    """Answers each request by calling ``function(request)``, which returns a response, a
    ``Turn`` or a string. The function may be ``async def``: the async path awaits it, the sync
    path runs it on a private event loop."""

    def __init__(
        self,
        function: Callable[[InferenceRequest], Answer | Awaitable[Answer]],
        *,
        clock: FakeClock | None = None,
    ) -> None:
        super().__init__(clock)
        if not callable(function):
            raise InvalidScriptError(
                None,
                f"expected a function of the request returning the answer, got "
                f"{type(function).__name__} {function!r} (for fixed answers, use ScriptedLLM)",
                where="FunctionLLM",
            )
        self.function = function
        self.name = getattr(function, "__name__", "FunctionLLM")

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Call the function."""
        return self._record(request, lambda: self._answer(request))

    async def ainfer(self, request: InferenceRequest) -> InferenceResponse:
        """Call (and await) the function in the async path."""
        try:
            answer = self.function(request)
            if inspect.isawaitable(answer):
                answer = await answer
            turn = self._checked(answer)
            if isinstance(turn, Turn):
                await self._sleep(turn.latency, len(self._log) + 1)
            response = turn if isinstance(turn, InferenceResponse) else turn.to_response()
        except Exception as error:
            self._failed(request, error)
            raise
        self._log.append((request, response, None))
        return response

    def _answer(self, request: InferenceRequest) -> InferenceResponse:
        answer = self.function(request)
        if inspect.isawaitable(answer):
            answer = run_coroutine(answer, f"FunctionLLM {self.name} (asked by {current_agent()})")
        turn = self._checked(answer)
        if isinstance(turn, InferenceResponse):
            return turn
        self._advance(turn.latency, len(self._log) + 1)
        return turn.to_response()

    def _checked(self, answer: object) -> InferenceResponse | Turn:
        """The function's ``answer`` as a response or a checked turn."""
        if isinstance(answer, InferenceResponse):
            return answer
        number = len(self._log) + 1
        where = f"{self.name}, call {number} (asked by {current_agent()})"
        if not isinstance(answer, str | Turn):
            reason = (
                "the function must return an InferenceResponse, a Turn or a string, "
                f"got {type(answer).__name__}"
            )
            raise InvalidScriptError(number, reason, where=where)
        turn = Turn(text=answer) if isinstance(answer, str) else answer
        problem = turn.problem()
        if problem is not None:
            raise InvalidScriptError(number, problem, where=where)
        return turn

    def __repr__(self) -> str:
        return f"FunctionLLM({self.name})"


def _checked_subagents(
    subagents: Mapping[str, Iterable[Turn | str]] | None, name: str
) -> Mapping[str, Iterable[Turn | str]]:
    """``subagents`` when it maps subagent names to scripts; else an ``InvalidScriptError``."""
    if subagents is None:
        return {}
    if not isinstance(subagents, Mapping):
        reason = (
            "subagents must map subagent names to their scripts "
            f"({{'researcher': [reply('...')]}}), got {type(subagents).__name__}"
        )
        raise InvalidScriptError(None, reason, where=name)
    for agent in subagents:
        if not isinstance(agent, str) or not agent:
            reason = f"subagents: a subagent name must be a non-empty string, got {agent!r}"
            raise InvalidScriptError(None, reason, where=name)
        if "" in agent.split("/"):
            reason = (
                f"subagents: {agent!r} is not a subagent name nor a path of names joined by "
                "'/' (like 'planner/research')"
            )
            raise InvalidScriptError(None, reason, where=name)
    return subagents


def _pieces_of(response: InferenceResponse, chunking: Chunking) -> Iterator[Delta]:
    """``response`` as the pieces a streaming provider would send, cut as ``chunking`` says."""
    size = None if chunking is Chunking.WHOLE else 1
    if response.reasoning_content:
        for text in _cut(response.reasoning_content, size):
            yield Delta(reasoning=text)
    if response.content:
        for text in _cut(response.content, size):
            yield Delta(text=text)
    streams = [_call_pieces(index, call, size) for index, call in enumerate(response.tool_calls)]
    if chunking is Chunking.INTERLEAVED:
        while streams:
            for stream in list(streams):
                piece = next(stream, None)
                if piece is None:
                    streams.remove(stream)
                else:
                    yield piece
    else:
        for stream in streams:
            yield from stream


def _call_pieces(index: int, call: ToolCall, size: int | None) -> Iterator[Delta]:
    text = json.dumps(call.arguments, ensure_ascii=False)
    for number, piece in enumerate(_cut(text, size)):
        first = number == 0
        yield Delta(
            index=index,
            call_id=call.id if first else None,
            name=call.name if first else None,
            arguments=piece,
        )


def _cut(text: str, size: int | None) -> Iterator[str]:
    if size is None:
        yield text
        return
    for start in range(0, len(text), size):
        yield text[start : start + size]


Answer = InferenceResponse | Turn | str
"""What a ``FunctionLLM``'s function returns (or an async one's coroutine)."""
