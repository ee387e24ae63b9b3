"""An endpoint scenario's ``agent.network``: which requests a drawn fault answers, and how long
each answer waits. Every draw is a seeded hash, as a ``mixture`` branch's is: the same scenario,
session key, request number and seed draw the same, in every process."""

from __future__ import annotations

from agentrig.harness.scenarios.mixture import seeded_draw
from agentrig.harness.scenarios.model import FaultSpec, NetworkSpec

NETWORK_HASH = "agentrig-network-1"
"""The first item of the hashed text: changes only if the draws ever have to change."""


def network_draw(
    kind: str, scenario: str, session_key: str, number: int, seed: int | None
) -> float:
    """The draw in [0, 1) of ``kind`` (``fault`` or ``latency``) for request ``number`` of the
    session of ``session_key``: ``seeded_draw`` of ``["agentrig-network-1", KIND, SCENARIO,
    SESSION_KEY, NUMBER, SEED]``."""
    return seeded_draw([NETWORK_HASH, kind, scenario, session_key, number, seed])


def drawn_fault(
    network: NetworkSpec, scenario: str, session_key: str, number: int
) -> FaultSpec | None:
    """The fault request ``number`` gets instead of its scripted answer, or None."""
    if network.fault_rate <= 0:
        return None
    draw = network_draw("fault", scenario, session_key, number, network.seed)
    return network.fault if draw < network.fault_rate else None


def drawn_latency(network: NetworkSpec, scenario: str, session_key: str, number: int) -> float:
    """The seconds request ``number`` waits (on top of its reply's own latency)."""
    span = network.latency
    if span is None:
        return 0.0
    draw = network_draw("latency", scenario, session_key, number, network.seed)
    return span.min + (span.max - span.min) * draw
