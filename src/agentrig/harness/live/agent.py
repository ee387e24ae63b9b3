"""The agent under test in a live trial: an agentrig builder (``agent.builder``), whose model
calls pass the trial's gateway, or any agent through an adapter (``agent.adapter``), a function
of the conversation so far that returns the agent's reply."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from agentrig import AgentBuilder, AgentLoop, AgentState
from agentrig.drivers.tool_calling import ToolCallingDriver
from agentrig.errors import ConfigurationError
from agentrig.harness.live.gateway import (
    CallControl,
    Ledger,
    RoleProvider,
    access_denied_status,
    is_infrastructure_error,
    is_infrastructure_status,
    provider_name_of,
)
from agentrig.harness.live.roles import close_clients, sdk_clients, with_trial_header
from agentrig.harness.live.transcript import (
    AgentReply,
    CalledTool,
    Transcript,
    agent_reply_of,
)
from agentrig.harness.scenarios.user_agent import resolve_builder, resolve_reference
from agentrig.harness.scenarios.user_code import describe_failure
from agentrig.messages import Role

if TYPE_CHECKING:
    from agentrig.harness.live.adapter_gate import AdapterGate

__all__ = [
    "AccessDenied",
    "AdapterAgent",
    "AdapterTape",
    "AgentCrashed",
    "AgentUnderTest",
    "BuilderAgent",
    "InfrastructureFailure",
    "agent_driver",
    "builder_for",
    "call_adapter",
    "resolve_adapter",
]

_INFRA_NAMES = ("RateLimitError", "APIConnectionError", "APITimeoutError", "InternalServerError")


class InfrastructureFailure(Exception):
    """The agent could not answer because its provider failed (rate limited after every retry,
    overloaded, unreachable): the trial is set aside, not failed."""


class AccessDenied(Exception):
    """The agent's model refused its credentials (HTTP 401, 403): the run's setup is wrong,
    and the scenario stops."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class AgentCrashed(Exception):
    """The agent raised instead of replying: the trial fails, the error is its reason."""


class AgentUnderTest(Protocol):
    """An agent a trial talks to."""

    async def respond(self, transcript: Transcript, message: str) -> AgentReply:
        """The agent's reply to ``message``, after ``transcript``."""
        ...


class BuilderAgent:
    """An agentrig agent made by ``agent.builder``, its model asked through the trial's
    gateway (recorded, replayed, capped, budgeted). One instance per trial."""

    def __init__(
        self,
        builder: AgentBuilder,
        *,
        control: CallControl,
        ledger: Ledger,
        replay: Any = None,
        trial_key: str = "",
        record: bool = True,
    ) -> None:
        driver = agent_driver(builder)
        self.made = driver.provider
        inner = with_trial_header(driver.provider, trial_key) if trial_key else driver.provider
        self.provider = RoleProvider(
            inner,
            role="agent",
            provider_name=provider_name_of(inner),
            control=control,
            ledger=ledger,
            replay=replay,
            record=record,
        )
        self.ledger = ledger
        self.loop: AgentLoop = (
            builder.copy().with_driver(driver.with_provider(self.provider)).build()
        )
        self.state: AgentState | None = None

    async def close(self, keep: frozenset[int] = frozenset()) -> None:
        """Close the SDK clients of the provider this trial's builder made, unless their ids,
        or the provider's, are in ``keep`` (what every trial shares)."""
        if id(self.made) in keep:
            return
        await close_clients(tuple(c for c in sdk_clients(self.made) if id(c) not in keep))

    async def respond(self, transcript: Transcript, message: str) -> AgentReply:
        """Run one execution of the agent on ``message``."""
        errors_before = len(self.ledger.infrastructure_errors)
        refused_before = len(self.ledger.access_errors)
        state = (
            self.loop.new_state(message)
            if self.state is None
            else self.loop.continue_with(self.state, message)
        )
        state = await self.loop.aexecute(state)
        self.state = state
        if self.ledger.refused is not None:
            raise self.ledger.refused
        if len(self.ledger.access_errors) > refused_before:
            error = self.ledger.access_errors[-1]
            status = access_denied_status(error)
            assert status is not None  # the ledger notes an error for its status
            raise AccessDenied(status, str(error))
        text = _final_text(state)
        if len(self.ledger.infrastructure_errors) > errors_before and not text:
            raise InfrastructureFailure(str(self.ledger.infrastructure_errors[-1]))
        return AgentReply(text, _called_tools(state), state.usage())


def _final_text(state: AgentState) -> str:
    texts = [m.content for m in state.final_response() if m.role is Role.ASSISTANT]
    return texts[-1] if texts else ""


def _called_tools(state: AgentState) -> tuple[CalledTool, ...]:
    out: list[CalledTool] = []
    for step in state.steps():
        for execution in step.tool_executions:
            call = execution.tool_call
            failed = execution.error is not None
            result = execution.error if failed else execution.content
            out.append(CalledTool(call.name, dict(call.arguments), result, failed))
    return tuple(out)


@dataclass
class AdapterTape:
    """An adapter's replies in one trial, keyed by the conversation it was given: recorded
    while the trial runs live, played back when it is replayed (the agent is not called)."""

    recorded: list[dict[str, Any]] = field(default_factory=list)
    replay: list[dict[str, Any]] | None = None
    _cursor: int = 0

    def played(self, messages: list[dict[str, str]]) -> AgentReply | None:
        """The recorded reply to ``messages``, when replaying; raises ``LookupError`` when the
        conversation differs from the recording, or the recording cannot be read."""
        if self.replay is None:
            return None
        entry = self.replay[self._cursor] if self._cursor < len(self.replay) else None
        if not isinstance(entry, dict) or entry.get("messages") != messages:
            raise LookupError("the conversation differs from the recorded one")
        try:
            reply = agent_reply_of(entry.get("reply"), "the recorded reply")
        except TypeError as error:  # a damaged recording: the trial runs live again
            raise LookupError(f"the recording cannot be read: {error}") from None
        self._cursor += 1
        self.recorded.append(entry)
        return reply

    def record(self, messages: list[dict[str, str]], reply: AgentReply) -> None:
        """Keep ``reply`` as the answer to ``messages``."""
        data = {
            "content": reply.content,
            "tool_calls": [
                {
                    "name": c.name,
                    "arguments": dict(c.arguments),
                    "result": c.result,
                    "is_error": c.is_error,
                }
                for c in reply.tool_calls
            ],
            "usage": {name: getattr(reply.usage, name) for name in _TOKENS},
            "cost": reply.usage.cost,
        }
        self.recorded.append({"messages": messages, "reply": data})


_TOKENS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


def resolve_adapter(reference: str) -> Callable[..., Any]:
    """The function ``agent.adapter`` names; ``ConfigurationError`` when it is not callable."""
    where = f"adapter {reference!r}"
    value = resolve_reference(reference, where)
    if not callable(value):
        raise ConfigurationError(
            f"{where} is {type(value).__name__}: name a function taking the conversation (a "
            "list of {role, content}) and returning the reply"
        )
    return value


class AdapterAgent:
    """Any agent, through a function of the conversation so far (a list of ``{role, content}``
    dicts ending with the user's message) that returns the reply: a str, or a dict
    ``{content, tool_calls, usage, cost}``. Sync functions run in a worker thread."""

    def __init__(
        self,
        function: Callable[..., Any],
        reference: str,
        tape: AdapterTape,
        ledger: Ledger,
        gate: AdapterGate | None = None,
    ) -> None:
        self.function = function
        self.where = f"adapter {reference!r}"
        self.tape = tape
        self.ledger = ledger
        self.gate = gate

    async def respond(self, transcript: Transcript, message: str) -> AgentReply:
        """Ask the adapted agent (or its recording)."""
        messages = [*transcript.messages(), {"role": "user", "content": message}]
        played = self.tape.played(messages)
        if played is not None:
            self.ledger.charge("agent", played.usage, replayed=True)
            return played
        if self.gate is not None:
            self.gate.mark()
        try:
            value = await call_adapter(self.function, messages)
        except Exception as error:
            if self.ledger.refused is not None:  # the gate refused a call: the budget is spent
                raise self.ledger.refused from error
            status = access_denied_status(error)
            if status is not None:
                raise AccessDenied(status, f"{self.where}: {describe_failure(error)}") from error
            if _is_infrastructure(error):
                raise InfrastructureFailure(f"{self.where}: {describe_failure(error)}") from error
            raise AgentCrashed(f"{self.where} raised {describe_failure(error)}") from error
        try:
            reply = agent_reply_of(value, self.where)
        except TypeError as error:
            raise AgentCrashed(str(error)) from None
        gated = None if self.gate is None else self.gate.since_mark()
        if gated is not None:
            # The calls passed the gate, which charged each: their usage is the reply's.
            reply = replace(reply, usage=gated)
        else:
            # The adapter's model calls are its own: the reply counts as one call of the agent.
            # (replayed=None would count as False: the same.)
            self.ledger.charge("agent", reply.usage, replayed=False)  # pragma: no mutate
        self.tape.record(messages, reply)
        return reply


async def call_adapter(function: Callable[..., Any], messages: list[dict[str, str]]) -> Any:
    """What ``function`` returns for ``messages`` (a copy): awaited when it is async, else run
    in a worker thread (and awaited when it returns an awaitable)."""
    # A coroutine function run in a thread returns its coroutine, awaited below all the same:
    # this test only saves the thread.
    if inspect.iscoroutinefunction(function):  # pragma: no mutate
        return await function(list(messages))
    value = await asyncio.to_thread(function, list(messages))
    if inspect.isawaitable(value):
        value = await value
    return value


def _is_infrastructure(error: BaseException) -> bool:
    if is_infrastructure_error(error):
        return True
    status = getattr(error, "status_code", None)
    if isinstance(status, int) and is_infrastructure_status(status):
        return True
    return any(cls.__name__ in _INFRA_NAMES for cls in type(error).__mro__)


def agent_driver(builder: AgentBuilder) -> ToolCallingDriver:
    """The driver through which a live trial asks ``builder``'s model; ``ConfigurationError``
    when it has none (a live trial needs the agent's own model)."""
    driver = builder.driver()
    if not isinstance(driver, ToolCallingDriver):
        raise ConfigurationError(
            "agent.builder: a live trial needs the agent's model: install "
            "UseLlmConfig(provider) or with_driver(ToolCallingDriver(provider))"
        )
    return driver


def builder_for(reference: str) -> AgentBuilder:
    """A fresh builder from ``agent.builder`` (a copy when it names a shared builder)."""
    return resolve_builder(reference).copy()
