"""``ScriptedTool``: a tool that answers from a script, by argument match or in sequence."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import JsonValue

from agentrig._model import json_equal
from agentrig.caller import current_agent
from agentrig.errors import AgentStop, InvalidToolArgumentsError
from agentrig.fakes.clock import FakeClock, is_seconds, latency_clock
from agentrig.fakes.errors import (
    InvalidScriptError,
    ScriptExhaustedError,
    UnexpectedToolCallError,
    UnusedTurnsError,
)
from agentrig.tools import Tool, ToolContext

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


class ScriptedToolError(RuntimeError):
    """What a scripted tool raises for a ``raises`` reply."""


class ReplyMode(StrEnum):
    """How a scripted tool picks its reply."""

    MATCH = "match"
    """The first reply whose ``when`` matches the arguments; replies are reusable."""
    SEQUENCE = "sequence"
    """Replies are consumed in order, one per call."""


@dataclass(frozen=True)
class ToolReply:
    """One scripted reply: return a value, raise an error, or stop the agent."""

    returns: JsonValue = None
    raises: str | None = None
    stop: str | None = None
    when: Mapping[str, JsonValue] | None = None
    latency: float = 0.0

    def matches(self, arguments: Mapping[str, Any]) -> bool:
        """True when every ``when`` key has the same value in ``arguments``."""
        if self.when is None:
            return True
        return all(
            key in arguments and json_equal(value, arguments[key])
            for key, value in self.when.items()
        )


@dataclass
class ToolCallRecord:
    """One call received by a scripted tool (1-based number) and the reply used."""

    number: int
    arguments: dict[str, Any]
    reply: int | None = field(default=None)


class ScriptedTool(Tool):
    """A tool whose answers are scripted. ``params`` maps names to JSON types (``"string?"`` = optional)."""

    def __init__(
        self,
        name: str,
        replies: Iterable[ToolReply],
        *,
        params: Mapping[str, str] | None = None,
        description: str = "",
        mode: ReplyMode | str = ReplyMode.MATCH,
        clock: FakeClock | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            reason = f"a tool name must be a non-empty string, got {name!r}"
            raise InvalidScriptError(None, reason, where="ScriptedTool")
        self.name = name
        self.description = description or f"Scripted tool {name}."
        self.replies = self._checked_replies(replies)
        self.params = self._checked_params(params)
        self.mode = self._checked_mode(mode)
        self.clock = clock
        self.calls: list[ToolCallRecord] = []
        self._next = 0
        self._validate_script()

    def _invalid(self, number: int | None, reason: str) -> InvalidScriptError:
        where = f"scripted tool '{self.name}'" + (f" reply {number}" if number else "")
        return InvalidScriptError(number, reason, where=where)

    def _checked_replies(self, replies: Iterable[ToolReply]) -> tuple[ToolReply, ...]:
        if not isinstance(replies, Iterable):
            reason = f"replies must be an iterable of ToolReply, got {type(replies).__name__}"
            raise self._invalid(None, reason)
        return tuple(replies)

    def _checked_params(self, params: Mapping[str, str] | None) -> dict[str, str]:
        if params is not None and not isinstance(params, Mapping):
            reason = (
                "params must map parameter names to JSON types ({'city': 'string'}), "
                f"got {type(params).__name__}"
            )
            raise self._invalid(None, reason)
        return dict(params or {})

    def _checked_mode(self, mode: ReplyMode | str) -> ReplyMode:
        try:
            return ReplyMode(mode)
        except ValueError:
            valid = ", ".join(ReplyMode)
            raise self._invalid(None, f"mode {mode!r} is not one of: {valid}") from None

    def _validate_script(self) -> None:
        catch_all: int | None = None
        for number, reply in enumerate(self.replies, start=1):
            problem = self._reply_problem(reply, catch_all)
            if problem is not None:
                raise self._invalid(number, problem)
            if reply.when is None and catch_all is None:
                catch_all = number
        for param, kind in self.params.items():
            if not isinstance(kind, str) or kind.rstrip("?") not in JSON_TYPES:
                valid = ", ".join(JSON_TYPES)
                raise self._invalid(None, f"param '{param}': type {kind!r} is not one of {valid}")

    def _reply_problem(self, reply: object, catch_all: int | None) -> str | None:
        """Why ``reply`` cannot be used, or None; ``catch_all`` is the first reply without when."""
        if not isinstance(reply, ToolReply):
            return f"expected a ToolReply, got {type(reply).__name__}"
        if sum(outcome is not None for outcome in (reply.returns, reply.raises, reply.stop)) > 1:
            return "a reply has one of returns/raises/stop"
        latency = reply.latency
        if not is_seconds(latency):
            return f"latency must be a finite number of seconds >= 0, got {latency!r}"
        return self._when_problem(reply.when, catch_all)

    def _when_problem(self, when: object, catch_all: int | None) -> str | None:
        if when is None:
            return None
        if not isinstance(when, Mapping):
            return f"when must be a mapping of argument names to values, got {type(when).__name__}"
        if self.mode is ReplyMode.SEQUENCE:
            return "when only applies to mode 'match' (sequence replies are used in order)"
        if catch_all is not None:
            return f"unreachable: reply {catch_all} has no when, so it answers every call first"
        unknown = [key for key in when if key not in self.params] if self.params else []
        if unknown:
            return f"when key {unknown[0]!r} is not a parameter ({', '.join(self.params)})"
        return None

    def parameters(self) -> dict[str, Any]:
        """JSON Schema from ``params``."""
        properties = {name: {"type": kind.rstrip("?")} for name, kind in self.params.items()}
        required = [name for name, kind in self.params.items() if not kind.endswith("?")]
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }

    def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> Any:
        """Answer from the script (a reply's latency advances the clock)."""
        reply = self._reply(arguments)
        clock = self._latency_clock(reply)
        if clock is not None:
            clock.advance(reply.latency)
        return self._outcome(reply)

    async def ainvoke(self, arguments: Mapping[str, Any], context: ToolContext) -> Any:
        """Answer from the script in the async path: a reply's latency is a ``FakeClock.sleep``,
        so the latencies of calls running together overlap."""
        reply = self._reply(arguments)
        clock = self._latency_clock(reply)
        if clock is not None:
            await clock.sleep(reply.latency)
        return self._outcome(reply)

    def _latency_clock(self, reply: ToolReply) -> FakeClock | None:
        """The clock the reply's latency moves (see ``latency_clock``), or an error naming the
        call when there is none: a latency on the wall clock would really wait."""
        if not reply.latency:
            return None
        clock = latency_clock(self.clock)
        if clock is None:
            raise self._invalid(
                self.calls[-1].reply,
                f"call {len(self.calls)}: latency {reply.latency}s needs a FakeClock: run the agent on "
                "one (AgentBuilder.with_clock(FakeClock())) or pass clock=... to the tool",
            )
        return clock

    def _reply(self, arguments: Mapping[str, Any]) -> ToolReply:
        record = ToolCallRecord(len(self.calls) + 1, dict(arguments))
        self.calls.append(record)
        self._check_arguments(arguments)
        index = self._pick(record)
        record.reply = index + 1
        return self.replies[index]

    def _outcome(self, reply: ToolReply) -> Any:
        if reply.stop is not None:
            raise AgentStop(reply.stop, source=f"tool:{self.name}")
        if reply.raises is not None:
            raise ScriptedToolError(reply.raises)
        return reply.returns

    def _check_arguments(self, arguments: Mapping[str, Any]) -> None:
        if not self.params:
            return
        problems: list[tuple[str, str]] = []
        for name, kind in self.params.items():
            if name not in arguments:
                if not kind.endswith("?"):
                    problems.append((name, "Field required"))
                continue
            types = JSON_TYPES[kind.rstrip("?")]
            value = arguments[name]
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                problems.append((name, f"expected {kind.rstrip('?')}, got {type(value).__name__}"))
        problems.extend(
            (name, "unexpected argument") for name in arguments if name not in self.params
        )
        if problems:
            raise InvalidToolArgumentsError(self.name, problems)

    def _pick(self, record: ToolCallRecord) -> int:
        if self.mode is ReplyMode.SEQUENCE:
            if self._next >= len(self.replies):
                raise ScriptExhaustedError(
                    f"scripted tool '{self.name}', asked by {current_agent()}",
                    record.number,
                    len(self.replies),
                    unit="reply",
                )
            self._next += 1
            return self._next - 1
        for index, reply in enumerate(self.replies):
            if reply.matches(record.arguments):
                return index
        whens = [reply.when for reply in self.replies]
        raise UnexpectedToolCallError(
            self.name, record.number, record.arguments, whens, asker=str(current_agent())
        )

    def unused_replies(self) -> list[int]:
        """1-based numbers of replies never used."""
        used = {record.reply for record in self.calls}
        return [number for number in range(1, len(self.replies) + 1) if number not in used]

    def assert_complete(self) -> None:
        """Raise ``UnusedTurnsError`` when some replies were never used."""
        unused = self.unused_replies()
        if unused:
            raise UnusedTurnsError(f"scripted tool '{self.name}'", unused, unit="reply")
