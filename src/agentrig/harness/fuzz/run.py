"""One example: a generated scenario served as a fresh endpoint session, the agent run against
it, and what crossed the wire."""

from __future__ import annotations

from dataclasses import dataclass

from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.endpoint.session import EndpointSession, Exchange
from agentrig.harness.fuzz.target import Target
from agentrig.harness.fuzz.waits import agent_waits
from agentrig.harness.results import Failure
from agentrig.harness.scenarios.model import Scenario
from agentrig.messages import ToolCall

__all__ = ["AgentRun", "bounded", "play"]


@dataclass(frozen=True)
class AgentRun:
    """What one example saw: the scenario played, what the agent returned or raised, every
    request it sent (with how it was answered), and the wire checks that failed."""

    scenario: Scenario
    prompt: str
    returned: object
    raised: Exception | None
    exchanges: tuple[Exchange, ...]
    wire_failures: tuple[Failure, ...]

    @property
    def model_calls(self) -> int:
        """How many requests the agent sent."""
        return len(self.exchanges)

    def answered_calls(self) -> tuple[tuple[int, ToolCall], ...]:
        """Every tool call the model made, with the number of the request it answered."""
        return tuple(
            (exchange.number, call)
            for exchange in self.exchanges
            if (answer := exchange.received_answer) is not None
            for call in answer.tool_calls
        )


def play(
    ep: EndpointHandle, target: Target, scenario: Scenario, prompt: str, *, max_model_calls: int
) -> AgentRun:
    """Serve ``scenario`` as a fresh session of ``ep`` and run ``target`` on ``prompt``; the
    endpoint answers at most ``max_model_calls`` requests, and refuses the next one. In process
    the agent's waits take no time (:mod:`~agentrig.harness.fuzz.waits`)."""
    session = ep.play(bounded(scenario, max_model_calls))
    with agent_waits(ep):
        returned, raised = target.run(ep, prompt)
    return _run_of(session, scenario, prompt, returned, raised)


def bounded(scenario: Scenario, limit: int) -> Scenario:
    """``scenario`` with its last turn's script cut to ``limit`` replies, a repeating last reply
    written out, so that the script ends after at most ``limit`` replies (an agent that never
    stops then gets an error, not an answer). A last turn without a script (``model: auto``, a
    mixture) is left as it is."""
    last = scenario.turns[-1]
    replies = last.replies
    if not replies:
        return scenario
    if replies[-1].repeat:
        final = replies[-1].model_copy(update={"repeat": False})
        replies = (*replies[:-1], *([final] * limit))
    turn = last.model_copy(update={"model": replies[:limit]})
    return scenario.model_copy(update={"turns": (*scenario.turns[:-1], turn)})


def _run_of(
    session: EndpointSession,
    scenario: Scenario,
    prompt: str,
    returned: object,
    raised: Exception | None,
) -> AgentRun:
    # ``failures`` holds what the session found while it answered (broken invariants, requests
    # it could not read), not the unused script a fuzzed agent may well leave.
    return AgentRun(
        scenario=scenario,
        prompt=prompt,
        returned=returned,
        raised=raised,
        exchanges=tuple(session.exchanges),
        wire_failures=tuple(session.failures),
    )
