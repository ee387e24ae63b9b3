"""Errors raised by fakes when they are used differently from their script."""

from __future__ import annotations

from agentrig.errors import AgentrigError


class ScriptError(AgentrigError):
    """A fake was used differently from its script. Turns and calls are numbered from 1."""


class InvalidScriptError(ScriptError):
    """A script is malformed; ``turn`` is the 1-based position of the bad entry, or None when the
    problem is not in one entry (a scripted tool's parameter declaration)."""

    def __init__(self, turn: int | None, reason: str) -> None:
        self.turn = turn
        self.reason = reason
        where = f"scripted turn {turn}" if turn is not None else "invalid script"
        super().__init__(f"{where}: {reason}")


class ScriptExhaustedError(ScriptError):
    """The code under test made more calls than scripted."""

    def __init__(self, name: str, call_number: int, scripted: int) -> None:
        self.name = name
        self.call_number = call_number
        self.scripted = scripted
        super().__init__(
            f"{name}: call {call_number} was not scripted (the script has {scripted} turn(s)); "
            "add a turn or check why the agent did not stop"
        )


class UnusedTurnsError(ScriptError):
    """Scripted turns were never used."""

    def __init__(self, name: str, unused: list[int]) -> None:
        self.name = name
        self.unused = unused
        numbers = ", ".join(str(number) for number in unused)
        super().__init__(f"{name}: scripted turn(s) {numbers} were never used")


class UnexpectedToolCallError(ScriptError):
    """A scripted tool received a call no reply matches."""

    def __init__(self, tool: str, call_number: int, arguments: object) -> None:
        self.tool = tool
        self.call_number = call_number
        super().__init__(
            f"scripted tool '{tool}': call {call_number} with arguments {arguments!r} "
            "matches no scripted reply"
        )
