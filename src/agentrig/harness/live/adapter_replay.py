"""A scripted scenario whose agent is an adapter (``agent.adapter``, the function of the
conversation that live trials call): the scenario endpoint plays its model in this process, the
function is called once per turn with the conversation so far, and the endpoint's checks of
every request decide the result. This is how a live trial converted by ``agentrig convert``
runs under ``agentrig run``: the adapter builds its model SDK's client from
``current_trial().http_client()``, as in the trial, and gets the recorded answers."""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any

from agentrig.errors import ConfigurationError
from agentrig.harness.endpoint.service import ScenarioEndpoint
from agentrig.harness.endpoint.transports import httpx2_transport
from agentrig.harness.live.agent import call_adapter, resolve_adapter
from agentrig.harness.live.roles import close_clients
from agentrig.harness.live.transcript import agent_reply_of
from agentrig.harness.live.trial import TrialContext, in_trial, leave_trial
from agentrig.harness.results import Failure, ScenarioResult
from agentrig.harness.scenarios.model import Scenario
from agentrig.harness.scenarios.user_code import describe_failure

__all__ = ["fuzzed_agent_problem", "run_adapter_scenario"]


class _EndpointClients:
    """Model clients whose requests the scenario endpoint answers, in this process."""

    def __init__(self, endpoint: ScenarioEndpoint) -> None:
        self.endpoint = endpoint
        self._clients: list[Any] = []

    def http_client(self, **options: Any) -> Any:
        import httpx2

        client = httpx2.AsyncClient(transport=httpx2_transport(self.endpoint), **options)
        self._clients.append(client)
        return client

    def sync_http_client(self, **options: Any) -> Any:
        import httpx2

        client = httpx2.Client(transport=httpx2_transport(self.endpoint), **options)
        self._clients.append(client)
        return client

    async def aclose(self) -> None:
        await close_clients(tuple(self._clients))


def fuzzed_agent_problem(scenario: Scenario) -> str | None:
    """Why ``agentrig run`` cannot call ``scenario``'s adapter: it takes the endpoint handle
    and the user's message (``agent(ep, prompt)``, an agent ``agentrig fuzz`` plays and wrote
    this scenario for) rather than the conversation. None when it takes the conversation (or
    cannot be found: running it says why)."""
    reference = scenario.agent.adapter
    assert reference is not None
    try:
        function = resolve_adapter(reference)
        parameters = inspect.signature(function).parameters.values()
    except (ConfigurationError, TypeError, ValueError):
        return None
    required = [
        p
        for p in parameters
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(required) < 2:
        return None
    source = scenario.source
    file = source.path if source is not None else "FILE"
    return (
        f"agent.adapter {reference!r} takes the endpoint and the user's message (an agent "
        f"agentrig fuzz plays), not the conversation: replay this scenario with agentrig fuzz "
        f"--replay {file}"
    )


def run_adapter_scenario(scenario: Scenario) -> ScenarioResult:
    """Run ``scenario``'s turns through its ``agent.adapter`` against the scenario endpoint;
    the endpoint's result of the session, with a failure for an adapter that raised or
    returned something that is not a reply."""
    assert scenario.agent.adapter is not None
    started = time.perf_counter()
    reference = scenario.agent.adapter
    where = scenario.nearest_location(("agent", "adapter"))
    endpoint = ScenarioEndpoint([scenario])
    clients = _EndpointClients(endpoint)
    problems: list[Failure] = []

    async def play() -> None:
        function = resolve_adapter(reference)
        conversation: list[dict[str, str]] = []
        token = in_trial(TrialContext(scenario.name, 0, 1, 0, gate=clients))
        try:
            for number, turn in enumerate(scenario.turns, start=1):
                conversation.append({"role": "user", "content": turn.user})
                try:
                    value = await call_adapter(function, conversation)
                    reply = agent_reply_of(value, f"adapter {reference!r}")
                except Exception as error:
                    message = (
                        f"turn {number}: adapter {reference!r} raised {describe_failure(error)}"
                    )
                    problems.append(Failure(kind="error", message=message, location=where))
                    return
                conversation.append({"role": "assistant", "content": reply.content})
        finally:
            leave_trial(token)
            await clients.aclose()

    try:
        asyncio.run(play())
    except Exception as error:  # the adapter could not be found or made
        problems.append(Failure(kind="error", message=str(error), location=where))
    results = endpoint.results()
    result = results[0] if results else _no_session(scenario)
    failures = (*problems, *result.failures)
    return result.model_copy(
        update={
            "passed": not failures,
            "failures": failures,
            "wall_time_s": time.perf_counter() - started,
            "session": None,  # a run of agentrig run, not one agent among a server's
        }
    )


def _no_session(scenario: Scenario) -> ScenarioResult:
    """The result of a run whose adapter sent no request: every scripted reply unused."""
    from agentrig.harness.endpoint.session import EndpointSession

    # marked: the key names the session, which run_adapter_scenario's result leaves out
    return EndpointSession(scenario, key="").result()  # pragma: no mutate
