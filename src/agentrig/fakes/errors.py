"""Errors raised by fakes when they are used differently from their script."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agentrig._text import counted, unit_for
from agentrig.errors import AgentrigError


class ScriptError(AgentrigError):
    """A fake was used differently from its script. Turns and calls are numbered from 1."""


class InvalidScriptError(ScriptError):
    """A script is malformed; ``turn`` is the 1-based position of the bad entry, or None when the
    problem is not in one entry (a scripted tool's parameter declaration). ``where`` replaces the
    default prefix of the message (a scripted tool names itself and its reply)."""

    def __init__(self, turn: int | None, reason: str, *, where: str | None = None) -> None:
        self.turn = turn
        self.reason = reason
        if where is None:
            where = f"scripted turn {turn}" if turn is not None else "invalid script"
        super().__init__(f"{where}: {reason}")


class ScriptExhaustedError(ScriptError):
    """The code under test made more calls than scripted."""

    def __init__(self, name: str, call_number: int, scripted: int, *, unit: str = "turn") -> None:
        self.name = name
        self.call_number = call_number
        self.scripted = scripted
        super().__init__(
            f"{name}: call {call_number} was not scripted (the script has "
            f"{counted(scripted, unit)}); add a {unit} or check why the agent did not stop"
        )


class UnusedTurnsError(ScriptError):
    """Scripted turns (or a scripted tool's replies) were never used."""

    def __init__(self, name: str, unused: list[int], *, unit: str = "turn") -> None:
        self.name = name
        self.unused = unused
        numbers = ", ".join(str(number) for number in unused)
        one = len(unused) == 1
        super().__init__(
            f"{name}: scripted {unit_for(len(unused), unit)} {numbers} "
            f"{'was' if one else 'were'} never used; remove {'it' if one else 'them'}, or check "
            f"why the agent stopped before it needed {'it' if one else 'them'}"
        )


class UnexpectedToolCallError(ScriptError):
    """A scripted tool received a call no reply matches; ``whens`` are the replies' conditions."""

    def __init__(
        self,
        tool: str,
        call_number: int,
        arguments: object,
        whens: Sequence[Mapping[str, object] | None] = (),
        *,
        asker: str | None = None,
    ) -> None:
        self.tool = tool
        self.call_number = call_number
        self.arguments = arguments
        self.asker = asker
        """The agent that made the call (``str(agentrig.current_agent())``), when known."""
        scripted = "; ".join(f"reply {n} when {when!r}" for n, when in enumerate(whens, start=1))
        asked = f", asked by {asker}" if asker else ""
        super().__init__(
            f"scripted tool '{tool}'{asked}: call {call_number} with arguments {arguments!r} "
            f"matches no scripted reply{f' ({scripted})' if scripted else ''}; add a reply "
            "whose when matches these arguments, or one without when to answer any call"
        )
