"""What every worker needs before it runs a scenario or a trial: the plugin modules, the agents
the scenarios name and (live runs) the API keys of the role models. Checked on every worker
when the run starts, so that a worker missing any fails the run at once, naming the worker and
what it could not import; a worker that joins later imports the plugins before its first task.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentrig.errors import AgentrigError, ConfigurationError
from agentrig.harness.scenarios.model import Scenario
from agentrig.harness.scenarios.user_agent import resolve_reference
from agentrig.harness.suites.plugins import load_plugins

if TYPE_CHECKING:
    from distributed import Client

    from agentrig.harness.live.run import LiveRun

__all__ = ["WorkerNeeds", "check_workers", "ensure_plugins", "needs_of"]


@dataclass(frozen=True, slots=True)
class WorkerNeeds:
    """What a worker must have: ``plugins`` to import, agent ``references``
    (``module:name``, an ``agent.builder`` or ``agent.adapter``) to find, and the environment
    variables ``keys`` that the role models read their API keys from."""

    plugins: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()


def needs_of(
    scenarios: Sequence[Scenario], plugins: Sequence[str], live: LiveRun | None = None
) -> WorkerNeeds:
    """What running ``scenarios`` needs of a worker. An agent this process cannot import either
    is left out: its scenario fails on a worker as it does here (a local run's report)."""
    references: dict[str, None] = {}
    keys: dict[str, None] = {}
    for scenario in scenarios:
        for reference in (scenario.agent.builder, scenario.agent.adapter):
            if reference is not None and _found(reference):
                references[reference] = None
        if not scenario.is_live or live is None:
            continue
        for given, owner in (
            (live.models.user, scenario.user),
            (live.models.judge, scenario.judge),
        ):
            spec = None if owner is None else owner.model
            if given is None and spec is not None and os.environ.get(spec.key_variable()):
                keys[spec.key_variable()] = None
    return WorkerNeeds(tuple(plugins), tuple(references), tuple(keys))


def _found(reference: str) -> bool:
    try:
        resolve_reference(reference, f"agent {reference!r}")
    except AgentrigError:
        return False
    return True


def check_workers(client: Client, needs: WorkerNeeds) -> None:
    """Check ``needs`` on every worker of ``client``'s cluster; a
    :class:`~agentrig.errors.ConfigurationError` lists, for each worker missing something, its
    address and what it could not import (or which key is unset there). A cluster without a
    worker is one too."""
    answers: dict[str, list[str]] = client.run(_problems, needs)
    if not answers:
        address = client.scheduler_info()["address"]
        raise ConfigurationError(
            f"the Dask cluster at {address} has no worker: start one with `dask worker {address}`"
        )
    lines = [
        f"Dask worker {address}: {problem}"
        for address, problems in sorted(answers.items())
        for problem in problems
    ]
    if lines:
        raise ConfigurationError(
            "\n".join(lines)
            + "\nevery worker imports what the run does: install the same packages there, and "
            "put your code on its PYTHONPATH (or start it in the folder that holds it)"
        )


def _problems(needs: WorkerNeeds) -> list[str]:
    """On a worker: what it lacks of ``needs``, one message each."""
    problems = []
    try:
        load_plugins(needs.plugins)
    except AgentrigError as error:
        problems.append(str(error))
    for reference in needs.references:
        try:
            resolve_reference(reference, f"agent {reference!r}")
        except AgentrigError as error:
            problems.append(str(error))
    problems += [
        f"{variable} is not set: a role model reads its API key from it"
        for variable in needs.keys
        if not os.environ.get(variable)
    ]
    return problems


_LOADED: set[tuple[str, ...]] = set()


def ensure_plugins(plugins: tuple[str, ...]) -> None:
    """Import ``plugins`` in this worker once (a worker that joined after the start was not
    checked); :class:`~agentrig.harness.errors.PluginError` when one does not import."""
    if plugins in _LOADED:
        return
    try:
        load_plugins(plugins)
    except AgentrigError as error:
        raise ConfigurationError(f"in a Dask worker: {error}") from None
    _LOADED.add(plugins)
