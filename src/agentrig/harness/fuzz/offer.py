"""What the agent offers the model, read from its first request: the tools (name, description,
JSON Schema), the user's message as sent, the system prompt. The strategies build on it."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from agentrig.errors import ConfigurationError
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.endpoint.wire.base import FormatName
from agentrig.harness.fuzz.run import bounded
from agentrig.harness.fuzz.target import Target
from agentrig.harness.fuzz.waits import agent_waits
from agentrig.harness.scenarios.model import (
    InvariantSelection,
    ModelReply,
    RetryRule,
    Scenario,
    ScenarioTurn,
)
from agentrig.messages import Role
from agentrig.state import ToolSchema

__all__ = ["PROBE_ANSWER", "Offer", "probe", "probe_scenario"]

PROBE_ANSWER = "OK."
"""What the model answers the probe's requests."""


@dataclass(frozen=True)
class Offer:
    """The agent's first request, as far as the strategies need it."""

    tools: tuple[ToolSchema, ...]
    users: tuple[str, ...]
    """The user messages of the first request, oldest first (a scenario turn each: the model
    answers the last)."""
    system: str | None = None
    format: FormatName = "chat"

    def tool(self, name: str) -> ToolSchema | None:
        """The offered tool called ``name``, if any."""
        return next((tool for tool in self.tools if tool.name == name), None)


def probe_scenario(prompt: str) -> Scenario:
    """A scenario whose model answers every request with :data:`PROBE_ANSWER`, whatever user
    messages it carries (an agent's first request may carry earlier turns: its one turn takes
    them all, however many)."""
    every = RetryRule(contains="", max=sys.maxsize)  # a history of any length
    turn = ScenarioTurn(
        user=prompt, model=(ModelReply(say=PROBE_ANSWER, repeat=True),), retries=every
    )
    return Scenario(name="fuzz-probe", turns=(turn,), invariants=InvariantSelection(only=()))


def probe(ep: EndpointHandle, target: Target, prompt: str, *, max_model_calls: int) -> Offer:
    """Run ``target`` once against a model that only answers :data:`PROBE_ANSWER` (at most
    ``max_model_calls`` times), and read what its first request offers. ``ConfigurationError``
    when the agent sent no request or failed on that plain answer (nothing generated could be
    blamed then)."""
    session = ep.play(bounded(probe_scenario(prompt), max_model_calls))
    with agent_waits(ep):
        _, raised = target.run(ep, prompt)
    where = f"fuzz target {target.reference or target!r}"
    if not session.exchanges:
        problem = f"{raised!r}" if raised is not None else "it returned without one"
        raise ConfigurationError(
            f"{where} sent no request to the endpoint ({problem}): build its model client "
            "from the endpoint handle it is given (ep.api_key, ep.openai_base_url or "
            "ep.anthropic_base_url, ep.httpx2_client() or ep.async_httpx2_client())"
        )
    if raised is not None:
        raise ConfigurationError(
            f"{where} raised {type(raised).__name__}: {raised} when the model only answered "
            f"{PROBE_ANSWER!r}: make it pass that plain run first"
        )
    first = session.exchanges[0]
    users = tuple(m.content for m in first.conversation if m.role is Role.USER)
    return Offer(
        tools=session.offered or (),
        users=users or (prompt,),
        system=first.system,
        format=first.format,
    )
