"""What happened in one live trial: the conversation between the simulated user and the agent,
and the tools the agent called on the way."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentrig.state import Usage
from agentrig.state.usage import ZERO_USAGE

__all__ = ["AgentReply", "CalledTool", "Exchange", "Transcript", "agent_reply_of"]


@dataclass(frozen=True, slots=True)
class CalledTool:
    """A tool the agent called while answering: its name, arguments and, when known, result."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    result: str | None = None
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class AgentReply:
    """The agent's answer to one user message: its text, the tools it called first, and what
    its model calls cost (``usage.cost``, in USD when the provider is priced)."""

    content: str
    tool_calls: tuple[CalledTool, ...] = ()
    usage: Usage = ZERO_USAGE


@dataclass(frozen=True, slots=True)
class Exchange:
    """One user message and the agent's reply to it (None when the agent never replied)."""

    user: str
    reply: AgentReply | None = None


@dataclass(frozen=True, slots=True)
class Transcript:
    """The conversation so far, in order."""

    exchanges: tuple[Exchange, ...] = ()

    def with_exchange(self, exchange: Exchange) -> Transcript:
        """This transcript with ``exchange`` added at the end."""
        return Transcript((*self.exchanges, exchange))

    def replies(self) -> Iterator[AgentReply]:
        """The agent's replies, in order."""
        return (e.reply for e in self.exchanges if e.reply is not None)

    def tool_calls(self) -> tuple[CalledTool, ...]:
        """Every tool call of the agent, in order."""
        return tuple(call for reply in self.replies() for call in reply.tool_calls)

    def final_response(self) -> str:
        """The agent's last reply ("" before it replied)."""
        last = ""
        for reply in self.replies():
            last = reply.content
        return last

    def messages(self) -> list[dict[str, str]]:
        """The conversation as ``{role, content}`` messages (what an adapter is given)."""
        out: list[dict[str, str]] = []
        for exchange in self.exchanges:
            out.append({"role": "user", "content": exchange.user})
            if exchange.reply is not None:
                out.append({"role": "assistant", "content": exchange.reply.content})
        return out

    def render(self) -> str:
        """The conversation as plain text, one line a message, for the judge and reports."""
        lines: list[str] = []
        for exchange in self.exchanges:
            lines.append(f"USER: {exchange.user}")
            if exchange.reply is None:
                continue
            for call in exchange.reply.tool_calls:
                args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
                lines.append(f"AGENT CALLED TOOL: {call.name}({args})")
                if call.result is not None:
                    marker = "TOOL ERROR" if call.is_error else "TOOL RESULT"
                    lines.append(f"{marker}: {call.result}")
            lines.append(f"AGENT: {exchange.reply.content}")
        return "\n".join(lines)


def agent_reply_of(value: object, where: str) -> AgentReply:
    """An adapter's return value as an :class:`AgentReply`: a str, an ``AgentReply``, or a
    mapping ``{content, tool_calls: [{name, arguments, result?, is_error?}], usage: {...},
    cost}``. Anything else is a ``TypeError`` naming ``where``."""
    if isinstance(value, AgentReply):
        return value
    if isinstance(value, str):
        return AgentReply(value)
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{where} returned {type(value).__name__}: return the reply's text (a str), or a "
            "dict {content, tool_calls, usage, cost}"
        )
    unknown = set(value) - {"content", "tool_calls", "usage", "cost"}
    if unknown:
        raise TypeError(
            f"{where} returned unknown keys {sorted(unknown)}: a reply has content, "
            "tool_calls, usage and cost"
        )
    content = value.get("content", "")
    if not isinstance(content, str):
        raise TypeError(f"{where} returned content of type {type(content).__name__}: use a str")
    listed = value.get("tool_calls") or ()
    if not isinstance(listed, list | tuple):
        raise TypeError(f"{where} returned tool_calls {listed!r}: use a list of tool calls")
    calls = tuple(_called_tool(call, where) for call in listed)
    given = value.get("usage") or {}
    if not isinstance(given, Mapping):
        raise TypeError(f"{where} returned usage {given!r}: use a dict of token counts")
    usage_data = dict(given)
    if "cost" in value:
        usage_data["cost"] = value["cost"]
    try:
        usage = Usage.model_validate(usage_data)
    except ValueError as error:
        raise TypeError(f"{where} returned bad usage: {error}") from None
    return AgentReply(content, calls, usage)


def _called_tool(call: object, where: str) -> CalledTool:
    if isinstance(call, CalledTool):
        return call
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
        raise TypeError(f"{where} returned a tool call {call!r}: use {{name, arguments, result}}")
    unknown = set(call) - {"name", "arguments", "result", "is_error"}
    if unknown:  # a misspelt key ("args") would drop what it holds
        raise TypeError(
            f"{where} returned a tool call with unknown keys {sorted(unknown)}: a tool call has "
            "name, arguments, result and is_error"
        )
    arguments = call.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise TypeError(f"{where} returned arguments {arguments!r}: use a dict")
    result = call.get("result")
    return CalledTool(
        call["name"],
        dict(arguments),
        None if result is None else str(result),
        bool(call.get("is_error")),
    )
